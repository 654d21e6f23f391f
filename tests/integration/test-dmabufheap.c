// SPDX-License-Identifier: MIT
/*
 * Android's libdmabufheap C API (libion-dmabufheap) against its contract,
 * as <BufferAllocator/BufferAllocatorWrapper.h> and the README's table
 * state it: on every available heap by name (sizes, 1,024 repeats, zeroed
 * memory, brackets, names), then the calls on their own (NULL and bad
 * arguments, unknown names, "system", the deprecated calls, 100 threads
 * on one allocator).  Runs on the host and in the VMs; every test checks
 * that the fd table is the same after it as before.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cmocka.h>

#include <BufferAllocator/BufferAllocatorWrapper.h>

#include "testlib.h"

struct state {
	const char *heap;     /* the heap of this group, or NULL */
	unsigned int props;   /* its ION_HEAP_PROP_* */
	BufferAllocator *allocator;
	struct fd_table fds;
};

static const char *current_heap;

static int setup(void **pstate)
{
	struct state *s = calloc(1, sizeof(*s));

	assert_non_null(s);
	s->heap = current_heap;
	s->allocator = CreateDmabufHeapBufferAllocator();
	assert_non_null(s->allocator);
	if (s->heap) {
		struct ion_ctx *ctx;
		const struct ion_heap *h;

		assert_int_equal(ion_ctx_new(NULL, &ctx), 0);
		assert_int_equal(ion_ctx_find_heap(ctx, s->heap, &h), 0);
		s->props = ion_heap_get_properties(h);
		ion_ctx_unref(ctx);
	}
	/* Taken before the allocator's first call: discovery's device
	 * nodes are counted, so the fds it keeps must be closed by Free. */
	fd_table_read(&s->fds);
	*pstate = s;
	return 0;
}

static int teardown(void **pstate)
{
	struct state *s = *pstate;

	FreeDmabufHeapBufferAllocator(s->allocator);
	fd_table_assert_same(&s->fds);
	free(s);
	return 0;
}

static size_t page(void)
{
	return (size_t)sysconf(_SC_PAGESIZE);
}

/* An allocation that must work: an O_CLOEXEC fd of at least len bytes. */
static int must_alloc(struct state *s, const char *heap, size_t len)
{
	int fd = DmabufHeapAlloc2(s->allocator, heap, len, 0);
	size_t size = 0;

	if (fd < 0)
		print_error("%s: %zu bytes: %s\n", heap, len, strerror(-fd));
	assert_true(fd >= 0);
	assert_true(fd_is_cloexec(fd));
	assert_int_equal(ion_fd_get_size(fd, &size), 0);
	assert_true(size >= len);
	return fd;
}

/* Maps the buffer, checks that every byte is zero, then dirties it, so a
 * buffer handed out again without clearing would show. */
static void assert_zeroed_then_dirty(int fd, size_t len)
{
	unsigned char *p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);

	assert_true(p != MAP_FAILED);
	for (size_t i = 0; i < len; i++)
		if (p[i]) {
			print_error("byte %zu of %zu is %#x\n", i, len, p[i]);
			fail();
		}
	memset(p, 0xa5, len);
	munmap(p, len);
}

/* ---- on each heap, by its name ---- */

static void test_sizes_zeroed(void **pstate)
{
	struct state *s = *pstate;
	static const size_t pages[] = { 1, 2, 3, 4, 16, 64, 256, 512 };

	for (size_t i = 0; i < sizeof(pages) / sizeof(pages[0]); i++) {
		int fd = must_alloc(s, s->heap, pages[i] * page());

		if (!(s->props & ION_HEAP_PROP_PROTECTED)) /* the CPU cannot map it */
			assert_zeroed_then_dirty(fd, pages[i] * page());
		close(fd);
	}
}

