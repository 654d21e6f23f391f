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
#include "util.h"

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

__attribute__((format(printf, 4, 5)))
static int reject(struct ion_rejections *rej, const struct ion_heap *heap,
		  const struct ion_constraint *by, const char *format, ...)
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
	rej->v[rej->n].by = by;
	rej->v[rej->n++].reason = reason;
	return 0;
}

static bool too_long(const struct ion_heap *h, const struct ion_request *req)
{
	return req->len > h->max_len;
}

static bool wants_cached(const struct ion_request *req)
{
	return req->flags & (ION_FLAG_CACHED | ION_FLAG_CACHED_NEEDS_SYNC);
}

/*
 * The order of the survivors: the board's preference first; then, for a
 * device that is not DMA-coherent, uncached memory; then sparing scarce
 * memory: scattered pages before a contiguous (CMA) heap; then
 * discovery's order, which is the order of preference between backends.
 */
static bool better(const struct ion_heap *a, const struct ion_heap *b,
		   bool prefer_uncached)
{
	bool ca = a->props & ION_HEAP_PROP_CONTIGUOUS;
	bool cb = b->props & ION_HEAP_PROP_CONTIGUOUS;

	if (a->preference != b->preference)
		return a->preference > b->preference;
	if (prefer_uncached) {
		bool ua = !(a->props & ION_HEAP_PROP_CACHED);
		bool ub = !(b->props & ION_HEAP_PROP_CACHED);

		if (ua != ub)
			return ua;
	}
	if (ca != cb)
		return cb;
	return a->index < b->index;
}

static void sort_candidates(const struct ion_heap **heaps, unsigned int n,
			    bool prefer_uncached)
{
	/* Insertion sort: a handful of heaps, and it is stable. */
	for (unsigned int i = 1; i < n; i++) {
		const struct ion_heap *h = heaps[i];
		unsigned int j = i;

		for (; j > 0 && better(h, heaps[j - 1], prefer_uncached); j--)
			heaps[j] = heaps[j - 1];
		heaps[j] = h;
	}
}

/* Where c's key was set, as "file:line" (or the source alone). */
static const char *src_text(const struct ion_constraint *c, enum ion_conf_key key,
			    char *buf, size_t size)
{
	struct ion_conf_src src = { 0 };

	ion_props_get_src(&c->props, key, &src);
	if (!src.file)
		return "?";
	if (!src.line)
		return src.file;
	snprintf(buf, size, "%s:%u", src.file, src.line);
	return buf;
}

/* " (what says so)" after a heap's largest length, or nothing. */
#define MAX_WHY(h) (h)->max_len_why ? " (" : "", (h)->max_len_why ? (h)->max_len_why : "", \
		   (h)->max_len_why ? ")" : ""

/* A rejection's verdict: 1 (out), or -ENOMEM from recording why. */
#define OUT(...) ({ int _r = reject(__VA_ARGS__); _r < 0 ? _r : 1; })
#define WHERE(key) src_text(c, key, where, sizeof(where))

static void view_of(const struct ion_heap *h, struct ion_heap_view *ret)
{
	*ret = (struct ion_heap_view){
		.name = h->name,
		.kernel_name = h->kernel_name,
		.aliases = h->aliases,
		.contiguous = h->props & ION_HEAP_PROP_CONTIGUOUS,
		.cached = h->props & ION_HEAP_PROP_CACHED,
		.uncached = h->props & ION_HEAP_PROP_UNCACHED,
		.kernel_map = h->props & ION_HEAP_PROP_KERNEL_MAP,
		.default_cma = ion_is_cma_name(h->kernel_name),
		.address_bits = h->address_bits,
		.alignment = h->alignment,
	};
}

/*
 * Whether heap h (seen as view) fits one device's constraint: 0 when it
 * does, 1 when it does not (with the reason given to rej), or -ENOMEM.
 * The words are the vocabulary's; the solver adds the key and where it
 * was set.
 */
static int check_constraint(const struct ion_heap *h, const struct ion_heap_view *view,
			    const struct ion_constraint *c, struct ion_rejections *rej)
{
	const struct ion_fit_who who = { c->device, c->own_heap };
	_cleanup_free_ char *reason = NULL;
	enum ion_conf_key key;
	char where[512];
	int r;

	/* A DRM device's own dumb buffers always fit it. */
	if (c->own_heap && strcmp(c->own_heap, h->name) == 0)
		return 0;
	if (h->props & ION_HEAP_PROP_CPU_ONLY)
		return OUT(rej, h, c, "%s cannot import it: a memfd is no dma-buf", c->device);
	r = ion_props_fit(&c->props, view, &who, &key, rej ? &reason : NULL);
	if (r <= 0)
		return r;
	return OUT(rej, h, c, "%s (%s, %s)", reason, ion_conf_key_name(key), WHERE(key));
}

/* Whether heap h fits every device's constraint: 0 when it does, 1 when
 * one does not (each refusal given to rej), or -ENOMEM. */
static int check_constraints(const struct ion_heap *h, const struct ion_request *req,
			     struct ion_rejections *rej)
{
	struct ion_heap_view view;
	bool out = false;

