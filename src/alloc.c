// SPDX-License-Identifier: MIT
/*
 * Requests and their solutions: the one allocation path.  Every entry
 * point (a heap name, an id mask, a config) becomes a struct ion_request,
 * the solver turns it into candidate heaps, and the first candidate that
 * allocates serves it.
 */
#include <stdatomic.h>
#include <string.h>

#include <ion/ion.h>

#include "alloc.h"
#include "backends/backend.h"
#include "constraint.h"
#include "device.h"
#include "fdinfo.h"
#include "pool.h"
#include "service.h"
#include "solver.h"

#define CACHE_FLAGS (ION_FLAG_CACHED | ION_FLAG_CACHED_NEEDS_SYNC)

/*
 * Devices and the constraints the solver reads, side by side.  A set is
 * shared, not copied, between a config and the solutions made from it:
 * a config that changes after solving changes a copy.
 */
struct device_set {
	atomic_int refcount;
	size_t n;
	struct ion_device **devices;	/* references, or NULL for ... */
	struct ion_remote **remotes;	/* ... a constraint from another process */
	const struct ion_constraint **constraints;
};

struct ion_alloc_config {
	size_t len;
	char *heap_name;
	unsigned int heap_mask;
	unsigned int flags;
	bool fallback;
	bool no_cpu_access;
	struct device_set *set;		/* or NULL: no device */
};

struct ion_solution {
	atomic_int refcount;
	struct ion_ctx *ctx;
	struct ion_registry *reg;	/* what it was solved on */
	struct ion_request req;
	char *heap_name;	/* req.heap_name points here */
	struct device_set *set;	/* req.constraints points into it */
	const struct ion_heap **heaps;
	unsigned int n_heaps;
	int error;		/* what allocating answers with no heap */
	/* A heap pool's: holds no reference to the context nor the registry,
	 * which own the pool (through the heap's slot) that owns this. */
	bool weak;
	/*
	 * Why the other heaps were left out: worded only when first asked
	 * (by solving again with reasons), so that solving stays cheap.
	 * The solution is immutable all the same: the words follow from
	 * what it holds.  Published once, without a lock (nothing for a
	 * fork() or a cancelled thread to leave held).
	 */
	_Atomic(struct ion_rejections *) rejected_slot;
	/* The slot through a pointer: words published from a const
	 * solution, which the words do not change. */
	_Atomic(struct ion_rejections *) *rejected;
};

static struct device_set *device_set_ref(struct device_set *set)
{
	if (set)
		atomic_fetch_add_explicit(&set->refcount, 1, memory_order_relaxed);
	return set;
}

static void device_set_unref(struct device_set *set)
{
	if (!set || atomic_fetch_sub_explicit(&set->refcount, 1, memory_order_acq_rel) != 1)
		return;
	for (size_t i = 0; i < set->n; i++) {
		ion_device_unref(set->devices[i]);
		ion_remote_unref(set->remotes[i]);
	}
	free(set->devices);
	free(set->remotes);
	free(set->constraints);
	free(set);
}

/*
 * A set of the devices *setp holds and dev (or remote, a constraint from
 * another process), unshared: sets are shared with solutions once solved,
 * so a change makes a new one.  0 or -ENOMEM.
 */
static int device_set_add(struct device_set **setp, struct ion_device *dev,
			  struct ion_remote *remote)
{
	const struct device_set *old = *setp;
	size_t n = old ? old->n : 0;
	struct device_set *set;

