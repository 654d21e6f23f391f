/* SPDX-License-Identifier: MIT */
/* What the pools need of the allocation path (alloc.c). */
#ifndef LIBION_ALLOC_H
#define LIBION_ALLOC_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "heaps-conf.h"

struct ion_alloc_config;
struct ion_ctx;
struct ion_heap;
struct ion_heap_pools;
struct ion_pool_ops;
struct ion_registry;
struct ion_solution;

/* What a pool of a solution is handed (pool.h): the one allocation
 * loop, straight to the kernel, for a page-rounded length; the kernel's
 * counts (fdinfo.h) as the reuse check. */
extern const struct ion_pool_ops ion_solution_pool_ops;
/* The heap table of the solution's registry (pool.h). */
struct ion_heap_pools *ion_solution_heap_pools(const struct ion_solution *solution);
/* A number key of the config's devices, ANDed as the vocabulary says
 * (Alignment: the largest; 0: no device sets it): an image buffer's
 * strides and plane offsets follow it.  Where it is not 0 and ret_src is
 * not NULL, *ret_src says which setting decided it. */
uint64_t ion_alloc_config_and_uint(const struct ion_alloc_config *config,
				   enum ion_conf_key key, struct ion_conf_src *ret_src);
/* The context of a solution (no new reference). */
struct ion_ctx *ion_solution_ctx(const struct ion_solution *solution);
/* A solution for one heap of reg and cache flags (the heap's own pool):
 * it holds no reference to ctx or reg, which own the pool. */
int ion_solution_for_heap(struct ion_ctx *ctx, struct ion_registry *reg,
			  const struct ion_heap *heap, unsigned int flags,
			  struct ion_solution **ret);
/* The Pool hint of the solution's index-th device (NULL, 0: none);
 * false past the last device. */
bool ion_solution_pool_hints(const struct ion_solution *solution, unsigned int index,
			     const struct ion_pool_hint **ret_hints, size_t *ret_n);

#endif
