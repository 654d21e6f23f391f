// SPDX-License-Identifier: MIT
#include <ctype.h>
#include <fcntl.h>
#include <stdatomic.h>
#include <string.h>
#include <sys/ioctl.h>
#include <stdio.h>
#include <sys/mman.h>
#include <sys/uio.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/vfs.h>

#include "config.h"
#if HAVE_VALGRIND_MEMCHECK_H
#include <valgrind/memcheck.h>
#endif

#include "util.h"

int ion_ioctl_retry(int fd, unsigned long request, void *arg)
{
	int r;

	do {
		r = ioctl(fd, request, arg);
	} while (r < 0 && (errno == EINTR || errno == EAGAIN));
	return r < 0 ? neg_errno() : 0;
}

int ion_parse_u64(const char *s, int base, uint64_t *ret)
{
	char *end;
	unsigned long long v;

	/* strtoull() would take leading blanks and a minus sign. */
	if (!s || !isalnum((unsigned char)s[0]))
		return -EINVAL;
	errno = 0;
	v = strtoull(s, &end, base);
	if (errno == ERANGE)
		return -ERANGE;
	if (errno || *end || end == s)
		return -EINVAL;
	*ret = v;
	return 0;
}

int ion_parse_size(const char *s, uint64_t *ret)
{
	char *end;
	unsigned long long v;
	unsigned int shift = 0;

	if (!s || !isdigit((unsigned char)s[0]))
		return -EINVAL;
	errno = 0;
	v = strtoull(s, &end, 10);
	if (errno == ERANGE)
		return -ERANGE;
	if (errno)
		return -EINVAL;
	switch (*end) {
	case '\0':
		break;
	case 'k': case 'K': shift = 10; end++; break;
	case 'm': case 'M': shift = 20; end++; break;
	case 'g': case 'G': shift = 30; end++; break;
	default:
		return -EINVAL;
	}
	if (*end)
		return -EINVAL;
	if (shift && v > (UINT64_MAX >> shift))
		return -ERANGE;
	*ret = v << shift;
	return 0;
}

int ion_memfd_create_sealed(const char *name, size_t len, unsigned int seals,
			    int *ret_fd)
{
	_cleanup_close_ int fd = -1;

	struct rlimit fsize;

	/* Only a 64-bit size_t can exceed it (-Wtype-limits refuses the
	 * comparison on 32-bit machines). */
#if SIZE_MAX > INT64_MAX
	if (len > INT64_MAX)
		return -EINVAL;
#endif
	/* Past RLIMIT_FSIZE, ftruncate() would kill us with SIGXFSZ. */
	if (getrlimit(RLIMIT_FSIZE, &fsize) == 0 && fsize.rlim_cur != RLIM_INFINITY &&
	    len > fsize.rlim_cur)
		return -EFBIG;
	fd = memfd_create(name, MFD_CLOEXEC | MFD_ALLOW_SEALING);
	if (fd < 0)
		return neg_errno();
	if (ftruncate(fd, (off_t)len) < 0)
		return neg_errno();
	if (fcntl(fd, F_ADD_SEALS, seals) < 0)
		return neg_errno();
	*ret_fd = steal_fd(&fd);
	return 0;
}

#define DMA_BUF_MAGIC 0x444d4142 /* "DMAB", include/uapi/linux/magic.h */

/* What /proc/self/fd says the fd is: 0, with "" where there is no /proc
 * to ask, or readlink()'s error. */
static int fd_link(int fd, char *buf, size_t size)
{
	char path[32];
	ssize_t n;

	snprintf(path, sizeof(path), "/proc/self/fd/%d", fd);
	n = readlink(path, buf, size - 1);
	if (n < 0 && errno != ENOENT)
		return neg_errno();
	buf[n < 0 ? 0 : n] = '\0';
	return 0;
}

