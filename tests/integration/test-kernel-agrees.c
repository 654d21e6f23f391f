// SPDX-License-Identifier: MIT
/*
 * Does the kernel agree with the solver?  Each device of the test VM is
 * handed buffers from every heap, through the kernel's own interfaces,
 * and what the kernel takes must be what the solver says the device takes:
 *
 *  - vivid-000 (videobuf2-dma-contig) and vivid-001 (videobuf2-vmalloc):
 *    S_FMT, REQBUFS with V4L2_MEMORY_DMABUF, QBUF of two buffers (5.10's
 *    vivid streams only with two queued), STREAMON, one frame DQBUF'd.
 *  - vkms: PRIME import, AddFB2 (XRGB8888) as an ordinary client, then a
 *    modeset that scans the framebuffer out (SetCrtc, as DRM master):
 *    vkms maps a framebuffer in the kernel only when a plane takes it
 *    (prepare_fb), so AddFB2 alone would not exercise its KernelMap need.
 *    Not on a kernel before 5.11: see vkms_unsafe().
 *  - vgem, virtio-gpu: PRIME import (vgem has no KMS; virtio-gpu's
 *    import is where it refuses foreign buffers).
 *
 * Checks:
 *  1. Each device alone, each available heap but memfd (no dma-buf): the
 *     kernel accepts the heap's buffer exactly when a solve for that
 *     device, with the size the probe needs, lists the heap.
 *  2. Sets of devices: the solved heap's buffers (ion_solution_alloc) are
 *     taken by every device of the set, and so are every other
 *     candidate's; an empty solution's rejections name devices of the
 *     set, and allocating from it answers -ENODEV; every heap a device of
 *     the set excluded is refused by at least one of them.
 *
 * What the kernel cannot confirm here: AddressBits.  The VM has 1 GiB, so
 * every heap's memory lies below 2^30 and no heap can hand a 32-bit
 * device an address it cannot reach; the solver excludes nothing for it
 * (a solver exclusion that names AddressBits is reported, not probed).
 * Alignment and Cache: no device of the VM asks for them.
 *
 * vivid writes its frames through a kernel mapping of the buffer and
 * does not check that it got one: a contiguous buffer without a kernel
 * mapping (5.10's ION) passes QBUF on vivid-000 and would oops the kernel
 * at the first frame.  Before streaming on vivid-000, the buffers are
 * queued on vivid-001, whose QBUF maps them (dma_buf_vmap) and answers
 * EFAULT when that fails; such a buffer counts as refused by vivid-000,
 * at step "vmap".
 *
 * A scattered heap can hand out a buffer that happens to be physically
 * contiguous (the buddy allocator often returns neighbouring pages), and
 * vivid-000 then takes it: where vivid-000 accepts a buffer the solver
 * left out for want of contiguity, /proc/self/pagemap says whether that
 * buffer was contiguous by chance, and if so the kernel could not tell.
 * The reader is itself checked on every heap the library calls
 * contiguous (ION's buffers it cannot see: remap_pfn_range).
 *
 * A heap the solver chooses and the kernel refuses always fails.  A
 * device that cannot be probed safely on this kernel (vkms before 5.11:
 * see vkms_unsafe()) is not asked at all: its pairs show as "n/p", its
 * exclusions as not confirmed by this kernel, and a set's verdict rests
 * on its other devices.
 *
 * On a machine without vivid, vkms and the rest (the host) every test
 * skips.  In the VM (LIBION_IN_VM) every device must be there and the
 * board file of its machine (qemu-q35, or qemu-virt on arm64) must have
 * been read.
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/utsname.h>
#include <unistd.h>

#include <linux/videodev2.h>

#include <cmocka.h>

#if HAVE_LIBDRM
#include <drm.h>
#include <drm_fourcc.h>
#include <xf86drm.h>
#include <xf86drmMode.h>
#endif

#include "testlib.h"

enum slot { VIVID_CONTIG, VIVID_VMALLOC, VGEM, VKMS, VIRTIO_GPU, N_SLOTS };
enum kind { K_V4L2, K_PRIME, K_KMS };

static const struct {
	const char *what;
	enum kind kind;
	const char *match; /* V4L2 bus_info, or DRM driver name */
} slot_info[N_SLOTS] = {
	[VIVID_CONTIG] = { "vivid-000, dma-contig", K_V4L2, "platform:vivid-000" },
	[VIVID_VMALLOC] = { "vivid-001, vmalloc", K_V4L2, "platform:vivid-001" },
	[VGEM] = { "vgem", K_PRIME, "vgem" },
	[VKMS] = { "vkms", K_KMS, "vkms" },
	[VIRTIO_GPU] = { "virtio-gpu", K_PRIME, "virtio_gpu" },
};

#define V4L2_BUFFERS 2
#define FRAME_TIMEOUT_MS 5000

struct probe_dev {
	bool present;
	char node[64];
	struct ion_device *dev;
	size_t size; /* one buffer, as the probe needs it */
	int nbufs;
	struct v4l2_pix_format pix;
	uint32_t crtc, conn, width, height;
#if HAVE_LIBDRM
	drmModeModeInfo mode;
#endif
};

/* The kernel's answer: taken, or the step that refused and its errno;
 * or, where the device cannot be probed safely, why not (and nothing was
 * asked of the kernel). */
struct verdict {
	bool ok;
	const char *step;
	int err;
	const char *not_probed;
};

struct state {
	struct ion_ctx *ctx;
	struct probe_dev devs[N_SLOTS];
	int n_present;
	char kernel[65];
	/* Why a device is not probed on this kernel (NULL: it is). */
	const char *not_probed[N_SLOTS];
	struct fd_table fds;
};

