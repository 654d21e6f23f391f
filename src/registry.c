// SPDX-License-Identifier: MIT
/*
 * The heaps every backend found: names, ids, properties, availability.
 * Discovery runs once per context, on first use; after it the registry
 * is immutable, so readers need no lock.
 */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "internal.h"

static const struct ion_backend *const backends[] = {
	&ion_backend_dmaheap,
	&ion_backend_ion,
	&ion_backend_udmabuf,
	&ion_backend_gem,
	&ion_backend_memfd,
};

static bool name_taken(struct ion_ctx *ctx, const char *name)
{
	return ion_registry_find(ctx, name) != NULL;
}

struct ion_heap *ion_registry_add(struct ion_ctx *ctx,
				  const struct ion_backend *backend,
				  const char *name, const char *kernel_name)
{
	struct ion_heap **heaps, *heap;

	heap = calloc(1, sizeof(*heap));
	if (!heap)
		return NULL;
	heap->name = strdup(name);
	heap->kernel_name = strdup(kernel_name ? kernel_name : name);
	for (unsigned int n = 2; heap->name && name_taken(ctx, heap->name); n++) {
		free(heap->name);
		if (asprintf(&heap->name, "%s-%u", name, n) < 0)
			heap->name = NULL;
	}
	heaps = realloc(ctx->heaps, (ctx->n_heaps + 1) * sizeof(*heaps));
	if (!heap->name || !heap->kernel_name || !heaps) {
		free(heap->name);
		free(heap->kernel_name);
		free(heap);
		if (heaps)
			ctx->heaps = heaps;
		return NULL;
	}
	heap->backend = backend;
	heap->id = -1;
	heap->dev_fd = -1;
	ctx->heaps = heaps;
	ctx->heaps[ctx->n_heaps++] = heap;
	return heap;
}

void ion_heap_set_unavailable(struct ion_heap *heap, int error,
			      const char *format, ...)
{
	va_list args;

	heap->error = error < 0 ? error : -EIO;
	free(heap->reason);
	va_start(args, format);
	if (vasprintf(&heap->reason, format, args) < 0)
		heap->reason = NULL;
	va_end(args);
}

struct ion_heap *ion_registry_find_memory(struct ion_ctx *ctx, const char *key)
{
	for (unsigned int i = 0; i < ctx->n_heaps; i++) {
		struct ion_heap *h = ctx->heaps[i];

		if (!h->error && h->memory_key && strcmp(h->memory_key, key) == 0)
			return h;
	}
	return NULL;
}

struct ion_heap *ion_registry_find(struct ion_ctx *ctx, const char *name)
{
	for (unsigned int i = 0; i < ctx->n_heaps; i++)
		if (strcmp(ctx->heaps[i]->name, name) == 0)
			return ctx->heaps[i];
	return NULL;
}

/*
 * The first available heap of each ION type (backends probe in order of
 * preference) takes the type's id, so Android masks keep their meaning;
 * the rest get ids from ION_EXTRA_ID_FIRST up, while they last.
 */
static void assign_ids(struct ion_ctx *ctx)
{
	unsigned int next_extra = ION_EXTRA_ID_FIRST;

	for (unsigned int i = 0; i < ctx->n_heaps; i++) {
		struct ion_heap *h = ctx->heaps[i];

		if (h->error)
			continue;
		if (h->type < ION_HEAP_TYPE_CUSTOM && !ctx->by_id[h->type] &&
		    !(h->props & ION_HEAP_PROP_UNCACHED && !(h->props & ION_HEAP_PROP_CACHED)))
			h->id = (int)h->type;
		else if (next_extra < ION_MAX_IDS)
			h->id = (int)next_extra++;
		if (h->id >= 0)
			ctx->by_id[h->id] = h;
	}
}

int ion_registry_discover(struct ion_ctx *ctx)
{
	int r = 0;

	pthread_mutex_lock(&ctx->discover_lock);
	if (atomic_load_explicit(&ctx->discovered, memory_order_relaxed))
		goto out;
	for (size_t i = 0; i < sizeof(backends) / sizeof(backends[0]); i++) {
		r = backends[i]->probe(ctx);
		if (r < 0) {
			ion_registry_clear(ctx);
			goto out;
		}
	}
	assign_ids(ctx);
	for (unsigned int i = 0; i < ctx->n_heaps; i++) {
		const struct ion_heap *h = ctx->heaps[i];

		ion_dbg(ctx, "heap %s (%s, %s): id %d%s%s", h->name,
			h->backend->name, h->node ? h->node : "no node", h->id,
			h->error ? ", unavailable: " : "",
			h->error ? (h->reason ? h->reason : strerror(-h->error)) : "");
	}
	atomic_store_explicit(&ctx->discovered, true, memory_order_release);
out:
	pthread_mutex_unlock(&ctx->discover_lock);
	return r;
}

