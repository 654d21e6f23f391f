// SPDX-License-Identifier: MIT
/*
 * The ION backend against the legacy (pre-4.12) ABI, which no kernel built
 * here has: tests/mock/ion-legacy-mock.c plays the kernel behind a regular
 * file <sysroot>/dev/ion.  The modern ABI runs on a real 5.10 in the VM.
 */
#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include <cmocka.h>

#include "src/backends/backend.h"
#include "src/solver.h"
#include "uapi/ion.h"
#include "testlib.h"
#include "tests/mock/ion-legacy-mock.h"

#define NATIVE_BITS ((unsigned int)(sizeof(size_t) * 8))
#define NATIVE_ALLOC (NATIVE_BITS == 64 ? ION_LEGACY_IOC_ALLOC64 : ION_LEGACY_IOC_ALLOC32)
#define OTHER_ALLOC (NATIVE_BITS == 64 ? ION_LEGACY_IOC_ALLOC32 : ION_LEGACY_IOC_ALLOC64)

/*
 * One directory for the whole run, removed at the end: the backend caches
 * each /dev/ion's ABI by inode, so no node may be deleted (and its inode
 * reused) while tests still run.
 */
static char top[64];

/* Four heaps; the probe finds them by id (types follow the ids). */
static const struct ion_mock_heap probe_heaps[] = {
	{ 0, ION_HEAP_TYPE_SYSTEM, "system" },
	{ 1, ION_HEAP_TYPE_SYSTEM_CONTIG, "contig" },
	{ 4, ION_HEAP_TYPE_DMA, "cma" },
	{ 7, ION_HEAP_TYPE_CUSTOM, "vendor" },
};

static char log_text[16384];

/* What ion_is_legacy() answers: some heap speaks the handle ABI. */
static bool ctx_is_legacy(struct ion_ctx *ctx)
{
	int n = ion_ctx_get_heap_count(ctx);

	for (int i = 0; i < n; i++) {
		const struct ion_heap *h;

		if (ion_ctx_get_heap(ctx, (unsigned int)i, &h) == 0 &&
		    (ion_heap_get_properties(h) & ION_HEAP_PROP_ION_LEGACY))
			return true;
	}
	return false;
}

__attribute__((format(printf, 6, 0)))
static void log_capture(struct ion_ctx *ctx, int priority, const char *file,
			int line, const char *fn, const char *format,
			va_list args)
{
	size_t used = strlen(log_text);

	(void)ctx;
	(void)priority;
	(void)file;
	(void)line;
	(void)fn;
	if (used + 2 >= sizeof(log_text))
		return;
	vsnprintf(log_text + used, sizeof(log_text) - used - 1, format, args);
	strcat(log_text, "\n");
}

static void path_in(char *buf, size_t size, const char *root, const char *rel)
{
	int n = snprintf(buf, size, "%s/%s", root, rel);

	assert_true(n > 0 && (size_t)n < size);
}

/* A sysroot top/name with dev/ (and a dev/ion file, when asked). */
static const char *make_root(const char *name, bool with_ion)
{
	static char root[128];
	char path[256];

	path_in(root, sizeof(root), top, name);
	assert_int_equal(mkdir(root, 0755), 0);
	path_in(path, sizeof(path), root, "dev");
	assert_int_equal(mkdir(path, 0755), 0);
	if (with_ion) {
		/*
		 * The library opens only character devices, so /dev/ion is a
		 * link to one; a different one per root, since the backend
		 * caches each device's ABI for the process.  No sysfs entry
		 * for it: without sysfs to ask, a char device is trusted.
		 */
		static const char *const devices[] = { "/dev/full", "/dev/zero",
							"/dev/random", "/dev/urandom" };
		static unsigned int used;

		assert_true(used < sizeof(devices) / sizeof(devices[0]));
		path_in(path, sizeof(path), root, "dev/ion");
		assert_int_equal(symlink(devices[used++], path), 0);
	}
	return root;
}

static void mock_on(const char *root, const struct ion_mock_heap *heaps,
		    unsigned int n)
{
	char path[256];

	path_in(path, sizeof(path), root, "dev/ion");
	assert_int_equal(ion_mock_setup(path, heaps, n), 0);
}

static struct ion_ctx *ctx_on(const char *root)
{
	struct ion_ctx *ctx;

