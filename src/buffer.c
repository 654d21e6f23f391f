// SPDX-License-Identifier: MIT
/*
 * Late allocation: a buffer that devices attach to, whose memory is
 * chosen at its first fd, for all of them at once.  One allocation path
 * all the same: the buffer is a config that solves itself when asked.
 */
#include <stdio.h>
#include <string.h>

#include <ion/ion.h>

#include "alloc.h"
#include "context.h"
#include "registry.h"

#define FOURCC(a, b, c, d)                                                     \
	((unsigned int)(a) | (unsigned int)(b) << 8 | (unsigned int)(c) << 16 |   \
	 (unsigned int)(d) << 24)

/* What a format's planes are: bytes per pixel, and the subsampling of
 * the planes after the first. */
static const struct format {
	unsigned int fourcc;
	unsigned int planes;
	unsigned int cpp[3];	/* bytes per (sub)pixel, per plane */
	unsigned int hsub, vsub; /* of planes 1 and 2 */
} formats[] = {
	{ FOURCC('X', 'R', '2', '4'), 1, { 4 }, 1, 1 },	/* XRGB8888 */
	{ FOURCC('A', 'R', '2', '4'), 1, { 4 }, 1, 1 },	/* ARGB8888 */
	{ FOURCC('X', 'B', '2', '4'), 1, { 4 }, 1, 1 },	/* XBGR8888 */
	{ FOURCC('A', 'B', '2', '4'), 1, { 4 }, 1, 1 },	/* ABGR8888 */
	{ FOURCC('R', 'G', '1', '6'), 1, { 2 }, 1, 1 },	/* RGB565 */
	{ FOURCC('Y', 'U', 'Y', 'V'), 1, { 2 }, 1, 1 },	/* YUYV: 2 bytes a pixel */
	{ FOURCC('U', 'Y', 'V', 'Y'), 1, { 2 }, 1, 1 },	/* UYVY */
	{ FOURCC('N', 'V', '1', '2'), 2, { 1, 2 }, 2, 2 }, /* NV12: Y, then CbCr pairs */
	{ FOURCC('N', 'V', '2', '1'), 2, { 1, 2 }, 2, 2 }, /* NV21 */
	{ FOURCC('Y', 'U', '1', '2'), 3, { 1, 1, 1 }, 2, 2 }, /* YUV420: Y, Cb, Cr */
};

struct plane {
	unsigned int stride;
	size_t offset;
};

struct ion_buffer {
	atomic_int refcount;
	struct ion_ctx *ctx;
	/* Cancellation is off while it is held; a fork() while another
	 * thread allocates leaves the child this buffer's lock held.  In
	 * storage of its own: the getters lock it through a const buffer. */
	pthread_mutex_t *lock;
	struct ion_alloc_config *config;
	size_t len;
	const struct format *format;	/* or NULL: a plain buffer */
	unsigned int width, height;
	struct plane planes[3];
	int fd;				/* -1 until allocated */
	const struct ion_heap *heap;
	/* What it was allocated from: holds the registry that holds heap. */
	struct ion_solution *solution;
	char *reason;			/* the last failure's words */
};

static int buffer_create(struct ion_ctx *ctx, size_t len, struct ion_buffer **ret)
{
	struct ion_buffer *b = calloc(1, sizeof(*b));
	int r;

	if (!b)
		return -ENOMEM;
	b->lock = malloc(sizeof(*b->lock));
	r = b->lock ? ion_alloc_config_new(&b->config) : -ENOMEM;
	if (r < 0) {
		free(b->lock);
		free(b);
		return r;
	}
	atomic_init(&b->refcount, 1);
	pthread_mutex_init(b->lock, NULL);
	b->ctx = ion_ctx_ref(ctx);
	b->len = len;
	b->fd = -1;
	*ret = b;
	return 0;
}

ION_EXPORT int ion_buffer_new(struct ion_ctx *ctx, size_t len, struct ion_buffer **ret_buffer)
{
	if (!ctx || !ret_buffer || len == 0)
		return -EINVAL;
	return buffer_create(ctx, len, ret_buffer);
}

ION_EXPORT int ion_buffer_new_image(struct ion_ctx *ctx, unsigned int fourcc,
				    unsigned int width, unsigned int height,
				    struct ion_buffer **ret_buffer)
{
	const struct format *f = NULL;
	int r;

