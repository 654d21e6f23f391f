// SPDX-License-Identifier: MIT
/*
 * camera-display: one camera frame on a display, with no copy.
 *
 * The buffer is an XRGB8888 image that both devices are attached to, so
 * libion allocates it from a heap that suits the camera and the display
 * (ion_buffer_get_fd() solves and allocates; its reason says why when no
 * heap fits).  The camera captures into it (V4L2_MEMORY_DMABUF), and the
 * display scans the very same buffer out (PRIME import, AddFB2, SetCrtc).
 *
 *   cc camera-display.c $(pkg-config --cflags --libs libion libdrm)
 *   ./camera-display video0 card1
 *
 * Exit status: 0 when the frame was shown, 77 when there is no such camera
 * or display here, 1 on a failure.  tests/integration/test-camera-display.c
 * is the same pipeline with every check the test VM makes.
 */
#define _POSIX_C_SOURCE 200809L /* O_CLOEXEC, struct timespec */
#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <string.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include <fcntl.h>
#include <linux/videodev2.h>
#include <drm_fourcc.h>
#include <xf86drm.h>
#include <xf86drmMode.h>

#include <ion/ion.h>

#define WIDTH 640
#define HEIGHT 480

static int xioctl(int fd, unsigned long request, void *arg)
{
	int r;

	do
		r = ioctl(fd, request, arg);
	while (r < 0 && errno == EINTR);
	return r < 0 ? -errno : 0;
}

/* One frame into the buffer fd: XBGR32 is DRM's XRGB8888 byte for byte.
 * Two buffers are queued (the same memory twice), as some vivid versions
 * start streaming only with two. */
static int capture(const char *node, int fd, unsigned int stride, size_t size)
{
	struct v4l2_format fmt = { .type = V4L2_BUF_TYPE_VIDEO_CAPTURE };
	struct v4l2_requestbuffers req = { .count = 2, .type = V4L2_BUF_TYPE_VIDEO_CAPTURE,
					   .memory = V4L2_MEMORY_DMABUF };
	enum v4l2_buf_type type = V4L2_BUF_TYPE_VIDEO_CAPTURE;
	int cam = open(node, O_RDWR | O_CLOEXEC), r;

	if (cam < 0)
		return -errno;
	fmt.fmt.pix = (struct v4l2_pix_format){ .width = WIDTH, .height = HEIGHT,
		.pixelformat = V4L2_PIX_FMT_XBGR32, .field = V4L2_FIELD_NONE,
		.bytesperline = stride, .sizeimage = (unsigned int)size };
	r = xioctl(cam, VIDIOC_S_FMT, &fmt);
	if (r == 0 && (fmt.fmt.pix.width != WIDTH || fmt.fmt.pix.bytesperline != stride))
		r = -EINVAL; /* the camera wants another layout */
	if (r == 0)
		r = xioctl(cam, VIDIOC_REQBUFS, &req);
	for (unsigned int i = 0; r == 0 && i < 2; i++) {
		struct v4l2_buffer buf = { .index = i, .type = V4L2_BUF_TYPE_VIDEO_CAPTURE,
					   .memory = V4L2_MEMORY_DMABUF, .length = (unsigned int)size };

		buf.m.fd = fd;
		r = xioctl(cam, VIDIOC_QBUF, &buf);
	}
	if (r == 0)
		r = xioctl(cam, VIDIOC_STREAMON, &type);
	if (r == 0) {
		struct pollfd p = { .fd = cam, .events = POLLIN };
		struct v4l2_buffer buf = { .type = V4L2_BUF_TYPE_VIDEO_CAPTURE,
					   .memory = V4L2_MEMORY_DMABUF };

		r = poll(&p, 1, 5000) == 1 ? xioctl(cam, VIDIOC_DQBUF, &buf) : -ETIMEDOUT;
		xioctl(cam, VIDIOC_STREAMOFF, &type);
	}
	req.count = 0; /* the camera lets go of the buffer */
	xioctl(cam, VIDIOC_REQBUFS, &req);
	close(cam);
	return r;
}

/* The index of the first CRTC the encoder can drive, or -1. */
static int first_crtc(const drmModeRes *res, const drmModeEncoder *enc)
{
	for (int i = 0; i < res->count_crtcs && i < 32; i++)
		if (enc->possible_crtcs & (1u << i))
			return i;
	return -1;
}

/* Shows the buffer on the first connected connector that has a
 * WIDTHxHEIGHT mode, for two seconds. */