	if (!req->n_constraints)
		return 0;
	view_of(h, &view);
	/* Every device's verdict, so that an explanation names each device
	 * that excludes the heap. */
	for (size_t k = 0; k < req->n_constraints; k++) {
		int r = check_constraint(h, &view, req->constraints[k], rej);

		if (r < 0)
			return r;
		out |= r > 0;
	}
	return out;
}

/* Whether the request itself rules h out: 0, 1 (said to rej) or -ENOMEM. */
static int check_request(const struct ion_heap *h, const struct ion_request *req,
			 const struct ion_heap *named, struct ion_rejections *rej)
{
	if (named && h != named)
		return OUT(rej, h, NULL, "not the heap asked for (%s)", req->heap_name);
	if (req->heap_mask && (h->id < 0 || !(req->heap_mask & (1U << h->id))))
		return OUT(rej, h, NULL, "not in the id mask %#x", req->heap_mask);
	if (h->error)
		return OUT(rej, h, NULL, "unavailable: %s",
			   h->reason ? h->reason : strerror(-h->error));
	if (too_long(h, req))
		return OUT(rej, h, NULL, "%s can never give %zu bytes: at most %llu%s%s%s", h->name,
			   req->len, (unsigned long long)h->max_len, MAX_WHY(h));
	if (named)
		return 0; /* the caller chose it: what it is does not matter */
	if ((h->props & ION_HEAP_PROP_PROTECTED) && !req->no_cpu_access)
		return OUT(rej, h, NULL, "protected: the CPU cannot map its buffers");
	if (wants_cached(req) && !(h->props & ION_HEAP_PROP_CACHED))
		return OUT(rej, h, NULL, "the request asks for cached CPU mappings, and %s maps uncached",
			   h->name);
	return 0;
}

/* A request by id mask: ION's order, highest id first.  *ret_long counts
 * the heaps in the mask that can never give so much. */
static int solve_mask(const struct ion_registry *reg, const struct ion_request *req,
		      const struct ion_heap **heaps, unsigned int *ret_long,
		      struct ion_rejections *rej)
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
		if (too_long(h, req))
			(*ret_long)++;
		else
			heaps[n++] = h;
	}
	for (unsigned int i = 0; rej && i < reg->n_heaps; i++) {
		const struct ion_heap *h = reg->heaps[i];
		bool chosen = false;

		for (unsigned int k = 0; k < n && !chosen; k++)
			chosen = heaps[k] == h;
		if (chosen)
			continue;
		if (!h->error && h->id >= 0 && (req->heap_mask & (1U << h->id)) && too_long(h, req))
			r = reject(rej, h, NULL, "%s can never give %zu bytes: at most %llu%s%s%s",
				   h->name, req->len, (unsigned long long)h->max_len, MAX_WHY(h));
		else if (h->error)
			r = reject(rej, h, NULL, "unavailable: %s", h->reason ? h->reason : strerror(-h->error));
		else if (h->id < 0)
			r = reject(rej, h, NULL, "has no Android id: no mask reaches it");
		else if (req->heap_mask & (1U << h->id))
			r = reject(rej, h, NULL, "id %d is in the mask, but its uncached variant %s serves %s",
				   h->id, h->uncached ? h->uncached->name : "?",
				   "requests without ION_FLAG_CACHED");
		else
			r = reject(rej, h, NULL, "id %d is not in the mask %#x", h->id, req->heap_mask);
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
	bool prefer_uncached = false;
	unsigned int n = 0, n_long = 0;

	if (req->heap_name) {
		named = ion_registry_find_named(reg, req->heap_name);
		if (!named) {
			for (unsigned int i = 0; i < reg->n_heaps; i++)
				if (reject(rej, reg->heaps[i], NULL,
					   "not the heap asked for: no heap is called %s",
					   req->heap_name) < 0)
					return -ENOMEM;
			*ret_error = -ENODEV;
			return 0;
		}
	}
	if (req->heap_mask && !named) {
		/* ION's order and the uncached variants first, then what the
		 * devices say of each, in that order. */
		int r = solve_mask(reg, req, heaps, &n_long, rej);

		for (int i = 0; i < r; i++) {
			int rc = check_constraints(heaps[i], req, rej);

			if (rc < 0)
				return rc;
			if (rc == 0)
				heaps[n++] = heaps[i];
		}
		if (r < 0)
			return r;
		if (n == 0)
			*ret_error = n_long ? -ENOMEM : -ENODEV;
		return (int)n;
	}
	for (size_t k = 0; k < req->n_constraints; k++)
		prefer_uncached |= req->constraints[k]->prefer_uncached;
	for (unsigned int i = 0; i < reg->n_heaps; i++) {
		const struct ion_heap *h = reg->heaps[i];
		int r = check_request(h, req, named, rej);

		/* The devices judge only a heap the request allows. */
		if (r == 0)
			r = check_constraints(h, req, rej);
		if (r < 0)
			return r;
		if (r == 0)
			heaps[n++] = h;
		else if (!h->error && too_long(h, req))
			n_long++;
	}
	sort_candidates(heaps, n, prefer_uncached);
	if (n == 0)
		*ret_error = named && named->error ? named->error : n_long ? -ENOMEM : -ENODEV;
	return (int)n;
}