	if (!ctx || !ret_buffer || !width || !height || width > 65536 || height > 65536)
		return -EINVAL;
	for (size_t i = 0; i < sizeof(formats) / sizeof(formats[0]) && !f; i++)
		if (formats[i].fourcc == fourcc)
			f = &formats[i];
	if (!f)
		return -EINVAL;
	r = buffer_create(ctx, 1, ret_buffer);
	if (r == 0) {
		(*ret_buffer)->format = f;
		(*ret_buffer)->width = width;
		(*ret_buffer)->height = height;
	}
	return r;
}

ION_EXPORT struct ion_buffer *ion_buffer_ref(struct ion_buffer *buffer)
{
	if (buffer)
		atomic_fetch_add_explicit(&buffer->refcount, 1, memory_order_relaxed);
	return buffer;
}

ION_EXPORT struct ion_buffer *ion_buffer_unref(struct ion_buffer *buffer)
{
	if (!buffer || atomic_fetch_sub_explicit(&buffer->refcount, 1, memory_order_acq_rel) != 1)
		return NULL;
	if (buffer->fd >= 0)
		close(buffer->fd);
	ion_alloc_config_free(buffer->config);
	ion_solution_unref(buffer->solution);
	free(buffer->reason);
	pthread_mutex_destroy(buffer->lock);
	free(buffer->lock);
	ion_ctx_unref(buffer->ctx);
	free(buffer);
	return NULL;
}

static void lock(const struct ion_buffer *b, int *state)
{
	pthread_setcancelstate(PTHREAD_CANCEL_DISABLE, state);
	pthread_mutex_lock(b->lock);
}

static void unlock(const struct ion_buffer *b, int state)
{
	pthread_mutex_unlock(b->lock);
	pthread_setcancelstate(state, NULL);
}

/* Called with the lock held: the words of the last failure replace the
 * ones before (a NULL from a failed allocation clears them, rather than
 * leave words that are no longer true). */
static void say(struct ion_buffer *b, char *reason)
{
	free(b->reason);
	b->reason = reason;
}

/* The rejections of a solution (only heap's where heap is not NULL),
 * joined: the heaps each device excluded. */
static char *why_not(const struct ion_solution *sol, const struct ion_heap *heap,
		     const char *lead)
{
	int n = ion_solution_get_rejection_count(sol);
	size_t len = strlen(lead) + 1;
	char *text, *p;

	for (int i = 0; i < n; i++) {
		const struct ion_heap *h;
		const struct ion_device *d;
		const char *reason;

		if (ion_solution_get_rejection(sol, (unsigned int)i, &h, &d, &reason) == 0 &&
		    (!heap || h == heap))
			len += strlen(ion_heap_get_name(h)) + strlen(reason) + 4;
	}
	p = text = malloc(len);
	if (!text)
		return NULL;
	p = stpcpy(p, lead);
	for (int i = 0, joined = 0; i < n; i++) {
		const struct ion_heap *h;
		const struct ion_device *d;
		const char *reason;

		if (ion_solution_get_rejection(sol, (unsigned int)i, &h, &d, &reason) == 0 &&
		    (!heap || h == heap))
			p += sprintf(p, "%s%s: %s", joined++ ? "; " : "", ion_heap_get_name(h),
				     reason);
	}
	return text;
}

/* v rounded up to a multiple of a (not 0); false if that overflows. */
static bool align_up(size_t v, size_t a, size_t *ret)
{
	if (__builtin_add_overflow(v, a - 1, ret))
		return false;
	*ret = *ret / a * a;
	return true;
}

/* Called with the lock held: the image's layout, with the devices' largest
 * Alignment for every stride and plane offset, and their largest
 * PitchAlignment and PreferredPitchAlignment for every stride; 0, or -EINVAL for an image
 * whose size does not fit a size_t (on a 32-bit machine, 65536x16385
 * XRGB8888 would otherwise wrap to 256 KiB) and nothing laid out. */
