/* SPDX-License-Identifier: MIT */
/* What the library's files share: the context, the registry, logging. */
#ifndef LIBION_INTERNAL_H
#define LIBION_INTERNAL_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <syslog.h>

#include <ion/ion.h>

#include "util.h"

#define ION_EXPORT __attribute__((visibility("default")))

/* Compat ids 0..ION_HEAP_TYPE_CUSTOM-1 follow the ION type convention;
 * heaps beyond the best of each type get ids from here up. */
#define ION_EXTRA_ID_FIRST 16
#define ION_MAX_IDS 32

struct ion_backend;

struct ion_heap {
	char *name;		/* what users ask for */
	char *kernel_name;	/* what the kernel calls it */
	char *node;		/* device node, or NULL */
	char *reason;		/* why unavailable, or NULL */
	char *memory_key;	/* same key = same memory from another provider */
	const struct ion_backend *backend;
	unsigned int type;	/* enum ion_heap_type */
	unsigned int props;	/* ION_HEAP_PROP_* */
	int id;			/* compat id, or -1 */
	int error;		/* 0, or the negative errno that stops it */
	int dev_fd;		/* the node, open O_CLOEXEC (mode per backend), or -1 */
	uint32_t kernel_id;	/* the kernel's own id (ION), else 0 */
	struct ion_heap *uncached_twin; /* serves masks without ION_FLAG_CACHED */
	void *priv;		/* the backend's */
};

struct ion_ctx {
	atomic_int refcount;
	char *sysroot;		/* "" for "/" */
	ion_log_fn log_fn;
	int log_priority;
	void *userdata;

	pthread_mutex_t discover_lock;
	atomic_bool discovered;
	struct ion_heap **heaps;
	unsigned int n_heaps;
	struct ion_heap *by_id[ION_MAX_IDS];
	bool legacy_ion;	/* /dev/ion speaks the pre-4.12 ABI */
};

/* ---- backends (backend.h has the ops table) ---- */
#include "backend.h"

/* ---- context.c ---- */
void ion_log(struct ion_ctx *ctx, int priority, const char *file, int line,
	     const char *fn, const char *format, ...)
	__attribute__((format(printf, 6, 7)));

#define ion_log_cond(ctx, prio, ...)                                           \
	do {                                                                   \
		if ((ctx)->log_priority >= (prio))                             \
			ion_log(ctx, prio, __FILE__, __LINE__, __func__,       \
				__VA_ARGS__);                                  \
	} while (0)

#define ion_dbg(ctx, ...) ion_log_cond(ctx, LOG_DEBUG, __VA_ARGS__)
#define ion_info(ctx, ...) ion_log_cond(ctx, LOG_INFO, __VA_ARGS__)
#define ion_err(ctx, ...) ion_log_cond(ctx, LOG_ERR, __VA_ARGS__)

/* sysroot + path, malloc'ed; NULL on ENOMEM. */
char *ion_ctx_path(const struct ion_ctx *ctx, const char *path);

/* ---- registry.c ---- */
/* Runs every backend's probe once; 0 or a negative errno (ENOMEM only). */
int ion_registry_discover(struct ion_ctx *ctx);
static inline int ion_ctx_ensure_discovered(struct ion_ctx *ctx)
{
	if (atomic_load_explicit(&ctx->discovered, memory_order_acquire))
		return 0;
	return ion_registry_discover(ctx);
}
/*
 * Adds a heap found by a backend; name and kernel_name are copied.  Returns
 * the heap to fill in (props, type, node, dev_fd, ...), NULL on ENOMEM.
 * The registry owns it from here: ion_backend.destroy() runs on it at the
 * end.  A name already taken gets a "-N" suffix.
 */
struct ion_heap *ion_registry_add(struct ion_ctx *ctx,
				  const struct ion_backend *backend,
				  const char *name, const char *kernel_name);
/* Marks a heap unavailable: error is a negative errno. */
void ion_heap_set_unavailable(struct ion_heap *heap, int error,
			      const char *format, ...)
	__attribute__((format(printf, 3, 4)));
/* The available heap with this memory key, or NULL. */
struct ion_heap *ion_registry_find_memory(struct ion_ctx *ctx, const char *key);
struct ion_heap *ion_registry_find(struct ion_ctx *ctx, const char *name);
void ion_registry_clear(struct ion_ctx *ctx);
/* "linux,cma", "reserved", ...: the names kernels give the CMA heap. */
bool ion_is_cma_name(const char *name);

/* Rounds len up to whole pages; -EINVAL for 0 or overflow. */
int ion_round_len(size_t len, size_t *ret_len);


/* ---- backend-ion.c ---- */
/*
 * A legacy ION_IOC_ALLOC in the layout of a user_bits-bit process (32 or
 * 64), returning the kernel's handle.  The library uses the native layout;
 * the unit test drives both.
 */
int ion_legacy_alloc_handle(int dev_fd, unsigned int user_bits, size_t len,
			    uint32_t heap_mask, unsigned int flags,
			    int *ret_handle);

/* ---- sync.c ---- */
/* Makes CPU writes visible to devices, whatever made the buffer. */
int ion_ctx_sync_for_device(struct ion_ctx *ctx, int buf_fd);

#endif
