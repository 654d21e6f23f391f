// SPDX-License-Identifier: MIT
/*
 * test-gst: the GStreamer plugin (gst/, libgstion.so) in pipelines of
 * GStreamer's own elements, as gst-launch-1.0 would run them
 * (gst_parse_launch), with the checks gst-launch cannot make:
 *
 *  test-gst [--heap H] [--devices D] --expect-heap H [--expect-devices D]
 *           [--frames N] testsrc
 *      videotestsrc num-buffers=N ! ionpool [heap=H] [devices=D] ! fakesink
 *  test-gst [--heap H] --expect-heap H [--expect-devices D] [--frames N] camera
 *      v4l2src device=/dev/video0 io-mode=dmabuf-import num-buffers=N
 *      ! video/x-raw,format=BGRx,width=640,height=480 ! ionpool
 *      ! kmssink driver-name=vkms force-modesetting=true
 *  test-gst --heap system --expect-error EFAULT camera
 *  test-gst ... camera-bin
 *      the same with "bin. ( queue ! kmssink ... )": a sink inside a bin
 *
 * Every buffer that reaches the sink must be GstDmaBufMemory of the
 * plugin's allocator, from the expected heap (the qdata the allocator
 * puts on each memory, and the exporter the kernel names in the fd's
 * fdinfo, where it names one: a DMA-BUF heap's buffer carries the heap's
 * name), and ionpool's chosen-heap (and chosen-devices)
 * must say the same; N buffers must arrive, then EOS.  With kmssink, it
 * must have imported the dma-bufs (its "setting KMS mem ... to DMABuf mem"
 * log lines) and copied no frame (GST_PERFORMANCE's "frame copy").  With
 * --expect-error TEXT the pipeline must stop on an error, and TEXT must be
 * in what it reported (the bus's error or a V4L2 element's error log):
 * "Bad address" is EFAULT at QBUF, dma-contig refusing scattered memory.
 * TEXT may be an errno's name (EFAULT), for its message, since the VM's
 * runner takes no blanks in arguments.  "none" as the expected heap means
 * no chosen-heap.
 *
 * The plugins are found through GST_PLUGIN_PATH and the system folder,
 * and --plugin FILE loads one more: the host tests name GStreamer's
 * plugins they need and scan no folder but the build's, in this process
 * (GST_REGISTRY_FORK=no), so that a plugin built with a sanitizer loads
 * and no other plugin's leaks count; the VM, which has no
 * gst-plugin-scanner, does the same with a folder of the plugins it
 * needs.
 * Exit status: 0 on success, 1 on a failed check, 77 (skip) when an
 * element is missing.
 */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <gst/allocators/allocators.h>
#include <gst/gst.h>

struct run {
	const char *expect_heap, *expect_devices;
	const char *expect_error;
	GString *errors; /* what the pipeline reported */
	int frames, failed;
	int imports, cached, copies;
};

static struct run run;

static void fail(const char *fmt, ...) G_GNUC_PRINTF(1, 2);
static void fail(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	fputs("FAIL: ", stdout);
	vprintf(fmt, ap);
	putchar('\n');
	va_end(ap);
	run.failed = 1;
}

/* GStreamer's log, filtered to what this test counts and shows. */
static void log_fn(GstDebugCategory *category, GstDebugLevel level, const gchar *file,
		   const gchar *function, gint line, GObject *object,
		   GstDebugMessage *message, gpointer data)
{
	const char *name = gst_debug_category_get_name(category);
	const char *text = gst_debug_message_get(message);

	if (strcmp(name, "kmssink") == 0) {
		if (strstr(text, "setting KMS mem") && strstr(text, "to DMABuf mem"))
			run.imports++;
		else if (strstr(text, "found KMS mem") && strstr(text, "in DMABuf mem"))
			run.cached++;
		else if (level <= GST_LEVEL_WARNING)
			printf("kmssink: %s\n", text);
		return;
	}
	if (strcmp(name, "GST_PERFORMANCE") == 0) {
		if (strstr(text, "frame copy"))
			run.copies++;
		return;
	}
	if (g_str_has_prefix(name, "v4l2") && level == GST_LEVEL_ERROR) {
		g_string_append_printf(run.errors, "%s\n", text);
		printf("%s: %s\n", name, text);
		return;
	}
	if (g_str_has_prefix(name, "ion") && level <= GST_LEVEL_INFO)
		printf("%s: %s\n", name, text);
}

