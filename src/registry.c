// SPDX-License-Identifier: MIT
/*
 * The registry: the frozen result of discovery (discover.c) and what reads
 * it.  Backends add heaps to it while they probe; once published it is
 * immutable, refcounted, and read without locks, and it is freed with its
 * last holder.  Lookups by name and id, and the public heap getters.
 */
#include <dirent.h>
#include <sched.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include <ion/ion.h>

#include "backends/backend.h"
#include "config.h"
#include "device.h"
#include "registry.h"
#include "sysfs.h"

struct ion_heap *ion_registry_add(struct ion_registry *reg,
				  const struct ion_backend *backend,
				  const char *kernel_name, size_t size)
{
	struct ion_heap **heaps, *heap;

	heap = calloc(1, size);
	if (!heap)
		return NULL;
	heap->name = strdup(kernel_name);
	heap->kernel_name = strdup(kernel_name);
	heaps = realloc(reg->heaps, (reg->n_heaps + 1) * sizeof(*heaps));
	if (heaps)
		reg->heaps = heaps;
	if (!heap->name || !heap->kernel_name || !heaps) {
		free(heap->name);
		free(heap->kernel_name);
		free(heap);
		return NULL;
	}
	heap->backend = backend;
	heap->id = -1;
	heap->index = reg->n_heaps;
	reg->heaps[reg->n_heaps++] = heap;
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

int ion_heap_open_node(struct ion_ctx *ctx, struct ion_heap *heap, int flags,
		       const char *subsystem, const char *name, int *ret_fd)
{
	const char *why = NULL;
	int fd = ion_open_device_node(ion_ctx_sysroot(ctx), heap->node, flags, subsystem, name, &why);

	*ret_fd = fd < 0 ? -1 : fd;
	if (fd >= 0)
		return 0;
	if (ion_errno_transient(fd))
		return fd;
	if (why) {
		ion_heap_set_unavailable(heap, fd, "%s %s (wanted: %s%s%s)", heap->node, why,
					 subsystem, name ? " " : "", name ? name : "");
	} else if (fd == -EACCES || fd == -EPERM) {
		_cleanup_free_ char *hint = ion_access_hint(heap->node);

		ion_heap_set_unavailable(heap, fd, "open %s: %s%s%s", heap->node, strerror(-fd),
					 hint ? ": " : "", hint ? hint : "");
	} else {
		ion_heap_set_unavailable(heap, fd, "open %s: %s", heap->node, strerror(-fd));
	}
	return 0;
}

const struct ion_heap *ion_registry_find(const struct ion_registry *reg,
					 const char *name)
{
	for (unsigned int i = 0; i < reg->n_heaps; i++) {
		const struct ion_heap *h = reg->heaps[i];

		if (strcmp(h->name, name) == 0)
			return h;
		for (char **a = h->aliases; a && *a; a++)
			if (strcmp(*a, name) == 0)
				return h;
	}
	return NULL;
}

/* The CMA heap's name depends on the kernel and the device tree. */
static const char *const cma_names[] = {
	"linux,cma", "reserved", "default-pool", "default_cma_region", "cma",
};

bool ion_is_cma_name(const char *name)
{
	for (size_t i = 0; i < sizeof(cma_names) / sizeof(cma_names[0]); i++)
		if (strcmp(name, cma_names[i]) == 0)
			return true;
	return false;
}

char *ion_cma_memory_key(const char *name)
{
	char *key;

	if (ion_is_cma_name(name))
		return strdup("cma:default");
	return asprintf(&key, "cma:%s", name) < 0 ? NULL : key;
}

const struct ion_heap *ion_registry_find_named(const struct ion_registry *reg,
					       const char *name)
{
	const struct ion_heap *h = ion_registry_find(reg, name);

	for (unsigned int i = 0; !h && strcmp(name, "cma") == 0 && i < reg->n_heaps; i++)
		if (ion_is_cma_name(reg->heaps[i]->kernel_name))
			h = reg->heaps[i];
	return h;
}

static void heap_free(struct ion_heap *h)
{
	if (h->backend->destroy)
		h->backend->destroy(h);
	free(h->name);
	free(h->kernel_name);
	ion_strv_free(h->aliases);
	ion_strv_free(h->merged);
	free(h->node);
	free(h->reason);
	free(h->memory_key);
	free(h->max_len_why);
	free(h->sysfs_device);
	free(h->pool_hints);
	ion_attrs_clear(&h->attrs);
	free(h);
}

static void registry_free(struct ion_registry *reg)
{
	int state;

	/* Whoever drops the last reference: a heap pool's end may wait. */
	pthread_setcancelstate(PTHREAD_CANCEL_DISABLE, &state);
	for (unsigned int i = 0; i < reg->n_devices; i++)
		ion_device_release(reg->devices[i]);
	free(reg->devices);
	/* The heap pools before their heaps, as they allocate from them. */
	ion_heap_pools_free(reg->heap_pools);
	for (unsigned int i = 0; i < reg->n_heaps; i++)
		heap_free(reg->heaps[i]);
	free(reg->heaps);
	ion_conf_free(reg->conf);
	free(reg->root);
	ion_board_facts_clear(&reg->board);
	ion_attrs_clear(&reg->boards);
	free(reg);
	pthread_setcancelstate(state, NULL);
}

struct ion_registry *ion_registry_ref(struct ion_registry *reg)
{
	atomic_fetch_add_explicit(&reg->refcount, 1, memory_order_relaxed);
	return reg;
}

void ion_registry_unref(struct ion_registry *reg)
{
	if (reg && atomic_fetch_sub_explicit(&reg->refcount, 1, memory_order_acq_rel) == 1)
		registry_free(reg);
}

void ion_registry_remove_heap(struct ion_registry *reg, unsigned int i)
{
	heap_free(reg->heaps[i]);
	memmove(&reg->heaps[i], &reg->heaps[i + 1],
		(reg->n_heaps - i - 1) * sizeof(reg->heaps[0]));
	reg->n_heaps--;
}

/*
 * Taking a reference to the context's registry races with a rescan that
 * replaces it and drops the context's reference: the reader may load the
 * old pointer just before, and count on it just after, the registry is
 * freed.  So every reader counts itself in this window (one for the whole
 * library: it is a few instructions long and never blocks), and a rescan
 * waits until the window is empty before it lets the old registry go.
 */
static atomic_uint readers;

struct ion_registry *ion_registry_current(struct ion_ctx *ctx)
{
	struct ion_registry *reg;

	atomic_fetch_add(&readers, 1);
	reg = atomic_load(ion_ctx_registry_slot(ctx));
	if (reg)
		ion_registry_ref(reg);
	atomic_fetch_sub_explicit(&readers, 1, memory_order_release);
	return reg;
}

void ion_registry_retire(struct ion_registry *old)
{
	while (atomic_load_explicit(&readers, memory_order_acquire))
		sched_yield();
	ion_registry_unref(old);
}

void ion_registry_fork_child(void)
{
	atomic_store_explicit(&readers, 0, memory_order_relaxed);
}

/* ---- the public view of heaps ---- */

ION_EXPORT int ion_ctx_get_heap_count(struct ion_ctx *ctx)
{
	_cleanup_registry_ struct ion_registry *reg = NULL;
	int r;

	if (!ctx)
		return -EINVAL;
	r = ion_ctx_registry(ctx, &reg);
	return r < 0 ? r : (int)reg->n_heaps;
}

ION_EXPORT int ion_ctx_get_heap(struct ion_ctx *ctx, unsigned int index,
				const struct ion_heap **ret_heap)
{
	_cleanup_registry_ struct ion_registry *reg = NULL;
	int r;

	if (!ctx || !ret_heap)
		return -EINVAL;
	r = ion_ctx_registry(ctx, &reg);
	if (r < 0)
		return r;
	if (index >= reg->n_heaps)
		return -ENOENT;
	*ret_heap = reg->heaps[index];
	return 0;
}

ION_EXPORT int ion_ctx_find_heap(struct ion_ctx *ctx, const char *name,
				 const struct ion_heap **ret_heap)
{
	_cleanup_registry_ struct ion_registry *reg = NULL;
	const struct ion_heap *h;
	int r;

	if (!ctx || !name || !ret_heap)
		return -EINVAL;
	r = ion_ctx_registry(ctx, &reg);
	if (r < 0)
		return r;
	h = ion_registry_find_named(reg, name);
	if (!h)
		return -ENOENT;
	*ret_heap = h;
	return 0;
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

ION_EXPORT unsigned int ion_heap_get_address_bits(const struct ion_heap *heap)
{
	return heap ? heap->address_bits : 0;
}

ION_EXPORT int ion_heap_get_attribute_count(const struct ion_heap *heap)
{
	return heap ? (int)heap->attrs.n : -EINVAL;
}

ION_EXPORT int ion_heap_get_attribute(const struct ion_heap *heap, unsigned int index,
				      const char **ret_key, const char **ret_value,
				      const char **ret_source)
{
	return ion_attrs_get(heap ? &heap->attrs : NULL, index, ret_key, ret_value,
			     ret_source);
}

/* ---- what heaps.d gave ---- */

ION_EXPORT int ion_ctx_get_board_count(struct ion_ctx *ctx)
{
	_cleanup_registry_ struct ion_registry *reg = NULL;
	int r;

	if (!ctx)
		return -EINVAL;
	r = ion_ctx_registry(ctx, &reg);
	return r < 0 ? r : (int)reg->boards.n;
}

ION_EXPORT int ion_ctx_get_board(struct ion_ctx *ctx, unsigned int index,
				 const char **ret_name, const char **ret_source)
{
	_cleanup_registry_ struct ion_registry *reg = NULL;
	int r;

	if (!ctx || !ret_name || !ret_source)
		return -EINVAL;
	r = ion_ctx_registry(ctx, &reg);
	if (r < 0)
		return r;
	if (index >= reg->boards.n)
		return -ENOENT;
	*ret_name = reg->boards.v[index].value;
	*ret_source = reg->boards.v[index].source;
	return 0;
}

ION_EXPORT int ion_ctx_get_config_file_count(struct ion_ctx *ctx)
{
	_cleanup_registry_ struct ion_registry *reg = NULL;
	int r;

	if (!ctx)
		return -EINVAL;
	r = ion_ctx_registry(ctx, &reg);
	return r < 0 ? r : (int)ion_conf_file_count(reg->conf);
}

ION_EXPORT const char *ion_ctx_get_config_file(struct ion_ctx *ctx, unsigned int index)
{
	_cleanup_registry_ struct ion_registry *reg = NULL;

	if (!ctx || ion_ctx_registry(ctx, &reg) < 0 || index >= ion_conf_file_count(reg->conf))
		return NULL;
	return ion_conf_file(reg->conf, index);
}

ION_EXPORT int ion_ctx_get_config_error(struct ion_ctx *ctx, unsigned int index,
				       const char **ret_file, unsigned int *ret_line,
				       const char **ret_message)
{
	_cleanup_registry_ struct ion_registry *reg = NULL;
	int r;

	if (!ctx || !ret_file || !ret_line || !ret_message)
		return -EINVAL;
	r = ion_ctx_registry(ctx, &reg);
	if (r < 0)
		return r;
	return ion_conf_error(reg->conf, index, ret_file, ret_line, ret_message);
}

ION_EXPORT int ion_ctx_get_config_error_count(struct ion_ctx *ctx)
{
	_cleanup_registry_ struct ion_registry *reg = NULL;
	int r;

	if (!ctx)
		return -EINVAL;
	r = ion_ctx_registry(ctx, &reg);
	return r < 0 ? r : (int)ion_conf_error_count(reg->conf);
}
