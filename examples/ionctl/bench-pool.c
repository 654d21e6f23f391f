// SPDX-License-Identifier: MIT
/*
 * ionctl bench --pool: what a pool buys, per heap and size, in one run:
 *
 *  raw       the raw kernel call (allocate + close), as ionctl bench
 *  hit       ion_pool_get() served from the pool (zeroing off)
 *  hit+zero  a recycle with zeroing: ion_pool_put() (which zeroes and
 *            ends CPU access) and the ion_pool_get() that follows
 *  touch     allocate, map, write every page, unmap, close: raw beside
 *            the pool (get ... put)
 *
 *  floor     what a hit cannot do without, timed beside it: an uncontended
 *            lock and an F_DUPFD_CLOEXEC of the buffer, after a raw call
 *            as the hit is (under emulation a call after the kernel's
 *            work runs cold, and one right after the hit warm)
 *
 * each timed call by call, p50 and p99.  Then the streams (bench-stream.c).
 * On a kernel with ION, its own page pool too: raw ION_IOC_ALLOC on
 * ion_system_heap.
 *
 * The benchmark must never starve itself: every pool of the context (the
 * board's heap pools too) is trimmed between rows, so that one row's
 * buffers are not what makes the next row's heap run out; and a heap that
 * really is exhausted (ENOMEM) is a row that says so, not a failed run.
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include "bench-raw.h"
#include "bench-stream.h"
#include "ionctl.h"

/* Writes one byte per page: what a producer's first touch costs. */
static int touch(int fd, size_t len)
{
	unsigned char *p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	size_t page = (size_t)sysconf(_SC_PAGESIZE);

	if (p == MAP_FAILED)
		return -errno;
	for (size_t i = 0; i < len; i += page)
		p[i] = (unsigned char)i;
	munmap(p, len);
	return 0;
}

struct row {
	const char *heap;
	size_t size;
	double raw[2], hit[2], hit_zero[2], touch_raw[2], touch_pool[2], floor[2];
	int error;
};

/*
 * The physical floor of a hit, timed beside it: what a get cannot do
 * without, an uncontended lock and an F_DUPFD_CLOEXEC of the buffer (the
 * close, like the put after a hit, is not timed).
 */
static int floor_once(int fd, struct series *s)
{
	static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
	double t0 = ionctl_now_ns(), t1;
	int dup_fd;

	pthread_mutex_lock(&lock);
	dup_fd = fcntl(fd, F_DUPFD_CLOEXEC, 3);
	pthread_mutex_unlock(&lock);
	t1 = ionctl_now_ns();
	if (dup_fd < 0)
		return -errno;
	close(dup_fd);
	return series_add(s, t1 - t0);
}

static int put(struct ion_pool *pool, int fd)
{
	/* The benchmark knows nothing else holds it: vouch (memfd). */
	return ion_pool_put(pool, fd, ION_POOL_VOUCH);
}