	assert_int_equal(ion_ctx_new(root, &ctx), 0);
	log_text[0] = '\0';
	ion_ctx_set_log_fn(ctx, log_capture);
	ion_ctx_set_log_priority(ctx, LOG_DEBUG);
	assert_true(ion_ctx_get_heap_count(ctx) > 0);
	return ctx;
}

static struct ion_heap *heap_of(struct ion_ctx *ctx, const char *name)
{
	const struct ion_heap *heap = NULL;

	if (ion_ctx_find_heap(ctx, name, &heap) < 0)
		return NULL;
	return (struct ion_heap *)heap;
}

static size_t fd_size(int fd)
{
	struct stat st;

	assert_int_equal(fstat(fd, &st), 0);
	return (size_t)st.st_size;
}

static size_t page_round(size_t len)
{
	size_t page = (size_t)sysconf(_SC_PAGESIZE);

	return (len + page - 1) / page * page;
}

static int group_setup(void **state)
{
	(void)state;
	strcpy(top, "/tmp/libion-ion-XXXXXX");
	assert_non_null(mkdtemp(top));
	make_root("main", true);
	return 0;
}

static int group_teardown(void **state)
{
	(void)state;
	ion_mock_teardown();
	return test_remove_tree(top);
}

/* Most tests: the main root, its mock serving the four probe heaps. */
static char main_root[128];

static int setup_main(void **state)
{
	(void)state;
	path_in(main_root, sizeof(main_root), top, "main");
	mock_on(main_root, probe_heaps, 4);
	return 0;
}

static int teardown_mock(void **state)
{
	(void)state;
	ion_mock_teardown();
	return 0;
}

/* ---- discovery ---- */

static void test_legacy_heaps_probed(void **state)
{
	static const struct {
		const char *name;
		unsigned int type;
		unsigned int props;
	} want[] = {
		{ "ion-0", ION_HEAP_TYPE_SYSTEM, 0 },
		{ "ion-1", ION_HEAP_TYPE_SYSTEM_CONTIG, ION_HEAP_PROP_CONTIGUOUS },
		{ "ion-4", ION_HEAP_TYPE_DMA, ION_HEAP_PROP_CONTIGUOUS },
		{ "ion-7", ION_HEAP_TYPE_CUSTOM, 0 },
	};
	struct fd_table fds;
	struct ion_ctx *ctx;
	char node[256];

	(void)state;
	fd_table_read(&fds);
	path_in(node, sizeof(node), main_root, "dev/ion");
	ctx = ctx_on(main_root);
	assert_true(ctx_is_legacy(ctx));
	for (size_t i = 0; i < sizeof(want) / sizeof(want[0]); i++) {
		struct ion_heap *h = heap_of(ctx, want[i].name);

		assert_non_null(h);
		assert_string_equal(ion_heap_get_backend(h), "ion");
		assert_string_equal(ion_heap_get_node(h), node);
		assert_int_equal(ion_heap_get_error(h), 0);
		assert_int_equal(ion_heap_get_type(h), want[i].type);
		assert_int_equal(ion_heap_get_properties(h),
				 want[i].props | ION_HEAP_PROP_CACHED |
					 ION_HEAP_PROP_UNCACHED | ION_HEAP_PROP_ION_LEGACY);
	}
	/* The context keeps /dev/ion open: close-on-exec, like every fd it opens. */
	fd_table_assert_new_cloexec(&fds);
	assert_null(heap_of(ctx, "ion-2"));
	/* Compat ids follow the types; the custom heap gets an extra id. */
	assert_int_equal(ion_heap_get_id(heap_of(ctx, "ion-4")), 4);
	assert_true(ion_heap_get_id(heap_of(ctx, "ion-7")) >= ION_EXTRA_ID_FIRST);
	/* One probe allocation per id bit, all in the native layout. */
	assert_int_equal(ion_mock_calls(NATIVE_ALLOC), ION_NUM_HEAP_IDS);
	assert_int_equal(ion_mock_calls(OTHER_ALLOC), 0);
	assert_int_equal(ion_mock_live_handles(), 0);
	ion_ctx_unref(ctx);
	fd_table_assert_same(&fds);
}