/*
 * Why vkms cannot be probed on this kernel, or NULL.  Before 5.11 (when
 * it moved to the GEM shmem helpers) vkms has GEM code of its own
 * (vkms_gem.c), which mishandles imported buffers: a PRIME import keeps
 * the exporter's dma-buf and attachment for ever (vkms_gem_free_object()
 * neither detaches nor drops them) and warns when the object goes
 * (WARN_ON(gem->pages)); a scan-out maps the pages at prepare_fb
 * (vkms_gem_vmap()) and, at cleanup_fb, vkms_gem_vunmap() gives the
 * exporter's pages to drm_gem_put_pages() as if vkms had allocated them,
 * freeing pages the exporter still owns.  Probing would corrupt the
 * guest for every test after this one (examples/camera-display.c, which
 * measured it, refuses to scan out there for the same reason), so vkms's
 * verdicts are not asked of such a kernel, and the solver's rejections
 * for vkms (KernelMap) are reported as not confirmed by it.
 */
static const char *vkms_unsafe(const char *kernel)
{
	unsigned int major = 0, minor = 0;

	if (sscanf(kernel, "%u.%u", &major, &minor) != 2 ||
	    (major > 5 || (major == 5 && minor >= 11)))
		return NULL;
	return "before 5.11, vkms frees the pages of a buffer it imported and scanned out "
	       "(vkms_gem_vunmap -> drm_gem_put_pages) and leaks every import it is given: "
	       "probing it would corrupt the guest";
}

static int xioctl(int fd, unsigned long req, void *arg)
{
	int r;

	do
		r = ioctl(fd, req, arg);
	while (r < 0 && errno == EINTR);
	return r;
}

static const char *err_name(int err)
{
	const char *name = err ? strerrorname_np(err) : "0";

	return name ? name : "?";
}

static const char *dev_name(const struct state *s, enum slot slot)
{
	return ion_device_get_name(s->devs[slot].dev);
}

/* ---- finding the devices, from the kernel's side ---- */

static void find_v4l2(struct state *s)
{
	for (int i = 0; i < 64; i++) {
		struct v4l2_capability cap = { 0 };
		struct v4l2_format fmt = { .type = V4L2_BUF_TYPE_VIDEO_CAPTURE };
		char node[64];
		int fd;

		snprintf(node, sizeof(node), "/dev/video%d", i);
		fd = open(node, O_RDWR | O_NONBLOCK | O_CLOEXEC);
		if (fd < 0)
			continue;
		if (xioctl(fd, VIDIOC_QUERYCAP, &cap) < 0 ||
		    strcmp((const char *)cap.driver, "vivid") != 0 ||
		    !((cap.capabilities & V4L2_CAP_DEVICE_CAPS ? cap.device_caps
							      : cap.capabilities) &
		      V4L2_CAP_VIDEO_CAPTURE)) {
			close(fd);
			continue;
		}
		for (int k = 0; k < N_SLOTS; k++) {
			struct probe_dev *d = &s->devs[k];

			if (slot_info[k].kind != K_V4L2 || d->present ||
			    strcmp((const char *)cap.bus_info, slot_info[k].match) != 0)
				continue;
			fmt.fmt.pix = (struct v4l2_pix_format){
				.width = 640, .height = 480,
				.pixelformat = V4L2_PIX_FMT_XBGR32,
				.field = V4L2_FIELD_NONE,
			};
			if (xioctl(fd, VIDIOC_TRY_FMT, &fmt) < 0) {
				print_error("%s: TRY_FMT: %s\n", node, strerror(errno));
				fail();
			}
			d->present = true;
			snprintf(d->node, sizeof(d->node), "%s", node);
			d->pix = fmt.fmt.pix;
			d->size = fmt.fmt.pix.sizeimage;
			d->nbufs = V4L2_BUFFERS;
		}
		close(fd);
	}
}

#if HAVE_LIBDRM
/* The connected connector's smallest mode, and a CRTC that can drive it. */
static bool find_kms_output(int fd, struct probe_dev *d)
{
	drmModeRes *res = drmModeGetResources(fd);
	bool found = false;

	for (int i = 0; res && i < res->count_connectors && !found; i++) {
		drmModeConnector *c = drmModeGetConnector(fd, res->connectors[i]);
		drmModeEncoder *e;

		if (!c)
			continue;
		if (c->connection != DRM_MODE_CONNECTED || c->count_modes == 0 ||
		    c->count_encoders == 0 || !(e = drmModeGetEncoder(fd, c->encoders[0]))) {
			drmModeFreeConnector(c);
			continue;
		}
		for (int k = 0; k < res->count_crtcs && !found; k++) {
			if (!(e->possible_crtcs & (1U << k)))
				continue;
			d->crtc = res->crtcs[k];
			d->conn = c->connector_id;
			d->mode = c->modes[0];
			for (int m = 1; m < c->count_modes; m++)
				if ((uint32_t)c->modes[m].hdisplay * c->modes[m].vdisplay <
				    (uint32_t)d->mode.hdisplay * d->mode.vdisplay)
					d->mode = c->modes[m];
			found = true;
		}
		drmModeFreeEncoder(e);
		drmModeFreeConnector(c);
	}
	drmModeFreeResources(res);
	return found;
}

