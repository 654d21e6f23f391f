// SPDX-License-Identifier: MIT
/*
 * The solver: which heaps can serve a request, in which order, and why
 * the others cannot.  It reads the frozen registry and the request and
 * nothing else.
 */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include <ion/ion.h>

#include "solver.h"

int ion_round_len(size_t len, size_t *ret_len)
{
	size_t page = ion_page_size();

	if (len == 0 || len > SIZE_MAX - (page - 1))
		return -EINVAL;
	*ret_len = (len + page - 1) & ~(page - 1);
	return 0;
}

void ion_rejections_clear(struct ion_rejections *rej)
{
	if (!rej)
		return;
	for (unsigned int i = 0; i < rej->n; i++)
		free(rej->v[i].reason);
	free(rej->v);
	rej->v = NULL;
	rej->n = 0;
}

__attribute__((format(printf, 3, 4)))
static int reject(struct ion_rejections *rej, const struct ion_heap *heap,
		  const char *format, ...)
{
	struct ion_rejection *grown;
	va_list args;
	char *reason;
	int r;

	if (!rej)
		return 0;
	va_start(args, format);
	r = vasprintf(&reason, format, args);
	va_end(args);
	if (r < 0)
		return -ENOMEM;
	grown = realloc(rej->v, (rej->n + 1) * sizeof(*grown));
	if (!grown) {
		free(reason);
		return -ENOMEM;
	}
	rej->v = grown;
	rej->v[rej->n].heap = heap;
	rej->v[rej->n++].reason = reason;
	return 0;
}

static bool wants_cached(const struct ion_request *req)
{
	return req->flags & (ION_FLAG_CACHED | ION_FLAG_CACHED_NEEDS_SYNC);
}

/* The heap a request by name means: the name or an alias, and "cma" for
 * the CMA heap under any of its kernel names. */
static const struct ion_heap *named_heap(const struct ion_registry *reg,
					 const char *name)
{
	const struct ion_heap *h = ion_registry_find(reg, name);

	for (unsigned int i = 0; !h && strcmp(name, "cma") == 0 && i < reg->n_heaps; i++)
		if (ion_is_cma_name(reg->heaps[i]->kernel_name))
			h = reg->heaps[i];
	return h;
}

/*
 * Sparing scarce memory: where both would do, scattered pages before a
 * contiguous (CMA) heap; otherwise discovery's order, which is the order
 * of preference between backends.
 */
static bool better(const struct ion_heap *a, const struct ion_heap *b)
{
	bool ca = a->props & ION_HEAP_PROP_CONTIGUOUS;
	bool cb = b->props & ION_HEAP_PROP_CONTIGUOUS;

	if (ca != cb)
		return cb;
	return a->index < b->index;
}

static void sort_candidates(const struct ion_heap **heaps, unsigned int n)
{
	/* Insertion sort: a handful of heaps, and it is stable. */
	for (unsigned int i = 1; i < n; i++) {
		const struct ion_heap *h = heaps[i];
		unsigned int j = i;

		for (; j > 0 && better(h, heaps[j - 1]); j--)
			heaps[j] = heaps[j - 1];
		heaps[j] = h;
	}
}

/* A request by id mask: ION's order, highest id first. */
static int solve_mask(const struct ion_registry *reg, const struct ion_request *req,
		      const struct ion_heap **heaps, struct ion_rejections *rej)
{
	unsigned int n = 0;
	int r;

	for (int id = ION_MAX_IDS - 1; id >= 0; id--) {
		const struct ion_heap *h = reg->by_id[id];

		if (!h || !(req->heap_mask & (1U << id)))
			continue;
		/* Android asks for uncached memory by leaving the flag out. */
		if (!wants_cached(req) && h->uncached)
			h = h->uncached;
		heaps[n++] = h;
	}
	for (unsigned int i = 0; rej && i < reg->n_heaps; i++) {
		const struct ion_heap *h = reg->heaps[i];
		bool chosen = false;

		for (unsigned int k = 0; k < n && !chosen; k++)
			chosen = heaps[k] == h;
		if (chosen)
			continue;
		if (h->error)
			r = reject(rej, h, "unavailable: %s", h->reason ? h->reason : strerror(-h->error));
		else if (h->id < 0)
			r = reject(rej, h, "has no Android id: no mask reaches it");
		else if (req->heap_mask & (1U << h->id))
			r = reject(rej, h, "id %d is in the mask, but its uncached variant %s serves %s",
				   h->id, h->uncached ? h->uncached->name : "?",
				   "requests without ION_FLAG_CACHED");
		else
			r = reject(rej, h, "id %d is not in the mask %#x", h->id, req->heap_mask);
		if (r < 0)
			return r;
	}
	return (int)n;
}

int ion_solve(const struct ion_registry *reg, const struct ion_request *req,
	      const struct ion_heap **heaps, int *ret_error,
	      struct ion_rejections *rej)
{
	const struct ion_heap *named = NULL;
	unsigned int n = 0;
	int r = 0;

	if (req->heap_name) {
		named = named_heap(reg, req->heap_name);
		if (!named) {
			*ret_error = -ENODEV;
			return 0;
		}
	}
	if (req->heap_mask && !named) {
		r = solve_mask(reg, req, heaps, rej);
		if (r == 0)
			*ret_error = -ENODEV;
		return r;
	}
	for (unsigned int i = 0; i < reg->n_heaps && r >= 0; i++) {
		const struct ion_heap *h = reg->heaps[i];

		if (named && h != named)
			r = reject(rej, h, "not the heap asked for (%s)", req->heap_name);
		else if (req->heap_mask && (h->id < 0 || !(req->heap_mask & (1U << h->id))))
			r = reject(rej, h, "not in the id mask %#x", req->heap_mask);
		else if (h->error)
			r = reject(rej, h, "unavailable: %s", h->reason ? h->reason : strerror(-h->error));
		else
			heaps[n++] = h;
	}
	if (r < 0)
		return r;
	sort_candidates(heaps, n);
	if (n == 0)
		*ret_error = named && named->error ? named->error : -ENODEV;
	return (int)n;
}