static int measure(struct ion_solution *sol, struct raw_alloc *raw, size_t size,
		   unsigned int n, struct row *row)
{
	struct series s[6] = { 0 };
	struct ion_pool *pool = NULL;
	char hint[32];
	int r = ion_pool_new(sol, &pool), fd;

	snprintf(hint, sizeof(hint), "2x%zu", size);
	if (r == 0)
		r = ion_pool_set_hints(pool, hint);
	if (r == 0)
		r = ion_pool_prefill(pool);
	for (unsigned int i = 0; r == 0 && i < n; i++) {
		double t0, t1;

		/* raw: the kernel call and close */
		t0 = ionctl_now_ns();
		r = raw->alloc_close(raw, size);
		t1 = ionctl_now_ns();
		if (r < 0 || (r = series_add(&s[0], t1 - t0)) < 0)
			break;
		/* hit, zeroing off */
		ion_pool_set_zeroing(pool, 0);
		t0 = ionctl_now_ns();
		r = ion_pool_get(pool, size, &fd);
		t1 = ionctl_now_ns();
		if (r < 0 || (r = series_add(&s[1], t1 - t0)) < 0)
			break;
		/* the floor, as cold as the hit: after a raw call too */
		if ((r = raw->alloc_close(raw, size)) < 0 || (r = floor_once(fd, &s[5])) < 0 ||
		    (r = put(pool, fd)) < 0)
			break;
		/* a recycle with zeroing: put + get */
		ion_pool_set_zeroing(pool, 1);
		r = ion_pool_get(pool, size, &fd);
		if (r < 0)
			break;
		t0 = ionctl_now_ns();
		r = put(pool, fd);
		if (r == 0)
			r = ion_pool_get(pool, size, &fd);
		t1 = ionctl_now_ns();
		if (r < 0 || (r = series_add(&s[2], t1 - t0)) < 0 || (r = put(pool, fd)) < 0)
			break;
		/* allocate, map and touch every page: raw, then pooled */
		t0 = ionctl_now_ns();
		r = ion_solution_alloc(sol, &fd, NULL);
		if (r == 0) {
			r = touch(fd, size);
			close(fd);
		}
		t1 = ionctl_now_ns();
		if (r < 0 || (r = series_add(&s[3], t1 - t0)) < 0)
			break;
		t0 = ionctl_now_ns();
		r = ion_pool_get(pool, size, &fd);
		if (r == 0) {
			r = touch(fd, size);
			if (put(pool, fd) < 0 && r == 0)
				r = -EIO;
		}
		t1 = ionctl_now_ns();
		if (r < 0 || (r = series_add(&s[4], t1 - t0)) < 0)
			break;
	}
	if (r == 0) {
		double *cols[] = { row->raw, row->hit, row->hit_zero, row->touch_raw, row->touch_pool,
				   row->floor };

		for (int k = 0; k < 6; k++) {
			cols[k][0] = series_pct(&s[k], 50);
			cols[k][1] = series_pct(&s[k], 99);
		}
	}
	for (int k = 0; k < 6; k++)
		series_free(&s[k]);
	ion_pool_unref(pool);
	row->error = r;
	return r;
}

/* A heap with no memory left for the size: a finding, not a failure. */
static bool exhausted(int error)
{
	return error == -ENOMEM;
}

static void print_row(const struct row *row, const char *raw_name, int json, int *first)
{
	if (json) {
		printf("%s\n  {\"heap\": ", *first ? "" : ",");
		ionctl_json_string(row->heap);
		printf(", \"size\": %zu, \"raw_call\": ", row->size);
		ionctl_json_string(raw_name);
		if (row->error) {
			printf(", \"error\": ");
			ionctl_json_string(strerror(-row->error));
			printf(", \"exhausted\": %s}", exhausted(row->error) ? "true" : "false");
		} else {
			printf(", \"raw_p50_ns\": %.0f, \"raw_p99_ns\": %.0f, \"hit_p50_ns\": %.0f, "
			       "\"hit_p99_ns\": %.0f, \"hit_zero_p50_ns\": %.0f, \"hit_zero_p99_ns\": %.0f, "
			       "\"touch_raw_p50_ns\": %.0f, \"touch_raw_p99_ns\": %.0f, "
			       "\"touch_pool_p50_ns\": %.0f, \"touch_pool_p99_ns\": %.0f, "
			       "\"raw_over_hit\": %.1f, \"floor_p50_ns\": %.0f, \"floor_p99_ns\": %.0f, "
			       "\"hit_over_floor\": %.2f}",
			       row->raw[0], row->raw[1], row->hit[0], row->hit[1], row->hit_zero[0],
			       row->hit_zero[1], row->touch_raw[0], row->touch_raw[1],
			       row->touch_pool[0], row->touch_pool[1], row->raw[0] / row->hit[0],
			       row->floor[0], row->floor[1], row->hit[0] / row->floor[0]);
		}
		*first = 0;
		return;
	}
	if (row->error) {
		printf("%-16s %6zuK  %s: %s\n", row->heap, row->size >> 10,
		       exhausted(row->error) ? "exhausted" : "failed",
		       strerror(-row->error));
		return;
	}
	printf("%-16s %6zuK %10.0f %9.0f %8.0f %8.0f %10.0f %11.0f %11.0f %7.1f %7.0f %6.2f\n",
	       row->heap, row->size >> 10, row->raw[0], row->raw[1], row->hit[0], row->hit[1],
	       row->hit_zero[0], row->touch_raw[0], row->touch_pool[0], row->raw[0] / row->hit[0],
	       row->floor[0], row->hit[0] / row->floor[0]);
}