static void find_drm(struct state *s)
{
	for (int i = 0; i < 16; i++) {
		drmVersionPtr v;
		char node[64];
		int fd;

		snprintf(node, sizeof(node), "/dev/dri/card%d", i);
		fd = open(node, O_RDWR | O_CLOEXEC);
		if (fd < 0)
			continue;
		v = drmGetVersion(fd);
		for (int k = 0; v && k < N_SLOTS; k++) {
			struct probe_dev *d = &s->devs[k];

			if (slot_info[k].kind == K_V4L2 || d->present ||
			    strcmp(v->name, slot_info[k].match) != 0)
				continue;
			if (slot_info[k].kind == K_KMS) {
				if (!find_kms_output(fd, d)) {
					print_error("%s (%s): no connected output to scan out on\n",
						    node, v->name);
					fail();
				}
				d->width = d->mode.hdisplay;
				d->height = d->mode.vdisplay;
			} else {
				d->width = 640;
				d->height = 480;
			}
			d->present = true;
			snprintf(d->node, sizeof(d->node), "%s", node);
			d->size = (size_t)d->width * 4 * d->height;
			d->nbufs = 1;
		}
		drmFreeVersion(v);
		close(fd);
	}
}
#else
static void find_drm(struct state *s)
{
	(void)s;
	print_message("built without libdrm: the DRM devices are not probed\n");
}
#endif

static int setup(void **pstate)
{
	struct state *s = calloc(1, sizeof(*s));
	struct utsname uts;

	assert_non_null(s);
	assert_int_equal(ion_ctx_new(NULL, &s->ctx), 0);
	assert_true(ion_ctx_get_heap_count(s->ctx) > 0);
	uname(&uts);
	snprintf(s->kernel, sizeof(s->kernel), "%s", uts.release);
	find_v4l2(s);
	find_drm(s);
	for (int k = 0; k < N_SLOTS; k++) {
		struct probe_dev *d = &s->devs[k];

		if (!d->present)
			continue;
		if (ion_ctx_get_device(s->ctx, d->node, &d->dev) < 0) {
			print_error("the library has no device for %s (%s)\n", d->node,
				    slot_info[k].what);
			fail();
		}
		s->n_present++;
	}
	if (s->devs[VKMS].present)
		s->not_probed[VKMS] = vkms_unsafe(s->kernel);
	/* Discovery's fds and the probes' scratch opens are done with. */
	fd_table_read(&s->fds);
	*pstate = s;
	return 0;
}

static int teardown(void **pstate)
{
	struct state *s = *pstate;

	fd_table_assert_same(&s->fds);
	for (int k = 0; k < N_SLOTS; k++)
		ion_device_unref(s->devs[k].dev);
	ion_ctx_unref(s->ctx);
	free(s);
	return 0;
}

/* Skips on a machine without these devices; in the VM, all must be there. */
static void require_devices(struct state *s)
{
	bool in_vm = getenv("LIBION_IN_VM") != NULL;
	bool board = false;

	if (!in_vm && s->n_present == 0) {
		print_message("no vivid, vgem, vkms or virtio-gpu here: nothing to probe\n");
		skip();
	}
	for (int k = 0; k < N_SLOTS; k++)
		if (!s->devs[k].present) {
			print_message("%s: not found\n", slot_info[k].what);
			/* (Without libdrm, DRM devices are not looked for.) */
			if (in_vm && (HAVE_LIBDRM || slot_info[k].kind == K_V4L2))
				fail_msg("the VM must have %s", slot_info[k].what);
		}
	for (int i = 0; i < ion_ctx_get_board_count(s->ctx); i++) {
		const char *name, *source;

		if (ion_ctx_get_board(s->ctx, (unsigned int)i, &name, &source) == 0 &&
		    (strcmp(name, "qemu-q35") == 0 || strcmp(name, "qemu-virt") == 0)) {
			print_message("board %s [%s]\n", name, source);
			board = true;
		}
	}
	if (in_vm && !board)
		fail_msg("the board file 50-qemu-q35.conf (x86) or 50-qemu-virt.conf (arm64) did not reach the VM");
}

/* ---- the probes ---- */

static struct verdict refused(const char *step, int err)
{
	return (struct verdict){ false, step, err, NULL };
}

/*
 * Queues bufs on vivid-001, whose QBUF maps each in the kernel: 0, or the
 * errno of the first refusal.  Nothing streams.
 */
static int kernel_map_check(struct state *s, const int *bufs, int n)
{
	struct probe_dev *d = &s->devs[VIVID_VMALLOC];
	struct v4l2_format fmt = { .type = V4L2_BUF_TYPE_VIDEO_CAPTURE };
	struct v4l2_requestbuffers req = {
		.count = (uint32_t)n,
		.type = V4L2_BUF_TYPE_VIDEO_CAPTURE,
		.memory = V4L2_MEMORY_DMABUF,
	};
	int fd, err = 0;

	if (!d->present)
		return 0;
	fd = open(d->node, O_RDWR | O_NONBLOCK | O_CLOEXEC);
	assert_true(fd >= 0);
	fmt.fmt.pix = s->devs[VIVID_CONTIG].pix;
	assert_int_equal(xioctl(fd, VIDIOC_S_FMT, &fmt), 0);
	assert_int_equal(xioctl(fd, VIDIOC_REQBUFS, &req), 0);
	for (int i = 0; i < n && !err; i++) {
		struct v4l2_buffer b = {
			.index = (uint32_t)i,
			.type = V4L2_BUF_TYPE_VIDEO_CAPTURE,
			.memory = V4L2_MEMORY_DMABUF,
		};
		size_t size = 0;

		assert_int_equal(ion_fd_get_size(bufs[i], &size), 0);
		b.m.fd = bufs[i];
		b.length = (uint32_t)size;
		if (xioctl(fd, VIDIOC_QBUF, &b) < 0)
			err = errno;
	}
	req.count = 0;
	assert_int_equal(xioctl(fd, VIDIOC_REQBUFS, &req), 0);
	close(fd);
	return err;
}

