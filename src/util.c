// SPDX-License-Identifier: MIT
#include <ctype.h>
#include <fcntl.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>

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