void ion_registry_clear(struct ion_ctx *ctx)
{
	for (unsigned int i = 0; i < ctx->n_heaps; i++) {
		struct ion_heap *h = ctx->heaps[i];

		if (h->backend->destroy)
			h->backend->destroy(h);
		if (h->dev_fd >= 0)
			close(h->dev_fd);
		free(h->name);
		free(h->kernel_name);
		free(h->node);
		free(h->reason);
		free(h->memory_key);
		free(h);
	}
	free(ctx->heaps);
	ctx->heaps = NULL;
	ctx->n_heaps = 0;
	memset(ctx->by_id, 0, sizeof(ctx->by_id));
}

/* ---- the public view of heaps ---- */

ION_EXPORT int ion_ctx_get_heap_count(struct ion_ctx *ctx)
{
	int r;

	if (!ctx)
		return -EINVAL;
	r = ion_ctx_ensure_discovered(ctx);
	return r < 0 ? r : (int)ctx->n_heaps;
}

ION_EXPORT int ion_ctx_get_heap(struct ion_ctx *ctx, unsigned int index,
				const struct ion_heap **ret_heap)
{
	int r;

	if (!ctx || !ret_heap)
		return -EINVAL;
	r = ion_ctx_ensure_discovered(ctx);
	if (r < 0)
		return r;
	if (index >= ctx->n_heaps)
		return -ENOENT;
	*ret_heap = ctx->heaps[index];
	return 0;
}

/* The CMA heap's name depends on the kernel and the device tree. */
static const char *const cma_names[] = {
	"linux,cma", "reserved", "default-pool", "default_cma_region",
};

ION_EXPORT int ion_ctx_find_heap(struct ion_ctx *ctx, const char *name,
				 const struct ion_heap **ret_heap)
{
	struct ion_heap *h;
	int r;

	if (!ctx || !name || !ret_heap)
		return -EINVAL;
	r = ion_ctx_ensure_discovered(ctx);
	if (r < 0)
		return r;
	h = ion_registry_find(ctx, name);
	if (!h && strcmp(name, "cma") == 0)
		for (size_t i = 0; !h && i < sizeof(cma_names) / sizeof(cma_names[0]); i++)
			h = ion_registry_find(ctx, cma_names[i]);
	if (!h)
		return -ENOENT;
	*ret_heap = h;
	return 0;
}

bool ion_is_cma_name(const char *name)
{
	for (size_t i = 0; i < sizeof(cma_names) / sizeof(cma_names[0]); i++)
		if (strcmp(name, cma_names[i]) == 0)
			return true;
	return false;
}

ION_EXPORT const char *ion_heap_get_name(const struct ion_heap *heap)
{
	return heap ? heap->name : NULL;
}

ION_EXPORT const char *ion_heap_get_kernel_name(const struct ion_heap *heap)
{
	return heap ? heap->kernel_name : NULL;
}

ION_EXPORT int ion_heap_get_id(const struct ion_heap *heap)
{
	return heap ? heap->id : -1;
}

ION_EXPORT unsigned int ion_heap_get_type(const struct ion_heap *heap)
{
	return heap ? heap->type : 0;
}

ION_EXPORT const char *ion_heap_get_backend(const struct ion_heap *heap)
{
	return heap ? heap->backend->name : NULL;
}

ION_EXPORT const char *ion_heap_get_node(const struct ion_heap *heap)
{
	return heap ? heap->node : NULL;
}

ION_EXPORT unsigned int ion_heap_get_properties(const struct ion_heap *heap)
{
	return heap ? heap->props : 0;
}

ION_EXPORT int ion_heap_get_error(const struct ion_heap *heap)
{
	return heap ? heap->error : -EINVAL;
}

ION_EXPORT const char *ion_heap_get_reason(const struct ion_heap *heap)
{
	if (!heap || !heap->error)
		return NULL;
	return heap->reason ? heap->reason : strerror(-heap->error);
}
