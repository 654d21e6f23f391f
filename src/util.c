// SPDX-License-Identifier: MIT
#include <ctype.h>
#include <fcntl.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>

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

	if (len > INT64_MAX)
		return -EINVAL;
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

bool ion_fd_is_memfd(int fd)
{
	return fcntl(fd, F_GET_SEALS) >= 0;
}

size_t ion_page_size(void)
{
	/* glibc answers from the auxiliary vector: no syscall, no cache. */
	return (size_t)sysconf(_SC_PAGESIZE);
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
