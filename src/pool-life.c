// SPDX-License-Identifier: MIT
/*
 * A pool's life: made (for a user, ion_pool_create(), which alloc.c's
 * ion_pool_new() calls; for a heap, pool-heap.c), listed in its context,
 * referenced, and freed with its buffers once its last reference goes
 * and the refill workers have let go of it; and its buffers' end:
 * detached, released (without the lock, listed for fork()), dropped.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include <ion/ion.h>

#include "pool-internal.h"
#include "registry.h"

/* ---- a buffer's end ---- */

/* Called with the pool's lock held: takes buffer i off the pool, into
 * *out, whose fd and mapping the caller releases (pool_release()). */
void pool_detach(struct ion_pool *pool, size_t i, bool trimmed, struct pool_buf *out)
{
	struct pool_buf *b = &pool->bufs[i];

	if (b->slot >= 0)
		(void)pool_unslot(pool, i); /* taken meanwhile: out, its spare the caller's */
	if (b->state != BUF_OUT)
		pool_account(pool, -(long long)b->size);
	if (trimmed)
		pool->stats[ION_POOL_STAT_TRIMS]++;
	if (b->fd < 0)
		pool->n_unanchored--;
	*out = *b;
	if (b->duping) {
		/* The worker is dup'ing its anchor: closed, the number could
		 * be another file's by the time it does, which it would dup
		 * and close (a close drops the program's record locks on that
		 * file).  The worker closes it after its dups. */
		pool->dup_orphans[pool->n_dup_orphans++] = b->fd;
		out->fd = -1;
	}
	pool->bufs[i] = pool->bufs[--pool->n_bufs];
}

/* A detached buffer's mapping and anchor, released: the kernel frees
 * the memory here if nothing else holds it, which takes milliseconds
 * for megabytes, so the worker does it without the lock. */
void pool_release(struct pool_buf *b)
{
	if (b->map)
		munmap(b->map, b->size);
	if (b->fd >= 0)
		close(b->fd);
	if (b->spare >= 0)
		close(b->spare);
}

void pool_detach_to_release(struct ion_pool *pool, size_t i, bool trimmed, struct pool_buf *out,
			    struct pool_releasing *r)
{
	pool_detach(pool, i, trimmed, out);
	*r = (struct pool_releasing){ out->fd, out->spare, pool->releasing };
	pool->releasing = r;
}

void pool_release_unlocked(struct ion_pool *pool, struct pool_buf *b, struct pool_releasing *r)
{
	if (b->map)
		munmap(b->map, b->size); /* MADV_DONTFORK: no child has it */
	b->map = NULL;
	pthread_mutex_lock(&pool->dup_lock);
	pool_release(b);
	pthread_mutex_lock(pool->lock);
	for (struct pool_releasing **p = &pool->releasing; *p; p = &(*p)->next)
		if (*p == r) {
			*p = r->next;
			break;
		}
	pthread_mutex_unlock(pool->lock);
	pthread_mutex_unlock(&pool->dup_lock);
}

/* Called with the pool's lock held: releases buffer i. */
void pool_drop(struct ion_pool *pool, size_t i, bool trimmed)
{
	struct pool_buf b;

	pool_detach(pool, i, trimmed, &b);
	pool_release(&b);
}

/* ---- a pool's ---- */

static void unlink_pool(struct ion_pool *pool)
{
	struct ion_pools *all = ion_ctx_pools(pool->ctx);

	pthread_mutex_lock(&all->lock);
	for (struct ion_pool **p = &all->list; *p; p = &(*p)->next)
		if (*p == pool) {
			*p = pool->next;
			break;
		}
	/* Off the list, but the refill thread may still work on it. */
	while (pool->pins)
		pthread_cond_wait(&all->unpinned, &all->lock);
	pthread_mutex_unlock(&all->lock);
}

