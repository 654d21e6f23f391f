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
struct ion_registry;

/* What a context keeps of its pools (embedded in struct ion_ctx). */
struct ion_pools {
	pthread_mutex_t lock;		/* the list, the heap pools, the thread */
	struct ion_pool *list;		/* every pool of the context, heap pools too */
	atomic_ullong held;		/* bytes all pools hold */
	atomic_ullong limit;		/* 0: none; read under a pool's lock alone */
	/* The background thread: started by the first pool that wants it.
	 * running is set under the lock, read under a pool's lock alone. */
	atomic_bool running;
	bool stop;
	pthread_t thread;
	atomic_int wake_fd;		/* an eventfd, or -1 */
	int psi_fd;			/* the thread's memory pressure trigger, or -1 */
	/* The thread works on a pinned snapshot of the list, without the
	 * lock; a pool's end waits here until its pins are gone.  The
	 * snapshot's array is the thread's (the context's, so that a forked
	 * child, which has no thread, still reaches it). */
	pthread_cond_t unpinned;
	struct ion_pool **snap;
	size_t snap_cap;
	struct ion_pools *next;		/* every context's, for fork() */
};

void ion_pools_init(struct ion_pools *pools);
/* fork(): every pool's lock taken (called by fork.c's handlers, inside
 * the contexts' fork lock); the child empties every pool. */
void ion_pools_fork_prepare(void);
void ion_pools_fork_parent(void);
void ion_pools_fork_child(void);
/* At the context's end: ion_pools_stop() stops the thread, before the
 * registry (whose heaps own the heap pools) goes; ion_pools_fini() then
 * frees what is left. */
void ion_pools_stop(struct ion_pools *pools);
void ion_pools_fini(struct ion_pools *pools);

/*
 * The pool of a heap of reg whose board file gives it a Pool hint, for
 * allocations of len bytes with these cache flags: made (and filled in
 * the background) on the heap's first use, and freed with the heap
 * (ion_pools_heap_pool_free()).  NULL when no hint of the heap names
 * exactly len's size (a pool's size classes must not change what an
 * allocation by name gives), or on ENOMEM.
 */
struct ion_pool *ion_pools_heap_pool(struct ion_ctx *ctx, struct ion_registry *reg,
				     const struct ion_heap *heap, unsigned int flags,
				     size_t len);
void ion_pools_heap_pool_free(struct ion_pool *pool);

#endif