	for (size_t i = 0; dev && i < n; i++)
		if (old->devices[i] == dev)
			return 0;
	set = calloc(1, sizeof(*set));
	if (!set)
		return -ENOMEM;
	set->devices = calloc(n + 1, sizeof(*set->devices));
	set->remotes = calloc(n + 1, sizeof(*set->remotes));
	set->constraints = calloc(n + 1, sizeof(*set->constraints));
	if (!set->devices || !set->remotes || !set->constraints) {
		free(set->devices);
		free(set->remotes);
		free(set->constraints);
		free(set);
		return -ENOMEM;
	}
	atomic_init(&set->refcount, 1);
	for (size_t i = 0; i < n; i++) {
		set->devices[i] = old->devices[i] ? ion_device_ref(old->devices[i]) : NULL;
		set->remotes[i] = old->remotes[i] ? ion_remote_ref(old->remotes[i]) : NULL;
		set->constraints[i] = old->constraints[i];
	}
	set->devices[n] = dev ? ion_device_ref(dev) : NULL;
	set->remotes[n] = remote ? ion_remote_ref(remote) : NULL;
	set->constraints[n] = dev ? &dev->constraint : ion_remote_constraint(remote);
	set->n = n + 1;
	device_set_unref(*setp);
	*setp = set;
	return 0;
}

static const struct ion_heap_pool_source heap_pool_source;

/*
 * One heap's turn: from its pool where the board keeps buffers of this
 * size ready (the pools' one hook), else from the kernel.  A pool's own
 * allocations (pooled false) go to the kernel: the pool asking is the
 * pool.
 */
static int heap_alloc(struct ion_ctx *ctx, struct ion_registry *reg,
		      const struct ion_heap *heap, size_t len, unsigned int flags,
		      bool pooled, int *ret_fd)
{
	int r;

	if (len > heap->max_len)
		return -ENOMEM; /* a pool's longer request than the solution's */
	if (pooled) {
		r = ion_heap_pool_alloc(ctx, reg, heap, flags, len, &heap_pool_source, ret_fd);
		if (r <= 0)
			return r;
	}
	return heap->backend->alloc(heap, len, flags, ret_fd);
}

/* The one allocation loop: from the first of heaps (reg's) that has the
 * memory, req->len being page-rounded already. */
static int alloc_local(struct ion_ctx *ctx, struct ion_registry *reg,
		      const struct ion_request *req, const struct ion_heap *const *heaps,
		      unsigned int n, int error, bool pooled, int *ret_fd,
		      const struct ion_heap **ret_heap)
{
	int r = error;

	for (unsigned int i = 0; i < n; i++) {
		r = heap_alloc(ctx, reg, heaps[i], req->len, req->flags & CACHE_FLAGS, pooled,
			       ret_fd);
		if (r == 0) {
			if (ret_heap)
				*ret_heap = heaps[i];
			return 0;
		}
		if (r != -ENOMEM || !req->fallback)
			return r;
		if (i + 1 < n)
			ion_dbg(ctx, "heap %s is out of memory, trying %s", heaps[i]->name,
				heaps[i + 1]->name);
	}
	return r;
}

/* ... and where that fails for want of a heap this process was refused,
 * through the allocation service (service-client.c). */
static int alloc_from(struct ion_ctx *ctx, struct ion_registry *reg,
		      const struct ion_request *req, const struct ion_heap *const *heaps,
		      unsigned int n, int error, bool pooled, int *ret_fd,
		      const struct ion_heap **ret_heap)
{
	int r = alloc_local(ctx, reg, req, heaps, n, error, pooled, ret_fd, ret_heap);

	return r < 0 ? ion_service_alloc(ctx, reg, req, r, ret_fd, ret_heap) : r;
}

/* Solves on the stack where the registry is small, as it nearly always is. */
#define STACK_HEAPS 32

static int request_allocate(struct ion_ctx *ctx, const struct ion_request *req,
			    int *ret_fd, const struct ion_heap **ret_heap)
{
	const struct ion_heap *stack[STACK_HEAPS], **heaps = stack;
	_cleanup_registry_ struct ion_registry *reg = NULL;
	int n, error = 0, r;

	r = ion_ctx_registry(ctx, &reg);
	if (r < 0)
		return r;
	if (reg->n_heaps > STACK_HEAPS) {
		heaps = calloc(reg->n_heaps, sizeof(*heaps));
		if (!heaps)
			return -ENOMEM;
	}
	n = ion_solve(reg, req, heaps, &error, NULL);
	r = n < 0 ? n
		  : alloc_from(ctx, reg, req, heaps, (unsigned int)n, error, true, ret_fd, ret_heap);
	if (heaps != stack)
		free(heaps);
	return r;
}

