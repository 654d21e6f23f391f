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
 *  - libion's own API, <ion/libion.h> (included here): contexts, heaps
 *    with their properties and availability, allocation requests solved
 *    against the heaps, calls on buffer fds.  The Android calls are a thin
 *    layer over it.
 *
 * Every call that can fail returns 0 (or a count) on success and a negative
 * errno on failure, and leaves its out-parameters untouched on failure.
 * Every fd the library returns is close-on-exec.
 */
#ifndef LIBION_ION_H
#define LIBION_ION_H

#include <stddef.h>
#include <sys/types.h>

#include <ion/libion.h>

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
/*
 * Maps length bytes of the handle's buffer at offset: *ptr the mapping,
 * *map_fd a close-on-exec fd of the buffer that the caller closes (as in
 * Android).  -EINVAL past the buffer's end, and at a nonzero offset of a
 * GEM buffer of the shmem helpers (vgem, vkms, virtio-gpu...), whose
 * kernels would map the wrong pages there.
 *
 * Like glibc's calls, ion_map takes the caller's off_t: a 32-bit program
 * built with _FILE_OFFSET_BITS=64 calls ion_map64 (64-bit offset), one
 * built without it ion_map (32-bit offset); 64-bit programs, either.
 */
#if defined(_FILE_OFFSET_BITS) && _FILE_OFFSET_BITS == 64 && !defined(__LP64__) && \
	!defined(_LP64)
int ion_map(int fd, ion_user_handle_t handle, size_t length, int prot,
	    int flags, off_t offset, unsigned char **ptr, int *map_fd)
	__asm__("ion_map64");
#else
int ion_map(int fd, ion_user_handle_t handle, size_t length, int prot,
	    int flags, off_t offset, unsigned char **ptr, int *map_fd);
#endif
int ion_map64(int fd, ion_user_handle_t handle, size_t length, int prot,
	      int flags, long long offset, unsigned char **ptr, int *map_fd);
int ion_share(int fd, ion_user_handle_t handle, int *share_fd);
int ion_import(int fd, int share_fd, ion_user_handle_t *handle);

/*
 * Makes the CPU's writes to buffer handle_fd visible to devices: a full
 * CPU-access bracket (start and end, read and write) on a dma-buf,
 * ION_IOC_SYNC on a buffer of the legacy ION ABI, nothing on a memfd
 * buffer (it has no device).
 */
int ion_sync_fd(int fd, int handle_fd);

/*
 * *cnt = how many heaps ion_query_get_heaps() reports (those with an
 * Android id), as the kernel's ION_IOC_HEAP_QUERY counts them; 0, or a
 * negative errno (-EINVAL for a NULL cnt; for an fd that is no client, as
 * every call here), *cnt untouched then.
 */
int ion_query_heap_cnt(int fd, int *cnt);
/*
 * buffers points to cnt struct ion_heap_data; as in Android (the kernel's
 * ION_IOC_HEAP_QUERY), NULL buffers answer 0, cnt <= 0 with a buffer is
 * -EINVAL, and a bad buffer -EFAULT.  A heap whose Android id is not its
 * type's (ids 16 up) is reported with type ION_HEAP_TYPE_CUSTOM.
 */
int ion_query_get_heaps(int fd, int cnt, void *buffers);

/*
 * 1 when the client's /dev/ion is Android's GKI ION with modular heaps
 * (ION_IOC_ABI_VERSION 2 or later, Android 11 and later), else 0: also
 * 0 for an fd that is no client (-1, closed, not from ion_open()), as
 * Android's answers, so that the result can be used as a truth value.
 */
int ion_is_using_modular_heaps(int fd);

#ifdef __cplusplus
}
#endif

#endif /* LIBION_ION_H */
