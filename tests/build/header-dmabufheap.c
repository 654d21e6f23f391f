/* SPDX-License-Identifier: MIT */
/* Built as C89, C99, C11, C17 and C2x with -pedantic -Werror: the Android
 * wrapper header stands alone, and each call has the type a program that
 * was written for Android's expects of it. */
#include <BufferAllocator/BufferAllocatorWrapper.h>

int header_dmabufheap_uses(void);
int header_dmabufheap_uses(void)
{
	BufferAllocator *(*create)(void) = CreateDmabufHeapBufferAllocator;
	void (*free_allocator)(BufferAllocator *) = FreeDmabufHeapBufferAllocator;
	int (*alloc2)(BufferAllocator *, const char *, size_t, unsigned int) = DmabufHeapAlloc2;
	int (*alloc)(BufferAllocator *, const char *, size_t, unsigned int, size_t) =
		DmabufHeapAlloc;
	int (*start2)(BufferAllocator *, unsigned int, SyncType) = DmabufHeapCpuSyncStart2;
	int (*end2)(BufferAllocator *, unsigned int, SyncType) = DmabufHeapCpuSyncEnd2;
	int (*start)(BufferAllocator *, unsigned int, SyncType, int (*)(int, int, void *),
		     void *) = DmabufHeapCpuSyncStart;
	int (*end)(BufferAllocator *, unsigned int, SyncType, int (*)(int, int, void *),
		   void *) = DmabufHeapCpuSyncEnd;
	int (*set_name)(BufferAllocator *, unsigned int, const char *) = DmabufSetName;
	int (*map)(BufferAllocator *, const char *, const char *, unsigned int, unsigned int,
		   unsigned int) = MapDmabufHeapNameToIonHeap;
	BufferAllocator *a = create();
	int fd = DmabufHeapAllocSystem2(a, 1, 4096, 0) + DmabufHeapAllocSystem(a, 0, 4096, 0, 0);
	SyncType type = kSyncReadWrite;

	fd += alloc2(a, kDmabufSystemHeapName, 4096, 0) + alloc(a, "system", 1, 0, 0);
	fd += start2(a, 0, type) + end2(a, 0, kSyncRead) + start(a, 0, kSyncWrite, 0, 0);
	fd += end(a, 0, type, 0, 0) + set_name(a, 0, kDmabufSystemUncachedHeapName);
	fd += map(a, "", "", 0, 0, 0) + (CheckIonSupport() ? 1 : 0);
	free_allocator(a);
	return fd;
}
