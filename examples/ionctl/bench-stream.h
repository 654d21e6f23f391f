/* SPDX-License-Identifier: MIT */
/*
 * ionctl bench --pool's call-by-call series, and its streams: what a
 * camera or a compositor does, alone and four at once.
 */
#ifndef IONCTL_BENCH_STREAM_H
#define IONCTL_BENCH_STREAM_H

#include <stdbool.h>
#include <stddef.h>

#include <ion/ion.h>

/* Timings, ns, one a call. */
struct series {
	double *ns;
	unsigned int n, cap;
};

int series_add(struct series *s, double ns);
/* The p-th percentile (sorts the series); 0 for an empty one. */
double series_pct(struct series *s, unsigned int p);
void series_free(struct series *s);

/* A solution for size bytes from heap h alone. */
int bench_solve_heap(struct ion_ctx *ctx, const struct ion_heap *h, size_t size,
		     struct ion_solution **ret);

/*
 * The streams, printed as "streams" (--json: after the rows, the object
 * left open) or as lines: on the heap named (else the first kernel heap,
 * else memfd) 8 MiB, an NV12 1080p frame and 4 KiB, 60 and 240 a second,
 * each for seconds s, then four at once on two heaps (the first
 * contiguous kernel heap and the first other, whatever only names;
 * memfd where there are none); each beside the raw call and the floor
 * of a hit paced the same way.  Adds each stream that failed (not for an
 * exhausted heap) to *failed.
 */
void bench_streams(struct ion_ctx *ctx, const char *only, unsigned int seconds, int json,
		   unsigned int *failed);

#endif
