// SPDX-License-Identifier: MIT
/*
 * pool-stream: a producer that needs a fresh 1 MiB buffer for every frame
 * and keeps three in flight, as a camera or decoder does, served from a
 * pool: buffers kept ready in user space, refilled in the background, so
 * that a frame rarely waits for the kernel.  At the end, the pool's
 * statistics say how many frames it served from what it held.
 *
 *   cc -o pool-stream pool-stream.c $(pkg-config --cflags --libs libion)
 *   ./pool-stream [FRAMES]
 */
#ifndef _POSIX_C_SOURCE
#define _POSIX_C_SOURCE 200809L /* nanosleep, with -std=c11 */
#endif
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include <ion/ion.h>

#define FRAME_SIZE (1u << 20)
#define IN_FLIGHT 3

static int fail(const char *what, int r)
{
	fprintf(stderr, "pool-stream: %s: %s\n", what, strerror(-r));
	return r;
}

/* The producer's work: write the frame number over the frame. */
static int produce(int fd, unsigned int frame)
{
	unsigned char *p = mmap(NULL, FRAME_SIZE, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);

	if (p == MAP_FAILED)
		return -1;
	ion_sync(fd, ION_SYNC_START | ION_SYNC_WRITE);
	memset(p, (int)(frame & 0xff), FRAME_SIZE);
	ion_sync(fd, ION_SYNC_END | ION_SYNC_WRITE);
	munmap(p, FRAME_SIZE);
	return 0;
}

int main(int argc, char **argv)
{
	struct ion_alloc_config *config = NULL;
	struct ion_solution *sol = NULL;
	struct ion_pool *pool = NULL;
	struct ion_ctx *ctx = NULL;
	int ring[IN_FLIGHT] = { -1, -1, -1 };
	unsigned int frames = argc > 1 ? (unsigned int)strtoul(argv[1], NULL, 10) : 120;
	const struct timespec period = { .tv_nsec = 2 * 1000 * 1000 };
	int r;

	/* What the pool holds: 1 MiB buffers of the machine's system heap. */
	r = ion_ctx_new(NULL, &ctx);
	if (r == 0)
		r = ion_alloc_config_new(&config);
	if (r == 0)
		r = ion_alloc_config_set_size(config, FRAME_SIZE);
	if (r == 0)
		r = ion_alloc_config_set_heap_mask(config, ION_HEAP_SYSTEM_MASK);
	if (r == 0)
		r = ion_ctx_solve(ctx, config, &sol);
	if (r == 0 && ion_solution_get_heap_count(sol) == 0)
		r = -ENODEV; /* no heap serves the mask */
	if (r < 0) {
		fail("a solution for the system heap", r);
		goto out;
	}
	r = ion_pool_new(sol, &pool);
	/* Keep four frames ready (one more than in flight), refilled by the
	 * context's thread whenever the pool falls to half of that. */
	if (r == 0)
		r = ion_pool_set_hints(pool, "4x1M");
	if (r == 0)
		r = ion_pool_prefill(pool);
	if (r == 0)
		r = ion_pool_set_background(pool, 1);
	if (r < 0) {
		fail("pool", r);
		goto out;
	}
	printf("pool of %s: %u frames of %u bytes, %d in flight\n",
	       ion_heap_get_name(ion_solution_get_heap(sol, 0)), frames, FRAME_SIZE, IN_FLIGHT);

	for (unsigned int frame = 0; frame < frames; frame++) {
		int *slot = &ring[frame % IN_FLIGHT], fd;

		/* The oldest frame is done with: back to the pool.  Nothing else
		 * holds it (no mapping, no other fd), which the pool can check
		 * for a dma-buf but not for a memfd: say so (VOUCH). */
		if (*slot >= 0) {
			r = ion_pool_put(pool, *slot, ION_POOL_VOUCH);
			*slot = -1;
			if (r < 0) {
				fail("ion_pool_put", r);
				break;
			}
		}
		r = ion_pool_get(pool, FRAME_SIZE, &fd);
		if (r < 0) {
			fail("ion_pool_get", r);
			break;
		}
		*slot = fd;
		if (produce(fd, frame) < 0) {
			perror("pool-stream: mmap");
			r = -1;
			break;
		}
		nanosleep(&period, NULL);
	}
	for (int i = 0; i < IN_FLIGHT; i++)
		if (ring[i] >= 0)
			ion_pool_put(pool, ring[i], ION_POOL_VOUCH);
	if (r == 0)
		printf("served %llu frames from the pool and %llu by a new allocation; "
		       "%llu refills ahead of need\n",
		       ion_pool_get_stat(pool, ION_POOL_STAT_HITS),
		       ion_pool_get_stat(pool, ION_POOL_STAT_MISSES),
		       ion_pool_get_stat(pool, ION_POOL_STAT_REFILLS));
out:
	ion_pool_unref(pool);
	ion_solution_unref(sol);
	ion_alloc_config_free(config);
	ion_ctx_unref(ctx);
	return r == 0 ? 0 : 1;
}
