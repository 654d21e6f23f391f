// SPDX-License-Identifier: MIT
/*
 * The legacy ION mock (see ion-legacy-mock.h).  Its answers follow
 * drivers/staging/android/ion/ion.c and ion-ioctl.c of Linux 4.9-4.11:
 * handle ids start at 1, a failed lookup is EINVAL, the allocation walks
 * the heaps from the highest id down and says ENODEV when none matched.
 */
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "uapi/ion.h"
#include "tests/mock/ion-legacy-mock.h"

#define MAX_HEAPS 32
#define MAX_HANDLES 64
#define MAX_BUFFERS 1024
#define MAX_REQUESTS 16

struct handle {
	int id;		/* 0: free slot */
	int refs;	/* IMPORT of a buffer with a handle adds one */
	int fd;		/* the mock's own reference to the buffer */
	unsigned int buffer;
};

struct buffer {
	dev_t dev;
	ino_t ino;
};

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static struct {
	bool serving;
	dev_t dev;
	ino_t ino;
	struct ion_mock_heap heaps[MAX_HEAPS];
	unsigned int n_heaps;
	bool heap_query;

	struct handle handles[MAX_HANDLES];
	/* Every buffer ever made, for SYNC and IMPORT: a dma-buf outlives
	 * its handles while an fd holds it. */
	struct buffer buffers[MAX_BUFFERS];
	unsigned int n_buffers;

	unsigned long fail_request;
	int fail_error;

	struct {
		unsigned long request;
		unsigned int calls;
	} calls[MAX_REQUESTS];
	unsigned int invalid_frees;
	struct ion_mock_alloc last_alloc;
} m;

static void drop_handles(void)
{
	for (unsigned int i = 0; i < MAX_HANDLES; i++)
		if (m.handles[i].id) {
			close(m.handles[i].fd);
			m.handles[i].id = 0;
		}
}

int ion_mock_setup(const char *path, const struct ion_mock_heap *heaps,
		   unsigned int n_heaps)
{
	struct stat st;

	if (n_heaps > MAX_HEAPS || stat(path, &st) < 0)
		return n_heaps > MAX_HEAPS ? -EINVAL : -errno;
	pthread_mutex_lock(&lock);
	drop_handles();
	memset(&m, 0, sizeof(m));
	m.serving = true;
	m.dev = st.st_dev;
	m.ino = st.st_ino;
	memcpy(m.heaps, heaps, n_heaps * sizeof(*heaps));
	m.n_heaps = n_heaps;
	pthread_mutex_unlock(&lock);
	return 0;
}

void ion_mock_teardown(void)
{
	pthread_mutex_lock(&lock);
	drop_handles();
	m.serving = false;
	pthread_mutex_unlock(&lock);
}

void ion_mock_enable_heap_query(bool enable)
{
	pthread_mutex_lock(&lock);
	m.heap_query = enable;
	pthread_mutex_unlock(&lock);
}

void ion_mock_fail_once(unsigned long request, int error)
{
	pthread_mutex_lock(&lock);
	m.fail_request = request;
	m.fail_error = error;
	pthread_mutex_unlock(&lock);
}

unsigned int ion_mock_live_handles(void)
{
	unsigned int n = 0;

	pthread_mutex_lock(&lock);
	for (unsigned int i = 0; i < MAX_HANDLES; i++)
		n += m.handles[i].id != 0;
	pthread_mutex_unlock(&lock);
	return n;
}

unsigned int ion_mock_calls(unsigned long request)
{
	unsigned int n = 0;

	pthread_mutex_lock(&lock);
	for (unsigned int i = 0; i < MAX_REQUESTS; i++)
		if (m.calls[i].request == request)
			n = m.calls[i].calls;
	pthread_mutex_unlock(&lock);
	return n;
}

unsigned int ion_mock_invalid_frees(void)
{
	unsigned int n;

	pthread_mutex_lock(&lock);
	n = m.invalid_frees;
	pthread_mutex_unlock(&lock);
	return n;
}

struct ion_mock_alloc ion_mock_last_alloc(void)
{
	struct ion_mock_alloc a;

