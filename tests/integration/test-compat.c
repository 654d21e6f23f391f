// SPDX-License-Identifier: MIT
/*
 * Android libion's API as Android code uses it: clients, masks by type
 * convention, handles on every backend, errno answers.  Runs on the host
 * and in the VM.  Every test checks the fd table.
 */
#include <errno.h>
#include <fcntl.h>
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

#include "testlib.h"

struct state {
	struct fd_table fds;
	int client;
};

static int setup(void **pstate)
{
	struct state *s = calloc(1, sizeof(*s));

	assert_non_null(s);
	fd_table_read(&s->fds);
	s->client = ion_open();
	assert_true(s->client >= 0);
	*pstate = s;
	return 0;
}

static int teardown(void **pstate)
{
	struct state *s = *pstate;

	assert_int_equal(ion_close(s->client), 0);
	fd_table_assert_same(&s->fds);
	free(s);
	return 0;
}

static void test_open_close(void **pstate)
{
	struct state *s = *pstate;
	int other = ion_open();

	assert_true(fd_is_cloexec(s->client));
	assert_true(other >= 0 && other != s->client);
	assert_int_equal(ion_close(other), 0);
	assert_int_equal(ion_close(-1), -EBADF);
	assert_int_equal(ion_is_legacy(s->client), 0);
}

static void test_query_heaps(void **pstate)
{
	struct state *s = *pstate;
	struct ion_heap_data heaps[ION_NUM_HEAP_IDS];
	int cnt = -5;
	unsigned int seen = 0;

	assert_int_equal(ion_query_heap_cnt(s->client, &cnt), 0);
	assert_true(cnt >= 1 && cnt <= (int)ION_NUM_HEAP_IDS);
	memset(heaps, 0xee, sizeof(heaps));
	assert_int_equal(ion_query_get_heaps(s->client, cnt, heaps), 0);
	for (int i = 0; i < cnt; i++) {
		int fd = -1;

		assert_true(heaps[i].heap_id < ION_NUM_HEAP_IDS);
		assert_true(memchr(heaps[i].name, '\0', sizeof(heaps[i].name)));
		/* Ids are unique; the type convention holds for ids below 5. */
		assert_false(seen & (1U << heaps[i].heap_id));
		seen |= 1U << heaps[i].heap_id;
		if (heaps[i].heap_id < ION_HEAP_TYPE_CUSTOM)
			assert_int_equal(heaps[i].type, heaps[i].heap_id);
		/* ... and a heap of a type below CUSTOM has its type's id, so
		 * that it answers its type's mask (Android's own check). */
		if (heaps[i].type < ION_HEAP_TYPE_CUSTOM)
			assert_int_equal(heaps[i].heap_id, heaps[i].type);
		/* Every heap answers to its own mask bit. */
		assert_int_equal(ion_alloc_fd(s->client, 8192, 0,
					      1U << heaps[i].heap_id,
					      ION_FLAG_CACHED, &fd), 0);
		close(fd);
	}
	/* Some heap answers ION_HEAP_SYSTEM_MASK, on any machine. */
	assert_true(seen & ION_HEAP_SYSTEM_MASK);
	assert_int_equal(ion_query_heap_cnt(s->client, NULL), -EINVAL);
	assert_int_equal(ion_query_get_heaps(s->client, 0, heaps), -EINVAL);
	/* As in Android: NULL buffers ask the kernel for the count only. */
	assert_int_equal(ion_query_get_heaps(s->client, cnt, NULL), 0);
	/* A bad buffer is -EFAULT, as the kernel's copy_to_user() says. */
	assert_int_equal(ion_query_get_heaps(s->client, cnt, (void *)(uintptr_t)0xdeadf00d),
			 -EFAULT);
	assert_int_equal(ion_query_heap_cnt(-1, &cnt), -EBADF);
}

