// SPDX-License-Identifier: MIT
/*
 * GstIonAllocator: each alloc() is one ion_solution_alloc(), the fd
 * wrapped by the dma-buf allocator it derives from (which owns and closes
 * it).  The solution is immutable, so allocations need no lock.
 */
#include <unistd.h>

#include "gstionallocator.h"

GST_DEBUG_CATEGORY_STATIC(gst_ion_allocator_debug);
#define GST_CAT_DEFAULT gst_ion_allocator_debug

struct _GstIonAllocator {
	GstDmaBufAllocator parent;
	struct ion_solution *solution;
};

G_DEFINE_TYPE_WITH_CODE(GstIonAllocator, gst_ion_allocator, GST_TYPE_DMABUF_ALLOCATOR,
	GST_DEBUG_CATEGORY_INIT(gst_ion_allocator_debug, "ionallocator", 0,
				"dma-buf memory from libion"))

static GQuark gst_ion_memory_heap_quark(void)
{
	return g_quark_from_static_string(GST_ION_MEMORY_HEAP_QUARK_NAME);
}

static GstMemory *gst_ion_allocator_alloc(GstAllocator *base, gsize size,
					  GstAllocationParams *params)
{
	GstIonAllocator *self = GST_ION_ALLOCATOR(base);
	gsize total = size + params->prefix + params->padding;
	const struct ion_heap *heap = NULL;
	GstMemory *memory;
	int fd, ret;

	if (total < size || total > ion_solution_get_size(self->solution)) {
		GST_ERROR_OBJECT(self, "%" G_GSIZE_FORMAT " bytes asked, the solution serves %zu",
				 total, ion_solution_get_size(self->solution));
		return NULL;
	}
	ret = ion_solution_alloc(self->solution, &fd, &heap);
	if (ret < 0) {
		GST_ERROR_OBJECT(self, "ion_solution_alloc: %s", g_strerror(-ret));
		return NULL;
	}
	memory = gst_dmabuf_allocator_alloc(base, fd, total);
	if (!memory) {
		close(fd);
		return NULL;
	}
	if (params->prefix || params->padding)
		gst_memory_resize(memory, params->prefix, size);
	gst_mini_object_set_qdata(GST_MINI_OBJECT(memory), gst_ion_memory_heap_quark(),
				  g_strdup(ion_heap_get_name(heap)), g_free);
	GST_LOG_OBJECT(self, "%" G_GSIZE_FORMAT " bytes from %s: fd %d", total,
		       ion_heap_get_name(heap), fd);
	return memory;
}

static void gst_ion_allocator_finalize(GObject *object)
{
	GstIonAllocator *self = GST_ION_ALLOCATOR(object);

	ion_solution_unref(self->solution);
	G_OBJECT_CLASS(gst_ion_allocator_parent_class)->finalize(object);
}

static void gst_ion_allocator_class_init(GstIonAllocatorClass *klass)
{
	G_OBJECT_CLASS(klass)->finalize = gst_ion_allocator_finalize;
	GST_ALLOCATOR_CLASS(klass)->alloc = gst_ion_allocator_alloc;
}

static void gst_ion_allocator_init(GstIonAllocator *self)
{
	/* The dma-buf allocator's init named the memory type "dmabuf":
	 * gst_is_dmabuf_memory() holds for ours. */
	GST_OBJECT_FLAG_UNSET(self, GST_ALLOCATOR_FLAG_CUSTOM_ALLOC);
}

GstAllocator *gst_ion_allocator_new(struct ion_solution *solution)
{
	GstIonAllocator *self = g_object_new(GST_TYPE_ION_ALLOCATOR, NULL);

	gst_object_ref_sink(self);
	self->solution = ion_solution_ref(solution);
	return GST_ALLOCATOR(self);
}

gsize gst_ion_allocator_get_max_size(GstIonAllocator *allocator)
{
	return ion_solution_get_size(allocator->solution);
}

const char *gst_ion_memory_get_heap(GstMemory *memory)
{
	return gst_mini_object_get_qdata(GST_MINI_OBJECT(memory), gst_ion_memory_heap_quark());
}