static void test_repeated_1024(void **pstate)
{
	struct state *s = *pstate;

	for (unsigned int i = 0; i < 1024; i++) {
		size_t len = (1 + i % 16) * page();
		int fd = must_alloc(s, s->heap, len);

		if (!(s->props & ION_HEAP_PROP_PROTECTED))
			assert_zeroed_then_dirty(fd, len);
		close(fd);
	}
}

/* The brackets' pairing rules on a buffer of this heap. */
static void test_sync_brackets(void **pstate)
{
	struct state *s = *pstate;
	int fd = must_alloc(s, s->heap, page());
	BufferAllocator *other = CreateDmabufHeapBufferAllocator();

	assert_non_null(other);
	assert_int_equal(DmabufHeapCpuSyncEnd2(s->allocator, fd, kSyncRead), -EINVAL);
	assert_int_equal(DmabufHeapCpuSyncStart2(s->allocator, fd, kSyncWrite), 0);
	assert_int_equal(DmabufHeapCpuSyncStart2(s->allocator, fd, kSyncWrite), -EINVAL);
	assert_int_equal(DmabufHeapCpuSyncStart2(s->allocator, fd, kSyncRead), -EINVAL);
	/* A bracket is the allocator's that opened it. */
	assert_int_equal(DmabufHeapCpuSyncEnd2(other, fd, kSyncWrite), -EINVAL);
	assert_int_equal(DmabufHeapCpuSyncEnd2(s->allocator, fd, kSyncWrite), 0);
	assert_int_equal(DmabufHeapCpuSyncEnd2(s->allocator, fd, kSyncWrite), -EINVAL);
	for (int type = kSyncRead; type <= kSyncReadWrite; type++) {
		assert_int_equal(DmabufHeapCpuSyncStart2(s->allocator, fd, (SyncType)type), 0);
		assert_int_equal(DmabufHeapCpuSyncEnd2(s->allocator, fd, (SyncType)type), 0);
	}
	/* A bad type opens nothing. */
	assert_int_equal(DmabufHeapCpuSyncStart2(s->allocator, fd, (SyncType)0), -EINVAL);
	assert_int_equal(DmabufHeapCpuSyncStart2(s->allocator, fd, (SyncType)4), -EINVAL);
	assert_int_equal(DmabufHeapCpuSyncEnd2(s->allocator, fd, kSyncRead), -EINVAL);
	FreeDmabufHeapBufferAllocator(other);
	close(fd);
}

/* A bracket left open on a closed fd does not block the next buffer that
 * gets the same number. */
static void test_sync_fd_reused(void **pstate)
{
	struct state *s = *pstate;
	int fd = must_alloc(s, s->heap, page());
	int again;

	assert_int_equal(DmabufHeapCpuSyncStart2(s->allocator, fd, kSyncRead), 0);
	/* Another buffer under the same number, as after close() and a new
	 * allocation, without depending on which number the kernel picks. */
	again = must_alloc(s, s->heap, page());
	assert_int_equal(dup3(again, fd, O_CLOEXEC), fd);
	close(again);
	assert_int_equal(DmabufHeapCpuSyncStart2(s->allocator, fd, kSyncRead), 0);
	assert_int_equal(DmabufHeapCpuSyncEnd2(s->allocator, fd, kSyncRead), 0);
	close(fd);
}

static bool fdinfo_has_name(int fd, const char *name)
{
	char path[64], line[128], want[128];
	bool found = false;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/self/fdinfo/%d", fd);
	snprintf(want, sizeof(want), "name:\t%s\n", name);
	f = fopen(path, "re");
	assert_non_null(f);
	while (fgets(line, sizeof(line), f))
		found |= strcmp(line, want) == 0;
	fclose(f);
	return found;
}

/* Buffers are named after the heap they were asked of; DmabufSetName
 * renames them, cut to 31 bytes.  A memfd buffer's name is fixed at its
 * creation, and no getter shows it: there the test checks the refusal. */
