/* SPDX-License-Identifier: MIT */
/*
 * The devices of the elements around ionpool: upstream's and downstream's
 * nearest element that names one (v4l2src's "device", kmssink's "fd" or
 * "driver-name"), through elements that name none (capsfilter, queue)
 * and into and out of bins (autovideosink, a bin of the application).
 */
#ifndef GST_ION_NEIGHBOURS_H
#define GST_ION_NEIGHBOURS_H

#include "gstionsolve.h"

G_BEGIN_DECLS

/* Adds the device found through pad's peer, if any, to request; logs
 * on log_object what it found.  Returns whether it added one. */
gboolean gst_ion_neighbours_add(GstIonRequest *request, GstPad *pad, GstObject *log_object);

G_END_DECLS

#endif
