// SPDX-License-Identifier: MIT
/*
 * ionctl record on a live machine (the VM guests, the host): the tree it
 * writes, built with the tests' faketree and read through --sysroot, must
 * answer as the machine does:
 *  - every device, with the same sysfs path, node, subsystem and facts
 *    (IOMMU, DMA masks, device-tree properties) and, for V4L2 devices,
 *    the same constraints from the same sources;
 *  - every heap a tree can hold (DMA-BUF heaps, udmabuf, memfd), with the
 *    same properties, address bits and board attributes;
 *  - the same best heap for every V4L2 device alone and with every other
 *    device whose needs the tree tells alike, where the live answer is
 *    such a heap.
 * What only a live node answers is left out, as the recorder says: a DRM
 * driver's name (and so the heaps.d sections matched by it, and a DRM
 * device's constraints), GEM and ION heaps.
 *
 *   test-record IONCTL   (the VM runs "ionctl" from PATH)
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "faketree.h"
#include "testlib.h"

#ifndef TEST_DEFAULT_HEAPS_PATH
#error "TEST_DEFAULT_HEAPS_PATH: the heaps.d folders the library reads by default"
#endif

static const char *ionctl = "ionctl";
static char dir[] = "/tmp/libion-record-XXXXXX";
static struct ion_ctx *live, *replay;

static int run_record(const char *output)
{
	int status;
	pid_t pid = fork();

	if (pid == 0) {
		/* A cross build's test runs under qemu-user: so must ionctl. */
		const char *wrapper = getenv("MESON_EXE_WRAPPER");

		if (wrapper && *wrapper)
			execlp(wrapper, wrapper, ionctl, "record", "--output", output, (char *)NULL);
		else
			execlp(ionctl, ionctl, "record", "--output", output, (char *)NULL);
		_exit(127);
	}
	return pid > 0 && waitpid(pid, &status, 0) == pid && WIFEXITED(status) ?
		       WEXITSTATUS(status) : -1;
}

static int group_setup(void **state)
{
	const char *env = getenv("ION_HEAPS_PATH");
	const char *paths = env && *env ? env : TEST_DEFAULT_HEAPS_PATH;
	char tree[64], root[64], err[512];

	(void)state;
	assert_non_null(mkdtemp(dir));
	snprintf(tree, sizeof(tree), "%s/machine.tree", dir);
	snprintf(root, sizeof(root), "%s/root", dir);
	assert_int_equal(run_record(tree), 0);
	assert_int_equal(mkdir(root, 0755), 0);
	if (faketree_build(tree, root, err, sizeof(err)) < 0) {
		print_error("the recording does not build: %s\n", err);
		return -1;
	}
	/* Both read the same board files: the live machine's folders. */
	assert_int_equal(ion_ctx_new(NULL, &live), 0);
	assert_int_equal(ion_ctx_set_heaps_path(live, paths), 0);
	assert_int_equal(ion_ctx_new(root, &replay), 0);
	assert_int_equal(ion_ctx_set_heaps_path(replay, paths), 0);
	print_message("recorded %s, %d heaps and %d devices live\n", tree,
		      ion_ctx_get_heap_count(live), ion_ctx_get_device_count(live));
	return 0;
}

static int group_teardown(void **state)
{
	(void)state;
	ion_ctx_unref(live);
	ion_ctx_unref(replay);
	test_remove_tree(dir);
	return 0;
}

static bool in_tree(const struct ion_heap *h)
{
	const char *backend = ion_heap_get_backend(h);

	return !strcmp(backend, "dma-heap") || !strcmp(backend, "udmabuf") ||
	       !strcmp(backend, "memfd");
}

typedef int (*triple_fn)(const struct ion_device *, unsigned int, const char **,
			 const char **, const char **);

static void assert_same_triples(const struct ion_device *a, const struct ion_device *b,
				int (*count)(const struct ion_device *), triple_fn get)
{
	assert_int_equal(count(a), count(b));
	for (int i = 0; i < count(a); i++) {
		const char *ka, *va, *sa, *kb, *vb, *sb;

		assert_int_equal(get(a, (unsigned int)i, &ka, &va, &sa), 0);
		assert_int_equal(get(b, (unsigned int)i, &kb, &vb, &sb), 0);
		if (strcmp(ka, kb) || strcmp(va, vb) || strcmp(sa, sb)) {
			print_error("%s: live %s = %s [%s], replayed %s = %s [%s]\n",
				    ion_device_get_name(a), ka, va, sa, kb, vb, sb);
			fail();
		}
	}
}

static void test_devices(void **state)
{
	int n = ion_ctx_get_device_count(live);

	(void)state;
	assert_int_equal(ion_ctx_get_device_count(replay), n);
	for (int i = 0; i < n; i++) {
		struct ion_device *a = NULL, *b = NULL;

		assert_int_equal(ion_ctx_get_device_at(live, (unsigned int)i, &a), 0);
		assert_int_equal(ion_ctx_get_device_at(replay, (unsigned int)i, &b), 0);
		assert_string_equal(ion_device_get_name(a), ion_device_get_name(b));
		assert_string_equal(ion_device_get_syspath(a), ion_device_get_syspath(b));
		assert_string_equal(ion_device_get_subsystem(a), ion_device_get_subsystem(b));
		assert_true(!ion_device_get_devnode(a) == !ion_device_get_devnode(b));
		assert_same_triples(a, b, ion_device_get_fact_count, ion_device_get_fact);
		if (strcmp(ion_device_get_subsystem(a), "drm") != 0)
			assert_same_triples(a, b, ion_device_get_constraint_count,
					    ion_device_get_constraint);
		print_message("%-8s same sysfs facts%s\n", ion_device_get_name(a),
			      strcmp(ion_device_get_subsystem(a), "drm") ? " and constraints" : "");
		ion_device_unref(a);
		ion_device_unref(b);
	}
}

