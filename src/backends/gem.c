// SPDX-License-Identifier: MIT
/*
 * GEM dumb buffers exported through PRIME: one heap per DRM device that can
 * do both, for machines whose only allocator is a GPU or display driver.
 * Buffers are handed out as dma-buf fds alone; GEM handles never outlive a
 * call and flink names are never used (any client could guess them).
 */
#include "config.h"

#include <ion/ion.h>

#include "backend.h"
#include "sysfs.h"

#if HAVE_LIBDRM

#include <dirent.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <xf86drm.h>
#include <xf86drmMode.h>

/*
 * 1024 pixels of 32 bits: rows of 4 KiB, so a page-rounded length is whole
 * rows.  The kernel computes a dumb buffer's size in 32 bits.
 */
#define DUMB_BPP 32
#define DUMB_WIDTH 1024
#define DUMB_ROW ((size_t)DUMB_WIDTH * DUMB_BPP / 8)
#define DUMB_MAX_ROWS (UINT32_MAX / DUMB_ROW)

struct drm_node {
	char *path;
	char *device;	/* its sysfs device directory (resolved), or NULL */
	bool render;
	bool grouped;
};

/*
 * libdrm's calls answer -1 with errno (drmIoctl) or a negative errno (the
 * drmMode dumb-buffer calls): either way, a negative errno here.
 */
static int drm_result(int r)
{
	if (r >= 0)
		return 0;
	return r < -1 ? r : neg_errno();
}

static int dumb_create(int fd, size_t len, uint32_t *ret_handle)
{
	size_t rows = len / DUMB_ROW + (len % DUMB_ROW != 0);
	uint32_t handle, pitch;
	uint64_t size;
	int r;

	if (rows == 0)
		return -EINVAL;
	if (rows > DUMB_MAX_ROWS)
		return -ENOMEM;
	r = drm_result(drmModeCreateDumbBuffer(fd, DUMB_WIDTH, (uint32_t)rows,
					       DUMB_BPP, 0, &handle, &pitch, &size));
	if (r < 0)
		return r;
	if (size < len) {
		drmModeDestroyDumbBuffer(fd, handle);
		return -ENOMEM;
	}
	*ret_handle = handle;
	return 0;
}

struct gem_heap {
	struct ion_heap heap;
	int fd;			/* the DRM node, O_RDWR|O_CLOEXEC, or -1 */
	/* PRIME export flags, decided once per device at discovery: before
	 * 4.6 the kernel refuses DRM_RDWR.  Such an fd is still good for
	 * sharing with devices, but the CPU can only map it read-only. */
	uint32_t export_flags;
};

#define EXPORT_RDWR (DRM_CLOEXEC | DRM_RDWR)
#define EXPORT_RDONLY DRM_CLOEXEC

static int prime_export(int fd, uint32_t handle, uint32_t flags, int *ret_fd)
{
	int buf_fd, r;

	r = drm_result(drmPrimeHandleToFD(fd, handle, flags, &buf_fd));
	if (r < 0)
		return r;
	*ret_fd = buf_fd;
	return 0;
}

/* The fd alone owns the buffer: no handle lingers on the shared device fd. */
static int dumb_alloc(int fd, size_t len, uint32_t export_flags, int *ret_fd)
{
	uint32_t handle;
	int r;

	r = dumb_create(fd, len, &handle);
	if (r < 0)
		return r;
	r = prime_export(fd, handle, export_flags, ret_fd);
	drmModeDestroyDumbBuffer(fd, handle);
	return r;
}

/*
 * What a heap needs, checked with a real buffer: the capabilities answer
 * only for KMS drivers (vgem has none, yet makes dumb buffers), and the
 * render node may refuse what the capability promises.  *ret_what says
 * which step failed.
 */
