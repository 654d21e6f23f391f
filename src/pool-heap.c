// SPDX-License-Identifier: MIT
/*
 * Heaps' own pools: a heap whose board file gives it a Pool hint gets a
 * pool at its first use, and every allocation of a hinted size is served
 * from it.  The pools and what they found out about a heap live in a
 * table of their own, one a registry, since the heaps are immutable: this
 * layer makes it and hangs it on the registry's hook, which frees it; the
 * allocation path reaches them through one hook, ion_heap_pool_alloc().
 */
#include <errno.h>
#include <stdlib.h>

#include "pool-internal.h"
#include "registry.h"

/* One heap's mutable side. */
struct heap_slot {
	/* Its pools, by cache flags, each set once (atomically) and freed
	 * with the table. */
	_Atomic(struct ion_pool *) pools[4];
	/* Whether the kernel counts a mapping of its buffers in the file's
	 * references (ion_fdinfo_trackable()): 0 not known yet, 1 yes, -1
	 * no. */
	atomic_int maps_counted;
};

struct ion_heap_pools {
	struct ion_registry_state base;	/* the registry's hook: first */
	unsigned int n;
	struct heap_slot slot[];
};

static void heap_pools_free(struct ion_registry_state *state)
{
	struct ion_heap_pools *table = (struct ion_heap_pools *)state;

	for (unsigned int i = 0; i < table->n; i++)
		for (size_t k = 0; k < 4; k++) {
			struct ion_pool *pool =
				atomic_load_explicit(&table->slot[i].pools[k], memory_order_acquire);

			if (pool)
				pool_free(pool);
		}
	free(table);
}

static struct ion_heap_pools *heap_pools_new(unsigned int n_heaps)
{
	struct ion_heap_pools *table =
		calloc(1, sizeof(*table) + n_heaps * sizeof(table->slot[0]));

	if (!table)
		return NULL;
	table->base.free = heap_pools_free;
	table->n = n_heaps;
	for (unsigned int i = 0; i < n_heaps; i++) {
		for (size_t k = 0; k < 4; k++)
			atomic_init(&table->slot[i].pools[k], NULL);
		atomic_init(&table->slot[i].maps_counted, 0);
	}
	return table;
}

/*
 * The pool layer owns the table: made at its first use and hung on the
 * registry (whose heaps are immutable and whose layer is below this
 * one) through the registry's one hook, which frees it with the
 * registry.  Two threads may make one at once: the first to set it wins.
 */
struct ion_heap_pools *ion_heap_pools_of(struct ion_registry *reg)
{
	struct ion_registry_state *st, *expected = NULL;
	struct ion_heap_pools *table;

	if (!reg)
		return NULL;
	st = atomic_load_explicit(&reg->state, memory_order_acquire);
	if (st)
		return (struct ion_heap_pools *)st;
	table = heap_pools_new(reg->n_heaps);
	if (!table)
		return NULL;
	if (!atomic_compare_exchange_strong_explicit(&reg->state, &expected, &table->base,
						     memory_order_acq_rel, memory_order_acquire)) {
		free(table); /* another thread's came first */
		return (struct ion_heap_pools *)expected;
	}
	return table;
}

static struct heap_slot *slot_of(struct ion_heap_pools *table, const struct ion_heap *heap)
{
	return table && heap && heap->index < table->n ? &table->slot[heap->index] : NULL;
}

atomic_int *ion_heap_pools_maps_known(struct ion_heap_pools *table,
				      const struct ion_heap *heap)
{
	struct heap_slot *slot = slot_of(table, heap);

	return slot ? &slot->maps_counted : NULL;
}

struct ion_pool *ion_heap_pools_peek(struct ion_heap_pools *table,
				     const struct ion_heap *heap, unsigned int flags)
{
	struct heap_slot *slot = slot_of(table, heap);

	return slot ? atomic_load_explicit(&slot->pools[flags & 3], memory_order_acquire) : NULL;
}

/*
 * Whether a heap's pool serves len bytes (page-rounded): a hint of it is
 * left after the cap (the board's alone would have the pool keep a size
 * the cap left out, with no count to stop it).  A heap pool's hints are
 * set before it is published and never after, so they are read without
 * its lock.
 */
static bool serves(const struct ion_pool *pool, size_t len)
{
	for (size_t h = 0; h < pool->n_hints; h++)
		if (pool_class_of(pool, pool->hints[h].size) == len)
			return true;
	return false;
}

/* A new pool for heap, with its hints, handed what source gives; NULL on
 * failure. */
static struct ion_pool *heap_pool_new(struct ion_ctx *ctx, struct ion_registry *reg,
				      const struct ion_heap *heap, unsigned int flags,
				      const struct ion_heap_pool_source *source)
{
	struct ion_solution *solution = NULL;
	struct ion_pool *pool = NULL;

	if (source->solve(ctx, reg, heap, flags, &solution) < 0 ||
	    pool_create(ctx, source->ops, solution, ion_heap_pools_of(reg), true, true, &pool) < 0 ||
	    pool_set_hints(pool, heap->pool_hints, heap->n_pool_hints, HINTS_HEAP) < 0) {
		if (pool)
			pool_free(pool);
		pool = NULL;
	}
	ion_solution_unref(solution);
	return pool;
}

/* The heap's pool for these flags, made (and its thread woken) at the
 * heap's first use, whatever the size, so that the hinted sizes are ready
 * by the time they are asked for.  NULL on failure. */
static struct ion_pool *heap_pool(struct ion_ctx *ctx, struct ion_registry *reg,
				  const struct ion_heap *heap, unsigned int flags,
				  const struct ion_heap_pool_source *source)
{
	struct heap_slot *slot = slot_of(ion_heap_pools_of(reg), heap);
	struct ion_pools *all = ion_ctx_pools(ctx);
	struct ion_pool *pool, *expected = NULL;

	if (!slot)
		return NULL;
	pool = atomic_load_explicit(&slot->pools[flags & 3], memory_order_acquire);
	if (pool)
		return pool;
	pool = heap_pool_new(ctx, reg, heap, flags, source);
	if (!pool)
		return NULL;
	if (!atomic_compare_exchange_strong_explicit(&slot->pools[flags & 3], &expected, pool,
						     memory_order_acq_rel, memory_order_acquire)) {
		pool_free(pool); /* another thread made it first */
		return expected;
	}
	pthread_mutex_lock(&all->lock);
	if (pool_start_worker(pool) < 0)
		ion_dbg(ctx, "heap %s: no background refill worker", heap->name);
	pool_wake(pool);
	pthread_mutex_unlock(&all->lock);
	ion_dbg(ctx, "heap %s: a pool for the board's Pool hint", heap->name);
	return pool;
}

int ion_heap_pool_alloc(struct ion_ctx *ctx, struct ion_registry *reg,
			const struct ion_heap *heap, unsigned int flags, size_t len,
			const struct ion_heap_pool_source *source, int *ret_fd)
{
	struct ion_pool *pool;

	if (!heap->n_pool_hints)
		return 1;
	pool = heap_pool(ctx, reg, heap, flags, source);
	if (!pool || !serves(pool, len))
		return 1;
	/* The board keeps buffers of this size ready; len is the pool's
	 * size for it already (a heap pool's sizes are page-rounded). */
	return pool_get_size(pool, len, ret_fd);
}