/* ---- the builder ---- */

ION_EXPORT int ion_alloc_config_new(struct ion_alloc_config **ret_config)
{
	struct ion_alloc_config *config;

	if (!ret_config)
		return -EINVAL;
	config = calloc(1, sizeof(*config));
	if (!config)
		return -ENOMEM;
	config->fallback = true;
	*ret_config = config;
	return 0;
}

ION_EXPORT struct ion_alloc_config *ion_alloc_config_free(struct ion_alloc_config *config)
{
	if (config) {
		device_set_unref(config->set);
		free(config->heap_name);
		free(config);
	}
	return NULL;
}

ION_EXPORT int ion_alloc_config_add_device(struct ion_alloc_config *config,
					   struct ion_device *device)
{
	if (!config || !device)
		return -EINVAL;
	return device_set_add(&config->set, device, NULL);
}

ION_EXPORT int ion_alloc_config_serialize(const struct ion_alloc_config *config,
					  char **ret_text)
{
	if (!config || !ret_text)
		return -EINVAL;
	return ion_constraints_format(config->set ? config->set->constraints : NULL,
				      config->set ? config->set->n : 0, ret_text);
}

ION_EXPORT int ion_alloc_config_add_constraints(struct ion_alloc_config *config,
						const char *text)
{
	struct device_set *set = NULL;
	struct ion_remote **remotes;
	size_t n;
	int r;

	if (!config || !text)
		return -EINVAL;
	r = ion_constraints_parse(text, &remotes, &n);
	if (r < 0)
		return r;
	/* No set grows past what one text can carry. */
	if (n > ION_CONSTRAINTS_MAX - (config->set ? config->set->n : 0))
		r = -E2BIG;
	/* All or nothing: a copy of the set takes them, then replaces it. */
	set = device_set_ref(config->set);
	for (size_t i = 0; r == 0 && i < n; i++)
		r = device_set_add(&set, NULL, remotes[i]);
	for (size_t i = 0; i < n; i++)
		ion_remote_unref(remotes[i]);
	free(remotes);
	if (r < 0) {
		device_set_unref(set);
		return r;
	}
	device_set_unref(config->set);
	config->set = set;
	return 0;
}

ION_EXPORT int ion_alloc_config_set_cpu_access(struct ion_alloc_config *config,
					       int cpu_access)
{
	if (!config)
		return -EINVAL;
	config->no_cpu_access = !cpu_access;
	return 0;
}

ION_EXPORT int ion_alloc_config_set_size(struct ion_alloc_config *config, size_t len)
{
	if (!config || len == 0)
		return -EINVAL;
	config->len = len;
	return 0;
}

ION_EXPORT int ion_alloc_config_set_heap(struct ion_alloc_config *config,
					 const char *name)
{
	char *copy = NULL;

	if (!config)
		return -EINVAL;
	if (name && !(copy = strdup(name)))
		return -ENOMEM;
	free(config->heap_name);
	config->heap_name = copy;
	return 0;
}

ION_EXPORT int ion_alloc_config_set_heap_mask(struct ion_alloc_config *config,
					      unsigned int heap_id_mask)
{
	if (!config)
		return -EINVAL;
	config->heap_mask = heap_id_mask;
	return 0;
}

ION_EXPORT int ion_alloc_config_set_flags(struct ion_alloc_config *config,
					  unsigned int flags)
{
	if (!config || (flags & ~CACHE_FLAGS))
		return -EINVAL;
	config->flags = flags;
	return 0;
}

ION_EXPORT int ion_alloc_config_set_fallback(struct ion_alloc_config *config,
					     int fallback)
{
	if (!config)
		return -EINVAL;
	config->fallback = fallback != 0;
	return 0;
}

static int request_from_config(const struct ion_alloc_config *config,
			       struct ion_request *req)
{
	int r = ion_round_len(config->len, &req->len);

