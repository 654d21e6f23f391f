// SPDX-License-Identifier: MIT
/*
 * Android libion's API as a thin layer over the context API.
 *
 * A client is an fd from ion_open(); all clients of a process share one
 * context (discovery runs once while any client is open).  Handles live
 * here, not in the kernel: a handle names a buffer fd the client holds,
 * which is what lets the handle calls work on every backend.
 */
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/vfs.h>

#include <ion/ion.h>

#include "compat.h"
#include "context.h"
#include "fork.h"
#include "sysfs.h"


struct client {
	int *handles;	/* handle h is handles[h - 1]: a buffer fd, or -1 */
	unsigned int n_handles;
	/* The file behind the client fd: a number reused by another file
	 * after a plain close() is no client of ours. */
	dev_t dev, rdev;
	ino_t ino;
};

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;

/* fork() waits for the lock, so that the child never inherits it held
 * (called by fork.c's handlers, which order every lock). */
void ion_compat_fork_prepare(void)
{
	pthread_mutex_lock(&lock);
}

void ion_compat_fork_done(void)
{
	pthread_mutex_unlock(&lock);
}

/* The lock, with cancellation off while it is held: a cancelled thread
 * must not leave it locked. */
static void lock_clients(int *state)
{
	ion_fork_handlers_register();
	pthread_setcancelstate(PTHREAD_CANCEL_DISABLE, state);
	ion_fork_gate_enter();
	pthread_mutex_lock(&lock);
}

static void unlock_clients(int state)
{
	pthread_mutex_unlock(&lock);
	ion_fork_gate_leave();
	pthread_setcancelstate(state, NULL);
}
static struct ion_ctx *shared_ctx;
static struct client **clients; /* indexed by client fd */
static unsigned int n_clients;	/* size of the clients array */
static unsigned int open_clients;

static void client_free(struct client *c);

/* 1 when fd still is the client's file, 0 when not (closed, or another
 * file now), or fstat()'s error. */
static int same_file(const struct client *c, int fd)
{
	struct stat st;

	if (fstat(fd, &st) < 0)
		return errno == EBADF ? 0 : neg_errno();
	return st.st_dev == c->dev && st.st_ino == c->ino && st.st_rdev == c->rdev;
}

/* Called with the lock held. */
static int lookup(int fd, struct client **ret)
{
	if (fd < 0)
		return -EBADF;
	if ((unsigned int)fd < n_clients && clients[fd]) {
		int same = same_file(clients[fd], fd);

		if (same < 0)
			return same;
		if (same) {
			*ret = clients[fd];
			return 0;
		}
		/* Closed with close(), and the number now names another file:
		 * the client is gone, and so are the buffers it held. */
		client_free(clients[fd]);
		clients[fd] = NULL;
		open_clients--;
	}
	/* Not ours: an fd that is open answers like a non-ION ioctl would. */
	return fcntl(fd, F_GETFD) < 0 ? -EBADF : -ENOTTY;
}

/* 0 when fd is a client, else -EBADF or -ENOTTY. */
static int client_check(int fd)
{
	struct client *c;
	int r, state;

	lock_clients(&state);
	r = lookup(fd, &c);
	unlock_clients(state);
	return r;
}

/* The shared context of a client fd, referenced; NULL with *err set. */
static struct ion_ctx *client_ctx(int fd, int *err)
{
	struct client *c;
	struct ion_ctx *ctx = NULL;
	int state;

	lock_clients(&state);
	*err = lookup(fd, &c);
	if (*err == 0)
		ctx = ion_ctx_ref(shared_ctx);
	unlock_clients(state);
	return ctx;
}

static int open_client_fd(void)
{
	const char *why = NULL;
	/* ION's misc device, never a FIFO or a file in its place. */
	int fd = ion_open_device_node("", "/dev/ion", O_RDONLY, "misc", "ion", &why);

	/* Where there is no ION (or no access to it), any fd identifies the
	 * client: an empty memfd is cheap and shows its name in /proc. */
	if (fd < 0)
		fd = memfd_create("libion-client", MFD_CLOEXEC);
	return fd < 0 ? neg_errno() : fd;
}