static void setup_log(void)
{
	gst_debug_remove_log_function(gst_debug_log_default);
	gst_debug_add_log_function(log_fn, NULL, NULL);
	gst_debug_set_active(TRUE);
	gst_debug_set_threshold_from_string("ion*:4,kmssink:6,GST_PERFORMANCE:4,v4l2*:1", TRUE);
}

/* The exporter the kernel names for a dma-buf fd (a DMA-BUF heap's own
 * name), or NULL: not a dma-buf (a memfd), or no fdinfo. */
static char *kernel_exporter(int fd)
{
	char *path = g_strdup_printf("/proc/self/fdinfo/%d", fd), *text = NULL, *name = NULL;

	if (g_file_get_contents(path, &text, NULL, NULL)) {
		char *line = strstr(text, "exp_name:");

		if (line)
			name = g_strstrip(g_strndup(line + 9, strcspn(line + 9, "\n")));
	}
	g_free(text);
	g_free(path);
	return name;
}

/* Each buffer at the sink: dma-buf memory of our allocator, from the heap. */
static GstPadProbeReturn check_buffer(GstPad *pad, GstPadProbeInfo *info, gpointer data)
{
	GstBuffer *buffer = GST_PAD_PROBE_INFO_BUFFER(info);
	GstMemory *memory = gst_buffer_peek_memory(buffer, 0);
	const char *allocator, *heap;
	int frame = ++*(int *)data;
	char *exporter;

	if (!memory || !gst_is_dmabuf_memory(memory)) {
		fail("frame %d: not dma-buf memory", frame);
		return GST_PAD_PROBE_OK;
	}
	allocator = G_OBJECT_TYPE_NAME(memory->allocator);
	heap = gst_mini_object_get_qdata(GST_MINI_OBJECT(memory),
					 g_quark_from_static_string("GstIonMemoryHeap"));
	if (strcmp(allocator, "GstIonAllocator") != 0)
		fail("frame %d: memory of %s, not of GstIonAllocator", frame, allocator);
	else if (g_strcmp0(heap, run.expect_heap) != 0)
		fail("frame %d: from heap %s, not %s", frame, heap, run.expect_heap);
	/* The kernel's word too, where it has one: a heap's dma-buf says
	 * which heap exported it. */
	exporter = kernel_exporter(gst_dmabuf_memory_get_fd(memory));
	if (exporter && g_strcmp0(exporter, run.expect_heap) != 0)
		fail("frame %d: the kernel says %s exported it, not %s", frame, exporter,
		     run.expect_heap);
	if (frame == 1)
		printf("frame 1 at the sink: GstDmaBufMemory fd %d of %s, heap %s, %zu bytes; "
		       "the kernel's exporter: %s\n", gst_dmabuf_memory_get_fd(memory),
		       allocator, heap, gst_buffer_get_size(buffer),
		       exporter ? exporter : "none (no dma-buf)");
	g_free(exporter);
	return GST_PAD_PROBE_OK;
}

