// SPDX-License-Identifier: MIT
/*
 * What pools may hold, and what they tell: the held bytes, charged
 * against a pool's and a context's byte limits; trims, expiry, and the
 * statistics.
 */
#include <errno.h>
#include <stdatomic.h>

#include <ion/ion.h>

#include "pool-internal.h"

/* ---- held bytes ---- */

/* The pool's own count, and its high water. */
static void held_add(struct ion_pool *pool, long long delta)
{
	pool->held += (unsigned long long)delta;
	if (pool->held > pool->stats[ION_POOL_STAT_HIGH_WATER])
		pool->stats[ION_POOL_STAT_HIGH_WATER] = pool->held;
}

void pool_account(struct ion_pool *pool, long long delta)
{
	struct ion_pools *all = ion_ctx_pools(pool->ctx);

	held_add(pool, delta);
	atomic_fetch_add_explicit(&all->held, (unsigned long long)delta, memory_order_relaxed);
}

/* Whether size more bytes fit the pool's own limit. */
static bool own_room_for(const struct ion_pool *pool, size_t size)
{
	return !pool->max_bytes || pool->held + size <= pool->max_bytes;
}

/* Whether size more bytes fit the pool's limit and the context's. */
bool pool_room_for(const struct ion_pool *pool, size_t size)
{
	const struct ion_pools *all = ion_ctx_pools(pool->ctx);
	unsigned long long total = atomic_load_explicit(&all->held, memory_order_relaxed);
	unsigned long long limit = atomic_load_explicit(&all->limit, memory_order_relaxed);

	return own_room_for(pool, size) && (!limit || total + size <= limit);
}

bool pool_charge(struct ion_pool *pool, size_t size)
{
	struct ion_pools *all = ion_ctx_pools(pool->ctx);
	unsigned long long total = atomic_load_explicit(&all->held, memory_order_relaxed);
	unsigned long long limit = atomic_load_explicit(&all->limit, memory_order_relaxed);

	if (!own_room_for(pool, size))
		return false;
	do {
		if (limit && total + size > limit)
			return false;
	} while (!atomic_compare_exchange_weak_explicit(&all->held, &total, total + size,
							memory_order_relaxed, memory_order_relaxed));
	held_add(pool, (long long)size);
	return true;
}

int pool_trim(struct ion_pool *pool, unsigned long long keep)
{
	int released = 0;

	pool_lock(pool);
	pool->ahead = 0; /* what a stream made it keep goes too */
	/* First what its holders closed: its anchor alone still pins it. */
	for (size_t i = 0; i < pool->n_bufs; i++) {
		struct pool_buf *b = &pool->bufs[i];

		if (b->state == BUF_OUT && b->counted &&
		    pool->ops->refs(b->fd, NULL) == pool_own_refs(b) &&
		    !pool_found_free(pool, i)) {
			released++;
			i--; /* the last entry moved here */
		}
	}
	for (size_t i = 0; i < pool->n_bufs && pool->held > keep; i++)
		if ((pool->bufs[i].state == BUF_FREE || pool->bufs[i].state == BUF_DIRTY) &&
		    (pool->bufs[i].slot < 0 || pool_unslot(pool, i))) {
			pool_drop(pool, i--, true);
			released++;
		}
	pthread_mutex_unlock(pool->lock);
	return released;
}

ION_EXPORT int ion_pool_set_max_bytes(struct ion_pool *pool, unsigned long long bytes)
{
	if (!pool)
		return -EINVAL;
	pool_lock(pool);
	pool->max_bytes = bytes;
	pthread_mutex_unlock(pool->lock);
	if (bytes)
		pool_trim(pool, bytes);
	return 0;
}

ION_EXPORT int ion_pool_set_expiry_ms(struct ion_pool *pool, unsigned int ms)
{
	if (!pool)
		return -EINVAL;
	pool_lock(pool);
	pool->expiry_ns = (uint64_t)ms * 1000000u;
	pthread_mutex_unlock(pool->lock);
	return 0;
}

ION_EXPORT int ion_pool_trim(struct ion_pool *pool, unsigned long long keep_bytes)
{
	int n;

	if (!pool)
		return -EINVAL;
	n = pool_trim(pool, keep_bytes);
	if (n)
		ion_dbg(pool->ctx, "pool trimmed: %d buffers released", n);
	return n;
}

ION_EXPORT unsigned long long ion_pool_get_stat(const struct ion_pool *pool,
						enum ion_pool_stat stat)
{
	unsigned long long v = 0;

	if (!pool || (unsigned int)stat >= ION_POOL_STAT_COUNT)
		return 0;
	/* Takes from the slots settled: they count as the hits they were. */
	pool_lock((struct ion_pool *)pool);
	if (stat == ION_POOL_STAT_BYTES_HELD) {
		v = pool->held;
	} else if (stat == ION_POOL_STAT_BUFFERS_OUT) {
		for (size_t i = 0; i < pool->n_bufs; i++)
			v += pool->bufs[i].state == BUF_OUT;
	} else {
		v = pool->stats[stat];
	}
	pthread_mutex_unlock(pool->lock);
	return v;
}

ION_EXPORT int ion_ctx_set_pool_limit(struct ion_ctx *ctx, unsigned long long bytes)
{
	struct ion_pools *all;

	if (!ctx)
		return -EINVAL;
	all = ion_ctx_pools(ctx);
	pthread_mutex_lock(&all->lock);
	atomic_store_explicit(&all->limit, bytes, memory_order_relaxed);
	/* A lower limit holds at once: pools give up idle buffers, in turn,
	 * until all of them together are within it. */
	for (struct ion_pool *p = all->list; bytes && p; p = p->next) {
		unsigned long long total = atomic_load_explicit(&all->held, memory_order_relaxed);
		unsigned long long over = total > bytes ? total - bytes : 0, held;

		if (!over)
			break;
		pool_lock(p);
		held = p->held;
		pthread_mutex_unlock(p->lock);
		pool_trim(p, held > over ? held - over : 0);
	}
	pthread_mutex_unlock(&all->lock);
	return 0;
}

ION_EXPORT int ion_ctx_trim_pools(struct ion_ctx *ctx)
{
	int n = 0;

	if (!ctx)
		return -EINVAL;
	pthread_mutex_lock(&ion_ctx_pools(ctx)->lock);
	for (struct ion_pool *p = ion_ctx_pools(ctx)->list; p; p = p->next)
		n += pool_trim(p, 0);
	pthread_mutex_unlock(&ion_ctx_pools(ctx)->lock);
	return n;
}