static struct verdict probe_v4l2(struct state *s, enum slot slot, const int *bufs, int n)
{
	struct probe_dev *d = &s->devs[slot];
	struct v4l2_format fmt = { .type = V4L2_BUF_TYPE_VIDEO_CAPTURE };
	struct v4l2_requestbuffers req = {
		.count = (uint32_t)n,
		.type = V4L2_BUF_TYPE_VIDEO_CAPTURE,
		.memory = V4L2_MEMORY_DMABUF,
	};
	enum v4l2_buf_type type = V4L2_BUF_TYPE_VIDEO_CAPTURE;
	struct v4l2_buffer b;
	struct pollfd pfd;
	struct verdict v = { true, NULL, 0, NULL };
	bool have_bufs = false, streaming = false;
	int fd, err;

	fd = open(d->node, O_RDWR | O_NONBLOCK | O_CLOEXEC);
	if (fd < 0)
		return refused("open", errno);
	fmt.fmt.pix = d->pix;
	if (xioctl(fd, VIDIOC_S_FMT, &fmt) < 0) {
		v = refused("S_FMT", errno);
		goto out;
	}
	assert_int_equal(fmt.fmt.pix.sizeimage, d->pix.sizeimage);
	if (xioctl(fd, VIDIOC_REQBUFS, &req) < 0) {
		v = refused("REQBUFS", errno);
		goto out;
	}
	have_bufs = true;
	assert_true(req.count >= (uint32_t)n);
	for (int i = 0; i < n; i++) {
		size_t size = 0;

		assert_int_equal(ion_fd_get_size(bufs[i], &size), 0);
		b = (struct v4l2_buffer){
			.index = (uint32_t)i,
			.type = V4L2_BUF_TYPE_VIDEO_CAPTURE,
			.memory = V4L2_MEMORY_DMABUF,
			.length = (uint32_t)size,
		};
		b.m.fd = bufs[i];
		if (xioctl(fd, VIDIOC_QBUF, &b) < 0) {
			v = refused("QBUF", errno);
			goto out;
		}
	}
	/* vivid would write through a NULL kernel mapping: see the top. */
	if (slot == VIVID_CONTIG && (err = kernel_map_check(s, bufs, n)) != 0) {
		v = refused("vmap (QBUF on vivid-001)", err);
		goto out;
	}
	if (xioctl(fd, VIDIOC_STREAMON, &type) < 0) {
		v = refused("STREAMON", errno);
		goto out;
	}
	streaming = true;
	pfd = (struct pollfd){ .fd = fd, .events = POLLIN };
	err = poll(&pfd, 1, FRAME_TIMEOUT_MS);
	if (err <= 0) {
		v = refused("poll for a frame", err == 0 ? ETIMEDOUT : errno);
		goto out;
	}
	b = (struct v4l2_buffer){ .type = V4L2_BUF_TYPE_VIDEO_CAPTURE,
				  .memory = V4L2_MEMORY_DMABUF };
	if (xioctl(fd, VIDIOC_DQBUF, &b) < 0) {
		v = refused("DQBUF", errno);
		goto out;
	}
	if ((b.flags & V4L2_BUF_FLAG_ERROR) || b.bytesused == 0)
		v = refused("DQBUF (frame marked bad)", EIO);
out:
	if (streaming)
		assert_int_equal(xioctl(fd, VIDIOC_STREAMOFF, &type), 0);
	if (have_bufs) {
		req.count = 0;
		assert_int_equal(xioctl(fd, VIDIOC_REQBUFS, &req), 0);
	}
	close(fd);
	return v;
}

#if HAVE_LIBDRM
static void gem_close(int fd, uint32_t handle)
{
	struct drm_gem_close arg = { .handle = handle };

	assert_int_equal(drmIoctl(fd, DRM_IOCTL_GEM_CLOSE, &arg), 0);
}

static bool addfb2_needs_no_master_said;

/* vkms: a framebuffer of the buffer, made as an ordinary client, then
 * scanned out by a modeset as DRM master, and taken down again. */
static struct verdict probe_kms(struct probe_dev *d, int fd, uint32_t handle)
{
	uint32_t handles[4] = { handle }, pitches[4] = { d->width * 4 }, offsets[4] = { 0 };
	uint32_t fb = 0, conn = d->conn;
	struct verdict v = { true, NULL, 0, NULL };

	/* The first opener of a card without a master becomes master. */
	if (drmIsMaster(fd))
		assert_int_equal(drmDropMaster(fd), 0);
	if (drmModeAddFB2(fd, d->width, d->height, DRM_FORMAT_XRGB8888, handles,
			  pitches, offsets, &fb, 0) != 0)
		return refused("AddFB2", errno);
	if (!addfb2_needs_no_master_said) {
		print_message("%s: AddFB2 needs no DRM master (made as a plain client); "
			      "SetCrtc does\n", d->node);
		addfb2_needs_no_master_said = true;
	}
	if (drmSetMaster(fd) != 0) {
		print_error("%s: SET_MASTER: %s: cannot scan out\n", d->node, strerror(errno));
		fail();
	}
	if (drmModeSetCrtc(fd, d->crtc, fb, 0, 0, &conn, 1, &d->mode) != 0)
		v = refused("SetCrtc (scan-out)", errno);
	else
		assert_int_equal(drmModeSetCrtc(fd, d->crtc, 0, 0, 0, NULL, 0, NULL), 0);
	assert_int_equal(drmDropMaster(fd), 0);
	assert_int_equal(drmModeRmFB(fd, fb), 0);
	return v;
}

static struct verdict probe_drm(struct state *s, enum slot slot, int buf)
{
	struct probe_dev *d = &s->devs[slot];
	struct verdict v = { true, NULL, 0, NULL };
	uint32_t handle = 0;
	int fd = open(d->node, O_RDWR | O_CLOEXEC);