	if (r < 0)
		return r;
	req->flags = config->flags;
	req->heap_mask = config->heap_mask;
	req->heap_name = config->heap_name;
	req->fallback = config->fallback;
	req->no_cpu_access = config->no_cpu_access;
	req->constraints = config->set ? config->set->constraints : NULL;
	req->n_constraints = config->set ? config->set->n : 0;
	return 0;
}

/* ---- solutions ---- */

/* Solves config on reg; a weak solution holds neither ctx nor reg. */
static int solve_on(struct ion_ctx *ctx, struct ion_registry *reg,
		    const struct ion_alloc_config *config, bool weak,
		    struct ion_solution **ret_solution)
{
	struct ion_solution *sol;
	struct ion_request req;
	int n;

	n = request_from_config(config, &req);
	if (n < 0)
		return n;
	sol = calloc(1, sizeof(*sol));
	if (!sol)
		return -ENOMEM;
	sol->heaps = calloc(reg->n_heaps ? reg->n_heaps : 1, sizeof(*sol->heaps));
	if (config->heap_name)
		sol->heap_name = strdup(config->heap_name);
	req.heap_name = sol->heap_name;
	n = !sol->heaps || (config->heap_name && !sol->heap_name) ? -ENOMEM : 0;
	sol->set = device_set_ref(config->set);
	if (n == 0)
		n = ion_solve(reg, &req, sol->heaps, &sol->error, NULL);
	if (n < 0) {
		device_set_unref(sol->set);
		free(sol->heaps);
		free(sol->heap_name);
		free(sol);
		return n;
	}
	atomic_init(&sol->refcount, 1);
	atomic_init(&sol->rejected_slot, NULL);
	sol->rejected = &sol->rejected_slot;
	sol->req = req;
	sol->n_heaps = (unsigned int)n;
	sol->weak = weak;
	sol->reg = weak ? reg : ion_registry_ref(reg);
	sol->ctx = weak ? ctx : ion_ctx_ref(ctx);
	*ret_solution = sol;
	return 0;
}

ION_EXPORT int ion_ctx_solve(struct ion_ctx *ctx, const struct ion_alloc_config *config,
			     struct ion_solution **ret_solution)
{
	_cleanup_registry_ struct ion_registry *reg = NULL;
	struct ion_request req;
	int r;

	if (!ctx || !config || !ret_solution)
		return -EINVAL;
	r = request_from_config(config, &req);
	if (r < 0)
		return r;
	r = ion_ctx_registry(ctx, &reg);
	if (r < 0)
		return r;
	return solve_on(ctx, reg, config, false, ret_solution);
}

ION_EXPORT struct ion_solution *ion_solution_ref(struct ion_solution *solution)
{
	if (solution)
		atomic_fetch_add_explicit(&solution->refcount, 1, memory_order_relaxed);
	return solution;
}

ION_EXPORT struct ion_solution *ion_solution_unref(struct ion_solution *solution)
{
	if (!solution ||
	    atomic_fetch_sub_explicit(&solution->refcount, 1, memory_order_acq_rel) != 1)
		return NULL;
	ion_rejections_clear(atomic_load_explicit(solution->rejected, memory_order_acquire));
	free(atomic_load_explicit(solution->rejected, memory_order_relaxed));
	device_set_unref(solution->set);
	free(solution->heaps);
	free(solution->heap_name);
	if (!solution->weak) {
		ion_registry_unref(solution->reg);
		ion_ctx_unref(solution->ctx);
	}
	free(solution);
	return NULL;
}

ION_EXPORT size_t ion_solution_get_size(const struct ion_solution *solution)
{
	return solution ? solution->req.len : 0;
}

ION_EXPORT int ion_solution_get_heap_count(const struct ion_solution *solution)
{
	return solution ? (int)solution->n_heaps : -EINVAL;
}

ION_EXPORT const struct ion_heap *ion_solution_get_heap(const struct ion_solution *solution,
							unsigned int index)
{
	if (!solution || index >= solution->n_heaps)
		return NULL;
	return solution->heaps[index];
}

/* The rejections, worded on first use; NULL on ENOMEM (then again next
 * time).  Two threads may both word them: one result stays. */
