/* SPDX-License-Identifier: MIT */
/*
 * Android's libdmabufheap C API (<BufferAllocator/BufferAllocatorWrapper.h>),
 * implemented by libion-dmabufheap on every allocator libion knows:
 * DMA-BUF heaps, ION, GEM, udmabuf and memfd.  Names, signatures and
 * return conventions are Android's; where libion answers differently the
 * README's table "Android's BufferAllocator, precisely" says so and why.
 *
 * Build:  cc app.c $(pkg-config --cflags --libs libion-dmabufheap)
 *
 * Rules every call keeps: a NULL allocator is -EINVAL; failures are a
 * negative errno (Android answers some with -1); every fd returned is
 * O_CLOEXEC and the caller's to close; one allocator may be used from any
 * number of threads at once.  Compiles as C89 to C2x and C++11 to C++23.
 */
#ifndef LIBION_DMABUFHEAP_WRAPPER_H
#define LIBION_DMABUFHEAP_WRAPPER_H

#include <stddef.h>
#include <sys/types.h>

#include <BufferAllocator/dmabufheap-defs.h>

/* Android's prototypes take bool.  C89 has none: unsigned char is passed
 * as _Bool is for the values 0 and 1 on every ABI libion builds for. */
#if defined(__cplusplus)
#define LIBION_DMABUFHEAP_BOOL bool
#elif defined(__STDC_VERSION__) && __STDC_VERSION__ >= 199901L
#include <stdbool.h>
#define LIBION_DMABUFHEAP_BOOL bool
#else
#define LIBION_DMABUFHEAP_BOOL unsigned char
#endif

#ifdef __cplusplus
/* In C++ the allocator is the class of <BufferAllocator/BufferAllocator.h>;
 * a pointer from CreateDmabufHeapBufferAllocator() and the address of such
 * an object are both accepted by every call below. */
