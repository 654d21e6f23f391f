// SPDX-License-Identifier: MIT
/*
 * Two processes agreeing on a heap over a Unix socket.
 *
 * A compositor (the parent) knows the display; a camera service (the
 * child) knows the sensor.  The compositor serializes the constraints of
 * its devices (ion_alloc_config_serialize) and sends the text over a
 * socketpair; the camera AND-s them with its own devices' constraints
 * (ion_alloc_config_add_constraints), solves, allocates, writes a frame,
 * and sends the buffer fd back with SCM_RIGHTS, with the heap's name and
 * the text of its own constraints.  The compositor solves the same set on
 * its side, checks that it reaches the same heap, and reads the frame.
 *
 *   share-constraints [--sysroot DIR] [--config-dir PATH]
 *                     [--parent-devices A,B] [--child-devices C,D]
 *                     [--size BYTES] [--expect HEAP]
 *
 * Devices are what ion_ctx_get_device() takes: /dev nodes, names (card1,
 * video0) or heaps.d [Device] names; "" for none.  By default the
 * compositor has card1 and the camera video0 (the test VM's vkms and
 * vivid, which agree on reserved, the CMA heap); a default device the
 * machine does not have is left out, with a note, so that on a machine
 * without them the two agree on a buffer no device touches.  A device
 * named on the command line must exist.  --expect makes a different
 * heap a failure.  Exit status: 0 agreed, 1 no heap fits or a failure,
 * 2 usage.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <ion/ion.h>

#include "ionctl/fdpass.h"

#define FRAME_TEXT "frame 1 from the camera"

struct options {
	const char *sysroot;
	const char *config_dir;
	const char *parent_devices;
	const char *child_devices;
	bool parent_default, child_default;
	size_t size;
	const char *expect;
};

static const char *who = "share-constraints";

static void say(const char *format, ...) __attribute__((format(printf, 1, 2)));
static void say(const char *format, ...)
{
	va_list args;

	printf("%s[%d]: ", who, (int)getpid());
	va_start(args, format);
	vprintf(format, args);
	va_end(args);
	putchar('\n');
	fflush(stdout);
}

static int usage(void)
{
	fprintf(stderr,
		"usage: share-constraints [--sysroot DIR] [--config-dir PATH]\n"
		"                         [--parent-devices A,B] [--child-devices C,D]\n"
		"                         [--size BYTES] [--expect HEAP]\n");
	return 2;
}

/* ---- messages: a length, then that many bytes ---- */

static int write_all(int fd, const void *buf, size_t len)
{
	const char *p = buf;

	while (len) {
		ssize_t n = write(fd, p, len);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return -errno;
		p += n;
		len -= (size_t)n;
	}
	return 0;
}

static int read_all(int fd, void *buf, size_t len)
{
	char *p = buf;

	while (len) {
		ssize_t n = read(fd, p, len);

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return -errno;
		if (n == 0)
			return -EPIPE;
		p += n;
		len -= (size_t)n;
	}
	return 0;
}

static int send_text(int sock, const char *text)
{
	uint32_t len = (uint32_t)strlen(text);
	int r = write_all(sock, &len, sizeof(len));

	return r < 0 ? r : write_all(sock, text, len);
}

/* A malloc'ed, NUL-terminated message of at most 1 MiB. */
static int recv_text(int sock, char **ret)
{
	uint32_t len;
	char *text;
	int r = read_all(sock, &len, sizeof(len));

	if (r < 0)
		return r;
	if (len > (1U << 20))
		return -EMSGSIZE;
	text = malloc((size_t)len + 1);
	if (!text)
		return -ENOMEM;
	r = read_all(sock, text, len);
	if (r < 0) {
		free(text);
		return r;
	}
	text[len] = '\0';
	*ret = text;
	return 0;
}

/* ---- both sides ---- */

static struct ion_ctx *open_ctx(const struct options *o)
{
	struct ion_ctx *ctx = NULL;
	int r = ion_ctx_new(o->sysroot, &ctx);