static const struct ion_rejections *explain(const struct ion_solution *sol)
{
	struct ion_rejections *rej = atomic_load_explicit(sol->rejected, memory_order_acquire);
	struct ion_rejections *expected = NULL;
	const struct ion_heap **heaps;
	int r, error;

	if (rej)
		return rej;
	rej = calloc(1, sizeof(*rej));
	heaps = calloc(sol->reg->n_heaps ? sol->reg->n_heaps : 1, sizeof(*heaps));
	r = rej && heaps ? ion_solve(sol->reg, &sol->req, heaps, &error, rej) : -ENOMEM;
	free(heaps);
	if (r < 0 || !atomic_compare_exchange_strong_explicit(sol->rejected, &expected, rej,
							      memory_order_acq_rel,
							      memory_order_acquire)) {
		ion_rejections_clear(rej);
		free(rej);
		return r < 0 ? NULL : expected;
	}
	return rej;
}

ION_EXPORT int ion_solution_get_rejection_count(const struct ion_solution *solution)
{
	const struct ion_rejections *rej;

	if (!solution)
		return -EINVAL;
	rej = explain(solution);
	return rej ? (int)rej->n : -ENOMEM;
}

ION_EXPORT int ion_solution_get_rejection(const struct ion_solution *solution,
					  unsigned int index,
					  const struct ion_heap **ret_heap,
					  const struct ion_device **ret_device,
					  const char **ret_reason)
{
	const struct ion_rejections *all;
	const struct ion_rejection *rej;
	const struct ion_device *dev = NULL;

	if (!solution || !ret_heap || !ret_device || !ret_reason)
		return -EINVAL;
	all = explain(solution);
	if (!all)
		return -ENOMEM;
	if (index >= all->n)
		return -ENOENT;
	rej = &all->v[index];
	for (size_t i = 0; rej->by && i < solution->set->n; i++)
		if (solution->set->constraints[i] == rej->by)
			dev = solution->set->devices[i];
	*ret_heap = rej->heap;
	*ret_device = dev;
	*ret_reason = rej->reason;
	return 0;
}

ION_EXPORT int ion_solution_alloc(const struct ion_solution *solution, int *ret_fd,
				  const struct ion_heap **ret_heap)
{
	if (!solution || !ret_fd)
		return -EINVAL;
	return alloc_from(solution->ctx, solution->reg, &solution->req, solution->heaps,
			  solution->n_heaps, solution->error, true, ret_fd, ret_heap);
}

/* ---- the shorthands ---- */

ION_EXPORT int ion_ctx_allocate(struct ion_ctx *ctx, const struct ion_alloc_config *config,
				int *ret_fd, const struct ion_heap **ret_heap)
{
	struct ion_request req;
	int r;

	if (!ctx || !config || !ret_fd)
		return -EINVAL;
	r = request_from_config(config, &req);
	if (r < 0)
		return r;
	return request_allocate(ctx, &req, ret_fd, ret_heap);
}

ION_EXPORT int ion_ctx_alloc(struct ion_ctx *ctx, const char *heap_name,
			     size_t len, unsigned int flags, int *ret_fd)
{
	struct ion_request req = {
		.flags = flags,
		.heap_name = heap_name,
		.fallback = true,
	};
	int r;

	if (!ctx || !heap_name || !ret_fd || (flags & ~CACHE_FLAGS))
		return -EINVAL;
	r = ion_round_len(len, &req.len);
	if (r < 0)
		return r;
	return request_allocate(ctx, &req, ret_fd, NULL);
}

ION_EXPORT int ion_ctx_alloc_mask(struct ion_ctx *ctx, unsigned int heap_id_mask,
				  size_t len, unsigned int flags, int *ret_fd,
				  const struct ion_heap **ret_heap)
{
	struct ion_request req = {
		.flags = flags,
		.heap_mask = heap_id_mask,
		.fallback = true,
	};
	int r;

	if (!ctx || !ret_fd || (flags & ~CACHE_FLAGS))
		return -EINVAL;
	/* The length first, as the kernel's ION checks it: then the mask. */
	r = ion_round_len(len, &req.len);
	if (r < 0)
		return r;
	/* Mask 0 asks for no heap at all, as in ION (the builder's 0 is "any"). */
	if (!heap_id_mask)
		return -ENODEV;
	return request_allocate(ctx, &req, ret_fd, ret_heap);
}

