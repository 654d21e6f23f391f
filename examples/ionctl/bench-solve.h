/* SPDX-License-Identifier: MIT */
/* ionctl bench --solve's two halves: bench-solve.c (the fake tree, the
 * solver, allocation for a set) and bench-late.c (late allocation, call
 * by call, plain and pooled), and what they share. */
#ifndef IONCTL_BENCH_SOLVE_H
#define IONCTL_BENCH_SOLVE_H

#include "ionctl.h"

struct alloc_bench {
	const char *heap;		/* by name */
	struct ion_alloc_config *config; /* for the set */
	struct ion_solution *solution;	/* solved once */
	struct ion_device *devices[16];	/* the set, for late buffers */
	unsigned int n_devices;
	double by_name_ns, for_set_ns, solved_ns;
	char names[256];
};


/* Samples per kind: --rounds times this (7 rounds: 224). */
#define LATE_PER_ROUND 32
#define LATE_MAX (63 * LATE_PER_ROUND)
/* The pooled case: the solved heap's Pool hint (POOL_COUNT buffers of
 * 1M), taken POOL_BATCH at a time, which is where the refill thread's
 * low watermark wakes it. */
#define POOL_COUNT 16
#define POOL_BATCH (POOL_COUNT / 2)
/* How long the pool may take to settle before the case gives up. */
#define POOL_SETTLE_NS 10e9

struct late_bench {
	unsigned int n;			/* samples of each kind */
	double late[LATE_MAX];		/* ion_buffer_get_fd(), the first */
	double by_name[LATE_MAX];	/* ion_ctx_alloc(), beside it */
	double pooled[LATE_MAX];	/* the first get_fd, the heap pooled */
	unsigned int n_pooled, hits;
	int pool_error;			/* 0, or why the pooled case failed */
	const char *pool_why;		/* ... in words */
};


/* p (0-100) of n values (sorts them). */
double ionctl_pct(double *v, unsigned int n, unsigned int p);
/* The heap a buffer with no device attached comes from, into a->heap. */
int ionctl_heap_for_none(struct ion_ctx *ctx, struct alloc_bench *a);
/* The first fd of late buffers of 1M, beside ion_ctx_alloc() by name. */
int ionctl_time_late(struct ion_ctx *ctx, struct alloc_bench *a, struct late_bench *l);
/* The same with the solved heap pooled; failures go into l->pool_*. */
void ionctl_time_late_pooled(struct ion_ctx *ctx, struct alloc_bench *a, struct late_bench *l);

#endif
