// SPDX-License-Identifier: MIT
/*
 * ionctl bench --solve, its second half: late allocation call by call.
 * The first ion_buffer_get_fd() of a 1M buffer the set is attached to
 * (the solve and the allocation; making the buffer and attaching are not
 * timed), alternating with ion_ctx_alloc() by name; then the same first
 * fd with the solved heap given a heaps.d Pool hint, where each timed
 * call is checked to have taken a buffer the pool kept ready.
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

/* p (0-100) of n values (sorts them). */
double ionctl_pct(double *v, unsigned int n, unsigned int p)
{
	ionctl_median(v, n);
	return v[(size_t)(n - 1) * p / 100];
}

/* A late buffer of 1M with the set attached, not allocated yet. */
static int late_new(struct ion_ctx *ctx, struct ion_device *const *devices, unsigned int n,
		    struct ion_buffer **ret)
{
	int r = ion_buffer_new(ctx, 1 << 20, ret);

	for (unsigned int i = 0; r == 0 && i < n; i++)
		if ((r = ion_buffer_attach(*ret, devices[i])) < 0)
			*ret = ion_buffer_unref(*ret);
	return r;
}

/* A solve for devices (1M), without words on failure. */
static int solve_for(struct ion_ctx *ctx, struct ion_device *const *devices, unsigned int n,
		     struct ion_solution **ret)
{
	struct ion_alloc_config *config;
	int r = ion_alloc_config_new(&config);

	if (r == 0)
		r = ion_alloc_config_set_size(config, 1 << 20);
	for (unsigned int i = 0; r == 0 && i < n; i++)
		r = ion_alloc_config_add_device(config, devices[i]);
	if (r == 0)
		r = ion_ctx_solve(ctx, config, ret);
	ion_alloc_config_free(config);
	return r;
}

/* The heap a buffer with no device attached comes from. */
int ionctl_heap_for_none(struct ion_ctx *ctx, struct alloc_bench *a)
{
	struct ion_solution *sol;
	int r = solve_for(ctx, NULL, 0, &sol);

	if (r == 0 && ion_solution_get_heap_count(sol) == 0)
		r = -ENODEV;
	if (r == 0)
		a->heap = ion_heap_get_name(ion_solution_get_heap(sol, 0));
	ion_solution_unref(sol);
	a->names[0] = '\0';
	return r;
}

/* The first fd request alone is timed: the solve and the allocation. */
static int late_get_fd(struct ion_buffer *b, double *ret_ns, int *ret_fd)
{
	double start = ionctl_now_ns();
	int r = ion_buffer_get_fd(b, ret_fd);

	*ret_ns = ionctl_now_ns() - start;
	return r;
}

/* Late buffers and allocation by name, alternating call by call, so that
 * drift hits both alike. */
int ionctl_time_late(struct ion_ctx *ctx, struct alloc_bench *a, struct late_bench *l)
{
	for (unsigned int i = 0; i < l->n + 4; i++) {
		struct ion_buffer *b = NULL;
		double start, late_ns = 0, by_name_ns;
		int fd, r = late_new(ctx, a->devices, a->n_devices, &b);

		if (r == 0)
			r = late_get_fd(b, &late_ns, &fd);
		ion_buffer_unref(b);
		if (r < 0)
			return r;
		start = ionctl_now_ns();
		r = ion_ctx_alloc(ctx, a->heap, 1 << 20, 0, &fd);
		by_name_ns = ionctl_now_ns() - start;
		if (r < 0)
			return r;
		close(fd);
		if (i >= 4) { /* the first four warm both paths */
			l->late[i - 4] = late_ns;
			l->by_name[i - 4] = by_name_ns;
		}
	}
	return 0;
}

/* A buffer file this process holds an fd of: a dma-buf or a memfd. */
struct held {
	int fd;
	dev_t dev;
	ino_t ino;
};

#define MAX_HELD 256

/*
 * The buffer fds of this process (/proc/self/fd): with none of the
 * benchmark's own open, the heap pool's anchors, one a buffer it holds
 * (a pool keeps its own fd of each; it hands out a duplicate of it, or,
 * where the kernel cannot count the buffer's holders, the fd itself).
 */
