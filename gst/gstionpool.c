// SPDX-License-Identifier: MIT
/*
 * ionpool: passes buffers through untouched; its work is the ALLOCATION
 * query.  Upstream's query (v4l2src's, videotestsrc's) is answered with a
 * GstIonBufferPool solved by libion for the devices on both sides (found
 * by gstionneighbours.c) and those the "devices" property names, after
 * downstream has added the metas it supports.  "heap" overrides the
 * solver (to show what the kernel says of a heap it rejected);
 * "chosen-heap" tells what it chose.
 */
#include "gstionallocator.h"
#include "gstionbufferpool.h"
#include "gstionneighbours.h"
#include "gstionpool.h"

GST_DEBUG_CATEGORY(gst_ion_pool_debug);
#define GST_CAT_DEFAULT gst_ion_pool_debug

/* Buffers the pool keeps at least: a camera needs a few queued. */
#define GST_ION_POOL_MIN_BUFFERS 4

enum {
	PROP_0,
	PROP_DEVICES,
	PROP_HEAP,
	PROP_CHOSEN_HEAP,
	PROP_CHOSEN_DEVICES,
};

struct _GstIonPool {
	GstBaseTransform parent;
	/* Under the object lock: */
	char *devices, *heap, *chosen_heap, *chosen_devices;
	struct ion_ctx *ctx;
	/* The last ALLOCATION query went unanswered, with an element error:
	 * buffers of another pool are refused rather than passed on. */
	gint refused;
};

G_DEFINE_TYPE(GstIonPool, gst_ion_pool, GST_TYPE_BASE_TRANSFORM)

static GstStaticPadTemplate gst_ion_pool_sink_template = GST_STATIC_PAD_TEMPLATE("sink",
	GST_PAD_SINK, GST_PAD_ALWAYS, GST_STATIC_CAPS("video/x-raw"));
static GstStaticPadTemplate gst_ion_pool_src_template = GST_STATIC_PAD_TEMPLATE("src",
	GST_PAD_SRC, GST_PAD_ALWAYS, GST_STATIC_CAPS("video/x-raw"));

/* The request for this query: the property's devices, then the
 * neighbours'.  NULL after posting an error. */
static GstIonRequest *gst_ion_pool_request(GstIonPool *self)
{
	GstBaseTransform *trans = GST_BASE_TRANSFORM(self);
	GstIonRequest *request = NULL;
	char **names = NULL;
	int ret = 0;

	GST_OBJECT_LOCK(self);
	if (!self->ctx)
		ret = ion_ctx_new(NULL, &self->ctx);
	if (ret >= 0) {
		request = gst_ion_request_new(self->ctx, self->heap);
		names = g_strsplit(self->devices ? self->devices : "", ",", -1);
	}
	GST_OBJECT_UNLOCK(self);
	if (ret < 0) {
		GST_ELEMENT_ERROR(self, RESOURCE, FAILED, ("libion: no context"),
				  ("ion_ctx_new: %s", g_strerror(-ret)));
		return NULL;
	}
	for (char **name = names; *name; name++) {
		if (**name == '\0')
			continue;
		ret = gst_ion_request_add_device(request, *name);
		if (ret < 0) {
			GST_ELEMENT_ERROR(self, RESOURCE, NOT_FOUND, ("no device %s", *name),
					  ("ion_ctx_get_device: %s", g_strerror(-ret)));
			g_clear_pointer(&request, gst_ion_request_free);
			break;
		}
	}
	g_strfreev(names);
	if (request) {
		gst_ion_neighbours_add(request, trans->sinkpad, GST_OBJECT(self));
		gst_ion_neighbours_add(request, trans->srcpad, GST_OBJECT(self));
	}
	return request;
}

/* What the query offers instead of downstream's pool and allocator. */
static void gst_ion_pool_answer(GstQuery *query, GstBufferPool *pool, guint size, guint min,
				GstAllocator *allocator)
{
	GstAllocationParams params;

	while (gst_query_get_n_allocation_pools(query) > 0)
		gst_query_remove_nth_allocation_pool(query, 0);
	while (gst_query_get_n_allocation_params(query) > 0)
		gst_query_remove_nth_allocation_param(query, 0);
	gst_allocation_params_init(&params);
	gst_query_add_allocation_param(query, allocator, &params);
	gst_query_add_allocation_pool(query, pool, size, min, 0);
	if (!gst_query_find_allocation_meta(query, GST_VIDEO_META_API_TYPE, NULL))
		gst_query_add_allocation_meta(query, GST_VIDEO_META_API_TYPE, NULL);
}

