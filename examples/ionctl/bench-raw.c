// SPDX-License-Identifier: MIT
#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include "bench-raw.h"
#include "uapi/dma-heap.h"
#include "uapi/ion.h"
#include "uapi/udmabuf.h"

#if HAVE_LIBDRM
#include <xf86drm.h>
#include <xf86drmMode.h>
#endif

/* DMA_HEAP_IOCTL_ALLOC + close */
static int raw_dmaheap(struct raw_alloc *raw, size_t len)
{
	struct dma_heap_allocation_data d = { .len = len, .fd_flags = O_RDWR | O_CLOEXEC };

	if (ioctl(raw->dev_fd, DMA_HEAP_IOCTL_ALLOC, &d) < 0)
		return -errno;
	close((int)d.fd);
	return 0;
}

/* ION_IOC_ALLOC (4.12+) + close */
static int raw_ion(struct raw_alloc *raw, size_t len)
{
	struct ion_new_allocation_data d = {
		.len = len,
		.heap_id_mask = 1U << raw->ion_heap_id,
		.flags = ION_FLAG_CACHED,
	};

	if (ioctl(raw->dev_fd, ION_NEW_IOC_ALLOC, &d) < 0)
		return -errno;
	close((int)d.fd);
	return 0;
}

/* memfd_create + ftruncate + close */
static int raw_memfd(struct raw_alloc *raw, size_t len)
{
	int fd = memfd_create("raw", MFD_CLOEXEC), r = 0;

	(void)raw;
	if (fd < 0)
		return -errno;
	if (ftruncate(fd, (off_t)len) < 0)
		r = -errno;
	close(fd);
	return r;
}

/* memfd_create + ftruncate + seal + close: what libion's memfd heap does */
static int raw_memfd_sealed(struct raw_alloc *raw, size_t len)
{
	int fd = memfd_create("raw", MFD_CLOEXEC | MFD_ALLOW_SEALING), r = 0;

	(void)raw;
	if (fd < 0)
		return -errno;
	if (ftruncate(fd, (off_t)len) < 0 ||
	    fcntl(fd, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_SEAL) < 0)
		r = -errno;
	close(fd);
	return r;
}

/* The syscalls libion's memfd heap makes, checks included: getrlimit
 * (RLIMIT_FSIZE, so that ftruncate() cannot raise SIGXFSZ) + the above;
 * with a client, Android's ion_alloc_fd() also fstat()s the client fd
 * (is it still the file ion_open() returned?).  Beside the library, the
 * ratio to these is what the library's own code costs. */
static int raw_memfd_checked(struct raw_alloc *raw, size_t len)
{
	struct rlimit fsize;
	struct stat st;

	if (raw->dev_fd >= 0 && fstat(raw->dev_fd, &st) < 0)
		return -errno;
	if (getrlimit(RLIMIT_FSIZE, &fsize) < 0)
		return -errno;
	if (fsize.rlim_cur != RLIM_INFINITY && len > fsize.rlim_cur)
		return -EFBIG;
	return raw_memfd_sealed(raw, len);
}

/* memfd_create + ftruncate + seal + UDMABUF_CREATE + close both */
static int raw_udmabuf(struct raw_alloc *raw, size_t len)
{
	struct udmabuf_create c = { .flags = UDMABUF_FLAGS_CLOEXEC, .size = len };
	int memfd = memfd_create("raw", MFD_CLOEXEC | MFD_ALLOW_SEALING), buf, r = 0;

	if (memfd < 0)
		return -errno;
	c.memfd = (uint32_t)memfd;
	if (ftruncate(memfd, (off_t)len) < 0 ||
	    fcntl(memfd, F_ADD_SEALS, F_SEAL_SHRINK) < 0 ||
	    (buf = ioctl(raw->dev_fd, UDMABUF_CREATE, &c)) < 0)
		r = -errno;
	else
		close(buf);
	close(memfd);
	return r;
}