/*
 * Android's own gtest Map.MapOffset, on every heap the Android calls
 * offer: a plain mmap() of the buffer fd at a page offset shows that
 * page.  (GEM's shmem helpers show page 0 there: such heaps must not be
 * offered.)
 */
static void test_map_offset_every_heap(void **pstate)
{
	struct state *s = *pstate;
	struct ion_heap_data heaps[ION_NUM_HEAP_IDS];
	size_t pg = (size_t)sysconf(_SC_PAGESIZE);
	int cnt = 0;

	assert_int_equal(ion_query_heap_cnt(s->client, &cnt), 0);
	assert_int_equal(ion_query_get_heaps(s->client, cnt, heaps), 0);
	for (int i = 0; i < cnt; i++) {
		unsigned char *p;
		int fd = -1;

		assert_int_equal(ion_alloc_fd(s->client, 2 * pg, 0, 1U << heaps[i].heap_id, 0,
					      &fd), 0);
		p = mmap(NULL, 2 * pg, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
		assert_true(p != MAP_FAILED);
		p[0] = 0xa0;
		p[pg] = 0xb1;
		munmap(p, 2 * pg);
		p = mmap(NULL, pg, PROT_READ, MAP_SHARED, fd, (off_t)pg);
		assert_true(p != MAP_FAILED);
		if (p[0] != 0xb1)
			fail_msg("heap %s (id %u): mmap at offset %zu shows 0x%02x, not page 1's 0xb1",
				 heaps[i].name, heaps[i].heap_id, pg, p[0]);
		munmap(p, pg);
		close(fd);
	}
}

/* A CMA heap, where one exists, answers ION_HEAP_TYPE_DMA_MASK. */
static void test_cma_mask(void **pstate)
{
	struct state *s = *pstate;
	struct ion_ctx *ctx;
	const struct ion_heap *cma;
	int fd = -1, r;

	assert_int_equal(ion_ctx_new(NULL, &ctx), 0);
	r = ion_ctx_find_heap(ctx, "cma", &cma);
	if (r == 0 && ion_heap_get_error(cma) == 0) {
		assert_int_equal(ion_heap_get_id(cma), ION_HEAP_TYPE_DMA);
		assert_true(ion_heap_get_properties(cma) & ION_HEAP_PROP_CONTIGUOUS);
		assert_int_equal(ion_alloc_fd(s->client, 1 << 20, 0,
					      ION_HEAP_TYPE_DMA_MASK, 0, &fd), 0);
		close(fd);
	} else {
		assert_int_equal(ion_alloc_fd(s->client, 4096, 0,
					      ION_HEAP_TYPE_DMA_MASK, 0, &fd),
				 -ENODEV);
		assert_int_equal(fd, -1);
	}
	ion_ctx_unref(ctx);
}

static void test_alloc_fd_errors(void **pstate)
{
	struct state *s = *pstate;
	int fd = -42, devnull = open("/dev/null", O_RDONLY | O_CLOEXEC);

	assert_int_equal(ion_alloc_fd(-1, 4096, 0, ION_HEAP_SYSTEM_MASK, 0, &fd), -EBADF);
	assert_int_equal(ion_alloc_fd(devnull, 4096, 0, ION_HEAP_SYSTEM_MASK, 0, &fd), -ENOTTY);
	assert_int_equal(ion_alloc_fd(s->client, 4096, 0, 0, 0, &fd), -ENODEV);
	assert_int_equal(ion_alloc_fd(s->client, 0, 0, ION_HEAP_SYSTEM_MASK, 0, &fd), -EINVAL);
	assert_int_equal(ion_alloc_fd(s->client, SIZE_MAX - 100, 0, ION_HEAP_SYSTEM_MASK, 0, &fd), -EINVAL);
	assert_int_equal(ion_alloc_fd(s->client, 4096, 0, ION_HEAP_SYSTEM_MASK, 0, NULL), -EINVAL);
	/* The length is checked before the mask, as the kernel's ION does. */
	assert_int_equal(ion_alloc_fd(s->client, 0, 0, 0, 0, &fd), -EINVAL);
	/* Vendor flags (ION_FLAG_SECURE is 1 << 31 on msm) are refused. */
	assert_int_equal(ion_alloc_fd(s->client, 4096, 0, ION_HEAP_SYSTEM_MASK, 1U << 31, &fd), -EINVAL);
	/* Which fd is wrong comes before which pointer is. */
	assert_int_equal(ion_alloc(devnull, 4096, 0, ION_HEAP_SYSTEM_MASK, 0, NULL), -ENOTTY);
	assert_int_equal(ion_share(devnull, 1, NULL), -ENOTTY);
	assert_int_equal(ion_map(devnull, 1, 4096, PROT_READ, MAP_SHARED, 0, NULL, NULL), -ENOTTY);
	assert_int_equal(ion_import(devnull, devnull, NULL), -ENOTTY);
	assert_int_equal(fd, -42);
	close(devnull);
}

static void test_handles(void **pstate)
{
	struct state *s = *pstate;
	ion_user_handle_t h = 0, imported = 0;
	unsigned char *p = NULL, *q = NULL;
	int map_fd = -1, share_fd = -1, map2 = -1;

	assert_int_equal(ion_alloc(s->client, 8192, 0, ION_HEAP_SYSTEM_MASK,
				   ION_FLAG_CACHED, &h), 0);
	assert_true(h > 0);
	assert_int_equal(ion_map(s->client, h, 8192, PROT_READ | PROT_WRITE,
				 MAP_SHARED, 0, &p, &map_fd), 0);
	assert_true(fd_is_cloexec(map_fd));
	assert_int_equal(ion_sync(map_fd, ION_SYNC_START | ION_SYNC_WRITE), 0);
	strcpy((char *)p + 4096, "hello from a handle");
	assert_int_equal(ion_sync(map_fd, ION_SYNC_END | ION_SYNC_WRITE), 0);
	assert_int_equal(ion_sync_fd(s->client, map_fd), 0);

	assert_int_equal(ion_share(s->client, h, &share_fd), 0);
	assert_true(fd_is_cloexec(share_fd));
	assert_int_equal(ion_import(s->client, share_fd, &imported), 0);
	assert_true(imported > 0 && imported != h);
	assert_int_equal(ion_map(s->client, imported, 4096, PROT_READ,
				 MAP_SHARED, 4096, &q, &map2), 0);
	assert_int_equal(ion_sync(map2, ION_SYNC_START | ION_SYNC_READ), 0);
	assert_string_equal((char *)q, "hello from a handle");
	assert_int_equal(ion_sync(map2, ION_SYNC_END | ION_SYNC_READ), 0);

	assert_int_equal(ion_free(s->client, h), 0);
	/* A freed handle is gone; the buffer lives on in its other fds. */
	assert_int_equal(ion_free(s->client, h), -EINVAL);
	assert_int_equal(ion_share(s->client, h, &share_fd), -EINVAL);
	assert_int_equal(ion_free(s->client, 0), -EINVAL);
	assert_int_equal(ion_free(s->client, 12345), -EINVAL);
	assert_int_equal(ion_free(-1, imported), -EBADF);
	assert_int_equal(ion_free(s->client, imported), 0);
	assert_string_equal((char *)q, "hello from a handle");

	munmap(p, 8192);
	munmap(q, 4096);
	close(map_fd);
	close(map2);
	close(share_fd);
}

static void test_handle_errors(void **pstate)
{
	struct state *s = *pstate;
	ion_user_handle_t h = 0, untouched = -3;
	unsigned char *p = (unsigned char *)"x";
	int fd = -9, devnull = open("/dev/null", O_RDONLY | O_CLOEXEC);

	assert_int_equal(ion_alloc(s->client, 4096, 0, ION_HEAP_SYSTEM_MASK, 0, NULL), -EINVAL);
	assert_int_equal(ion_alloc(s->client, 0, 0, ION_HEAP_SYSTEM_MASK, 0, &untouched), -EINVAL);
	assert_int_equal(ion_alloc(-1, 4096, 0, ION_HEAP_SYSTEM_MASK, 0, &untouched), -EBADF);
	assert_int_equal(untouched, -3);
	assert_int_equal(ion_alloc(s->client, 4096, 0, ION_HEAP_SYSTEM_MASK, 0, &h), 0);
	assert_int_equal(ion_map(s->client, h, 0, PROT_READ, MAP_SHARED, 0, &p, &fd), -EINVAL);
	assert_int_equal(ion_map(s->client, h, 4096, PROT_READ, MAP_SHARED, -4096, &p, &fd), -EINVAL);
	assert_int_equal(ion_map(s->client, h, 4096, PROT_READ, MAP_SHARED, 0, NULL, &fd), -EINVAL);
	assert_int_equal(ion_map(s->client, h + 1, 4096, PROT_READ, MAP_SHARED, 0, &p, &fd), -EINVAL);
	/* mmap's own refusal (past the end) comes back as its errno. */
	assert_true(ion_map(s->client, h, 4096, PROT_READ, MAP_SHARED, 1 << 30, &p, &fd) < 0);
	assert_int_equal(ion_share(s->client, h, NULL), -EINVAL);
	assert_int_equal(ion_import(s->client, -1, &untouched), -EBADF);
	/* Only dma-bufs and memfds can be imported. */
	assert_int_equal(ion_import(s->client, devnull, &untouched), -EINVAL);
	assert_int_equal(untouched, -3);
	assert_int_equal(fd, -9);
	assert_string_equal((char *)p, "x");
	assert_int_equal(ion_sync_fd(s->client, devnull), -ENOTTY);
	assert_int_equal(ion_sync_fd(s->client, -1), -EBADF);
	assert_int_equal(ion_free(s->client, h), 0);
	close(devnull);
}

/* Closing a client releases the buffers its handles held. */
static void test_close_releases_handles(void **pstate)
{
	struct state *s = *pstate;
	struct fd_table before;
	ion_user_handle_t h;
	int client, cnt;

	/* The shared context's device fds stay open while s->client lives. */
	assert_int_equal(ion_query_heap_cnt(s->client, &cnt), 0);
	fd_table_read(&before);
	client = ion_open();
	assert_true(client >= 0);
	for (int i = 0; i < 8; i++)
		assert_int_equal(ion_alloc(client, 4096, 0, ION_HEAP_SYSTEM_MASK, 0, &h), 0);
	assert_int_equal(ion_close(client), 0);
	fd_table_assert_same(&before);
}

/* A buffer of any heap, imported as a handle, maps and shows its data. */
static void test_import_every_heap(void **pstate)
{
	struct state *s = *pstate;
	struct ion_ctx *ctx;
	int n;

	assert_int_equal(ion_ctx_new(NULL, &ctx), 0);
	n = ion_ctx_get_heap_count(ctx);
	for (int i = 0; i < n; i++) {
		const struct ion_heap *h;
		ion_user_handle_t handle = 0;
		unsigned char *p, *q;
		int fd, map_fd;

		assert_int_equal(ion_ctx_get_heap(ctx, (unsigned int)i, &h), 0);
		if (ion_heap_get_error(h))
			continue;
		assert_int_equal(ion_ctx_alloc(ctx, ion_heap_get_name(h), 8192,
					       ION_FLAG_CACHED, &fd), 0);
		p = mmap(NULL, 8192, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
		assert_true(p != MAP_FAILED);
		assert_int_equal(ion_sync(fd, ION_SYNC_START | ION_SYNC_WRITE), 0);
		snprintf((char *)p, 64, "from %s", ion_heap_get_name(h));
		assert_int_equal(ion_sync(fd, ION_SYNC_END | ION_SYNC_WRITE), 0);

		assert_int_equal(ion_import(s->client, fd, &handle), 0);
		close(fd);
		assert_int_equal(ion_map(s->client, handle, 8192, PROT_READ,
					 MAP_SHARED, 0, &q, &map_fd), 0);
		assert_int_equal(ion_sync(map_fd, ION_SYNC_START | ION_SYNC_READ), 0);
		assert_string_equal((char *)q + 5, ion_heap_get_name(h));
		assert_int_equal(ion_sync(map_fd, ION_SYNC_END | ION_SYNC_READ), 0);
		munmap(q, 8192);
		munmap(p, 8192);
		close(map_fd);
		assert_int_equal(ion_free(s->client, handle), 0);
	}
	ion_ctx_unref(ctx);
}

/*
 * With the CMA heap exhausted, a request without fallback stops at its
 * -ENOMEM; with fallback (the default, and always for masks, as in ION)
 * it moves on to the next heap of the mask and says which served.
 */
static void test_fallback_when_cma_is_full(void **pstate)
{
	struct ion_ctx *ctx;
	const struct ion_heap *cma, *served = NULL;
	struct ion_alloc_config *config;
	int held[256], n_held = 0, fd = -3, r;
	const unsigned int mask = ION_HEAP_TYPE_DMA_MASK | ION_HEAP_SYSTEM_MASK;

	(void)pstate;
	assert_int_equal(ion_ctx_new(NULL, &ctx), 0);
	if (ion_ctx_find_heap(ctx, "cma", &cma) < 0 || ion_heap_get_error(cma)) {
		ion_ctx_unref(ctx);
		skip();
	}
	/* 1 MiB at a time until the CMA area is full. */
	while (n_held < 256) {
		r = ion_ctx_alloc(ctx, "cma", 1 << 20, 0, &held[n_held]);
		if (r < 0)
			break;
		n_held++;
	}
	assert_int_equal(r, -ENOMEM);
	assert_true(n_held > 0);
	assert_int_equal(ion_alloc_config_new(&config), 0);
	assert_int_equal(ion_alloc_config_set_size(config, 1 << 20), 0);
	assert_int_equal(ion_alloc_config_set_heap_mask(config, mask), 0);
	assert_int_equal(ion_alloc_config_set_flags(config, ION_FLAG_CACHED), 0);
	assert_int_equal(ion_alloc_config_set_fallback(config, 0), 0);
	assert_int_equal(ion_ctx_allocate(ctx, config, &fd, &served), -ENOMEM);
	assert_int_equal(fd, -3);
	assert_null(served);
	assert_int_equal(ion_alloc_config_set_fallback(config, 1), 0);
	assert_int_equal(ion_ctx_allocate(ctx, config, &fd, &served), 0);
	assert_int_equal(ion_heap_get_id(served), ION_HEAP_TYPE_SYSTEM);
	close(fd);
	served = NULL;
	assert_int_equal(ion_ctx_alloc_mask(ctx, mask, 1 << 20, ION_FLAG_CACHED, &fd, &served), 0);
	assert_int_equal(ion_heap_get_id(served), ION_HEAP_TYPE_SYSTEM);
	close(fd);
	ion_alloc_config_free(config);
	while (n_held > 0)
		close(held[--n_held]);
	ion_ctx_unref(ctx);
}

/*
 * Android code closes clients with close() too (AOSP's ion_close() is
 * close()).  When the kernel hands the number out again, ion_open()
 * releases what the stale client held.
 */
static void test_plain_close_then_reopen(void **pstate)
{
	struct state *s = *pstate;
	struct fd_table before;
	ion_user_handle_t h;
	int client, again, cnt;

	assert_int_equal(ion_query_heap_cnt(s->client, &cnt), 0);
	fd_table_read(&before);
	client = ion_open();
	assert_true(client >= 0);
	assert_int_equal(ion_alloc(client, 4096, 0, ION_HEAP_SYSTEM_MASK, 0, &h), 0);
	close(client);
	again = ion_open();
	assert_int_equal(again, client);
	assert_int_equal(ion_share(again, h, &cnt), -EINVAL);
	assert_int_equal(ion_close(again), 0);
	fd_table_assert_same(&before);
}

/* Each thread its own client, the shared context underneath. */
static void *client_thread(void *data)
{
	int *failures = data;

	for (int round = 0; round < 32; round++) {
		ion_user_handle_t h;
		int client = ion_open(), share_fd = -1;

		if (client < 0) {
			(*failures)++;
			continue;
		}
		if (ion_alloc(client, 8192, 0, ION_HEAP_SYSTEM_MASK, 0, &h) < 0 ||
		    ion_share(client, h, &share_fd) < 0 || ion_free(client, h) < 0)
			(*failures)++;
		if (share_fd >= 0)
			close(share_fd);
		if (ion_close(client) < 0)
			(*failures)++;
	}
	return NULL;
}

static void test_threads_open_alloc_close(void **pstate)
{
	pthread_t threads[4];
	int failures[4] = { 0 };

	(void)pstate;
	for (int i = 0; i < 4; i++)
		assert_int_equal(pthread_create(&threads[i], NULL, client_thread, &failures[i]), 0);
	for (int i = 0; i < 4; i++) {
		pthread_join(threads[i], NULL);
		assert_int_equal(failures[i], 0);
	}
}

/* Every heap of the context API, reached from the mask of its id. */
static void test_ctx_mask_reports_heap(void **pstate)
{
	struct ion_ctx *ctx;
	int n, fd;

	(void)pstate;
	assert_int_equal(ion_ctx_new(NULL, &ctx), 0);
	n = ion_ctx_get_heap_count(ctx);
	assert_true(n >= 1);
	for (int i = 0; i < n; i++) {
		const struct ion_heap *h, *served = NULL;
		int id;

		assert_int_equal(ion_ctx_get_heap(ctx, (unsigned int)i, &h), 0);
		id = ion_heap_get_id(h);
		if (ion_heap_get_error(h)) {
			assert_int_equal(id, -1);
			assert_non_null(ion_heap_get_reason(h));
			continue;
		}
		if (id < 0)
			continue;
		assert_int_equal(ion_ctx_alloc_mask(ctx, 1U << id, 4096,
						    ION_FLAG_CACHED, &fd, &served), 0);
		assert_ptr_equal(served, h);
		close(fd);
	}
	assert_int_equal(ion_ctx_get_heap(ctx, (unsigned int)n, &(const struct ion_heap *){ NULL }), -ENOENT);
	ion_ctx_unref(ctx);
}

int main(void)
{
	static const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_open_close, setup, teardown),
		cmocka_unit_test_setup_teardown(test_query_heaps, setup, teardown),
		cmocka_unit_test_setup_teardown(test_map_offset_every_heap, setup, teardown),
		cmocka_unit_test_setup_teardown(test_cma_mask, setup, teardown),
		cmocka_unit_test_setup_teardown(test_alloc_fd_errors, setup, teardown),
		cmocka_unit_test_setup_teardown(test_handles, setup, teardown),
		cmocka_unit_test_setup_teardown(test_handle_errors, setup, teardown),
		cmocka_unit_test_setup_teardown(test_close_releases_handles, setup, teardown),
		cmocka_unit_test_setup_teardown(test_plain_close_then_reopen, setup, teardown),
		cmocka_unit_test_setup_teardown(test_threads_open_alloc_close, setup, teardown),
		cmocka_unit_test_setup_teardown(test_ctx_mask_reports_heap, setup, teardown),
		cmocka_unit_test_setup_teardown(test_import_every_heap, setup, teardown),
		cmocka_unit_test_setup_teardown(test_fallback_when_cma_is_full, setup, teardown),
	};

	return cmocka_run_group_tests_name("compat", tests, NULL, NULL);
}