static void gst_ion_pool_set_chosen(GstIonPool *self, GstIonBufferPool *pool,
				    const GstIonRequest *request)
{
	GST_OBJECT_LOCK(self);
	g_free(self->chosen_heap);
	self->chosen_heap = gst_ion_buffer_pool_get_heap(pool);
	g_free(self->chosen_devices);
	self->chosen_devices = gst_ion_request_describe(request);
	GST_INFO_OBJECT(self, "pool from heap %s for [%s]", self->chosen_heap,
			self->chosen_devices);
	GST_OBJECT_UNLOCK(self);
	g_object_notify(G_OBJECT(self), "chosen-heap");
}

/* The element error for a request the solver could not serve. */
static void gst_ion_pool_post_unsolved(GstIonPool *self, const GstIonRequest *request)
{
	char *names = gst_ion_request_describe(request);

	if (request->heap)
		GST_ELEMENT_ERROR(self, RESOURCE, NOT_FOUND,
				  ("no heap %s to allocate from", request->heap), (NULL));
	else
		GST_ELEMENT_ERROR(self, RESOURCE, NO_SPACE_LEFT, ("no heap serves [%s]", names),
				  ("the solver's reasons are logged by ionsolve"));
	g_free(names);
}

static gboolean gst_ion_pool_propose_allocation(GstBaseTransform *trans, GstQuery *decide_query,
						GstQuery *query)
{
	GstIonPool *self = GST_ION_POOL(trans);
	guint size, min = GST_ION_POOL_MIN_BUFFERS;
	GstIonRequest *request;
	GstAllocator *allocator;
	GstStructure *config;
	GstBufferPool *pool;
	GstVideoInfo info;
	GstCaps *caps;

	gst_query_parse_allocation(query, &caps, NULL);
	if (!caps || !gst_video_info_from_caps(&info, caps))
		return FALSE;
	/* Downstream's metas (and its pool's sizes, which ours replaces). */
	gst_pad_peer_query(trans->srcpad, query);
	if (gst_query_get_n_allocation_pools(query) > 0) {
		guint down_min;

		gst_query_parse_nth_allocation_pool(query, 0, NULL, NULL, &down_min, NULL);
		min = MAX(min, down_min);
	}
	size = info.size;
	g_atomic_int_set(&self->refused, 1);
	request = gst_ion_pool_request(self);
	if (!request)
		return FALSE;
	pool = gst_ion_buffer_pool_new(request, GST_OBJECT(self));
	config = gst_buffer_pool_get_config(pool);
	gst_buffer_pool_config_set_params(config, caps, size, min, 0);
	gst_buffer_pool_config_add_option(config, GST_BUFFER_POOL_OPTION_VIDEO_META);
	if (!gst_buffer_pool_set_config(pool, config)) {
		gst_ion_pool_post_unsolved(self, request);
		gst_object_unref(pool);
		gst_ion_request_free(request);
		return FALSE;
	}
	g_atomic_int_set(&self->refused, 0);
	gst_ion_pool_set_chosen(self, GST_ION_BUFFER_POOL(pool), request);
	allocator = gst_ion_buffer_pool_get_allocator(GST_ION_BUFFER_POOL(pool));
	gst_ion_pool_answer(query, pool, size, min, allocator);
	gst_object_unref(allocator);
	gst_object_unref(pool);
	gst_ion_request_free(request);
	return TRUE;
}

static GstFlowReturn gst_ion_pool_transform_ip(GstBaseTransform *trans, GstBuffer *buffer)
{
	GstIonPool *self = GST_ION_POOL(trans);

	return g_atomic_int_get(&self->refused) ? GST_FLOW_ERROR : GST_FLOW_OK;
}

static void gst_ion_pool_set_property(GObject *object, guint id, const GValue *value,
				      GParamSpec *spec)
{
	GstIonPool *self = GST_ION_POOL(object);

	GST_OBJECT_LOCK(self);
	switch (id) {
	case PROP_DEVICES:
		g_free(self->devices);
		self->devices = g_value_dup_string(value);
		break;
	case PROP_HEAP:
		g_free(self->heap);
		self->heap = g_value_dup_string(value);
		break;
	default:
		G_OBJECT_WARN_INVALID_PROPERTY_ID(object, id, spec);
	}
	GST_OBJECT_UNLOCK(self);
}