static void test_probe_refused_marks_heap(void **state)
{
	struct ion_ctx *ctx;
	struct ion_heap *h;

	(void)state;
	/* The first probe allocation is id 0's. */
	ion_mock_fail_once(NATIVE_ALLOC, EINVAL);
	ctx = ctx_on(main_root);
	h = heap_of(ctx, "ion-0");
	assert_non_null(h);
	assert_int_equal(ion_heap_get_error(h), -EINVAL);
	assert_non_null(strstr(ion_heap_get_reason(h), "probe allocation"));
	assert_int_equal(ion_heap_get_error(heap_of(ctx, "ion-1")), 0);
	ion_ctx_unref(ctx);

	/* Out of memory at probe time is no reason to give a heap up. */
	ion_mock_fail_once(NATIVE_ALLOC, ENOMEM);
	ctx = ctx_on(main_root);
	assert_int_equal(ion_heap_get_error(heap_of(ctx, "ion-0")), 0);
	ion_ctx_unref(ctx);
	assert_int_equal(ion_mock_live_handles(), 0);
}

/* Android's 4.9 (and mainline 4.10, 4.11): handles, and a heap query. */
static void test_legacy_with_heap_query(void **state)
{
	static const struct ion_mock_heap heaps[] = {
		{ 0, ION_HEAP_TYPE_SYSTEM, "ion_system_heap" },
		{ 9, ION_HEAP_TYPE_CARVEOUT, "vendor_carveout" },
		{ 21, ION_HEAP_TYPE_DMA, "camera_cma" },
	};
	const struct ion_heap *served;
	const char *root = make_root("query", true);
	struct ion_ctx *ctx;
	struct ion_heap *h;
	int fd = -1;

	(void)state;
	mock_on(root, heaps, 3);
	ion_mock_enable_heap_query(true);
	ctx = ctx_on(root);
	assert_true(ctx_is_legacy(ctx));
	assert_int_equal(ion_mock_calls(NATIVE_ALLOC), 0); /* no probing */
	assert_null(heap_of(ctx, "ion-0"));
	h = heap_of(ctx, "vendor_carveout");
	assert_non_null(h);
	assert_int_equal(ion_heap_get_type(h), ION_HEAP_TYPE_CARVEOUT);
	assert_true(ion_heap_get_properties(h) & ION_HEAP_PROP_CONTIGUOUS);
	assert_int_equal(ion_heap_get_type(heap_of(ctx, "camera_cma")), ION_HEAP_TYPE_DMA);
	assert_string_equal(heap_of(ctx, "camera_cma")->memory_key, "cma:camera_cma");

	/* Compat id 2 (the carveout type) reaches kernel id 9. */
	assert_int_equal(ion_ctx_alloc_mask(ctx, ION_HEAP_CARVEOUT_MASK, 4096, 0,
					    &fd, &served), 0);
	assert_ptr_equal(served, h);
	assert_int_equal(ion_mock_last_alloc().heap_id_mask, 1U << 9);
	assert_int_equal(ion_mock_live_handles(), 0);
	close(fd);
	ion_ctx_unref(ctx);
}

static void test_detection_cached_per_device(void **state)
{
	const char *root = make_root("cache", true);
	struct ion_ctx *a, *b;

	(void)state;
	mock_on(root, probe_heaps, 4);
	a = ctx_on(root);
	assert_true(ctx_is_legacy(a));
	/* FREE of handle 0, the ABI probe, and HEAP_QUERY, the listing. */
	assert_int_equal(ion_mock_invalid_frees(), 1);
	assert_int_equal(ion_mock_calls(ION_NEW_IOC_HEAP_QUERY), 1);
	b = ctx_on(root);
	assert_true(ctx_is_legacy(b));
	assert_int_equal(ion_mock_invalid_frees(), 1);
	ion_ctx_unref(a);
	ion_ctx_unref(b);
}

