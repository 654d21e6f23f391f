// SPDX-License-Identifier: MIT
/*
 * Two processes agree on a heap over a Unix socket.
 *
 * A compositor (the parent) knows the display, a camera service (the
 * child) the sensor.  The compositor sends the constraints of its devices
 * as text (ion_alloc_config_serialize); the camera ANDs them with its own
 * (ion_alloc_config_add_constraints), allocates, writes a frame and sends
 * the buffer back with SCM_RIGHTS, beside the heap's name and its own
 * constraints.  The compositor solves the same set, must reach the same
 * heap, and reads the frame.
 *
 *   share-constraints [--parent-devices A,B] [--child-devices C,D] [--expect HEAP]
 *
 * Devices are what ion_ctx_get_device() takes (card1, video0, /dev
 * nodes); by default the compositor has card1 and the camera video0,
 * each left out where the machine has no such device.  Exit status 0
 * when both agree (on HEAP with --expect), else 1; 2 for a usage error.
 *
 *   cc -o share-constraints share-constraints.c $(pkg-config --cflags --libs libion)
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE /* MSG_CMSG_CLOEXEC, strtok_r, strdup */
#endif
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <ion/ion.h>

#define FRAME "frame 1 from the camera"
#define MSG_MAX (72 * 1024) /* a constraint text is at most 64 KiB */

/* One message a send (SOCK_SEQPACKET keeps them apart), with an fd or -1. */
static int send_msg(int sock, const char *text, int fd)
{
	union { struct cmsghdr h; char buf[CMSG_SPACE(sizeof(int))]; } u = { 0 };
	struct iovec iov = { (void *)text, strlen(text) + 1 };
	struct msghdr m = { .msg_iov = &iov, .msg_iovlen = 1 };

	if (fd >= 0) {
		m.msg_control = u.buf;
		m.msg_controllen = sizeof(u.buf);
		u.h.cmsg_level = SOL_SOCKET;
		u.h.cmsg_type = SCM_RIGHTS;
		u.h.cmsg_len = CMSG_LEN(sizeof(int));
		memcpy(CMSG_DATA(&u.h), &fd, sizeof(int));
	}
	return sendmsg(sock, &m, MSG_NOSIGNAL) < 0 ? -errno : 0;
}

/* The text (NUL-terminated in buf) and, when ret_fd, the fd that came with it. */
static int recv_msg(int sock, char *buf, size_t size, int *ret_fd)
{
	union { struct cmsghdr h; char buf[CMSG_SPACE(sizeof(int))]; } u;
	struct iovec iov = { buf, size - 1 };
	struct msghdr m = { .msg_iov = &iov, .msg_iovlen = 1, .msg_control = u.buf,
			    .msg_controllen = sizeof(u.buf) };
	struct cmsghdr *c;
	ssize_t n = recvmsg(sock, &m, MSG_CMSG_CLOEXEC);

	if (n <= 0)
		return n < 0 ? -errno : -ECONNRESET;
	buf[n] = '\0';
	c = CMSG_FIRSTHDR(&m);
	if (ret_fd && c && c->cmsg_type == SCM_RIGHTS)
		memcpy(ret_fd, CMSG_DATA(c), sizeof(int));
	return 0;
}

/* A config of 1 MiB for the devices of a comma-separated list. */
static struct ion_alloc_config *config_for(struct ion_ctx *ctx, const char *list, bool is_default)
{
	struct ion_alloc_config *config = NULL;
	char *copy = strdup(list), *save = NULL;

	if (!copy || ion_alloc_config_new(&config) < 0 ||
	    ion_alloc_config_set_size(config, 1 << 20) < 0)
		goto fail;
	for (char *spec = strtok_r(copy, ",", &save); spec; spec = strtok_r(NULL, ",", &save)) {
		struct ion_device *dev = NULL;
		int r = ion_ctx_get_device(ctx, spec, &dev);

		if (r < 0 && is_default) {
			printf("no device %s here: left out\n", spec);
			continue;
		}
		if (r == 0)
			r = ion_alloc_config_add_device(config, dev);
		ion_device_unref(dev);
		if (r < 0) {
			fprintf(stderr, "device %s: %s\n", spec, strerror(-r));
			goto fail;
		}
	}
	free(copy);
	return config;
fail:
	free(copy);
	return ion_alloc_config_free(config);
}

