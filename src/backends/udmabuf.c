// SPDX-License-Identifier: MIT
/*
 * udmabuf (Linux 4.20+): turns a sealed memfd into a dma-buf, so plain
 * shmem pages become importable by devices where no dma-heap exists.
 *
 * The trap: CPU-access brackets (DMA_BUF_IOCTL_SYNC) are no reliable cache
 * maintenance here.  The first kernels with udmabuf (4.20 on) have no
 * begin/end_cpu_access hooks: the ioctl succeeds and does nothing.  Later
 * ones maintain the caches for the udmabuf misc device, not for the
 * devices that import the buffer, and 5.10's first START maps the pages
 * (a for-device sync) instead of syncing them for the CPU.  Coherent
 * machines (x86) never notice.
 */
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/stat.h>

#include <ion/ion.h>

#include "backend.h"
#include "sysfs.h"
#include "uapi/udmabuf.h"

/*
 * Importers that map buffers in the kernel (videobuf2-vmalloc, vkms)
 * refuse udmabuf before Linux 6.2, which gave it vmap (commit
 * 7ae2e684854c).  The kernel's release, read under the sysroot.
 */
static int kernel_maps(struct ion_ctx *ctx, bool *ret)
{
	_cleanup_free_ char *path = ion_ctx_path(ctx, "/proc/sys/kernel/osrelease");
	_cleanup_free_ char *release = NULL;
	unsigned int major = 0, minor = 0;
	int r;

	if (!path)
		return -ENOMEM;
	r = ion_sysfs_read(path, &release, NULL);
	if (ion_errno_transient(r))
		return r;
	*ret = r == 0 && sscanf(release, "%u.%u", &major, &minor) == 2 &&
	       (major > 6 || (major == 6 && minor >= 2));
	return 0;
}

struct udmabuf_heap {
	struct ion_heap heap;
	int fd;		/* /dev/udmabuf, O_RDWR|O_CLOEXEC, or -1 */
};

/* The module's size_limit_mb (64 by default): larger buffers it refuses. */
static int size_limit(struct ion_ctx *ctx, uint64_t *ret)
{
	_cleanup_free_ char *path = ion_ctx_path(ctx, "/sys/module/udmabuf/parameters/size_limit_mb");
	_cleanup_free_ char *text = NULL;
	uint64_t mb = 64;
	int r;

	if (!path)
		return -ENOMEM;
	r = ion_sysfs_read(path, &text, NULL);
	if (ion_errno_transient(r))
		return r;
	if (r == 0 && (ion_parse_u64(text, 10, &mb) < 0 || mb > (UINT64_MAX >> 20)))
		mb = 64;
	*ret = mb << 20;
	return 0;
}

static int udmabuf_probe(struct ion_ctx *ctx, struct ion_registry *reg)
{
	_cleanup_free_ char *node = ion_ctx_path(ctx, "/dev/udmabuf");
	struct ion_heap *heap;
	struct stat st;
	bool maps;
	int r;

	if (!node)
		return -ENOMEM;
	if (lstat(node, &st) < 0)
		return ion_errno_transient(-errno) ? -errno : 0; /* no udmabuf here */
	heap = ion_registry_add(reg, &ion_backend_udmabuf, "udmabuf",
				sizeof(struct udmabuf_heap));
	if (!heap)
		return -ENOMEM;
	heap_container(heap, struct udmabuf_heap)->fd = -1;
	heap->type = ION_HEAP_TYPE_SYSTEM;
	heap->props = ION_HEAP_PROP_CACHED;
	heap->node = steal_ptr(&node);
	r = kernel_maps(ctx, &maps);
	if (r == 0)
		r = size_limit(ctx, &heap->max_len);
	if (r < 0)
		return r;
	if (maps)
		heap->props |= ION_HEAP_PROP_KERNEL_MAP;
	/* The misc device of that name, not any file that sits there. */
	return ion_heap_open_node(ctx, heap, O_RDWR, "misc", "udmabuf",
				  &heap_container(heap, struct udmabuf_heap)->fd);
}

static int udmabuf_alloc(const struct ion_heap *heap, size_t len,
			 unsigned int flags, int *ret_fd)
{
	int dev_fd = heap_container(heap, const struct udmabuf_heap)->fd;
	_cleanup_close_ int memfd = -1;
	struct udmabuf_create create = {
		.flags = UDMABUF_FLAGS_CLOEXEC,
		.size = len,
	};
	int fd, r;

	(void)flags; /* the pages are shmem: always cached */
	/* udmabuf pins the pages: it insists the file cannot shrink under it. */
	r = ion_memfd_create_sealed("libion-udmabuf", len, F_SEAL_SHRINK, &memfd);
	if (r < 0)
		return r;
	create.memfd = (uint32_t)memfd;
	/* Returns the new fd, which ion_ioctl_retry() would swallow. */
	do {
		fd = ioctl(dev_fd, UDMABUF_CREATE, &create);
	} while (fd < 0 && errno == EINTR);
	/*
	 * The request is well-formed by construction (sealed shmem, whole
	 * pages), so EINVAL can only be the size_limit_mb module parameter
	 * (64 MiB by default): a heap out of room, which fallback may skip.
	 */
	if (fd < 0)
		return errno == EINVAL ? -ENOMEM : neg_errno();
	/* The dma-buf holds its own references to the pages. */
	*ret_fd = fd;
	return 0;
}

static void udmabuf_destroy(struct ion_heap *heap)
{
	closep(&heap_container(heap, struct udmabuf_heap)->fd);
}

const struct ion_backend ion_backend_udmabuf = {
	.name = "udmabuf",
	.probe = udmabuf_probe,
	.alloc = udmabuf_alloc,
	.destroy = udmabuf_destroy,
};
