// SPDX-License-Identifier: MIT
/*
 * ION (drivers/staging/android, up to Linux 5.10), in both its ABIs:
 *
 *  - legacy (before 4.12): ION_IOC_ALLOC returns a handle that lives in
 *    the /dev/ion file; ION_IOC_SHARE makes a dma-buf fd of it, and the
 *    handle is freed at once so that the fd alone owns the buffer.
 *  - modern (4.12 to 5.10): ION_IOC_ALLOC returns the dma-buf fd.
 *
 * Heaps come from ION_IOC_HEAP_QUERY where the kernel has it.  That is
 * every modern kernel but also the last legacy ones (4.10, 4.11 and
 * Android's 4.9 have the query and handles both), so the query says
 * nothing about the ABI: ION_IOC_FREE does.  Older legacy kernels
 * cannot list heaps; a page-sized allocation on each id finds them.
 */
#include <fcntl.h>
#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

#include <ion/ion.h>

#include "backend.h"
#include "sysfs.h"
#include "uapi/ion.h"

#define ION_CACHE_FLAGS (ION_FLAG_CACHED | ION_FLAG_CACHED_NEEDS_SYNC)
/* The legacy structs hold size_t: their layout is the caller's. */
#define NATIVE_USER_BITS ((unsigned int)(sizeof(size_t) * CHAR_BIT))

struct ion_abi {
	const char *name;
	bool legacy;
};

/* One open /dev/ion and its ABI, shared by the heaps it lists: a legacy
 * kernel's handles live in the open file. */
struct ion_dev {
	unsigned int refs;	/* discovery and destroy run under the context's lock */
	int fd;
	const struct ion_abi *abi;
};

struct ion_dev_heap {
	struct ion_heap heap;
	struct ion_dev *dev;
	uint32_t kernel_id;	/* the kernel's own heap id */
};

static const struct ion_abi abi_modern = { "4.12+", false };
static const struct ion_abi abi_legacy = { "legacy (handles)", true };

/*
 * The ABI of each /dev/ion seen, for the life of the process: a kernel
 * does not change its ABI, and every context would otherwise probe again.
 * Keyed by the node (the device it stands for, and the node file itself,
 * which tells regular files apart too), not by the context: sysroots may
 * hold other nodes.
 */
#define ABI_CACHE_SIZE 8
static struct {
	dev_t rdev;
	dev_t dev;
	ino_t ino;
	const struct ion_abi *abi;
} abi_cache[ABI_CACHE_SIZE];
static unsigned int abi_cache_len;
static pthread_mutex_t abi_cache_lock = PTHREAD_MUTEX_INITIALIZER;

/* The ABI of the /dev/ion open as fd, or NULL with *ret_error when the
 * probe itself failed (nothing is cached then). */
static const struct ion_abi *detect_abi(int fd, int *ret_error)
{
	struct ion_legacy_handle_data probe = { .handle = 0 };
	const struct ion_abi *abi = NULL;
	struct stat st;
	bool keyed = fstat(fd, &st) == 0;

	pthread_mutex_lock(&abi_cache_lock);
	for (unsigned int i = 0; keyed && !abi && i < abi_cache_len; i++)
		if (abi_cache[i].rdev == st.st_rdev && abi_cache[i].dev == st.st_dev &&
		    abi_cache[i].ino == st.st_ino)
			abi = abi_cache[i].abi;
	if (!abi) {
		/*
		 * Handle 0 is never valid: a legacy kernel says EINVAL, a
		 * modern one, which has no ION_IOC_FREE, ENOTTY.  Neither
		 * logs anything (AOSP's libion tells them apart the same way).
		 */
		int r = ion_ioctl_retry(fd, ION_LEGACY_IOC_FREE, &probe);

		if (r == -ENOTTY)
			abi = &abi_modern;
		else if (r == -EINVAL)
			abi = &abi_legacy;
		else
			*ret_error = r < 0 ? r : -EIO; /* a guess would stick */
		if (abi && keyed && abi_cache_len < ABI_CACHE_SIZE) {
			abi_cache[abi_cache_len].rdev = st.st_rdev;
			abi_cache[abi_cache_len].dev = st.st_dev;
			abi_cache[abi_cache_len].ino = st.st_ino;
			abi_cache[abi_cache_len++].abi = abi;
		}
	}
	pthread_mutex_unlock(&abi_cache_lock);
	return abi;
}

