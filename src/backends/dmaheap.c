// SPDX-License-Identifier: MIT
/* DMA-BUF heaps: every node under /dev/dma_heap (Linux 5.6+). */
#include <dirent.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>

#include <ion/ion.h>

#include "backend.h"
#include "uapi/dma-heap.h"

/* "-uncached" or "-dma32" at the end of name: removes it and says so. */
static bool strip_suffix(char *name, const char *suffix)
{
	size_t len = strlen(name), slen = strlen(suffix);

	if (len <= slen || strcmp(name + len - slen, suffix) != 0)
		return false;
	name[len - slen] = '\0';
	return true;
}

/*
 * What a heap is, from its name: DMA-BUF heaps take no flags, so kernels
 * carry properties in names (mainline's "system" and CMA heap; vendor
 * kernels' "system-uncached", "system-dma32", "cma-uncached", ...;
 * 6.18's TEE heaps "protected,*").  A name this does not know tells
 * nothing; a board file can say what it is.  0 or -ENOMEM.
 */
static int describe(struct ion_heap *heap, const char *name)
{
	_cleanup_free_ char *base = strdup(name);
	bool dma32, uncached;

	if (!base)
		return -ENOMEM;
	dma32 = strip_suffix(base, "-dma32");
	uncached = strip_suffix(base, "-uncached");
	heap->props = uncached ? ION_HEAP_PROP_UNCACHED : ION_HEAP_PROP_CACHED;
	if (dma32)
		heap->address_bits = 32;
	if (strcmp(base, "system") == 0) {
		heap->type = ION_HEAP_TYPE_SYSTEM;
		heap->props |= ION_HEAP_PROP_KERNEL_MAP;
		heap->memory_key = strdup(name);
	} else if (ion_is_cma_name(base)) {
		heap->type = ION_HEAP_TYPE_DMA;
		heap->props |= ION_HEAP_PROP_CONTIGUOUS | ION_HEAP_PROP_KERNEL_MAP;
		/* 6.17 lists the default area under two names: one memory. */
		heap->memory_key = uncached || dma32 ? strdup(name) : ion_cma_memory_key(name);
	} else if (strncmp(name, "protected,", 10) == 0) {
		heap->type = ION_HEAP_TYPE_CUSTOM;
		heap->props = ION_HEAP_PROP_PROTECTED;
		heap->memory_key = strdup(name);
	} else {
		heap->type = ION_HEAP_TYPE_CUSTOM;
		heap->props = 0;
		heap->memory_key = strdup(name);
	}
	return heap->memory_key ? 0 : -ENOMEM;
}

struct dmaheap_heap {
	struct ion_heap heap;
	int fd;		/* the node, O_RDONLY|O_CLOEXEC, or -1: opened per call */
	dev_t rdev;	/* the node's device number, checked when reopened */
};

/*
 * A registry keeps at most this many heap nodes open, and at most a 32nd
 * of the soft RLIMIT_NOFILE: a machine (or a sysroot) with thousands of
 * heap nodes must not fill the fd table, or every call would fail with
 * EMFILE, memfd's too.  Real machines have a handful of heaps; the rest
 * are opened, checked against the device number discovery saw, and
 * closed around each allocation.
 */
#define HELD_NODES_MAX 32

static unsigned int held_nodes_cap(void)
{
	struct rlimit rl;

	if (getrlimit(RLIMIT_NOFILE, &rl) < 0 || rl.rlim_cur == RLIM_INFINITY)
		return HELD_NODES_MAX;
	return rl.rlim_cur / 32 < HELD_NODES_MAX ? (unsigned int)(rl.rlim_cur / 32)
						  : HELD_NODES_MAX;
}

/* Fills in a heap found as dir/name; 0, or a transient error.  A node
 * that cannot be used leaves the heap listed unavailable with the reason. */
