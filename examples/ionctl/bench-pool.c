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
 * each timed call by call, p50 and p99.  Then a stream: 60 allocations
 * of 8 MiB a second for 10 s from a pool with background refill, holding
 * 4 at a time, p50 and p99 of ion_pool_get().  On a kernel with ION, its
 * own page pool too: raw ION_IOC_ALLOC on ion_system_heap.
 *
 * The benchmark must never starve itself: every pool of the context (the
 * board's heap pools too) is trimmed between rows, so that one row's
 * buffers are not what makes the next row's heap run out; and a heap that
 * really is exhausted (ENOMEM) is a row that says so, not a failed run.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include "bench-raw.h"
#include "ionctl.h"

struct series {
	double *ns;
	unsigned int n, cap;
};

static int add(struct series *s, double ns)
{
	if (s->n == s->cap) {
		unsigned int cap = s->cap ? 2 * s->cap : 256;
		double *grown = realloc(s->ns, cap * sizeof(*grown));

		if (!grown)
			return -ENOMEM;
		s->ns = grown;
		s->cap = cap;
	}
	s->ns[s->n++] = ns;
	return 0;
}

static double pct(struct series *s, unsigned int p)
{
	if (!s->n)
		return 0;
	ionctl_median(s->ns, s->n); /* sorts */
	return s->ns[(size_t)(s->n - 1) * p / 100];
}

static void series_free(struct series *s)
{
	free(s->ns);
	memset(s, 0, sizeof(*s));
}

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
	double raw[2], hit[2], hit_zero[2], touch_raw[2], touch_pool[2];
	int error;
};

static int put(struct ion_pool *pool, int fd)
{
	/* The benchmark knows nothing else holds it: vouch (memfd). */
	return ion_pool_put(pool, fd, ION_POOL_VOUCH);
}

static int measure(struct ion_solution *sol, struct raw_alloc *raw, size_t size,
		   unsigned int n, struct row *row)
{
	struct series s[5] = { 0 };
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
		if (r < 0 || (r = add(&s[0], t1 - t0)) < 0)
			break;
		/* hit, zeroing off */
		ion_pool_set_zeroing(pool, 0);
		t0 = ionctl_now_ns();
		r = ion_pool_get(pool, size, &fd);
		t1 = ionctl_now_ns();
		if (r < 0 || (r = add(&s[1], t1 - t0)) < 0 || (r = put(pool, fd)) < 0)
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
		if (r < 0 || (r = add(&s[2], t1 - t0)) < 0 || (r = put(pool, fd)) < 0)
			break;
		/* allocate, map and touch every page: raw, then pooled */
		t0 = ionctl_now_ns();
		r = ion_solution_alloc(sol, &fd, NULL);
		if (r == 0) {
			r = touch(fd, size);
			close(fd);
		}
		t1 = ionctl_now_ns();
		if (r < 0 || (r = add(&s[3], t1 - t0)) < 0)
			break;
		t0 = ionctl_now_ns();
		r = ion_pool_get(pool, size, &fd);
		if (r == 0) {
			r = touch(fd, size);
			if (put(pool, fd) < 0 && r == 0)
				r = -EIO;
		}
		t1 = ionctl_now_ns();
		if (r < 0 || (r = add(&s[4], t1 - t0)) < 0)
			break;
	}
	if (r == 0) {
		double *cols[] = { row->raw, row->hit, row->hit_zero, row->touch_raw, row->touch_pool };

		for (int k = 0; k < 5; k++) {
			cols[k][0] = pct(&s[k], 50);
			cols[k][1] = pct(&s[k], 99);
		}
	}
	for (int k = 0; k < 5; k++)
		series_free(&s[k]);
	ion_pool_unref(pool);
	row->error = r;
	return r;
}

/*
 * The stream: 60 x 8 MiB a second for seconds s, four held at a time,
 * from a pool with background refill, or (raw) by the raw call paced the
 * same way, which wakes from each sleep as cold as the pool does.  The
 * pool's hits and misses in *stats (raw: left alone).
 */
