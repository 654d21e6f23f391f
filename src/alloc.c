// SPDX-License-Identifier: MIT
/* Allocation through the context: by heap name or by id mask. */
#include <string.h>
#include <sys/ioctl.h>
#include <sys/stat.h>

#include "internal.h"
#include "uapi/dma-buf.h"

int ion_round_len(size_t len, size_t *ret_len)
{
	size_t page = ion_page_size();

	if (len == 0 || len > SIZE_MAX - (page - 1))
		return -EINVAL;
	*ret_len = (len + page - 1) & ~(page - 1);
	return 0;
}

#define ION_ALLOC_VALID_FLAGS                                                  \
	(ION_FLAG_CACHED | ION_FLAG_CACHED_NEEDS_SYNC | ION_ALLOC_FALLBACK)

/* The one place both APIs allocate through; len is already page-rounded. */
static int heap_alloc(struct ion_ctx *ctx, struct ion_heap *heap, size_t len,
		      unsigned int flags, int *ret_fd)
{
	if (heap->error)
		return heap->error;
	return heap->backend->alloc(ctx, heap, len, flags & ~ION_ALLOC_FALLBACK,
				    ret_fd);
}

ION_EXPORT int ion_ctx_alloc(struct ion_ctx *ctx, const char *heap_name,
			     size_t len, unsigned int flags, int *ret_fd)
{
	const struct ion_heap *heap;
	size_t rounded;
	int r;

	if (!ctx || !heap_name || !ret_fd || (flags & ~ION_ALLOC_VALID_FLAGS))
		return -EINVAL;
	r = ion_ctx_find_heap(ctx, heap_name, &heap);
	if (r < 0)
		return r == -ENOENT ? -ENODEV : r;
	if (heap->error)
		return heap->error;
	r = ion_round_len(len, &rounded);
	if (r < 0)
		return r;
	return heap_alloc(ctx, (struct ion_heap *)heap, rounded, flags, ret_fd);
}

ION_EXPORT int ion_ctx_alloc_mask(struct ion_ctx *ctx, unsigned int heap_id_mask,
				  size_t len, unsigned int flags, int *ret_fd,
				  const struct ion_heap **ret_heap)
{
	size_t rounded;
	int r;

	if (!ctx || !ret_fd || (flags & ~ION_ALLOC_VALID_FLAGS))
		return -EINVAL;
	/* The length first, as the kernel's ION checks it: then the mask. */
	r = ion_round_len(len, &rounded);
	if (r < 0)
		return r;
	r = ion_ctx_ensure_discovered(ctx);
	if (r < 0)
		return r;
	r = -ENODEV;
	while (heap_id_mask) {
		unsigned int id = 31 - (unsigned int)__builtin_clz(heap_id_mask);
		struct ion_heap *heap = ctx->by_id[id];

		heap_id_mask &= ~(1U << id);
		if (!heap)
			continue;
		if (!(flags & (ION_FLAG_CACHED | ION_FLAG_CACHED_NEEDS_SYNC)) &&
		    heap->uncached_twin)
			heap = heap->uncached_twin;
		r = heap_alloc(ctx, heap, rounded, flags, ret_fd);
		if (r == 0) {
			if (ret_heap)
				*ret_heap = heap;
			return 0;
		}
		if (r != -ENOMEM || !(flags & ION_ALLOC_FALLBACK))
			return r;
		ion_dbg(ctx, "heap %s is out of memory, trying the next", heap->name);
	}
	return r;
}

ION_EXPORT int ion_buffer_set_name(int buf_fd, const char *name)
{
	char buf[DMA_BUF_NAME_LEN];

	if (!name)
		return -EINVAL;
	/* The kernel refuses names of 32 bytes or more: truncate instead. */
	strncpy(buf, name, sizeof(buf) - 1);
	buf[sizeof(buf) - 1] = '\0';
	if (ioctl(buf_fd, DMA_BUF_SET_NAME, buf) < 0)
		return neg_errno();
	return 0;
}

ION_EXPORT int ion_buffer_get_size(int buf_fd, size_t *ret_size)
{
	struct stat st;
	off_t end;

	if (!ret_size)
		return -EINVAL;
	if (fstat(buf_fd, &st) < 0)
		return neg_errno();
	if (S_ISREG(st.st_mode)) {
		end = st.st_size; /* a memfd: leave its file offset alone */
	} else {
		/* A dma-buf: its inode has the size only since Linux 5.3, but
		 * it has answered SEEK_END with it since 3.19. */
		end = lseek(buf_fd, 0, SEEK_END);
		if (end < 0)
			return neg_errno();
	}
	if (end < 0)
		return -EINVAL;
	*ret_size = (size_t)end;
	return 0;
}