static void test_heaps(void **state)
{
	const struct ion_heap *a, *b;

	(void)state;
	for (int i = 0; ion_ctx_get_heap(live, (unsigned int)i, &a) == 0; i++) {
		if (!in_tree(a))
			continue;
		assert_int_equal(ion_ctx_find_heap(replay, ion_heap_get_name(a), &b), 0);
		assert_string_equal(ion_heap_get_backend(a), ion_heap_get_backend(b));
		assert_int_equal(ion_heap_get_properties(a), ion_heap_get_properties(b));
		assert_int_equal(ion_heap_get_address_bits(a), ion_heap_get_address_bits(b));
		assert_int_equal(ion_heap_get_attribute_count(a), ion_heap_get_attribute_count(b));
		print_message("%-22s same (%s, below 2^%u)\n", ion_heap_get_name(a),
			      ion_heap_get_backend(a), ion_heap_get_address_bits(a));
	}
}

/* The best heap for the named devices, or "" when none fits. */
static const char *best(struct ion_ctx *ctx, const char *x, const char *y, char *buf)
{
	struct ion_alloc_config *config = NULL;
	struct ion_solution *sol = NULL;
	const char *names[] = { x, y };

	buf[0] = '\0';
	assert_int_equal(ion_alloc_config_new(&config), 0);
	assert_int_equal(ion_alloc_config_set_size(config, 1 << 20), 0);
	for (int i = 0; i < 2 && names[i]; i++) {
		struct ion_device *dev = NULL;

		assert_int_equal(ion_ctx_get_device(ctx, names[i], &dev), 0);
		assert_int_equal(ion_alloc_config_add_device(config, dev), 0);
		ion_device_unref(dev);
	}
	assert_int_equal(ion_ctx_solve(ctx, config, &sol), 0);
	if (ion_solution_get_heap_count(sol) > 0) {
		const struct ion_heap *h = ion_solution_get_heap(sol, 0);

		snprintf(buf, 64, "%s", in_tree(h) ? ion_heap_get_name(h) : "-");
	}
	ion_solution_unref(sol);
	ion_alloc_config_free(config);
	return buf;
}

/* Whether a device says the same live and replayed, less its own GEM
 * heap: not so for a DRM device that a section matched by its driver's
 * name (which only the live node tells) gave a need. */
static bool same_needs(const char *name)
{
	struct ion_device *a = NULL, *b = NULL;
	int na, nb, k = 0;
	bool same = true;

	assert_int_equal(ion_ctx_get_device(live, name, &a), 0);
	assert_int_equal(ion_ctx_get_device(replay, name, &b), 0);
	na = ion_device_get_constraint_count(a);
	nb = ion_device_get_constraint_count(b);
	for (int i = 0; i < na && same; i++) {
		const char *ka, *va, *sa, *kb, *vb, *sb;

		assert_int_equal(ion_device_get_constraint(a, (unsigned int)i, &ka, &va, &sa), 0);
		if (!strcmp(ka, "OwnHeap"))
			continue;
		same = k < nb && ion_device_get_constraint(b, (unsigned int)k++, &kb, &vb, &sb) == 0 &&
		       !strcmp(ka, kb) && !strcmp(va, vb) && !strcmp(sa, sb);
	}
	same = same && k == nb;
	ion_device_unref(a);
	ion_device_unref(b);
	return same;
}

static void test_solve(void **state)
{
	int n = ion_ctx_get_device_count(live), compared = 0;

	(void)state;
	for (int i = 0; i < n; i++) {
		struct ion_device *dev = NULL;
		char x[64];

		assert_int_equal(ion_ctx_get_device_at(live, (unsigned int)i, &dev), 0);
		snprintf(x, sizeof(x), "%s", ion_device_get_name(dev));
		if (strcmp(ion_device_get_subsystem(dev), "drm") != 0) {
			for (int k = -1; k < n; k++) {
				struct ion_device *other = NULL;
				char y[64] = "", a[64], b[64];

				if (k >= 0) {
					assert_int_equal(ion_ctx_get_device_at(live, (unsigned int)k, &other), 0);
					snprintf(y, sizeof(y), "%s", ion_device_get_name(other));
					ion_device_unref(other);
				}
				if (k == i || (y[0] && !same_needs(y))) {
					if (k != i)
						print_message("%s + %s: not compared (%s's needs hang on "
							      "its live node)\n", x, y, y);
					continue;
				}
				best(live, x, y[0] ? y : NULL, a);
				if (!strcmp(a, "-"))
					continue; /* a GEM or ION heap: no tree has it */
				best(replay, x, y[0] ? y : NULL, b);
				print_message("%s%s%s: %s live, %s replayed\n", x, y[0] ? " + " : "", y,
					      a[0] ? a : "none", b[0] ? b : "none");
				assert_string_equal(a, b);
				compared++;
			}
		}
		ion_device_unref(dev);
	}
	print_message("%d device sets answered alike\n", compared);
}

int main(int argc, char **argv)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_devices),
		cmocka_unit_test(test_heaps),
		cmocka_unit_test(test_solve),
	};

	if (argc > 1)
		ionctl = argv[1];
	return cmocka_run_group_tests(tests, group_setup, group_teardown);
}