static int stream(struct ion_solution *sol, struct raw_alloc *raw, unsigned int seconds,
		  double *p50, double *p99, unsigned long long stats[2])
{
	const double period = 1e9 / 60;
	struct series s = { 0 };
	struct ion_pool *pool = NULL;
	int held[4] = { -1, -1, -1, -1 };
	double next = ionctl_now_ns();
	int r = raw ? 0 : ion_pool_new(sol, &pool);

	if (r == 0 && !raw)
		r = ion_pool_set_hints(pool, "2x8M"); /* ready beside the 4 held */
	if (r == 0 && !raw)
		r = ion_pool_prefill(pool);
	if (r == 0 && !raw)
		r = ion_pool_set_background(pool, 1);
	for (unsigned int i = 0; r == 0 && i < seconds * 60; i++) {
		struct timespec ts;
		double t0, t1;
		int fd;

		next += period;
		ts.tv_sec = (time_t)(next / 1e9);
		ts.tv_nsec = (long)(next - (double)ts.tv_sec * 1e9);
		clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL);
		t0 = ionctl_now_ns();
		if (raw) {
			r = raw->alloc_close(raw, 8u << 20);
			fd = -1;
		} else {
			r = ion_pool_get(pool, 8u << 20, &fd);
		}
		t1 = ionctl_now_ns();
		if (r < 0 || (r = add(&s, t1 - t0)) < 0)
			break;
		if (raw)
			continue;
		if (held[i % 4] >= 0)
			r = put(pool, held[i % 4]);
		held[i % 4] = fd;
	}
	for (int k = 0; k < 4; k++)
		if (held[k] >= 0)
			put(pool, held[k]);
	if (r == 0) {
		*p50 = pct(&s, 50);
		*p99 = pct(&s, 99);
	}
	if (r == 0 && pool) {
		stats[0] = ion_pool_get_stat(pool, ION_POOL_STAT_HITS);
		stats[1] = ion_pool_get_stat(pool, ION_POOL_STAT_MISSES);
	}
	series_free(&s);
	ion_pool_unref(pool);
	return r;
}

static int solve_heap(struct ion_ctx *ctx, const struct ion_heap *h, size_t size,
		      struct ion_solution **ret)
{
	struct ion_alloc_config *config;
	int r = ion_alloc_config_new(&config);

	if (r == 0)
		r = ion_alloc_config_set_size(config, size);
	if (r == 0)
		r = ion_alloc_config_set_heap(config, ion_heap_get_name(h));
	if (r == 0)
		r = ion_ctx_solve(ctx, config, ret);
	ion_alloc_config_free(config);
	return r;
}

/* The stream's heap: the one named, else the first that is no memfd
 * (the kernel's), else memfd. */
static const struct ion_heap *stream_heap(struct ion_ctx *ctx, const char *only)
{
	const struct ion_heap *pick = NULL;
	int n = ion_ctx_get_heap_count(ctx);

	for (int i = 0; i < n; i++) {
		const struct ion_heap *h;

		if (ion_ctx_get_heap(ctx, (unsigned int)i, &h) < 0 || ion_heap_get_error(h))
			continue;
		if (only ? strcmp(only, ion_heap_get_name(h)) == 0
			 : strcmp(ion_heap_get_backend(h), "memfd") != 0)
			return h;
		if (!only && !pick)
			pick = h;
	}
	return only ? NULL : pick;
}