/* DMA-BUF heaps probe first and keep the memory both offer (5.10). */
static void test_dma_heap_wins(void **state)
{
	const char *root = make_root("both", true);
	char path[256];
	struct ion_ctx *ctx;
	struct stat st;

	(void)state;
	/* /dev/null as the system dma-heap, sysfs vouching for it. */
	assert_int_equal(stat("/dev/null", &st), 0);
	path_in(path, sizeof(path), root, "dev/dma_heap");
	assert_int_equal(mkdir(path, 0755), 0);
	path_in(path, sizeof(path), root, "dev/dma_heap/system");
	assert_int_equal(symlink("/dev/null", path), 0);
	for (size_t i = 0; i < 3; i++) {
		path_in(path, sizeof(path), root,
			(const char *[]){ "sys", "sys/dev", "sys/dev/char" }[i]);
		assert_int_equal(mkdir(path, 0755), 0);
	}
	snprintf(path, sizeof(path), "%s/sys/dev/char/%u:%u", root,
		 major(st.st_rdev), minor(st.st_rdev));
	assert_int_equal(mkdir(path, 0755), 0);
	strcat(path, "/subsystem");
	assert_int_equal(symlink("../../../class/dma_heap", path), 0);

	mock_on(root, probe_heaps, 4);
	ctx = ctx_on(root);
	assert_string_equal(ion_heap_get_backend(heap_of(ctx, "system")), "dma-heap");
	assert_null(heap_of(ctx, "ion-0"));
	assert_non_null(strstr(log_text, "ion heap ion-0 left out: dma-heap heap system has the same memory"));
	assert_non_null(heap_of(ctx, "ion-1"));
	ion_ctx_unref(ctx);
	assert_int_equal(ion_mock_live_handles(), 0);
}

static void test_unopenable_node(void **state)
{
	const char *root = make_root("loop", false);
	char path[256];
	struct ion_ctx *ctx;
	struct ion_heap *h;

	(void)state;
	path_in(path, sizeof(path), root, "dev/ion");
	assert_int_equal(symlink("ion", path), 0);
	ctx = ctx_on(root);
	h = heap_of(ctx, "ion");
	assert_non_null(h);
	assert_string_equal(ion_heap_get_backend(h), "ion");
	assert_int_equal(ion_heap_get_error(h), -ELOOP);
	assert_non_null(strstr(ion_heap_get_reason(h), "open "));
	assert_non_null(strstr(ion_heap_get_reason(h), path));
	assert_false(ctx_is_legacy(ctx));
	ion_ctx_unref(ctx);
}

static void test_no_node(void **state)
{
	const char *root = make_root("none", false);
	struct ion_ctx *ctx;
	int n;

	(void)state;
	ctx = ctx_on(root);
	n = ion_ctx_get_heap_count(ctx);
	for (int i = 0; i < n; i++) {
		const struct ion_heap *h;

		assert_int_equal(ion_ctx_get_heap(ctx, (unsigned int)i, &h), 0);
		assert_string_not_equal(ion_heap_get_backend(h), "ion");
	}
	assert_false(ctx_is_legacy(ctx));
	ion_ctx_unref(ctx);
}

/* ---- allocation ---- */

static void test_alloc_by_name(void **state)
{
	static const unsigned int flags[] = {
		0, ION_FLAG_CACHED, ION_FLAG_CACHED | ION_FLAG_CACHED_NEEDS_SYNC,
	};
	struct ion_ctx *ctx = ctx_on(main_root);
	struct fd_table fds;

	(void)state;
	fd_table_read(&fds);
	for (size_t i = 0; i < sizeof(flags) / sizeof(flags[0]); i++) {
		struct ion_mock_alloc a;
		int fd = -1;

		assert_int_equal(ion_ctx_alloc(ctx, "ion-1", 5000, flags[i], &fd), 0);
		assert_true(fd >= 0 && fd_is_cloexec(fd));
		assert_int_equal(fd_size(fd), page_round(5000));
		a = ion_mock_last_alloc();
		assert_int_equal(a.user_bits, NATIVE_BITS);
		assert_int_equal(a.len, page_round(5000));
		assert_int_equal(a.heap_id_mask, 1U << 1);
		assert_int_equal(a.flags, flags[i]);
		assert_int_equal(ion_mock_live_handles(), 0);
		close(fd);
	}
	fd_table_assert_same(&fds);
	ion_ctx_unref(ctx);
}

static void test_alloc_by_mask(void **state)
{
	struct ion_ctx *ctx = ctx_on(main_root);
	const struct ion_heap *served = NULL;
	int fd = -1, id;

	(void)state;
	assert_int_equal(ion_ctx_alloc_mask(ctx, ION_HEAP_TYPE_DMA_MASK, 3 * 4096,
					    0, &fd, &served), 0);
	assert_string_equal(ion_heap_get_name(served), "ion-4");
	assert_int_equal(ion_mock_last_alloc().heap_id_mask, 1U << 4);
	assert_int_equal(fd_size(fd), page_round(3 * 4096));
	close(fd);

	/* The custom heap's compat id is not its kernel id. */
	id = ion_heap_get_id(heap_of(ctx, "ion-7"));
	assert_int_equal(ion_ctx_alloc_mask(ctx, 1U << id, 1, 0, &fd, &served), 0);
	assert_int_equal(ion_mock_last_alloc().heap_id_mask, 1U << 7);
	close(fd);
	assert_int_equal(ion_mock_live_handles(), 0);
	ion_ctx_unref(ctx);
}