/* Closes the buffers a client's handles still hold. */
static void client_free(struct client *c)
{
	if (!c)
		return;
	for (unsigned int i = 0; i < c->n_handles; i++)
		if (c->handles[i] >= 0)
			close(c->handles[i]);
	free(c->handles);
	free(c);
}

ION_EXPORT int ion_open(void)
{
	struct client *c, *stale;
	struct ion_ctx *ctx = NULL;
	struct stat st;
	int fd, r = 0, state;

	c = calloc(1, sizeof(*c));
	if (!c)
		return -ENOMEM;
	fd = open_client_fd();
	if (fd < 0) {
		free(c);
		return fd;
	}
	if (fstat(fd, &st) < 0) {
		r = neg_errno();
		close(fd);
		free(c);
		return r;
	}
	c->dev = st.st_dev;
	c->ino = st.st_ino;
	c->rdev = st.st_rdev;
	lock_clients(&state);
	if (!shared_ctx) {
		r = ion_ctx_new(NULL, &ctx);
		if (r < 0)
			goto fail;
		shared_ctx = ctx;
	}
	if ((unsigned int)fd >= n_clients) {
		unsigned int n = (unsigned int)fd + 16;
		struct client **grown = realloc(clients, n * sizeof(*grown));

		if (!grown) {
			r = -ENOMEM;
			goto fail;
		}
		memset(grown + n_clients, 0, (n - n_clients) * sizeof(*grown));
		clients = grown;
		n_clients = n;
	}
	/* Android's ion_close() is close(): a client whose fd was closed that
	 * way is stale now that the kernel hands its number out again. */
	stale = clients[fd];
	clients[fd] = c;
	if (!stale)
		open_clients++;
	unlock_clients(state);
	client_free(stale);
	return fd;
fail:
	if (!open_clients)
		shared_ctx = ion_ctx_unref(shared_ctx);
	unlock_clients(state);
	close(fd);
	free(c);
	return r;
}

ION_EXPORT int ion_close(int fd)
{
	struct client *c = NULL;
	struct ion_ctx *last = NULL;
	int r, state;

	lock_clients(&state);
	r = lookup(fd, &c);
	if (r == 0) {
		clients[fd] = NULL;
		if (--open_clients == 0) {
			last = shared_ctx;
			shared_ctx = NULL;
			free(clients);
			clients = NULL;
			n_clients = 0;
		}
	}
	unlock_clients(state);
	if (r == -EBADF)
		return r;
	/* Not a client of ours (-ENOTTY): Android's ion_close() is close(). */
	client_free(c);
	ion_ctx_unref(last);
	return close(fd) < 0 ? neg_errno() : 0;
}

ION_EXPORT int ion_is_legacy(int fd)
{
	int n, r;
	struct ion_ctx *ctx = client_ctx(fd, &r);

	if (!ctx)
		return r;
	n = ion_ctx_get_heap_count(ctx);
	r = n < 0 ? n : 0;
	for (int i = 0; i < n && r == 0; i++) {
		const struct ion_heap *h;

		if (ion_ctx_get_heap(ctx, (unsigned int)i, &h) == 0 &&
		    (ion_heap_get_properties(h) & ION_HEAP_PROP_ION_LEGACY))
			r = 1;
	}
	ion_ctx_unref(ctx);
	return r;
}

ION_EXPORT int ion_alloc_fd(int fd, size_t len, size_t align,
			    unsigned int heap_mask, unsigned int flags,
			    int *handle_fd)
{
	struct ion_ctx *ctx;
	int r;

	(void)align;
	ctx = client_ctx(fd, &r);
	if (!ctx)
		return r;
	/* Vendor flags (ION_FLAG_SECURE, ...) are refused, not ignored: a
	 * secure buffer must not quietly come back ordinary. */
	if (!handle_fd || (flags & ~(ION_FLAG_CACHED | ION_FLAG_CACHED_NEEDS_SYNC)))
		r = -EINVAL;
	else
		/* ION's semantics: the mask lists every acceptable heap. */
		r = ion_ctx_alloc_mask(ctx, heap_mask, len, flags, handle_fd, NULL);
	ion_ctx_unref(ctx);
	return r;
}

