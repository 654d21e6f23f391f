// SPDX-License-Identifier: MIT
/*
 * dmabufheap-gralloc: buffers allocated the way a Gralloc built on
 * Android's libdmabufheap does it, with its C API alone: a CPU-drawn
 * frame from the system heap (AllocSystem with CPU access), drawn between
 * CpuSyncStart and CpuSyncEnd; and a camera frame from the camera's heap
 * by name (Alloc), which the CPU never touches, falling back to
 * uncached system memory on a machine without that heap, as a Gralloc
 * does.  The same source runs on a phone's kernel and, through libion,
 * on any Linux machine: the heap names resolve to whatever allocator it
 * has (the memfd heap where nothing else is).
 *
 *   cc -o dmabufheap-gralloc dmabufheap-gralloc.c \
 *      $(pkg-config --cflags --libs libion-dmabufheap)
 *   ./dmabufheap-gralloc [CAMERA_HEAP]      (default: linux,cma)
 */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include <BufferAllocator/BufferAllocatorWrapper.h>

#define WIDTH 640
#define HEIGHT 480
#define BPP 4
#define STRIDE_ALIGN 64

static int fail(const char *what, int r)
{
	fprintf(stderr, "dmabufheap-gralloc: %s: %s\n", what, strerror(-r));
	return 1;
}

static size_t frame_size(size_t *ret_stride)
{
	size_t stride = (WIDTH * BPP + STRIDE_ALIGN - 1) / STRIDE_ALIGN * STRIDE_ALIGN;
	size_t page = (size_t)sysconf(_SC_PAGESIZE);

	*ret_stride = stride;
	return (stride * HEIGHT + page - 1) / page * page;
}

/* A frame the CPU draws: cached system memory, and a bracket around the
 * drawing so a device that reads it afterwards sees every pixel. */
static int draw_cpu_frame(BufferAllocator *allocator)
{
	size_t stride, len = frame_size(&stride);
	int fd = DmabufHeapAllocSystem2(allocator, true, len, 0);
	unsigned char *p;
	int r;

	if (fd < 0)
		return fail("AllocSystem", fd);
	p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	if (p == MAP_FAILED) {
		close(fd);
		return fail("mmap", -errno);
	}
	r = DmabufHeapCpuSyncStart2(allocator, (unsigned int)fd, kSyncWrite);
	for (unsigned int y = 0; r == 0 && y < HEIGHT; y++) {
		uint32_t *row = (uint32_t *)(p + y * stride);

		for (unsigned int x = 0; x < WIDTH; x++)
			row[x] = 0xff000000u | (x & 0xff) << 16 | (y & 0xff) << 8;
	}
	if (r == 0)
		r = DmabufHeapCpuSyncEnd2(allocator, (unsigned int)fd, kSyncWrite);
	munmap(p, len);
	close(fd);
	if (r < 0)
		return fail("CpuSync", r);
	printf("CPU frame: %zu bytes of system memory, stride %zu, drawn\n", len, stride);
	return 0;
}

/* A frame only the camera writes: its heap by name; where the machine has
 * no such heap (-ENOENT), uncached system memory as the fallback. */
static int camera_frame(BufferAllocator *allocator, const char *heap)
{
	size_t stride, len = frame_size(&stride);
	const char *from = heap;
	int fd = DmabufHeapAlloc2(allocator, heap, len, 0);

	if (fd == -ENOENT) {
		from = "system (no camera heap here)";
		fd = DmabufHeapAllocSystem2(allocator, false, len, 0);
	}
	if (fd < 0)
		return fail(heap, fd);
	printf("camera frame: %zu bytes from %s, fd %d for the camera HAL\n", len, from, fd);
	close(fd);
	return 0;
}

int main(int argc, char **argv)
{
	const char *camera_heap = argc > 1 ? argv[1] : "linux,cma";
	BufferAllocator *allocator = CreateDmabufHeapBufferAllocator();
	int r;

	if (!allocator)
		return fail("CreateDmabufHeapBufferAllocator", -ENOMEM);
	r = draw_cpu_frame(allocator);
	if (r == 0)
		r = camera_frame(allocator, camera_heap);
	FreeDmabufHeapBufferAllocator(allocator);
	return r;
}