	if (fd < 0)
		return refused("open", errno);
	if (drmPrimeFDToHandle(fd, buf, &handle) != 0) {
		v = refused("PRIME import", errno);
		close(fd);
		return v;
	}
	if (slot_info[slot].kind == K_KMS)
		v = probe_kms(d, fd, handle);
	gem_close(fd, handle);
	close(fd);
	return v;
}
#else
static struct verdict probe_drm(struct state *s, enum slot slot, int buf)
{
	(void)s;
	(void)slot;
	(void)buf;
	return refused("built without libdrm", ENOSYS);
}
#endif

static struct verdict probe(struct state *s, enum slot slot, const int *bufs, int n)
{
	if (s->not_probed[slot])
		return (struct verdict){ .not_probed = s->not_probed[slot] };
	if (slot_info[slot].kind == K_V4L2)
		return probe_v4l2(s, slot, bufs, n);
	return probe_drm(s, slot, bufs[0]);
}

static void verdict_text(const struct verdict *v, char *buf, size_t size)
{
	if (v->not_probed)
		snprintf(buf, size, "not probed");
	else if (v->ok)
		snprintf(buf, size, "accepted");
	else
		snprintf(buf, size, "refused at %s: %s", v->step, err_name(v->err));
}

/*
 * Whether every page of each buffer lies at the frame after the one
 * before, by /proc/self/pagemap: 1 yes, 0 no, -1 when it cannot tell
 * (frames show to root only, and the page walk reports a VM_PFNMAP
 * mapping, such as ION's remap_pfn_range, as a hole).
 */
static int physically_contiguous(const int *bufs, int n)
{
	long page = sysconf(_SC_PAGESIZE);
	int pm = open("/proc/self/pagemap", O_RDONLY | O_CLOEXEC);
	int contiguous = pm >= 0 ? 1 : -1;

	for (int i = 0; i < n && contiguous == 1; i++) {
		size_t size = 0;
		volatile const unsigned char *p;
		uint64_t prev = 0;

		assert_int_equal(ion_fd_get_size(bufs[i], &size), 0);
		p = mmap(NULL, size, PROT_READ, MAP_SHARED, bufs[i], 0);
		if (p == MAP_FAILED) {
			contiguous = -1;
			break;
		}
		for (size_t off = 0; off < size && contiguous == 1; off += (size_t)page) {
			uint64_t entry = 0, pfn;

			(void)p[off]; /* fault the page in */
			if (pread(pm, &entry, sizeof(entry),
				  (off_t)(((uintptr_t)p + off) / (uintptr_t)page * sizeof(entry))) !=
			    (ssize_t)sizeof(entry)) {
				contiguous = -1;
				break;
			}
			pfn = entry & ((UINT64_C(1) << 55) - 1);
			if (!(entry >> 63) || pfn == 0)
				contiguous = -1;
			else if (off > 0 && pfn != prev + 1)
				contiguous = 0;
			prev = pfn;
		}
		munmap((void *)p, size);
	}
	if (pm >= 0)
		close(pm);
	return contiguous;
}

/*
 * Why the kernel's acceptance of a heap the solver excluded for this
 * device says nothing here, or NULL when it contradicts the solver.
 */
static const char *acceptance_explained(enum slot slot, const char *reasons, const int *bufs,
					int n)
{
	if (slot == VIVID_CONTIG && strstr(reasons, "(Contiguous,") &&
	    physically_contiguous(bufs, n) == 1)
		return "these buffers happened to be physically contiguous (pagemap): "
		       "the kernel cannot tell";
	return NULL;
}

/* ---- the solver's side ---- */

static struct ion_solution *solve(struct state *s, const enum slot *slots, int n, size_t size)
{
	struct ion_alloc_config *config;
	struct ion_solution *sol;

	assert_int_equal(ion_alloc_config_new(&config), 0);
	assert_int_equal(ion_alloc_config_set_size(config, size), 0);
	for (int i = 0; i < n; i++)
		assert_int_equal(ion_alloc_config_add_device(config, s->devs[slots[i]].dev), 0);
	assert_int_equal(ion_ctx_solve(s->ctx, config, &sol), 0);
	ion_alloc_config_free(config);
	return sol;
}

static bool is_candidate(const struct ion_solution *sol, const struct ion_heap *h)
{
	for (int i = 0; i < ion_solution_get_heap_count(sol); i++)
		if (ion_solution_get_heap(sol, (unsigned int)i) == h)
			return true;
	return false;
}

/* The solver's reasons for leaving h out (those of device dev, unless
 * NULL), joined; "" if none. */
static void reasons_for(const struct ion_solution *sol, const struct ion_heap *h,
			const struct ion_device *dev, char *buf, size_t size)
{
	size_t len = 0;

	buf[0] = '\0';
	for (int i = 0; i < ion_solution_get_rejection_count(sol); i++) {
		const struct ion_heap *rh;
		const struct ion_device *rd;
		const char *reason;

		if (ion_solution_get_rejection(sol, (unsigned int)i, &rh, &rd, &reason) < 0 ||
		    rh != h || (dev && rd != dev) || len >= size)
			continue;
		len += (size_t)snprintf(buf + len, size - len, "%s%s", len ? "; " : "", reason);
	}
}

/* The heaps a device could import: available, and dma-bufs. */
static bool probed_heap(const struct ion_heap *h)
{
	return ion_heap_get_error(h) == 0 &&
	       !(ion_heap_get_properties(h) & ION_HEAP_PROP_CPU_ONLY);
}

static int alloc_named(struct state *s, const struct ion_heap *h, size_t size, int n, int *bufs)
{
	for (int i = 0; i < n; i++) {
		int r = ion_ctx_alloc(s->ctx, ion_heap_get_name(h), size, 0, &bufs[i]);

		if (r < 0) {
			print_error("%s: %zu bytes: %s\n", ion_heap_get_name(h), size, strerror(-r));
			while (i-- > 0)
				close(bufs[i]);
			return r;
		}
	}
	return 0;
}