static void test_names(void **pstate)
{
	struct state *s = *pstate;
	int fd = must_alloc(s, s->heap, page());
	bool named = (s->props & ION_HEAP_PROP_CPU_ONLY) || fdinfo_has_name(fd, s->heap);
	int r = DmabufSetName(s->allocator, fd, "a-rather-long-buffer-name-that-goes-past-31");

	if (!named)
		close(fd);
	assert_true(named); /* named after its heap before any rename */
	if (s->props & ION_HEAP_PROP_CPU_ONLY) {
		assert_int_equal(r, -ENOTTY);
		assert_int_equal(errno, ENOTTY);
	} else {
		assert_int_equal(r, 0);
		assert_true(fdinfo_has_name(fd, "a-rather-long-buffer-name-that-"));
	}
	assert_int_equal(DmabufSetName(s->allocator, fd, NULL), -EINVAL);
	assert_int_equal(DmabufSetName(NULL, fd, "x"), -EINVAL);
	close(fd);
}

/* ---- the calls on their own ---- */

static void test_null_and_bad_args(void **pstate)
{
	struct state *s = *pstate;
	int devnull = open("/dev/null", O_RDWR | O_CLOEXEC);

	FreeDmabufHeapBufferAllocator(NULL);
	assert_int_equal(DmabufHeapAlloc2(NULL, "system", page(), 0), -EINVAL);
	assert_int_equal(DmabufHeapAlloc2(s->allocator, NULL, page(), 0), -EINVAL);
	assert_int_equal(DmabufHeapAlloc2(s->allocator, "system", 0, 0), -EINVAL);
	assert_int_equal(DmabufHeapAllocSystem2(NULL, true, page(), 0), -EINVAL);
	assert_int_equal(DmabufHeapAllocSystem2(s->allocator, true, 0, 0), -EINVAL);
	assert_int_equal(DmabufHeapCpuSyncStart2(NULL, 0, kSyncRead), -EINVAL);
	assert_int_equal(DmabufHeapCpuSyncEnd2(NULL, 0, kSyncRead), -EINVAL);
	assert_int_equal(DmabufHeapCpuSyncStart2(s->allocator, (unsigned int)INT_MAX + 1u,
						 kSyncRead), -EBADF);
	assert_int_equal(DmabufHeapCpuSyncStart2(s->allocator, (unsigned int)-1, kSyncRead),
			 -EBADF);
	assert_int_equal(DmabufSetName(s->allocator, (unsigned int)-1, "x"), -EBADF);
	/* Not a buffer: refused, and no bracket is left open for it. */
	assert_true(devnull >= 0);
	assert_int_equal(DmabufHeapCpuSyncStart2(s->allocator, devnull, kSyncRead), -ENOTTY);
	assert_int_equal(DmabufHeapCpuSyncEnd2(s->allocator, devnull, kSyncRead), -EINVAL);
	assert_int_equal(DmabufSetName(s->allocator, devnull, "x"), -ENOTTY);
	close(devnull);
}

/* An unknown name fails (Android: -1; here -ENOENT and errno ENOENT). */
static void test_unknown_heap(void **pstate)
{
	struct state *s = *pstate;

	errno = 0;
	assert_int_equal(DmabufHeapAlloc2(s->allocator, "no-such-heap", page(), 0), -ENOENT);
	assert_int_equal(errno, ENOENT);
	assert_int_equal(DmabufHeapAlloc2(s->allocator, "", page(), 0), -ENOENT);
	assert_int_equal(DmabufHeapAlloc2(s->allocator, "../null", page(), 0), -ENOENT);
}

/* "system" is served everywhere; the CMA heap answers to its every name
 * where there is one, and to none where there is not. */