/* The child: its devices AND the compositor's, a buffer, a frame in it. */
static int camera(int sock, const char *devices, bool is_default)
{
	static char theirs[MSG_MAX], reply[MSG_MAX];
	struct ion_ctx *ctx = NULL;
	struct ion_alloc_config *config = NULL;
	const struct ion_heap *heap = NULL;
	char *mine = NULL;
	int fd = -1, r;

	r = recv_msg(sock, theirs, sizeof(theirs), NULL);
	if (r == 0)
		r = ion_ctx_new(NULL, &ctx);
	if (r == 0 && !(config = config_for(ctx, devices, is_default)))
		r = -EINVAL;
	/* Its own text first, before the compositor's joins the config. */
	if (r == 0)
		r = ion_alloc_config_serialize(config, &mine);
	if (r == 0)
		r = ion_alloc_config_add_constraints(config, theirs);
	if (r == 0)
		r = ion_ctx_allocate(ctx, config, &fd, &heap);
	if (r == 0) {
		char *p = mmap(NULL, 1 << 20, PROT_WRITE, MAP_SHARED, fd, 0);

		if (p != MAP_FAILED) { /* a CPU write, bracketed for the devices */
			ion_sync(fd, ION_SYNC_START | ION_SYNC_WRITE);
			memcpy(p, FRAME, sizeof(FRAME));
			ion_sync(fd, ION_SYNC_END | ION_SYNC_WRITE);
			munmap(p, 1 << 20);
		}
		snprintf(reply, sizeof(reply), "%s\n%s", ion_heap_get_name(heap), mine);
		printf("camera: allocated from %s, for both sides\n", ion_heap_get_name(heap));
	} else {
		snprintf(reply, sizeof(reply), "error: %s", strerror(-r));
	}
	if (send_msg(sock, reply, fd) < 0)
		r = -EPIPE;
	if (fd >= 0)
		close(fd);
	free(mine);
	ion_alloc_config_free(config);
	ion_ctx_unref(ctx);
	fflush(stdout); /* _exit() will not */
	return r < 0;
}

/* The parent: the camera's answer, checked against its own solution. */
static int compositor(int sock, struct ion_ctx *ctx, struct ion_alloc_config *config,
		      const char *expect)
{
	static char reply[MSG_MAX];
	struct ion_solution *sol = NULL;
	char frame[sizeof(FRAME)] = "", *theirs, *p;
	const char *ours = "no heap";
	int fd = -1, r = recv_msg(sock, reply, sizeof(reply), &fd);

	if (r < 0 || !(theirs = strchr(reply, '\n'))) {
		fprintf(stderr, "compositor: the camera answered %s\n", r < 0 ? strerror(-r) : reply);
		return 1;
	}
	*theirs++ = '\0';
	p = fd >= 0 ? mmap(NULL, 1 << 20, PROT_READ, MAP_SHARED, fd, 0) : MAP_FAILED;
	if (p != MAP_FAILED) {
		ion_sync(fd, ION_SYNC_START | ION_SYNC_READ);
		memcpy(frame, p, sizeof(frame) - 1);
		ion_sync(fd, ION_SYNC_END | ION_SYNC_READ);
		munmap(p, 1 << 20);
	}
	r = ion_alloc_config_add_constraints(config, theirs);
	if (r == 0)
		r = ion_ctx_solve(ctx, config, &sol);
	if (r == 0 && ion_solution_get_heap_count(sol) > 0)
		ours = ion_heap_get_name(ion_solution_get_heap(sol, 0));
	printf("compositor: the camera used %s, this side solves %s; the buffer reads \"%s\"\n",
	       reply, ours, frame);
	r = strcmp(ours, reply) || strcmp(frame, FRAME) || (expect && strcmp(expect, ours));
	if (fd >= 0)
		close(fd);
	ion_solution_unref(sol);
	return r;
}

int main(int argc, char **argv)
{
	const char *parent = "card1", *child = "video0", *expect = NULL;
	bool parent_default = true, child_default = true;
	struct ion_alloc_config *config = NULL;
	struct ion_ctx *ctx = NULL;
	char *text = NULL;
	int sv[2], status, r = 1;
	pid_t pid;

	for (int i = 1; i < argc; i += 2) {
		const char *v = i + 1 < argc ? argv[i + 1] : NULL;

		if (v && strcmp(argv[i], "--parent-devices") == 0)
			parent = v, parent_default = false;
		else if (v && strcmp(argv[i], "--child-devices") == 0)
			child = v, child_default = false;
		else if (v && strcmp(argv[i], "--expect") == 0)
			expect = v;
		else
			return fprintf(stderr, "usage: share-constraints [--parent-devices A,B] "
					       "[--child-devices C,D] [--expect HEAP]\n"), 2;
	}
	if (ion_ctx_new(NULL, &ctx) < 0 || !(config = config_for(ctx, parent, parent_default)) ||
	    ion_alloc_config_serialize(config, &text) < 0 ||
	    socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv) < 0)
		goto out;
	printf("compositor: sends %zu bytes of constraints: %.120s...\n", strlen(text), text);
	fflush(stdout);
	pid = fork();
	if (pid == 0) {
		close(sv[0]);
		_exit(camera(sv[1], child, child_default)); /* knows only what the socket says */
	}
	close(sv[1]);
	if (pid > 0 && send_msg(sv[0], text, -1) == 0)
		r = compositor(sv[0], ctx, config, expect);
	close(sv[0]);
	if (pid < 0 || waitpid(pid, &status, 0) < 0 || !WIFEXITED(status) || WEXITSTATUS(status))
		r = 1;
out:
	free(text);
	ion_alloc_config_free(config);
	ion_ctx_unref(ctx);
	return r;
}