static int show(const char *node, int fd, unsigned int stride)
{
	int card = open(node, O_RDWR | O_CLOEXEC), r = -ENODEV;
	uint32_t handle, fb = 0;
	drmModeRes *res;

	if (card < 0)
		return -errno;
	res = drmModeGetResources(card);
	if (res && drmPrimeFDToHandle(card, fd, &handle) == 0) {
		uint32_t handles[4] = { handle }, pitches[4] = { stride }, offsets[4] = { 0 };

		if (drmModeAddFB2(card, WIDTH, HEIGHT, DRM_FORMAT_XRGB8888, handles, pitches,
				  offsets, &fb, 0))
			r = -errno;
	}
	for (int i = 0; fb && res && i < res->count_connectors && r == -ENODEV; i++) {
		drmModeConnector *conn = drmModeGetConnector(card, res->connectors[i]);
		drmModeEncoder *enc = conn && conn->count_encoders
					      ? drmModeGetEncoder(card, conn->encoders[0]) : NULL;

		for (int m = 0; enc && conn->connection == DRM_MODE_CONNECTED &&
				m < conn->count_modes && r == -ENODEV; m++) {
			drmModeModeInfo *mode = &conn->modes[m];
			int crtc = first_crtc(res, enc);

			if (mode->hdisplay != WIDTH || mode->vdisplay != HEIGHT || crtc < 0)
				continue;
			r = drmModeSetCrtc(card, res->crtcs[crtc], fb, 0, 0, &conn->connector_id,
					   1, mode) ? -errno : 0;
			if (r == 0) {
				printf("shown on %s: connector %u, %s\n", node, conn->connector_id,
				       mode->name);
				sleep(2);
				drmModeSetCrtc(card, res->crtcs[crtc], 0, 0, 0, NULL, 0, NULL);
			}
		}
		drmModeFreeEncoder(enc);
		drmModeFreeConnector(conn);
	}
	if (fb)
		drmModeRmFB(card, fb);
	drmModeFreeResources(res);
	close(card);
	return r;
}

int main(int argc, char **argv)
{
	const char *camera_name = argc > 1 ? argv[1] : "video0";
	const char *display_name = argc > 2 ? argv[2] : "card0";
	struct ion_device *camera = NULL, *display = NULL;
	struct ion_buffer *frame = NULL;
	struct ion_ctx *ctx;
	unsigned int stride;
	size_t offset;
	int fd, r;

	if (ion_ctx_new(NULL, &ctx) < 0)
		return 1;
	if (ion_ctx_get_device(ctx, camera_name, &camera) < 0 ||
	    ion_ctx_get_device(ctx, display_name, &display) < 0 ||
	    !ion_device_get_devnode(camera) || !ion_device_get_devnode(display)) {
		fprintf(stderr, "no %s or no %s here\n", camera_name, display_name);
		r = 77;
		goto out;
	}
	r = ion_buffer_new_image(ctx, DRM_FORMAT_XRGB8888, WIDTH, HEIGHT, &frame);
	if (r == 0)
		r = ion_buffer_attach(frame, camera);
	if (r == 0)
		r = ion_buffer_attach(frame, display);
	if (r == 0)
		r = ion_buffer_get_fd(frame, &fd); /* solves, then allocates */
	if (r < 0) {
		fprintf(stderr, "no buffer: %s\n",
			ion_buffer_get_reason(frame) ? ion_buffer_get_reason(frame) : strerror(-r));
		r = 1;
		goto out;
	}
	ion_buffer_get_plane(frame, 0, &stride, &offset);
	printf("a %ux%u frame from %s, chosen for %s and %s, stride %u\n", WIDTH, HEIGHT,
	       ion_heap_get_name(ion_buffer_get_heap(frame)), camera_name, display_name, stride);
	r = capture(ion_device_get_devnode(camera), fd, stride, ion_buffer_get_size(frame));
	if (r == 0)
		printf("captured by %s\n", camera_name);
	if (r == 0)
		r = show(ion_device_get_devnode(display), fd, stride);
	if (r < 0)
		fprintf(stderr, "%s: %s\n", r == -ENODEV ? "no connector shows it" : "failed",
			strerror(-r));
	r = r < 0;
out:
	ion_buffer_unref(frame);
	ion_device_unref(display);
	ion_device_unref(camera);
	ion_ctx_unref(ctx);
	return r;
}