/* Takes buf_fd: stores it under a new handle, which the client owns from
 * here, or closes it on failure. */
static int handle_add(int fd, int buf_fd, ion_user_handle_t *ret)
{
	struct client *c;
	int r, state;

	lock_clients(&state);
	r = lookup(fd, &c);
	if (r < 0)
		goto out;
	for (unsigned int i = 0; i < c->n_handles; i++)
		if (c->handles[i] < 0) {
			c->handles[i] = buf_fd;
			*ret = (ion_user_handle_t)(i + 1);
			goto out;
		}
	int *grown = realloc(c->handles, (c->n_handles + 1) * sizeof(*grown));
	if (!grown) {
		r = -ENOMEM;
		goto out;
	}
	c->handles = grown;
	c->handles[c->n_handles++] = buf_fd;
	*ret = (ion_user_handle_t)c->n_handles;
out:
	unlock_clients(state);
	if (r < 0)
		close(buf_fd);
	return r;
}

/* The checks a handle call makes first: a client fd, an out-pointer. */
static int handle_call_check(int fd, const ion_user_handle_t *handle)
{
	int r = client_check(fd);

	return r < 0 ? r : handle ? 0 : -EINVAL;
}

/* Called with the lock held: where a live handle keeps its fd, or NULL. */
static int *handle_slot(struct client *c, ion_user_handle_t handle)
{
	if (handle <= 0 || (unsigned int)handle > c->n_handles ||
	    c->handles[handle - 1] < 0)
		return NULL;
	return &c->handles[handle - 1];
}

/* A close-on-exec duplicate of the buffer behind a handle. */
static int handle_dup(int fd, ion_user_handle_t handle, int *ret_fd)
{
	struct client *c;
	int *slot, r, state;

	lock_clients(&state);
	r = lookup(fd, &c);
	if (r == 0 && !(slot = handle_slot(c, handle)))
		r = -EINVAL;
	if (r == 0) {
		r = fcntl(*slot, F_DUPFD_CLOEXEC, 0);
		if (r >= 0) {
			*ret_fd = r;
			r = 0;
		} else {
			r = neg_errno();
		}
	}
	unlock_clients(state);
	return r;
}

ION_EXPORT int ion_alloc(int fd, size_t len, size_t align,
			 unsigned int heap_mask, unsigned int flags,
			 ion_user_handle_t *handle)
{
	int buf_fd, r;

	r = handle_call_check(fd, handle);
	if (r == 0)
		r = ion_alloc_fd(fd, len, align, heap_mask, flags, &buf_fd);
	return r < 0 ? r : handle_add(fd, buf_fd, handle);
}

ION_EXPORT int ion_free(int fd, ion_user_handle_t handle)
{
	struct client *c;
	int *slot, buf_fd = -1, r, state;

	lock_clients(&state);
	r = lookup(fd, &c);
	if (r == 0 && !(slot = handle_slot(c, handle)))
		r = -EINVAL;
	if (r == 0) {
		buf_fd = *slot;
		*slot = -1;
	}
	unlock_clients(state);
	if (buf_fd >= 0)
		close(buf_fd);
	return r;
}

ION_EXPORT int ion_share(int fd, ion_user_handle_t handle, int *share_fd)
{
	int r = client_check(fd);

	if (r < 0)
		return r;
	if (!share_fd)
		return -EINVAL;
	return handle_dup(fd, handle, share_fd);
}

/*
 * GEM buffers of the shmem helpers (vgem, vkms, virtio-gpu, ...) map the
 * wrong pages at a nonzero offset: drm_gem_shmem_fault() counts pages from
 * the start of the mapping (Linux 5.10 to at least 6.8).  Their exporters
 * are "drm" (the generic PRIME export) and "virtio_gpu"; a mapping at an
 * offset of theirs is refused rather than given the wrong data.  Where
 * the kernel cannot say (no fdinfo before 5.3), the mapping goes ahead.
 */