	pthread_mutex_lock(&lock);
	a = m.last_alloc;
	pthread_mutex_unlock(&lock);
	return a;
}

/* ---- the "kernel"; every function below runs with the lock held ---- */

static void count_call(unsigned long request)
{
	for (unsigned int i = 0; i < MAX_REQUESTS; i++)
		if (m.calls[i].request == request || !m.calls[i].calls) {
			m.calls[i].request = request;
			m.calls[i].calls++;
			return;
		}
}

static struct handle *handle_find(int id)
{
	for (unsigned int i = 0; id > 0 && i < MAX_HANDLES; i++)
		if (m.handles[i].id == id)
			return &m.handles[i];
	return NULL;
}

/* Like idr_alloc(..., 1, 0, ...): the lowest free id from 1. */
static struct handle *handle_new(int fd, unsigned int buffer)
{
	for (int id = 1; id <= MAX_HANDLES; id++) {
		if (handle_find(id))
			continue;
		for (unsigned int i = 0; i < MAX_HANDLES; i++)
			if (!m.handles[i].id) {
				m.handles[i] = (struct handle){ id, 1, fd, buffer };
				return &m.handles[i];
			}
	}
	return NULL;
}

/* The buffer an fd refers to, or -1 (EBADF for a closed fd). */
static int buffer_of_fd(int fd, int *ret_error)
{
	struct stat st;

	if (fstat(fd, &st) < 0) {
		*ret_error = EBADF;
		return -1;
	}
	for (unsigned int i = 0; i < m.n_buffers; i++)
		if (m.buffers[i].dev == st.st_dev && m.buffers[i].ino == st.st_ino)
			return (int)i;
	*ret_error = EINVAL;
	return -1;
}

static int mock_alloc(unsigned int user_bits, uint64_t len, uint32_t mask,
		      uint32_t flags, int *ret_handle)
{
	uint64_t page = (uint64_t)sysconf(_SC_PAGESIZE);
	const struct ion_mock_heap *heap = NULL;
	struct handle *h;
	struct stat st;
	int fd;

	m.last_alloc = (struct ion_mock_alloc){ user_bits, len, mask, flags };
	len = (len + page - 1) & ~(page - 1);
	if (!len)
		return EINVAL;
	for (unsigned int i = 0; i < m.n_heaps; i++)
		if (mask & (1U << m.heaps[i].id) &&
		    (!heap || m.heaps[i].id > heap->id))
			heap = &m.heaps[i];
	if (!heap)
		return ENODEV;
	if (m.n_buffers == MAX_BUFFERS)
		return ENOMEM;
	fd = memfd_create("ion-mock-buffer", MFD_CLOEXEC);
	if (fd < 0)
		return errno;
	if (ftruncate(fd, (off_t)len) < 0 || fstat(fd, &st) < 0) {
		close(fd);
		return ENOMEM;
	}
	h = handle_new(fd, m.n_buffers);
	if (!h) {
		close(fd);
		return ENOMEM;
	}
	m.buffers[m.n_buffers++] = (struct buffer){ st.st_dev, st.st_ino };
	*ret_handle = h->id;
	return 0;
}

static int mock_free(struct ion_legacy_handle_data *data)
{
	struct handle *h = handle_find(data->handle);

	if (!h) {
		m.invalid_frees++;
		return EINVAL;
	}
	if (--h->refs == 0) {
		close(h->fd);
		h->id = 0;
	}
	return 0;
}

/* SHARE and MAP: dma_buf_fd(buffer, O_CLOEXEC), the same open file. */
static int mock_share(struct ion_legacy_fd_data *data)
{
	struct handle *h = handle_find(data->handle);
	int fd;

	if (!h)
		return EINVAL;
	fd = fcntl(h->fd, F_DUPFD_CLOEXEC, 0);
	if (fd < 0)
		return errno;
	data->fd = fd;
	return 0;
}

