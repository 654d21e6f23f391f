// SPDX-License-Identifier: MIT
/*
 * Android's libdmabufheap C API (<BufferAllocator/BufferAllocatorWrapper.h>)
 * on libion's public API alone, like compat.c is for Android's libion: an
 * allocator is a libion context plus the CPU-access brackets it has open.
 * Heap names go through the context's registry, so they mean something on
 * machines without /dev/dma_heap too.
 */
#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include <BufferAllocator/BufferAllocatorWrapper.h>
#include <ion/ion.h>

#define DMABUFHEAP_EXPORT __attribute__((visibility("default")))

/* An open bracket: the fd and the file behind it, so that a number
 * closed without its end and reused by another buffer is not taken for
 * the old one. */
struct bracket {
	int fd;
	dev_t dev;
	ino_t ino;
};

struct BufferAllocator {
	/* Must come first: the C++ class of <BufferAllocator/BufferAllocator.h>
	 * holds a pointer to this struct as its only member, and every call
	 * reads the first pointer of what it is given.  Here it points to the
	 * struct itself, so both a C allocator and a C++ object work. */
	void *self;
	struct ion_ctx *ctx;
	pthread_mutex_t lock; /* guards brackets */
	struct bracket *brackets;
	size_t n_brackets, cap_brackets;
};

/* The allocator behind what a caller passed (see struct BufferAllocator). */
static struct BufferAllocator *allocator_of(BufferAllocator *arg)
{
	void *self = NULL;

	if (arg)
		memcpy(&self, (const void *)arg, sizeof(self));
	return self;
}

/* Android answers some failures with -1 and errno: set errno as well, so
 * a caller that reads either gets the reason. */
static int fail(int r)
{
	errno = -r;
	return r;
}

static int fd_of(unsigned int dmabuf_fd)
{
	return dmabuf_fd > INT_MAX ? -EBADF : (int)dmabuf_fd;
}

DMABUFHEAP_EXPORT BufferAllocator *CreateDmabufHeapBufferAllocator(void)
{
	struct BufferAllocator *a = calloc(1, sizeof(*a));

	if (!a)
		return NULL;
	if (ion_ctx_new(NULL, &a->ctx) < 0 || pthread_mutex_init(&a->lock, NULL) != 0) {
		ion_ctx_unref(a->ctx);
		free(a);
		errno = ENOMEM;
		return NULL;
	}
	a->self = a;
	return (BufferAllocator *)a;
}

DMABUFHEAP_EXPORT void FreeDmabufHeapBufferAllocator(BufferAllocator *buffer_allocator)
{
	struct BufferAllocator *a = allocator_of(buffer_allocator);

	if (!a)
		return;
	ion_ctx_unref(a->ctx);
	pthread_mutex_destroy(&a->lock);
	free(a->brackets);
	free(a);
}

/* What the kernel or board files may call the CMA heap; the registry
 * finds it under "cma" whatever its name. */
static bool is_cma_name(const char *name)
{
	static const char *const names[] = {
		"linux,cma", "reserved", "default-pool", "default_cma_region",
	};

	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++)
		if (strcmp(name, names[i]) == 0)
			return true;
	return false;
}

/* The registry's answer for a name: the heap of that name or alias; the
 * CMA heap under any of its names; for "system", the best available heap
 * of ION's system type (a DMA-BUF or ION system heap, udmabuf, memfd),
 * even where the kernel's own "system" heap cannot be opened. */
static int alloc_by_name(struct BufferAllocator *a, const char *name, size_t len, int *ret_fd)
{
	const struct ion_heap *heap;
	int r;

	if (strcmp(name, kDmabufSystemHeapName) == 0) {
		r = ion_ctx_alloc_mask(a->ctx, ION_HEAP_SYSTEM_MASK, len, ION_FLAG_CACHED,
				       ret_fd, NULL);
	} else {
		r = ion_ctx_find_heap(a->ctx, name, &heap);
		if (r == -ENOENT && is_cma_name(name))
			r = ion_ctx_find_heap(a->ctx, name = "cma", &heap);
		/* By name the heap is the caller's choice: no cache flag
		 * steers it to another. */
		if (r == 0)
			r = ion_ctx_alloc(a->ctx, name, len, 0, ret_fd);
	}
	/* What Android's open() of a missing node says. */
	return r == -ENODEV ? -ENOENT : r;
}