static bool ignores_mmap_offset(int buf_fd)
{
	_cleanup_free_ char *text = NULL;
	char path[40];
	const char *exp;

	snprintf(path, sizeof(path), "/proc/self/fdinfo/%d", buf_fd);
	if (ion_read_file(path, 4096, &text, &(size_t){ 0 }) < 0)
		return false;
	exp = strstr(text, "\nexp_name:");
	if (!exp)
		return false;
	exp += strlen("\nexp_name:");
	exp += strspn(exp, " \t");
	return strncmp(exp, "drm\n", 4) == 0 || strncmp(exp, "virtio_gpu\n", 11) == 0;
}

ION_EXPORT int ion_map64(int fd, ion_user_handle_t handle, size_t length,
			 int prot, int flags, long long offset, unsigned char **ptr,
			 int *map_fd)
{
	size_t size;
	int buf_fd, r;
	void *p;

	r = client_check(fd);
	if (r < 0)
		return r;
	if (!ptr || !map_fd || length == 0 || offset < 0)
		return -EINVAL;
	r = handle_dup(fd, handle, &buf_fd);
	if (r < 0)
		return r;
	/* A memfd would map past its end and SIGBUS later: refuse now, as a
	 * dma-buf does. */
	r = ion_fd_get_size(buf_fd, &size);
	if (r == 0 && ((uint64_t)offset > size || length > size - (uint64_t)offset))
		r = -EINVAL;
	if (r == 0 && offset && ignores_mmap_offset(buf_fd))
		r = -EINVAL;
	if (r < 0) {
		close(buf_fd);
		return r;
	}
	p = mmap(NULL, length, prot, flags, buf_fd, offset);
	if (p == MAP_FAILED) {
		r = neg_errno();
		close(buf_fd);
		return r;
	}
	*ptr = p;
	*map_fd = buf_fd;
	return 0;
}

/*
 * ion_map with the off_t of a caller built without _FILE_OFFSET_BITS=64:
 * a long.  On 64-bit machines that is ion_map64 itself; on 32-bit ones
 * the symbol ion_map is this, and <ion/ion.h> sends callers with a 64-bit
 * off_t to ion_map64, the way glibc does for its own calls.
 */
#if defined(__LP64__) || defined(_LP64)
ION_EXPORT int ion_map(int fd, ion_user_handle_t handle, size_t length, int prot,
		       int flags, off_t offset, unsigned char **ptr, int *map_fd)
{
	return ion_map64(fd, handle, length, prot, flags, offset, ptr, map_fd);
}
#else
ION_EXPORT int ion_map_off32(int fd, ion_user_handle_t handle, size_t length,
			     int prot, int flags, long offset, unsigned char **ptr,
			     int *map_fd) __asm__("ion_map");
ION_EXPORT int ion_map_off32(int fd, ion_user_handle_t handle, size_t length,
			     int prot, int flags, long offset, unsigned char **ptr,
			     int *map_fd)
{
	return ion_map64(fd, handle, length, prot, flags, offset, ptr, map_fd);
}
#endif

/*
 * dma-bufs from any exporter, and memfds that cannot shrink: what a heap
 * of ours can hand out.  A memfd its sender could shrink after ion_map()
 * checked its size would SIGBUS the importer.
 */
static int check_importable(int buf_fd)
{
	int kind = ion_fd_kind(buf_fd), seals;

	if (kind < 0)
		return kind;
	if (kind == ION_FD_DMABUF)
		return 0;
	if (kind != ION_FD_MEMFD)
		return -EINVAL;
	seals = fcntl(buf_fd, F_GET_SEALS);
	return seals >= 0 && (seals & F_SEAL_SHRINK) ? 0 : -EINVAL;
}

ION_EXPORT int ion_import(int fd, int share_fd, ion_user_handle_t *handle)
{
	int buf_fd, r;

	r = handle_call_check(fd, handle);
	if (r < 0)
		return r;
	if (share_fd < 0)
		return -EBADF;
	r = check_importable(share_fd);
	if (r < 0)
		return r;
	buf_fd = fcntl(share_fd, F_DUPFD_CLOEXEC, 0);
	if (buf_fd < 0)
		return neg_errno();
	return handle_add(fd, buf_fd, handle);
}