class BufferAllocator;
extern "C" {
#else
typedef struct BufferAllocator BufferAllocator;
#endif

/*
 * CreateDmabufHeapBufferAllocator: a new allocator, with its own libion
 * context (heaps are discovered on first use).  NULL when memory runs out
 * (Android's would abort).  Free it with FreeDmabufHeapBufferAllocator().
 */
BufferAllocator *CreateDmabufHeapBufferAllocator(void);

/* FreeDmabufHeapBufferAllocator: frees it; NULL is ignored.  Buffers it
 * allocated stay valid: they are plain fds the caller owns. */
void FreeDmabufHeapBufferAllocator(BufferAllocator *buffer_allocator);

/*
 * DmabufHeapAlloc2: len bytes from the heap called heap_name, as a new
 * dma-buf fd (a memfd on the memfd heap), zeroed, named after the heap
 * (DMA_BUF_SET_NAME; a failure to name is ignored, as Android does).
 * heap_name is a DMA-BUF heap's name or any name libion resolves (heaps.d
 * aliases; "cma" and the CMA heap's other names; "system" reaches the
 * best scattered heap there is when the kernel has no "system" heap).
 * heap_flags is ignored, as Android ignores it.
 *
 * Returns the fd, or -EINVAL (NULL allocator or name, len 0), -ENOENT (no
 * heap by that name: Android answers -1), the heap's own error when it
 * is unavailable (-EACCES ...), -ENOMEM, or what the kernel answers.
 */
int DmabufHeapAlloc2(BufferAllocator *buffer_allocator, const char *heap_name,
		     size_t len, unsigned int heap_flags);

/*
 * DmabufHeapAllocSystem2: len bytes of ordinary system memory: from
 * "system-uncached" when cpu_access is false and such a heap exists, else
 * as DmabufHeapAlloc2(buffer_allocator, "system", len, heap_flags).
 * Returns as DmabufHeapAlloc2().
 */
int DmabufHeapAllocSystem2(BufferAllocator *buffer_allocator,
			   LIBION_DMABUFHEAP_BOOL cpu_access, size_t len,
			   unsigned int heap_flags);

/*
 * DmabufHeapCpuSyncStart2: opens a CPU-access bracket on dmabuf_fd before
 * the CPU reads (kSyncRead), writes (kSyncWrite) or both a mapping of it
 * (DMA_BUF_IOCTL_SYNC START; nothing, successfully, on a memfd buffer).
 * One bracket per fd and allocator: a second start before the end is
 * -EINVAL.  Returns 0, -EINVAL (NULL allocator, a sync_type outside the
 * enum, a bracket already open), -EBADF, -ENOTTY (no buffer fd), or what
 * the kernel answers.
 */
int DmabufHeapCpuSyncStart2(BufferAllocator *buffer_allocator, unsigned int dmabuf_fd,
			    SyncType sync_type);

/*
 * DmabufHeapCpuSyncEnd2: closes the bracket DmabufHeapCpuSyncStart2()
 * opened, after the CPU is done (DMA_BUF_IOCTL_SYNC END with sync_type).
 * Returns 0, -EINVAL (NULL allocator, a bad sync_type, no bracket open on
 * this fd from this allocator), or as the start.  The bracket is closed
 * whatever the kernel answers.
 */
int DmabufHeapCpuSyncEnd2(BufferAllocator *buffer_allocator, unsigned int dmabuf_fd,
			  SyncType sync_type);

/*
 * DmabufSetName: names a dma-buf, as /proc/PID/fdinfo ("name:") shows it;
 * names of 32 bytes or more are cut to 31, as Android does.  Returns 0,
 * or -EINVAL (NULL allocator or name), -EBADF, -ENOTTY (a memfd buffer,
 * whose name is fixed, or no dma-buf).  Android answers -1 with errno set;
 * libion also sets errno.
 */
int DmabufSetName(BufferAllocator *buffer_allocator, unsigned int dmabuf_fd,
		  const char *name);

/* ---- Deprecated: kept because Android keeps them, for old sources ---- */

/* DmabufHeapAlloc: DmabufHeapAlloc2(); legacy_align (ION's) is ignored. */
int DmabufHeapAlloc(BufferAllocator *buffer_allocator, const char *heap_name,
		    size_t len, unsigned int heap_flags, size_t legacy_align);

/* DmabufHeapAllocSystem: DmabufHeapAllocSystem2(); legacy_align ignored. */
int DmabufHeapAllocSystem(BufferAllocator *buffer_allocator,
			  LIBION_DMABUFHEAP_BOOL cpu_access, size_t len,
			  unsigned int heap_flags, size_t legacy_align);

/* MapDmabufHeapNameToIonHeap: does nothing and returns 0 (-EINVAL for a
 * NULL allocator), as Android now does: libion maps names itself. */
int MapDmabufHeapNameToIonHeap(BufferAllocator *buffer_allocator, const char *heap_name,
			       const char *ion_heap_name, unsigned int ion_heap_flags,
			       unsigned int legacy_ion_heap_mask,
			       unsigned int legacy_ion_heap_flags);

/* DmabufHeapCpuSyncStart, DmabufHeapCpuSyncEnd: the "2" calls; the legacy
 * ION callback and its data are never called, as Android now does. */
int DmabufHeapCpuSyncStart(BufferAllocator *buffer_allocator, unsigned int dmabuf_fd,
			   SyncType sync_type, int (*legacy_ion_cpu_sync)(int, int, void *),
			   void *legacy_ion_custom_data);
int DmabufHeapCpuSyncEnd(BufferAllocator *buffer_allocator, unsigned int dmabuf_fd,
			 SyncType sync_type, int (*legacy_ion_cpu_sync)(int, int, void *),
			 void *legacy_ion_custom_data);

/* CheckIonSupport: false, as Android now answers: nothing needs the ION
 * calls above (libion reaches ION heaps by name like any other). */
LIBION_DMABUFHEAP_BOOL CheckIonSupport(void);

#ifdef __cplusplus
}
#endif

#endif