static void gst_ion_pool_get_property(GObject *object, guint id, GValue *value,
				      GParamSpec *spec)
{
	GstIonPool *self = GST_ION_POOL(object);

	GST_OBJECT_LOCK(self);
	switch (id) {
	case PROP_DEVICES:
		g_value_set_string(value, self->devices);
		break;
	case PROP_HEAP:
		g_value_set_string(value, self->heap);
		break;
	case PROP_CHOSEN_HEAP:
		g_value_set_string(value, self->chosen_heap);
		break;
	case PROP_CHOSEN_DEVICES:
		g_value_set_string(value, self->chosen_devices);
		break;
	default:
		G_OBJECT_WARN_INVALID_PROPERTY_ID(object, id, spec);
	}
	GST_OBJECT_UNLOCK(self);
}

static void gst_ion_pool_finalize(GObject *object)
{
	GstIonPool *self = GST_ION_POOL(object);

	g_free(self->devices);
	g_free(self->heap);
	g_free(self->chosen_heap);
	g_free(self->chosen_devices);
	ion_ctx_unref(self->ctx);
	G_OBJECT_CLASS(gst_ion_pool_parent_class)->finalize(object);
}

static void gst_ion_pool_install_properties(GObjectClass *object_class)
{
	const GParamFlags rw = G_PARAM_READWRITE | G_PARAM_STATIC_STRINGS |
			       GST_PARAM_MUTABLE_READY;
	const GParamFlags ro = G_PARAM_READABLE | G_PARAM_STATIC_STRINGS;

	g_object_class_install_property(object_class, PROP_DEVICES,
		g_param_spec_string("devices", "Devices",
			"Devices that touch the buffers besides those found upstream and "
			"downstream, comma-separated (\"video0,card1\", \"/dev/dri/card1\")",
			NULL, rw));
	g_object_class_install_property(object_class, PROP_HEAP,
		g_param_spec_string("heap", "Heap",
			"Allocate from this heap, whatever the solver says (NULL: its choice)",
			NULL, rw));
	g_object_class_install_property(object_class, PROP_CHOSEN_HEAP,
		g_param_spec_string("chosen-heap", "Chosen heap",
			"The heap the pool allocates from, once upstream asked for one", NULL, ro));
	g_object_class_install_property(object_class, PROP_CHOSEN_DEVICES,
		g_param_spec_string("chosen-devices", "Chosen devices",
			"The devices the pool was solved for, comma-separated", NULL, ro));
}

static void gst_ion_pool_class_init(GstIonPoolClass *klass)
{
	GObjectClass *object_class = G_OBJECT_CLASS(klass);
	GstElementClass *element_class = GST_ELEMENT_CLASS(klass);
	GstBaseTransformClass *trans_class = GST_BASE_TRANSFORM_CLASS(klass);

	GST_DEBUG_CATEGORY_INIT(gst_ion_pool_debug, "ionpool", 0,
				"libion buffer pool for the devices around it");
	object_class->set_property = gst_ion_pool_set_property;
	object_class->get_property = gst_ion_pool_get_property;
	object_class->finalize = gst_ion_pool_finalize;
	gst_ion_pool_install_properties(object_class);
	gst_element_class_add_static_pad_template(element_class, &gst_ion_pool_sink_template);
	gst_element_class_add_static_pad_template(element_class, &gst_ion_pool_src_template);
	gst_element_class_set_static_metadata(element_class, "libion buffer pool",
		"Filter/Video", "Offers upstream dma-buf buffers from the heap that libion "
		"solves for the devices on both sides (no copy, no change to the data)",
		"libion contributors");
	trans_class->propose_allocation = gst_ion_pool_propose_allocation;
	trans_class->transform_ip = gst_ion_pool_transform_ip;
	trans_class->passthrough_on_same_caps = TRUE;
}

static void gst_ion_pool_init(GstIonPool *self)
{
	gst_base_transform_set_passthrough(GST_BASE_TRANSFORM(self), TRUE);
}
