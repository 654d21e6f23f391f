/* SPDX-License-Identifier: MIT */
/*
 * The one small ops table every backend implements.  A backend knows its
 * kernel interface and nothing of the compat layer, the solver, the other
 * backends or how heaps are chosen; its state lives in its own struct
 * around struct ion_heap, shared per kernel device where the kernel
 * object is shared.
 */
#ifndef LIBION_BACKEND_H
#define LIBION_BACKEND_H

#include <stdbool.h>
#include <stddef.h>

#include "../registry.h"

#define heap_container(ptr, type)                                              \
	((type *)((char *)(ptr) - offsetof(type, heap)))

struct ion_backend {
	const char *name; /* "dma-heap", "ion", ... as ion_heap_get_backend() */
	/*
	 * Its buffers may show their first pages when mapped at a nonzero
	 * offset (GEM's shmem helpers: see compat.c).  Android's calls never
	 * offer such heaps (no id): a caller of theirs maps at offsets as it
	 * likes, and cannot know to avoid these.
	 */
	bool mmap_ignores_offset;
	/*
	 * Finds this backend's heaps and adds them with ion_registry_add(),
	 * available or not (ion_heap_set_unavailable() with the reason),
	 * each with the memory key under which another backend may offer
	 * the same memory.  Returns 0, or a negative errno only for ENOMEM:
	 * a missing device is no error, just no heaps.  ctx gives paths and
	 * logging; the backend writes nothing of it.
	 */
	int (*probe)(struct ion_ctx *ctx, struct ion_registry *reg);
	/*
	 * Allocates len bytes (already page-rounded, nonzero) and returns a
	 * read-write close-on-exec buffer fd.  flags: ION_FLAG_CACHED and
	 * ION_FLAG_CACHED_NEEDS_SYNC only.  0 or a negative errno; on
	 * failure no fd is left open and *ret_fd is untouched.  No I/O but
	 * the allocation's own syscalls.
	 */
	int (*alloc)(const struct ion_heap *heap, size_t len, unsigned int flags,
		     int *ret_fd);
	/*
	 * Optional: flushes CPU writes of buf_fd for devices where the kernel
	 * has no DMA_BUF_IOCTL_SYNC (legacy ION).  -ENOTTY when the buffer
	 * is not this heap's.
	 */
	int (*sync)(const struct ion_heap *heap, int buf_fd);
	/* Optional: releases what the backend's struct holds (not the
	 * struct itself, which the registry frees). */
	void (*destroy)(struct ion_heap *heap);
};

/* In order of preference: where two providers offer the same memory
 * (ION and DMA-BUF heaps on 5.10), the earlier one keeps it. */
extern const struct ion_backend ion_backend_dmaheap;
extern const struct ion_backend ion_backend_ion;
extern const struct ion_backend ion_backend_udmabuf;
extern const struct ion_backend ion_backend_gem;
extern const struct ion_backend ion_backend_memfd;

/* backends/ion.c: a legacy ION_IOC_ALLOC in the layout of a user_bits-bit
 * process (32 or 64), returning the kernel's handle.  The library uses
 * the native layout; the unit test drives both. */
int ion_legacy_alloc_handle(int dev_fd, unsigned int user_bits, size_t len,
			    uint32_t heap_mask, unsigned int flags,
			    int *ret_handle);

#endif
