// SPDX-License-Identifier: MIT
/*
 * ionctl alloc: allocate buffers, write a pattern through CPU-access
 * brackets, hand each to a child process over a Unix socket and let the
 * child check what the parent wrote.
 */
#include <errno.h>
#include <getopt.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include "fdpass.h"
#include "ionctl.h"

static unsigned char pattern(size_t i, unsigned int seed)
{
	return (unsigned char)((i >> 12) ^ i ^ seed);
}

/* Returns 0 or a negative errno; -EILSEQ when the data is not the pattern. */
static int check_pattern(int fd, size_t len, unsigned int seed)
{
	unsigned char *p = mmap(NULL, len, PROT_READ, MAP_SHARED, fd, 0);
	int r;

	if (p == MAP_FAILED)
		return -errno;
	r = ion_sync(fd, ION_SYNC_START | ION_SYNC_READ);
	for (size_t i = 0; r == 0 && i < len; i++)
		if (p[i] != pattern(i, seed))
			r = -EILSEQ;
	if (r == 0)
		r = ion_sync(fd, ION_SYNC_END | ION_SYNC_READ);
	munmap(p, len);
	return r;
}

static int write_pattern(int fd, size_t len, unsigned int seed)
{
	unsigned char *p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	int r;

	if (p == MAP_FAILED)
		return -errno;
	r = ion_sync(fd, ION_SYNC_START | ION_SYNC_WRITE);
	if (r == 0) {
		for (size_t i = 0; i < len; i++)
			p[i] = pattern(i, seed);
		r = ion_sync(fd, ION_SYNC_END | ION_SYNC_WRITE);
	}
	munmap(p, len);
	return r;
}

/* The child's side: receive, check, answer with the errno (0 = good). */
static void child(int sock, size_t len, unsigned int seed)
{
	int fd, r = fdpass_recv(sock, &fd);

	if (r == 0) {
		r = check_pattern(fd, len, seed);
		close(fd);
	}
	_exit(r == 0 ? 0 : (-r & 0x7f) ?: 1);
}

static int share_with_child(int fd, size_t len, unsigned int seed, pid_t *ret_pid)
{
	int sv[2], status, r;
	pid_t pid;

	if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) < 0)
		return -errno;
	pid = fork();
	if (pid < 0) {
		r = -errno;
		close(sv[0]);
		close(sv[1]);
		return r;
	}
	if (pid == 0) {
		close(sv[0]);
		child(sv[1], len, seed);
	}
	close(sv[1]);
	r = fdpass_send(sv[0], fd);
	close(sv[0]);
	if (waitpid(pid, &status, 0) != pid)
		return -errno;
	if (r == 0 && (!WIFEXITED(status) || WEXITSTATUS(status)))
		r = WIFEXITED(status) ? -WEXITSTATUS(status) : -EINTR;
	*ret_pid = pid;
	return r;
}

static int usage(void)
{
	printf("usage: ionctl alloc --size SIZE [--heap NAME | --for DEVICE...] [--count N]\n"
	       "                    [--cached] [--json]\n\n"
	       "Allocates N buffers of SIZE (K, M, G suffixes) from heap NAME, or from\n"
	       "the best heap for every DEVICE given with --for (repeat it), or by\n"
	       "default from the heap serving ION_HEAP_SYSTEM_MASK; writes a pattern\n"
	       "through ion_sync() brackets, passes each buffer to a child process\n"
	       "over a Unix socket and has the child check it.  Reports the size the\n"
	       "buffer really has (whole pages, or more), which the pattern fills.\n"
	       "--json: one object per buffer, {\"buffer\", \"heap\", \"backend\",\n"
	       "\"requested\", \"size\", \"child\"} or {\"buffer\", \"error\"}.\n");
	return 0;
}

/* Why a heap refused a length: the solver's words when it can never give
 * so much ("at most 64M (MaxSize, FILE:LINE)"). */
static void say_why_not(struct ion_ctx *ctx, const struct ion_heap *heap, size_t len)
{
	struct ion_alloc_config *config = NULL;
	struct ion_solution *sol = NULL;
	const struct ion_device *dev;
	const struct ion_heap *h;
	const char *reason;

	if (ion_alloc_config_new(&config) == 0 && ion_alloc_config_set_size(config, len) == 0 &&
	    ion_alloc_config_set_heap(config, ion_heap_get_name(heap)) == 0 &&
	    ion_ctx_solve(ctx, config, &sol) == 0)
		for (int i = 0; i < ion_solution_get_rejection_count(sol); i++)
			if (ion_solution_get_rejection(sol, (unsigned int)i, &h, &dev, &reason) == 0 &&
			    h == heap)
				fprintf(stderr, "ionctl alloc: %s\n", reason);
	ion_solution_unref(sol);
	ion_alloc_config_free(config);
}

/* One buffer's line of the report, as text or as JSON. */
static void report(int json, size_t i, const struct ion_heap *heap, size_t asked,
		   size_t size, pid_t pid, int err)
{
	if (!json) {
		if (err)
			return; /* said on stderr */
		printf("buffer %zu: %zu bytes", i, size);
		if (size != asked)
			printf(" (%zu asked)", asked);
		printf(" from %s (%s): written, read back, and checked by child %d\n",
		       ion_heap_get_name(heap), ion_heap_get_backend(heap), (int)pid);
		return;
	}
	printf("%s\n  {\"buffer\": %zu, \"heap\": ", i ? "," : "", i);
	ionctl_json_string(heap ? ion_heap_get_name(heap) : NULL);
	printf(", \"backend\": ");
	ionctl_json_string(heap ? ion_heap_get_backend(heap) : NULL);
	printf(", \"requested\": %zu", asked);
	if (err) {
		printf(", \"error\": ");
		ionctl_json_string(strerror(-err));
	} else {
		printf(", \"size\": %zu, \"child\": %d", size, (int)pid);
	}
	putchar('}');
}

