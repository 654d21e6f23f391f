// SPDX-License-Identifier: MIT
/*
 * test-wayland-v4: examples/wayland-dmabuf.c against a compositor that
 * speaks linux-dmabuf version 4, which no compositor the test VM can run
 * does (weston 10 there has no DRM EGL device: see test-wayland.c).  So
 * this program is one, as small as the sample needs: wl_compositor,
 * xdg_wm_base and zwp_linux_dmabuf_v1 version 4, whose default feedback
 * names NODE's device as the main device and lists XRGB8888 with the
 * implicit modifier and ARGB8888 LINEAR in its table, in one tranche.
 *
 * It checks the version 4 path end to end: the sample must pick the
 * device from the feedback alone (no -d; it prints the node it found,
 * which must be the primary node of NODE's device, a render node being
 * mapped to its card), create the wl_buffer LINEAR (params `add` with
 * DRM_FORMAT_MOD_LINEAR, a dma-buf fd of the stride and size it says),
 * whose pixels this compositor reads back (the sample's eight bars: the
 * first column black, the last white), get its frame callback and exit 0.
 *
 *   test-wayland-v4 NODE EXPECT_PRIMARY SAMPLE
 *
 * Exit status: 0 when every check holds, 1 otherwise, 77 without NODE.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE /* memfd_create */
#endif
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <drm_fourcc.h>
#include <wayland-server.h>

#include "linux-dmabuf-unstable-v1-server-protocol.h"
#include "xdg-shell-server-protocol.h"

#define SOCKET "wayland-libion-v4"

static struct {
	dev_t main_device;
	bool feedback_sent, buffer_created, pixels_ok, frame_done;
	int32_t width, height;
	uint32_t configure_serial;
	struct wl_resource *buffer, *frame, *toplevel, *xdg_surface;
	int fd;
	uint32_t offset, stride, format;
	uint64_t modifier;
	pid_t child;
	int child_status;
	struct wl_display *display;
} s = { .fd = -1, .child_status = -1 };

static void destroy(struct wl_client *c, struct wl_resource *r)
{
	wl_resource_destroy(r);
}

/* wl_buffer: destroyed by the client. */
static const struct wl_buffer_interface buffer_impl = { .destroy = destroy };

/* wl_surface: attach, frame, commit are all the sample uses. */
static void surface_attach(struct wl_client *c, struct wl_resource *r, struct wl_resource *b,
			   int32_t x, int32_t y)
{
	s.buffer = b;
}
static void surface_damage(struct wl_client *c, struct wl_resource *r, int32_t x, int32_t y,
			   int32_t w, int32_t h) {}
static void surface_frame(struct wl_client *c, struct wl_resource *r, uint32_t id)
{
	s.frame = wl_resource_create(c, &wl_callback_interface, 1, id);
}
static void surface_region(struct wl_client *c, struct wl_resource *r, struct wl_resource *g) {}
static void surface_commit(struct wl_client *c, struct wl_resource *r)
{
	if (!s.buffer && s.toplevel && !s.configure_serial) { /* the initial commit */
		struct wl_array states;

		wl_array_init(&states);
		xdg_toplevel_send_configure(s.toplevel, 640, 480, &states);
		wl_array_release(&states);
		xdg_surface_send_configure(s.xdg_surface, s.configure_serial = 7);
	} else if (s.buffer && s.frame) { /* "shown": the frame is done */
		wl_callback_send_done(s.frame, 1);
		wl_resource_destroy(s.frame);
		s.frame = NULL;
		s.frame_done = true;
	}
}
static void surface_transform(struct wl_client *c, struct wl_resource *r, int32_t t) {}
static void surface_scale(struct wl_client *c, struct wl_resource *r, int32_t scale) {}
static const struct wl_surface_interface surface_impl = {
	.destroy = destroy, .attach = surface_attach, .damage = surface_damage,
	.frame = surface_frame, .set_opaque_region = surface_region,
	.set_input_region = surface_region, .commit = surface_commit,
	.set_buffer_transform = surface_transform, .set_buffer_scale = surface_scale,
	.damage_buffer = surface_damage };