static int lay_out(struct ion_buffer *b)
{
	const struct format *f = b->format;
	size_t a = (size_t)ion_alloc_config_and_uint(b->config, ION_KEY_ALIGNMENT, NULL), offset = 0;
	size_t pitch = (size_t)ion_alloc_config_and_uint(b->config, ION_KEY_PITCH_ALIGNMENT, NULL);
	size_t wish = (size_t)ion_alloc_config_and_uint(b->config,
							ION_KEY_PREFERRED_PITCH_ALIGNMENT, NULL);
	struct plane planes[3];

	if (a == 0)
		a = 1;
	/* Powers of two all: the largest is a multiple of every other. */
	pitch = pitch > a ? pitch : a;
	pitch = wish > pitch ? wish : pitch;
	for (unsigned int p = 0; p < f->planes; p++) {
		size_t w = p ? (b->width + f->hsub - 1) / f->hsub : b->width;
		size_t h = p ? (b->height + f->vsub - 1) / f->vsub : b->height;
		size_t stride, bytes;

		if (__builtin_mul_overflow(w, f->cpp[p], &stride) || !align_up(stride, pitch, &stride) ||
		    stride > UINT32_MAX || !align_up(offset, a, &offset) ||
		    __builtin_mul_overflow(stride, h, &bytes))
			return -EINVAL;
		planes[p] = (struct plane){ (unsigned int)stride, offset };
		if (__builtin_add_overflow(offset, bytes, &offset))
			return -EINVAL;
	}
	memcpy(b->planes, planes, f->planes * sizeof(planes[0]));
	b->len = offset;
	return 0;
}

/* Called with the lock held. */
static int allocate(struct ion_buffer *b)
{
	struct ion_solution *sol = NULL;
	char lead[128];
	int r = 0;

	if (b->format && (r = lay_out(b)) < 0) {
		char *reason;

		if (asprintf(&reason, "a %ux%u image takes more bytes than a size_t counts",
			     b->width, b->height) < 0)
			reason = NULL;
		say(b, reason);
	}
	if (r == 0)
		r = ion_alloc_config_set_size(b->config, b->len);
	if (r == 0)
		r = ion_ctx_solve(b->ctx, b->config, &sol);
	/* Even with no heap here: the allocation path asks the service
	 * (iond) when this process may not open a heap's node. */
	if (r == 0) {
		r = ion_solution_alloc(sol, &b->fd, &b->heap);
		if (r < 0 && ion_solution_get_heap_count(sol) == 0) {
			/* The library's own answer, whether no heap fits the
			 * devices or none can give the length, is that no heap
			 * fits (the service's, -EDQUOT say, stands). */
			if (r == -ENOMEM)
				r = -ENODEV;
			snprintf(lead, sizeof(lead), "no heap fits every device of the buffer: ");
			say(b, why_not(sol, NULL, lead));
		} else if (r < 0) {
			char *reason;

			if (asprintf(&reason, "allocating %zu bytes: %s", b->len, strerror(-r)) < 0)
				reason = NULL;
			say(b, reason);
		} else {
			b->len = ion_solution_get_size(sol);
			b->solution = steal_ptr(&sol);
		}
	}
	ion_solution_unref(sol);
	return r;
}

ION_EXPORT int ion_buffer_get_fd(struct ion_buffer *buffer, int *ret_fd)
{
	int r = 0, state;

	if (!buffer || !ret_fd)
		return -EINVAL;
	lock(buffer, &state);
	if (buffer->fd < 0)
		r = allocate(buffer);
	if (r == 0)
		*ret_fd = buffer->fd;
	unlock(buffer, state);
	return r;
}

ION_EXPORT int ion_buffer_set_flags(struct ion_buffer *buffer, unsigned int flags)
{
	int r, state;

	if (!buffer)
		return -EINVAL;
	lock(buffer, &state);
	r = buffer->fd >= 0 ? -EBUSY : ion_alloc_config_set_flags(buffer->config, flags);
	unlock(buffer, state);
	return r;
}

/* Where a setting was made, as the solver's reasons say it: "file:line". */
static const char *src_text(const struct ion_conf_src *src, char *buf, size_t size)
{
	if (!src->file)
		return "?";
	if (!src->line)
		return src->file;
	snprintf(buf, size, "%s:%u", src->file, src->line);
	return buf;
}

/* Called with the lock held: whether plane p of the image, laid out
 * already, keeps what config's one device needs of it (Alignment,
 * PitchAlignment; a preferred pitch refuses no one): 0, or -EXDEV with
 * the reason said. */