/* Both layouts of the legacy ALLOC, straight against the "kernel". */
static void test_alloc_layouts(void **state)
{
	static const unsigned int bits[] = { 64, 32 };
	char path[256];
	int dev;

	(void)state;
	path_in(path, sizeof(path), main_root, "dev/ion");
	dev = open(path, O_RDONLY | O_CLOEXEC);
	assert_true(dev >= 0);
	for (size_t i = 0; i < 2; i++) {
		struct ion_legacy_handle_data free_data;
		struct ion_legacy_fd_data share;
		struct ion_mock_alloc a;
		int handle = -1;

		assert_int_equal(ion_legacy_alloc_handle(dev, bits[i], 12345, 1U << 1,
							 ION_FLAG_CACHED, &handle), 0);
		assert_true(handle > 0);
		a = ion_mock_last_alloc();
		assert_int_equal(a.user_bits, bits[i]);
		assert_int_equal(a.len, 12345);
		assert_int_equal(a.heap_id_mask, 1U << 1);
		assert_int_equal(a.flags, ION_FLAG_CACHED);
		assert_int_equal(ion_mock_live_handles(), 1);

		/* The handle is real: it shares, imports back, and frees. */
		share = (struct ion_legacy_fd_data){ .handle = handle };
		assert_int_equal(ioctl(dev, ION_LEGACY_IOC_SHARE, &share), 0);
		assert_int_equal(fd_size(share.fd), page_round(12345));
		share.handle = 0;
		assert_int_equal(ioctl(dev, ION_LEGACY_IOC_IMPORT, &share), 0);
		assert_int_equal(share.handle, handle);
		close(share.fd);
		free_data.handle = handle;
		assert_int_equal(ioctl(dev, ION_LEGACY_IOC_FREE, &free_data), 0);
		assert_int_equal(ioctl(dev, ION_LEGACY_IOC_FREE, &free_data), 0);
		assert_int_equal(ion_mock_live_handles(), 0);

		/* Failures leave the handle untouched. */
		handle = -7;
		assert_int_equal(ion_legacy_alloc_handle(dev, bits[i], 0, 1U << 1, 0,
							 &handle), -EINVAL);
		assert_int_equal(ion_legacy_alloc_handle(dev, bits[i], 4096, 1U << 2, 0,
							 &handle), -ENODEV);
		assert_int_equal(handle, -7);
	}
	if (SIZE_MAX > UINT32_MAX) {
		int handle = -7;

		assert_int_equal(ion_legacy_alloc_handle(dev, 32, (size_t)UINT32_MAX + 1,
							 1U << 1, 0, &handle), -EINVAL);
		assert_int_equal(handle, -7);
	}
	assert_int_equal(ion_legacy_alloc_handle(dev, 16, 4096, 1U << 1, 0, &(int){ 0 }),
			 -EINVAL);
	close(dev);
	assert_int_equal(ion_mock_live_handles(), 0);
}

/*
 * The op itself: ion_ctx_sync_for_device() would stop short of it, as the
 * mock's buffers are memfds, which it knows need no sync.
 */
static void test_sync(void **state)
{
	struct ion_ctx *ctx = ctx_on(main_root);
	struct ion_heap *h = heap_of(ctx, "ion-1");
	unsigned int syncs;
	int fd = -1, other;

	(void)state;
	assert_non_null(h->backend->sync);
	assert_int_equal(ion_ctx_alloc(ctx, "ion-1", 4096, 0, &fd), 0);
	syncs = ion_mock_calls(ION_LEGACY_IOC_SYNC);
	assert_int_equal(h->backend->sync(h, fd), 0);
	assert_int_equal(ion_mock_calls(ION_LEGACY_IOC_SYNC), syncs + 1);
	/* Not ION's buffer: the next backend may know it. */
	other = memfd_create("not-ion", MFD_CLOEXEC);
	assert_true(other >= 0);
	assert_int_equal(h->backend->sync(h, other), -ENOTTY);
	close(other);
	close(fd);
	assert_int_equal(h->backend->sync(h, fd), -EBADF);
	ion_ctx_unref(ctx);
}