/* --for: the solution for the devices, or an error printed. */
static int solve_for(struct ion_ctx *ctx, char **specs, int n, size_t len,
		     unsigned int flags, struct ion_solution **ret)
{
	struct ion_device **devices;
	int r = ionctl_get_devices("alloc", ctx, n, specs, &devices);

	if (r < 0)
		return r;
	r = ionctl_solve_for("alloc", ctx, devices, n, NULL, len, flags, ret);
	ionctl_put_devices(devices, n);
	if (r == 0 && ion_solution_get_heap_count(*ret) == 0) {
		ionctl_fail("alloc", 0, "no heap fits every device (ionctl explain says why)");
		*ret = ion_solution_unref(*ret);
		r = -ENODEV;
	}
	return r;
}

int ionctl_alloc(int argc, char **argv)
{
	static const struct option options[] = {
		{ "size", required_argument, NULL, 's' },
		{ "heap", required_argument, NULL, 'H' },
		{ "count", required_argument, NULL, 'n' },
		{ "cached", no_argument, NULL, 'c' },
		{ "for", required_argument, NULL, 'f' },
		{ "json", no_argument, NULL, 'j' },
		{ "help", no_argument, NULL, 'h' },
		{ 0 },
	};
	const char *heap_name = NULL;
	const struct ion_heap *heap = NULL;
	struct ion_solution *sol = NULL;
	char *specs[64];
	unsigned int flags = 0;
	size_t len = 0, count = 1;
	struct ion_ctx *ctx;
	int c, r = 0, n_for = 0, json = 0;

	while ((c = getopt_long(argc, argv, "s:H:n:cf:jh", options, NULL)) != -1) {
		switch (c) {
		case 's':
			if (ionctl_parse_size("alloc", optarg, &len) < 0)
				return IONCTL_USAGE;
			break;
		case 'H':
			heap_name = optarg;
			break;
		case 'n': {
			uint64_t v;

			if (ionctl_parse_u64(optarg, &v) < 0 || v == 0 || v > 1000000)
				return ionctl_usage_error("alloc", "invalid count '%s'", optarg);
			count = (size_t)v;
			break;
		}
		case 'c':
			flags |= ION_FLAG_CACHED;
			break;
		case 'f':
			if (n_for == 64)
				return ionctl_usage_error("alloc", "at most 64 --for devices");
			specs[n_for++] = optarg;
			break;
		case 'j':
			json = 1;
			break;
		case 'h':
			return usage();
		default:
			return ionctl_usage_error("alloc", "see ionctl alloc --help");
		}
	}
	if (optind < argc)
		return ionctl_usage_error("alloc", "unexpected argument '%s'", argv[optind]);
	if (!len)
		return ionctl_usage_error("alloc", "--size is required");
	if (heap_name && n_for)
		return ionctl_usage_error("alloc", "--heap or --for, not both");
	ctx = ionctl_ctx_new("alloc");
	if (!ctx)
		return 1;
	if (n_for)
		r = solve_for(ctx, specs, n_for, len, flags, &sol);
	else if (heap_name)
		r = ionctl_find_heap("alloc", ctx, heap_name, &heap);
	else if ((r = ionctl_default_heap(ctx, &heap)) < 0)
		ionctl_fail("alloc", r, "no heap serves ION_HEAP_SYSTEM_MASK");
	if (r < 0) {
		ion_ctx_unref(ctx);
		return IONCTL_NO;
	}
	if (json) {
		ionctl_json_begin("alloc");
		printf(", \"buffers\": [");
	}
	for (size_t i = 0; i < count && r == 0; i++) {
		unsigned int seed = (unsigned int)i * 31 + 7;
		size_t size = 0;
		pid_t pid = 0;
		int fd;

		if (sol)
			r = ion_solution_alloc(sol, &fd, &heap);
		else
			r = ion_ctx_alloc(ctx, ion_heap_get_name(heap), len, flags, &fd);
		if (r < 0) {
			ionctl_fail("alloc", r, "%zu bytes from %s", len,
				    heap ? ion_heap_get_name(heap) : "the devices' heaps");
			if (r == -ENOMEM && !sol)
				say_why_not(ctx, heap, len);
			report(json, i, sol ? NULL : heap, len, 0, 0, r);
			break;
		}
		/* What the heap really gave: whole pages at least. */
		r = ion_fd_get_size(fd, &size);
		if (r == 0)
			r = write_pattern(fd, size, seed);
		if (r == 0)
			r = check_pattern(fd, size, seed);
		if (r == 0)
			r = share_with_child(fd, size, seed, &pid);
		close(fd);
		if (r < 0)
			ionctl_fail("alloc", r, "buffer %zu from %s", i, ion_heap_get_name(heap));
		report(json, i, heap, len, size, pid, r);
	}
	if (json) {
		printf("\n]");
		ionctl_json_end();
	}
	ion_solution_unref(sol);
	ion_ctx_unref(ctx);
	return r < 0 ? IONCTL_NO : 0;
}
