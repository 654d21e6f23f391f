// SPDX-License-Identifier: MIT
/*
 * share-buffer: allocate a buffer, write into it, and give it to another
 * process over a Unix socket (SCM_RIGHTS); that process maps the same
 * memory and reads what this one wrote.  Every buffer fd libion returns
 * (a dma-buf, or a sealed memfd) travels this way; so would a buffer to
 * a compositor over a Wayland socket.
 *
 *   cc -o share-buffer share-buffer.c $(pkg-config --cflags --libs libion)
 *   ./share-buffer
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE /* MSG_CMSG_CLOEXEC */
#endif
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#include <ion/ion.h>

#define BUFFER_SIZE (1 << 20)

static const char message[] = "written by the process that allocated me";

/* Sends fd, with one byte of payload (SCM_RIGHTS needs some data). */
static int send_fd(int sock, int fd)
{
	union {
		struct cmsghdr align;
		char buf[CMSG_SPACE(sizeof(int))];
	} control;
	char byte = 'F';
	struct iovec iov = { .iov_base = &byte, .iov_len = 1 };
	struct msghdr msg = {
		.msg_iov = &iov,
		.msg_iovlen = 1,
		.msg_control = control.buf,
		.msg_controllen = sizeof(control.buf),
	};
	struct cmsghdr *cmsg;

	memset(&control, 0, sizeof(control));
	cmsg = CMSG_FIRSTHDR(&msg);
	cmsg->cmsg_level = SOL_SOCKET;
	cmsg->cmsg_type = SCM_RIGHTS;
	cmsg->cmsg_len = CMSG_LEN(sizeof(int));
	memcpy(CMSG_DATA(cmsg), &fd, sizeof(int));
	return sendmsg(sock, &msg, MSG_NOSIGNAL) == 1 ? 0 : -errno;
}

/* Receives one fd (close-on-exec), or returns a negative errno. */
static int recv_fd(int sock)
{
	union {
		struct cmsghdr align;
		char buf[CMSG_SPACE(sizeof(int))];
	} control;
	char byte;
	struct iovec iov = { .iov_base = &byte, .iov_len = 1 };
	struct msghdr msg = {
		.msg_iov = &iov,
		.msg_iovlen = 1,
		.msg_control = control.buf,
		.msg_controllen = sizeof(control.buf),
	};
	struct cmsghdr *cmsg;
	int fd;

	if (recvmsg(sock, &msg, MSG_CMSG_CLOEXEC) != 1)
		return -EIO;
	cmsg = CMSG_FIRSTHDR(&msg);
	if (!cmsg || cmsg->cmsg_level != SOL_SOCKET || cmsg->cmsg_type != SCM_RIGHTS ||
	    cmsg->cmsg_len != CMSG_LEN(sizeof(int)))
		return -EBADMSG;
	memcpy(&fd, CMSG_DATA(cmsg), sizeof(int));
	return fd;
}

/* The other process: maps what it was given and reads it. */
static int receiver(int sock)
{
	int fd = recv_fd(sock), ok;
	size_t size;
	char *p;

	if (fd < 0) {
		fprintf(stderr, "receiver: no fd: %s\n", strerror(-fd));
		return 1;
	}
	if (ion_fd_get_size(fd, &size) < 0 ||
	    (p = mmap(NULL, size, PROT_READ, MAP_SHARED, fd, 0)) == MAP_FAILED) {
		perror("receiver: map");
		close(fd);
		return 1;
	}
	/* Bracket the CPU's reads, as for any buffer a device may have written. */
	ion_sync(fd, ION_SYNC_START | ION_SYNC_READ);
	ok = strcmp(p, message) == 0;
	printf("receiver %d: the %zu-byte buffer reads \"%.60s\"\n", (int)getpid(), size, p);
	ion_sync(fd, ION_SYNC_END | ION_SYNC_READ);
	munmap(p, size);
	close(fd);
	fflush(stdout); /* _exit() will not */
	return ok ? 0 : 1;
}

int main(void)
{
	const struct ion_heap *heap;
	struct ion_ctx *ctx;
	int fd, sv[2], status, r;
	char *p;
	pid_t pid;

	r = ion_ctx_new(NULL, &ctx);
	if (r == 0)
		/* The machine's best system heap; memfd where there is nothing else. */
		r = ion_ctx_alloc_mask(ctx, ION_HEAP_SYSTEM_MASK, BUFFER_SIZE, ION_FLAG_CACHED,
				       &fd, &heap);
	if (r < 0) {
		fprintf(stderr, "share-buffer: allocation: %s\n", strerror(-r));
		ion_ctx_unref(ctx);
		return 1;
	}
	printf("sender %d: %d bytes from heap %s (%s)\n", (int)getpid(), BUFFER_SIZE,
	       ion_heap_get_name(heap), ion_heap_get_backend(heap));

	p = mmap(NULL, BUFFER_SIZE, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	if (p == MAP_FAILED) {
		perror("share-buffer: mmap");
		return 1;
	}
	ion_sync(fd, ION_SYNC_START | ION_SYNC_WRITE);
	memcpy(p, message, sizeof(message));
	ion_sync(fd, ION_SYNC_END | ION_SYNC_WRITE);
	munmap(p, BUFFER_SIZE);

	if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) < 0) {
		perror("share-buffer: socketpair");
		return 1;
	}
	fflush(stdout); /* or the child inherits what is not yet written */
	pid = fork();
	if (pid < 0) {
		perror("share-buffer: fork");
		return 1;
	}
	if (pid == 0) {
		/* A real receiver would be another program; fork keeps this short. */
		close(sv[0]);
		close(fd);
		_exit(receiver(sv[1]));
	}
	close(sv[1]);
	r = send_fd(sv[0], fd);
	close(sv[0]);
	/* The receiver holds the buffer now; the sender's fd can go. */
	close(fd);
	ion_ctx_unref(ctx);
	if (waitpid(pid, &status, 0) != pid) {
		perror("share-buffer: waitpid");
		return 1;
	}
	if (r < 0)
		fprintf(stderr, "share-buffer: sendmsg: %s\n", strerror(-r));
	if (r < 0 || !WIFEXITED(status) || WEXITSTATUS(status) != 0)
		return 1;
	printf("sender: the receiver read what was written\n");
	return 0;
}