/* ---- every failure: a negative errno, *ret_fd untouched, nothing left ---- */

/* Returns how many FREE calls the failed allocation made. */
static unsigned int alloc_fails(unsigned long request, int error, int expect)
{
	struct ion_ctx *ctx = ctx_on(main_root);
	unsigned int frees = ion_mock_calls(ION_LEGACY_IOC_FREE);
	struct fd_table fds;
	int fd = -7;

	fd_table_read(&fds);
	ion_mock_fail_once(request, error);
	assert_int_equal(ion_ctx_alloc(ctx, "ion-0", 4096, 0, &fd), expect);
	assert_int_equal(fd, -7);
	assert_int_equal(ion_mock_live_handles(), 0);
	fd_table_assert_same(&fds);
	ion_ctx_unref(ctx);
	return ion_mock_calls(ION_LEGACY_IOC_FREE) - frees;
}

static void test_alloc_enomem(void **state)
{
	(void)state;
	assert_int_equal(alloc_fails(NATIVE_ALLOC, ENOMEM, -ENOMEM), 0);
}

static void test_share_fails(void **state)
{
	(void)state;
	/* The handle is freed all the same. */
	assert_int_equal(alloc_fails(ION_LEGACY_IOC_SHARE, EMFILE, -EMFILE), 1);
}

static void test_interrupted_calls_retried(void **state)
{
	static const unsigned long requests[] = {
		NATIVE_ALLOC, ION_LEGACY_IOC_SHARE, ION_LEGACY_IOC_FREE,
	};
	struct ion_ctx *ctx = ctx_on(main_root);

	(void)state;
	for (size_t i = 0; i < 3; i++) {
		int fd = -1;

		ion_mock_fail_once(requests[i], EINTR);
		assert_int_equal(ion_ctx_alloc(ctx, "ion-0", 4096, 0, &fd), 0);
		close(fd);
		assert_int_equal(ion_mock_live_handles(), 0);
	}
	ion_ctx_unref(ctx);
}

/*
 * A FREE the kernel refuses: the shared fd is closed again and the error
 * returned.  The handle stays in the "kernel": nothing in user space can
 * drop it, the kernel does when the context closes /dev/ion.
 */
static void test_free_fails(void **state)
{
	struct ion_ctx *ctx = ctx_on(main_root);
	struct fd_table fds;
	int fd = -7;

	(void)state;
	fd_table_read(&fds);
	ion_mock_fail_once(ION_LEGACY_IOC_FREE, EIO);
	assert_int_equal(ion_ctx_alloc(ctx, "ion-0", 4096, 0, &fd), -EIO);
	assert_int_equal(fd, -7);
	assert_int_equal(ion_mock_live_handles(), 1);
	ion_mock_teardown(); /* the mock's own fd on the buffer goes too */
	fd_table_assert_same(&fds);
	ion_ctx_unref(ctx);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_legacy_heaps_probed, setup_main, teardown_mock),
		cmocka_unit_test_setup_teardown(test_probe_refused_marks_heap, setup_main, teardown_mock),
		cmocka_unit_test_teardown(test_legacy_with_heap_query, teardown_mock),
		cmocka_unit_test_teardown(test_detection_cached_per_device, teardown_mock),
		cmocka_unit_test_teardown(test_dma_heap_wins, teardown_mock),
		cmocka_unit_test_teardown(test_unopenable_node, teardown_mock),
		cmocka_unit_test_teardown(test_no_node, teardown_mock),
		cmocka_unit_test_setup_teardown(test_alloc_by_name, setup_main, teardown_mock),
		cmocka_unit_test_setup_teardown(test_alloc_by_mask, setup_main, teardown_mock),
		cmocka_unit_test_setup_teardown(test_alloc_layouts, setup_main, teardown_mock),
		cmocka_unit_test_setup_teardown(test_sync, setup_main, teardown_mock),
		cmocka_unit_test_setup_teardown(test_alloc_enomem, setup_main, teardown_mock),
		cmocka_unit_test_setup_teardown(test_share_fails, setup_main, teardown_mock),
		cmocka_unit_test_setup_teardown(test_interrupted_calls_retried, setup_main, teardown_mock),
		cmocka_unit_test_setup_teardown(test_free_fails, setup_main, teardown_mock),
	};

	return cmocka_run_group_tests(tests, group_setup, group_teardown);
}
