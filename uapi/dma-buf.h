/* SPDX-License-Identifier: MIT */
/*
 * The parts of the kernel's <linux/dma-buf.h> the library uses, kept here
 * so the build does not depend on the age of the machine's kernel headers.
 */
#ifndef LIBION_UAPI_DMA_BUF_H
#define LIBION_UAPI_DMA_BUF_H

#include <linux/ioctl.h>
#include <linux/types.h>

struct dma_buf_sync {
	__u64 flags;
};

#define DMA_BUF_SYNC_READ (1 << 0)
#define DMA_BUF_SYNC_WRITE (2 << 0)
#define DMA_BUF_SYNC_RW (DMA_BUF_SYNC_READ | DMA_BUF_SYNC_WRITE)
#define DMA_BUF_SYNC_START (0 << 2)
#define DMA_BUF_SYNC_END (1 << 2)

#define DMA_BUF_NAME_LEN 32

#define DMA_BUF_BASE 'b'
#define DMA_BUF_IOCTL_SYNC _IOW(DMA_BUF_BASE, 0, struct dma_buf_sync)
#ifndef DMA_BUF_SET_NAME
#define DMA_BUF_SET_NAME _IOW(DMA_BUF_BASE, 1, const char *)
#endif

#endif