static int mock_import(struct ion_legacy_fd_data *data)
{
	int error, buffer = buffer_of_fd(data->fd, &error), fd;
	struct handle *h;

	if (buffer < 0)
		return error;
	for (unsigned int i = 0; i < MAX_HANDLES; i++)
		if (m.handles[i].id && m.handles[i].buffer == (unsigned int)buffer) {
			m.handles[i].refs++;
			data->handle = m.handles[i].id;
			return 0;
		}
	fd = fcntl(data->fd, F_DUPFD_CLOEXEC, 0);
	if (fd < 0)
		return errno;
	h = handle_new(fd, (unsigned int)buffer);
	if (!h) {
		close(fd);
		return ENOMEM;
	}
	data->handle = h->id;
	return 0;
}

static int mock_sync(const struct ion_legacy_fd_data *data)
{
	int error;

	return buffer_of_fd(data->fd, &error) < 0 ? error : 0;
}

static int mock_heap_query(struct ion_new_heap_query *q)
{
	struct ion_new_heap_data *out = (void *)(uintptr_t)q->heaps;
	unsigned int n = 0;

	if (!m.heap_query)
		return ENOTTY;
	if (q->reserved0 || q->reserved1 || q->reserved2)
		return EINVAL;
	if (!out) {
		q->cnt = m.n_heaps;
		return 0;
	}
	if (!q->cnt)
		return EINVAL;
	for (; n < m.n_heaps && n < q->cnt; n++) {
		memset(&out[n], 0, sizeof(out[n]));
		strncpy(out[n].name, m.heaps[n].name, sizeof(out[n].name) - 1);
		out[n].type = m.heaps[n].type;
		out[n].heap_id = m.heaps[n].id;
	}
	q->cnt = n;
	return 0;
}

static int mock_ioctl(unsigned long request, void *arg)
{
	count_call(request);
	if (m.fail_request == request && m.fail_error) {
		int error = m.fail_error;

		m.fail_error = 0;
		return error;
	}
	switch (request) {
	case ION_LEGACY_IOC_ALLOC64: {
		struct ion_legacy_allocation_data64 *a = arg;

		return mock_alloc(64, a->len, a->heap_id_mask, a->flags, &a->handle);
	}
	case ION_LEGACY_IOC_ALLOC32: {
		struct ion_legacy_allocation_data32 *a = arg;

		return mock_alloc(32, a->len, a->heap_id_mask, a->flags, &a->handle);
	}
	case ION_LEGACY_IOC_FREE:
		return mock_free(arg);
	case ION_LEGACY_IOC_SHARE:
	case ION_LEGACY_IOC_MAP:
		return mock_share(arg);
	case ION_LEGACY_IOC_IMPORT:
		return mock_import(arg);
	case ION_LEGACY_IOC_SYNC:
		return mock_sync(arg);
	case ION_NEW_IOC_HEAP_QUERY:
		return mock_heap_query(arg);
	default:
		return ENOTTY;
	}
}

/* ---- the interposer ---- */

static int (*real_ioctl)(int, unsigned long, ...);
static pthread_once_t real_once = PTHREAD_ONCE_INIT;

static void find_real_ioctl(void)
{
	real_ioctl = (int (*)(int, unsigned long, ...))dlsym(RTLD_NEXT, "ioctl");
}

static bool is_mock_fd(int fd)
{
	struct stat st;
	int saved = errno;
	bool mine;

	mine = m.serving && fstat(fd, &st) == 0 && st.st_dev == m.dev &&
	       st.st_ino == m.ino;
	errno = saved;
	return mine;
}

int ioctl(int fd, unsigned long request, ...)
{
	va_list args;
	void *arg;
	int error;

	va_start(args, request);
	arg = va_arg(args, void *);
	va_end(args);

	pthread_mutex_lock(&lock);
	if (!is_mock_fd(fd)) {
		pthread_mutex_unlock(&lock);
		pthread_once(&real_once, find_real_ioctl);
		return real_ioctl(fd, request, arg);
	}
	error = mock_ioctl(request, arg);
	pthread_mutex_unlock(&lock);
	if (error) {
		errno = error;
		return -1;
	}
	return 0;
}