/* The raw call's median over 31 calls. */
static double raw_p50(const struct ion_heap *h, size_t size)
{
	struct series s = { 0 };
	struct raw_alloc raw;
	double p50;

	if (raw_alloc_init(&raw, h, 1) < 0 && raw_alloc_init(&raw, h, 0) < 0)
		return 0;
	for (unsigned int k = 0; k < 31; k++) {
		double t0 = ionctl_now_ns();

		if (raw.alloc_close(&raw, size) == 0)
			add(&s, ionctl_now_ns() - t0);
	}
	raw_alloc_fini(&raw);
	p50 = pct(&s, 50);
	series_free(&s);
	return p50;
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
			       "\"raw_over_hit\": %.1f}",
			       row->raw[0], row->raw[1], row->hit[0], row->hit[1], row->hit_zero[0],
			       row->hit_zero[1], row->touch_raw[0], row->touch_raw[1],
			       row->touch_pool[0], row->touch_pool[1], row->raw[0] / row->hit[0]);
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
	printf("%-16s %6zuK %10.0f %9.0f %8.0f %8.0f %10.0f %11.0f %11.0f %7.1f\n",
	       row->heap, row->size >> 10, row->raw[0], row->raw[1], row->hit[0], row->hit[1],
	       row->hit_zero[0], row->touch_raw[0], row->touch_pool[0], row->raw[0] / row->hit[0]);
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
		printf("%-16s %7s %10s %9s %8s %8s %10s %11s %11s %7s\n", "HEAP", "SIZE",
		       "raw p50", "raw p99", "hit p50", "hit p99", "recycle50", "touch raw", "touch pool",
		       "raw/hit");
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
			row.error = solve_heap(ctx, h, sizes[k], &sol);
			if (row.error == 0)
				measure(sol, &raw, sizes[k], rounds, &row);
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
						row.error = add(&s, ionctl_now_ns() - t0);
				}
				if (json && row.error == 0) {
					printf("%s\n  {\"heap\": \"ion_system_heap\", \"size\": %zu, "
					       "\"raw_call\": \"ion-ioctl\", \"raw_p50_ns\": %.0f, "
					       "\"raw_p99_ns\": %.0f}", first ? "" : ",", sizes[k],
					       pct(&s, 50), pct(&s, 99));
					first = 0;
				} else if (row.error == 0)
					printf("%-16s %6zuK %10.0f %9.0f   (ION's kernel pool, raw ION_IOC_ALLOC)\n",
					       "ion_system_heap", sizes[k] >> 10, pct(&s, 50), pct(&s, 99));
				series_free(&s);
			}
			raw_alloc_fini(&raw);
		}
	}
	if (stream_s) {
		double p50 = 0, p99 = 0, raw50 = 0, paced50 = 0, paced99 = 0;
		unsigned long long stats[2] = { 0, 0 };
		const struct ion_heap *h = stream_heap(ctx, only);
		struct ion_solution *sol = NULL;
		struct raw_alloc raw;
		int r;

		ion_ctx_trim_pools(ctx);
		r = h ? solve_heap(ctx, h, 8u << 20, &sol) : -ENODEV;

		if (r == 0)
			r = stream(sol, NULL, stream_s, &p50, &p99, stats);
		if (r == 0 && (raw_alloc_init(&raw, h, 1) == 0 || raw_alloc_init(&raw, h, 0) == 0)) {
			raw50 = raw_p50(h, 8u << 20);
			r = stream(sol, &raw, stream_s, &paced50, &paced99, NULL);
			raw_alloc_fini(&raw);
		}
		ion_solution_unref(sol);
		if (r < 0 && !exhausted(r))
			failed++;
		if (json && r < 0)
			printf("],\n \"stream\": {\"heap\": \"%s\", \"size\": %u, \"error\": \"%s\"}}\n",
			       h ? ion_heap_get_name(h) : "", 8u << 20, strerror(-r));
		else if (json)
			printf("],\n \"stream\": {\"heap\": \"%s\", \"size\": %u, \"stream_p50_ns\": %.0f, "
			       "\"stream_p99_ns\": %.0f, \"stream_hits\": %llu, \"stream_misses\": %llu, "
			       "\"raw_p50_ns\": %.0f, \"raw_paced_p50_ns\": %.0f, \"raw_paced_p99_ns\": %.0f}}\n",
			       h ? ion_heap_get_name(h) : "", 8u << 20, p50, p99, stats[0], stats[1], raw50,
			       paced50, paced99);
		else if (r == 0)
			printf("stream, %s, 60 x 8M/s for %u s, 4 held: get p50 %.0f ns, p99 %.0f ns "
			       "(p99/p50 %.2f), %llu hits, %llu misses; raw call p50 %.0f ns, "
			       "paced alike p50 %.0f p99 %.0f ns\n",
			       ion_heap_get_name(h), stream_s, p50, p99, p99 / p50, stats[0], stats[1],
			       raw50, paced50, paced99);
		else
			printf("stream: failed: %s\n", strerror(-r));
	} else if (json) {
		printf("]}\n");
	}
	ion_ctx_unref(ctx);
	if (measured == 0 && failed == 0)
		return ionctl_fail("bench", 0, "--pool: nothing measured (no available heap%s%s "
				   "with a raw call to compare with)", only ? " " : "", only ? only : "");
	if (failed)
		return ionctl_fail("bench", 0, "--pool: %u measurement%s failed", failed,
				   failed == 1 ? "" : "s");
	return 0;
}