DMABUFHEAP_EXPORT int DmabufHeapAlloc2(BufferAllocator *buffer_allocator, const char *heap_name,
				       size_t len, unsigned int heap_flags)
{
	struct BufferAllocator *a = allocator_of(buffer_allocator);
	int fd, r;

	(void)heap_flags; /* Android ignores it too */
	if (!a || !heap_name)
		return fail(-EINVAL);
	r = alloc_by_name(a, heap_name, len, &fd);
	if (r < 0)
		return fail(r);
	/* Named after its heap, as Android names them; a buffer that cannot
	 * be named (a memfd, an old kernel) is still a good buffer. */
	(void)ion_fd_set_name(fd, heap_name);
	return fd;
}

DMABUFHEAP_EXPORT int DmabufHeapAllocSystem2(BufferAllocator *buffer_allocator,
					     bool cpu_access, size_t len, unsigned int heap_flags)
{
	struct BufferAllocator *a = allocator_of(buffer_allocator);
	const struct ion_heap *heap;

	if (!a)
		return fail(-EINVAL);
	/* Looked up in this allocator's registry on every call (discovered
	 * once per allocator), where Android probes once per process. */
	if (!cpu_access &&
	    ion_ctx_find_heap(a->ctx, kDmabufSystemUncachedHeapName, &heap) == 0 &&
	    ion_heap_get_error(heap) == 0)
		return DmabufHeapAlloc2(buffer_allocator, kDmabufSystemUncachedHeapName, len,
					heap_flags);
	return DmabufHeapAlloc2(buffer_allocator, kDmabufSystemHeapName, len, heap_flags);
}

/* The open bracket of fd, or -1; one whose file is gone or replaced
 * (the fd was closed without its end) is dropped.  Called locked. */
static ssize_t bracket_find(struct BufferAllocator *a, int fd)
{
	struct stat st;
	int have = fstat(fd, &st) == 0;

	for (size_t i = 0; i < a->n_brackets; i++) {
		struct bracket *b = &a->brackets[i];

		if (b->fd != fd)
			continue;
		if (have && b->dev == st.st_dev && b->ino == st.st_ino)
			return (ssize_t)i;
		a->brackets[i] = a->brackets[--a->n_brackets];
		return -1;
	}
	return -1;
}

static int bracket_add(struct BufferAllocator *a, int fd)
{
	struct stat st;

	if (fstat(fd, &st) < 0)
		return -errno;
	if (a->n_brackets == a->cap_brackets) {
		size_t cap = a->cap_brackets ? 2 * a->cap_brackets : 8;
		struct bracket *b = realloc(a->brackets, cap * sizeof(*b));

		if (!b)
			return -ENOMEM;
		a->brackets = b;
		a->cap_brackets = cap;
	}
	a->brackets[a->n_brackets++] = (struct bracket){ fd, st.st_dev, st.st_ino };
	return 0;
}

static bool sync_type_valid(SyncType sync_type)
{
	return sync_type == kSyncRead || sync_type == kSyncWrite || sync_type == kSyncReadWrite;
}

/* Start: no bracket may be open on the fd; the kernel's START, then the
 * bracket recorded (room for it is made first, so a failure to record
 * never leaves a started bracket that cannot be ended). */
static int sync_start(struct BufferAllocator *a, int fd, SyncType sync_type)
{
	int r;

	if (bracket_find(a, fd) >= 0)
		return -EINVAL;
	r = bracket_add(a, fd);
	if (r < 0)
		return r;
	r = ion_sync(fd, ION_SYNC_START | (unsigned int)sync_type);
	if (r < 0)
		a->n_brackets--;
	return r;
}

/* End: only a bracket this allocator opened; closed whatever the kernel
 * says, so that the caller can start again. */
static int sync_end(struct BufferAllocator *a, int fd, SyncType sync_type)
{
	ssize_t i = bracket_find(a, fd);

	if (i < 0)
		return -EINVAL;
	a->brackets[i] = a->brackets[--a->n_brackets];
	return ion_sync(fd, ION_SYNC_END | (unsigned int)sync_type);
}