static void create_surface(struct wl_client *c, struct wl_resource *r, uint32_t id)
{
	struct wl_resource *res = wl_resource_create(c, &wl_surface_interface,
						     wl_resource_get_version(r), id);

	wl_resource_set_implementation(res, &surface_impl, NULL, NULL);
}
static void create_region(struct wl_client *c, struct wl_resource *r, uint32_t id) {}
static const struct wl_compositor_interface compositor_impl = { create_surface, create_region };

/* xdg-shell: a toplevel that is only configured once. */
static void toplevel_title(struct wl_client *c, struct wl_resource *r, const char *t) {}
static void toplevel_fullscreen(struct wl_client *c, struct wl_resource *r, struct wl_resource *o) {}
static const struct xdg_toplevel_interface toplevel_impl = {
	.destroy = destroy, .set_title = toplevel_title, .set_fullscreen = toplevel_fullscreen };
static void get_toplevel(struct wl_client *c, struct wl_resource *r, uint32_t id)
{
	s.toplevel = wl_resource_create(c, &xdg_toplevel_interface, 1, id);
	wl_resource_set_implementation(s.toplevel, &toplevel_impl, NULL, NULL);
}
static void ack_configure(struct wl_client *c, struct wl_resource *r, uint32_t serial)
{
	if (serial != s.configure_serial)
		fprintf(stderr, "fake compositor: ack_configure(%u), sent %u\n", serial,
			s.configure_serial);
}
static const struct xdg_surface_interface xdg_surface_impl = {
	.destroy = destroy, .get_toplevel = get_toplevel, .ack_configure = ack_configure };
static void get_xdg_surface(struct wl_client *c, struct wl_resource *r, uint32_t id,
			    struct wl_resource *surface)
{
	s.xdg_surface = wl_resource_create(c, &xdg_surface_interface, 1, id);
	wl_resource_set_implementation(s.xdg_surface, &xdg_surface_impl, NULL, NULL);
}
static void pong(struct wl_client *c, struct wl_resource *r, uint32_t serial) {}
static const struct xdg_wm_base_interface wm_impl = {
	.destroy = destroy, .get_xdg_surface = get_xdg_surface, .pong = pong };

/* linux-dmabuf: one plane, then create. */
static void params_add(struct wl_client *c, struct wl_resource *r, int32_t fd, uint32_t plane,
		       uint32_t offset, uint32_t stride, uint32_t hi, uint32_t lo)
{
	if (s.fd >= 0)
		close(s.fd);
	s.fd = fd;
	s.offset = offset;
	s.stride = stride;
	s.modifier = (uint64_t)hi << 32 | lo;
}
/* The sample's bars: column 0 black, the last column white. */
static bool check_pixels(void)
{
	size_t len = s.offset + (size_t)s.stride * (size_t)s.height;
	uint32_t *p = mmap(NULL, len, PROT_READ, MAP_SHARED, s.fd, 0);
	bool ok;

	if (p == MAP_FAILED)
		return false;
	ok = p[s.offset / 4] == 0xff000000 &&
	     p[(s.offset + (size_t)s.stride * (size_t)(s.height - 1)) / 4 + (size_t)s.width - 1] ==
		     0xffffffff;
	munmap(p, len);
	return ok;
}
static void params_create(struct wl_client *c, struct wl_resource *r, int32_t w, int32_t h,
			  uint32_t format, uint32_t flags)
{
	struct stat st;

	s.width = w;
	s.height = h;
	s.format = format;
	if (s.fd < 0 || fstat(s.fd, &st) < 0 || s.modifier != DRM_FORMAT_MOD_LINEAR ||
	    (format != DRM_FORMAT_XRGB8888 && format != DRM_FORMAT_ARGB8888)) {
		zwp_linux_buffer_params_v1_send_failed(r);
		return;
	}
	s.pixels_ok = check_pixels();
	s.buffer_created = true;
	struct wl_resource *b = wl_resource_create(c, &wl_buffer_interface, 1, 0);
	wl_resource_set_implementation(b, &buffer_impl, NULL, NULL);
	zwp_linux_buffer_params_v1_send_created(r, b);
}
static void params_create_immed(struct wl_client *c, struct wl_resource *r, uint32_t id,
				int32_t w, int32_t h, uint32_t format, uint32_t flags)
{
	wl_resource_post_error(r, ZWP_LINUX_BUFFER_PARAMS_V1_ERROR_INCOMPLETE,
			       "this compositor takes create only");
}
static const struct zwp_linux_buffer_params_v1_interface params_impl = {
	destroy, params_add, params_create, params_create_immed };