int ion_fd_kind(int fd)
{
	struct statfs sfs;
	struct stat st;
	char link[64];
	int r;

	if (fd < 0)
		return -EBADF;
	if (fstatfs(fd, &sfs) < 0 || fstat(fd, &st) < 0)
		return neg_errno();
	if (sfs.f_type == DMA_BUF_MAGIC)
		return ION_FD_DMABUF;
	r = fd_link(fd, link, sizeof(link));
	if (r < 0)
		return r;
	if (S_ISREG(st.st_mode)) {
		/* memfd_create()'s files, not any tmpfs file; without /proc,
		 * any shmem file that can hold seals. */
		if (!link[0])
			return fcntl(fd, F_GET_SEALS) >= 0 ? ION_FD_MEMFD : ION_FD_OTHER;
		return strncmp(link, "/memfd:", 7) == 0 ? ION_FD_MEMFD : ION_FD_OTHER;
	}
	/* Before Linux 5.3 a dma-buf was an anonymous inode, known by name. */
	return strcmp(link, "anon_inode:dmabuf") == 0 ? ION_FD_DMABUF : ION_FD_OTHER;
}

size_t ion_page_size(void)
{
	/* Read once.  glibc answers from the auxiliary vector, with no
	 * syscall, but after a stream's sleep sysconf()'s code is as cold
	 * as the rest: caching it took 0.3-1 us off a host get's median
	 * (a pool now keeps its own copy, so that a get calls nothing). */
	static _Atomic size_t page;
	size_t p = atomic_load_explicit(&page, memory_order_relaxed);

	if (!p) {
		p = (size_t)sysconf(_SC_PAGESIZE);
		atomic_store_explicit(&page, p, memory_order_relaxed);
	}
	return p;
}

int ion_read_file_at(int dirfd, const char *path, size_t max, char **ret_text,
		      size_t *ret_len)
{
	_cleanup_close_ int fd = -1;
	_cleanup_free_ char *buf = NULL;
	size_t len = 0, size;
	struct stat st;

	/* O_NONBLOCK: a FIFO in place of a file must not hang discovery. */
	fd = openat(dirfd, path, O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY);
	if (fd < 0)
		return neg_errno();
	if (fstat(fd, &st) < 0)
		return neg_errno();
	if (S_ISCHR(st.st_mode) && st.st_rdev == makedev(1, 3)) {
		/* /dev/null: a masking symlink reads as an empty file. */
		size = 0;
	} else if (S_ISDIR(st.st_mode)) {
		return -EISDIR;
	} else if (!S_ISREG(st.st_mode)) {
		return -EBADFD;
	} else if ((uint64_t)st.st_size > max) {
		return -EFBIG;
	} else {
		/* sysfs says 4096 whatever it holds: the size is a hint. */
		size = (size_t)st.st_size < 4096 ? 4096 : (size_t)st.st_size + 1;
		if (size > max + 1)
			size = max + 1;
	}
	buf = malloc(size + 1);
	if (!buf)
		return -ENOMEM;
	while (size) {
		ssize_t r;

		if (len == size) {
			char *nbuf;

			if (len > max)
				return -EFBIG;
			size = size > (max + 1) / 2 ? max + 1 : 2 * size;
			nbuf = realloc(buf, size + 1);
			if (!nbuf)
				return -ENOMEM;
			buf = nbuf;
		}
		r = read(fd, buf + len, size - len);
		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0)
			return neg_errno();
		if (r == 0)
			break;
		len += (size_t)r;
		/* A short read of a regular file is its end (sysfs gives an
		 * attribute in one read): spare the read that says so. */
		if (len < size && S_ISREG(st.st_mode))
			break;
	}
	if (len > max)
		return -EFBIG;
	buf[len] = '\0';
	*ret_text = steal_ptr(&buf);
	*ret_len = len;
	return 0;
}

int ion_read_file(const char *path, size_t max, char **ret_text, size_t *ret_len)
{
	return ion_read_file_at(AT_FDCWD, path, max, ret_text, ret_len);
}

/* Through a pipe: read() into dst fails with EFAULT where dst is bad. */
static int copy_out_pipe(void *dst, const void *src, size_t len)
{
	int p[2], r = 0;

	if (pipe2(p, O_CLOEXEC) < 0)
		return neg_errno();
	for (size_t done = 0; r == 0 && done < len;) {
		size_t chunk = len - done < 4096 ? len - done : 4096;
		ssize_t n = write(p[1], (const char *)src + done, chunk);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0) {
			r = n < 0 ? neg_errno() : -EIO;
			break;
		}
		for (ssize_t got = 0; r == 0 && got < n;) {
			ssize_t m = read(p[0], (char *)dst + done + got, (size_t)(n - got));

			if (m < 0 && errno == EINTR)
				continue;
			if (m <= 0)
				r = m < 0 ? neg_errno() : -EIO;
			else
				got += m;
		}
		done += (size_t)n;
	}
	close(p[0]);
	close(p[1]);
	return r;
}