static int check_plane(struct ion_buffer *b, const struct ion_alloc_config *config,
		       const struct ion_device *dev, unsigned int p)
{
	struct ion_conf_src asrc = { 0 }, psrc = { 0 };
	size_t a = (size_t)ion_alloc_config_and_uint(config, ION_KEY_ALIGNMENT, &asrc);
	size_t pitch = (size_t)ion_alloc_config_and_uint(config, ION_KEY_PITCH_ALIGNMENT, &psrc);
	const struct plane *pl = &b->planes[p];
	char *reason, where[512];
	int r;

	if (a > 1 && (pl->stride % a || pl->offset % a))
		r = asprintf(&reason, "%s joins an image laid out already: it needs rows and planes aligned to %zu bytes, and plane %u has stride %u at offset %zu (Alignment, %s)",
			     ion_device_get_name(dev), a, p, pl->stride, pl->offset,
			     src_text(&asrc, where, sizeof(where)));
	else if (pitch > 1 && pl->stride % pitch)
		r = asprintf(&reason, "%s joins an image laid out already: it needs rows aligned to %zu bytes, and plane %u has stride %u (PitchAlignment, %s)",
			     ion_device_get_name(dev), pitch, p, pl->stride,
			     src_text(&psrc, where, sizeof(where)));
	else
		return 0;
	say(b, r < 0 ? NULL : reason);
	return -EXDEV;
}

/* Called with the lock held: whether the heap chosen, and an image's
 * strides and plane offsets, suit dev too. */
static int check_fits(struct ion_buffer *b, struct ion_device *dev)
{
	struct ion_alloc_config *config = NULL;
	struct ion_solution *sol = NULL;
	char lead[256];
	int r = ion_alloc_config_new(&config);

	if (r == 0)
		r = ion_alloc_config_set_size(config, b->len);
	if (r == 0)
		r = ion_alloc_config_set_heap(config, ion_heap_get_name(b->heap));
	if (r == 0)
		r = ion_alloc_config_add_device(config, dev);
	if (r == 0)
		r = ion_ctx_solve(b->ctx, config, &sol);
	if (r == 0 && ion_solution_get_heap_count(sol) == 0) {
		snprintf(lead, sizeof(lead), "%s joins a buffer already allocated from %s, which it cannot take: ",
			 ion_device_get_name(dev), ion_heap_get_name(b->heap));
		say(b, why_not(sol, b->heap, lead));
		r = -EXDEV;
	}
	for (unsigned int p = 0; r == 0 && b->format && p < b->format->planes; p++)
		r = check_plane(b, config, dev, p);
	ion_solution_unref(sol);
	ion_alloc_config_free(config);
	return r;
}

ION_EXPORT int ion_buffer_attach(struct ion_buffer *buffer, struct ion_device *device)
{
	int r = 0, state;

	if (!buffer || !device)
		return -EINVAL;
	lock(buffer, &state);
	if (buffer->fd >= 0)
		r = check_fits(buffer, device);
	/* Kept either way, so that the buffer's constraints say who uses it. */
	if (r == 0)
		r = ion_alloc_config_add_device(buffer->config, device);
	unlock(buffer, state);
	return r;
}

ION_EXPORT const struct ion_heap *ion_buffer_get_heap(const struct ion_buffer *buffer)
{
	const struct ion_buffer *b = buffer;
	const struct ion_heap *h;
	int state;

	if (!b)
		return NULL;
	lock(b, &state);
	h = b->heap;
	unlock(b, state);
	return h;
}

ION_EXPORT size_t ion_buffer_get_size(const struct ion_buffer *buffer)
{
	const struct ion_buffer *b = buffer;
	size_t len;
	int state;

	if (!b)
		return 0;
	lock(b, &state);
	len = b->format && b->fd < 0 ? 0 : b->len;
	unlock(b, state);
	return len;
}

ION_EXPORT int ion_buffer_get_plane(const struct ion_buffer *buffer, unsigned int plane,
				    unsigned int *ret_stride, size_t *ret_offset)
{
	const struct ion_buffer *b = buffer;
	int r = 0, state;

	if (!b || !ret_stride || !ret_offset)
		return -EINVAL;
	lock(b, &state);
	if (!b->format || plane >= b->format->planes)
		r = -EINVAL;
	else if (b->fd < 0)
		r = -EBUSY;
	if (r == 0) {
		*ret_stride = b->planes[plane].stride;
		*ret_offset = b->planes[plane].offset;
	}
	unlock(b, state);
	return r;
}

ION_EXPORT const char *ion_buffer_get_reason(const struct ion_buffer *buffer)
{
	const struct ion_buffer *b = buffer;
	const char *reason;
	int state;

	if (!b)
		return NULL;
	lock(b, &state);
	reason = b->reason;
	unlock(b, state);
	return reason;
}
