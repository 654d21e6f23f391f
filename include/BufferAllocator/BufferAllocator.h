/* SPDX-License-Identifier: MIT */
/*
 * Android's libdmabufheap C++ API (<BufferAllocator/BufferAllocator.h>):
 * the BufferAllocator class with the public methods of Android's, here a
 * header-only layer over the C API of <BufferAllocator/BufferAllocatorWrapper.h>
 * (libion-dmabufheap), so the C library stays C.  Compiles as C++11 to
 * C++23.  Build:  c++ app.cpp $(pkg-config --cflags --libs libion-dmabufheap)
 *
 * Every method answers as the C call it names (see that header): an fd or
 * 0 on success, a negative errno on failure.  One object may be used from
 * any number of threads at once.
 */
#ifndef LIBION_DMABUFHEAP_BUFFER_ALLOCATOR_H
#define LIBION_DMABUFHEAP_BUFFER_ALLOCATOR_H

#ifndef __cplusplus
#error "<BufferAllocator/BufferAllocator.h> is C++; C programs include <BufferAllocator/BufferAllocatorWrapper.h>"
#endif

#include <sys/types.h>

#include <cerrno>
#include <cstddef>
#include <functional>
#include <string>
#include <unordered_set>

#include <BufferAllocator/BufferAllocatorWrapper.h>
#include <BufferAllocator/dmabufheap-defs.h>
#include <ion/libion.h>

class BufferAllocator {
  public:
	/* The C allocator is made here; should memory run out, every method
	 * answers -EINVAL (Android's constructor would abort instead). */
	BufferAllocator() : handle_(CreateDmabufHeapBufferAllocator()) {}
	~BufferAllocator() { FreeDmabufHeapBufferAllocator(handle()); }

	/* Not copyable or movable, as Android's. */
	BufferAllocator(const BufferAllocator &) = delete;
	BufferAllocator &operator=(const BufferAllocator &) = delete;

	/* A dma-buf fd of len bytes from the heap called heap_name:
	 * DmabufHeapAlloc2().  heap_flags is ignored, as Android does. */
	int Alloc(const std::string &heap_name, size_t len, unsigned int heap_flags = 0)
	{
		return DmabufHeapAlloc2(this, heap_name.c_str(), len, heap_flags);
	}
	/* Deprecated: legacy_align was ION's and is ignored. */
	int Alloc(const std::string &heap_name, size_t len, unsigned int heap_flags,
		  size_t legacy_align)
	{
		return DmabufHeapAlloc(this, heap_name.c_str(), len, heap_flags, legacy_align);
	}

	/* System memory, uncached where the CPU will not touch it and such a
	 * heap exists: DmabufHeapAllocSystem2(). */
	int AllocSystem(bool cpu_access, size_t len, unsigned int heap_flags = 0)
	{
		return DmabufHeapAllocSystem2(this, cpu_access, len, heap_flags);
	}
	/* Deprecated: legacy_align is ignored. */
	int AllocSystem(bool cpu_access, size_t len, unsigned int heap_flags, size_t legacy_align)
	{
		return DmabufHeapAllocSystem(this, cpu_access, len, heap_flags, legacy_align);
	}

	/* Deprecated, as Android's: the callback of the legacy-ION sync.  It
	 * is never called: libion syncs every buffer itself. */
	typedef std::function<int(int, int, void *)> CustomCpuSyncLegacyIon;

	/* Opens a CPU-access bracket: DmabufHeapCpuSyncStart2(). */
	int CpuSyncStart(unsigned int dmabuf_fd, SyncType sync_type = kSyncRead)
	{
		return DmabufHeapCpuSyncStart2(this, dmabuf_fd, sync_type);
	}
	/* Deprecated: the callback and its data are ignored. */
	int CpuSyncStart(unsigned int dmabuf_fd, SyncType sync_type,
			 const CustomCpuSyncLegacyIon &legacy_ion_cpu_sync,
			 void *legacy_ion_custom_data = nullptr)
	{
		(void)legacy_ion_cpu_sync;
		(void)legacy_ion_custom_data;
		return CpuSyncStart(dmabuf_fd, sync_type);
	}

