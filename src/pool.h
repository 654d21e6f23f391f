/* SPDX-License-Identifier: MIT */
/*
 * Pools: buffers kept ready in user space.  Mutable, each pool with its
 * own lock, outside the (immutable) registry; the context keeps the list
 * of its pools, the pools of heaps that a board file gives a Pool hint,
 * and the one thread that refills them in the background.
 */
#ifndef LIBION_POOL_H
#define LIBION_POOL_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

struct ion_ctx;
struct ion_heap;
struct ion_pool;

/* What a context keeps of its pools (embedded in struct ion_ctx). */
struct ion_pools {
	pthread_mutex_t lock;		/* the list, the heap pools, the thread */
	struct ion_pool *list;		/* every pool of the context */
	/* The heap pools, by heap index * 4 + cache flags: read without the
	 * lock on every allocation, set once each. */
	_Atomic(_Atomic(struct ion_pool *) *) heap_pools;
	unsigned int n_heap_pools;
	atomic_ullong held;		/* bytes all pools hold */
	unsigned long long limit;	/* 0: none */
	/* The background thread: started by the first pool that wants it. */
	bool running;
	bool stop;
	pthread_t thread;
	int wake_fd;			/* an eventfd, or -1 */
	struct ion_pools *next;		/* every context's, for fork() */
};

void ion_pools_init(struct ion_pools *pools);
/* Stops the thread and frees the heap pools (at the context's end). */
void ion_pools_fini(struct ion_pools *pools);

/*
 * The pool of a heap whose board file gives it a Pool hint, for
 * allocations with these cache flags: made (and filled in the background)
 * on first use.  NULL when the heap has no hint, or on ENOMEM.
 */
struct ion_pool *ion_pools_heap_pool(struct ion_ctx *ctx, const struct ion_heap *heap,
				     unsigned int flags);

#endif