static int buffer_fds(struct held *out, unsigned int max, unsigned int *ret_n)
{
	DIR *d = opendir("/proc/self/fd");
	struct dirent *e;
	unsigned int n = 0;

	if (!d)
		return -errno;
	while ((e = readdir(d))) {
		char path[64], target[64];
		struct stat st;
		ssize_t len;
		int fd = atoi(e->d_name);

		if (e->d_name[0] == '.' || fd == dirfd(d))
			continue;
		snprintf(path, sizeof(path), "/proc/self/fd/%d", fd);
		len = readlink(path, target, sizeof(target) - 1);
		if (len < 0)
			continue;
		target[len] = '\0';
		if (strncmp(target, "/dmabuf:", 8) != 0 && strncmp(target, "/memfd:", 7) != 0)
			continue;
		if (fstat(fd, &st) < 0)
			continue;
		if (n < max)
			out[n] = (struct held){ fd, st.st_dev, st.st_ino };
		n++;
	}
	closedir(d);
	*ret_n = n;
	return n <= max ? 0 : -E2BIG;
}

static bool same_file(const struct held *set, unsigned int n, dev_t dev, ino_t ino)
{
	for (unsigned int i = 0; i < n; i++)
		if (set[i].dev == dev && set[i].ino == ino)
			return true;
	return false;
}

/*
 * Waits until the pool holds POOL_COUNT buffers of its own besides the
 * batch's (out[0..n_out), still held): refilled, and, with none out,
 * every buffer that came back taken in or let go.  0, -ETIMEDOUT or an
 * error of /proc.
 */
static int pool_settle(const struct held *out, unsigned int n_out)
{
	double deadline = ionctl_now_ns() + POOL_SETTLE_NS;

	for (;;) {
		struct held fds[MAX_HELD];
		unsigned int n, ready = 0;
		int r = buffer_fds(fds, MAX_HELD, &n);

		if (r < 0)
			return r;
		for (unsigned int i = 0; i < n; i++)
			if (!same_file(out, n_out, fds[i].dev, fds[i].ino))
				ready++;
		/* With none out, no fd beyond the pool's count either: the
		 * anchors of buffers that came back are dropped. */
		if (ready == POOL_COUNT && (n_out || n == POOL_COUNT))
			return 0;
		if (ionctl_now_ns() > deadline)
			return -ETIMEDOUT;
		usleep(2000);
	}
}

/* A heaps.d file that gives heap a Pool hint, read after the files ctx
 * read (its name sorts last); the path for the pooled context. */