static int add_heap(struct ion_ctx *ctx, struct dmaheap_heap *dh, const char *dir,
		    const char *name, unsigned int *held, unsigned int held_cap)
{
	struct ion_heap *heap = &dh->heap;
	struct stat st;
	int r;

	char target[256];
	ssize_t n;

	if (asprintf(&heap->node, "%s/%s", dir, name) < 0) {
		heap->node = NULL;
		return -ENOMEM;
	}
	/*
	 * A link to another heap of the folder (Pi OS's udev rule makes
	 * vidbuf_cached -> linux,cma) is that heap under a second name: the
	 * same description and memory, so that the registry merges the two.
	 */
	n = readlink(heap->node, target, sizeof(target) - 1);
	if (n > 0) {
		target[n] = '\0';
		if (strncmp(target, "./", 2) == 0)
			memmove(target, target + 2, strlen(target + 2) + 1);
		if (!strchr(target, '/') && target[0] != '.')
			name = target;
	}
	r = describe(heap, name);
	if (r < 0)
		return r;
	/* Like libgpiod's chip check: a dma_heap class device, says sysfs. */
	r = ion_heap_open_node(ctx, heap, O_RDONLY, "dma_heap", NULL, &dh->fd);
	if (r < 0 || dh->fd < 0)
		return r;
	if (fstat(dh->fd, &st) < 0) {
		r = neg_errno();
		closep(&dh->fd);
		if (ion_errno_transient(r))
			return r;
		ion_heap_set_unavailable(heap, r, "fstat %s: %s", heap->node, strerror(-r));
		return 0;
	}
	dh->rdev = st.st_rdev;
	if (*held >= held_cap)
		closep(&dh->fd);
	else
		(*held)++;
	return 0;
}

static int dmaheap_probe(struct ion_ctx *ctx, struct ion_registry *reg)
{
	_cleanup_free_ char *dir = ion_ctx_path(ctx, "/dev/dma_heap");
	struct dirent **names;
	unsigned int held = 0, held_cap = held_nodes_cap();
	int n, r = 0;

	if (!dir)
		return -ENOMEM;
	/* Sorted, so that heap order and names are stable across runs. */
	n = scandir(dir, &names, NULL, alphasort);
	if (n < 0)
		return ion_errno_transient(-errno) ? -errno : 0;
	for (int i = 0; i < n; i++) {
		const char *name = names[i]->d_name;
		struct ion_heap *heap;

		if (name[0] == '.')
			continue;
		heap = ion_registry_add(reg, &ion_backend_dmaheap, name,
					sizeof(struct dmaheap_heap));
		if (!heap) {
			r = -ENOMEM;
			break;
		}
		heap_container(heap, struct dmaheap_heap)->fd = -1;
		r = add_heap(ctx, heap_container(heap, struct dmaheap_heap), dir, name,
			     &held, held_cap);
		if (r < 0)
			break;
	}
	for (int i = 0; i < n; i++)
		free(names[i]);
	free(names);
	return r;
}

/* A node not kept open, opened for one call: the fd, or a negative errno
 * (-ENODEV when another device now stands at the path). */
static int reopen(const struct dmaheap_heap *dh)
{
	_cleanup_close_ int fd = open(dh->heap.node, O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY);
	struct stat st;

	if (fd < 0)
		return neg_errno();
	if (fstat(fd, &st) < 0)
		return neg_errno();
	if (!S_ISCHR(st.st_mode) || st.st_rdev != dh->rdev)
		return -ENODEV;
	return steal_fd(&fd);
}

static int dmaheap_alloc(const struct ion_heap *heap, size_t len,
			 unsigned int flags, int *ret_fd)
{
	const struct dmaheap_heap *dh = heap_container(heap, const struct dmaheap_heap);
	struct dma_heap_allocation_data data = {
		.len = len,
		.fd_flags = O_RDWR | O_CLOEXEC,
	};
	int r;

	(void)flags; /* dma-heaps take no flags: caching is the heap's */
	if (dh->fd >= 0) {
		r = ion_ioctl_retry(dh->fd, DMA_HEAP_IOCTL_ALLOC, &data);
	} else {
		_cleanup_close_ int fd = reopen(dh);

		r = fd < 0 ? fd : ion_ioctl_retry(fd, DMA_HEAP_IOCTL_ALLOC, &data);
	}
	if (r < 0)
		return r;
	*ret_fd = (int)data.fd;
	return 0;
}

static void dmaheap_destroy(struct ion_heap *heap)
{
	closep(&heap_container(heap, struct dmaheap_heap)->fd);
}

const struct ion_backend ion_backend_dmaheap = {
	.name = "dma-heap",
	.probe = dmaheap_probe,
	.alloc = dmaheap_alloc,
	.destroy = dmaheap_destroy,
};
