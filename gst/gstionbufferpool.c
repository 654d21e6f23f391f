// SPDX-License-Identifier: MIT
/*
 * GstIonBufferPool: set_config() solves for the larger of the configured
 * size and the caps' frame size, and puts its GstIonAllocator into the
 * configuration, whatever allocator the configuration named: a pool whose
 * buffers came from another allocator would defeat the point.  The video
 * pool it derives from does the rest (video meta, alignment, allocation
 * through the configured allocator).
 */
#include "gstionallocator.h"
#include "gstionbufferpool.h"

GST_DEBUG_CATEGORY_STATIC(gst_ion_buffer_pool_debug);
#define GST_CAT_DEFAULT gst_ion_buffer_pool_debug

struct _GstIonBufferPool {
	GstVideoBufferPool parent;
	GstIonRequest *request;
	GstObject *log_object;
	GstAllocator *allocator; /* under the object lock */
	char *heap;
};

G_DEFINE_TYPE_WITH_CODE(GstIonBufferPool, gst_ion_buffer_pool, GST_TYPE_VIDEO_BUFFER_POOL,
	GST_DEBUG_CATEGORY_INIT(gst_ion_buffer_pool_debug, "ionbufferpool", 0,
				"video buffer pool on libion"))

/* An allocator for size bytes: the current one if it is large enough. */
static GstAllocator *gst_ion_buffer_pool_allocator_for(GstIonBufferPool *self, gsize size)
{
	struct ion_solution *solution;
	GstAllocator *allocator;
	int ret;

	GST_OBJECT_LOCK(self);
	allocator = self->allocator ? gst_object_ref(self->allocator) : NULL;
	GST_OBJECT_UNLOCK(self);
	if (allocator && gst_ion_allocator_get_max_size(GST_ION_ALLOCATOR(allocator)) >= size)
		return allocator;
	g_clear_pointer(&allocator, gst_object_unref);

	ret = gst_ion_request_solve(self->request, size, self->log_object, &solution);
	if (ret < 0)
		return NULL;
	allocator = gst_ion_allocator_new(solution);
	GST_OBJECT_LOCK(self);
	gst_object_replace((GstObject **)&self->allocator, GST_OBJECT(allocator));
	g_free(self->heap);
	self->heap = g_strdup(ion_heap_get_name(ion_solution_get_heap(solution, 0)));
	GST_OBJECT_UNLOCK(self);
	ion_solution_unref(solution);
	return allocator;
}

static gboolean gst_ion_buffer_pool_set_config(GstBufferPool *pool, GstStructure *config)
{
	GstIonBufferPool *self = GST_ION_BUFFER_POOL(pool);
	GstAllocationParams params;
	GstAllocator *allocator;
	guint size, min, max;
	GstVideoInfo info;
	GstCaps *caps;
	gboolean ok;

	if (!gst_buffer_pool_config_get_params(config, &caps, &size, &min, &max) || !caps ||
	    !gst_video_info_from_caps(&info, caps)) {
		GST_WARNING_OBJECT(pool, "no video caps in the configuration");
		return FALSE;
	}
	/* The video pool pads frames to the alignment asked: solve for that. */
	if (gst_buffer_pool_config_has_option(config, GST_BUFFER_POOL_OPTION_VIDEO_ALIGNMENT)) {
		GstVideoAlignment align;

		if (gst_buffer_pool_config_get_video_alignment(config, &align))
			gst_video_info_align(&info, &align);
	}
	if (info.size > size)
		size = info.size;
	/* A dma-buf starts at the frame: no prefix, no padding. */
	gst_allocation_params_init(&params);
	gst_buffer_pool_config_get_allocator(config, NULL, &params);
	params.prefix = 0;
	params.padding = 0;
	allocator = gst_ion_buffer_pool_allocator_for(self, size);
	if (!allocator)
		return FALSE;
	gst_buffer_pool_config_set_params(config, caps, size, min, max);
	gst_buffer_pool_config_set_allocator(config, allocator, &params);
	gst_object_unref(allocator);
	ok = GST_BUFFER_POOL_CLASS(gst_ion_buffer_pool_parent_class)->set_config(pool, config);
	GST_DEBUG_OBJECT(pool, "configured for %" GST_PTR_FORMAT ", %u bytes, %u-%u buffers: %d",
			 caps, size, min, max, ok);
	return ok;
}

static void gst_ion_buffer_pool_finalize(GObject *object)
{
	GstIonBufferPool *self = GST_ION_BUFFER_POOL(object);

	gst_ion_request_free(self->request);
	g_clear_pointer(&self->log_object, gst_object_unref);
	g_clear_pointer(&self->allocator, gst_object_unref);
	g_free(self->heap);
	G_OBJECT_CLASS(gst_ion_buffer_pool_parent_class)->finalize(object);
}

static void gst_ion_buffer_pool_class_init(GstIonBufferPoolClass *klass)
{
	G_OBJECT_CLASS(klass)->finalize = gst_ion_buffer_pool_finalize;
	GST_BUFFER_POOL_CLASS(klass)->set_config = gst_ion_buffer_pool_set_config;
}

static void gst_ion_buffer_pool_init(GstIonBufferPool *self)
{
}

GstBufferPool *gst_ion_buffer_pool_new(const GstIonRequest *request, GstObject *log_object)
{
	GstIonBufferPool *self = g_object_new(GST_TYPE_ION_BUFFER_POOL, NULL);

	gst_object_ref_sink(self);
	self->request = gst_ion_request_copy(request);
	self->log_object = log_object ? gst_object_ref(log_object) : NULL;
	return GST_BUFFER_POOL(self);
}

GstAllocator *gst_ion_buffer_pool_get_allocator(GstIonBufferPool *pool)
{
	GstAllocator *allocator;

	GST_OBJECT_LOCK(pool);
	allocator = pool->allocator ? gst_object_ref(pool->allocator) : NULL;
	GST_OBJECT_UNLOCK(pool);
	return allocator;
}

char *gst_ion_buffer_pool_get_heap(GstIonBufferPool *pool)
{
	char *heap;

	GST_OBJECT_LOCK(pool);
	heap = g_strdup(pool->heap);
	GST_OBJECT_UNLOCK(pool);
	return heap;
}