static int check_dumb_export(int fd, const char **ret_what, uint32_t *ret_export)
{
	uint32_t export = EXPORT_RDWR;
	uint64_t cap;
	uint32_t handle;
	int buf_fd, r;

	*ret_what = "dumb buffers";
	if (drmGetCap(fd, DRM_CAP_DUMB_BUFFER, &cap) == 0 && !cap)
		return -EOPNOTSUPP;
	r = dumb_create(fd, ion_page_size(), &handle);
	if (r < 0)
		return r;
	*ret_what = "PRIME export";
	if (drmGetCap(fd, DRM_CAP_PRIME, &cap) == 0 && !(cap & DRM_PRIME_CAP_EXPORT))
		r = -ENOSYS; /* what the export itself would answer */
	else
		r = prime_export(fd, handle, export, &buf_fd);
	if (r == -EINVAL) {
		export = EXPORT_RDONLY;
		r = prime_export(fd, handle, export, &buf_fd);
	}
	drmModeDestroyDumbBuffer(fd, handle);
	if (r < 0)
		return r;
	close(buf_fd);
	*ret_export = export;
	return 0;
}

/*
 * The driver's name, with no allocation (drmGetVersion()'s NULL says
 * neither whether the node is no DRM device nor whether memory ran out).
 */
static int driver_name(int fd, char *name, size_t size)
{
	struct drm_version v = { .name_len = size - 1, .name = name };

	memset(name, 0, size);
	if (drmIoctl(fd, DRM_IOCTL_VERSION, &v) != 0)
		return neg_errno();
	return name[0] ? 0 : -ENOTTY;
}

/*
 * Opens a node and checks it.  Returns the fd or a negative errno with
 * *ret_what set ("open", "DRM version", or check_dumb_export()'s step).
 * Sets *driver (malloc'ed) if still NULL and the node names its driver.
 */
static int open_node(const char *sysroot, const struct drm_node *node, char **driver,
		     const char **ret_what, const char **ret_why, uint32_t *ret_export)
{
	_cleanup_close_ int fd = -1;
	char name[64];
	int r;

	*ret_what = "open";
	fd = ion_open_device_node(sysroot, node->path, O_RDWR, "drm", NULL, ret_why);
	if (fd < 0)
		return fd;
	*ret_what = "DRM version";
	r = driver_name(fd, name, sizeof(name));
	if (r < 0)
		return r;
	if (!*driver && !(*driver = strdup(name)))
		return -ENOMEM;
	/*
	 * Opening a card node nobody is master of makes us master, and a
	 * display server started later could not become it (EBUSY).  Dumb
	 * buffers and PRIME need no master: give it up at once.  Before 5.8
	 * only root may drop it: then leave the device alone rather than
	 * hold it for the context's lifetime.
	 */
	if (!node->render && drmDropMaster(fd) != 0 && drmIsMaster(fd)) {
		*ret_what = "dropping DRM master";
		return -EBUSY;
	}
	r = check_dumb_export(fd, ret_what, ret_export);
	if (r < 0)
		return r;
	return steal_fd(&fd);
}

static const char *node_basename(const struct drm_node *node)
{
	const char *slash = strrchr(node->path, '/');

	return slash ? slash + 1 : node->path;
}

/*
 * 1 when the device or a parent sits in an IOMMU group, 0 if not, or
 * -ENOMEM.  The parents count: virtio-gpu's DRM device is the virtio
 * device (on 5.10), which does its DMA through the PCI function above it.
 */
static int behind_iommu(const char *device)
{
	_cleanup_free_ char *dir = strdup(device);
	char *slash;

	if (!dir)
		return -ENOMEM;
	while ((slash = strrchr(dir, '/')) && strcmp(slash, "/devices") != 0) {
		_cleanup_free_ char *group = NULL;

		if (asprintf(&group, "%s/iommu_group", dir) < 0) {
			group = NULL;
			return -ENOMEM;
		}
		if (access(group, F_OK) == 0)
			return 1;
		*slash = '\0';
	}
	return 0;
}

/* 1 when the device is in the device tree, 0 if not, or -ENOMEM. */
static int is_devicetree_device(const char *device)
{
	_cleanup_free_ char *of_node = NULL;

	if (asprintf(&of_node, "%s/of_node", device) < 0) {
		of_node = NULL;
		return -ENOMEM;
	}
	return access(of_node, F_OK) == 0;
}