static void create_params(struct wl_client *c, struct wl_resource *r, uint32_t id)
{
	struct wl_resource *res = wl_resource_create(c, &zwp_linux_buffer_params_v1_interface,
						     wl_resource_get_version(r), id);

	wl_resource_set_implementation(res, &params_impl, NULL, NULL);
}

/* The default feedback: a two-entry table, the main device, one tranche. */
static void send_feedback(struct wl_resource *fb)
{
	struct { uint32_t format, pad; uint64_t modifier; } table[2] = {
		{ DRM_FORMAT_XRGB8888, 0, DRM_FORMAT_MOD_INVALID },
		{ DRM_FORMAT_ARGB8888, 0, DRM_FORMAT_MOD_LINEAR },
	};
	uint16_t indices[2] = { 0, 1 };
	struct wl_array dev, idx;
	int fd = memfd_create("format-table", MFD_CLOEXEC);

	if (fd < 0 || write(fd, table, sizeof(table)) != (ssize_t)sizeof(table))
		return;
	zwp_linux_dmabuf_feedback_v1_send_format_table(fb, fd, sizeof(table));
	close(fd);
	wl_array_init(&dev);
	memcpy(wl_array_add(&dev, sizeof(dev_t)), &s.main_device, sizeof(dev_t));
	zwp_linux_dmabuf_feedback_v1_send_main_device(fb, &dev);
	zwp_linux_dmabuf_feedback_v1_send_tranche_target_device(fb, &dev);
	wl_array_init(&idx);
	memcpy(wl_array_add(&idx, sizeof(indices)), indices, sizeof(indices));
	zwp_linux_dmabuf_feedback_v1_send_tranche_formats(fb, &idx);
	zwp_linux_dmabuf_feedback_v1_send_tranche_flags(fb, 0);
	zwp_linux_dmabuf_feedback_v1_send_tranche_done(fb);
	zwp_linux_dmabuf_feedback_v1_send_done(fb);
	wl_array_release(&dev);
	wl_array_release(&idx);
	s.feedback_sent = true;
}
static const struct zwp_linux_dmabuf_feedback_v1_interface feedback_impl = { .destroy = destroy };
static void get_default_feedback(struct wl_client *c, struct wl_resource *r, uint32_t id)
{
	struct wl_resource *fb = wl_resource_create(c, &zwp_linux_dmabuf_feedback_v1_interface,
						    wl_resource_get_version(r), id);

	wl_resource_set_implementation(fb, &feedback_impl, NULL, NULL);
	send_feedback(fb);
}
static void get_surface_feedback(struct wl_client *c, struct wl_resource *r, uint32_t id,
				 struct wl_resource *surface)
{
	get_default_feedback(c, r, id);
}
static const struct zwp_linux_dmabuf_v1_interface dmabuf_impl = {
	destroy, create_params, get_default_feedback, get_surface_feedback };

static void bind_compositor(struct wl_client *c, void *data, uint32_t version, uint32_t id)
{
	struct wl_resource *r = wl_resource_create(c, &wl_compositor_interface, version, id);

	wl_resource_set_implementation(r, &compositor_impl, NULL, NULL);
}
static void bind_wm(struct wl_client *c, void *data, uint32_t version, uint32_t id)
{
	struct wl_resource *r = wl_resource_create(c, &xdg_wm_base_interface, version, id);

	wl_resource_set_implementation(r, &wm_impl, NULL, NULL);
}
static void bind_dmabuf(struct wl_client *c, void *data, uint32_t version, uint32_t id)
{
	struct wl_resource *r = wl_resource_create(c, &zwp_linux_dmabuf_v1_interface, version, id);

	wl_resource_set_implementation(r, &dmabuf_impl, NULL, NULL);
}

