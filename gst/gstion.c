// SPDX-License-Identifier: MIT
/*
 * The "ion" plugin: the ionpool element, with its allocator and pool.
 */
#include "gstionpool.h"

static gboolean gst_ion_plugin_init(GstPlugin *plugin)
{
	return gst_element_register(plugin, "ionpool", GST_RANK_NONE, GST_TYPE_ION_POOL);
}

GST_PLUGIN_DEFINE(GST_VERSION_MAJOR, GST_VERSION_MINOR, ion,
		  "dma-buf buffers from libion, solved for the devices of a pipeline",
		  gst_ion_plugin_init, GST_ION_VERSION, "MIT/X11", "libion",
		  /* The project publishes no address yet: GStreamer's own words. */
		  "Unknown package origin")
