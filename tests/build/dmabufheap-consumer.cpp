// SPDX-License-Identifier: MIT
// A program written for Android's libdmabufheap C++ API, built out of
// tree against the installed libion-dmabufheap with pkg-config alone
// (tests/check-dmabufheap-install.sh), then run.
#include <cstdio>
#include <string>

#include <unistd.h>

#include <BufferAllocator/BufferAllocator.h>

int main()
{
	BufferAllocator allocator;
	auto heaps = BufferAllocator::GetDmabufHeapList();

	if (heaps.find(kDmabufSystemHeapName) == heaps.end())
		return 1;
	int fd = allocator.Alloc(kDmabufSystemHeapName, 8192);
	if (fd < 0 || allocator.CpuSyncStart(fd, kSyncRead) != 0 ||
	    allocator.CpuSyncEnd(fd, kSyncRead) != 0)
		return 1;
	close(fd);
	fd = allocator.AllocSystem(false, 8192);
	if (fd < 0)
		return 1;
	close(fd);
	std::printf("dmabufheap C++ consumer: ok (%zu heaps)\n", heaps.size());
	return 0;
}