int ionctl_bench_pool(const char *only, const size_t *sizes, size_t n_sizes,
		      unsigned int rounds, unsigned int stream_s, int json)
{
	struct ion_ctx *ctx = ionctl_ctx_new("bench");
	unsigned int measured = 0, failed = 0;
	int n, first = 1;

	if (!ctx)
		return IONCTL_NO;
	if (json) {
		ionctl_json_begin("bench");
		printf(", \"mode\": \"pool\", \"rows\": [");
	}
	else
		printf("%-16s %7s %10s %9s %8s %8s %10s %11s %11s %7s %7s %6s\n", "HEAP", "SIZE",
		       "raw p50", "raw p99", "hit p50", "hit p99", "recycle50", "touch raw", "touch pool",
		       "raw/hit", "floor", "hit/fl");
	n = ion_ctx_get_heap_count(ctx);
	for (int i = 0; i < n; i++) {
		const struct ion_heap *h;
		struct raw_alloc raw;

		if (ion_ctx_get_heap(ctx, (unsigned int)i, &h) < 0 || ion_heap_get_error(h) ||
		    (only && strcmp(only, ion_heap_get_name(h))))
			continue;
		/* Beside libion's own sequence (memfd: sealed), as ionctl bench. */
		if (raw_alloc_init(&raw, h, 1) < 0 && raw_alloc_init(&raw, h, 0) < 0)
			continue;
		for (size_t k = 0; k < n_sizes; k++) {
			struct ion_solution *sol = NULL;
			struct row row = { .heap = ion_heap_get_name(h), .size = sizes[k] };

			/* Nothing of the last row's stays held. */
			ion_ctx_trim_pools(ctx);
			ionctl_progress("bench", "--pool, %s, %zu bytes...", row.heap, sizes[k]);
			row.error = bench_solve_heap(ctx, h, sizes[k], &sol);
			if (row.error == 0)
				measure(sol, &raw, sizes[k], rounds, &row);
			ionctl_progress_done();
			if (row.error && !exhausted(row.error))
				failed++;
			else
				measured++;
			print_row(&row, raw.name, json, &first);
			fflush(stdout);
			ion_solution_unref(sol);
		}
		raw_alloc_fini(&raw);
	}
	/* The kernel's own pool: ION's system heap, where there is one. */
	{
		struct raw_alloc raw;

		if (raw_alloc_init_ion("ion_system_heap", &raw) == 0) {
			for (size_t k = 0; k < n_sizes; k++) {
				struct series s = { 0 };
				struct row row = { .heap = "ion_system_heap", .size = sizes[k] };

				for (unsigned int i = 0; i < rounds && row.error == 0; i++) {
					double t0 = ionctl_now_ns();

					row.error = raw.alloc_close(&raw, sizes[k]);
					if (row.error == 0)
						row.error = series_add(&s, ionctl_now_ns() - t0);
				}
				if (json && row.error == 0) {
					printf("%s\n  {\"heap\": \"ion_system_heap\", \"size\": %zu, "
					       "\"raw_call\": \"ion-ioctl\", \"raw_p50_ns\": %.0f, "
					       "\"raw_p99_ns\": %.0f}", first ? "" : ",", sizes[k],
					       series_pct(&s, 50), series_pct(&s, 99));
					first = 0;
				} else if (row.error == 0)
					printf("%-16s %6zuK %10.0f %9.0f   (ION's kernel pool, raw ION_IOC_ALLOC)\n",
					       "ion_system_heap", sizes[k] >> 10, series_pct(&s, 50), series_pct(&s, 99));
				series_free(&s);
			}
			raw_alloc_fini(&raw);
		}
	}
	if (json)
		printf("]");
	if (stream_s)
		bench_streams(ctx, only, stream_s, json, &failed);
	if (json)
		printf("}\n");
	ion_ctx_unref(ctx);
	if (measured == 0 && failed == 0)
		return ionctl_fail("bench", 0, "--pool: nothing measured (no available heap%s%s "
				   "with a raw call to compare with)", only ? " " : "", only ? only : "");
	if (failed)
		return ionctl_fail("bench", 0, "--pool: %u measurement%s failed", failed,
				   failed == 1 ? "" : "s");
	return 0;
}