ION_EXPORT int ion_sync_fd(int fd, int handle_fd)
{
	struct ion_ctx *ctx;
	int r;

	ctx = client_ctx(fd, &r);
	if (!ctx)
		return r;
	r = ion_ctx_sync_for_device(ctx, handle_fd);
	ion_ctx_unref(ctx);
	return r;
}

/*
 * The heaps Android code can reach: the available ones with an id.  A
 * heap's type is its type's id when it has that id; the others (ids 16
 * up) are reported as ION_HEAP_TYPE_CUSTOM, so that a heap reported with
 * a type below CUSTOM always answers that type's mask, as Android's own
 * checks expect.
 */
static int for_each_compat_heap(struct ion_ctx *ctx, struct ion_heap_data *out,
				int max)
{
	int n = ion_ctx_get_heap_count(ctx), found = 0;

	for (int i = 0; i < n && (!out || found < max); i++) {
		const struct ion_heap *h;
		int id;

		if (ion_ctx_get_heap(ctx, (unsigned int)i, &h) < 0 ||
		    (id = ion_heap_get_id(h)) < 0)
			continue;
		if (out) {
			struct ion_heap_data *d = &out[found];

			memset(d, 0, sizeof(*d));
			strncpy(d->name, ion_heap_get_name(h), sizeof(d->name) - 1);
			d->type = ion_heap_get_type(h) == (unsigned int)id ? (unsigned int)id
									 : ION_HEAP_TYPE_CUSTOM;
			d->heap_id = (unsigned int)id;
		}
		found++;
	}
	return n < 0 ? n : found;
}

ION_EXPORT int ion_query_heap_cnt(int fd, int *cnt)
{
	struct ion_ctx *ctx;
	int r;

	ctx = client_ctx(fd, &r);
	if (!ctx)
		return r;
	r = cnt ? for_each_compat_heap(ctx, NULL, 0) : -EINVAL;
	ion_ctx_unref(ctx);
	if (r < 0)
		return r;
	*cnt = r;
	return 0;
}

/*
 * As the kernel's ION_IOC_HEAP_QUERY, which Android's call is: a NULL
 * buffer asks for the count, which the call then drops (0); cnt <= 0 with
 * a buffer is -EINVAL; a bad buffer is -EFAULT.
 */
ION_EXPORT int ion_query_get_heaps(int fd, int cnt, void *buffers)
{
	struct ion_heap_data heaps[ION_NUM_HEAP_IDS];
	struct ion_ctx *ctx;
	int r;

	ctx = client_ctx(fd, &r);
	if (!ctx)
		return r;
	if (!buffers)
		r = 0;
	else if (cnt <= 0)
		r = -EINVAL;
	else
		r = for_each_compat_heap(ctx, heaps, cnt < (int)ION_NUM_HEAP_IDS ? cnt
									   : (int)ION_NUM_HEAP_IDS);
	ion_ctx_unref(ctx);
	if (r > 0)
		r = ion_copy_out(buffers, heaps, (size_t)r * sizeof(heaps[0]));
	return r < 0 ? r : 0;
}

/* ION_IOC_ABI_VERSION: Android's GKI ION (5.4+) only. */
#define ION_IOC_ABI_VERSION _IOR('I', 9, uint32_t)
#define ION_ABI_VERSION_MODULAR_HEAPS 2

ION_EXPORT int ion_is_using_modular_heaps(int fd)
{
	uint32_t version = 0;

	/* A yes-or-no, as Android's: an fd that is no client, or a memfd
	 * client (no /dev/ion, ENOTTY like mainline ION), is a no, never a
	 * negative number that `if (ion_is_using_modular_heaps(fd))` would
	 * take for a yes. */
	if (client_check(fd) < 0)
		return 0;
	return ion_ioctl_retry(fd, ION_IOC_ABI_VERSION, &version) == 0 &&
	       version >= ION_ABI_VERSION_MODULAR_HEAPS;
}