static void close_all(int *bufs, int n)
{
	for (int i = 0; i < n; i++)
		close(bufs[i]);
}

/* ---- 1. each device alone ---- */

#define MAX_HEAPS 32

static void test_each_device_each_heap(void **pstate)
{
	struct state *s = *pstate;
	int n_heaps = ion_ctx_get_heap_count(s->ctx), mismatches = 0;
	char matrix[N_SLOTS][MAX_HEAPS][32];
	const struct ion_heap *heaps[MAX_HEAPS];

	require_devices(s);
	assert_true(n_heaps > 0 && n_heaps <= MAX_HEAPS);
	for (int i = 0; i < n_heaps; i++)
		assert_int_equal(ion_ctx_get_heap(s->ctx, (unsigned int)i, &heaps[i]), 0);
	print_message("kernel %s: each device alone, each heap\n", s->kernel);
	for (int k = 0; k < N_SLOTS; k++) {
		struct probe_dev *d = &s->devs[k];

		if (!d->present)
			continue;
		enum slot slot = (enum slot)k;
		struct ion_solution *sol = solve(s, &slot, 1, d->size);

		if (s->not_probed[k])
			print_message("  %s (%s) not probed on %s: %s; the solver's verdicts for "
				      "it are not confirmed by this kernel\n", dev_name(s, slot),
				      slot_info[k].what, s->kernel, s->not_probed[k]);
		for (int i = 0; i < n_heaps; i++) {
			const struct ion_heap *h = heaps[i];
			bool chosen = is_candidate(sol, h);
			char reasons[1024], kernel[96];
			const char *explained;
			int bufs[V4L2_BUFFERS];
			struct verdict v;

			matrix[k][i][0] = '\0';
			if (!probed_heap(h))
				continue;
			if (s->not_probed[k]) {
				reasons_for(sol, h, NULL, reasons, sizeof(reasons));
				snprintf(matrix[k][i], sizeof(matrix[k][i]), "n/p/%s",
					 chosen ? "yes" : "no");
				print_message("  not probed %-7s x %-22s solver %s\n", dev_name(s, slot),
					      ion_heap_get_name(h), chosen ? "lists it" : reasons);
				continue;
			}
			if (alloc_named(s, h, d->size, d->nbufs, bufs) < 0) {
				mismatches++;
				snprintf(matrix[k][i], sizeof(matrix[k][i]), "alloc failed");
				continue;
			}
			v = probe(s, slot, bufs, d->nbufs);
			/* The page map reader, which tells chance contiguity, is
			 * checked on each heap the library calls contiguous. */
			if (slot == VIVID_CONTIG &&
			    (ion_heap_get_properties(h) & ION_HEAP_PROP_CONTIGUOUS)) {
				int c = physically_contiguous(bufs, d->nbufs);

				if (c == 0) {
					print_error("  %s is contiguous, says the library; "
						    "/proc/self/pagemap says its buffers are not\n",
						    ion_heap_get_name(h));
					mismatches++;
				}
				print_message("  pagemap   %-22s %s\n", ion_heap_get_name(h),
					      c == 1 ? "contiguous, as the library says"
						     : c < 0 ? "cannot tell (no frames shown)"
							     : "NOT contiguous");
			}
			reasons_for(sol, h, NULL, reasons, sizeof(reasons));
			explained = v.ok && !chosen
					    ? acceptance_explained(slot, reasons, bufs, d->nbufs)
					    : NULL;
			close_all(bufs, d->nbufs);
			verdict_text(&v, kernel, sizeof(kernel));
			snprintf(matrix[k][i], sizeof(matrix[k][i]), "%s/%s%s",
				 v.ok ? "ok" : err_name(v.err), chosen ? "yes" : "no",
				 v.ok == chosen ? "" : explained ? " (known)" : " !");
			if (v.ok == chosen) {
				print_message("  agree     %-7s x %-22s kernel %s; solver %s\n",
					      dev_name(s, slot), ion_heap_get_name(h), kernel,
					      chosen ? "lists it" : reasons);
				continue;
			}
			if (explained) {
				print_message("  stricter  %-7s x %-22s kernel %s; solver %s; because %s\n",
					      dev_name(s, slot), ion_heap_get_name(h), kernel,
					      reasons, explained);
				continue;
			}
			mismatches++;
			print_error("  DISAGREE  %-7s (%s) x %s: the kernel %s, the solver %s%s\n",
				    dev_name(s, slot), slot_info[k].what, ion_heap_get_name(h),
				    kernel, chosen ? "lists it" : "excludes it: ",
				    chosen ? "" : reasons);
		}
		ion_solution_unref(sol);
	}

	/* The matrix: the kernel's verdict / whether the solver lists the heap;
	 * "!" where they disagree, "(known)" where that is explained above,
	 * "n/p" where the kernel was not asked (see above). */
	print_message("matrix, kernel %s (kernel/solver)\n%-8s", s->kernel, "");
	for (int i = 0; i < n_heaps; i++)
		if (probed_heap(heaps[i]))
			print_message(" %-22s", ion_heap_get_name(heaps[i]));
	print_message("\n");
	for (int k = 0; k < N_SLOTS; k++) {
		if (!s->devs[k].present)
			continue;
		print_message("%-8s", dev_name(s, (enum slot)k));
		for (int i = 0; i < n_heaps; i++)
			if (probed_heap(heaps[i]))
				print_message(" %-22s", matrix[k][i]);
		print_message("\n");
	}
	for (int k = 0; k < N_SLOTS; k++)
		if (s->devs[k].present && s->not_probed[k])
			print_message("(%s: not probed, the solver's verdicts unconfirmed: %s)\n",
				      dev_name(s, (enum slot)k), s->not_probed[k]);
	assert_int_equal(mismatches, 0);
}

