// SPDX-License-Identifier: MIT
/* A client of iond: connect, one request, its reply and its fd. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <sys/un.h>
#include <unistd.h>

#include "client.h"

int iond_client_connect(const char *path)
{
	struct sockaddr_un addr = { .sun_family = AF_UNIX };
	int fd, r;

	if (!path || strlen(path) >= sizeof(addr.sun_path))
		return -EINVAL;
	strcpy(addr.sun_path, path);
	fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -errno;
	/* a service that hangs never hangs its clients */
	struct timeval tv = { .tv_sec = IOND_CLIENT_TIMEOUT_S };

	setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
	if (connect(fd, (struct sockaddr *)&addr, sizeof(addr)) < 0) {
		r = -errno;
		close(fd);
		return r;
	}
	return fd;
}

int iond_msg_take_fds(struct msghdr *msg, int *ret_fd)
{
	int n = 0;

	for (struct cmsghdr *c = CMSG_FIRSTHDR(msg); c; c = CMSG_NXTHDR(msg, c)) {
		if (c->cmsg_level != SOL_SOCKET || c->cmsg_type != SCM_RIGHTS)
			continue;
		for (size_t i = 0; i < (c->cmsg_len - CMSG_LEN(0)) / sizeof(int); i++, n++) {
			int fd;

			memcpy(&fd, CMSG_DATA(c) + i * sizeof(int), sizeof(int));
			if (ret_fd && *ret_fd < 0)
				*ret_fd = fd;
			else
				close(fd);
		}
	}
	return n;
}

int iond_client_call(int sock, const struct iond_request *req, char *store, size_t store_size,
		     struct iond_reply *ret_reply, int *ret_fd)
{
	union {
		struct cmsghdr align;
		char space[CMSG_SPACE(sizeof(int))];
	} ctl;
	unsigned char *buf = malloc(IOND_REQUEST_MAX > IOND_REPLY_MAX ? IOND_REQUEST_MAX
								      : IOND_REPLY_MAX);
	struct iovec iov = { .iov_base = buf };
	struct msghdr msg = { .msg_iov = &iov, .msg_iovlen = 1 };
	struct iond_reply reply;
	int len, fd = -1, r;
	ssize_t n;

	if (!buf)
		return -ENOMEM;
	len = iond_request_encode(req, buf, IOND_REQUEST_MAX);
	if (len < 0) {
		free(buf);
		return len;
	}
	iov.iov_len = (size_t)len;
	if (send(sock, buf, (size_t)len, MSG_NOSIGNAL) < 0) {
		r = errno == EPIPE ? -ECONNRESET : -errno;
		free(buf);
		return r;
	}
	do {
		iov.iov_len = IOND_REPLY_MAX;
		msg.msg_control = ctl.space;
		msg.msg_controllen = sizeof(ctl.space);
		n = recvmsg(sock, &msg, MSG_CMSG_CLOEXEC);
	} while (n < 0 && errno == EINTR);
	if (n <= 0) {
		r = n == 0 ? -ECONNRESET : errno == EAGAIN ? -ETIMEDOUT : -errno;
		free(buf);
		return r;
	}
	iond_msg_take_fds(&msg, &fd);
	r = iond_reply_parse(buf, (size_t)n, store, store_size, &reply);
	free(buf);
	if (r == 0 && (msg.msg_flags & MSG_TRUNC))
		r = -EPROTO;
	if (r == 0 && reply.seq != req->seq && reply.op != 0)
		r = -EPROTO;
	if (r < 0 || !ret_fd || reply.error != 0) {
		if (fd >= 0)
			close(fd);
		fd = -1;
	}
	if (r < 0)
		return r;
	*ret_reply = reply;
	if (ret_fd)
		*ret_fd = fd;
	return 0;
}
