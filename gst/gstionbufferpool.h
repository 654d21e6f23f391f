/* SPDX-License-Identifier: MIT */
/*
 * GstIonBufferPool: a video buffer pool (GstVideoMeta on request, sizes
 * from the caps' GstVideoInfo) whose memory comes from a GstIonAllocator
 * solved for the pool's request and the configured size.
 */
#ifndef GST_ION_BUFFER_POOL_H
#define GST_ION_BUFFER_POOL_H

#include <gst/video/video.h>

#include "gstionsolve.h"

G_BEGIN_DECLS

#define GST_TYPE_ION_BUFFER_POOL (gst_ion_buffer_pool_get_type())
G_DECLARE_FINAL_TYPE(GstIonBufferPool, gst_ion_buffer_pool, GST, ION_BUFFER_POOL,
		     GstVideoBufferPool)

/* A pool for request (copied); log_object (may be NULL) names its logs. */
GstBufferPool *gst_ion_buffer_pool_new(const GstIonRequest *request, GstObject *log_object);
/* The allocator of the last successful configuration, or NULL (a reference). */
GstAllocator *gst_ion_buffer_pool_get_allocator(GstIonBufferPool *pool);
/* The heap the solver put first for it, or NULL (g_free it). */
char *gst_ion_buffer_pool_get_heap(GstIonBufferPool *pool);

G_END_DECLS

#endif
