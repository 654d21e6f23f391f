// SPDX-License-Identifier: MIT
/*
 * ionctl bench --solve: what the constraint solver costs.
 *
 *  - context creation on a fake tree of N devices (sysfs, /proc, DMI,
 *    DMA-BUF heap nodes and a heaps.d file with a section per kind of
 *    device), discovery included: ion_ctx_new() to the first answer;
 *  - one warm solve for 1, 4 and 16 of those devices (ion_ctx_solve(),
 *    no reasons worded);
 *  - on this machine's real heaps, allocation for a device set
 *    (ion_ctx_allocate(), which solves each time) beside allocation by
 *    the heap's name (ion_ctx_alloc()), in alternating runs, and the
 *    ratio of their medians;
 *  - late allocation call by call (bench-late.c): the first
 *    ion_buffer_get_fd() of a 1M buffer the set is attached to (the solve
 *    and the allocation; making the buffer and attaching are not timed),
 *    alternating with ion_ctx_alloc() by name, p50 and p99 of each; then
 *    the same first fd
 *    with the solved heap given a heaps.d Pool hint (16x1M, in a context
 *    of its own that reads the same files and one more), where it takes a
 *    buffer the pool keeps ready: each of those calls is checked to have
 *    got one of the pool's buffers, and the pool is let refill between
 *    batches of 8 (its low watermark), so that every timed call is a hit.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "bench-solve.h"

struct tree {
	char root[64];
	char conf[128];
};

/* Writes dir/rel (making its folders) with text, or a symlink to target. */
static int put(const char *root, const char *rel, const char *text, size_t len,
	       const char *target)
{
	char path[512];
	int fd;

	snprintf(path, sizeof(path), "%s%s", root, rel);
	for (char *p = path + strlen(root) + 1; (p = strchr(p, '/')); p++) {
		*p = '\0';
		if (mkdir(path, 0755) < 0 && errno != EEXIST)
			return -errno;
		*p = '/';
	}
	if (target)
		return symlink(target, path) < 0 ? -errno : 0;
	fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	if (fd < 0)
		return -errno;
	if (write(fd, text, len) != (ssize_t)len) {
		close(fd);
		return -EIO;
	}
	close(fd);
	return 0;
}

#define PUT(rel, text) put(t->root, rel, text, strlen(text), NULL)
#define LINK(rel, target) put(t->root, rel, NULL, 0, target)

/*
 * A board of n devices: half behind an IOMMU, half device-tree DMA
 * masters without one, ten kinds of them, each kind with a [Device]
 * section; heaps system, linux,cma, system-uncached and system-dma32.
 */