	/* Closes it: DmabufHeapCpuSyncEnd2(). */
	int CpuSyncEnd(unsigned int dmabuf_fd, SyncType sync_type = kSyncRead)
	{
		return DmabufHeapCpuSyncEnd2(this, dmabuf_fd, sync_type);
	}
	/* Deprecated: the callback and its data are ignored. */
	int CpuSyncEnd(unsigned int dmabuf_fd, SyncType sync_type,
		       const CustomCpuSyncLegacyIon &legacy_ion_cpu_sync,
		       void *legacy_ion_custom_data = nullptr)
	{
		(void)legacy_ion_cpu_sync;
		(void)legacy_ion_custom_data;
		return CpuSyncEnd(dmabuf_fd, sync_type);
	}

	/*
	 * The names Alloc() can allocate from now: every available heap libion
	 * found (not only /dev/dma_heap's, as Android lists), and "system"
	 * where the kernel has no heap of that name but Alloc("system") is
	 * served all the same.  Empty when discovery fails.  Each call makes a
	 * libion context of its own, as Android's reads the folder each time.
	 */
	static std::unordered_set<std::string> GetDmabufHeapList()
	{
		std::unordered_set<std::string> names;
		struct ion_ctx *ctx = nullptr;

		if (ion_ctx_new(nullptr, &ctx) < 0)
			return names;
		int count = ion_ctx_get_heap_count(ctx);
		for (int i = 0; i < count; i++) {
			const struct ion_heap *heap = nullptr;

			if (ion_ctx_get_heap(ctx, static_cast<unsigned int>(i), &heap) == 0 &&
			    ion_heap_get_error(heap) == 0)
				names.insert(ion_heap_get_name(heap));
		}
		if (!names.count(kDmabufSystemHeapName) && HasSystemFallback(ctx))
			names.insert(kDmabufSystemHeapName);
		ion_ctx_unref(ctx);
		return names;
	}

	/* Names a dma-buf: DmabufSetName() without an allocator. */
	static int DmabufSetName(unsigned int dmabuf_fd, const std::string &name)
	{
		if (dmabuf_fd > static_cast<unsigned int>(~0U >> 1))
			return -EBADF;
		return ion_fd_set_name(static_cast<int>(dmabuf_fd), name.c_str());
	}

	/* Deprecated: does nothing and returns 0, as Android now does. */
	int MapNameToIonHeap(const std::string &heap_name, const std::string &ion_heap_name,
			     unsigned int ion_heap_flags = 0, unsigned int legacy_ion_heap_mask = 0,
			     unsigned int legacy_ion_heap_flags = 0)
	{
		return MapDmabufHeapNameToIonHeap(this, heap_name.c_str(), ion_heap_name.c_str(),
						  ion_heap_flags, legacy_ion_heap_mask,
						  legacy_ion_heap_flags);
	}

	/* Deprecated: false, as Android now answers. */
	static bool CheckIonSupport() { return false; }

  private:
	/* The C allocator.  It must stay the first and only member: the C
	 * calls take this object's address and read this pointer from it. */
	void *handle_;

	BufferAllocator *handle() { return static_cast<BufferAllocator *>(handle_); }

	/* A heap answers ION_HEAP_SYSTEM_MASK (id 0): Alloc("system") works. */
	static bool HasSystemFallback(struct ion_ctx *ctx)
	{
		int count = ion_ctx_get_heap_count(ctx);

		for (int i = 0; i < count; i++) {
			const struct ion_heap *heap = nullptr;

			if (ion_ctx_get_heap(ctx, static_cast<unsigned int>(i), &heap) == 0 &&
			    ion_heap_get_error(heap) == 0 && ion_heap_get_id(heap) == 0)
				return true;
		}
		return false;
	}
};

#endif
