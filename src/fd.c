// SPDX-License-Identifier: MIT
/* Calls on any buffer fd: its name and its size. */
#include <string.h>
#include <sys/ioctl.h>
#include <sys/stat.h>

#include "context.h"
#include "uapi/dma-buf.h"

ION_EXPORT int ion_fd_set_name(int buf_fd, const char *name)
{
	char buf[DMA_BUF_NAME_LEN];

	if (!name)
		return -EINVAL;
	/* The kernel refuses names of 32 bytes or more: truncate instead. */
	strncpy(buf, name, sizeof(buf) - 1);
	buf[sizeof(buf) - 1] = '\0';
	if (ioctl(buf_fd, DMA_BUF_SET_NAME, buf) < 0)
		return neg_errno();
	return 0;
}

ION_EXPORT int ion_fd_get_size(int buf_fd, size_t *ret_size)
{
	struct stat st;
	off_t end;
	int kind;

	if (!ret_size)
		return -EINVAL;
	kind = ion_fd_kind(buf_fd);
	if (kind < 0)
		return kind;
	if (kind == ION_FD_MEMFD) {
		if (fstat(buf_fd, &st) < 0)
			return neg_errno();
		end = st.st_size; /* leave its file offset alone */
	} else if (kind == ION_FD_DMABUF) {
		/* Its inode has the size only since Linux 5.3, but it has
		 * answered SEEK_END with it, moving nothing, since 3.19. */
		end = lseek(buf_fd, 0, SEEK_END);
		if (end < 0)
			return neg_errno();
	} else {
		return -EINVAL; /* a directory, a pipe, a plain file: no buffer */
	}
	if (end < 0)
		return -EINVAL;
	*ret_size = (size_t)end;
	return 0;
}
