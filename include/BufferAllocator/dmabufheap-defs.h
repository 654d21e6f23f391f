/* SPDX-License-Identifier: MIT */
/*
 * Constants of Android's libdmabufheap API (system/memory/libdmabufheap),
 * declared again for libion-dmabufheap: same names and values, our text.
 * Compiles as C89 to C2x and as C++11 to C++23.
 */
#ifndef LIBION_DMABUFHEAP_DEFS_H
#define LIBION_DMABUFHEAP_DEFS_H

/* Android's header includes <linux/dma-buf.h>; programs may lean on that
 * for DMA_BUF_SYNC_* and DMA_BUF_SET_NAME, so include it where it exists. */
#if defined(__has_include)
#if __has_include(<linux/dma-buf.h>)
#include <linux/dma-buf.h>
#endif
#endif

/* The heap AllocSystem() uses when the CPU will touch the buffer ... */
static const char kDmabufSystemHeapName[] = "system";
/* ... and the one it tries first when it will not. */
static const char kDmabufSystemUncachedHeapName[] = "system-uncached";

/* What a CPU-access bracket covers: the values of DMA_BUF_SYNC_READ,
 * DMA_BUF_SYNC_WRITE and DMA_BUF_SYNC_RW, which is what Android defines
 * them as (written out so the header needs no kernel headers). */
typedef enum {
	kSyncRead = 1,
	kSyncWrite = 2,
	kSyncReadWrite = 3
} SyncType;

#endif
