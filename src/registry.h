/* SPDX-License-Identifier: MIT */
/*
 * The registry: every heap discovery found, frozen once discovery ends
 * (registry.c keeps it; discover.c builds it).  Backends add heaps while
 * they probe; discovery then merges them (one memory seen through two
 * providers or two names counts once), names them uniquely, links
 * uncached variants, gives them their Android ids, and freezes.  After
 * that nothing writes a heap or the registry, so readers need no lock.
 */
#ifndef LIBION_REGISTRY_H
#define LIBION_REGISTRY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "attrs.h"
#include "context.h"
#include "heaps-conf.h"

struct ion_backend;

/* Compat ids 0..ION_HEAP_TYPE_CUSTOM-1 follow the ION type convention;
 * heaps beyond the best of each type get ids from here up. */
#define ION_EXTRA_ID_FIRST 16
#define ION_MAX_IDS 32

/*
 * A heap as the public getters see it.  A backend embeds it as the first
 * member of its own struct (container_of) for what it needs to allocate:
 * its device fd, a kernel id.  Immutable once discovery ends.
 */
struct ion_heap {
	char *name;		/* unique in the registry: what users ask for */
	char *kernel_name;	/* what the kernel calls it */
	char **aliases;		/* other names that find it, NULL-terminated, or NULL */
	char **merged;		/* kernel names of the heaps merged into it, or NULL */
	char *node;		/* device node, or NULL */
	char *reason;		/* why unavailable, or NULL */
	char *memory_key;	/* same key = same memory, or NULL: unique */
	const struct ion_backend *backend;
	unsigned int type;	/* enum ion_heap_type */
	unsigned int props;	/* ION_HEAP_PROP_* */
	int id;			/* compat id, or -1 */
	int error;		/* 0, or the negative errno that stops it */
	unsigned int index;	/* in the registry's list */
	/* The same memory with uncached CPU mappings (system-uncached for
	 * system): what an Android mask without ION_FLAG_CACHED gets. */
	const struct ion_heap *uncached;
	unsigned int address_bits; /* every address below 2^bits */
	uint64_t max_len;	/* the longest buffer it can ever give */
	char *max_len_why;	/* what says so ("MaxSize, FILE:LINE"), or NULL */
	size_t alignment;	/* of a buffer's start, at least a page */
	int preference;		/* the board's; higher first */
	/* The device the heap's memory belongs to (a GEM heap's DRM device),
	 * as a sysfs path without the sysroot, or NULL. */
	char *sysfs_device;
	struct ion_attrs attrs;	/* what the board files said, with file:line */
	/* The board's Pool hint: keep these buffers ready (pool-heap.c). */
	struct ion_pool_hint *pool_hints;
	size_t n_pool_hints;
};

struct ion_device;

struct ion_registry {
	/* The context's, while it is the current one, and one for each
	 * holder: a solution, a device a user holds, a call under way. */
	atomic_int refcount;
	struct ion_heap **heaps;
	unsigned int n_heaps;
	const struct ion_heap *by_id[ION_MAX_IDS]; /* the compat view */
	char *root;			/* the sysroot's real path, or NULL for "/" */
	struct ion_conf *conf;		/* what heaps.d says for this board */
	struct ion_board_facts board;
	struct ion_attrs boards;	/* the [Board] sections that matched */
	unsigned int ram_bits;		/* memory ends below 2^ram_bits */
	uint64_t mem_total, cma_total;	/* /proc/meminfo's, in bytes (0: unknown) */
	struct ion_device **devices;	/* the devices discovery read */
	unsigned int n_devices;
	/* The heaps' mutable side (pool.h): their pools and what the pools
	 * found out, by heap index, with atomics of its own.  Made before
	 * the registry is published, freed with it. */
	struct ion_heap_pools *heap_pools;
};

/* ---- for backends, while they probe ---- */

