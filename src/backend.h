/* SPDX-License-Identifier: MIT */
/*
 * The one small ops table every backend implements.  A backend knows its
 * kernel interface and nothing of the compat layer, the other backends or
 * how heaps are chosen.
 */
#ifndef LIBION_BACKEND_H
#define LIBION_BACKEND_H

#include <stddef.h>

struct ion_ctx;
struct ion_heap;

struct ion_backend {
	const char *name; /* "dma-heap", "ion", ... as ion_heap_get_backend() */
	/*
	 * Finds this backend's heaps and adds them with ion_registry_add(),
	 * available or not (ion_heap_set_unavailable() with the reason).
	 * Returns 0, or a negative errno only for ENOMEM: a missing device
	 * is no error, just no heaps.
	 */
	int (*probe)(struct ion_ctx *ctx);
	/*
	 * Allocates len bytes (already page-rounded, nonzero) and returns a
	 * read-write close-on-exec buffer fd.  0 or a negative errno; on
	 * failure no fd is left open and *ret_fd is untouched.  No I/O but
	 * the allocation's own syscalls.
	 */
	int (*alloc)(struct ion_ctx *ctx, struct ion_heap *heap, size_t len,
		     unsigned int flags, int *ret_fd);
	/*
	 * Optional: flushes CPU writes of buf_fd for devices where the kernel
	 * has no DMA_BUF_IOCTL_SYNC (legacy ION).  -ENOTTY when the buffer
	 * is not this heap's.
	 */
	int (*sync)(struct ion_heap *heap, int buf_fd);
	/* Releases heap->priv; may be NULL.  The registry closes dev_fd. */
	void (*destroy)(struct ion_heap *heap);
};

/* In order of preference: where two providers offer the same memory
 * (ION and DMA-BUF heaps on 5.10), the earlier one keeps it. */
extern const struct ion_backend ion_backend_dmaheap;
extern const struct ion_backend ion_backend_ion;
extern const struct ion_backend ion_backend_udmabuf;
extern const struct ion_backend ion_backend_gem;
extern const struct ion_backend ion_backend_memfd;

#endif