static char *pipeline_text(const char *kind, const char *heap, const char *devices)
{
	char *ion = g_strdup_printf("ionpool name=ion%s%s%s%s", heap ? " heap=" : "",
				    heap ? heap : "", devices ? " devices=" : "",
				    devices ? devices : "");
	char *text = NULL;

	if (strcmp(kind, "testsrc") == 0)
		text = g_strdup_printf("videotestsrc num-buffers=%d ! video/x-raw,format=BGRx,"
				       "width=320,height=240 ! %s ! fakesink name=sink",
				       run.frames, ion);
	else if (strcmp(kind, "camera") == 0)
		text = g_strdup_printf("v4l2src device=/dev/video0 io-mode=dmabuf-import "
				       "num-buffers=%d ! video/x-raw,format=BGRx,width=640,"
				       "height=480 ! %s ! kmssink name=sink driver-name=vkms "
				       "force-modesetting=true", run.frames, ion);
	else if (strcmp(kind, "camera-bin") == 0)
		/* kmssink inside a bin, behind a queue: found through both. */
		text = g_strdup_printf("v4l2src device=/dev/video0 io-mode=dmabuf-import "
				       "num-buffers=%d ! video/x-raw,format=BGRx,width=640,"
				       "height=480 ! %s ! bin. ( queue ! kmssink name=sink "
				       "driver-name=vkms force-modesetting=true )", run.frames, ion);
	g_free(ion);
	return text;
}

/* Runs it to EOS or an error; returns whether it reached EOS. */
static gboolean play(GstElement *pipeline)
{
	GstBus *bus = gst_element_get_bus(pipeline);
	gboolean eos = FALSE;
	GstMessage *msg;

	if (gst_element_set_state(pipeline, GST_STATE_PLAYING) == GST_STATE_CHANGE_FAILURE)
		printf("the pipeline did not start\n");
	msg = gst_bus_timed_pop_filtered(bus, 60 * GST_SECOND, GST_MESSAGE_EOS | GST_MESSAGE_ERROR);
	if (msg && GST_MESSAGE_TYPE(msg) == GST_MESSAGE_ERROR) {
		GError *error;
		char *debug;

		gst_message_parse_error(msg, &error, &debug);
		printf("pipeline error from %s: %s\n  %s\n", GST_OBJECT_NAME(msg->src),
		       error->message, debug ? debug : "");
		g_string_append_printf(run.errors, "%s\n%s\n", error->message, debug ? debug : "");
		g_error_free(error);
		g_free(debug);
	} else if (msg) {
		eos = TRUE;
	} else {
		fail("neither EOS nor an error within 60 s");
	}
	if (msg)
		gst_message_unref(msg);
	gst_element_set_state(pipeline, GST_STATE_NULL);
	gst_object_unref(bus);
	return eos;
}

static void check_result(GstElement *pipeline, const char *kind, gboolean eos, int frames)
{
	GstElement *ion = gst_bin_get_by_name(GST_BIN(pipeline), "ion");
	char *chosen = NULL, *devices = NULL;

	g_object_get(ion, "chosen-heap", &chosen, "chosen-devices", &devices, NULL);
	printf("ionpool: chosen-heap %s, chosen-devices [%s]; %d frames at the sink\n",
	       chosen, devices, frames);
	if (g_strcmp0(chosen ? chosen : "none", run.expect_heap) != 0)
		fail("chosen-heap %s, not %s", chosen, run.expect_heap);
	if (run.expect_devices && g_strcmp0(devices, run.expect_devices) != 0)
		fail("chosen-devices [%s], not [%s]", devices, run.expect_devices);
	if (run.expect_error) {
		if (eos || !strstr(run.errors->str, run.expect_error))
			fail("the pipeline did not stop on \"%s\"", run.expect_error);
		else
			printf("the pipeline stopped on \"%s\", as expected\n", run.expect_error);
	} else {
		if (!eos || frames != run.frames)
			fail("%d frames and %s, not %d frames and EOS", frames,
			     eos ? "EOS" : "no EOS", run.frames);
		if (g_str_has_prefix(kind, "camera")) {
			printf("kmssink: %d dma-bufs imported (framebuffers made), %d reused, "
			       "%d frames copied\n", run.imports, run.cached, run.copies);
			if (run.imports == 0 || run.copies != 0)
				fail("kmssink did not show the buffers without a copy");
		}
	}
	g_free(chosen);
	g_free(devices);
	gst_object_unref(ion);
}

