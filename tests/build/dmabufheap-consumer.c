/* SPDX-License-Identifier: MIT */
/* A program written for Android's libdmabufheap C API, built out of tree
 * against the installed libion-dmabufheap with pkg-config alone
 * (tests/check-dmabufheap-install.sh), then run. */
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include <BufferAllocator/BufferAllocatorWrapper.h>

int main(void)
{
	BufferAllocator *allocator = CreateDmabufHeapBufferAllocator();
	size_t len = 4096;
	unsigned char *p;
	int fd;

	if (!allocator)
		return 1;
	fd = DmabufHeapAllocSystem2(allocator, true, len, 0);
	if (fd < 0 || DmabufHeapAlloc2(allocator, "no-such-heap", len, 0) >= 0)
		return 1;
	p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	if (p == MAP_FAILED || DmabufHeapCpuSyncStart2(allocator, fd, kSyncWrite) != 0)
		return 1;
	memset(p, 0x5a, len);
	if (DmabufHeapCpuSyncEnd2(allocator, fd, kSyncWrite) != 0)
		return 1;
	munmap(p, len);
	close(fd);
	FreeDmabufHeapBufferAllocator(allocator);
	puts("dmabufheap C consumer: ok");
	return 0;
}
