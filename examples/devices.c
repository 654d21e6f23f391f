// SPDX-License-Identifier: MIT
/*
 * devices: a buffer that every device of a pipeline can import, chosen by
 * what each device needs (contiguous memory, an address limit, a heap of
 * its own...), two ways:
 *
 *  1. now: a request (struct ion_alloc_config) with the devices added,
 *     solved into the heaps that fit them all, best first, and why every
 *     other heap does not; then one allocation from the solution;
 *  2. late: a buffer the devices attach to one by one, which allocates
 *     only when its fd is first asked for, from a heap that fits every
 *     device attached by then.
 *
 * DEVICEs are /dev nodes, /sys paths, names (card0, video0) or heaps.d
 * [Device] names; without any, the devices discovery found (DRM cards,
 * V4L2, accel), at most four.  On a machine without devices it says so
 * and allocates for the CPU alone, which every heap serves.
 *
 *   cc -o devices devices.c $(pkg-config --cflags --libs libion)
 *   ./devices [DEVICE...]
 *
 * Exit status: 0 allocated, 1 a device not found or no heap fits them all.
 */
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include <ion/ion.h>

#define MAX_DEVICES 16
#define BUFFER_SIZE (4u << 20)

static void print_solution(const struct ion_solution *sol)
{
	int n = ion_solution_get_heap_count(sol);
	int nr = ion_solution_get_rejection_count(sol);

	printf("heaps that fit, best first:");
	for (int i = 0; i < n; i++)
		printf(" %s", ion_heap_get_name(ion_solution_get_heap(sol, (unsigned int)i)));
	printf("%s\n", n ? "" : " none");
	for (int i = 0; i < nr; i++) {
		const struct ion_heap *heap;
		const struct ion_device *dev;
		const char *reason;

		if (ion_solution_get_rejection(sol, (unsigned int)i, &heap, &dev, &reason) == 0)
			printf("  not %s: %s\n", ion_heap_get_name(heap), reason);
	}
}

/* 1: solve for the devices, then allocate from the solution. */
static int allocate_now(struct ion_ctx *ctx, struct ion_device **devices, int n)
{
	struct ion_alloc_config *config = NULL;
	struct ion_solution *sol = NULL;
	const struct ion_heap *heap;
	int fd = -1, r;

	r = ion_alloc_config_new(&config);
	if (r == 0)
		r = ion_alloc_config_set_size(config, BUFFER_SIZE);
	for (int i = 0; r == 0 && i < n; i++)
		r = ion_alloc_config_add_device(config, devices[i]);
	if (r == 0)
		r = ion_ctx_solve(ctx, config, &sol);
	if (r == 0) {
		print_solution(sol);
		r = ion_solution_alloc(sol, &fd, &heap);
	}
	if (r == 0) {
		printf("now: %u bytes from %s\n", BUFFER_SIZE, ion_heap_get_name(heap));
		close(fd);
	} else {
		fprintf(stderr, "devices: allocation for the set: %s\n", strerror(-r));
	}
	ion_solution_unref(sol);
	ion_alloc_config_free(config);
	return r;
}

/* 2: a buffer the devices attach to; the first fd allocates. */
static int allocate_late(struct ion_ctx *ctx, struct ion_device **devices, int n)
{
	struct ion_buffer *buffer;
	int fd, r;

	r = ion_buffer_new(ctx, BUFFER_SIZE, &buffer);
	if (r < 0) {
		fprintf(stderr, "devices: ion_buffer_new: %s\n", strerror(-r));
		return r;
	}
	for (int i = 0; r == 0 && i < n; i++)
		r = ion_buffer_attach(buffer, devices[i]);
	if (r == 0)
		r = ion_buffer_get_fd(buffer, &fd); /* the buffer keeps fd */
	if (r == 0)
		printf("late: %zu bytes from %s, chosen when the fd was first asked for\n",
		       ion_buffer_get_size(buffer), ion_heap_get_name(ion_buffer_get_heap(buffer)));
	else
		fprintf(stderr, "devices: late buffer: %s%s%s\n", strerror(-r),
			ion_buffer_get_reason(buffer) ? ": " : "",
			ion_buffer_get_reason(buffer) ? ion_buffer_get_reason(buffer) : "");
	ion_buffer_unref(buffer);
	return r;
}

int main(int argc, char **argv)
{
	struct ion_device *devices[MAX_DEVICES];
	struct ion_ctx *ctx;
	int n = 0, r;

	r = ion_ctx_new(NULL, &ctx);
	if (r < 0) {
		fprintf(stderr, "devices: ion_ctx_new: %s\n", strerror(-r));
		return 1;
	}
	if (argc > 1) {
		for (int i = 1; i < argc && n < MAX_DEVICES; i++) {
			r = ion_ctx_get_device(ctx, argv[i], &devices[n]);
			if (r < 0) {
				fprintf(stderr, "devices: no device %s: %s\n", argv[i], strerror(-r));
				goto out;
			}
			n++;
		}
	} else {
		int count = ion_ctx_get_device_count(ctx);

		for (int i = 0; i < count && n < 4; i++)
			if (ion_ctx_get_device_at(ctx, (unsigned int)i, &devices[n]) == 0)
				n++;
	}
	if (n == 0)
		printf("no device here (no DRM card, V4L2 or accel node): allocating for the CPU alone\n");
	for (int i = 0; i < n; i++)
		printf("device %s (%s)\n", ion_device_get_name(devices[i]),
		       ion_device_get_subsystem(devices[i]) ? ion_device_get_subsystem(devices[i])
							    : "heaps.d");
	r = allocate_now(ctx, devices, n);
	if (r == 0)
		r = allocate_late(ctx, devices, n);
out:
	while (n > 0)
		ion_device_unref(devices[--n]);
	ion_ctx_unref(ctx);
	return r == 0 ? 0 : 1;
}