/* ---- for the pools ---- */

/* A pool's allocate call: the one loop, for a length the pool has
 * page-rounded already, straight to the kernel. */
static int solution_alloc_len(const struct ion_solution *solution, size_t len,
			      int *ret_fd, const struct ion_heap **ret_heap)
{
	struct ion_request req = solution->req;

	req.len = len;
	return alloc_from(solution->ctx, solution->reg, &req, solution->heaps,
			  solution->n_heaps, solution->error, false, ret_fd, ret_heap);
}

const struct ion_pool_ops ion_solution_pool_ops = {
	.alloc = solution_alloc_len,
	.trackable = ion_fdinfo_trackable,
	.refs = ion_fdinfo_refs,
};

static const struct ion_heap_pool_source heap_pool_source = {
	.ops = &ion_solution_pool_ops,
	.solve = ion_solution_for_heap,
};

struct ion_heap_pools *ion_solution_heap_pools(const struct ion_solution *solution)
{
	return ion_heap_pools_of(solution->reg);
}

uint64_t ion_alloc_config_and_uint(const struct ion_alloc_config *config,
				   enum ion_conf_key key, struct ion_conf_src *ret_src)
{
	struct ion_conf_props all = { 0 };
	uint64_t v = 0;

	for (size_t i = 0; config->set && i < config->set->n; i++)
		ion_conf_field_and(key, &all.f[key], &config->set->constraints[i]->props.f[key]);
	if (ion_props_get_uint(&all, key, &v) && ret_src)
		ion_props_get_src(&all, key, ret_src);
	return v;
}

struct ion_ctx *ion_solution_ctx(const struct ion_solution *solution)
{
	return solution->ctx;
}

int ion_solution_for_heap(struct ion_ctx *ctx, struct ion_registry *reg,
			  const struct ion_heap *heap, unsigned int flags,
			  struct ion_solution **ret)
{
	struct ion_alloc_config *config;
	int r = ion_alloc_config_new(&config);

	if (r == 0)
		r = ion_alloc_config_set_size(config, ion_page_size());
	if (r == 0)
		r = ion_alloc_config_set_heap(config, heap->name);
	if (r == 0)
		r = ion_alloc_config_set_flags(config, flags);
	/* The heap's pool is its registry's, and owns this: a reference
	 * back would keep the registry and the context alive for ever. */
	if (r == 0)
		r = solve_on(ctx, reg, config, true, ret);
	ion_alloc_config_free(config);
	return r;
}

/* A pool of the solution's buffers, handed the one allocation loop and
 * the kernel's counts (the pool layer knows no solution's insides). */
ION_EXPORT int ion_pool_new(struct ion_solution *solution, struct ion_pool **ret_pool)
{
	const struct ion_pool_hint *hints;
	size_t n = 0;

	if (!solution || !ret_pool)
		return -EINVAL;
	/* The first device of the solution that a board gives a Pool hint. */
	for (unsigned int i = 0; !n && ion_solution_pool_hints(solution, i, &hints, &n); i++)
		;
	return ion_pool_create(solution->ctx, &ion_solution_pool_ops, solution,
			       ion_heap_pools_of(solution->reg), hints, n, ret_pool);
}

bool ion_solution_pool_hints(const struct ion_solution *solution, unsigned int index,
			     const struct ion_pool_hint **ret_hints, size_t *ret_n)
{
	*ret_hints = NULL;
	*ret_n = 0;
	if (!solution->set || index >= solution->set->n)
		return false;
	/* Hints are this process's own devices': a constraint from another
	 * process never fills a pool here (its text has no Pool either). */
	if (solution->set->remotes[index])
		return true;
	ion_props_get_pool(&solution->set->constraints[index]->props, ION_KEY_POOL,
			   ret_hints, ret_n);
	return true;
}
