// SPDX-License-Identifier: MIT
/*
 * The plugin's one way to libion's solver (see gstionsolve.h).
 */
#include <errno.h>

#include "gstionsolve.h"

GST_DEBUG_CATEGORY_STATIC(gst_ion_solve_debug);
#define GST_CAT_DEFAULT gst_ion_solve_debug

static void gst_ion_debug_init(void)
{
	static gsize once;

	if (g_once_init_enter(&once)) {
		GST_DEBUG_CATEGORY_INIT(gst_ion_solve_debug, "ionsolve", 0,
					"libion's solver for the GStreamer plugin");
		g_once_init_leave(&once, 1);
	}
}

static void gst_ion_device_free(gpointer device)
{
	ion_device_unref(device);
}

GstIonRequest *gst_ion_request_new(struct ion_ctx *ctx, const char *heap)
{
	GstIonRequest *request = g_new0(GstIonRequest, 1);

	gst_ion_debug_init();
	request->ctx = ion_ctx_ref(ctx);
	request->devices = g_ptr_array_new_with_free_func(gst_ion_device_free);
	request->heap = g_strdup(heap);
	return request;
}

GstIonRequest *gst_ion_request_copy(const GstIonRequest *request)
{
	GstIonRequest *copy = gst_ion_request_new(request->ctx, request->heap);

	for (guint i = 0; i < request->devices->len; i++)
		g_ptr_array_add(copy->devices, ion_device_ref(request->devices->pdata[i]));
	return copy;
}

void gst_ion_request_free(GstIonRequest *request)
{
	if (!request)
		return;
	g_ptr_array_unref(request->devices);
	ion_ctx_unref(request->ctx);
	g_free(request->heap);
	g_free(request);
}

int gst_ion_request_add_device(GstIonRequest *request, const char *spec)
{
	struct ion_device *device;
	int ret = ion_ctx_get_device(request->ctx, spec, &device);

	if (ret < 0)
		return ret;
	for (guint i = 0; i < request->devices->len; i++) {
		if (request->devices->pdata[i] == device) {
			ion_device_unref(device);
			return 0;
		}
	}
	g_ptr_array_add(request->devices, device);
	return 0;
}

char *gst_ion_request_describe(const GstIonRequest *request)
{
	GString *text = g_string_new(NULL);

	for (guint i = 0; i < request->devices->len; i++)
		g_string_append_printf(text, "%s%s", i ? "," : "",
				       ion_device_get_name(request->devices->pdata[i]));
	return g_string_free(text, FALSE);
}

/* The solution for the devices alone, or for the forced heap alone. */
static int gst_ion_solve_one(const GstIonRequest *request, gsize size, gboolean forced,
			     struct ion_solution **ret_solution)
{
	struct ion_alloc_config *config;
	int ret = ion_alloc_config_new(&config);

	if (ret < 0)
		return ret;
	ret = ion_alloc_config_set_size(config, size);
	for (guint i = 0; ret >= 0 && !forced && i < request->devices->len; i++)
		ret = ion_alloc_config_add_device(config, request->devices->pdata[i]);
	if (ret >= 0 && forced)
		ret = ion_alloc_config_set_heap(config, request->heap);
	if (ret >= 0)
		ret = ion_ctx_solve(request->ctx, config, ret_solution);
	ion_alloc_config_free(config);
	return ret;
}

/* Logs each rejection of the devices' solution, or only those of heap. */
static void gst_ion_log_rejections(const struct ion_solution *solution, const char *heap,
				   GstObject *obj, GstDebugLevel level)
{
	int count = ion_solution_get_rejection_count(solution);

	for (int i = 0; i < count; i++) {
		const struct ion_heap *rejected;
		const struct ion_device *device;
		const char *reason;

		if (ion_solution_get_rejection(solution, i, &rejected, &device, &reason) < 0)
			continue;
		if (heap && g_strcmp0(ion_heap_get_name(rejected), heap) != 0)
			continue;
		GST_CAT_LEVEL_LOG(GST_CAT_DEFAULT, level, obj, "%s rejected: %s",
				  ion_heap_get_name(rejected), reason);
	}
}

int gst_ion_request_solve(const GstIonRequest *request, gsize size, GstObject *log_object,
			  struct ion_solution **ret_solution)
{
	struct ion_solution *solution, *devices_solution;
	char *names = gst_ion_request_describe(request);
	int ret = gst_ion_solve_one(request, size, FALSE, &devices_solution);

	if (ret < 0)
		goto out;
	if (request->heap) {
		ret = gst_ion_solve_one(request, size, TRUE, &solution);
		if (ret >= 0)
			GST_WARNING_OBJECT(log_object, "heap %s forced for [%s], over the solver's choice %s",
					   request->heap, names,
					   ion_solution_get_heap_count(devices_solution) > 0
					   ? ion_heap_get_name(ion_solution_get_heap(devices_solution, 0))
					   : "(none)");
		gst_ion_log_rejections(devices_solution, request->heap, log_object,
				       GST_LEVEL_WARNING);
		ion_solution_unref(devices_solution);
	} else {
		solution = devices_solution;
	}
	if (ret >= 0 && ion_solution_get_heap_count(solution) == 0) {
		GST_ERROR_OBJECT(log_object, "no heap serves %" G_GSIZE_FORMAT " bytes for [%s]",
				 size, names);
		gst_ion_log_rejections(solution, NULL, log_object, GST_LEVEL_ERROR);
		ion_solution_unref(solution);
		ret = -ENODEV;
	}
	if (ret >= 0) {
		GST_INFO_OBJECT(log_object, "heap %s %s for [%s], %zu bytes a buffer",
				ion_heap_get_name(ion_solution_get_heap(solution, 0)),
				request->heap ? "forced" : "chosen", names,
				ion_solution_get_size(solution));
		*ret_solution = solution;
	}
out:
	g_free(names);
	return ret;
}
