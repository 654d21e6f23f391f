// SPDX-License-Identifier: MIT
/* CPU access brackets: ion_sync() and what ion_sync_fd() builds on. */
#include "backends/backend.h"
#include "uapi/dma-buf.h"

static int dma_buf_sync(int buf_fd, uint64_t flags)
{
	struct dma_buf_sync sync = { .flags = flags };

	return ion_ioctl_retry(buf_fd, DMA_BUF_IOCTL_SYNC, &sync);
}

/* A memfd has no device to be coherent with: brackets are no-ops. */
static int not_a_dma_buf(int buf_fd)
{
	int kind = ion_fd_kind(buf_fd);

	return kind < 0 ? kind : kind == ION_FD_MEMFD ? 0 : -ENOTTY;
}

ION_EXPORT int ion_sync(int buf_fd, unsigned int flags)
{
	unsigned int dir = flags & ION_SYNC_RW;
	unsigned int when = flags & (ION_SYNC_START | ION_SYNC_END);
	uint64_t kflags = 0;
	int r;

	if (flags & ~(ION_SYNC_RW | ION_SYNC_START | ION_SYNC_END))
		return -EINVAL;
	if (!dir || (when != ION_SYNC_START && when != ION_SYNC_END))
		return -EINVAL;
	if (buf_fd < 0)
		return -EBADF;
	if (dir & ION_SYNC_READ)
		kflags |= DMA_BUF_SYNC_READ;
	if (dir & ION_SYNC_WRITE)
		kflags |= DMA_BUF_SYNC_WRITE;
	kflags |= when == ION_SYNC_START ? DMA_BUF_SYNC_START : DMA_BUF_SYNC_END;
	r = dma_buf_sync(buf_fd, kflags);
	return r == -ENOTTY ? not_a_dma_buf(buf_fd) : r;
}

ION_EXPORT int ion_ctx_sync_for_device(struct ion_ctx *ctx, int buf_fd)
{
	_cleanup_registry_ struct ion_registry *reg = NULL;
	int r;

	if (!ctx)
		return -EINVAL;
	if (buf_fd < 0)
		return -EBADF;
	r = dma_buf_sync(buf_fd, DMA_BUF_SYNC_START | DMA_BUF_SYNC_RW);
	if (r == 0)
		return dma_buf_sync(buf_fd, DMA_BUF_SYNC_END | DMA_BUF_SYNC_RW);
	if (r != -ENOTTY)
		return r;
	if (ion_fd_kind(buf_fd) == ION_FD_MEMFD)
		return 0;
	/* Kernels before 4.6 have no DMA_BUF_IOCTL_SYNC: ask the backend
	 * that may have made the buffer (legacy ION's ION_IOC_SYNC). */
	r = ion_ctx_registry(ctx, &reg);
	if (r < 0)
		return r;
	r = -ENOTTY;
	for (unsigned int i = 0; i < reg->n_heaps && r == -ENOTTY; i++) {
		const struct ion_heap *heap = reg->heaps[i];

		if (!heap->error && heap->backend->sync)
			r = heap->backend->sync(heap, buf_fd);
	}
	return r;
}