static void test_names_that_resolve(void **pstate)
{
	struct state *s = *pstate;
	static const char *const cma[] = {
		"cma", "linux,cma", "reserved", "default-pool", "default_cma_region",
	};
	struct ion_ctx *ctx;
	const struct ion_heap *h;
	bool has_cma;
	int fd;

	fd = must_alloc(s, "system", page());
	close(fd);
	assert_int_equal(ion_ctx_new(NULL, &ctx), 0);
	has_cma = ion_ctx_find_heap(ctx, "cma", &h) == 0 && ion_heap_get_error(h) == 0;
	ion_ctx_unref(ctx);
	for (size_t i = 0; i < sizeof(cma) / sizeof(cma[0]); i++) {
		fd = DmabufHeapAlloc2(s->allocator, cma[i], page(), 0);
		if (has_cma) {
			assert_true(fd >= 0);
			close(fd);
		} else {
			assert_int_equal(fd, -ENOENT);
		}
	}
}

static void test_alloc_system(void **pstate)
{
	struct state *s = *pstate;

	for (int cpu = 0; cpu <= 1; cpu++) {
		int fd = DmabufHeapAllocSystem2(s->allocator, cpu, 3 * page(), 0);

		assert_true(fd >= 0);
		assert_true(fd_is_cloexec(fd));
		assert_zeroed_then_dirty(fd, 3 * page());
		close(fd);
	}
}

static int never_called(int ion_fd, int buf_fd, void *data)
{
	(void)ion_fd, (void)buf_fd, (void)data;
	fail_msg("the legacy ION callback was called");
	return -1;
}

/* The deprecated calls behave as their successors; the ION ones do
 * nothing, as Android's now do. */
static void test_deprecated(void **pstate)
{
	struct state *s = *pstate;
	int fd = DmabufHeapAlloc(s->allocator, "system", page(), 0, 65536);
	int cached = DmabufHeapAllocSystem(s->allocator, true, page(), 0, 4096);

	assert_true(fd >= 0);
	assert_true(cached >= 0);
	assert_int_equal(DmabufHeapAlloc(s->allocator, "no-such-heap", page(), 0, 0), -ENOENT);
	assert_int_equal(DmabufHeapAlloc(NULL, "system", page(), 0, 0), -EINVAL);
	assert_int_equal(DmabufHeapAllocSystem(NULL, true, page(), 0, 0), -EINVAL);
	assert_int_equal(MapDmabufHeapNameToIonHeap(s->allocator, "system", "", 0, ~0u, 0), 0);
	assert_int_equal(MapDmabufHeapNameToIonHeap(NULL, "system", "", 0, ~0u, 0), -EINVAL);
	assert_int_equal(DmabufHeapCpuSyncStart(s->allocator, fd, kSyncRead, never_called, s), 0);
	assert_int_equal(DmabufHeapCpuSyncStart(s->allocator, fd, kSyncRead, never_called, s),
			 -EINVAL);
	assert_int_equal(DmabufHeapCpuSyncEnd(s->allocator, fd, kSyncRead, never_called, s), 0);
	assert_int_equal(DmabufHeapCpuSyncEnd(s->allocator, fd, kSyncRead, NULL, NULL), -EINVAL);
	assert_int_equal(DmabufHeapCpuSyncStart(NULL, fd, kSyncRead, NULL, NULL), -EINVAL);
	assert_false(CheckIonSupport());
	close(fd);
	close(cached);
}

/* The C++ class holds a pointer to the C allocator as its only member
 * and passes its own address: the C calls must accept that too. */
static void test_cxx_object_layout(void **pstate)
{
	struct state *s = *pstate;
	void *object = s->allocator;
	BufferAllocator *as_object = (BufferAllocator *)&object;
	int fd = DmabufHeapAlloc2(as_object, "system", page(), 0);

	assert_true(fd >= 0);
	assert_int_equal(DmabufHeapCpuSyncStart2(as_object, fd, kSyncRead), 0);
	/* Same allocator, reached either way. */
	assert_int_equal(DmabufHeapCpuSyncStart2(s->allocator, fd, kSyncRead), -EINVAL);
	assert_int_equal(DmabufHeapCpuSyncEnd2(s->allocator, fd, kSyncRead), 0);
	object = NULL;
	assert_int_equal(DmabufHeapAlloc2(as_object, "system", page(), 0), -EINVAL);
	close(fd);
}