/* ---- 2. sets of devices ---- */

static const struct {
	int n;
	enum slot slots[N_SLOTS];
} sets[] = {
	{ 2, { VIVID_CONTIG, VKMS } },
	{ 2, { VIVID_VMALLOC, VKMS } },
	{ 2, { VIVID_CONTIG, VIVID_VMALLOC } },
	{ 2, { VKMS, VIRTIO_GPU } },
	{ 2, { VIVID_CONTIG, VIRTIO_GPU } },
	{ 2, { VIVID_VMALLOC, VIRTIO_GPU } },
	{ 2, { VGEM, VKMS } },
	{ 2, { VGEM, VIRTIO_GPU } },
	{ 3, { VIVID_CONTIG, VIVID_VMALLOC, VKMS } },
	{ 4, { VIVID_CONTIG, VIVID_VMALLOC, VGEM, VKMS } },
	{ 5, { VIVID_CONTIG, VIVID_VMALLOC, VGEM, VKMS, VIRTIO_GPU } },
};

static bool in_set(const struct state *s, const enum slot *slots, int n,
		   const struct ion_device *dev)
{
	for (int i = 0; i < n; i++)
		if (s->devs[slots[i]].dev == dev)
			return true;
	return false;
}

/* Whether every reason the set gives for leaving h out is one the kernel
 * cannot show here (see the top); false when a device gave none. */
static bool unconfirmable(const struct ion_solution *sol, const struct ion_heap *h)
{
	bool any = false;

	for (int i = 0; i < ion_solution_get_rejection_count(sol); i++) {
		const struct ion_heap *rh;
		const struct ion_device *rd;
		const char *reason;

		if (ion_solution_get_rejection(sol, (unsigned int)i, &rh, &rd, &reason) < 0 ||
		    rh != h || !rd)
			continue;
		if (!strstr(reason, "(AddressBits,"))
			return false;
		any = true;
	}
	return any;
}

/* Each device of the set takes bufs (from heap h); the disagreements. */
static int set_takes(struct state *s, const enum slot *slots, int n, const struct ion_heap *h,
		     const int *bufs, const char *how)
{
	int failures = 0;

	for (int i = 0; i < n; i++) {
		struct probe_dev *d = &s->devs[slots[i]];
		struct verdict v = probe(s, slots[i], bufs, d->nbufs);
		char kernel[96];

		verdict_text(&v, kernel, sizeof(kernel));
		if (v.not_probed) {
			print_message("    %-7s not probed with %s %s (see above)\n",
				      dev_name(s, slots[i]), how, ion_heap_get_name(h));
		} else if (v.ok) {
			print_message("    %-7s takes %s %s\n", dev_name(s, slots[i]), how,
				      ion_heap_get_name(h));
		} else {
			print_error("    DISAGREE %s (%s): the solver lists %s for the set, "
				    "the kernel %s\n", dev_name(s, slots[i]), slot_info[slots[i]].what,
				    ion_heap_get_name(h), kernel);
			failures++;
		}
	}
	return failures;
}

/*
 * The set's solved heap: ion_solution_alloc's buffers are taken by each
 * device; and so are those of every other candidate, by name.
 */
static int check_solved(struct state *s, const enum slot *slots, int n,
			const struct ion_solution *sol, size_t size, int nbufs)
{
	const struct ion_heap *first = ion_solution_get_heap(sol, 0), *served = NULL;
	int bufs[V4L2_BUFFERS], failures = 0;

	for (int i = 0; i < nbufs; i++) {
		int r = ion_solution_alloc(sol, &bufs[i], &served);

		if (r < 0) {
			print_error("    ion_solution_alloc: %s\n", strerror(-r));
			close_all(bufs, i);
			return 1;
		}
		if (served != first)
			print_message("    note: %s served, not %s (out of memory?)\n",
				      ion_heap_get_name(served), ion_heap_get_name(first));
	}
	failures += set_takes(s, slots, n, served, bufs, "the solved");
	close_all(bufs, nbufs);
	for (int c = 1; c < ion_solution_get_heap_count(sol); c++) {
		const struct ion_heap *h = ion_solution_get_heap(sol, (unsigned int)c);

		if (alloc_named(s, h, size, nbufs, bufs) < 0) {
			failures++;
			continue;
		}
		failures += set_takes(s, slots, n, h, bufs, "candidate");
		close_all(bufs, nbufs);
	}
	return failures;
}

static int check_empty(struct state *s, const enum slot *slots, int n,
		       const struct ion_solution *sol)
{
	int failures = 0;

	print_message("    no heap fits the set; the solver's reasons:\n");
	for (int i = 0; i < ion_solution_get_rejection_count(sol); i++) {
		const struct ion_heap *h;
		const struct ion_device *d;
		const char *reason;

		assert_int_equal(ion_solution_get_rejection(sol, (unsigned int)i, &h, &d, &reason), 0);
		print_message("      %-22s %s\n", ion_heap_get_name(h), reason);
		if (d && !in_set(s, slots, n, d)) {
			print_error("    a rejection names %s, which is not in the set\n",
				    ion_device_get_name(d));
			failures++;
		}
	}
	/* Every importable heap is out because of a device of the set. */
	for (int i = 0; i < ion_ctx_get_heap_count(s->ctx); i++) {
		const struct ion_heap *h;
		bool by_device = false;

		assert_int_equal(ion_ctx_get_heap(s->ctx, (unsigned int)i, &h), 0);
		if (!probed_heap(h))
			continue;
		for (int k = 0; k < ion_solution_get_rejection_count(sol); k++) {
			const struct ion_heap *rh;
			const struct ion_device *rd;
			const char *reason;

			if (ion_solution_get_rejection(sol, (unsigned int)k, &rh, &rd, &reason) == 0 &&
			    rh == h && rd)
				by_device = true;
		}
		if (!by_device) {
			print_error("    %s is out, but no device of the set says why\n",
				    ion_heap_get_name(h));
			failures++;
		}
	}
	{
		int fd = -77;

		assert_int_equal(ion_solution_alloc(sol, &fd, NULL), -ENODEV);
		assert_int_equal(fd, -77);
	}
	return failures;
}