int ion_legacy_alloc_handle(int dev_fd, unsigned int user_bits, size_t len,
			    uint32_t heap_mask, unsigned int flags,
			    int *ret_handle)
{
	int r;

	if (user_bits == 64) {
		struct ion_legacy_allocation_data64 data = {
			.len = len,
			.heap_id_mask = heap_mask,
			.flags = flags,
		};

		r = ion_ioctl_retry(dev_fd, ION_LEGACY_IOC_ALLOC64, &data);
		if (r == 0)
			*ret_handle = data.handle;
		return r;
	}
	if (user_bits == 32) {
		struct ion_legacy_allocation_data32 data = {
			.len = (uint32_t)len,
			.heap_id_mask = heap_mask,
			.flags = flags,
		};

		/* Only a 64-bit size_t can exceed it (and -Wtype-limits
		 * refuses the comparison on 32-bit machines). */
#if SIZE_MAX > UINT32_MAX
		if (len > UINT32_MAX)
			return -EINVAL;
#endif
		r = ion_ioctl_retry(dev_fd, ION_LEGACY_IOC_ALLOC32, &data);
		if (r == 0)
			*ret_handle = data.handle;
		return r;
	}
	return -EINVAL;
}

static int legacy_free_handle(int dev_fd, int handle)
{
	struct ion_legacy_handle_data data = { .handle = handle };

	return ion_ioctl_retry(dev_fd, ION_LEGACY_IOC_FREE, &data);
}

static int legacy_alloc(int dev_fd, size_t len, uint32_t heap_mask,
			unsigned int flags, int *ret_fd)
{
	struct ion_legacy_fd_data share = { .fd = -1 };
	int r, r_free;

	r = ion_legacy_alloc_handle(dev_fd, NATIVE_USER_BITS, len, heap_mask,
				    flags, &share.handle);
	if (r < 0)
		return r;
	r = ion_ioctl_retry(dev_fd, ION_LEGACY_IOC_SHARE, &share);
	/* Shared or not, the handle must go: it would pin the buffer for as
	 * long as /dev/ion stays open, which is the context's lifetime. */
	r_free = legacy_free_handle(dev_fd, share.handle);
	if (r < 0)
		return r;
	if (r_free < 0) {
		close(share.fd);
		return r_free;
	}
	*ret_fd = share.fd;
	return 0;
}

static int modern_alloc(int dev_fd, size_t len, uint32_t heap_mask,
			unsigned int flags, int *ret_fd)
{
	struct ion_new_allocation_data data = {
		.len = len,
		.heap_id_mask = heap_mask,
		.flags = flags,
	};
	int r;

	r = ion_ioctl_retry(dev_fd, ION_NEW_IOC_ALLOC, &data);
	if (r < 0)
		return r;
	*ret_fd = (int)data.fd;
	return 0;
}

/* ION keys caching on ION_FLAG_CACHED for every heap type. */
static unsigned int type_props(unsigned int type)
{
	/* No ION_HEAP_PROP_KERNEL_MAP: staging ION (up to 5.10) has no vmap,
	 * and vivid's vmalloc queue refuses its buffers (measured on 5.10);
	 * a board file for an Android ION that has it can say KernelMap. */
	unsigned int props = ION_HEAP_PROP_CACHED | ION_HEAP_PROP_UNCACHED;

	if (type == ION_HEAP_TYPE_SYSTEM_CONTIG || type == ION_HEAP_TYPE_DMA ||
	    type == ION_HEAP_TYPE_CARVEOUT)
		props |= ION_HEAP_PROP_CONTIGUOUS;
	return props;
}

/* The key under which other backends offer the same memory; 0 or -ENOMEM. */
static int type_memory_key(unsigned int type, const char *name, char **ret_key)
{
	char *key;

	switch (type) {
	case ION_HEAP_TYPE_SYSTEM:
		key = strdup("system");
		break;
	case ION_HEAP_TYPE_SYSTEM_CONTIG:
		key = strdup("system-contig");
		break;
	case ION_HEAP_TYPE_DMA:
		key = ion_cma_memory_key(name);
		break;
	default:
		*ret_key = NULL;
		return 0;
	}
	if (!key)
		return -ENOMEM;
	*ret_key = key;
	return 0;
}

/*
 * Adds a kernel heap with its memory key; the registry drops it if an
 * earlier backend offers the same memory.  0 or -ENOMEM; *ret_heap (may
 * be NULL) is the heap added.
 */
