// SPDX-License-Identifier: MIT
/*
 * test-camera-display: a camera frame shown on a display with no copy, in
 * a buffer whose heap the library chose for both devices, and proof from
 * the kernel that the choice mattered.  examples/camera-display.c is the
 * pipeline alone, for users to copy; this is it with every check.
 *
 *  1. A late-allocated XRGB8888 image (ion_buffer_new_image), attached to
 *     the camera (vivid-000: videobuf2-dma-contig, no IOMMU, so it needs
 *     physically contiguous memory) and to the display (vkms, which maps
 *     what it scans out in the kernel); its first fd allocates, from the
 *     one heap that fits both.
 *  2. vivid captures a frame into it (V4L2_MEMORY_DMABUF, XBGR32: DRM's
 *     XRGB8888 byte for byte), at the stride the library laid out.
 *  3. vkms scans that very buffer out (PRIME import, AddFB2, an atomic
 *     modeset), with its writeback connector writing what it displays
 *     into a second buffer, solved for vkms alone.
 *  4. The written-back frame must equal the captured one, pixel for pixel.
 *  5. The same capture into a buffer of a heap the solver rejected for
 *     the pair (system, which is scattered): the kernel must refuse it at
 *     QBUF, as the solver said it would.
 *
 * Steps 3 and 4 are left out where vkms frees the pages of the buffers
 * it imports (Linux 5.10: see frees_imported_pages()), which no heap can
 * survive; the program says so, and checks only that the captured frame
 * is not one colour (that the camera wrote it).
 *
 * Only the public API: <ion/ion.h>, libdrm and the V4L2 uapi.
 *
 * Exit status: 0 when the frame came back equal (or could not be shown,
 * as above, and was captured) and the kernel refused the rejected heap;
 * 1 on any mismatch or failure, and in the test VM (LIBION_IN_VM) also
 * when the solver rejects no system buffer for the pair, which its board
 * file makes it do; 77 when there is no vivid dma-contig camera or no
 * vkms (with a writeback connector) here.
 */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <poll.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/utsname.h>
#include <unistd.h>

#include <linux/videodev2.h>

#include <drm_fourcc.h>
#include <xf86drm.h>
#include <xf86drmMode.h>

#include <ion/ion.h>

#define WIDTH 640
#define HEIGHT 480
/* 5.10's vivid starts streaming only once two buffers are queued
 * (min_buffers_needed = 2); 6.1's needs one.  Two work on both. */
#define N_CAPTURE 2
#define TIMEOUT_MS 5000
#define EXIT_SKIP 77
/* The heap shown refused: rejected for vivid-000 yet safe to hand it.
 * It can be mapped in the kernel, so vivid-000 checks it at QBUF and
 * refuses; a buffer without a kernel mapping (5.10's ION) would pass QBUF
 * and be written through a NULL mapping at the first frame, and udmabuf
 * has none on these kernels either: neither is tried. */
#define REJECTED_HEAP "system"
/* A scattered buffer can be physically contiguous by chance (neighbouring
 * chunks from the buddy allocator), and the camera then rightly takes it:
 * new buffers are tried, the old ones kept so that they differ. */
#define REFUSAL_ATTEMPTS 3

static int verbose;

