// SPDX-License-Identifier: MIT
/*
 * wayland-dmabuf: a Wayland window whose pixels are a dma-buf that libion
 * allocated for the compositor's own device.  linux-dmabuf version 4's
 * default feedback names that device (a dev_t) and the formats it imports;
 * the sample attaches the device to an XRGB8888 (or ARGB8888) image, draws
 * eight bars in it and shows it fullscreen until the first frame callback.
 * An older linux-dmabuf names no device: -d DEVICE names it instead.
 *
 *   P=$(pkg-config --variable=pkgdatadir wayland-protocols)
 *   for x in unstable/linux-dmabuf/linux-dmabuf-unstable-v1 stable/xdg-shell/xdg-shell; do
 *     n=$(basename $x); wayland-scanner client-header $P/$x.xml $n-client-protocol.h
 *     wayland-scanner private-code $P/$x.xml $n-protocol.c; done
 *   cc -I. wayland-dmabuf.c *-protocol.c $(pkg-config --cflags --libs libion wayland-client libdrm)
 *   ./wayland-dmabuf [-d DEVICE] [-t SECONDS]      (-t: stay shown so long)
 *
 * Exit status: 0 when a frame was shown, 77 when there is no compositor or
 * no linux-dmabuf version 4 (and no -d), 1 on a failure.
 */
#define _POSIX_C_SOURCE 200809L /* getopt */
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <drm_fourcc.h>
#include <xf86drm.h>
#include <wayland-client.h>

#include <ion/ion.h>

#include "linux-dmabuf-unstable-v1-client-protocol.h"
#include "xdg-shell-client-protocol.h"

struct app {
	struct wl_compositor *compositor;
	struct xdg_wm_base *wm;
	struct zwp_linux_dmabuf_v1 *dmabuf;
	struct wl_buffer *buffer;
	uint32_t format, width, height;
	uint64_t modifier;
	dev_t main_device;
	bool has_main, configured, failed, shown;
	struct { uint32_t format, pad; uint64_t modifier; } *table; /* version 4's formats */
	size_t table_len;
};

/* A format the compositor takes: XRGB8888 first (an opaque window needs no
 * alpha), LINEAR or else the implicit modifier. */
static void offer(struct app *a, uint32_t format, uint64_t modifier)
{
	if ((format != DRM_FORMAT_XRGB8888 && format != DRM_FORMAT_ARGB8888) ||
	    (modifier != DRM_FORMAT_MOD_LINEAR && modifier != DRM_FORMAT_MOD_INVALID))
		return;
	if (!a->format || (format == DRM_FORMAT_XRGB8888 && a->format != format) ||
	    (format == a->format && modifier == DRM_FORMAT_MOD_LINEAR)) {
		a->format = format;
		a->modifier = modifier;
	}
}

/* Version 3 lists every format and modifier, one event each. */
static void on_format(void *data, struct zwp_linux_dmabuf_v1 *d, uint32_t format) {}
static void on_modifier(void *data, struct zwp_linux_dmabuf_v1 *d, uint32_t format, uint32_t hi,
			uint32_t lo)
{
	offer(data, format, (uint64_t)hi << 32 | lo);
}
static const struct zwp_linux_dmabuf_v1_listener dmabuf_listener = { on_format, on_modifier };

/* Version 4's default feedback, sent when it is created: a table of
 * formats, the main device, then tranches of indices into the table. */
static void fb_table(void *data, struct zwp_linux_dmabuf_feedback_v1 *f, int32_t fd, uint32_t size)
{
	struct app *a = data;
	void *p = mmap(NULL, size, PROT_READ, MAP_PRIVATE, fd, 0);

	close(fd);
	a->table = p == MAP_FAILED ? NULL : p;
	a->table_len = a->table ? size / sizeof(*a->table) : 0;
}
static void fb_main(void *data, struct zwp_linux_dmabuf_feedback_v1 *f, struct wl_array *dev)
{
	struct app *a = data;

	a->has_main = dev->size == sizeof(dev_t);
	if (a->has_main)
		memcpy(&a->main_device, dev->data, sizeof(dev_t));
}
static void fb_formats(void *data, struct zwp_linux_dmabuf_feedback_v1 *f, struct wl_array *indices)
{
	struct app *a = data;
	uint16_t *i;

	wl_array_for_each(i, indices)
		if (*i < a->table_len)
			offer(a, a->table[*i].format, a->table[*i].modifier);
}
static void fb_done(void *data, struct zwp_linux_dmabuf_feedback_v1 *f) {} /* and tranche_done */
static void fb_target(void *data, struct zwp_linux_dmabuf_feedback_v1 *f, struct wl_array *dev) {}
static void fb_flags(void *data, struct zwp_linux_dmabuf_feedback_v1 *f, uint32_t flags) {}
static const struct zwp_linux_dmabuf_feedback_v1_listener feedback_listener = {
	fb_done, fb_table, fb_main, fb_done, fb_target, fb_formats, fb_flags };