static int add_heap(struct ion_registry *reg, struct ion_dev *dev,
		    const char *node, const char *name, unsigned int type,
		    uint32_t kernel_id, struct ion_heap **ret_heap)
{
	struct ion_dev_heap *ih;
	struct ion_heap *heap;

	heap = ion_registry_add(reg, &ion_backend_ion, name, sizeof(*ih));
	if (!heap)
		return -ENOMEM;
	ih = heap_container(heap, struct ion_dev_heap);
	ih->dev = dev;
	dev->refs++;
	ih->kernel_id = kernel_id;
	heap->type = type;
	heap->props = type_props(type) | (dev->abi->legacy ? ION_HEAP_PROP_ION_LEGACY : 0);
	/* ion_system_contig_heap: one buddy allocation of the largest order
	 * (MAX_ORDER - 1, 1024 pages), larger requests answer ENOMEM. */
	if (type == ION_HEAP_TYPE_SYSTEM_CONTIG)
		heap->max_len = (uint64_t)ion_page_size() << 10;
	heap->node = strdup(node);
	if (!heap->node || type_memory_key(type, name, &heap->memory_key) < 0)
		return -ENOMEM;
	if (ret_heap)
		*ret_heap = heap;
	return 0;
}

/* ION_IOC_HEAP_QUERY: the count, then the list.  -ENOTTY: no such ioctl. */
static int query_heaps(int fd, struct ion_new_heap_data **ret_heaps,
		       unsigned int *ret_n)
{
	struct ion_new_heap_query query = { 0 };
	_cleanup_free_ struct ion_new_heap_data *heaps = NULL;
	int r;

	r = ion_ioctl_retry(fd, ION_NEW_IOC_HEAP_QUERY, &query);
	if (r < 0)
		return r;
	if (query.cnt > 0) {
		heaps = calloc(query.cnt, sizeof(*heaps));
		if (!heaps)
			return -ENOMEM;
		query.heaps = (uintptr_t)heaps;
		r = ion_ioctl_retry(fd, ION_NEW_IOC_HEAP_QUERY, &query);
		if (r < 0)
			return r;
	}
	*ret_heaps = steal_ptr(&heaps);
	*ret_n = query.cnt;
	return 0;
}

static int add_queried_heaps(struct ion_ctx *ctx, struct ion_registry *reg,
			     struct ion_dev *dev, const char *node,
			     const struct ion_new_heap_data *heaps, unsigned int n)
{
	for (unsigned int i = 0; i < n; i++) {
		char name[sizeof(heaps[i].name) + 1];
		int r;

		memcpy(name, heaps[i].name, sizeof(heaps[i].name));
		name[sizeof(heaps[i].name)] = '\0';
		if (heaps[i].heap_id >= ION_NUM_HEAP_IDS) {
			ion_dbg(ctx, "ION heap %s: id %u fits no heap mask", name,
				heaps[i].heap_id);
			continue;
		}
		if (!name[0])
			snprintf(name, sizeof(name), "ion-%u", heaps[i].heap_id);
		r = add_heap(reg, dev, node, name, heaps[i].type, heaps[i].heap_id, NULL);
		if (r < 0)
			return r;
	}
	return 0;
}

/*
 * Legacy kernels before 4.10 cannot list heaps: an allocation on each id
 * finds them (ENODEV: no heap has that id).  Named "ion-<id>", typed by
 * the legacy convention that heap ids below CUSTOM equal their types.
 */
static int probe_legacy_heaps(struct ion_ctx *ctx, struct ion_registry *reg,
			      struct ion_dev *dev, const char *node)
{
	int fd = dev->fd;

	for (uint32_t id = 0; id < ION_NUM_HEAP_IDS; id++) {
		unsigned int type = id < ION_HEAP_TYPE_CUSTOM ? id : ION_HEAP_TYPE_CUSTOM;
		struct ion_heap *heap;
		char name[16];
		int handle, r, r_add;

		r = ion_legacy_alloc_handle(fd, NATIVE_USER_BITS, ion_page_size(),
					    1U << id, 0, &handle);
		if (r == -ENODEV)
			continue;
		if (r == 0 && legacy_free_handle(fd, handle) < 0)
			ion_dbg(ctx, "ION heap %u: probe handle not freed: %m", id);
		snprintf(name, sizeof(name), "ion-%u", id);
		r_add = add_heap(reg, dev, node, name, type, id, &heap);
		if (r_add < 0)
			return r_add;
		/* Out of memory now is not for ever; a heap that refuses a
		 * plain page (a secure heap wants its own flags) is of no use. */
		if (r < 0 && r != -ENOMEM)
			ion_heap_set_unavailable(heap, r, "probe allocation on %s: %s",
						 node, strerror(-r));
	}
	return 0;
}