/*
 * One device, seen through its render node and/or card node.  The render
 * node would be the better one (no master to take, and a user may open it
 * where the card node is closed to them), but the kernel refuses dumb
 * buffers there (CREATE_DUMB lacks DRM_RENDER_ALLOW, EACCES, up to at
 * least 6.1): it is tried first, for kernels that allow it, then the card
 * node.
 */
static int add_device(struct ion_ctx *ctx, struct ion_registry *reg,
		      const struct drm_node *render, const struct drm_node *card,
		      const char *device)
{
	const struct drm_node *tries[] = { render, card };
	const struct drm_node *node = NULL;
	_cleanup_free_ char *driver = NULL, *name = NULL;
	_cleanup_close_ int fd = -1; /* or the negative errno of the last try */
	const char *what = NULL, *why = NULL;
	uint32_t export = 0;
	struct gem_heap *gh;
	struct ion_heap *heap;

	for (size_t i = 0; i < 2 && fd < 0; i++) {
		if (!tries[i])
			continue;
		node = tries[i];
		fd = open_node(ion_ctx_sysroot(ctx), node, &driver, &what, &why, &export);
		if (ion_errno_transient(fd))
			return fd;
		if (fd < 0)
			ion_dbg(ctx, "%s: %s: %s", node->path, what, strerror(-fd));
	}
	if (!driver && strcmp(what, "open") != 0)
		return 0; /* not a DRM device after all */
	if (asprintf(&name, "gem-%s", driver ? driver : node_basename(node)) < 0) {
		name = NULL;
		return -ENOMEM;
	}
	heap = ion_registry_add(reg, &ion_backend_gem, name, sizeof(*gh));
	if (!heap)
		return -ENOMEM;
	gh = heap_container(heap, struct gem_heap);
	gh->fd = -1;
	free(heap->kernel_name);
	heap->kernel_name = strdup(driver ? driver : name);
	if (!heap->kernel_name)
		return -ENOMEM;
	heap->type = ION_HEAP_TYPE_CUSTOM;
	heap->props = ION_HEAP_PROP_CACHED | ION_HEAP_PROP_KERNEL_MAP;
	/*
	 * A device-tree device (an SoC's display or GPU block) with no IOMMU
	 * can only scan out physically contiguous memory, so its driver's
	 * dumb buffers are contiguous (the GEM DMA helpers).  Anything else
	 * may hand out shmem pages: vgem and vkms, which do no DMA, and PC
	 * GPUs with the IOMMU off.
	 */
	if (device) {
		int dt = is_devicetree_device(device), iommu = dt > 0 ? behind_iommu(device) : 0;

		if (dt < 0 || iommu < 0)
			return -ENOMEM;
		if (dt && !iommu)
			heap->props |= ION_HEAP_PROP_CONTIGUOUS;
	}
	/* Its device's own buffers: the device objects find their heap here. */
	if (device && !(heap->sysfs_device = ion_ctx_unroot(ctx, reg->root, device)) && errno == ENOMEM)
		return -ENOMEM;
	heap->node = strdup(node->path);
	if (!heap->node)
		return -ENOMEM;
	if (fd < 0 && why)
		ion_heap_set_unavailable(heap, fd, "%s %s", node->path, why);
	else if (fd < 0 && strcmp(what, "open") == 0) {
		_cleanup_free_ char *hint = fd == -EACCES || fd == -EPERM
						    ? ion_access_hint(node->path) : NULL;

		ion_heap_set_unavailable(heap, fd, "open %s: %s%s%s", node->path,
					 strerror(-fd), hint ? ": " : "", hint ? hint : "");
	}
	else if (fd < 0)
		ion_heap_set_unavailable(heap, fd, "%s: %s", what, strerror(-fd));
	else {
		gh->fd = steal_fd(&fd);
		gh->export_flags = export;
	}
	return 0;
}

static int is_drm_node_name(const struct dirent *d)
{
	return strncmp(d->d_name, "card", 4) == 0 ||
	       strncmp(d->d_name, "renderD", 7) == 0;
}