/* The plugins named on the command line, besides those of the registry. */
static gboolean load_plugins(GPtrArray *files)
{
	for (guint i = 0; i < files->len; i++) {
		GError *error = NULL;
		GstPlugin *plugin = gst_plugin_load_file(files->pdata[i], &error);

		if (!plugin) {
			printf("SKIP: %s\n", error->message);
			g_error_free(error);
			g_ptr_array_unref(files);
			return FALSE;
		}
		gst_object_unref(plugin);
	}
	g_ptr_array_unref(files);
	return TRUE;
}

/* "EFAULT": "Bad address", as g_strerror() and the elements say it. */
static const char *errno_text(const char *text)
{
	static const struct { const char *name; int value; } names[] = {
		{ "EFAULT", EFAULT }, { "EINVAL", EINVAL }, { "ENOMEM", ENOMEM },
		{ "ENODEV", ENODEV }, { "EPERM", EPERM }, { "EACCES", EACCES },
	};

	for (size_t i = 0; i < G_N_ELEMENTS(names); i++) {
		if (strcmp(text, names[i].name) == 0)
			return g_strerror(names[i].value);
	}
	return text;
}

int main(int argc, char **argv)
{
	static const struct option options[] = {
		{ "heap", required_argument, NULL, 'h' },
		{ "devices", required_argument, NULL, 'D' },
		{ "expect-heap", required_argument, NULL, 'e' },
		{ "expect-devices", required_argument, NULL, 'd' },
		{ "expect-error", required_argument, NULL, 'x' },
		{ "frames", required_argument, NULL, 'n' },
		{ "plugin", required_argument, NULL, 'p' },
		{ 0 }
	};
	GPtrArray *plugins = g_ptr_array_new();
	const char *heap = NULL, *devices = NULL;
	GstElement *pipeline, *sink;
	GError *error = NULL;
	GstPad *pad;
	int opt, frames = 0;
	gboolean eos;
	char *text;

	run.frames = 30;
	run.errors = g_string_new(NULL);
	while ((opt = getopt_long(argc, argv, "", options, NULL)) != -1) {
		switch (opt) {
		case 'h': heap = optarg; break;
		case 'D': devices = optarg; break;
		case 'e': run.expect_heap = optarg; break;
		case 'd': run.expect_devices = optarg; break;
		case 'x': run.expect_error = errno_text(optarg); break;
		case 'n': run.frames = atoi(optarg); break;
		case 'p': g_ptr_array_add(plugins, optarg); break;
		default: return 2;
		}
	}
	if (optind + 1 != argc || !(text = pipeline_text(argv[optind], heap, devices)) ||
	    (!run.expect_heap && !(run.expect_heap = heap))) {
		fprintf(stderr, "usage: test-gst [--heap H] [--devices D] [--expect-heap H] [--expect-devices D] "
			"[--expect-error TEXT] [--frames N] [--plugin FILE]... testsrc|camera|camera-bin\n");
		return 2;
	}
	gst_init(NULL, NULL);
	if (!load_plugins(plugins))
		return 77;
	setup_log();
	printf("pipeline: %s\n", text);
	pipeline = gst_parse_launch(text, &error);
	if (!pipeline || error) {
		printf("SKIP: %s\n", error ? error->message : "no pipeline");
		g_clear_error(&error);
		g_clear_pointer(&pipeline, gst_object_unref);
		g_free(text);
		return 77;
	}
	sink = gst_bin_get_by_name(GST_BIN(pipeline), "sink");
	pad = gst_element_get_static_pad(sink, "sink");
	gst_pad_add_probe(pad, GST_PAD_PROBE_TYPE_BUFFER, check_buffer, &frames, NULL);
	eos = play(pipeline);
	check_result(pipeline, argv[optind], eos, frames);
	gst_object_unref(pad);
	gst_object_unref(sink);
	gst_object_unref(pipeline);
	g_free(text);
	g_string_free(run.errors, TRUE);
	gst_deinit();
	printf("%s\n", run.failed ? "FAILED" : "ok");
	return run.failed;
}