static void on_global(void *data, struct wl_registry *reg, uint32_t name, const char *iface,
		      uint32_t version)
{
	struct app *a = data;

	if (strcmp(iface, wl_compositor_interface.name) == 0)
		a->compositor = wl_registry_bind(reg, name, &wl_compositor_interface, 4);
	else if (strcmp(iface, xdg_wm_base_interface.name) == 0)
		a->wm = wl_registry_bind(reg, name, &xdg_wm_base_interface, 1);
	else if (strcmp(iface, zwp_linux_dmabuf_v1_interface.name) == 0 && version >= 3) {
		a->dmabuf = wl_registry_bind(reg, name, &zwp_linux_dmabuf_v1_interface,
					     version < 4 ? version : 4);
		zwp_linux_dmabuf_v1_add_listener(a->dmabuf, &dmabuf_listener, a);
	}
}
static void on_global_remove(void *data, struct wl_registry *reg, uint32_t name) {}
static const struct wl_registry_listener registry_listener = { on_global, on_global_remove };

static void on_created(void *data, struct zwp_linux_buffer_params_v1 *p, struct wl_buffer *b)
{
	((struct app *)data)->buffer = b;
}
static void on_failed(void *data, struct zwp_linux_buffer_params_v1 *p)
{
	((struct app *)data)->failed = true;
}
static const struct zwp_linux_buffer_params_v1_listener params_listener = { on_created, on_failed };

static void on_ping(void *data, struct xdg_wm_base *wm, uint32_t serial)
{
	xdg_wm_base_pong(wm, serial);
}
static const struct xdg_wm_base_listener wm_listener = { .ping = on_ping };
static void on_configure(void *data, struct xdg_surface *s, uint32_t serial)
{
	xdg_surface_ack_configure(s, serial);
	((struct app *)data)->configured = true;
}
static const struct xdg_surface_listener surface_listener = { .configure = on_configure };
static void on_toplevel_configure(void *data, struct xdg_toplevel *t, int32_t w, int32_t h,
				  struct wl_array *states)
{
	struct app *a = data;

	a->width = w > 0 ? (uint32_t)w : 640; /* 0: the client chooses */
	a->height = h > 0 ? (uint32_t)h : 480;
}
static void on_close(void *data, struct xdg_toplevel *t) {}
static const struct xdg_toplevel_listener toplevel_listener = {
	.configure = on_toplevel_configure, .close = on_close };
static void on_frame(void *data, struct wl_callback *cb, uint32_t time)
{
	((struct app *)data)->shown = true;
}
static const struct wl_callback_listener frame_listener = { on_frame };