/* 1 when node is filled in, 0 when name is no char device, or -ENOMEM. */
static int fill_node(struct ion_ctx *ctx, struct drm_node *node, const char *dir,
		     const char *name)
{
	_cleanup_free_ char *path = NULL, *sys = NULL;
	char link[64];
	struct stat st;

	if (asprintf(&path, "%s/%s", dir, name) < 0) {
		path = NULL;
		return -ENOMEM;
	}
	if (stat(path, &st) < 0 || !S_ISCHR(st.st_mode))
		return 0;
	snprintf(link, sizeof(link), "/sys/dev/char/%u:%u/device",
		 major(st.st_rdev), minor(st.st_rdev));
	sys = ion_ctx_path(ctx, link);
	if (!sys)
		return -ENOMEM;
	/* Without sysfs (a bare sysroot) every node counts as its own device;
	 * for want of memory or fds it is no such case, and discovery fails. */
	node->device = realpath(sys, NULL);
	if (!node->device && ion_errno_transient(-errno))
		return -errno;
	node->render = strncmp(name, "renderD", 7) == 0;
	node->path = steal_ptr(&path);
	return 1;
}

static bool same_device(const struct drm_node *a, const struct drm_node *b)
{
	return a == b || (a->device && b->device && strcmp(a->device, b->device) == 0);
}

static int gem_probe(struct ion_ctx *ctx, struct ion_registry *reg)
{
	_cleanup_free_ char *dir = ion_ctx_path(ctx, "/dev/dri");
	struct drm_node *nodes = NULL;
	struct dirent **names;
	int n, count = 0, r = 0;

	if (!dir)
		return -ENOMEM;
	/* versionsort: card2 before card10, so heap order is stable. */
	n = scandir(dir, &names, is_drm_node_name, versionsort);
	if (n < 0)
		return ion_errno_transient(-errno) ? -errno : 0;
	nodes = calloc(n ? (size_t)n : 1, sizeof(*nodes));
	if (!nodes)
		r = -ENOMEM;
	for (int i = 0; i < n; i++) {
		if (r == 0) {
			int k = fill_node(ctx, &nodes[count], dir, names[i]->d_name);

			if (k < 0)
				r = k;
			else
				count += k;
		}
		free(names[i]);
	}
	free(names);

	/* A card node and a render node of one device make one heap. */
	for (int i = 0; i < count && r == 0; i++) {
		const struct drm_node *render = NULL, *card = NULL;

		if (nodes[i].grouped)
			continue;
		for (int j = i; j < count; j++) {
			if (nodes[j].grouped || !same_device(&nodes[i], &nodes[j]))
				continue;
			nodes[j].grouped = true;
			if (nodes[j].render && !render)
				render = &nodes[j];
			if (!nodes[j].render && !card)
				card = &nodes[j];
		}
		r = add_device(ctx, reg, render, card, nodes[i].device);
	}
	for (int i = 0; i < count; i++) {
		free(nodes[i].path);
		free(nodes[i].device);
	}
	free(nodes);
	return r;
}

static int gem_alloc(const struct ion_heap *heap, size_t len,
		     unsigned int flags, int *ret_fd)
{
	const struct gem_heap *gh = heap_container(heap, const struct gem_heap);

	(void)flags; /* a dumb buffer's caching is the driver's */
	return dumb_alloc(gh->fd, len, gh->export_flags, ret_fd);
}

static void gem_destroy(struct ion_heap *heap)
{
	closep(&heap_container(heap, struct gem_heap)->fd);
}

const struct ion_backend ion_backend_gem = {
	.name = "gem",
	.mmap_ignores_offset = true,
	.probe = gem_probe,
	.alloc = gem_alloc,
	.destroy = gem_destroy,
};

#else /* !HAVE_LIBDRM */

static int gem_probe(struct ion_ctx *ctx, struct ion_registry *reg)
{
	(void)reg;
	ion_dbg(ctx, "built without libdrm: no GEM heaps");
	return 0;
}

const struct ion_backend ion_backend_gem = {
	.name = "gem",
	.probe = gem_probe,
};

#endif