void pool_free(struct ion_pool *pool)
{
	const unsigned long long *st = pool->stats;

	unlink_pool(pool);
	/* Takes from the slots settled, so that they are counted; logged
	 * without the lock (a log handler may call into the library). */
	pool_lock(pool);
	pthread_mutex_unlock(pool->lock);
	ion_dbg(pool->ctx, "%spool done: %llu hits, %llu misses, %llu refills, %llu reclaims, %llu trims, %llu bytes at most; "
		"%llu zeroings (%llu by a get), %llu us on average, %llu us at most; %llu wake-ups by a get, %llu by a put; %llu hits from a slot; "
		"%llu gets waited for the lock, %llu us at most, %llu allocated past it; "
		"a MiB allocated in %llu us, zeroed in %llu (moving averages; 0: not measured)",
		pool->heap_pool ? "heap " : "", st[ION_POOL_STAT_HITS], st[ION_POOL_STAT_MISSES],
		st[ION_POOL_STAT_REFILLS], st[ION_POOL_STAT_RECLAIMS], st[ION_POOL_STAT_TRIMS],
		st[ION_POOL_STAT_HIGH_WATER], pool->scrubs, pool->get_scrubs,
		pool->scrubs ? pool->scrub_ns / pool->scrubs / 1000 : 0, pool->scrub_ns_max / 1000,
		pool->get_wakes, pool->put_wakes, pool->slot_hits,
		pool->lock_waits, pool->lock_wait_max_ns / 1000, pool->past_lock,
		(unsigned long long)pool->alloc_ns_mib / 1000, (unsigned long long)pool->scrub_ns_mib / 1000);
	pool_lock(pool);
	while (pool->n_bufs)
		pool_drop(pool, pool->n_bufs - 1, false);
	pthread_mutex_unlock(pool->lock);
	free(pool->bufs);
	free(pool->hints);
	pthread_mutex_destroy(pool->lock);
	pthread_mutex_destroy(&pool->dup_lock);
	ion_solution_unref(pool->solution);
	if (!pool->heap_pool)
		ion_ctx_unref(pool->ctx);
	free(pool);
}

int pool_create(struct ion_ctx *ctx, const struct ion_pool_ops *ops,
		struct ion_solution *solution, struct ion_heap_pools *heaps,
		bool heap_pool, bool background, struct ion_pool **ret)
{
	struct ion_pools *all = ion_ctx_pools(ctx);
	/* Its size is a multiple of its alignment (a cache line). */
	struct ion_pool *pool = aligned_alloc(_Alignof(struct ion_pool), sizeof(*pool));
	const struct ion_heap *heap;

	if (!pool)
		return -ENOMEM;
	memset(pool, 0, sizeof(*pool));
	atomic_init(&pool->refcount, 1);
	atomic_init(&pool->worker, NULL);
	atomic_init(&pool->adopt, NULL);
	atomic_init(&pool->lock_wait_ns, 0);
	atomic_init(&pool->lock_waiters, 0);
	atomic_init(&pool->map_told, false);
	pool->lock = &pool->lock_storage;
	pthread_mutex_init(pool->lock, NULL);
	pthread_mutex_init(&pool->dup_lock, NULL);
	pool->ctx = heap_pool ? ctx : ion_ctx_ref(ctx);
	pool->heap_pool = heap_pool;
	pool->page = ion_page_size();
	pool->ops = ops;
	pool->solution = ion_solution_ref(solution);
	pool->heaps = heaps;
	pool->zero = true;
	heap = ion_solution_get_heap(solution, 0);
	pool->alloc_slow = heap && (heap->props & ION_HEAP_PROP_CONTIGUOUS);
	/* Set before the pool is listed: the thread reads it from then on. */
	pool->background = background;
	pthread_mutex_lock(&all->lock);
	pool->next = all->list;
	all->list = pool;
	pthread_mutex_unlock(&all->lock);
	*ret = pool;
	return 0;
}

int ion_pool_create(struct ion_ctx *ctx, const struct ion_pool_ops *ops,
		    struct ion_solution *solution, struct ion_heap_pools *heaps,
		    const struct ion_pool_hint *hints, size_t n, struct ion_pool **ret)
{
	struct ion_pool *pool;
	int r = pool_create(ctx, ops, solution, heaps, false, false, &pool);

	if (r < 0)
		return r;
	if (n && (r = pool_set_hints(pool, hints, n, HINTS_DEVICE)) < 0) {
		pool_free(pool);
		return r;
	}
	*ret = pool;
	return 0;
}

ION_EXPORT struct ion_pool *ion_pool_ref(struct ion_pool *pool)
{
	if (pool && !pool->heap_pool)
		atomic_fetch_add_explicit(&pool->refcount, 1, memory_order_relaxed);
	return pool;
}

ION_EXPORT struct ion_pool *ion_pool_unref(struct ion_pool *pool)
{
	if (pool && !pool->heap_pool &&
	    atomic_fetch_sub_explicit(&pool->refcount, 1, memory_order_acq_rel) == 1)
		pool_free(pool);
	return NULL;
}

/*
 * Called with the lock held, when no buffer of the class is clean and no
 * thread zeroes them (or the heap allocates slower than a memset): zeroes
 * a dirty one here, without the lock.  Its index once clean, or -1.
 */