static int on_sigchld(int sig, void *data)
{
	if (waitpid(s.child, &s.child_status, WNOHANG) == s.child)
		wl_display_terminate(s.display);
	return 0;
}

int main(int argc, char **argv)
{
	static char out[4096];
	int p[2], failures = 0;
	struct stat st;
	char want[300];
	ssize_t n, used = 0;

	setvbuf(stdout, NULL, _IOLBF, 0);
	if (argc != 4) {
		fprintf(stderr, "usage: test-wayland-v4 NODE EXPECT_PRIMARY SAMPLE\n");
		return 1;
	}
	if (stat(argv[1], &st) < 0 || !S_ISCHR(st.st_mode)) {
		printf("test-wayland-v4: no %s here\n", argv[1]);
		return 77;
	}
	s.main_device = st.st_rdev;
	alarm(120); /* a sample that hangs fails the test */
	if (!getenv("XDG_RUNTIME_DIR")) {
		mkdir("/tmp/wayland-runtime-v4", 0700);
		setenv("XDG_RUNTIME_DIR", "/tmp/wayland-runtime-v4", 1);
	}
	s.display = wl_display_create();
	if (!s.display || wl_display_add_socket(s.display, SOCKET) < 0)
		return 1;
	wl_global_create(s.display, &wl_compositor_interface, 4, NULL, bind_compositor);
	wl_global_create(s.display, &xdg_wm_base_interface, 1, NULL, bind_wm);
	wl_global_create(s.display, &zwp_linux_dmabuf_v1_interface, 4, NULL, bind_dmabuf);
	wl_event_loop_add_signal(wl_display_get_event_loop(s.display), SIGCHLD, on_sigchld, NULL);

	if (pipe2(p, O_CLOEXEC) < 0)
		return 1;
	s.child = fork();
	if (s.child == 0) {
		dup2(p[1], 1);
		setenv("WAYLAND_DISPLAY", SOCKET, 1);
		execl(argv[3], argv[3], (char *)NULL);
		_exit(127);
	}
	close(p[1]);
	wl_display_run(s.display);
	while ((n = read(p[0], out + used, sizeof(out) - 1 - (size_t)used)) > 0)
		used += n;
	out[used] = '\0';
	close(p[0]);
	for (char *line = strtok(out, "\n"); line; line = strtok(NULL, "\n"))
		printf("  sample: %s\n", line);
	/* strtok cut the lines: look at them as one again */
	for (ssize_t i = 0; i < used; i++)
		if (out[i] == '\0')
			out[i] = '\n';

#define CHECK(ok, what) do { bool ok_ = (ok); printf("%s: %s\n", ok_ ? "ok" : "FAIL", what); \
	failures += !ok_; } while (0)
	CHECK(s.feedback_sent, "the sample asked for the default feedback");
	snprintf(want, sizeof(want), "main device: %s\n", argv[2]);
	CHECK(strstr(out, want) != NULL, want);
	CHECK(s.buffer_created && s.modifier == DRM_FORMAT_MOD_LINEAR,
	      "a LINEAR XRGB8888/ARGB8888 dma-buf reached zwp_linux_buffer_params_v1.create");
	CHECK(s.pixels_ok, "its pixels are the sample's bars (read back by the compositor)");
	CHECK(s.frame_done, "the frame callback was sent");
	CHECK(WIFEXITED(s.child_status) && WEXITSTATUS(s.child_status) == 0, "the sample exited 0");
	if (s.fd >= 0)
		close(s.fd);
	wl_display_destroy(s.display);
	printf("test-wayland-v4: %d failure(s)\n", failures);
	return failures ? 1 : 0;
}
