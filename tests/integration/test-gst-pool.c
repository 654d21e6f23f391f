// SPDX-License-Identifier: MIT
/*
 * test-gst-pool: ionpool's answer to an ALLOCATION query, used as an
 * upstream element uses it.  The query is sent to ionpool's sink pad
 * (ionpool ! fakesink, paused) for NV12 (two planes in one buffer); the
 * answer must hold a GstIonBufferPool with the video meta; the pool,
 * configured with the video meta and a GstVideoAlignment (rows padded,
 * strides aligned), must give buffers of GstDmaBufMemory from the
 * expected heap, large enough for the padded frame, whose video meta has
 * the aligned strides, and which the CPU can write and read back.
 *
 *  test-gst-pool --expect-heap HEAP [--plugin FILE]...
 *
 * Exit status: 0 on success, 1 on a failed check, 77 when a plugin is
 * missing.
 */
#include <getopt.h>
#include <stdio.h>
#include <string.h>

#include <gst/allocators/allocators.h>
#include <gst/video/video.h>

#define CHECK(cond)                                                          \
	do {                                                                 \
		if (!(cond)) {                                               \
			printf("FAIL: %s:%d: %s\n", __FILE__, __LINE__, #cond); \
			return 1;                                            \
		}                                                            \
	} while (0)

static const char caps_text[] = "video/x-raw,format=NV12,width=320,height=240,framerate=30/1";

/* ionpool's answer: its pool, or NULL. */
static GstBufferPool *ask(GstElement *ion, GstCaps *caps)
{
	GstPad *pad = gst_element_get_static_pad(ion, "sink");
	GstQuery *query = gst_query_new_allocation(caps, TRUE);
	GstBufferPool *pool = NULL;
	guint size = 0, min = 0, max = 0;

	if (gst_pad_query(pad, query) && gst_query_get_n_allocation_pools(query) > 0) {
		gst_query_parse_nth_allocation_pool(query, 0, &pool, &size, &min, &max);
		printf("answer: %s, %u bytes, %u-%u buffers, video meta %s\n",
		       pool ? G_OBJECT_TYPE_NAME(pool) : "no pool", size, min, max,
		       gst_query_find_allocation_meta(query, GST_VIDEO_META_API_TYPE, NULL)
		       ? "yes" : "no");
	}
	gst_query_unref(query);
	gst_object_unref(pad);
	return pool;
}

static int check_buffer(GstBuffer *buffer, const GstVideoInfo *padded, const char *heap)
{
	GstMemory *memory = gst_buffer_peek_memory(buffer, 0);
	GstVideoMeta *meta = gst_buffer_get_video_meta(buffer);
	const char *served;
	GstMapInfo map;

	CHECK(gst_is_dmabuf_memory(memory));
	served = gst_mini_object_get_qdata(GST_MINI_OBJECT(memory),
					   g_quark_from_static_string("GstIonMemoryHeap"));
	printf("buffer: %zu bytes (padded frame %zu), heap %s, strides %d %d\n",
	       gst_buffer_get_size(buffer), padded->size, served,
	       meta ? meta->stride[0] : -1, meta ? meta->stride[1] : -1);
	CHECK(g_strcmp0(served, heap) == 0);
	CHECK(gst_buffer_get_size(buffer) >= padded->size);
	CHECK(meta && meta->n_planes == 2);
	CHECK(meta->stride[0] % 64 == 0 && meta->stride[1] % 64 == 0);
	CHECK(meta->offset[1] == padded->offset[1]);
	CHECK(gst_buffer_map(buffer, &map, GST_MAP_WRITE));
	memset(map.data, 0x5a, map.size);
	gst_buffer_unmap(buffer, &map);
	CHECK(gst_buffer_map(buffer, &map, GST_MAP_READ));
	CHECK(map.data[0] == 0x5a && map.data[map.size - 1] == 0x5a);
	gst_buffer_unmap(buffer, &map);
	return 0;
}

/* Configures the pool as an upstream element would, and checks a buffer. */
static int use(GstBufferPool *pool, GstCaps *caps, const char *heap)
{
	GstStructure *config = gst_buffer_pool_get_config(pool);
	GstVideoAlignment align;
	GstBuffer *buffer = NULL;
	GstVideoInfo info;
	int ret;

	gst_video_info_from_caps(&info, caps);
	gst_video_alignment_reset(&align);
	align.padding_bottom = 16;
	align.stride_align[0] = 63;
	align.stride_align[1] = 63;
	gst_buffer_pool_config_set_params(config, caps, info.size, 2, 0);
	gst_buffer_pool_config_add_option(config, GST_BUFFER_POOL_OPTION_VIDEO_META);
	gst_buffer_pool_config_add_option(config, GST_BUFFER_POOL_OPTION_VIDEO_ALIGNMENT);
	gst_buffer_pool_config_set_video_alignment(config, &align);
	CHECK(gst_buffer_pool_set_config(pool, config));
	CHECK(gst_buffer_pool_set_active(pool, TRUE));
	CHECK(gst_buffer_pool_acquire_buffer(pool, &buffer, NULL) == GST_FLOW_OK);
	gst_video_info_align(&info, &align);
	ret = check_buffer(buffer, &info, heap);
	gst_buffer_unref(buffer);
	CHECK(gst_buffer_pool_set_active(pool, FALSE));
	return ret;
}

int main(int argc, char **argv)
{
	static const struct option options[] = {
		{ "expect-heap", required_argument, NULL, 'e' },
		{ "plugin", required_argument, NULL, 'p' },
		{ 0 }
	};
	const char *heap = NULL;
	GstElement *pipeline, *ion;
	GstBufferPool *pool;
	GstCaps *caps;
	int opt, ret;

	gst_init(NULL, NULL);
	while ((opt = getopt_long(argc, argv, "", options, NULL)) != -1) {
		GError *error = NULL;
		GstPlugin *plugin;

		if (opt == 'e') {
			heap = optarg;
		} else if (opt == 'p' && (plugin = gst_plugin_load_file(optarg, &error))) {
			gst_object_unref(plugin);
		} else if (opt == 'p') {
			printf("SKIP: %s\n", error->message);
			g_error_free(error);
			return 77;
		} else {
			return 2;
		}
	}
	if (!heap || optind != argc) {
		fprintf(stderr, "usage: test-gst-pool --expect-heap HEAP [--plugin FILE]...\n");
		return 2;
	}
	pipeline = gst_parse_launch("ionpool name=ion ! fakesink", NULL);
	if (!pipeline) {
		printf("SKIP: no ionpool or fakesink\n");
		return 77;
	}
	ion = gst_bin_get_by_name(GST_BIN(pipeline), "ion");
	gst_element_set_state(pipeline, GST_STATE_PAUSED);
	caps = gst_caps_from_string(caps_text);
	pool = ask(ion, caps);
	ret = pool && strcmp(G_OBJECT_TYPE_NAME(pool), "GstIonBufferPool") == 0
	      ? use(pool, caps, heap) : (printf("FAIL: no GstIonBufferPool\n"), 1);
	if (pool)
		gst_object_unref(pool);
	gst_caps_unref(caps);
	gst_element_set_state(pipeline, GST_STATE_NULL);
	gst_object_unref(ion);
	gst_object_unref(pipeline);
	gst_deinit();
	printf("%s\n", ret ? "FAILED" : "ok");
	return ret;
}