static int cpu_sync(BufferAllocator *buffer_allocator, unsigned int dmabuf_fd,
		    SyncType sync_type, bool start)
{
	struct BufferAllocator *a = allocator_of(buffer_allocator);
	int fd = fd_of(dmabuf_fd);
	int r;

	if (!a || !sync_type_valid(sync_type))
		return fail(-EINVAL);
	if (fd < 0)
		return fail(fd);
	pthread_mutex_lock(&a->lock);
	r = start ? sync_start(a, fd, sync_type) : sync_end(a, fd, sync_type);
	pthread_mutex_unlock(&a->lock);
	return r < 0 ? fail(r) : 0;
}

DMABUFHEAP_EXPORT int DmabufHeapCpuSyncStart2(BufferAllocator *buffer_allocator,
					      unsigned int dmabuf_fd, SyncType sync_type)
{
	return cpu_sync(buffer_allocator, dmabuf_fd, sync_type, true);
}

DMABUFHEAP_EXPORT int DmabufHeapCpuSyncEnd2(BufferAllocator *buffer_allocator,
					    unsigned int dmabuf_fd, SyncType sync_type)
{
	return cpu_sync(buffer_allocator, dmabuf_fd, sync_type, false);
}

DMABUFHEAP_EXPORT int DmabufSetName(BufferAllocator *buffer_allocator, unsigned int dmabuf_fd,
				    const char *name)
{
	int fd = fd_of(dmabuf_fd);
	int r;

	if (!allocator_of(buffer_allocator) || !name)
		return fail(-EINVAL);
	if (fd < 0)
		return fail(fd);
	r = ion_fd_set_name(fd, name);
	return r < 0 ? fail(r) : 0;
}

/* ---- the deprecated calls: what Android's do now ---- */

DMABUFHEAP_EXPORT int DmabufHeapAlloc(BufferAllocator *buffer_allocator, const char *heap_name,
				      size_t len, unsigned int heap_flags, size_t legacy_align)
{
	(void)legacy_align;
	return DmabufHeapAlloc2(buffer_allocator, heap_name, len, heap_flags);
}

DMABUFHEAP_EXPORT int DmabufHeapAllocSystem(BufferAllocator *buffer_allocator, bool cpu_access,
					    size_t len, unsigned int heap_flags,
					    size_t legacy_align)
{
	(void)legacy_align;
	return DmabufHeapAllocSystem2(buffer_allocator, cpu_access, len, heap_flags);
}

DMABUFHEAP_EXPORT int MapDmabufHeapNameToIonHeap(BufferAllocator *buffer_allocator,
						 const char *heap_name, const char *ion_heap_name,
						 unsigned int ion_heap_flags,
						 unsigned int legacy_ion_heap_mask,
						 unsigned int legacy_ion_heap_flags)
{
	(void)heap_name, (void)ion_heap_name, (void)ion_heap_flags;
	(void)legacy_ion_heap_mask, (void)legacy_ion_heap_flags;
	return allocator_of(buffer_allocator) ? 0 : fail(-EINVAL);
}

DMABUFHEAP_EXPORT int DmabufHeapCpuSyncStart(BufferAllocator *buffer_allocator,
					     unsigned int dmabuf_fd, SyncType sync_type,
					     int (*legacy_ion_cpu_sync)(int, int, void *),
					     void *legacy_ion_custom_data)
{
	(void)legacy_ion_cpu_sync, (void)legacy_ion_custom_data;
	return DmabufHeapCpuSyncStart2(buffer_allocator, dmabuf_fd, sync_type);
}

DMABUFHEAP_EXPORT int DmabufHeapCpuSyncEnd(BufferAllocator *buffer_allocator,
					   unsigned int dmabuf_fd, SyncType sync_type,
					   int (*legacy_ion_cpu_sync)(int, int, void *),
					   void *legacy_ion_custom_data)
{
	(void)legacy_ion_cpu_sync, (void)legacy_ion_custom_data;
	return DmabufHeapCpuSyncEnd2(buffer_allocator, dmabuf_fd, sync_type);
}

DMABUFHEAP_EXPORT bool CheckIonSupport(void)
{
	return false;
}