static void say(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void say(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	fflush(stdout);
}

/* Details, with -v. */
static void detail(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void detail(const char *fmt, ...)
{
	va_list ap;

	if (!verbose)
		return;
	va_start(ap, fmt);
	fputs("  ", stdout);
	vprintf(fmt, ap);
	va_end(ap);
	fflush(stdout);
}

/* Returns 1, the exit status of a failure. */
static int fail(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static int fail(const char *fmt, ...)
{
	va_list ap;

	fflush(stdout);
	fputs("test-camera-display: ", stderr);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	return 1;
}

static int xioctl(int fd, unsigned long req, void *arg)
{
	int r;

	do
		r = ioctl(fd, req, arg);
	while (r < 0 && errno == EINTR);
	return r;
}

static const char *errname(int err)
{
	const char *name = strerrorname_np(err);

	return name ? name : "?";
}

/* ---- the devices, as the library knows them ---- */

/*
 * The camera: the device given, or else vivid's dma-contig instance,
 * which only the V4L2 bus name tells from its vmalloc twin (both sit
 * under one platform device).  0, EXIT_SKIP or 1.
 */
static int find_camera(struct ion_ctx *ctx, const char *spec, struct ion_device **ret)
{
	int n = ion_ctx_get_device_count(ctx);

	if (spec) {
		int r = ion_ctx_get_device(ctx, spec, ret);

		return r < 0 ? fail("%s: the library has no such device: %s", spec, strerror(-r)) : 0;
	}
	for (int i = 0; i < n; i++) {
		struct v4l2_capability cap = { 0 };
		struct ion_device *dev;
		const char *node;
		bool found;
		int fd;

		if (ion_ctx_get_device_at(ctx, (unsigned int)i, &dev) < 0)
			continue;
		node = ion_device_get_devnode(dev);
		fd = node && strcmp(ion_device_get_subsystem(dev) ?: "", "video4linux") == 0
			     ? open(node, O_RDWR | O_NONBLOCK | O_CLOEXEC)
			     : -1;
		found = fd >= 0 && xioctl(fd, VIDIOC_QUERYCAP, &cap) == 0 &&
			strcmp((const char *)cap.driver, "vivid") == 0 &&
			strcmp((const char *)cap.bus_info, "platform:vivid-000") == 0;
		if (fd >= 0)
			close(fd);
		if (found) {
			*ret = dev;
			return 0;
		}
		ion_device_unref(dev);
	}
	say("no vivid dma-contig camera (V4L2 bus platform:vivid-000) here: "
	    "load vivid with allocators=1, or name one with --device-video\n");
	return EXIT_SKIP;
}

/* The display: the device given, or else the DRM device of driver vkms. */
static int find_display(struct ion_ctx *ctx, const char *spec, struct ion_device **ret)
{
	int n = ion_ctx_get_device_count(ctx);

	if (spec) {
		int r = ion_ctx_get_device(ctx, spec, ret);

		return r < 0 ? fail("%s: the library has no such device: %s", spec, strerror(-r)) : 0;
	}
	for (int i = 0; i < n; i++) {
		struct ion_device *dev;

		if (ion_ctx_get_device_at(ctx, (unsigned int)i, &dev) < 0)
			continue;
		if (strcmp(ion_device_get_subsystem(dev) ?: "", "drm") == 0 &&
		    strcmp(ion_device_get_driver(dev) ?: "", "vkms") == 0 &&
		    ion_device_get_devnode(dev)) {
			*ret = dev;
			return 0;
		}
		ion_device_unref(dev);
	}
	say("no vkms here: load it (modprobe vkms), or name a KMS device with --device-drm\n");
	return EXIT_SKIP;
}

static void show_device(const char *role, const struct ion_device *dev)
{
	detail("%s %s: %s, %s, driver %s\n", role, ion_device_get_name(dev),
	       ion_device_get_devnode(dev), ion_device_get_syspath(dev) ?: "?",
	       ion_device_get_driver(dev) ?: "?");
	for (int i = 0; i < ion_device_get_constraint_count(dev); i++) {
		const char *key, *value, *source;

		if (ion_device_get_constraint(dev, (unsigned int)i, &key, &value, &source) == 0)
			detail("  needs %s = %s  [%s]\n", key, value, source);
	}
}

/* ---- buffers ---- */

struct image {
	struct ion_buffer *buf;
	int fd;			/* the buffer's own: not to be closed */
	unsigned int stride;
	size_t offset, size;
	const struct ion_heap *heap;
};

/* A late-allocated XRGB8888 image for the devices, and its layout. */
static int new_image(struct ion_ctx *ctx, struct ion_device *const *devs, int n,
		     struct image *img)
{
	int r = ion_buffer_new_image(ctx, DRM_FORMAT_XRGB8888, WIDTH, HEIGHT, &img->buf);

	if (r < 0)
		return fail("ion_buffer_new_image: %s", strerror(-r));
	for (int i = 0; i < n; i++)
		if ((r = ion_buffer_attach(img->buf, devs[i])) < 0)
			return fail("attaching %s: %s", ion_device_get_name(devs[i]),
				    ion_buffer_get_reason(img->buf) ?: strerror(-r));
	/* The first fd solves for every device attached, and allocates. */
	if ((r = ion_buffer_get_fd(img->buf, &img->fd)) < 0)
		return fail("allocating: %s", ion_buffer_get_reason(img->buf) ?: strerror(-r));
	if ((r = ion_buffer_get_plane(img->buf, 0, &img->stride, &img->offset)) < 0)
		return fail("ion_buffer_get_plane: %s", strerror(-r));
	img->size = ion_buffer_get_size(img->buf);
	img->heap = ion_buffer_get_heap(img->buf);
	return 0;
}

static void free_image(struct image *img)
{
	img->buf = ion_buffer_unref(img->buf);
}

static void device_names(struct ion_device *const *devs, int n, char *buf, size_t size)
{
	size_t len = 0;

	buf[0] = '\0';
	for (int i = 0; i < n && len < size; i++)
		len += (size_t)snprintf(buf + len, size - len, "%s%s", i ? " + " : "",
					ion_device_get_name(devs[i]));
}

/*
 * A solve of the same request as a buffer's (its devices, its size): the
 * buffer keeps its own solution to itself, and this one says why the
 * other heaps were left out.
 */
static int solve_like(struct ion_ctx *ctx, struct ion_device *const *devs, int n, size_t size,
		      struct ion_solution **ret)
{
	struct ion_alloc_config *config;
	int r = ion_alloc_config_new(&config);

	if (r == 0)
		r = ion_alloc_config_set_size(config, size);
	for (int i = 0; r == 0 && i < n; i++)
		r = ion_alloc_config_add_device(config, devs[i]);
	if (r == 0)
		r = ion_ctx_solve(ctx, config, ret);
	ion_alloc_config_free(config);
	return r < 0 ? fail("ion_ctx_solve: %s", strerror(-r)) : 0;
}

/*
 * A rejection in a word or two: the constraint key and the device that
 * set it where the reason names one ("... (Contiguous, file:line)"),
 * else the reason's gist ("unavailable", "a memfd is no dma-buf").
 */
static void short_reason(const struct ion_device *dev, const char *reason, char *buf,
			 size_t size)
{
	size_t len = strlen(reason);
	const char *open = strrchr(reason, '(');

	if (len && reason[len - 1] == ')' && open && strchr(open, ',')) {
		snprintf(buf, size, "%s%s%.*s", dev ? ion_device_get_name(dev) : "",
			 dev ? ": " : "", (int)strcspn(open + 1, ","), open + 1);
	} else if (dev && strstr(reason, ": ")) {
		snprintf(buf, size, "%s", strstr(reason, ": ") + 2);
	} else {
		snprintf(buf, size, "%.*s", (int)strcspn(reason, ":"), reason);
	}
}

#define MAX_GROUPS 16

/* The rejections, grouped by their short reason: "a, b (video0: Contiguous); ...". */
static void summarize_rejections(const struct ion_solution *sol, char *out, size_t size)
{
	struct {
		char why[96];
		char heaps[256];
	} groups[MAX_GROUPS];
	int n_groups = 0;
	size_t len = 0;

	for (int i = 0; i < ion_solution_get_rejection_count(sol); i++) {
		const struct ion_heap *h;
		const struct ion_device *d;
		const char *reason, *name;
		char why[96];
		int g;

		if (ion_solution_get_rejection(sol, (unsigned int)i, &h, &d, &reason) < 0)
			continue;
		name = ion_heap_get_name(h);
		short_reason(d, reason, why, sizeof(why));
		for (g = 0; g < n_groups && strcmp(groups[g].why, why) != 0; g++)
			;
		if (g == n_groups) {
			if (n_groups == MAX_GROUPS)
				continue;
			snprintf(groups[g].why, sizeof(groups[g].why), "%s", why);
			groups[g].heaps[0] = '\0';
			n_groups++;
		}
		/* A heap two devices exclude for the same reason: once. */
		{
			size_t hl = strlen(groups[g].heaps);
			const char *p = groups[g].heaps;
			bool seen = false;

			for (; *p; p += strcspn(p, ",") + (p[strcspn(p, ",")] ? 2 : 0))
				if (strncmp(p, name, strlen(name)) == 0 &&
				    (p[strlen(name)] == ',' || p[strlen(name)] == '\0'))
					seen = true;
			if (!seen)
				snprintf(groups[g].heaps + hl, sizeof(groups[g].heaps) - hl, "%s%s",
					 hl ? ", " : "", name);
		}
	}
	out[0] = '\0';
	for (int g = 0; g < n_groups && len < size; g++)
		len += (size_t)snprintf(out + len, size - len, "%s%s (%s)", g ? "; " : "",
					groups[g].heaps, groups[g].why);
}

/* Which heap the buffer came from, and why that one: a line or two. */
static int explain_choice(struct ion_ctx *ctx, struct ion_device *const *devs, int n,
			  const struct image *img, const char *names)
{
	struct ion_solution *sol;
	char rejected[1024];
	int count;

	if (solve_like(ctx, devs, n, img->size, &sol))
		return 1;
	count = ion_solution_get_heap_count(sol);
	summarize_rejections(sol, rejected, sizeof(rejected));
	if (count == 1)
		say("heap for %s: %s, the only one that fits both\n", names,
		    ion_heap_get_name(img->heap));
	else
		say("heap for %s: %s, the best of %d that fit\n", names,
		    ion_heap_get_name(img->heap), count);
	say("  the solver rejected %s\n", rejected);
	if (ion_solution_get_heap(sol, 0) != img->heap)
		say("  (the solver's first choice was %s: out of memory?)\n",
		    ion_heap_get_name(ion_solution_get_heap(sol, 0)));
	for (int i = 0; verbose && i < ion_solution_get_rejection_count(sol); i++) {
		const struct ion_heap *h;
		const struct ion_device *d;
		const char *reason;

		if (ion_solution_get_rejection(sol, (unsigned int)i, &h, &d, &reason) == 0)
			detail("rejected %-16s %s\n", ion_heap_get_name(h), reason);
	}
	ion_solution_unref(sol);
	return 0;
}

/* ---- the camera ---- */

struct camera {
	const char *node;
	int fd;
	struct v4l2_pix_format pix;
};

/* Opens the camera and sets 640x480 XBGR32 at the stride the buffer was
 * laid out with; fails unless the driver takes exactly that. */
static int camera_open(struct camera *cam, unsigned int stride, size_t size)
{
	struct v4l2_capability cap = { 0 };
	struct v4l2_format fmt = { .type = V4L2_BUF_TYPE_VIDEO_CAPTURE };
	unsigned int caps;

	cam->fd = open(cam->node, O_RDWR | O_NONBLOCK | O_CLOEXEC);
	if (cam->fd < 0)
		return fail("%s: %s", cam->node, strerror(errno));
	if (xioctl(cam->fd, VIDIOC_QUERYCAP, &cap) < 0)
		return fail("%s: QUERYCAP: %s", cam->node, strerror(errno));
	caps = cap.capabilities & V4L2_CAP_DEVICE_CAPS ? cap.device_caps : cap.capabilities;
	if (!(caps & V4L2_CAP_VIDEO_CAPTURE) || !(caps & V4L2_CAP_STREAMING))
		return fail("%s (%s): not a streaming single-planar capture device", cam->node,
			    (const char *)cap.card);
	fmt.fmt.pix = (struct v4l2_pix_format){
		.width = WIDTH,
		.height = HEIGHT,
		.pixelformat = V4L2_PIX_FMT_XBGR32,
		.field = V4L2_FIELD_NONE,
		.bytesperline = stride,
	};
	if (xioctl(cam->fd, VIDIOC_S_FMT, &fmt) < 0)
		return fail("%s: S_FMT: %s", cam->node, strerror(errno));
	cam->pix = fmt.fmt.pix;
	if (cam->pix.pixelformat != V4L2_PIX_FMT_XBGR32 || cam->pix.width != WIDTH ||
	    cam->pix.height != HEIGHT)
		return fail("%s: asked for %ux%u XBGR32, the driver set %ux%u %.4s", cam->node,
			    WIDTH, HEIGHT, cam->pix.width, cam->pix.height,
			    (const char *)&cam->pix.pixelformat);
	/* The buffer's layout is the library's: the camera must write rows
	 * exactly where the display will read them. */
	if (cam->pix.bytesperline != stride)
		return fail("%s: the buffer's stride is %u bytes, the camera's %u", cam->node,
			    stride, cam->pix.bytesperline);
	if (cam->pix.sizeimage > size)
		return fail("%s: a frame takes %u bytes, the buffer has %zu", cam->node,
			    cam->pix.sizeimage, size);
	detail("%s: %s, %ux%u XBGR32, bytesperline %u, sizeimage %u\n", cam->node,
	       (const char *)cap.card, cam->pix.width, cam->pix.height, cam->pix.bytesperline,
	       cam->pix.sizeimage);
	return 0;
}

static void camera_close(struct camera *cam)
{
	struct v4l2_requestbuffers req = {
		.type = V4L2_BUF_TYPE_VIDEO_CAPTURE,
		.memory = V4L2_MEMORY_DMABUF,
	};

	if (cam->fd < 0)
		return;
	/* Frees the driver's hold on the dma-bufs (count 0). */
	xioctl(cam->fd, VIDIOC_REQBUFS, &req);
	close(cam->fd);
	cam->fd = -1;
}

static int request_buffers(struct camera *cam, unsigned int count)
{
	struct v4l2_requestbuffers req = {
		.count = count,
		.type = V4L2_BUF_TYPE_VIDEO_CAPTURE,
		.memory = V4L2_MEMORY_DMABUF,
	};

	if (xioctl(cam->fd, VIDIOC_REQBUFS, &req) < 0)
		return fail("%s: REQBUFS (DMABUF): %s", cam->node, strerror(errno));
	if (req.count < count)
		return fail("%s: REQBUFS gave %u buffers, not %u", cam->node, req.count, count);
	return 0;
}

/* QBUF of a dma-buf: 0 or the kernel's errno. */
static int queue(struct camera *cam, unsigned int index, int fd, size_t size)
{
	struct v4l2_buffer b = {
		.index = index,
		.type = V4L2_BUF_TYPE_VIDEO_CAPTURE,
		.memory = V4L2_MEMORY_DMABUF,
		.length = (uint32_t)size,
	};

	b.m.fd = fd;
	return xioctl(cam->fd, VIDIOC_QBUF, &b) < 0 ? errno : 0;
}

/* Streams until one frame is dequeued; its buffer index and sequence. */
static int capture(struct camera *cam, const struct image *imgs, int n, unsigned int *ret_index,
		   unsigned int *ret_sequence)
{
	enum v4l2_buf_type type = V4L2_BUF_TYPE_VIDEO_CAPTURE;
	struct pollfd pfd = { .fd = cam->fd, .events = POLLIN };
	struct v4l2_buffer b = {
		.type = V4L2_BUF_TYPE_VIDEO_CAPTURE,
		.memory = V4L2_MEMORY_DMABUF,
	};
	int r;

	if (request_buffers(cam, (unsigned int)n))
		return 1;
	for (int i = 0; i < n; i++)
		if ((r = queue(cam, (unsigned int)i, imgs[i].fd, imgs[i].size)) != 0)
			return fail("%s: QBUF of a %s buffer, which the solver chose: %s (%s)",
				    cam->node, ion_heap_get_name(imgs[i].heap), errname(r),
				    strerror(r));
	if (xioctl(cam->fd, VIDIOC_STREAMON, &type) < 0)
		return fail("%s: STREAMON: %s", cam->node, strerror(errno));
	r = poll(&pfd, 1, TIMEOUT_MS);
	if (r <= 0) {
		r = r < 0 ? fail("%s: poll: %s", cam->node, strerror(errno))
			  : fail("%s: no frame within %d ms", cam->node, TIMEOUT_MS);
	} else if (xioctl(cam->fd, VIDIOC_DQBUF, &b) < 0) {
		r = fail("%s: DQBUF: %s", cam->node, strerror(errno));
	} else if ((b.flags & V4L2_BUF_FLAG_ERROR) || b.bytesused < cam->pix.sizeimage ||
		   b.index >= (unsigned int)n) {
		r = fail("%s: frame %u came back marked bad (flags %#x, %u of %u bytes)",
			 cam->node, b.sequence, b.flags, b.bytesused, cam->pix.sizeimage);
	} else {
		*ret_index = b.index;
		*ret_sequence = b.sequence;
		r = 0;
	}
	/* The other buffer stays queued until now: vivid writes no more
	 * into either once streaming is off. */
	if (xioctl(cam->fd, VIDIOC_STREAMOFF, &type) < 0 && r == 0)
		r = fail("%s: STREAMOFF: %s", cam->node, strerror(errno));
	return r;
}

/* ---- the display ---- */

#define MAX_OTHERS 8

struct display {
	const char *node;
	int fd;
	uint32_t crtc, wb_conn, plane;
	uint32_t others[MAX_OTHERS]; /* connectors on the CRTC before */
	int n_others;
	drmModeModeInfo mode;
	uint32_t mode_blob;
	uint32_t fb[2], handle[2]; /* the scanned-out frame, the writeback target */
};

/* A property's id by name; 0 when the object has none. */
static uint32_t prop_id(int fd, uint32_t obj, uint32_t type, const char *name, uint64_t *value)
{
	drmModeObjectProperties *props = drmModeObjectGetProperties(fd, obj, type);
	uint32_t id = 0;

	for (uint32_t i = 0; props && i < props->count_props && !id; i++) {
		drmModePropertyRes *p = drmModeGetProperty(fd, props->props[i]);

		if (p && strcmp(p->name, name) == 0) {
			id = p->prop_id;
			if (value)
				*value = props->prop_values[i];
		}
		drmModeFreeProperty(p);
	}
	drmModeFreeObjectProperties(props);
	return id;
}

/* Adds obj.name = value to the request; 0, or 1 if there is no such property. */
static int set(struct display *d, drmModeAtomicReq *req, uint32_t obj, uint32_t type,
	       const char *name, uint64_t value)
{
	uint32_t id = prop_id(d->fd, obj, type, name, NULL);

	if (!id)
		return fail("%s: object %u has no property %s", d->node, obj, name);
	if (drmModeAtomicAddProperty(req, obj, id, value) < 0)
		return fail("%s: drmModeAtomicAddProperty: out of memory", d->node);
	return 0;
}

static bool writeback_takes_xrgb8888(struct display *d)
{
	uint64_t blob_id = 0;
	drmModePropertyBlobRes *blob;
	bool found = false;

	if (!prop_id(d->fd, d->wb_conn, DRM_MODE_OBJECT_CONNECTOR, "WRITEBACK_PIXEL_FORMATS",
		     &blob_id) ||
	    !(blob = drmModeGetPropertyBlob(d->fd, (uint32_t)blob_id)))
		return false;
	for (size_t i = 0; i < blob->length / sizeof(uint32_t); i++)
		found |= ((const uint32_t *)blob->data)[i] == DRM_FORMAT_XRGB8888;
	drmModeFreePropertyBlob(blob);
	return found;
}

/*
 * The output: the writeback connector, a CRTC that can feed it, a
 * 640x480 mode and the CRTC's primary plane.  The writeback connector is
 * the only connector the commit puts on the CRTC: 6.1's vkms gives each
 * encoder no clone but itself, so the atomic check refuses its virtual
 * connector and its writeback connector on one CRTC (measured: EINVAL,
 * "failed valid clone check for mask 0x3").  The CRTC scans the plane out
 * all the same, and the writeback connector receives what it puts out.
 * Other connectors the CRTC drives now (fbdev's) are taken off it.
 * 0, EXIT_SKIP (no writeback connector) or 1.
 */
static int find_output(struct display *d)
{
	drmModeRes *res = drmModeGetResources(d->fd);
	drmModePlaneRes *planes;
	int crtc_index = -1;

	if (!res)
		return fail("%s: no KMS resources: %s", d->node, strerror(errno));
	for (int i = 0; i < res->count_connectors && !d->wb_conn; i++) {
		drmModeConnector *c = drmModeGetConnector(d->fd, res->connectors[i]);
		drmModeEncoder *e = c && c->count_encoders
					    ? drmModeGetEncoder(d->fd, c->encoders[0])
					    : NULL;

		if (c && e && c->connector_type == DRM_MODE_CONNECTOR_WRITEBACK) {
			for (int k = 0; k < res->count_crtcs && crtc_index < 0; k++)
				if (e->possible_crtcs & (1U << k))
					crtc_index = k;
			for (int m = 0; m < c->count_modes; m++) {
				const drmModeModeInfo *mode = &c->modes[m];

				/* 60 Hz if there is one: any would do. */
				if (mode->hdisplay == WIDTH && mode->vdisplay == HEIGHT &&
				    (!d->mode.hdisplay || mode->vrefresh == 60))
					d->mode = *mode;
			}
			if (crtc_index >= 0)
				d->wb_conn = c->connector_id;
		}
		drmModeFreeEncoder(e);
		drmModeFreeConnector(c);
	}
	if (d->wb_conn)
		d->crtc = res->crtcs[crtc_index];
	for (int i = 0; d->wb_conn && i < res->count_connectors; i++) {
		uint64_t crtc = 0;

		if (res->connectors[i] != d->wb_conn &&
		    prop_id(d->fd, res->connectors[i], DRM_MODE_OBJECT_CONNECTOR, "CRTC_ID", &crtc) &&
		    crtc == d->crtc && d->n_others < MAX_OTHERS)
			d->others[d->n_others++] = res->connectors[i];
	}
	drmModeFreeResources(res);
	if (!d->wb_conn) {
		say("%s has no writeback connector (vkms enable_writeback=0?): "
		    "the scan-out cannot be read back\n", d->node);
		return EXIT_SKIP;
	}
	if (!d->mode.hdisplay)
		return fail("%s: the writeback connector has no %ux%u mode", d->node, WIDTH, HEIGHT);
	planes = drmModeGetPlaneResources(d->fd);
	for (uint32_t i = 0; planes && i < planes->count_planes && !d->plane; i++) {
		drmModePlane *p = drmModeGetPlane(d->fd, planes->planes[i]);
		uint64_t type = 0;

		if (p && (p->possible_crtcs & (1U << crtc_index)) &&
		    prop_id(d->fd, p->plane_id, DRM_MODE_OBJECT_PLANE, "type", &type) &&
		    type == DRM_PLANE_TYPE_PRIMARY)
			d->plane = p->plane_id;
		drmModeFreePlane(p);
	}
	drmModeFreePlaneResources(planes);
	if (!d->plane)
		return fail("%s: no primary plane for CRTC %u", d->node, d->crtc);
	if (!writeback_takes_xrgb8888(d))
		return fail("%s: the writeback connector does not write XRGB8888", d->node);
	detail("%s: writeback connector %u, CRTC %u, mode %s (%u Hz), primary plane %u%s\n",
	       d->node, d->wb_conn, d->crtc, d->mode.name, d->mode.vrefresh, d->plane,
	       d->n_others ? ", other connectors taken off the CRTC" : "");
	return 0;
}

/* Opens the display as DRM master, with atomic and writeback connectors
 * visible.  0, EXIT_SKIP or 1. */
static int display_open(struct display *d)
{
	d->fd = open(d->node, O_RDWR | O_CLOEXEC);
	if (d->fd < 0)
		return fail("%s: %s", d->node, strerror(errno));
	/* The first opener of a card without a master becomes its master;
	 * else ask (root may, while no one else holds it). */
	if (!drmIsMaster(d->fd) && drmSetMaster(d->fd) != 0)
		return fail("%s: cannot become DRM master (a compositor on it?): %s", d->node,
			    strerror(errno));
	if (drmSetClientCap(d->fd, DRM_CLIENT_CAP_ATOMIC, 1) != 0)
		return fail("%s: no atomic modesetting: %s", d->node, strerror(errno));
	/* Writeback connectors stay hidden from clients that do not ask. */
	if (drmSetClientCap(d->fd, DRM_CLIENT_CAP_WRITEBACK_CONNECTORS, 1) != 0) {
		say("%s offers no writeback connectors (%s): the scan-out cannot be read back\n",
		    d->node, strerror(errno));
		return EXIT_SKIP;
	}
	return find_output(d);
}

/* A framebuffer of the image, imported by PRIME at the library's stride. */
static int add_fb(struct display *d, const struct image *img, int slot)
{
	uint32_t handles[4] = { 0 }, pitches[4] = { img->stride };
	uint32_t offsets[4] = { (uint32_t)img->offset };

	if (drmPrimeFDToHandle(d->fd, img->fd, &d->handle[slot]) != 0)
		return fail("%s: PRIME import of a %s buffer: %s", d->node,
			    ion_heap_get_name(img->heap), strerror(errno));
	handles[0] = d->handle[slot];
	if (drmModeAddFB2(d->fd, WIDTH, HEIGHT, DRM_FORMAT_XRGB8888, handles, pitches, offsets,
			  &d->fb[slot], 0) != 0)
		return fail("%s: AddFB2 XRGB8888 %ux%u, stride %u, of a %s buffer: %s", d->node,
			    WIDTH, HEIGHT, img->stride, ion_heap_get_name(img->heap),
			    strerror(errno));
	return 0;
}

/*
 * Whether this display is a vkms that gives an imported buffer's pages
 * back to the page allocator when it lets go of them.  5.10's vkms has
 * GEM code of its own (vkms_gem.c; 6.1's uses the shmem helpers, since
 * 5.11 as far as the history goes): an imported object keeps the
 * exporter's pages, and vkms_gem_vunmap() hands them to
 * drm_gem_put_pages() as if vkms had allocated them, when a plane stops
 * showing the framebuffer and as soon as a writeback job is done.
 * Measured on 5.10.223: a system-heap writeback target read back with its
 * last rows changed (all zeros under init_on_free=1), and the page
 * allocator faulted later (list poison); with a dumb buffer of vkms's
 * own as the target instead (a variant of this program), the frame came
 * back equal, but the reserved buffer scanned out read all zeros under
 * init_on_free=1 once the plane was off, and unmapping and freeing it
 * then gave "BUG: Bad page state".  No heap can be scanned out safely there,
 * whatever the solver says (heaps.d cannot match a kernel version).
 */
static bool frees_imported_pages(const char *driver)
{
	struct utsname u;
	unsigned int major = 0, minor = 0;

	if (!driver || strcmp(driver, "vkms") != 0 || uname(&u) < 0 ||
	    sscanf(u.release, "%u.%u", &major, &minor) != 2)
		return false;
	return major < 5 || (major == 5 && minor < 11);
}

/*
 * One atomic modeset: the mode on the CRTC, the writeback connector
 * alone on it (see find_output()), the primary plane showing the frame
 * over the whole screen, and the writeback connector writing what the
 * CRTC puts out into the second framebuffer.  Waits for the writeback's
 * out-fence: vkms maps both buffers in the kernel and composes with the
 * CPU at the next (simulated) vblank.
 */
static int scan_out(struct display *d)
{
	drmModeAtomicReq *req = drmModeAtomicAlloc();
	int32_t out_fence = -1;
	struct pollfd pfd;
	int r = 0;

	if (!req)
		return fail("drmModeAtomicAlloc: out of memory");
	if (drmModeCreatePropertyBlob(d->fd, &d->mode, sizeof(d->mode), &d->mode_blob) != 0)
		r = fail("%s: mode blob: %s", d->node, strerror(errno));
	r = r ?: set(d, req, d->crtc, DRM_MODE_OBJECT_CRTC, "MODE_ID", d->mode_blob);
	r = r ?: set(d, req, d->crtc, DRM_MODE_OBJECT_CRTC, "ACTIVE", 1);
	for (int i = 0; i < d->n_others; i++)
		r = r ?: set(d, req, d->others[i], DRM_MODE_OBJECT_CONNECTOR, "CRTC_ID", 0);
	r = r ?: set(d, req, d->plane, DRM_MODE_OBJECT_PLANE, "FB_ID", d->fb[0]);
	r = r ?: set(d, req, d->plane, DRM_MODE_OBJECT_PLANE, "CRTC_ID", d->crtc);
	/* Source rectangle in 16.16 fixed point, destination in pixels. */
	r = r ?: set(d, req, d->plane, DRM_MODE_OBJECT_PLANE, "SRC_X", 0);
	r = r ?: set(d, req, d->plane, DRM_MODE_OBJECT_PLANE, "SRC_Y", 0);
	r = r ?: set(d, req, d->plane, DRM_MODE_OBJECT_PLANE, "SRC_W", (uint64_t)WIDTH << 16);
	r = r ?: set(d, req, d->plane, DRM_MODE_OBJECT_PLANE, "SRC_H", (uint64_t)HEIGHT << 16);
	r = r ?: set(d, req, d->plane, DRM_MODE_OBJECT_PLANE, "CRTC_X", 0);
	r = r ?: set(d, req, d->plane, DRM_MODE_OBJECT_PLANE, "CRTC_Y", 0);
	r = r ?: set(d, req, d->plane, DRM_MODE_OBJECT_PLANE, "CRTC_W", WIDTH);
	r = r ?: set(d, req, d->plane, DRM_MODE_OBJECT_PLANE, "CRTC_H", HEIGHT);
	r = r ?: set(d, req, d->wb_conn, DRM_MODE_OBJECT_CONNECTOR, "CRTC_ID", d->crtc);
	r = r ?: set(d, req, d->wb_conn, DRM_MODE_OBJECT_CONNECTOR, "WRITEBACK_FB_ID", d->fb[1]);
	r = r ?: set(d, req, d->wb_conn, DRM_MODE_OBJECT_CONNECTOR, "WRITEBACK_OUT_FENCE_PTR",
		     (uint64_t)(uintptr_t)&out_fence);
	if (r == 0 && drmModeAtomicCommit(d->fd, req, DRM_MODE_ATOMIC_ALLOW_MODESET, NULL) != 0)
		r = fail("%s: atomic commit (scan-out with writeback): %s", d->node,
			 strerror(errno));
	drmModeAtomicFree(req);
	if (r)
		return r;
	if (out_fence < 0)
		return fail("%s: the commit returned no writeback out-fence", d->node);
	pfd = (struct pollfd){ .fd = out_fence, .events = POLLIN };
	r = poll(&pfd, 1, TIMEOUT_MS);
	close(out_fence);
	if (r < 0)
		return fail("%s: poll on the writeback fence: %s", d->node, strerror(errno));
	if (r == 0)
		return fail("%s: the writeback did not complete within %d ms", d->node, TIMEOUT_MS);
	return 0;
}

/* Turns the output off again, so that no framebuffer of ours stays on
 * screen; 0 or 1. */
static int display_off(struct display *d)
{
	drmModeAtomicReq *req = drmModeAtomicAlloc();
	int r = 0;

	if (!req)
		return fail("drmModeAtomicAlloc: out of memory");
	r = r ?: set(d, req, d->plane, DRM_MODE_OBJECT_PLANE, "FB_ID", 0);
	r = r ?: set(d, req, d->plane, DRM_MODE_OBJECT_PLANE, "CRTC_ID", 0);
	r = r ?: set(d, req, d->wb_conn, DRM_MODE_OBJECT_CONNECTOR, "CRTC_ID", 0);
	r = r ?: set(d, req, d->crtc, DRM_MODE_OBJECT_CRTC, "MODE_ID", 0);
	r = r ?: set(d, req, d->crtc, DRM_MODE_OBJECT_CRTC, "ACTIVE", 0);
	if (r == 0 && drmModeAtomicCommit(d->fd, req, DRM_MODE_ATOMIC_ALLOW_MODESET, NULL) != 0)
		r = fail("%s: atomic commit (output off): %s", d->node, strerror(errno));
	drmModeAtomicFree(req);
	return r;
}

static void display_close(struct display *d)
{
	if (d->fd < 0)
		return;
	for (int i = 0; i < 2; i++) {
		struct drm_gem_close arg = { .handle = d->handle[i] };

		if (d->fb[i])
			drmModeRmFB(d->fd, d->fb[i]);
		if (d->handle[i])
			drmIoctl(d->fd, DRM_IOCTL_GEM_CLOSE, &arg);
	}
	if (d->mode_blob)
		drmModeDestroyPropertyBlob(d->fd, d->mode_blob);
	close(d->fd);
	d->fd = -1;
}

/* ---- the comparison ---- */

/* A frame as the CPU sees it. */
struct view {
	const unsigned char *p;	/* the first pixel */
	unsigned int stride;
};

struct mapping {
	const unsigned char *base;
	size_t size;
	int fd;			/* to sync, or -1 */
};

static int map_for_reading(const struct image *img, struct mapping *m, struct view *v)
{
	void *p = mmap(NULL, img->size, PROT_READ, MAP_SHARED, img->fd, 0);
	int r;

	if (p == MAP_FAILED)
		return fail("mmap of a %s buffer: %s", ion_heap_get_name(img->heap),
			    strerror(errno));
	*m = (struct mapping){ p, img->size, img->fd };
	*v = (struct view){ m->base + img->offset, img->stride };
	/* Devices wrote it: the CPU's caches must not show older data. */
	if ((r = ion_sync(img->fd, ION_SYNC_START | ION_SYNC_READ)) < 0)
		return fail("ion_sync: %s", strerror(-r));
	return 0;
}

static void unmap(struct mapping *m)
{
	if (!m->base)
		return;
	if (m->fd >= 0)
		ion_sync(m->fd, ION_SYNC_END | ION_SYNC_READ);
	munmap((void *)m->base, m->size);
	m->base = NULL;
}

/*
 * A captured frame of one colour proves nothing (an untouched buffer is
 * one colour too, and so is one written back from it): 0 when a's pixels
 * differ somewhere in B, G or R, else a failure.
 */
static int check_not_uniform(struct view a)
{
	for (unsigned int y = 0; y < HEIGHT; y++) {
		const unsigned char *pa = a.p + (size_t)y * a.stride;

		for (unsigned int x = 0; x < WIDTH; x++, pa += 4)
			if (memcmp(pa, a.p, 3) != 0)
				return 0;
	}
	return fail("the captured frame is one colour (B,G,R %u,%u,%u): did the camera "
		    "write at all?", a.p[0], a.p[1], a.p[2]);
}

/*
 * Pixel for pixel, the colour bytes only.  XRGB8888 (XBGR32 to V4L2) is
 * B, G, R, X in memory, and X is no part of the pixel: the display
 * ignores it, and nothing promises to carry it through.  Measured: vivid
 * writes 0 there; 6.1's vkms composes in 16-bit ARGB and writes 0xff into
 * the writeback buffer, 5.10's copies the frame's bytes as they are.  So
 * B, G and R of every pixel must be equal, and X is only reported (-v).
 * A captured frame of one colour fails (check_not_uniform()).
 */
static int compare(struct view a, struct view b, const char *display)
{
	unsigned long differ = 0;

	for (unsigned int y = 0; y < HEIGHT; y++) {
		const unsigned char *pa = a.p + (size_t)y * a.stride;
		const unsigned char *pb = b.p + (size_t)y * b.stride;

		for (unsigned int x = 0; x < WIDTH; x++, pa += 4, pb += 4) {
			if (memcmp(pa, pb, 3) == 0)
				continue;
			if (differ++ == 0)
				say("  first difference at (%u, %u): captured B,G,R %u,%u,%u, "
				    "written back %u,%u,%u\n", x, y, pa[0], pa[1], pa[2], pb[0],
				    pb[1], pb[2]);
		}
	}
	detail("X bytes of pixel (0, 0): captured %#04x, written back %#04x\n", a.p[3], b.p[3]);
	if (check_not_uniform(a))
		return 1;
	if (differ)
		return fail("%s wrote back %ux%u: %lu of %u pixels differ from the captured frame",
			    display, WIDTH, HEIGHT, differ, WIDTH * HEIGHT);
	say("%s wrote back %ux%u: equal to the captured frame (B, G, R of all %u pixels)\n",
	    display, WIDTH, HEIGHT, WIDTH * HEIGHT);
	return 0;
}

/* ---- the refusal ---- */

/* The kernel log from now on, where this process may read it. */
static int kmsg_open(void)
{
	int fd = open("/dev/kmsg", O_RDONLY | O_NONBLOCK | O_CLOEXEC);

	if (fd >= 0 && lseek(fd, 0, SEEK_END) < 0) {
		close(fd);
		fd = -1;
	}
	return fd;
}

/* What the kernel logged since kmsg_open(), the messages only. */
static void kmsg_read(int fd, char *out, size_t size)
{
	char rec[1024];
	size_t len = 0;
	ssize_t n;

	out[0] = '\0';
	while (fd >= 0 && len < size && (n = read(fd, rec, sizeof(rec) - 1)) != 0) {
		const char *msg;

		if (n < 0) {
			if (errno == EPIPE) /* records overwritten: go on */
				continue;
			break;
		}
		rec[n] = '\0';
		/* "priority,sequence,time,flags;message\n" and continuation lines. */
		msg = strchr(rec, ';');
		if (!msg)
			continue;
		msg++;
		len += (size_t)snprintf(out + len, size - len, "%s%.*s", len ? " / " : "",
					(int)strcspn(msg, "\n"), msg);
	}
}

/*
 * Whether the buffer's pages lie one after another in physical memory,
 * by /proc/self/pagemap: 1 yes, 0 no, -1 cannot tell (frame numbers
 * show only to CAP_SYS_ADMIN).
 */
static int physically_contiguous(int fd, size_t size)
{
	long page = sysconf(_SC_PAGESIZE);
	int pm = open("/proc/self/pagemap", O_RDONLY | O_CLOEXEC), r = 1;
	volatile const unsigned char *p;
	uint64_t prev = 0;

	if (pm < 0)
		return -1;
	p = mmap(NULL, size, PROT_READ, MAP_SHARED, fd, 0);
	if (p == MAP_FAILED) {
		close(pm);
		return -1;
	}
	for (size_t off = 0; off < size && r == 1; off += (size_t)page) {
		uint64_t entry = 0, pfn;

		(void)p[off]; /* fault it in */
		if (pread(pm, &entry, sizeof(entry),
			  (off_t)(((uintptr_t)p + off) / (uintptr_t)page * sizeof(entry))) !=
		    (ssize_t)sizeof(entry))
			r = -1;
		pfn = entry & ((UINT64_C(1) << 55) - 1);
		if (r == 1 && (!(entry >> 63) || pfn == 0))
			r = -1;
		else if (r == 1 && off > 0 && pfn != prev + 1)
			r = 0;
		prev = pfn;
	}
	munmap((void *)p, size);
	close(pm);
	return r;
}

/*
 * The capture again, into buffers of a heap the solver rejected for the
 * pair: the kernel must refuse them at QBUF.  0 when it did, 1 when it
 * took them (or something else failed).
 */
static int show_refusal(struct ion_ctx *ctx, struct ion_device *const *devs, int n,
			const char *names, struct camera *cam, const struct image *like)
{
	struct ion_solution *sol;
	const struct ion_heap *heap = NULL;
	char reasons[1024] = "", klog[512];
	int bufs[REFUSAL_ATTEMPTS * N_CAPTURE], n_bufs = 0, r = 1, err = 0;
	size_t len = 0;

	if (solve_like(ctx, devs, n, like->size, &sol))
		return 1;
	for (int i = 0; i < ion_solution_get_rejection_count(sol); i++) {
		const struct ion_heap *h;
		const struct ion_device *d;
		const char *reason;

		if (ion_solution_get_rejection(sol, (unsigned int)i, &h, &d, &reason) < 0 ||
		    strcmp(ion_heap_get_name(h), REJECTED_HEAP) != 0 || len >= sizeof(reasons))
			continue;
		heap = h;
		len += (size_t)snprintf(reasons + len, sizeof(reasons) - len, "%s%s",
					len ? "; " : "", reason);
	}
	ion_solution_unref(sol);
	if (!heap) {
		/* Elsewhere a board may well let the camera take it; the test
		 * VM runs this sample to show the refusal, and its board file
		 * makes the default camera (vivid-000) refuse it, so there this
		 * is a broken solver or board file, or the wrong camera. */
		if (getenv("LIBION_IN_VM"))
			return fail("the solver rejects no %s buffer for %s: in the test VM there "
				    "must be a refusal to show (its board file makes vivid-000, the "
				    "default camera, need contiguous memory)", REJECTED_HEAP, names);
		say("the solver rejects no %s buffer for %s: there is no refusal to show\n",
		    REJECTED_HEAP, names);
		return 0;
	}
	say("%s, which the solver rejected for %s: %s\n", REJECTED_HEAP, names, reasons);

	for (int attempt = 0; attempt < REFUSAL_ATTEMPTS; attempt++) {
		int kmsg = kmsg_open(), contiguous;

		for (int i = 0; i < N_CAPTURE; i++) {
			int k = ion_ctx_alloc(ctx, REJECTED_HEAP, like->size, 0, &bufs[n_bufs]);

			if (k < 0) {
				r = fail("%s: %zu bytes: %s", REJECTED_HEAP, like->size, strerror(-k));
				goto out;
			}
			n_bufs++;
		}
		if (camera_open(cam, like->stride, like->size) ||
		    request_buffers(cam, N_CAPTURE)) {
			if (kmsg >= 0)
				close(kmsg);
			goto out;
		}
		for (int i = 0; i < N_CAPTURE && !err; i++)
			err = queue(cam, (unsigned int)i, bufs[n_bufs - N_CAPTURE + i], like->size);
		camera_close(cam);
		kmsg_read(kmsg, klog, sizeof(klog));
		if (kmsg >= 0)
			close(kmsg);
		if (err) {
			say("  the kernel agrees: QBUF on %s failed with %s (%s)\n", cam->node,
			    errname(err), strerror(err));
			if (klog[0])
				say("  kernel log: %s\n", klog);
			r = err == EFAULT ? 0
					  : fail("QBUF answered %s, not EFAULT (the refusal of "
						 "memory a device cannot reach)", errname(err));
			goto out;
		}
		/* Taken: only a chance of the allocator can excuse that. */
		contiguous = 1;
		for (int i = 0; i < N_CAPTURE && contiguous == 1; i++)
			contiguous = physically_contiguous(bufs[n_bufs - N_CAPTURE + i], like->size);
		if (contiguous != 1) {
			r = fail("the kernel took %s buffers (QBUF on %s succeeded)%s, which the "
				 "solver rejected: %s", REJECTED_HEAP, cam->node,
				 contiguous == 0 ? ", and they are scattered (pagemap)" : "",
				 reasons);
			goto out;
		}
		say("  the kernel took them: these %s buffers happen to be physically "
		    "contiguous (pagemap); trying new ones\n", REJECTED_HEAP);
	}
	r = fail("%d pairs of %s buffers in a row were contiguous by chance", REFUSAL_ATTEMPTS,
		 REJECTED_HEAP);
out:
	for (int i = 0; i < n_bufs; i++)
		close(bufs[i]);
	return r;
}

/* ---- main ---- */

static void usage(FILE *f)
{
	fprintf(f, "usage: test-camera-display [--device-video PATH] [--device-drm PATH]\n"
		   "                           [--heaps-path DIR:...] [--expect-stride N] [-v]\n\n"
		   "Captures a frame from a V4L2 camera (default: vivid's dma-contig instance)\n"
		   "into a buffer the library allocates for the camera and a KMS display\n"
		   "(default: vkms) together, scans it out with the display's writeback\n"
		   "connector attached, and checks that the frame written back equals the\n"
		   "captured one; then shows the kernel refusing a buffer of a heap the\n"
		   "solver rejected.  Exit status 0 when both hold, 1 otherwise, 77 when\n"
		   "there is no such camera or display here.  On Linux 5.10, whose vkms frees\n"
		   "the pages of the buffers it imports, nothing is scanned out.\n"
		   "--heaps-path reads these heaps.d folders instead of the defaults (a\n"
		   "PitchAlignment fixture beside the board's files); --expect-stride fails\n"
		   "unless the frames' rows are laid out N bytes apart.\n");
}

int main(int argc, char **argv)
{
	static const struct option options[] = {
		{ "device-video", required_argument, NULL, 'V' },
		{ "device-drm", required_argument, NULL, 'D' },
		{ "heaps-path", required_argument, NULL, 'P' },
		{ "expect-stride", required_argument, NULL, 'S' },
		{ "verbose", no_argument, NULL, 'v' },
		{ "help", no_argument, NULL, 'h' },
		{ 0 },
	};
	const char *video_spec = NULL, *drm_spec = NULL, *heaps_path = NULL;
	unsigned long expect_stride = 0;
	struct ion_ctx *ctx = NULL;
	struct ion_device *camera_dev = NULL, *display_dev = NULL;
	struct image frames[N_CAPTURE] = { 0 }, wb = { 0 };
	struct camera cam = { .fd = -1 };
	struct display disp = { .fd = -1 };
	struct mapping cap_map = { .fd = -1 }, wb_map = { .fd = -1 };
	struct view cap_view, wb_view;
	char names[128];
	unsigned int index = 0, sequence = 0;
	int c, r;

	while ((c = getopt_long(argc, argv, "vh", options, NULL)) != -1) {
		switch (c) {
		case 'V':
			video_spec = optarg;
			break;
		case 'D':
			drm_spec = optarg;
			break;
		case 'P':
			heaps_path = optarg;
			break;
		case 'S':
			expect_stride = strtoul(optarg, NULL, 10);
			break;
		case 'v':
			verbose = 1;
			break;
		case 'h':
			usage(stdout);
			return 0;
		default:
			usage(stderr);
			return 2;
		}
	}
	if (optind < argc) {
		usage(stderr);
		return 2;
	}
	if ((r = ion_ctx_new(NULL, &ctx)) < 0)
		return fail("ion_ctx_new: %s", strerror(-r));
	if (heaps_path && (r = ion_ctx_set_heaps_path(ctx, heaps_path)) < 0) {
		ion_ctx_unref(ctx);
		return fail("ion_ctx_set_heaps_path: %s", strerror(-r));
	}
	r = find_camera(ctx, video_spec, &camera_dev);
	r = r ?: find_display(ctx, drm_spec, &display_dev);
	if (r)
		goto out;
	cam.node = ion_device_get_devnode(camera_dev);
	disp.node = ion_device_get_devnode(display_dev);
	if (!cam.node || !disp.node) {
		r = fail("%s has no device node",
			 ion_device_get_name(cam.node ? display_dev : camera_dev));
		goto out;
	}
	show_device("camera", camera_dev);
	show_device("display", display_dev);
	/* Before any allocation: a display without writeback is a skip. */
	if ((r = display_open(&disp)))
		goto out;

	/* 1. Both capture buffers solved for the pair, the same way. */
	{
		struct ion_device *pair[] = { camera_dev, display_dev };

		device_names(pair, 2, names, sizeof(names));
		for (int i = 0; i < N_CAPTURE && !r; i++)
			r = new_image(ctx, pair, 2, &frames[i]);
		r = r ?: explain_choice(ctx, pair, 2, &frames[0], names);
		if (r)
			goto out;
	}
	/* A PitchAlignment from a heaps.d file reaches the layout, and the
	 * camera and the display below must take the rows that far apart. */
	if (expect_stride && frames[0].stride != expect_stride) {
		r = fail("the frame's rows are %u bytes apart, not %lu", frames[0].stride,
			 expect_stride);
		goto out;
	}
	for (int i = 1; i < N_CAPTURE; i++)
		if (frames[i].heap != frames[0].heap || frames[i].stride != frames[0].stride) {
			r = fail("the two capture buffers came out different: %s, %s",
				 ion_heap_get_name(frames[0].heap), ion_heap_get_name(frames[i].heap));
			goto out;
		}

	/* 2. One frame. */
	if ((r = camera_open(&cam, frames[0].stride, frames[0].size)) ||
	    (r = capture(&cam, frames, N_CAPTURE, &index, &sequence)))
		goto out;
	camera_close(&cam);
	say("captured frame %u into %s (%s, chosen for %s): %ux%u XBGR32, stride %u\n",
	    sequence, ion_heap_get_name(frames[index].heap),
	    ion_heap_get_properties(frames[index].heap) & ION_HEAP_PROP_CONTIGUOUS
		    ? "contiguous"
		    : "scattered",
	    names, WIDTH, HEIGHT, frames[index].stride);

	/* 3. Scanned out, and written back into a buffer for the display alone. */
	if (frees_imported_pages(ion_device_get_driver(display_dev))) {
		struct utsname u;

		uname(&u);
		say("%s not scanned out: vkms of Linux %s gives an imported buffer's pages back "
		    "to the kernel when it lets go of it, which corrupts memory (see "
		    "frees_imported_pages())\n", ion_device_get_name(display_dev), u.release);
		display_close(&disp);
		/* What is left to check: that the camera wrote a frame at all. */
		r = map_for_reading(&frames[index], &cap_map, &cap_view) ?:
		    check_not_uniform(cap_view);
		unmap(&cap_map);
		if (r)
			goto out;
		say("the captured frame is not one colour: the camera wrote it (checked alone, "
		    "with no written-back frame to compare)\n");
		goto refusal;
	}
	if ((r = new_image(ctx, &display_dev, 1, &wb)) || (r = add_fb(&disp, &frames[index], 0)) ||
	    (r = add_fb(&disp, &wb, 1)) || (r = scan_out(&disp)))
		goto out;
	say("%s scanned it out (atomic modeset %s, primary plane full-screen), writeback "
	    "into %s (solved for %s alone)\n", ion_device_get_name(display_dev), disp.mode.name,
	    ion_heap_get_name(wb.heap), ion_device_get_name(display_dev));

	/* 4. The same pixels. */
	r = map_for_reading(&frames[index], &cap_map, &cap_view) ?:
	    map_for_reading(&wb, &wb_map, &wb_view);
	r = r ?: compare(cap_view, wb_view, ion_device_get_driver(display_dev) ?: disp.node);
	unmap(&cap_map);
	unmap(&wb_map);
	r = display_off(&disp) ?: r;
	display_close(&disp);
	if (r)
		goto out;

refusal:
	/* 5. A heap the solver rejected: the kernel's refusal. */
	{
		struct ion_device *pair[] = { camera_dev, display_dev };

		r = show_refusal(ctx, pair, 2, names, &cam, &frames[0]);
	}
out:
	unmap(&cap_map);
	unmap(&wb_map);
	camera_close(&cam);
	display_close(&disp);
	free_image(&wb);
	for (int i = 0; i < N_CAPTURE; i++)
		free_image(&frames[i]);
	ion_device_unref(camera_dev);
	ion_device_unref(display_dev);
	ion_ctx_unref(ctx);
	return r;
}