/* A /dev/ion we cannot use: one heap "ion" tells why ("open /dev/ion: ..."). */
static int add_broken(struct ion_registry *reg, const char *node, const char *what,
		      const char *why, int error)
{
	struct ion_heap *heap;

	heap = ion_registry_add(reg, &ion_backend_ion, "ion", sizeof(struct ion_dev_heap));
	if (!heap)
		return -ENOMEM;
	heap->node = strdup(node);
	if (!heap->node)
		return -ENOMEM;
	if (why) {
		ion_heap_set_unavailable(heap, error, "%s %s", node, why);
	} else {
		_cleanup_free_ char *hint = error == -EACCES || error == -EPERM
						    ? ion_access_hint(node) : NULL;

		ion_heap_set_unavailable(heap, error, "%s %s: %s%s%s", what, node,
					 strerror(-error), hint ? ": " : "", hint ? hint : "");
	}
	return 0;
}

static void dev_unref(struct ion_dev *dev)
{
	if (dev && --dev->refs == 0) {
		close(dev->fd);
		free(dev);
	}
}

static int iondev_probe(struct ion_ctx *ctx, struct ion_registry *reg)
{
	_cleanup_free_ char *node = ion_ctx_path(ctx, "/dev/ion");
	_cleanup_free_ struct ion_new_heap_data *heaps = NULL;
	_cleanup_close_ int fd = -1;
	const struct ion_abi *abi;
	const char *why = NULL;
	struct ion_dev *dev;
	unsigned int n = 0;
	int r;

	if (!node)
		return -ENOMEM;
	/* The misc device "ion": a FIFO or a file there must not hang us. */
	fd = ion_open_device_node(ion_ctx_sysroot(ctx), node, O_RDONLY, "misc", "ion", &why);
	if (fd < 0) {
		r = fd;
		if (r == -ENOENT || r == -ENOTDIR)
			return 0; /* no ION here */
		if (ion_errno_transient(r))
			return r;
		return add_broken(reg, node, "open", why, r);
	}
	abi = detect_abi(fd, &r);
	if (!abi)
		return ion_errno_transient(r) ? r : add_broken(reg, node, "ABI probe on", NULL, r);
	ion_dbg(ctx, "%s: ION ABI %s", node, abi->name);
	r = query_heaps(fd, &heaps, &n);
	if (ion_errno_transient(r))
		return r;
	if (r < 0 && !(r == -ENOTTY && abi->legacy))
		/* Every modern ION lists its heaps: this is no ION we know. */
		return add_broken(reg, node, "ION_IOC_HEAP_QUERY on", NULL, r);
	dev = calloc(1, sizeof(*dev));
	if (!dev)
		return -ENOMEM;
	dev->fd = steal_fd(&fd);
	dev->abi = abi;
	dev->refs = 1; /* this probe's, dropped below */
	if (r == 0)
		r = add_queried_heaps(ctx, reg, dev, node, heaps, n);
	else
		r = probe_legacy_heaps(ctx, reg, dev, node);
	dev_unref(dev);
	return r;
}

static int iondev_alloc(const struct ion_heap *heap, size_t len,
			unsigned int flags, int *ret_fd)
{
	const struct ion_dev_heap *ih = heap_container(heap, const struct ion_dev_heap);
	uint32_t mask = 1U << ih->kernel_id;

	flags &= ION_CACHE_FLAGS;
	if (ih->dev->abi->legacy)
		return legacy_alloc(ih->dev->fd, len, mask, flags, ret_fd);
	return modern_alloc(ih->dev->fd, len, mask, flags, ret_fd);
}

/* For kernels before 4.6, whose dma-bufs have no DMA_BUF_IOCTL_SYNC. */
static int iondev_sync(const struct ion_heap *heap, int buf_fd)
{
	const struct ion_dev_heap *ih = heap_container(heap, const struct ion_dev_heap);
	struct ion_legacy_fd_data data = { .fd = buf_fd };
	int r;

	/* Modern ION buffers take DMA_BUF_IOCTL_SYNC, which sync.c tried. */
	if (!ih->dev || !ih->dev->abi->legacy)
		return -ENOTTY;
	r = ion_ioctl_retry(ih->dev->fd, ION_LEGACY_IOC_SYNC, &data);
	/* EINVAL: a dma-buf, but not ION's. */
	return r == -EINVAL ? -ENOTTY : r;
}

static void iondev_destroy(struct ion_heap *heap)
{
	dev_unref(heap_container(heap, struct ion_dev_heap)->dev);
}

const struct ion_backend ion_backend_ion = {
	.name = "ion",
	.probe = iondev_probe,
	.alloc = iondev_alloc,
	.sync = iondev_sync,
	.destroy = iondev_destroy,
};
