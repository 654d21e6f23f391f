// SPDX-License-Identifier: MIT
/* Passing a buffer fd to another process: SCM_RIGHTS over a Unix socket. */
#include <errno.h>
#include <string.h>
#include <sys/socket.h>

#include "fdpass.h"

int fdpass_send(int sock, int fd)
{
	char dummy = 'F';
	struct iovec iov = { .iov_base = &dummy, .iov_len = 1 };
	union {
		struct cmsghdr align;
		char buf[CMSG_SPACE(sizeof(int))];
	} u;
	struct msghdr msg = {
		.msg_iov = &iov,
		.msg_iovlen = 1,
		.msg_control = u.buf,
		.msg_controllen = sizeof(u.buf),
	};
	struct cmsghdr *cmsg = CMSG_FIRSTHDR(&msg);

	memset(u.buf, 0, sizeof(u.buf));
	cmsg->cmsg_level = SOL_SOCKET;
	cmsg->cmsg_type = SCM_RIGHTS;
	cmsg->cmsg_len = CMSG_LEN(sizeof(int));
	memcpy(CMSG_DATA(cmsg), &fd, sizeof(int));
	return sendmsg(sock, &msg, MSG_NOSIGNAL) == 1 ? 0 : -errno;
}

int fdpass_recv(int sock, int *ret_fd)
{
	char dummy;
	struct iovec iov = { .iov_base = &dummy, .iov_len = 1 };
	union {
		struct cmsghdr align;
		char buf[CMSG_SPACE(sizeof(int))];
	} u;
	struct msghdr msg = {
		.msg_iov = &iov,
		.msg_iovlen = 1,
		.msg_control = u.buf,
		.msg_controllen = sizeof(u.buf),
	};
	struct cmsghdr *cmsg;

	if (recvmsg(sock, &msg, MSG_CMSG_CLOEXEC) != 1)
		return -EIO;
	cmsg = CMSG_FIRSTHDR(&msg);
	if (!cmsg || cmsg->cmsg_type != SCM_RIGHTS)
		return -EBADMSG;
	memcpy(ret_fd, CMSG_DATA(cmsg), sizeof(int));
	return 0;
}
