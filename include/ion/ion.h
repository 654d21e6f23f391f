/* SPDX-License-Identifier: MIT */
/*
 * libion: shareable buffers from whichever kernel allocator a machine has.
 *
 * Two APIs live here:
 *
 *  - Android libion's calls and constants, source-compatible with
 *    <ion/ion.h> from AOSP (ion_open(), ion_alloc_fd(), ...).  Unlike
 *    Android's, the handle calls work on every backend: handles live in
 *    the library, and a handle is a buffer fd the library holds for you.
 *
 *  - A context API (struct ion_ctx) for what Android's never had: heap
 *    enumeration with properties and availability, allocation by heap name
 *    or id mask with a report of which heap served, buffer names, and a
 *    log handler.  The Android calls are a thin layer over it.
 *
 * Every call that can fail returns 0 (or a count) on success and a negative
 * errno on failure, and leaves its out-parameters untouched on failure.
 * Every fd the library returns is close-on-exec.
 */
#ifndef LIBION_ION_H
#define LIBION_ION_H

#include <stdarg.h>
#include <stddef.h>
#include <sys/types.h>

#ifdef __cplusplus
extern "C" {
#endif

/* ------------------------------------------------------------------ */
/* Android compatibility: types and constants of <linux/ion.h>         */
/* ------------------------------------------------------------------ */

/*
 * Where the system has ION's uapi header (Android's kernel headers), take
 * its definitions and fill in only what it lacks, spelled as it spells
 * them, so that either include order compiles.
 */
#if defined(__has_include)
#if __has_include(<linux/ion.h>)
#include <linux/ion.h>
#endif
#if __has_include(<linux/ion_4.12.h>)
#include <linux/ion_4.12.h>
#endif
#endif

#ifndef _UAPI_LINUX_ION_H
enum ion_heap_type {
	ION_HEAP_TYPE_SYSTEM,
	ION_HEAP_TYPE_SYSTEM_CONTIG,
	ION_HEAP_TYPE_CARVEOUT,
	ION_HEAP_TYPE_CHUNK,
	ION_HEAP_TYPE_DMA,
	ION_HEAP_TYPE_CUSTOM,
	ION_NUM_HEAPS = 16
};
#endif

/* The handle ABI's header (it has ION_IOC_FREE) defines the handle type;
 * the 4.12+ one dropped it. */
#ifndef ION_IOC_FREE
typedef int ion_user_handle_t;
#endif

#ifndef ION_HEAP_SYSTEM_MASK
#define ION_HEAP_SYSTEM_MASK (1 << ION_HEAP_TYPE_SYSTEM)
#endif
#ifndef ION_HEAP_SYSTEM_CONTIG_MASK
#define ION_HEAP_SYSTEM_CONTIG_MASK (1 << ION_HEAP_TYPE_SYSTEM_CONTIG)
#endif
#ifndef ION_HEAP_CARVEOUT_MASK
#define ION_HEAP_CARVEOUT_MASK (1 << ION_HEAP_TYPE_CARVEOUT)
#endif
#ifndef ION_HEAP_TYPE_DMA_MASK
#define ION_HEAP_TYPE_DMA_MASK (1 << ION_HEAP_TYPE_DMA)
#endif
#ifndef ION_NUM_HEAP_IDS
#define ION_NUM_HEAP_IDS (sizeof(unsigned int) * 8)
#endif

/* Mappings of the buffer are CPU-cached. */
#ifndef ION_FLAG_CACHED
#define ION_FLAG_CACHED 1
#endif
/* Cached, and the caller promises explicit cache maintenance. */
#ifndef ION_FLAG_CACHED_NEEDS_SYNC
#define ION_FLAG_CACHED_NEEDS_SYNC 2
#endif

/* What ion_query_get_heaps() fills: the 4.12+ kernel's layout (also in
 * AOSP's <linux/ion_4.12.h>). */
#if !defined(ION_IOC_HEAP_QUERY) && !defined(_UAPI_LINUX_ION_NEW_H)
#ifndef MAX_HEAP_NAME
#define MAX_HEAP_NAME 32
#endif
struct ion_heap_data {
	char name[MAX_HEAP_NAME];
	unsigned int type;
	unsigned int heap_id;
	unsigned int reserved0;
	unsigned int reserved1;
	unsigned int reserved2;
};
#endif

/* ------------------------------------------------------------------ */
/* Android compatibility: the calls                                    */
/* ------------------------------------------------------------------ */

/*
 * Returns a new client fd (close-on-exec), or a negative errno.  Works on
 * every machine: the fd is /dev/ion where the caller may open it, an
 * anonymous file elsewhere.  Release it with ion_close().
 */
int ion_open(void);
int ion_close(int fd);

/* 1 when the kernel's ION speaks the pre-4.12 handle ABI, else 0. */
int ion_is_legacy(int fd);

/*
 * heap_mask holds heap ids as ion_query_get_heaps() reports them; the ids
 * follow the ION type convention (ION_HEAP_SYSTEM_MASK reaches the system
 * heap, ION_HEAP_TYPE_DMA_MASK the CMA heap).  The heaps in the mask are
 * tried from the highest id down, like the kernel's ION.  align is
 * accepted and ignored, like the 4.12+ kernel does.
 */
int ion_alloc(int fd, size_t len, size_t align, unsigned int heap_mask,
	      unsigned int flags, ion_user_handle_t *handle);
int ion_alloc_fd(int fd, size_t len, size_t align, unsigned int heap_mask,
		 unsigned int flags, int *handle_fd);
int ion_free(int fd, ion_user_handle_t handle);
int ion_map(int fd, ion_user_handle_t handle, size_t length, int prot,
	    int flags, off_t offset, unsigned char **ptr, int *map_fd);
int ion_share(int fd, ion_user_handle_t handle, int *share_fd);
int ion_import(int fd, int share_fd, ion_user_handle_t *handle);

/*
 * Makes the CPU's writes to buffer handle_fd visible to devices: a full
 * CPU-access bracket (start and end, read and write) on a dma-buf,
 * ION_IOC_SYNC on a buffer of the legacy ION ABI, nothing on a memfd
 * buffer (it has no device).
 */
int ion_sync_fd(int fd, int handle_fd);

int ion_query_heap_cnt(int fd, int *cnt);
/* buffers points to cnt struct ion_heap_data. */
int ion_query_get_heaps(int fd, int cnt, void *buffers);

/* ------------------------------------------------------------------ */
/* CPU access brackets                                                 */
/* ------------------------------------------------------------------ */

#define ION_SYNC_READ (1U << 0)
#define ION_SYNC_WRITE (1U << 1)
#define ION_SYNC_RW (ION_SYNC_READ | ION_SYNC_WRITE)
#define ION_SYNC_START (1U << 4)
#define ION_SYNC_END (1U << 5)

/*
 * Brackets CPU access to a mapped buffer: ION_SYNC_START before touching
 * it, ION_SYNC_END after, each with READ and/or WRITE.  Exactly one of
 * START and END, at least one of READ and WRITE, nothing else, or -EINVAL.
 * DMA_BUF_IOCTL_SYNC on a dma-buf (retried on EINTR and EAGAIN); a no-op
 * that succeeds on a memfd; -ENOTTY on any other fd.
 */
int ion_sync(int buf_fd, unsigned int flags);

/* ------------------------------------------------------------------ */
/* The context API                                                     */
/* ------------------------------------------------------------------ */

struct ion_ctx;
struct ion_heap;

/* Heap properties, a bit set (ion_heap_get_properties()). */
#define ION_HEAP_PROP_CONTIGUOUS (1U << 0) /* physically contiguous */
#define ION_HEAP_PROP_CACHED (1U << 1)     /* CPU mappings can be cached */
#define ION_HEAP_PROP_UNCACHED (1U << 2)   /* CPU mappings can be uncached */
#define ION_HEAP_PROP_CPU_ONLY (1U << 3)   /* not a dma-buf: no device sees it */

/* ion_ctx_alloc() flags, beside ION_FLAG_CACHED and ION_FLAG_CACHED_NEEDS_SYNC. */
/* On -ENOMEM, go on to the next heap of the request's mask. */
#define ION_ALLOC_FALLBACK (1U << 16)

/*
 * Creates a context.  sysroot prefixes every path the library reads
 * (/dev, /sys); NULL means "/".  Discovery runs once, lazily, on first use.
 */
int ion_ctx_new(const char *sysroot, struct ion_ctx **ret_ctx);
struct ion_ctx *ion_ctx_ref(struct ion_ctx *ctx);
/* Accepts NULL; returns NULL. */
struct ion_ctx *ion_ctx_unref(struct ion_ctx *ctx);

/*
 * syslog priorities: LOG_ERR 3 ... LOG_DEBUG 7.  ION_LOG sets the default.
 * Set the handler and priority before sharing the context between
 * threads; a handler must not call back into its context.
 */
typedef void (*ion_log_fn)(struct ion_ctx *ctx, int priority,
			   const char *file, int line, const char *fn,
			   const char *format, va_list args);
void ion_ctx_set_log_fn(struct ion_ctx *ctx, ion_log_fn log_fn);
void ion_ctx_set_log_priority(struct ion_ctx *ctx, int priority);
int ion_ctx_get_log_priority(const struct ion_ctx *ctx);
void ion_ctx_set_userdata(struct ion_ctx *ctx, void *userdata);
void *ion_ctx_get_userdata(const struct ion_ctx *ctx);

/* Every heap found, available or not; returns the count or a negative errno. */
int ion_ctx_get_heap_count(struct ion_ctx *ctx);
/* Heaps live as long as their context. */
int ion_ctx_get_heap(struct ion_ctx *ctx, unsigned int index,
		     const struct ion_heap **ret_heap);
/* By name; "cma" also finds the CMA heap under whatever name the kernel uses. */
int ion_ctx_find_heap(struct ion_ctx *ctx, const char *name,
		      const struct ion_heap **ret_heap);

const char *ion_heap_get_name(const struct ion_heap *heap);
/* What the kernel calls the heap (a dma-heap node, an ION heap, a DRM
 * driver); differs from the name when two providers share a name. */
const char *ion_heap_get_kernel_name(const struct ion_heap *heap);
/* Android-convention id, or -1 when the heap has none (or is unavailable). */
int ion_heap_get_id(const struct ion_heap *heap);
/* One of enum ion_heap_type. */
unsigned int ion_heap_get_type(const struct ion_heap *heap);
/* "dma-heap", "ion", "gem", "udmabuf" or "memfd". */
const char *ion_heap_get_backend(const struct ion_heap *heap);
/* The device node, or NULL (memfd). */
const char *ion_heap_get_node(const struct ion_heap *heap);
unsigned int ion_heap_get_properties(const struct ion_heap *heap);
/* 0 when the heap can allocate, else the negative errno that stops it ... */
int ion_heap_get_error(const struct ion_heap *heap);
/* ... and why, in words (NULL when available). */
const char *ion_heap_get_reason(const struct ion_heap *heap);

/*
 * Allocates len bytes (rounded up to pages) from the named heap and returns
 * a read-write, close-on-exec buffer fd.  flags: ION_FLAG_*.
 */
int ion_ctx_alloc(struct ion_ctx *ctx, const char *heap_name, size_t len,
		  unsigned int flags, int *ret_fd);
/*
 * Allocates from the heaps of heap_id_mask, highest id first.  With
 * ION_ALLOC_FALLBACK an -ENOMEM moves on to the next heap; otherwise the
 * first heap's answer stands.  ret_heap (may be NULL) tells which served.
 */
int ion_ctx_alloc_mask(struct ion_ctx *ctx, unsigned int heap_id_mask,
		       size_t len, unsigned int flags, int *ret_fd,
		       const struct ion_heap **ret_heap);

/*
 * Names a dma-buf (DMA_BUF_SET_NAME; shown in /proc/PID/fdinfo and
 * debugfs), truncated to 31 bytes.  -ENOTTY for a memfd buffer, whose name
 * is fixed at creation.
 */
int ion_buffer_set_name(int buf_fd, const char *name);

/* Size of a buffer fd in bytes. */
int ion_buffer_get_size(int buf_fd, size_t *ret_size);

#ifdef __cplusplus
}
#endif

#endif /* LIBION_ION_H */
