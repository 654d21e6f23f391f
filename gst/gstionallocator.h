/* SPDX-License-Identifier: MIT */
/*
 * GstIonAllocator: a GstDmaBufAllocator whose memory comes from a libion
 * solution (the heaps that suit a set of devices, best first).  Its
 * memories are GstDmaBufMemory, so that any downstream element importing
 * dma-bufs (kmssink, v4l2, GL, VA) takes them as it takes its own.
 */
#ifndef GST_ION_ALLOCATOR_H
#define GST_ION_ALLOCATOR_H

#include <gst/allocators/allocators.h>
#include <ion/libion.h>

G_BEGIN_DECLS

#define GST_TYPE_ION_ALLOCATOR (gst_ion_allocator_get_type())
G_DECLARE_FINAL_TYPE(GstIonAllocator, gst_ion_allocator, GST, ION_ALLOCATOR,
		     GstDmaBufAllocator)

/*
 * The name of the qdata every memory of this allocator carries: the name
 * of the heap that served it (a string), for elements and tests that want
 * to know where a buffer came from.
 */
#define GST_ION_MEMORY_HEAP_QUARK_NAME "GstIonMemoryHeap"

/* A new allocator of buffers of at most ion_solution_get_size(solution)
 * bytes; takes a reference on the solution. */
GstAllocator *gst_ion_allocator_new(struct ion_solution *solution);
/* The largest memory it can allocate. */
gsize gst_ion_allocator_get_max_size(GstIonAllocator *allocator);
/* The heap of memory allocated by any GstIonAllocator, or NULL. */
const char *gst_ion_memory_get_heap(GstMemory *memory);

G_END_DECLS

#endif
