/* SPDX-License-Identifier: MIT */
/*
 * Pools: buffers kept ready in user space.  Mutable, each pool with its
 * own lock, outside the (immutable) registry; the context keeps the list
 * of its pools, the pools of heaps that a board file gives a Pool hint,
 * and the workers (two a heap) that refill them in the background.
 */
#ifndef LIBION_POOL_H
#define LIBION_POOL_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "fdinfo.h"

struct ion_ctx;
struct ion_heap;
struct ion_pool;
struct ion_registry;
struct ion_solution;

/*
 * What a pool is handed, as Mesa's pb_cache is: the allocate call and
 * the "may this buffer be reused" check.  The pool reaches the allocation
 * path and the kernel's counts through these alone.
 */
struct ion_pool_ops {
	/* len bytes (the pool's size for it, page-rounded) from the
	 * solution's heaps: 0 with *ret_fd and *ret_heap (the heap that gave
	 * it), or a negative errno. */
	int (*alloc)(const struct ion_solution *solution, size_t len, int *ret_fd,
		     const struct ion_heap **ret_heap);
	/* Whether anything will tell when nothing but the pool holds fd's
	 * buffer (fdinfo.h's ion_fdinfo_trackable()). */
	enum ion_fdinfo_track (*trackable)(int fd, atomic_int *maps_known);
	/* The references on fd's file (1: the pool's alone, it may be
	 * reused), as ion_fdinfo_refs() counts them. */
	int (*refs)(int fd, ino_t *ret_ino);
};

struct pool_worker;
struct ion_pool_hint;

/* What a context keeps of its pools (embedded in struct ion_ctx). */
struct ion_pools {
	pthread_mutex_t lock;		/* the list, the heap pools, the workers */
	struct ion_pool *list;		/* every pool of the context, heap pools too */
	atomic_ullong held;		/* bytes all pools hold */
	atomic_ullong limit;		/* 0: none; read under a pool's lock alone */
	/* The refill workers, two a heap (pool-refill.c), each started by
	 * the first pool of its heap that wants one, freed at the end. */
	struct pool_worker *workers;
	int psi_fd;			/* the memory pressure trigger, or -1 */
	/* A worker works on a pinned snapshot of the list, without the
	 * lock; a pool's end waits here until its pins are gone. */
	pthread_cond_t unpinned;
	struct ion_pools *next;		/* every context's, for fork() */
};

void ion_pools_init(struct ion_pools *pools);
/* fork(): every pool's lock taken (called by fork.c's handlers, inside
 * the contexts' fork lock); the child empties every pool. */
void ion_pools_fork_prepare(void);
void ion_pools_fork_parent(void);
void ion_pools_fork_child(void);
/* At the context's end: ion_pools_stop() stops the workers, before the
 * registry (whose table holds the heap pools) goes; ion_pools_fini() then
 * frees what is left. */
void ion_pools_stop(struct ion_pools *pools);
void ion_pools_fini(struct ion_pools *pools);

/*
 * Each heap's mutable side, one table a registry (whose heaps are
 * immutable): its pools by cache flags, made on first use, and what the
 * pools found out about its buffers.  The pool layer makes it at its
 * first use and hangs it on the registry's hook (registry.h's
 * ion_registry_state), which frees it, the heap pools with it, as the
 * registry and its heaps go.
 */
struct ion_heap_pools;
/* reg's table, made now if it is not yet; NULL if out of memory. */
struct ion_heap_pools *ion_heap_pools_of(struct ion_registry *reg);
/* The heap's cell for ion_fdinfo_trackable(), or NULL. */
atomic_int *ion_heap_pools_maps_known(struct ion_heap_pools *table,
				      const struct ion_heap *heap);
/* The heap's pool for these cache flags, if made yet (for tests). */
struct ion_pool *ion_heap_pools_peek(struct ion_heap_pools *table,
				     const struct ion_heap *heap, unsigned int flags);

/*
 * A user's pool (ion_pool_new(), in alloc.c) of solution's buffers: handed
 * ops, the table of solution's registry, and a device's Pool hint (n
 * hints, 0: none); it takes a reference on solution and on ctx.  0 with
 * *ret, or a negative errno.
 */
int ion_pool_create(struct ion_ctx *ctx, const struct ion_pool_ops *ops,
		    struct ion_solution *solution, struct ion_heap_pools *heaps,
		    const struct ion_pool_hint *hints, size_t n, struct ion_pool **ret);

/* What the allocation path hands a heap pool at its first use: the
 * pool's ops, and how to make a solution for the heap alone (one that
 * holds no reference to ctx or reg, which own the pool). */
struct ion_heap_pool_source {
	const struct ion_pool_ops *ops;
	int (*solve)(struct ion_ctx *ctx, struct ion_registry *reg,
		     const struct ion_heap *heap, unsigned int flags,
		     struct ion_solution **ret);
};

/*
 * The allocation path's one hook: len bytes (page-rounded) with these
 * cache flags from the pool of heap (reg's) when its board file gives it
 * a Pool hint that names exactly len's size (a pool's size classes must
 * not change what an allocation by name gives).  The pool is made (and
 * filled in the background) on the heap's first use.  0 with *ret_fd; 1
 * when no heap pool serves len (the caller asks the kernel); or a
 * negative errno.
 */
int ion_heap_pool_alloc(struct ion_ctx *ctx, struct ion_registry *reg,
			const struct ion_heap *heap, unsigned int flags, size_t len,
			const struct ion_heap_pool_source *source, int *ret_fd);

#endif