#if HAVE_LIBDRM
/* DRM_IOCTL_MODE_CREATE_DUMB + PRIME export + destroy + close */
static int raw_gem(struct raw_alloc *raw, size_t len)
{
	uint32_t handle, pitch;
	uint64_t size;
	int fd, r;

	r = drmModeCreateDumbBuffer(raw->dev_fd, 1024, (uint32_t)((len + 4095) / 4096),
				    32, 0, &handle, &pitch, &size);
	if (r < 0)
		return r;
	r = drmPrimeHandleToFD(raw->dev_fd, handle, DRM_CLOEXEC | DRM_RDWR, &fd);
	drmModeDestroyDumbBuffer(raw->dev_fd, handle);
	if (r < 0)
		return -errno;
	close(fd);
	return 0;
}
#endif

/* The kernel's id of the ION heap libion calls heap_name. */
static int find_ion_heap_id(int fd, const char *name, uint32_t *ret)
{
	struct ion_new_heap_data heaps[32];
	struct ion_new_heap_query q = { .cnt = 32, .heaps = (uintptr_t)heaps };

	if (ioctl(fd, ION_NEW_IOC_HEAP_QUERY, &q) < 0)
		return -errno;
	for (uint32_t i = 0; i < q.cnt && i < 32; i++)
		if (strncmp(heaps[i].name, name, sizeof(heaps[i].name)) == 0) {
			*ret = heaps[i].heap_id;
			return 0;
		}
	return -ENOENT;
}

int raw_alloc_init(struct raw_alloc *raw, const struct ion_heap *heap,
		   unsigned int variant)
{
	const char *backend = ion_heap_get_backend(heap);
	const char *node = ion_heap_get_node(heap);

	memset(raw, 0, sizeof(*raw));
	raw->dev_fd = -1;
	if (strcmp(backend, "memfd") == 0 && variant <= 3) {
		static const char *const names[] = { "memfd", "memfd+seal", "memfd+seal+rlimit",
						     "memfd+seal+rlimit+fstat" };

		raw->name = names[variant];
		raw->alloc_close = variant == 0 ? raw_memfd
				   : variant == 1 ? raw_memfd_sealed : raw_memfd_checked;
		/* A file to fstat(), as the client fd is to ion_alloc_fd(). */
		if (variant == 3 && (raw->dev_fd = memfd_create("client", MFD_CLOEXEC)) < 0)
			return -errno;
		return 0;
	}
	if (!node || variant > 0)
		return -ENOTSUP;
	raw->dev_fd = open(node, (strcmp(backend, "dma-heap") ? O_RDWR : O_RDONLY) | O_CLOEXEC);
	if (raw->dev_fd < 0)
		return -errno;
	if (strcmp(backend, "dma-heap") == 0) {
		raw->name = "heap-ioctl";
		raw->alloc_close = raw_dmaheap;
	} else if (strcmp(backend, "udmabuf") == 0) {
		raw->name = "udmabuf";
		raw->alloc_close = raw_udmabuf;
#if HAVE_LIBDRM
	} else if (strcmp(backend, "gem") == 0) {
		raw->name = "dumb+prime";
		raw->alloc_close = raw_gem;
#endif
	} else if (strcmp(backend, "ion") == 0 &&
		   find_ion_heap_id(raw->dev_fd, ion_heap_get_kernel_name(heap),
				    &raw->ion_heap_id) == 0) {
		raw->name = "ion-ioctl";
		raw->alloc_close = raw_ion;
	}
	if (!raw->alloc_close) {
		raw_alloc_fini(raw);
		return -ENOTSUP;
	}
	return 0;
}

int raw_alloc_init_ion(const char *heap_name, struct raw_alloc *raw)
{
	memset(raw, 0, sizeof(*raw));
	raw->dev_fd = open("/dev/ion", O_RDONLY | O_CLOEXEC | O_NONBLOCK);
	if (raw->dev_fd < 0)
		return -errno;
	if (find_ion_heap_id(raw->dev_fd, heap_name, &raw->ion_heap_id) < 0) {
		raw_alloc_fini(raw);
		return -ENOENT;
	}
	raw->name = "ion-ioctl";
	raw->alloc_close = raw_ion;
	return 0;
}

void raw_alloc_fini(struct raw_alloc *raw)
{
	if (raw->dev_fd >= 0)
		close(raw->dev_fd);
	raw->dev_fd = -1;
}
