// SPDX-License-Identifier: MIT
/*
 * gralloc: a frame buffer allocated and mapped the way an Android Gralloc
 * does it, with Android's libion calls alone: a client, the heaps it
 * offers, a buffer for a 640x480 XRGB8888 frame with a 64-byte aligned
 * stride, a CPU mapping to draw into, cache maintenance before a device
 * reads it, a share fd for the consumer (compositor, codec), the
 * consumer's import, and the release.  The same code runs on a kernel
 * with /dev/ion and on one without: libion serves the heap masks from
 * whatever allocator the machine has.
 *
 *   cc -o gralloc gralloc.c $(pkg-config --cflags --libs libion)
 *   ./gralloc
 */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include <ion/ion.h>

#define WIDTH 640
#define HEIGHT 480
#define BPP 4
#define STRIDE_ALIGN 64

static int fail(const char *what, int r)
{
	fprintf(stderr, "gralloc: %s: %s\n", what, strerror(-r));
	return 1;
}

static uint32_t pixel(unsigned int x, unsigned int y)
{
	return 0xff000000u | (x & 0xff) << 16 | (y & 0xff) << 8 | ((x ^ y) & 0xff);
}

int main(void)
{
	size_t stride = (WIDTH * BPP + STRIDE_ALIGN - 1) / STRIDE_ALIGN * STRIDE_ALIGN;
	size_t len = stride * HEIGHT;
	ion_user_handle_t handle, imported;
	struct ion_heap_data *heaps;
	unsigned char *ptr, *view;
	int client, cnt, map_fd, share_fd, view_fd, r;

	client = ion_open();
	if (client < 0)
		return fail("ion_open", client);

	/* What a Gralloc logs at start: the heaps and their ids. */
	r = ion_query_heap_cnt(client, &cnt);
	if (r < 0)
		return fail("ion_query_heap_cnt", r);
	heaps = calloc(cnt > 0 ? (size_t)cnt : 1, sizeof(*heaps));
	if (!heaps)
		return fail("calloc", -ENOMEM);
	r = cnt > 0 ? ion_query_get_heaps(client, cnt, heaps) : 0;
	if (r < 0)
		return fail("ion_query_get_heaps", r);
	for (int i = 0; i < cnt; i++)
		printf("heap id %2u type %u: %s\n", heaps[i].heap_id, heaps[i].type, heaps[i].name);
	free(heaps);

	/* The frame: the system heap, cached (the CPU draws into it). */
	r = ion_alloc(client, len, 0, ION_HEAP_SYSTEM_MASK, ION_FLAG_CACHED, &handle);
	if (r < 0)
		return fail("ion_alloc", r);
	r = ion_map(client, handle, len, PROT_READ | PROT_WRITE, MAP_SHARED, 0, &ptr, &map_fd);
	if (r < 0)
		return fail("ion_map", r);
	for (unsigned int y = 0; y < HEIGHT; y++)
		for (unsigned int x = 0; x < WIDTH; x++) {
			uint32_t p = pixel(x, y);

			memcpy(ptr + y * stride + x * BPP, &p, sizeof(p));
		}
	/* The CPU's writes, made visible to devices before one reads them. */
	r = ion_sync_fd(client, map_fd);
	if (r < 0)
		return fail("ion_sync_fd", r);

	/* The fd a Gralloc puts in its native_handle for the consumer. */
	r = ion_share(client, handle, &share_fd);
	if (r < 0)
		return fail("ion_share", r);
	printf("frame %dx%d, stride %zu, %zu bytes: share fd %d\n", WIDTH, HEIGHT, stride, len,
	       share_fd);

	/* The consumer's side (here in the same process): import and read. */
	r = ion_import(client, share_fd, &imported);
	if (r < 0)
		return fail("ion_import", r);
	r = ion_map(client, imported, len, PROT_READ, MAP_SHARED, 0, &view, &view_fd);
	if (r < 0)
		return fail("ion_map (import)", r);
	{
		uint32_t p;

		memcpy(&p, view + 100 * stride + 200 * BPP, sizeof(p));
		printf("consumer reads pixel (200, 100) = 0x%08x: %s\n", (unsigned int)p,
		       p == pixel(200, 100) ? "as drawn" : "WRONG");
		r = p == pixel(200, 100) ? 0 : 1;
	}
	munmap(view, len);
	close(view_fd);
	ion_free(client, imported);

	/* Release: unmap, close the fds, free the handle, close the client. */
	munmap(ptr, len);
	close(map_fd);
	close(share_fd);
	ion_free(client, handle);
	ion_close(client);
	return r;
}
