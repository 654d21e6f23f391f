// SPDX-License-Identifier: MIT
/*
 * The header-only C++ BufferAllocator (<BufferAllocator/BufferAllocator.h>)
 * against its contract: each method answers as the C call it wraps, the
 * object's address and a C allocator are interchangeable, the heap list
 * names what Alloc() serves, the deprecated overloads and their callbacks
 * build and are never called.  Exit 0 or 1, with every failure printed.
 */
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <string>

#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <BufferAllocator/BufferAllocator.h>
#include <BufferAllocator/BufferAllocatorWrapper.h>

static int failures;

#define CHECK(cond)                                                             \
	do {                                                                    \
		if (!(cond)) {                                                  \
			std::fprintf(stderr, "%s:%d: failed: %s\n", __FILE__,   \
				     __LINE__, #cond);                          \
			failures++;                                             \
		}                                                               \
	} while (0)

static bool cloexec(int fd)
{
	int flags = fcntl(fd, F_GETFD);

	return flags >= 0 && (flags & FD_CLOEXEC);
}

static void test_methods(BufferAllocator &allocator)
{
	size_t len = static_cast<size_t>(sysconf(_SC_PAGESIZE));
	int fd = allocator.Alloc(kDmabufSystemHeapName, len);

	CHECK(fd >= 0 && cloexec(fd));
	CHECK(allocator.CpuSyncStart(fd) == 0);
	CHECK(allocator.CpuSyncStart(fd, kSyncWrite) == -EINVAL);
	CHECK(allocator.CpuSyncEnd(fd) == 0);
	CHECK(allocator.CpuSyncEnd(fd) == -EINVAL);
	bool called = false;
	BufferAllocator::CustomCpuSyncLegacyIon legacy = [&called](int, int, void *) {
		called = true;
		return 0;
	};
	CHECK(allocator.CpuSyncStart(fd, kSyncReadWrite, legacy) == 0);
	CHECK(allocator.CpuSyncEnd(fd, kSyncReadWrite, legacy, nullptr) == 0);
	CHECK(!called);
	CHECK(BufferAllocator::DmabufSetName(fd, "x") == 0 ||
	      BufferAllocator::DmabufSetName(fd, "x") == -ENOTTY);
	CHECK(BufferAllocator::DmabufSetName(~0u, "x") == -EBADF);
	if (fd >= 0)
		close(fd);

	CHECK(allocator.Alloc("no-such-heap", len) == -ENOENT);
	CHECK(allocator.Alloc(kDmabufSystemHeapName, 0) == -EINVAL);
	for (bool cpu : { false, true }) {
		fd = allocator.AllocSystem(cpu, 2 * len);
		CHECK(fd >= 0);
		if (fd >= 0)
			close(fd);
	}
	fd = allocator.Alloc(kDmabufSystemHeapName, len, 0, 4096); /* deprecated */
	CHECK(fd >= 0);
	if (fd >= 0)
		close(fd);
	fd = allocator.AllocSystem(true, len, 0, 4096); /* deprecated */
	CHECK(fd >= 0);
	if (fd >= 0)
		close(fd);
	CHECK(allocator.MapNameToIonHeap("system", "") == 0);
	CHECK(!BufferAllocator::CheckIonSupport());
}

/* Every name the list gives can be allocated from, "system" among them. */
static void test_heap_list(BufferAllocator &allocator)
{
	std::unordered_set<std::string> names = BufferAllocator::GetDmabufHeapList();

	CHECK(names.count(kDmabufSystemHeapName) == 1);
	for (const std::string &name : names) {
		int fd = allocator.Alloc(name, static_cast<size_t>(sysconf(_SC_PAGESIZE)));

		if (fd < 0)
			std::fprintf(stderr, "heap %s: %s\n", name.c_str(), std::strerror(-fd));
		CHECK(fd >= 0);
		if (fd >= 0)
			close(fd);
	}
}

/* The object's address goes to the C calls; a C allocator takes methods. */
static void test_c_and_cxx_mix(BufferAllocator &allocator)
{
	int fd = DmabufHeapAlloc2(&allocator, "system", 4096, 0);

	CHECK(fd >= 0);
	CHECK(DmabufHeapCpuSyncStart2(&allocator, fd, kSyncRead) == 0);
	CHECK(allocator.CpuSyncStart(fd) == -EINVAL); /* the same bracket */
	CHECK(allocator.CpuSyncEnd(fd, kSyncRead) == 0);
	if (fd >= 0)
		close(fd);

	BufferAllocator *c_allocator = CreateDmabufHeapBufferAllocator();
	CHECK(c_allocator != nullptr);
	fd = c_allocator->Alloc("system", 4096);
	CHECK(fd >= 0);
	if (fd >= 0)
		close(fd);
	FreeDmabufHeapBufferAllocator(c_allocator);
}

int main()
{
	{
		BufferAllocator allocator;

		test_methods(allocator);
		test_heap_list(allocator);
		test_c_and_cxx_mix(allocator);
	}
	/* Function-local statics, as Gralloc implementations keep theirs. */
	static BufferAllocator shared;
	int fd = shared.AllocSystem(true, 4096);
	CHECK(fd >= 0);
	if (fd >= 0)
		close(fd);
	std::printf("%s\n", failures ? "FAIL" : "ok");
	return failures ? 1 : 0;
}
