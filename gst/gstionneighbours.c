// SPDX-License-Identifier: MIT
/*
 * Finding the devices of ionpool's neighbours (see gstionneighbours.h).
 * Elements are asked through their properties alone, as gst-inspect-1.0
 * lists them, so that no element needs to know of libion.
 */
#include <stdio.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>

#include "gstionneighbours.h"

GST_DEBUG_CATEGORY_EXTERN(gst_ion_pool_debug);
#define GST_CAT_DEFAULT gst_ion_pool_debug

/* How many elements without a device to look through (a capsfilter, a
 * queue, a tee's branch...). */
#define GST_ION_NEIGHBOURS_DEPTH 8

static GParamSpec *gst_ion_property(GstElement *element, const char *name, GType type)
{
	GParamSpec *spec = g_object_class_find_property(G_OBJECT_GET_CLASS(element), name);

	if (!spec || !(spec->flags & G_PARAM_READABLE) || spec->value_type != type)
		return NULL;
	return spec;
}

/* The DRM node's name ("card1") of an open DRM fd, from sysfs. */
static char *gst_ion_drm_fd_name(int fd)
{
	char link[64], *target, *name = NULL;
	struct stat st;

	if (fstat(fd, &st) < 0 || !S_ISCHR(st.st_mode))
		return NULL;
	snprintf(link, sizeof(link), "/sys/dev/char/%u:%u", major(st.st_rdev), minor(st.st_rdev));
	target = g_file_read_link(link, NULL);
	if (target)
		name = g_path_get_basename(target);
	g_free(target);
	return name;
}

/* The DRM card ("card1") that libion knows with this driver name. */
static char *gst_ion_drm_driver_card(struct ion_ctx *ctx, const char *driver)
{
	int count = ion_ctx_get_device_count(ctx);
	char *name = NULL;

	for (int i = 0; !name && i < count; i++) {
		struct ion_device *device;

		if (ion_ctx_get_device_at(ctx, i, &device) < 0)
			continue;
		if (g_strcmp0(ion_device_get_subsystem(device), "drm") == 0 &&
		    g_strcmp0(ion_device_get_driver(device), driver) == 0 &&
		    g_str_has_prefix(ion_device_get_name(device), "card"))
			name = g_strdup(ion_device_get_name(device));
		ion_device_unref(device);
	}
	return name;
}

/* The device an element names, as a spec for ion_ctx_get_device(). */
static char *gst_ion_element_device(struct ion_ctx *ctx, GstElement *element)
{
	char *spec = NULL;
	int fd = -1;

	if (gst_ion_property(element, "device", G_TYPE_STRING)) {
		g_object_get(element, "device", &spec, NULL);
		if (spec && g_str_has_prefix(spec, "/dev/"))
			return spec;
		g_clear_pointer(&spec, g_free);
	}
	/* kmssink: its open DRM fd, else the driver it was told to open. */
	if (gst_ion_property(element, "fd", G_TYPE_INT))
		g_object_get(element, "fd", &fd, NULL);
	if (fd >= 0 && gst_ion_property(element, "driver-name", G_TYPE_STRING))
		spec = gst_ion_drm_fd_name(fd);
	if (!spec && gst_ion_property(element, "driver-name", G_TYPE_STRING)) {
		char *driver = NULL;

		g_object_get(element, "driver-name", &driver, NULL);
		if (driver)
			spec = gst_ion_drm_driver_card(ctx, driver);
		g_free(driver);
	}
	return spec;
}

/* The element's one sink pad (to go on upstream) or src pad, or NULL. */
static GstPad *gst_ion_through(GstElement *element, gboolean upstream)
{
	GList *pads = upstream ? element->sinkpads : element->srcpads;
	GstPad *pad = NULL;

	GST_OBJECT_LOCK(element);
	if (pads && !pads->next)
		pad = gst_object_ref(pads->data);
	GST_OBJECT_UNLOCK(element);
	return pad;
}

/* pad's peer, through ghost pads: into a bin (the ghost pad's target)
 * and out of one (the ghost pad's own peer). */
static GstPad *gst_ion_peer(GstPad *pad)
{
	GstPad *peer = gst_pad_get_peer(pad);

	for (int depth = 0; peer && depth < GST_ION_NEIGHBOURS_DEPTH; depth++) {
		GstPad *next, *ghost;

		if (GST_IS_GHOST_PAD(peer)) {
			next = gst_ghost_pad_get_target(GST_GHOST_PAD(peer));
		} else if (GST_IS_PROXY_PAD(peer) &&
			   (ghost = GST_PAD(gst_proxy_pad_get_internal(GST_PROXY_PAD(peer))))) {
			next = GST_IS_GHOST_PAD(ghost) ? gst_pad_get_peer(ghost) : NULL;
			gst_object_unref(ghost);
		} else {
			break;
		}
		gst_object_unref(peer);
		peer = next;
	}
	return peer;
}

gboolean gst_ion_neighbours_add(GstIonRequest *request, GstPad *pad, GstObject *log_object)
{
	GstPadDirection direction = GST_PAD_DIRECTION(pad);
	gboolean added = FALSE;
	GstPad *here = gst_object_ref(pad);

	for (int depth = 0; here && !added && depth < GST_ION_NEIGHBOURS_DEPTH; depth++) {
		GstPad *peer = gst_ion_peer(here);
		GstElement *element = peer ? gst_pad_get_parent_element(peer) : NULL;
		char *spec = element ? gst_ion_element_device(request->ctx, element) : NULL;

		gst_object_unref(here);
		here = NULL;
		if (spec) {
			int ret = gst_ion_request_add_device(request, spec);

			if (ret < 0)
				GST_WARNING_OBJECT(log_object, "%s names %s, which libion does not know: %s",
						   GST_OBJECT_NAME(element), spec, g_strerror(-ret));
			else
				GST_INFO_OBJECT(log_object, "%s %s: device %s", direction == GST_PAD_SINK
						? "upstream" : "downstream", GST_OBJECT_NAME(element), spec);
			added = ret >= 0;
		} else if (element) {
			here = gst_ion_through(element, direction == GST_PAD_SINK);
		}
		g_free(spec);
		if (element)
			gst_object_unref(element);
		if (peer)
			gst_object_unref(peer);
	}
	if (here)
		gst_object_unref(here);
	return added;
}