	if (r == 0 && o->config_dir)
		r = ion_ctx_set_heaps_path(ctx, o->config_dir);
	if (r < 0) {
		say("cannot make a context: %s", strerror(-r));
		return ion_ctx_unref(ctx);
	}
	return ctx;
}

/*
 * Adds the devices of a comma-separated list to config, naming them in
 * names (NULL: quietly); a default device the machine lacks is left out.
 * 0, or -1.
 */
static int add_devices(struct ion_ctx *ctx, struct ion_alloc_config *config, const char *list,
		       bool is_default, char *names, size_t size)
{
	char *copy = strdup(list), *save = NULL, quiet[8];
	int r = 0;

	if (!names) {
		names = quiet;
		size = sizeof(quiet);
	}
	names[0] = '\0';
	if (!copy)
		return -1;
	for (char *spec = strtok_r(copy, ",", &save); spec; spec = strtok_r(NULL, ",", &save)) {
		struct ion_device *dev = NULL;
		int e = ion_ctx_get_device(ctx, spec, &dev);

		if (e < 0) {
			if (is_default) {
				if (names != quiet)
					say("no device %s on this machine: left out", spec);
				continue;
			}
			say("no device %s: %s", spec, strerror(-e));
			r = -1;
			break;
		}
		e = ion_alloc_config_add_device(config, dev);
		if (e == 0) {
			size_t used = strlen(names);

			snprintf(names + used, size - used, "%s%s", used ? ", " : "",
				 ion_device_get_name(dev));
		}
		ion_device_unref(dev);
		if (e < 0) {
			say("adding %s: %s", spec, strerror(-e));
			r = -1;
			break;
		}
	}
	free(copy);
	if (r == 0 && !names[0])
		snprintf(names, size, "none");
	return r;
}

/* Prints the candidates and every rejection of a solution. */
static void explain(const struct ion_solution *sol)
{
	int n = ion_solution_get_heap_count(sol);
	char list[512] = "";

	for (int i = 0; i < n; i++) {
		size_t used = strlen(list);

		snprintf(list + used, sizeof(list) - used, "%s%s", i ? " " : "",
			 ion_heap_get_name(ion_solution_get_heap(sol, (unsigned int)i)));
	}
	say("candidates, best first: %s", n ? list : "none");
	for (int i = 0; i < ion_solution_get_rejection_count(sol); i++) {
		const struct ion_heap *heap;
		const struct ion_device *dev;
		const char *reason;

		if (ion_solution_get_rejection(sol, (unsigned int)i, &heap, &dev, &reason) == 0)
			say("  %-14s %s%s", ion_heap_get_name(heap), reason,
			    dev ? "" : " [a remote constraint]");
	}
}

/* ---- the camera service: the child ---- */

