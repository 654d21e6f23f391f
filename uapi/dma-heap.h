/* SPDX-License-Identifier: MIT */
/* The kernel's <linux/dma-heap.h> (Linux 5.6+), as the library uses it. */
#ifndef LIBION_UAPI_DMA_HEAP_H
#define LIBION_UAPI_DMA_HEAP_H

#include <linux/ioctl.h>
#include <linux/types.h>

struct dma_heap_allocation_data {
	__u64 len;
	__u32 fd;
	__u32 fd_flags;
	__u64 heap_flags;
};

#define DMA_HEAP_IOC_MAGIC 'H'
#define DMA_HEAP_IOCTL_ALLOC                                                   \
	_IOWR(DMA_HEAP_IOC_MAGIC, 0x0, struct dma_heap_allocation_data)

#endif