/*
 * Adds a heap found by backend: size bytes (at least sizeof(struct
 * ion_heap), the backend's struct with the heap first), zeroed, with
 * kernel_name copied as both names (the registry makes the name unique
 * later).  NULL on ENOMEM.  From here the registry owns it, and
 * ion_backend.destroy() runs on it before it is freed.
 */
struct ion_heap *ion_registry_add(struct ion_registry *reg,
				  const struct ion_backend *backend,
				  const char *kernel_name, size_t size);
/* Removes and frees heap i (discovery's merge: one memory counts once). */
void ion_registry_remove_heap(struct ion_registry *reg, unsigned int i);
/* Marks a heap unavailable: error is a negative errno. */
void ion_heap_set_unavailable(struct ion_heap *heap, int error,
			      const char *format, ...)
	__attribute__((format(printf, 3, 4)));

/*
 * Opens heap->node as ion_open_device_node() does.  0 with *ret_fd the fd,
 * or 0 with *ret_fd -1 and the heap marked unavailable with the reason;
 * a transient error (ion_errno_transient()) is returned instead, so that
 * discovery fails and runs again rather than remember the heap as broken.
 */
int ion_heap_open_node(struct ion_ctx *ctx, struct ion_heap *heap, int flags,
		       const char *subsystem, const char *name, int *ret_fd);

/* ---- for everyone, once frozen ---- */

/* By name or alias; NULL when none.  "cma" is not special here. */
const struct ion_heap *ion_registry_find(const struct ion_registry *reg,
					 const char *name);
/* The same, and "cma" for the CMA heap under whatever name the kernel
 * gave it: what a user's heap name means. */
const struct ion_heap *ion_registry_find_named(const struct ion_registry *reg,
					       const char *name);
/* "linux,cma", "reserved", ...: the names kernels give the CMA heap. */
bool ion_is_cma_name(const char *name);
/* The memory key of a CMA heap called name: every name of the default
 * area means one memory.  malloc'ed; NULL on ENOMEM. */
char *ion_cma_memory_key(const char *name);

/*
 * The registry's lifetime.  A rescan that finds another set replaces the
 * context's registry; the old one is freed, with its heaps, devices,
 * heap pools and node fds, once nothing holds it any more.
 *
 * ion_ctx_registry() (discover.c): the context's registry, discovered
 * on first use, borrowed for the length of one call: 0 with *ret a
 * reference, or discovery's negative errno (it runs again next time).
 * Cancellation is off until the matching ion_registry_put(), so that a
 * cancelled call never strands a reference.  Callers keep it in a
 * _cleanup_registry_ variable.
 */
int ion_ctx_registry(struct ion_ctx *ctx, struct ion_registry **ret);
void ion_registry_put(struct ion_registry *reg);
static inline void ion_registry_putp(struct ion_registry **reg)
{
	if (*reg)
		ion_registry_put(*reg);
}
#define _cleanup_registry_ __attribute__((cleanup(ion_registry_putp)))

/* A reference that outlives the call (a solution's, a device's). */
struct ion_registry *ion_registry_ref(struct ion_registry *reg);
void ion_registry_unref(struct ion_registry *reg);

/*
 * (discover.c) With the context's lock held: discovery again, the
 * result replacing the registry when heaps or devices differ.  1 with
 * *ret_old the replaced registry, which the caller hands to
 * ion_registry_retire() once it has dropped the lock; 0 when nothing
 * changed; or discovery's negative errno.
 */
int ion_registry_rediscover(struct ion_ctx *ctx, struct ion_registry **ret_old);
/* The context's registry with a reference taken, or NULL before the
 * first discovery; safe against a rescan replacing it meanwhile. */
struct ion_registry *ion_registry_current(struct ion_ctx *ctx);
/* Drops the context's reference to a replaced registry, once no call
 * that may have just read the old pointer is still about to take one. */
void ion_registry_retire(struct ion_registry *old);
/* In a forked child (fork.c's atfork handler): no call is under way. */
void ion_registry_fork_child(void);

#endif