static int camera(const struct options *o, int sock)
{
	struct ion_alloc_config *config = NULL, *mine = NULL;
	struct ion_solution *sol = NULL;
	struct ion_ctx *ctx;
	const struct ion_heap *heap = NULL;
	char names[256], *remote = NULL, *own = NULL, reply[256];
	int fd = -1, r = 1;

	who = "camera";
	ctx = open_ctx(o);
	if (!ctx)
		return 1;
	if (recv_text(sock, &remote) < 0) {
		say("nothing came from the compositor");
		goto out;
	}
	say("received the compositor's constraints (%zu bytes)", strlen(remote));
	if (ion_alloc_config_new(&config) < 0 || ion_alloc_config_new(&mine) < 0 ||
	    ion_alloc_config_set_size(config, o->size) < 0)
		goto out;
	/* Its own devices: once in the request, once alone for the reply. */
	if (add_devices(ctx, mine, o->child_devices, o->child_default, names, sizeof(names)) < 0 ||
	    add_devices(ctx, config, o->child_devices, true, NULL, 0) < 0)
		goto fail;
	say("its own devices: %s", names);
	r = ion_alloc_config_add_constraints(config, remote);
	if (r < 0) {
		say("the compositor's text is refused: %s", strerror(-r));
		r = 1;
		goto fail;
	}
	r = ion_ctx_solve(ctx, config, &sol);
	if (r < 0) {
		say("solving: %s", strerror(-r));
		r = 1;
		goto fail;
	}
	say("solved for the compositor's devices and its own:");
	explain(sol);
	r = ion_solution_alloc(sol, &fd, &heap);
	if (r < 0) {
		say("no buffer: %s%s", strerror(-r),
		    r == -ENODEV ? " (no heap fits every device of both sides)" : "");
		snprintf(reply, sizeof(reply), "error=%s", strerror(-r));
		send_text(sock, reply);
		r = 1;
		goto out;
	}
	/* A frame, where the CPU can write it. */
	{
		void *p = mmap(NULL, o->size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);

		if (p != MAP_FAILED) {
			ion_sync(fd, ION_SYNC_START | ION_SYNC_WRITE);
			memcpy(p, FRAME_TEXT, sizeof(FRAME_TEXT));
			ion_sync(fd, ION_SYNC_END | ION_SYNC_WRITE);
			munmap(p, o->size);
		}
	}
	say("allocated %zu bytes from %s (%s), wrote a frame, sends the fd back",
	    ion_solution_get_size(sol), ion_heap_get_name(heap), ion_heap_get_backend(heap));
	if (ion_alloc_config_serialize(mine, &own) < 0)
		goto fail;
	snprintf(reply, sizeof(reply), "heap=%s", ion_heap_get_name(heap));
	if (send_text(sock, reply) < 0 || send_text(sock, own) < 0 || fdpass_send(sock, fd) < 0) {
		say("the compositor went away");
		r = 1;
		goto out;
	}
	r = 0;
	goto out;
fail:
	send_text(sock, "error=the camera gave up");
	r = 1;
out:
	if (fd >= 0)
		close(fd);
	free(own);
	free(remote);
	ion_solution_unref(sol);
	ion_alloc_config_free(mine);
	ion_alloc_config_free(config);
	ion_ctx_unref(ctx);
	return r;
}

/* ---- the compositor: the parent ---- */

static int compositor(const struct options *o, struct ion_ctx *ctx,
		      struct ion_alloc_config *config, int sock)
{
	struct ion_solution *sol = NULL;
	char *reply = NULL, *theirs = NULL;
	const char *heap;
	size_t size = 0;
	int fd = -1, r = 1;

	if (recv_text(sock, &reply) < 0) {
		say("no answer from the camera");
		return 1;
	}
	if (strncmp(reply, "heap=", 5) != 0) {
		say("the camera found no buffer: %s", reply + (strncmp(reply, "error=", 6) ? 0 : 6));
		goto out;
	}
	heap = reply + 5;
	if (recv_text(sock, &theirs) < 0 || fdpass_recv(sock, &fd) < 0) {
		say("the camera's answer broke off");
		goto out;
	}
	ion_fd_get_size(fd, &size);
	say("received fd %d: %zu bytes from %s", fd, size, heap);
	{
		char frame[sizeof(FRAME_TEXT)] = "";
		void *p = mmap(NULL, size, PROT_READ, MAP_SHARED, fd, 0);

		if (p != MAP_FAILED) {
			ion_sync(fd, ION_SYNC_START | ION_SYNC_READ);
			memcpy(frame, p, sizeof(frame) - 1);
			ion_sync(fd, ION_SYNC_END | ION_SYNC_READ);
			munmap(p, size);
			say("reads \"%s\" in it", frame);
			if (strcmp(frame, FRAME_TEXT) != 0) {
				say("that is not the camera's frame");
				goto out;
			}
		} else {
			say("cannot map it (%s): a buffer for the devices only", strerror(errno));
		}
	}
	/* The same set, solved here: the camera's constraints AND its own. */
	r = ion_alloc_config_add_constraints(config, theirs);
	if (r == 0)
		r = ion_ctx_solve(ctx, config, &sol);
	if (r < 0) {
		say("solving the camera's constraints here: %s", strerror(-r));
		r = 1;
		goto out;
	}
	r = 1;
	if (ion_solution_get_heap_count(sol) == 0 ||
	    strcmp(ion_heap_get_name(ion_solution_get_heap(sol, 0)), heap) != 0) {
		say("solving the same set here gives %s: no agreement",
		    ion_solution_get_heap_count(sol) ? ion_heap_get_name(ion_solution_get_heap(sol, 0))
						     : "no heap");
		goto out;
	}
	say("solving the same set here gives %s too: agreed", heap);
	if (o->expect && strcmp(o->expect, heap) != 0) {
		say("expected %s", o->expect);
		goto out;
	}
	r = 0;
out:
	if (fd >= 0)
		close(fd);
	free(theirs);
	free(reply);
	ion_solution_unref(sol);
	return r;
}