#define N_THREADS 100
#define PER_THREAD 8

struct worker {
	BufferAllocator *allocator;
	pthread_barrier_t *start;
	int fds[PER_THREAD];
	int error;
};

/* Allocates, brackets and checks its buffers, all threads at once. */
static void *worker_run(void *arg)
{
	struct worker *w = arg;

	pthread_barrier_wait(w->start);
	for (int i = 0; i < PER_THREAD && !w->error; i++) {
		int fd = i % 2 ? DmabufHeapAllocSystem2(w->allocator, i % 4 == 1, 2 * page(), 0)
			       : DmabufHeapAlloc2(w->allocator, "system", page(), 0);

		if (fd < 0) {
			w->error = fd;
			break;
		}
		w->fds[i] = fd;
		if (DmabufHeapCpuSyncStart2(w->allocator, fd, kSyncReadWrite) != 0 ||
		    DmabufHeapCpuSyncEnd2(w->allocator, fd, kSyncReadWrite) != 0)
			w->error = -EPROTO;
	}
	return NULL;
}

static void test_threads_one_allocator(void **pstate)
{
	struct state *s = *pstate;
	static struct worker workers[N_THREADS];
	pthread_t threads[N_THREADS];
	pthread_barrier_t start;
	char *seen = calloc(65536, 1);

	assert_non_null(seen);
	assert_int_equal(pthread_barrier_init(&start, NULL, N_THREADS), 0);
	for (int t = 0; t < N_THREADS; t++) {
		workers[t] = (struct worker){ .allocator = s->allocator, .start = &start };
		for (int i = 0; i < PER_THREAD; i++)
			workers[t].fds[i] = -1;
		assert_int_equal(pthread_create(&threads[t], NULL, worker_run, &workers[t]), 0);
	}
	for (int t = 0; t < N_THREADS; t++)
		assert_int_equal(pthread_join(threads[t], NULL), 0);
	pthread_barrier_destroy(&start);
	for (int t = 0; t < N_THREADS; t++) {
		assert_int_equal(workers[t].error, 0);
		for (int i = 0; i < PER_THREAD; i++) {
			int fd = workers[t].fds[i];

			assert_true(fd >= 0 && fd < 65536);
			assert_false(seen[fd]); /* every fd its own buffer */
			seen[fd] = 1;
			assert_true(fd_is_cloexec(fd));
			close(fd);
		}
	}
	free(seen);
}

int main(void)
{
	static const struct CMUnitTest per_heap[] = {
		cmocka_unit_test_setup_teardown(test_sizes_zeroed, setup, teardown),
		cmocka_unit_test_setup_teardown(test_repeated_1024, setup, teardown),
		cmocka_unit_test_setup_teardown(test_sync_brackets, setup, teardown),
		cmocka_unit_test_setup_teardown(test_sync_fd_reused, setup, teardown),
		cmocka_unit_test_setup_teardown(test_names, setup, teardown),
	};
	static const struct CMUnitTest calls[] = {
		cmocka_unit_test_setup_teardown(test_null_and_bad_args, setup, teardown),
		cmocka_unit_test_setup_teardown(test_unknown_heap, setup, teardown),
		cmocka_unit_test_setup_teardown(test_names_that_resolve, setup, teardown),
		cmocka_unit_test_setup_teardown(test_alloc_system, setup, teardown),
		cmocka_unit_test_setup_teardown(test_deprecated, setup, teardown),
		cmocka_unit_test_setup_teardown(test_cxx_object_layout, setup, teardown),
		cmocka_unit_test_setup_teardown(test_threads_one_allocator, setup, teardown),
	};
	int failed = test_run_per_heap(per_heap, sizeof(per_heap) / sizeof(per_heap[0]),
				       &current_heap);

	failed += _cmocka_run_group_tests("calls", calls, sizeof(calls) / sizeof(calls[0]),
					  NULL, NULL);
	return failed ? 1 : 0;
}