int main(int argc, char **argv)
{
	const char *device_name = NULL;
	unsigned int hold = 0, stride;
	struct app a = { 0 };
	struct ion_ctx *ctx = NULL;
	struct ion_device *device = NULL;
	struct ion_buffer *image = NULL;
	struct wl_display *dpy;
	struct zwp_linux_dmabuf_feedback_v1 *fb = NULL;
	struct wl_surface *surface;
	struct xdg_surface *xs;
	struct xdg_toplevel *toplevel;
	uint64_t mods[2] = { DRM_FORMAT_MOD_LINEAR, DRM_FORMAT_MOD_LINEAR };
	drmDevicePtr drm;
	struct stat st;
	size_t offset;
	uint32_t *p;
	int opt, fd, err, r = 1;

	while ((opt = getopt(argc, argv, "d:t:")) != -1)
		if (opt == 'd')
			device_name = optarg;
		else if (opt == 't')
			hold = (unsigned int)atoi(optarg);
		else
			return 1;
	dpy = wl_display_connect(NULL);
	if (!dpy) {
		fprintf(stderr, "wayland-dmabuf: no Wayland compositor\n");
		return 77;
	}
	wl_registry_add_listener(wl_display_get_registry(dpy), &registry_listener, &a);
	wl_display_roundtrip(dpy); /* the globals, bound as they come */
	if (a.dmabuf && zwp_linux_dmabuf_v1_get_version(a.dmabuf) >= 4) {
		fb = zwp_linux_dmabuf_v1_get_default_feedback(a.dmabuf);
		zwp_linux_dmabuf_feedback_v1_add_listener(fb, &feedback_listener, &a);
	}
	wl_display_roundtrip(dpy); /* version 3's formats (sent on bind), or the feedback */
	if (fb) { /* read once: no later change wanted */
		zwp_linux_dmabuf_feedback_v1_destroy(fb);
		if (a.table)
			munmap(a.table, a.table_len * sizeof(*a.table));
	}
	if (!a.compositor || !a.wm || !a.dmabuf || (!a.has_main && !device_name)) {
		fprintf(stderr, "wayland-dmabuf: no linux-dmabuf version 4 here%s\n",
			a.dmabuf ? " (-d DEVICE names the device to older ones)" : "");
		r = 77;
		goto out;
	}
	if (ion_ctx_new(NULL, &ctx) < 0)
		goto out;
	if (a.has_main && drmGetDeviceFromDevId(a.main_device, 0, &drm) == 0) {
		/* the DRM device of that dev_t: its card, or else its render node */
		int node = drm->available_nodes & 1 << DRM_NODE_PRIMARY ? DRM_NODE_PRIMARY
									: DRM_NODE_RENDER;

		printf("linux-dmabuf v4: main device: %s\n", drm->nodes[node]);
		ion_ctx_get_device(ctx, drm->nodes[node], &device);
		drmFreeDevice(&drm);
	} else if (!a.has_main) {
		printf("linux-dmabuf v3: no main device, %s named instead\n", device_name);
		ion_ctx_get_device(ctx, device_name, &device);
	}
	if (!device || !a.format) {
		fprintf(stderr, "wayland-dmabuf: %s\n", device ? "the compositor lists no XRGB8888 "
			"or ARGB8888" : "libion does not know the compositor's device");
		goto out;
	}

	surface = wl_compositor_create_surface(a.compositor);
	xs = xdg_wm_base_get_xdg_surface(a.wm, surface);
	toplevel = xdg_surface_get_toplevel(xs);
	xdg_wm_base_add_listener(a.wm, &wm_listener, &a);
	xdg_surface_add_listener(xs, &surface_listener, &a);
	xdg_toplevel_add_listener(toplevel, &toplevel_listener, &a);
	xdg_toplevel_set_fullscreen(toplevel, NULL); /* so it may be scanned out as it is */
	wl_surface_commit(surface); /* no buffer yet: asks for the first configure */
	while (!a.configured && wl_display_dispatch(dpy) >= 0)
		;
	if (!a.configured)
		goto out;

	err = ion_buffer_new_image(ctx, a.format, a.width, a.height, &image);
	if (err == 0)
		err = ion_buffer_attach(image, device);
	if (err == 0)
		err = ion_buffer_get_fd(image, &fd); /* solves for the device, then allocates */
	if (err < 0) {
		fprintf(stderr, "wayland-dmabuf: no buffer: %s\n", ion_buffer_get_reason(image)
			? ion_buffer_get_reason(image) : strerror(-err));
		goto out;
	}
	ion_buffer_get_plane(image, 0, &stride, &offset);
	fstat(fd, &st); /* its inode names the dma-buf */
	p = mmap(NULL, ion_buffer_get_size(image), PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	if (p == MAP_FAILED) {
		perror("wayland-dmabuf: mmap");
		goto out;
	}
	ion_sync(fd, ION_SYNC_START | ION_SYNC_WRITE);
	for (uint32_t y = 0; y < a.height; y++) /* eight grey bars, black to white */
		for (uint32_t x = 0; x < a.width; x++)
			p[(offset + y * stride) / 4 + x] = 0xff000000 |
							   x * 8 / a.width * 255 / 7 * 0x010101;
	ion_sync(fd, ION_SYNC_END | ION_SYNC_WRITE);
	munmap(p, ion_buffer_get_size(image));

	/* libion lays the image out linearly, whatever modifier was listed:
	 * say LINEAR first (weston 10 scans out no buffer of implicit layout),
	 * and if the compositor refuses it, the modifier it listed. */
	mods[1] = a.modifier;
	for (int i = 0; i < 2 && !a.buffer && (i == 0 || (a.failed && mods[1] != mods[0])); i++) {
		struct zwp_linux_buffer_params_v1 *params = zwp_linux_dmabuf_v1_create_params(a.dmabuf);

		a.failed = false;
		a.modifier = mods[i];
		zwp_linux_buffer_params_v1_add_listener(params, &params_listener, &a);
		zwp_linux_buffer_params_v1_add(params, fd, 0, (uint32_t)offset, stride,
					       (uint32_t)(a.modifier >> 32), (uint32_t)a.modifier);
		zwp_linux_buffer_params_v1_create(params, (int32_t)a.width, (int32_t)a.height,
						  a.format, 0);
		while (!a.buffer && !a.failed && wl_display_dispatch(dpy) >= 0)
			;
		zwp_linux_buffer_params_v1_destroy(params);
	}
	printf("%s: %ux%u %.4s %s, stride %u, from heap %s for %s, dma-buf inode %lu\n",
	       a.buffer ? "wl_buffer created" : "compositor refused the dma-buf", a.width, a.height,
	       (char *)&a.format, a.modifier == DRM_FORMAT_MOD_LINEAR ? "LINEAR" : "implicit",
	       stride, ion_heap_get_name(ion_buffer_get_heap(image)), ion_device_get_name(device),
	       (unsigned long)st.st_ino);
	if (!a.buffer)
		goto out;

	wl_surface_attach(surface, a.buffer, 0, 0);
	wl_surface_damage_buffer(surface, 0, 0, INT32_MAX, INT32_MAX);
	wl_callback_add_listener(wl_surface_frame(surface), &frame_listener, &a);
	wl_surface_commit(surface);
	while (!a.shown && wl_display_dispatch(dpy) >= 0)
		;
	if (!a.shown)
		goto out;
	printf("frame shown\n");
	fflush(stdout);
	sleep(hold);
	r = 0;
out:
	if (wl_display_get_error(dpy))
		fprintf(stderr, "wayland-dmabuf: connection lost or protocol error (%d)\n",
			wl_display_get_error(dpy));
	ion_buffer_unref(image);
	ion_device_unref(device);
	ion_ctx_unref(ctx);
	wl_display_disconnect(dpy);
	return r;
}