static int pool_conf(struct ion_ctx *ctx, const char *heap, char *dir, size_t dir_size,
		     char **ret_path)
{
	char file[512], text[512];
	size_t len;
	int n = ion_ctx_get_config_file_count(ctx), fd, r = 0;
	char *path;

	snprintf(dir, dir_size, "%s/libion-bench-pool-XXXXXX",
		 getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp");
	if (!mkdtemp(dir))
		return -errno;
	snprintf(file, sizeof(file), "%s/99-ionctl-bench-pool.conf", dir);
	snprintf(text, sizeof(text), "[Heap %s]\nPool = %ux1M\n", heap, POOL_COUNT);
	fd = open(file, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
	if (fd < 0)
		return -errno;
	if (write(fd, text, strlen(text)) != (ssize_t)strlen(text))
		r = -EIO;
	close(fd);
	len = strlen(file) + 1;
	for (int i = 0; r == 0 && i < n; i++)
		len += strlen(ion_ctx_get_config_file(ctx, (unsigned int)i)) + 1;
	path = r == 0 ? malloc(len) : NULL;
	if (r == 0 && !path)
		r = -ENOMEM;
	if (r < 0)
		return r;
	strcpy(path, file);
	for (int i = 0; i < n; i++)
		strcat(strcat(path, ":"), ion_ctx_get_config_file(ctx, (unsigned int)i));
	*ret_path = path;
	return 0;
}

/*
 * A batch of count late buffers' first fds, each timed and checked to be
 * one of the pool's buffers (a hit), kept (keep) or not; then the pool
 * settles: refilled while the batch is out, and with the batch let go,
 * holding POOL_COUNT buffers again, every one ready.
 */
static int pool_batch(struct ion_ctx *pctx, struct ion_device *const *devices, unsigned int n,
		      struct late_bench *l, unsigned int count, bool keep)
{
	struct held before[MAX_HELD], out[POOL_BATCH];
	struct ion_buffer *bufs[POOL_BATCH] = { 0 };
	unsigned int n_before;
	int r = buffer_fds(before, MAX_HELD, &n_before);

	for (unsigned int i = 0; r == 0 && i < count; i++) {
		struct stat st;
		double ns = 0;
		int fd = -1;

		r = late_new(pctx, devices, n, &bufs[i]);
		if (r == 0)
			r = late_get_fd(bufs[i], &ns, &fd);
		if (r == 0 && fstat(fd, &st) < 0)
			r = -errno;
		if (r < 0)
			break;
		out[i] = (struct held){ fd, st.st_dev, st.st_ino };
		if (keep && l->n_pooled < l->n) {
			l->pooled[l->n_pooled++] = ns;
			l->hits += same_file(before, n_before, st.st_dev, st.st_ino);
		}
	}
	if (r == 0)
		r = pool_settle(out, count);
	for (unsigned int i = 0; i < count; i++)
		ion_buffer_unref(bufs[i]);
	if (r == 0)
		r = pool_settle(NULL, 0);
	return r;
}

/*
 * The same late buffers with the solved heap given a Pool hint, in a
 * context of its own that reads the same files and one more: the first
 * fd then takes a buffer the pool keeps ready.  Errors are the case's,
 * not the run's.
 */
void ionctl_time_late_pooled(struct ion_ctx *ctx, struct alloc_bench *a, struct late_bench *l)
{
	struct ion_device *devices[16] = { 0 };
	struct ion_ctx *pctx = NULL;
	struct ion_solution *sol = NULL;
	char dir[256] = "", *path = NULL;
	unsigned int n = 0;
	int r = pool_conf(ctx, a->heap, dir, sizeof(dir), &path);

	l->pool_why = "setting up";
	if (r == 0)
		r = ion_ctx_new(ionctl_sysroot, &pctx);
	if (r == 0)
		r = ion_ctx_set_heaps_path(pctx, path);
	for (; r == 0 && n < a->n_devices; n++) {
		const char *spec = ion_device_get_syspath(a->devices[n]);

		r = ion_ctx_get_device(pctx, spec ? spec : ion_device_get_name(a->devices[n]),
				       &devices[n]);
	}
	/* The same devices must solve to the same heap there. */
	if (r == 0) {
		r = solve_for(pctx, devices, n, &sol);
		if (r == 0 && (ion_solution_get_heap_count(sol) == 0 ||
			       strcmp(ion_heap_get_name(ion_solution_get_heap(sol, 0)), a->heap))) {
			l->pool_why = "the pooled context solved for another heap";
			r = -ESRCH;
		}
		ion_solution_unref(sol);
	}
	if (r == 0)
		l->pool_why = "waiting for the pool";
	/*
	 * The first fd makes the pool (at the heap's first use), which fills
	 * up while that buffer is out.  Then batches of POOL_BATCH from a full
	 * pool: the last of each brings it to its low watermark, and the
	 * refill thread fills it up again before the next.
	 */
	if (r == 0)
		r = pool_batch(pctx, devices, n, l, 1, false);
	while (r == 0 && l->n_pooled < l->n)
		r = pool_batch(pctx, devices, n, l, POOL_BATCH, true);
	l->pool_error = r;
	while (n)
		ion_device_unref(devices[--n]);
	ion_ctx_unref(pctx);
	if (dir[0]) {
		char file[300];

		snprintf(file, sizeof(file), "%s/99-ionctl-bench-pool.conf", dir);
		unlink(file);
		rmdir(dir);
	}
	free(path);
}
