/* SPDX-License-Identifier: MIT */
/*
 * The two ION ABIs the library speaks.  Only the structures and request
 * numbers are here: names are prefixed so they cannot clash with the
 * compat constants of <ion/ion.h>.
 *
 *  - Linux 4.12 to 5.10 (drivers/staging/android/uapi/ion.h):
 *    ION_IOC_ALLOC returns a dma-buf fd; ION_IOC_HEAP_QUERY lists heaps.
 *  - Before 4.12 ("legacy"): ION_IOC_ALLOC returns a handle that
 *    ION_IOC_SHARE/MAP turn into a dma-buf fd; ION_IOC_FREE drops it.
 *    Its structures hold size_t, so 32-bit and 64-bit processes use
 *    different layouts (and request numbers): both are spelled out.
 */
#ifndef LIBION_UAPI_ION_H
#define LIBION_UAPI_ION_H

#include <linux/ioctl.h>
#include <linux/types.h>

#define ION_UAPI_MAGIC 'I'

/* ---- 4.12 - 5.10 ---- */
struct ion_new_allocation_data {
	__u64 len;
	__u32 heap_id_mask;
	__u32 flags;
	__u32 fd;
	__u32 unused;
};

struct ion_new_heap_data {
	char name[32];
	__u32 type;
	__u32 heap_id;
	__u32 reserved0;
	__u32 reserved1;
	__u32 reserved2;
};

struct ion_new_heap_query {
	__u32 cnt;
	__u32 reserved0;
	__u64 heaps;
	__u32 reserved1;
	__u32 reserved2;
};

#define ION_NEW_IOC_ALLOC _IOWR(ION_UAPI_MAGIC, 0, struct ion_new_allocation_data)
#define ION_NEW_IOC_HEAP_QUERY _IOWR(ION_UAPI_MAGIC, 8, struct ion_new_heap_query)

/* ---- before 4.12 ---- */
struct ion_legacy_allocation_data64 {
	__u64 len;
	__u64 align;
	__u32 heap_id_mask;
	__u32 flags;
	__s32 handle;
	__u32 pad; /* the tail padding of the 64-bit struct */
};

struct ion_legacy_allocation_data32 {
	__u32 len;
	__u32 align;
	__u32 heap_id_mask;
	__u32 flags;
	__s32 handle;
};

struct ion_legacy_fd_data {
	__s32 handle;
	__s32 fd;
};

struct ion_legacy_handle_data {
	__s32 handle;
};

#define ION_LEGACY_IOC_ALLOC64 _IOWR(ION_UAPI_MAGIC, 0, struct ion_legacy_allocation_data64)
#define ION_LEGACY_IOC_ALLOC32 _IOWR(ION_UAPI_MAGIC, 0, struct ion_legacy_allocation_data32)
#define ION_LEGACY_IOC_FREE _IOWR(ION_UAPI_MAGIC, 1, struct ion_legacy_handle_data)
#define ION_LEGACY_IOC_MAP _IOWR(ION_UAPI_MAGIC, 2, struct ion_legacy_fd_data)
#define ION_LEGACY_IOC_SHARE _IOWR(ION_UAPI_MAGIC, 4, struct ion_legacy_fd_data)
#define ION_LEGACY_IOC_IMPORT _IOWR(ION_UAPI_MAGIC, 5, struct ion_legacy_fd_data)
#define ION_LEGACY_IOC_SYNC _IOWR(ION_UAPI_MAGIC, 7, struct ion_legacy_fd_data)

#endif