static int make_tree(struct tree *t, unsigned int n)
{
	static const char *const heaps[] = { "system", "linux,cma", "system-uncached",
					     "system-dma32" };
	char conf[8192], rel[256], text[256];
	size_t used;
	int r;

	snprintf(t->root, sizeof(t->root), "%s/libion-bench-XXXXXX",
		 getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp");
	if (!mkdtemp(t->root))
		return -errno;
	snprintf(t->conf, sizeof(t->conf), "%s/heaps.d", t->root);
	r = PUT("/proc/meminfo", "MemTotal:        8388608 kB\n");
	if (r == 0)
		r = PUT("/sys/class/dmi/id/sys_vendor", "libion\n");
	if (r == 0)
		r = PUT("/sys/class/dmi/id/product_name", "bench board\n");
	if (r == 0)
		r = LINK("/sys/dev/char/1:3/subsystem", "../../../class/dma_heap");
	for (size_t i = 0; r == 0 && i < sizeof(heaps) / sizeof(heaps[0]); i++) {
		snprintf(rel, sizeof(rel), "/dev/dma_heap/%s", heaps[i]);
		r = LINK(rel, "/dev/null");
	}
	used = (size_t)snprintf(conf, sizeof(conf),
				"[Board bench]\nMatchDMIVendor = libion\n"
				"[Heap linux,cma]\nAddressBits = 32\n");
	for (unsigned int k = 0; k < 10; k++)
		used += (size_t)snprintf(conf + used, sizeof(conf) - used,
					 "[Device kind%u]\nMatchOFCompatible = bench,kind%u\n%s",
					 k, k,
					 k % 3 == 0 ? "AddressBits = 32\n" :
					 k % 3 == 1 ? "KernelMap = yes\n" : "Alignment = 4K\n");
	if (r == 0)
		r = PUT("/heaps.d/50-bench.conf", conf);
	for (unsigned int i = 0; r == 0 && i < n; i++) {
		const char *class = i % 2 ? "video4linux" : "drm";
		char dev[128], node[32];

		snprintf(dev, sizeof(dev), "/sys/devices/platform/soc/%x.dev%u", 0x1000 + i, i);
		snprintf(node, sizeof(node), i % 2 ? "video%u" : "card%u", i);
		snprintf(rel, sizeof(rel), "%s/of_node/compatible", dev);
		snprintf(text, sizeof(text), "bench,kind%u-v2%cbench,kind%u", i % 10, '\0', i % 10);
		r = put(t->root, rel, text, strlen(text) + 1 + strlen(text + strlen(text) + 1) + 1, NULL);
		snprintf(rel, sizeof(rel), "%s/driver", dev);
		if (r == 0)
			r = LINK(rel, "../../../../bus/platform/drivers/bench");
		snprintf(rel, sizeof(rel), "%s/subsystem", dev);
		if (r == 0)
			r = LINK(rel, "../../../../bus/platform");
		if (r == 0 && i % 4 < 2) {
			snprintf(rel, sizeof(rel), "%s/iommu_group", dev);
			snprintf(text, sizeof(text), "../../../../kernel/iommu_groups/%u", i);
			r = LINK(rel, text);
		}
		snprintf(rel, sizeof(rel), "%s/%s/%s/uevent", dev, i % 2 ? "video4linux" : "drm", node);
		snprintf(text, sizeof(text), "MAJOR=%u\nMINOR=%u\nDEVNAME=%s%s\n", i % 2 ? 81 : 226, i,
			 i % 2 ? "" : "dri/", node);
		if (r == 0)
			r = PUT(rel, text);
		snprintf(rel, sizeof(rel), "%s/%s/%s/device", dev, class, node);
		if (r == 0)
			r = LINK(rel, "../..");
		snprintf(rel, sizeof(rel), "%s/%s/%s/subsystem", dev, class, node);
		snprintf(text, sizeof(text), "../../../../../../class/%s", class);
		if (r == 0)
			r = LINK(rel, text);
		snprintf(rel, sizeof(rel), "/sys/class/%s/%s", class, node);
		snprintf(text, sizeof(text), "../../devices/platform/soc/%x.dev%u/%s/%s", 0x1000 + i,
			 i, class, node);
		if (r == 0)
			r = LINK(rel, text);
	}
	return r;
}

static void remove_tree(const char *root)
{
	char cmd[128];

	/* The tree is ours alone, made by mkdtemp(). */
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", root);
	if (system(cmd) != 0)
		fprintf(stderr, "ionctl bench: could not remove %s\n", root);
}

static int new_ctx(const struct tree *t, struct ion_ctx **ret)
{
	int r = ion_ctx_new(t->root, ret);

	if (r == 0 && (r = ion_ctx_set_heaps_path(*ret, t->conf)) < 0)
		*ret = ion_ctx_unref(*ret);
	return r;
}

static int time_context(const struct tree *t, unsigned int rounds, double *ret_ns)
{
	double ns[64];

	for (unsigned int i = 0; i < rounds; i++) {
		struct ion_ctx *ctx;
		double start = ionctl_now_ns();
		int r = new_ctx(t, &ctx);

		if (r == 0)
			r = ion_ctx_get_heap_count(ctx);
		ion_ctx_unref(ctx);
		ns[i] = ionctl_now_ns() - start;
		if (r < 0)
			return r;
	}
	*ret_ns = ionctl_median(ns, rounds);
	return 0;
}

static int time_solve(struct ion_ctx *ctx, unsigned int n_devices, unsigned int rounds,
		      double *ret_ns)
{
	struct ion_alloc_config *config;
	double ns[64];
	int r = ion_alloc_config_new(&config);

	if (r == 0)
		r = ion_alloc_config_set_size(config, 1 << 20);
	for (unsigned int i = 0; r == 0 && i < n_devices; i++) {
		struct ion_device *dev;

		r = ion_ctx_get_device_at(ctx, i, &dev);
		if (r == 0) {
			r = ion_alloc_config_add_device(config, dev);
			ion_device_unref(dev);
		}
	}
	for (unsigned int k = 0; r == 0 && k < rounds; k++) {
		const unsigned int calls = 2000;
		double start = ionctl_now_ns();

		for (unsigned int i = 0; r == 0 && i < calls; i++) {
			struct ion_solution *sol;

			r = ion_ctx_solve(ctx, config, &sol);
			ion_solution_unref(sol);
		}
		ns[k] = (ionctl_now_ns() - start) / calls;
	}
	ion_alloc_config_free(config);
	if (r == 0)
		*ret_ns = ionctl_median(ns, rounds);
	return r;
}

/* ns per call of one way of allocating, over calls calls. */
static double run(struct ion_ctx *ctx, struct alloc_bench *a, int how, unsigned int calls)
{
	double start = ionctl_now_ns();

	for (unsigned int i = 0; i < calls; i++) {
		int fd = -1, r = how == 0 ? ion_ctx_alloc(ctx, a->heap, 1 << 20, 0, &fd)
			       : how == 1 ? ion_ctx_allocate(ctx, a->config, &fd, NULL)
					  : ion_solution_alloc(a->solution, &fd, NULL);

		if (r < 0)
			return r;
		if (fd >= 0)
			close(fd);
	}
	return (ionctl_now_ns() - start) / calls;
}

/* The devices of --for, else the first device of this machine that some
 * heap here can serve alone. */
static int pick_set(struct ion_ctx *ctx, char **specs, int n_specs, struct alloc_bench *a)
{
	int n = n_specs ? n_specs : ion_ctx_get_device_count(ctx);
	int r = ion_alloc_config_new(&a->config);

	if (r == 0)
		r = ion_alloc_config_set_size(a->config, 1 << 20);
	for (int i = 0; r == 0 && i < n && !a->solution; i++) {
		struct ion_device *dev;

		r = n_specs ? ion_ctx_get_device(ctx, specs[i], &dev)
			    : ion_ctx_get_device_at(ctx, (unsigned int)i, &dev);
		if (r < 0)
			break;
		r = ion_alloc_config_add_device(a->config, dev);
		snprintf(a->names + strlen(a->names), sizeof(a->names) - strlen(a->names),
			 "%s%s", *a->names ? " " : "", ion_device_get_name(dev));
		if (a->n_devices < 16)
			a->devices[a->n_devices++] = ion_device_ref(dev);
		ion_device_unref(dev);
		if (r == 0 && (n_specs == 0 || i == n - 1)) {
			int fd;

			r = ion_ctx_solve(ctx, a->config, &a->solution);
			if (r == 0 && ion_solution_alloc(a->solution, &fd, NULL) == 0) {
				close(fd);
				a->heap = ion_heap_get_name(ion_solution_get_heap(a->solution, 0));
			} else if (r == 0 && !n_specs) {
				/* Not this one: start again with the next. */
				a->solution = ion_solution_unref(a->solution);
				a->config = ion_alloc_config_free(a->config);
				a->names[0] = '\0';
				while (a->n_devices)
					ion_device_unref(a->devices[--a->n_devices]);
				r = ion_alloc_config_new(&a->config);
				if (r == 0)
					r = ion_alloc_config_set_size(a->config, 1 << 20);
			}
		}
	}
	return r < 0 ? r : a->heap ? 0 : -ENODEV;
}

static int time_alloc(struct ion_ctx *ctx, struct alloc_bench *a, unsigned int rounds)
{
	double ns[3][64], t;

	for (int how = 0; how < 3; how++)
		if ((t = run(ctx, a, how, 8)) < 0)
			return (int)t;
	for (unsigned int k = 0; k < rounds; k++) {
		/* Alternating runs, so that drift hits all three alike. */
		for (int how = 0; how < 3; how++)
			ns[how][k] = 0;
		for (int i = 0; i < 16; i++)
			for (int how = 0; how < 3; how++) {
				if ((t = run(ctx, a, how, 8)) < 0)
					return (int)t;
				ns[how][k] += t / 16;
			}
	}
	a->by_name_ns = ionctl_median(ns[0], rounds);
	a->for_set_ns = ionctl_median(ns[1], rounds);
	a->solved_ns = ionctl_median(ns[2], rounds);
	return 0;
}

static const char *alloc_error(int r)
{
	return r == -ENODEV ? "no device here that a heap can serve" : strerror(-r);
}

static void print_solve(int json, unsigned int n_devices, double context_ns,
			const double solve_ns[3], struct alloc_bench *a, int ra,
			struct late_bench *l, int rl)
{
	static const unsigned int counts[] = { 1, 4, 16 };
	double late50 = 0, late99 = 0, name50 = 0, name99 = 0, pool50 = 0, pool99 = 0;
	bool pooled = rl == 0 && l->pool_error == 0 && l->n_pooled;

	if (rl == 0) {
		late50 = ionctl_pct(l->late, l->n, 50);
		late99 = ionctl_pct(l->late, l->n, 99);
		name50 = ionctl_pct(l->by_name, l->n, 50);
		name99 = ionctl_pct(l->by_name, l->n, 99);
	}
	if (pooled) {
		pool50 = ionctl_pct(l->pooled, l->n_pooled, 50);
		pool99 = ionctl_pct(l->pooled, l->n_pooled, 99);
	}
	if (json) {
		ionctl_json_begin("bench");
		printf(", \"mode\": \"solve\", \"devices\": %u, \"context_ns\": %.0f, \"solve_ns\": {\"1\": %.1f, "
		       "\"4\": %.1f, \"16\": %.1f}, \"alloc_ratio\": ",
		       n_devices, context_ns, solve_ns[0], solve_ns[1], solve_ns[2]);
		if (ra == 0)
			printf("%.3f, \"alloc\": {\"heap\": \"%s\", \"for\": \"%s\", \"by_name_ns\": %.0f, "
			       "\"for_set_ns\": %.0f, \"solved_ns\": %.0f, \"solved_ratio\": %.3f}",
			       a->for_set_ns / a->by_name_ns, a->heap, a->names, a->by_name_ns,
			       a->for_set_ns, a->solved_ns, a->solved_ns / a->by_name_ns);
		else
			printf("null, \"alloc\": {\"error\": \"%s\"}", alloc_error(ra));
		if (rl == 0) {
			printf(", \"late_heap\": ");
			ionctl_json_string(a->heap);
			printf(", \"late_for\": ");
			ionctl_json_string(a->names);
			printf(", \"late_samples\": %u, \"late_p50_ns\": %.0f, \"late_p99_ns\": %.0f, "
			       "\"byname_p50_ns\": %.0f, \"byname_p99_ns\": %.0f, "
			       "\"late_p50_ratio\": %.3f, \"late_pool_hint\": \"%ux1M\"",
			       l->n, late50, late99, name50, name99, late50 / name50, POOL_COUNT);
			if (pooled)
				printf(", \"late_pool_p50_ns\": %.0f, \"late_pool_p99_ns\": %.0f, "
				       "\"late_pool_hits\": %u, \"late_pool_samples\": %u}\n",
				       pool50, pool99, l->hits, l->n_pooled);
			else
				printf(", \"late_pool_p50_ns\": null, \"late_pool_p99_ns\": null, "
				       "\"late_pool_error\": \"%s: %s\"}\n", l->pool_why,
				       strerror(-l->pool_error));
		} else {
			printf(", \"late_p50_ns\": null, \"late_p99_ns\": null, \"byname_p50_ns\": null, "
			       "\"byname_p99_ns\": null, \"late_pool_p50_ns\": null, "
			       "\"late_pool_p99_ns\": null, \"late_error\": \"%s\"}\n",
			       alloc_error(rl));
		}
		return;
	}
	printf("context creation, %u devices: %10.0f ns\n", n_devices, context_ns);
	for (size_t i = 0; i < 3; i++)
		printf("solve for %2u devices:        %10.1f ns\n", counts[i], solve_ns[i]);
	if (ra == 0)
		printf("1M from %s for {%s}: %.0f ns by name, %.0f ns for the set (%.3f),\n"
		       "  %.0f ns from the solved set (%.3f)\n", a->heap, a->names,
		       a->by_name_ns, a->for_set_ns, a->for_set_ns / a->by_name_ns, a->solved_ns,
		       a->solved_ns / a->by_name_ns);
	else
		printf("allocation for a device set: not measured (%s)\n", alloc_error(ra));
	if (rl == 0) {
		printf("late, the first fd of a 1M buffer %s%s%s (from %s), %u calls:\n"
		       "  p50 %.0f ns, p99 %.0f ns; by name beside it p50 %.0f ns, p99 %.0f ns "
		       "(p50 ratio %.3f)\n", a->names[0] ? "{" : "",
		       a->names[0] ? a->names : "with no device attached",
		       a->names[0] ? "} attached to" : "", a->heap, l->n, late50, late99, name50,
		       name99, late50 / name50);
		if (pooled)
			printf("  with %s pooled (Pool = %ux1M): p50 %.0f ns, p99 %.0f ns "
			       "(%u of %u calls took a pooled buffer)\n", a->heap, POOL_COUNT,
			       pool50, pool99, l->hits, l->n_pooled);
		else
			printf("  with %s pooled: not measured (%s: %s)\n", a->heap, l->pool_why,
			       strerror(-l->pool_error));
	} else {
		printf("late allocation: not measured (%s)\n", alloc_error(rl));
	}
}

int ionctl_bench_solve(unsigned int n_devices, unsigned int rounds, int json,
		       char **specs, int n_specs)
{
	static const unsigned int counts[] = { 1, 4, 16 };
	double context_ns = 0, solve_ns[3] = { 0 };
	struct alloc_bench a = { 0 };
	struct late_bench *l = calloc(1, sizeof(*l));
	struct ion_ctx *ctx = NULL;
	struct tree t;
	int r, ra, rl = 0;

	if (!l)
		return ionctl_fail("bench", -ENOMEM, "--solve");
	r = make_tree(&t, n_devices);
	if (r == 0)
		r = time_context(&t, rounds, &context_ns);
	if (r == 0)
		r = new_ctx(&t, &ctx);
	if (r == 0 && (r = ion_ctx_get_device_count(ctx)) >= 0)
		r = (unsigned int)r >= n_devices ? 0 : -ENODEV;
	for (size_t i = 0; r == 0 && i < 3; i++) {
		ionctl_progress("bench", "--solve, %u devices...", counts[i]);
		r = time_solve(ctx, counts[i], rounds, &solve_ns[i]);
	}
	ion_ctx_unref(ctx);
	remove_tree(t.root);
	if (r < 0) {
		free(l);
		return ionctl_fail("bench", r, "--solve on a fake tree of %u devices", n_devices);
	}

	ctx = ionctl_ctx_new("bench");
	if (!ctx) {
		free(l);
		return IONCTL_NO;
	}
	ionctl_progress("bench", "--solve, allocations for a device set...");
	ra = pick_set(ctx, specs, n_specs, &a);
	if (ra == 0)
		ra = time_alloc(ctx, &a, rounds);
	l->n = rounds * LATE_PER_ROUND;
	/* Where no device here can import a buffer (a machine with memfd
	 * alone), late buffers with no device attached still solve and
	 * allocate. */
	if (ra == 0 || (ra == -ENODEV && !n_specs && (rl = ionctl_heap_for_none(ctx, &a)) == 0)) {
		rl = ionctl_time_late(ctx, &a, l);
		if (rl == 0)
			ionctl_time_late_pooled(ctx, &a, l);
	} else if (rl == 0) {
		rl = ra;
	}
	ionctl_progress_done();
	print_solve(json, n_devices, context_ns, solve_ns, &a, ra, l, rl);
	ion_solution_unref(a.solution);
	ion_alloc_config_free(a.config);
	while (a.n_devices)
		ion_device_unref(a.devices[--a.n_devices]);
	ion_ctx_unref(ctx);
	free(l);
	return 0;
}