/*
 * Every heap a device of the set excluded: some device of it refuses it,
 * or each device that excluded it is stricter than the kernel for a
 * reason known here (acceptance_explained()) or was not probed (then the
 * exclusion is reported as not confirmed by this kernel, not as agreed).
 */
static int check_excluded(struct state *s, const enum slot *slots, int n,
			  const struct ion_solution *sol, size_t size, int nbufs)
{
	int failures = 0;

	for (int i = 0; i < ion_ctx_get_heap_count(s->ctx); i++) {
		const struct ion_heap *h;
		int bufs[V4L2_BUFFERS], refusals = 0;
		char reasons[1024], who[256] = "", unprobed[128] = "";
		const char *explained = NULL;
		bool all_explained = true;
		size_t len = 0, ulen = 0;

		assert_int_equal(ion_ctx_get_heap(s->ctx, (unsigned int)i, &h), 0);
		if (!probed_heap(h) || is_candidate(sol, h))
			continue;
		reasons_for(sol, h, NULL, reasons, sizeof(reasons));
		if (unconfirmable(sol, h)) {
			print_message("    %-22s out (%s): the kernel cannot tell here\n",
				      ion_heap_get_name(h), reasons);
			continue;
		}
		if (alloc_named(s, h, size, nbufs, bufs) < 0) {
			failures++;
			continue;
		}
		for (int k = 0; k < n; k++) {
			struct probe_dev *d = &s->devs[slots[k]];
			struct verdict v = probe(s, slots[k], bufs, d->nbufs);
			char mine[1024];

			reasons_for(sol, h, d->dev, mine, sizeof(mine));
			if (v.not_probed) {
				if (mine[0] && ulen < sizeof(unprobed))
					ulen += (size_t)snprintf(unprobed + ulen,
								 sizeof(unprobed) - ulen, "%s%s",
								 ulen ? ", " : "",
								 dev_name(s, slots[k]));
				continue;
			}
			if (v.ok && mine[0]) {
				const char *why = acceptance_explained(slots[k], mine, bufs, d->nbufs);

				all_explained &= why != NULL;
				explained = why ? why : explained;
			}
			if (v.ok || len >= sizeof(who))
				continue;
			refusals++;
			len += (size_t)snprintf(who + len, sizeof(who) - len, "%s%s at %s: %s",
						len ? ", " : "", dev_name(s, slots[k]), v.step,
						err_name(v.err));
		}
		close_all(bufs, nbufs);
		if (refusals) {
			print_message("    %-22s out, and refused by %s\n", ion_heap_get_name(h), who);
		} else if (explained && all_explained) {
			print_message("    %-22s out (%s), and every device takes it: stricter, "
				      "because %s\n", ion_heap_get_name(h), reasons, explained);
		} else if (unprobed[0] && all_explained) {
			print_message("    %-22s out (%s), and every device probed takes it: "
				      "not confirmed by this kernel, which %s was not probed on\n",
				      ion_heap_get_name(h), reasons, unprobed);
		} else {
			print_error("    DISAGREE %s: the solver excludes it (%s), "
				    "yet every device of the set takes it\n",
				    ion_heap_get_name(h), reasons);
			failures++;
		}
	}
	return failures;
}

static void test_device_sets(void **pstate)
{
	struct state *s = *pstate;
	int failures = 0, tried = 0;

	require_devices(s);
	print_message("kernel %s: sets of devices\n", s->kernel);
	for (int k = 0; k < N_SLOTS; k++)
		if (s->devs[k].present && s->not_probed[k])
			print_message("  %s (%s) is not probed here: %s\n", dev_name(s, (enum slot)k),
				      slot_info[k].what, s->not_probed[k]);
	for (size_t i = 0; i < sizeof(sets) / sizeof(sets[0]); i++) {
		const enum slot *slots = sets[i].slots;
		int n = sets[i].n, nbufs = 1;
		size_t size = 0;
		bool present = true;
		char names[128] = "";
		size_t len = 0;
		struct ion_solution *sol;

		for (int k = 0; k < n; k++) {
			struct probe_dev *d = &s->devs[slots[k]];

			present &= d->present;
			if (!d->present)
				break;
			size = d->size > size ? d->size : size;
			nbufs = d->nbufs > nbufs ? d->nbufs : nbufs;
			len += (size_t)snprintf(names + len, sizeof(names) - len, "%s%s",
						k ? " + " : "", dev_name(s, slots[k]));
		}
		if (!present)
			continue;
		tried++;
		sol = solve(s, slots, n, size);
		print_message("  {%s}, %zu bytes: %s\n", names, size,
			      ion_solution_get_heap_count(sol) > 0
				      ? ion_heap_get_name(ion_solution_get_heap(sol, 0))
				      : "no heap");
		if (ion_solution_get_heap_count(sol) > 0)
			failures += check_solved(s, slots, n, sol, size, nbufs);
		else
			failures += check_empty(s, slots, n, sol);
		failures += check_excluded(s, slots, n, sol, size, nbufs);
		ion_solution_unref(sol);
	}
	assert_true(tried > 0);
	assert_int_equal(failures, 0);
}

int main(void)
{
	static const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_each_device_each_heap, setup, teardown),
		cmocka_unit_test_setup_teardown(test_device_sets, setup, teardown),
	};

	return cmocka_run_group_tests_name("kernel agrees", tests, NULL, NULL);
}