int ion_copy_out(void *dst, const void *src, size_t len)
{
	struct iovec local = { .iov_base = (void *)src, .iov_len = len };
	struct iovec remote = { .iov_base = dst, .iov_len = len };
	ssize_t n;

	if (len == 0)
		return 0;
	/* Into our own memory, as the kernel would: EFAULT, not SIGSEGV. */
	n = process_vm_writev(getpid(), &local, 1, &remote, 1, 0);
	if (n == (ssize_t)len) {
#if HAVE_VALGRIND_MEMCHECK_H
		/* valgrind takes the syscall for a write to another process. */
		VALGRIND_MAKE_MEM_DEFINED(dst, len);
#endif
		return 0;
	}
	if (n >= 0 || errno == EFAULT)
		return -EFAULT;
	/* Not allowed here (seccomp, an old kernel): the slower way. */
	return copy_out_pipe(dst, src, len);
}

void ion_strv_free(char **strv)
{
	for (char **s = strv; s && *s; s++)
		free(*s);
	free(strv);
}

size_t ion_strv_len(const char *const *strv)
{
	size_t n = 0;

	while (strv && strv[n])
		n++;
	return n;
}

char **ion_strv_copy(const char *const *strv)
{
	size_t n = ion_strv_len(strv);
	char **copy = calloc(n + 1, sizeof(*copy));

	for (size_t i = 0; copy && i < n; i++)
		if (!(copy[i] = strdup(strv[i]))) {
			ion_strv_free(copy);
			return NULL;
		}
	return copy;
}

char **ion_strv_split(const char *text, char sep)
{
	size_t n = 1, k = 0;
	char **strv;

	for (const char *p = text; *p; p++)
		n += *p == sep;
	strv = calloc(n + 1, sizeof(*strv));
	for (const char *p = text; strv && *p;) {
		size_t len = strchrnul(p, sep) - p;

		if (len && !(strv[k++] = strndup(p, len))) {
			ion_strv_free(strv);
			return NULL;
		}
		p += len + (p[len] != '\0');
	}
	return strv;
}

char *ion_trim(char *s)
{
	char *end;

	s += strspn(s, ION_BLANKS);
	end = s + strlen(s);
	while (end > s && strchr(ION_BLANKS, end[-1]))
		end--;
	*end = '\0';
	return s;
}

bool ion_has_blank(const char *s)
{
	return strpbrk(s, ION_BLANKS) != NULL;
}

/*
 * Appends n strings (copies) to a NULL-terminated list of *len entries.
 * On failure the list holds what it held, so callers stay consistent.
 */
int ion_strv_append(char ***list, size_t *len, char *const *add, size_t n)
{
	char **v;
	size_t i;

	if (n > SIZE_MAX / sizeof(char *) - *len - 1)
		return -ENOMEM;
	v = realloc(*list, (*len + n + 1) * sizeof(char *));
	if (!v)
		return -ENOMEM;
	*list = v;
	for (i = 0; i < n; i++) {
		v[*len + i] = strdup(add[i]);
		if (!v[*len + i]) {
			while (i--)
				free(v[*len + i]);
			v[*len] = NULL;
			return -ENOMEM;
		}
	}
	*len += n;
	v[*len] = NULL;
	return 0;
}

char *ion_strv_join(char *const *strv, const char *sep)
{
	size_t len = 1, seplen = strlen(sep);
	char *text, *p;

	for (char *const *s = strv; s && *s; s++)
		len += strlen(*s) + seplen;
	p = text = malloc(len);
	if (!text)
		return NULL;
	*p = '\0';
	for (char *const *s = strv; s && *s; s++)
		p = stpcpy(stpcpy(p, s == strv ? "" : sep), *s);
	return text;
}