int main(int argc, char **argv)
{
	struct options o = {
		.parent_devices = "card1",
		.child_devices = "video0",
		.parent_default = true,
		.child_default = true,
		.size = 1 << 20,
	};
	struct ion_alloc_config *config = NULL;
	struct ion_ctx *ctx;
	char names[256], *text = NULL;
	int sv[2], status = 0, r;
	pid_t pid;

	for (int i = 1; i < argc; i++) {
		const char *arg = argv[i], *value = i + 1 < argc ? argv[i + 1] : NULL;

		if (!value)
			return usage();
		i++;
		if (strcmp(arg, "--sysroot") == 0) {
			o.sysroot = value;
		} else if (strcmp(arg, "--config-dir") == 0) {
			o.config_dir = value;
		} else if (strcmp(arg, "--parent-devices") == 0) {
			o.parent_devices = value;
			o.parent_default = false;
		} else if (strcmp(arg, "--child-devices") == 0) {
			o.child_devices = value;
			o.child_default = false;
		} else if (strcmp(arg, "--size") == 0) {
			char *end;

			o.size = (size_t)strtoull(value, &end, 0);
			if (*end || o.size == 0)
				return usage();
		} else if (strcmp(arg, "--expect") == 0) {
			o.expect = value;
		} else {
			return usage();
		}
	}

	who = "compositor";
	ctx = open_ctx(&o);
	if (!ctx)
		return 1;
	if (ion_alloc_config_new(&config) < 0 || ion_alloc_config_set_size(config, o.size) < 0 ||
	    add_devices(ctx, config, o.parent_devices, o.parent_default, names, sizeof(names)) < 0) {
		ion_alloc_config_free(config);
		ion_ctx_unref(ctx);
		return 1;
	}
	say("its devices: %s", names);
	r = ion_alloc_config_serialize(config, &text);
	if (r < 0) {
		say("serializing: %s", strerror(-r));
		return 1;
	}
	say("sends its constraints (%zu bytes): %.300s%s", strlen(text), text,
	    strlen(text) > 300 ? "..." : "");
	if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) < 0) {
		perror("socketpair");
		return 1;
	}
	fflush(stdout);
	pid = fork();
	if (pid < 0) {
		perror("fork");
		return 1;
	}
	if (pid == 0) {
		close(sv[0]);
		/* The child starts afresh: it knows only what the socket says. */
		_exit(camera(&o, sv[1]));
	}
	close(sv[1]);
	r = send_text(sv[0], text) < 0 ? 1 : compositor(&o, ctx, config, sv[0]);
	close(sv[0]);
	if (waitpid(pid, &status, 0) < 0 || !WIFEXITED(status) || WEXITSTATUS(status) != 0)
		r = 1;
	free(text);
	ion_alloc_config_free(config);
	ion_ctx_unref(ctx);
	return r;
}
