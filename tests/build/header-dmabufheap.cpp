// SPDX-License-Identifier: MIT
// Built as C++11 to C++23 with -pedantic -Werror: both Android headers
// stand alone, together, and take the calls Android code makes.
#include <BufferAllocator/BufferAllocator.h>
#include <BufferAllocator/BufferAllocatorWrapper.h>

int header_dmabufheap_cxx_uses();
int header_dmabufheap_cxx_uses()
{
	static BufferAllocator allocator;
	int fd = allocator.Alloc(kDmabufSystemHeapName, 4096);

	fd += allocator.Alloc("system", 4096, 0, 0) + allocator.AllocSystem(false, 4096);
	fd += allocator.AllocSystem(true, 4096, 0, 0);
	fd += allocator.CpuSyncStart(0) + allocator.CpuSyncEnd(0, kSyncReadWrite);
	fd += allocator.CpuSyncStart(0, kSyncWrite, [](int, int, void *) { return 0; });
	fd += allocator.CpuSyncEnd(0, kSyncWrite, nullptr, nullptr);
	fd += BufferAllocator::DmabufSetName(0, "name");
	fd += allocator.MapNameToIonHeap("system", "", 0, ~0u, 0);
	fd += static_cast<int>(BufferAllocator::GetDmabufHeapList().size());
	fd += BufferAllocator::CheckIonSupport() ? 1 : 0;
	fd += DmabufHeapAlloc2(&allocator, "system", 4096, 0);
	return fd;
}
