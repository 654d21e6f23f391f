/* SPDX-License-Identifier: MIT */
/*
 * What the plugin asks of libion: the solution for a set of devices and a
 * size, or for a heap the user forced, with the solver's reasons logged.
 */
#ifndef GST_ION_SOLVE_H
#define GST_ION_SOLVE_H

#include <gst/gst.h>
#include <ion/libion.h>

G_BEGIN_DECLS

/* A request: devices (struct ion_device references) and an optional
 * heap that overrides the solver's choice. */
typedef struct {
	struct ion_ctx *ctx;
	GPtrArray *devices;
	char *heap;
} GstIonRequest;

GstIonRequest *gst_ion_request_new(struct ion_ctx *ctx, const char *heap);
GstIonRequest *gst_ion_request_copy(const GstIonRequest *request);
void gst_ion_request_free(GstIonRequest *request);
/* Adds the device spec names ("video0", "/dev/dri/card1"); -ENODEV etc. */
int gst_ion_request_add_device(GstIonRequest *request, const char *spec);
/* "video0,card1" (g_free it). */
char *gst_ion_request_describe(const GstIonRequest *request);
/*
 * The solution for size bytes.  A forced heap is taken as it is, with the
 * solver's reasons against it for the devices logged as a warning; else a
 * solution with no heap is -ENODEV, every rejection logged as an error.
 */
int gst_ion_request_solve(const GstIonRequest *request, gsize size, GstObject *log_object,
			  struct ion_solution **ret_solution);

G_END_DECLS

#endif
