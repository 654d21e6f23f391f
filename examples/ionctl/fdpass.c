// SPDX-License-Identifier: MIT
/* Passing a buffer fd to another process: SCM_RIGHTS over a Unix socket. */
#include <errno.h>
#include <string.h>
#include <sys/socket.h>

#include "fdpass.h"

/*
 * One byte of payload and room for one fd.  The control buffer comes last:
 * glibc's struct cmsghdr ends in a flexible array, which may only end a
 * struct (clang's -Wgnu-variable-sized-type-not-at-end says so).
 */
struct fd_message {
	char byte;
	struct iovec iov;
	struct msghdr msg;
	union {
		struct cmsghdr align;
		char buf[CMSG_SPACE(sizeof(int))];
	} control;
};

static void fd_message_init(struct fd_message *m)
{
	memset(m, 0, sizeof(*m));
	m->byte = 'F';
	m->iov.iov_base = &m->byte;
	m->iov.iov_len = 1;
	m->msg.msg_iov = &m->iov;
	m->msg.msg_iovlen = 1;
	m->msg.msg_control = m->control.buf;
	m->msg.msg_controllen = sizeof(m->control.buf);
}

int fdpass_send(int sock, int fd)
{
	struct fd_message m;
	struct cmsghdr *cmsg;

	fd_message_init(&m);
	cmsg = CMSG_FIRSTHDR(&m.msg);
	cmsg->cmsg_level = SOL_SOCKET;
	cmsg->cmsg_type = SCM_RIGHTS;
	cmsg->cmsg_len = CMSG_LEN(sizeof(int));
	memcpy(CMSG_DATA(cmsg), &fd, sizeof(int));
	return sendmsg(sock, &m.msg, MSG_NOSIGNAL) == 1 ? 0 : -errno;
}

int fdpass_recv(int sock, int *ret_fd)
{
	struct fd_message m;
	struct cmsghdr *cmsg;

	fd_message_init(&m);
	if (recvmsg(sock, &m.msg, MSG_CMSG_CLOEXEC) != 1)
		return -EIO;
	cmsg = CMSG_FIRSTHDR(&m.msg);
	if (!cmsg || cmsg->cmsg_level != SOL_SOCKET || cmsg->cmsg_type != SCM_RIGHTS ||
	    cmsg->cmsg_len != CMSG_LEN(sizeof(int)))
		return -EBADMSG;
	memcpy(ret_fd, CMSG_DATA(cmsg), sizeof(int));
	return 0;
}
