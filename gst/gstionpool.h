/* SPDX-License-Identifier: MIT */
/*
 * ionpool: a passthrough element that answers the ALLOCATION query from
 * upstream with a GstIonBufferPool solved for the devices around it.
 */
#ifndef GST_ION_POOL_H
#define GST_ION_POOL_H

#include <gst/base/gstbasetransform.h>

G_BEGIN_DECLS

#define GST_TYPE_ION_POOL (gst_ion_pool_get_type())
G_DECLARE_FINAL_TYPE(GstIonPool, gst_ion_pool, GST, ION_POOL, GstBaseTransform)

G_END_DECLS

#endif
