// SPDX-License-Identifier: MIT
/*
 * Late allocation (struct ion_buffer), through the public API, on this
 * machine and in the VM: devices attach, the first ion_buffer_get_fd()
 * solves for all of them and allocates once, whoever calls it; a device
 * attached afterwards fits the heap chosen or is refused with -EXDEV and
 * a reason naming it and its constraint; an image's planes follow the
 * devices' largest Alignment.
 *
 * Devices: the machine's own (in the VM vivid's video0, vkms's card1 and
 * virtio-gpu's card2) and heaps.d devices of the test's own board file,
 * whose sections have no Match keys and are reached by their names.  Each
 * expected heap follows from the solver's documented answer for the same
 * devices (ion_ctx_solve), and in the VM from the board's facts: video0
 * needs contiguous memory (reserved), card2 takes only its own buffers
 * (OwnBuffersOnly).  On the host, whose only heap is memfd (no dma-buf,
 * which no device can import), a buffer with devices has no heap: there
 * the tests check the refusals, and the VM the allocations.
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <syslog.h>
#include <unistd.h>

#include <cmocka.h>

#include "testlib.h"

#ifndef TEST_DEFAULT_HEAPS_PATH
#error "TEST_DEFAULT_HEAPS_PATH: the heaps.d folders the library reads by default"
#endif

/* DRM's fourcc codes (<drm/drm_fourcc.h>), spelled out. */
#define FOURCC(a, b, c, d)                                                     \
	((unsigned int)(a) | (unsigned int)(b) << 8 | (unsigned int)(c) << 16 |   \
	 (unsigned int)(d) << 24)

/* Every format of the header's list, as DRM defines it: bytes per pixel
 * of each plane, and the subsampling of the planes after the first. */
static const struct format {
	const char *name;
	unsigned int fourcc;
	unsigned int planes;
	unsigned int cpp[3];
	unsigned int hsub, vsub;
} formats[] = {
	{ "XRGB8888", FOURCC('X', 'R', '2', '4'), 1, { 4 }, 1, 1 },
	{ "ARGB8888", FOURCC('A', 'R', '2', '4'), 1, { 4 }, 1, 1 },
	{ "XBGR8888", FOURCC('X', 'B', '2', '4'), 1, { 4 }, 1, 1 },
	{ "ABGR8888", FOURCC('A', 'B', '2', '4'), 1, { 4 }, 1, 1 },
	{ "RGB565", FOURCC('R', 'G', '1', '6'), 1, { 2 }, 1, 1 },
	{ "YUYV", FOURCC('Y', 'U', 'Y', 'V'), 1, { 2 }, 1, 1 },
	{ "UYVY", FOURCC('U', 'Y', 'V', 'Y'), 1, { 2 }, 1, 1 },
	{ "NV12", FOURCC('N', 'V', '1', '2'), 2, { 1, 2 }, 2, 2 },
	{ "NV21", FOURCC('N', 'V', '2', '1'), 2, { 1, 2 }, 2, 2 },
	{ "YUV420", FOURCC('Y', 'U', '1', '2'), 3, { 1, 1, 1 }, 2, 2 },
};
#define N_FORMATS (sizeof(formats) / sizeof(formats[0]))

/* The test's board file: devices by name. */
static const char *const conf_lines[] = {
	"# libion's test-buffer: devices reached by their heaps.d names",
	"[Device align256]",
	"Alignment = 256",
	"",
	"[Device align4k]",
	"Alignment = 4K",
	"",
	"[Device nowhere]",
	"Heaps = no-such-heap",
	"",
	"[Device any]",
	"Cache = any",
	NULL,
};

static char conf_dir[64];
static char conf_path[128];
static char heaps_path[4096];
static bool in_vm;

static unsigned int line_of(const char *text)
{
	for (unsigned int i = 0; conf_lines[i]; i++)
		if (strcmp(conf_lines[i], text) == 0)
			return i + 1;
	fail_msg("no line '%s' in the test's board file", text);
	return 0;
}

static int group_setup(void **state)
{
	const char *env = getenv("ION_HEAPS_PATH");
	FILE *f;

	(void)state;
	in_vm = getenv("LIBION_IN_VM") != NULL;
	strcpy(conf_dir, "/tmp/libion-buffer-XXXXXX");
	if (!mkdtemp(conf_dir))
		return -1;
	snprintf(conf_path, sizeof(conf_path), "%s/90-test-buffer.conf", conf_dir);
	f = fopen(conf_path, "we");
	if (!f)
		return -1;
	for (unsigned int i = 0; conf_lines[i]; i++)
		fprintf(f, "%s\n", conf_lines[i]);
	if (fclose(f) != 0)
		return -1;
	/* The test's file first, then what the library would read anyway
	 * (the shipped board file, in the VM). */
	snprintf(heaps_path, sizeof(heaps_path), "%s:%s", conf_path,
		 env && *env ? env : TEST_DEFAULT_HEAPS_PATH);
	return 0;
}

static int group_teardown(void **state)
{
	(void)state;
	unlink(conf_path);
	rmdir(conf_dir);
	return 0;
}

/* ---- each test's state ---- */

static char errors[4096];

__attribute__((format(printf, 6, 0)))
static void log_errors(struct ion_ctx *ctx, int priority, const char *file, int line,
		       const char *fn, const char *format, va_list args)
{
	size_t used = strlen(errors);

	(void)ctx;
	(void)file;
	(void)line;
	(void)fn;
	if (priority > LOG_ERR || used + 2 >= sizeof(errors))
		return;
	vsnprintf(errors + used, sizeof(errors) - used - 1, format, args);
	strcat(errors, "\n");
}

#define MAX_HELD 32

struct fixture {
	struct fd_table fds;
	struct ion_ctx *ctx;
	/* What a test holds while it may fail, dropped by the teardown. */
	struct ion_buffer *bufs[MAX_HELD];
	struct ion_device *devs[MAX_HELD];
	char dev_specs[MAX_HELD][32];
	struct ion_alloc_config *configs[MAX_HELD];
	struct ion_solution *sols[MAX_HELD];
};

static struct fixture *fx;

static int setup(void **state)
{
	struct fixture *f = calloc(1, sizeof(*f));

	assert_non_null(f);
	errors[0] = '\0';
	fd_table_read(&f->fds);
	assert_int_equal(ion_ctx_new(NULL, &f->ctx), 0);
	ion_ctx_set_log_fn(f->ctx, log_errors);
	assert_int_equal(ion_ctx_set_heaps_path(f->ctx, heaps_path), 0);
	assert_true(ion_ctx_get_heap_count(f->ctx) > 0);
	assert_int_equal(ion_ctx_get_config_error_count(f->ctx), 0);
	fx = f;
	*state = f;
	return 0;
}

static int teardown(void **state)
{
	struct fixture *f = *state;

	for (unsigned int i = 0; i < MAX_HELD; i++) {
		ion_buffer_unref(f->bufs[i]);
		ion_device_unref(f->devs[i]);
		ion_alloc_config_free(f->configs[i]);
		ion_solution_unref(f->sols[i]);
	}
	ion_ctx_unref(f->ctx);
	/* Discovery's fds, the buffers' fds: none outlives its objects. */
	fd_table_assert_same(&f->fds);
	free(f);
	fx = NULL;
	if (errors[0])
		fail_msg("the library logged errors:\n%s", errors);
	return 0;
}

static void *hold(void **slots, void *p)
{
	for (unsigned int i = 0; i < MAX_HELD; i++)
		if (!slots[i])
			return slots[i] = p;
	fail_msg("the test holds too much");
	return NULL;
}

/* Drops what hold() kept, before the teardown would. */
static void drop_buffer(struct ion_buffer *b)
{
	for (unsigned int i = 0; i < MAX_HELD; i++)
		if (fx->bufs[i] == b)
			fx->bufs[i] = NULL;
	assert_null(ion_buffer_unref(b));
}

/* The device of this spec, looked up once per test and held. */
static struct ion_device *device(const char *spec)
{
	struct ion_device *dev = NULL;
	int r;

	for (unsigned int i = 0; i < MAX_HELD; i++)
		if (fx->devs[i] && strcmp(fx->dev_specs[i], spec) == 0)
			return fx->devs[i];
	r = ion_ctx_get_device(fx->ctx, spec, &dev);
	if (r < 0)
		fail_msg("no device %s: %s", spec, strerror(-r));
	for (unsigned int i = 0; i < MAX_HELD; i++)
		if (!fx->devs[i]) {
			snprintf(fx->dev_specs[i], sizeof(fx->dev_specs[i]), "%s", spec);
			return fx->devs[i] = dev;
		}
	ion_device_unref(dev);
	fail_msg("the test holds too many devices");
	return NULL;
}

static struct ion_buffer *buffer(size_t len, const char *const *specs)
{
	struct ion_buffer *b = NULL;

	assert_int_equal(ion_buffer_new(fx->ctx, len, &b), 0);
	assert_non_null(b);
	hold((void **)fx->bufs, b);
	for (const char *const *s = specs; s && *s; s++)
		assert_int_equal(ion_buffer_attach(b, device(*s)), 0);
	return b;
}

/* The solver's answer for len bytes and these devices. */
static struct ion_solution *solve(size_t len, const char *const *specs)
{
	struct ion_alloc_config *config;
	struct ion_solution *sol;

	assert_int_equal(ion_alloc_config_new(&config), 0);
	hold((void **)fx->configs, config);
	assert_int_equal(ion_alloc_config_set_size(config, len), 0);
	for (const char *const *s = specs; s && *s; s++)
		assert_int_equal(ion_alloc_config_add_device(config, device(*s)), 0);
	assert_int_equal(ion_ctx_solve(fx->ctx, config, &sol), 0);
	return hold((void **)fx->sols, sol);
}

static size_t page_round(size_t len)
{
	size_t page = (size_t)sysconf(_SC_PAGESIZE);

	return (len + page - 1) / page * page;
}

static bool contains(const char *s, const char *part)
{
	return s && strstr(s, part) != NULL;
}

static bool fd_is_open(int fd)
{
	return fcntl(fd, F_GETFD) >= 0;
}

/* The line of key in [section] of the shipped board file, as the context
 * read it (in the VM: where the package put it). */
static const char *shipped_where(const char *section, const char *key)
{
	static char where[64];
	const char *path = NULL, *base = NULL;
	char header[128], *line = NULL;
	unsigned int n = 0, found = 0;
	bool inside = false;
	size_t size = 0;
	FILE *f;

	for (int i = 0; i < ion_ctx_get_config_file_count(fx->ctx); i++) {
		const char *p = ion_ctx_get_config_file(fx->ctx, (unsigned int)i);
		const char *slash = p ? strrchr(p, '/') : NULL;

		/* The VM's machine: q35 on x86_64, virt on arm64. */
		if (slash && (strcmp(slash + 1, "50-qemu-q35.conf") == 0 ||
			      strcmp(slash + 1, "50-qemu-virt.conf") == 0)) {
			path = p;
			base = slash + 1;
		}
	}
	if (!path)
		fail_msg("the board file 50-qemu-q35.conf (or 50-qemu-virt.conf) was not read");
	snprintf(header, sizeof(header), "[%s]", section);
	f = fopen(path, "re");
	assert_non_null(f);
	while (!found && getline(&line, &size, f) >= 0) {
		n++;
		line[strcspn(line, "\r\n")] = '\0';
		if (line[0] == '[')
			inside = strcmp(line, header) == 0;
		else if (inside && strncmp(line, key, strlen(key)) == 0 &&
			 strchr(" =", line[strlen(key)]))
			found = n;
	}
	free(line);
	fclose(f);
	if (!found)
		fail_msg("%s has no %s in %s", path, key, header);
	snprintf(where, sizeof(where), "%s:%u)", base, found);
	return where;
}

/* ---- a buffer without devices, and the order of its calls ---- */

static void test_plain(void **state)
{
	struct ion_solution *sol = solve(10000, NULL);
	struct ion_buffer *b = buffer(10000, NULL);
	const struct ion_heap *heap;
	size_t size = 0;
	int fd = -1, again = -1;
	unsigned char *p;

	(void)state;
	/* Nothing is allocated before the first fd. */
	assert_null(ion_buffer_get_heap(b));
	assert_int_equal(ion_buffer_get_size(b), 10000);
	assert_null(ion_buffer_get_reason(b));
	assert_int_equal(ion_buffer_set_flags(b, ION_FLAG_CACHED), 0);

	assert_int_equal(ion_buffer_get_fd(b, &fd), 0);
	assert_true(fd >= 0);
	assert_true(fd_is_cloexec(fd));
	heap = ion_buffer_get_heap(b);
	/* The solver's best heap for the same request. */
	assert_true(ion_solution_get_heap_count(sol) > 0);
	assert_ptr_equal(heap, ion_solution_get_heap(sol, 0));
	assert_int_equal(ion_buffer_get_size(b), page_round(10000));
	assert_int_equal(ion_fd_get_size(fd, &size), 0);
	assert_int_equal(size, page_round(10000));
	assert_null(ion_buffer_get_reason(b));
	/* The same fd every time; flags are fixed now. */
	assert_int_equal(ion_buffer_get_fd(b, &again), 0);
	assert_int_equal(again, fd);
	assert_int_equal(ion_buffer_set_flags(b, 0), -EBUSY);
	assert_int_equal(ion_buffer_set_flags(b, ION_FLAG_CACHED), -EBUSY);

	/* It is memory: written through one mapping, read through another. */
	p = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	assert_true(p != MAP_FAILED);
	assert_int_equal(ion_sync(fd, ION_SYNC_START | ION_SYNC_WRITE), 0);
	memset(p, 0x5a, size);
	assert_int_equal(ion_sync(fd, ION_SYNC_END | ION_SYNC_WRITE), 0);
	assert_int_equal(munmap(p, size), 0);
	p = mmap(NULL, size, PROT_READ, MAP_SHARED, fd, 0);
	assert_true(p != MAP_FAILED);
	assert_int_equal(p[0], 0x5a);
	assert_int_equal(p[size - 1], 0x5a);
	assert_int_equal(munmap(p, size), 0);

	/* The fd is the buffer's: closed with it. */
	drop_buffer(b);
	assert_false(fd_is_open(fd));
}

/* ---- attach, then get_fd ---- */

static void test_attach_then_get_fd(void **state)
{
	const char *const specs[] = { "any", NULL };
	const char *const vm_specs[] = { "video0", "card1", NULL };
	const char *const *set = in_vm ? vm_specs : specs;
	struct ion_solution *sol = solve(1 << 20, set);
	struct ion_buffer *b = buffer(1 << 20, set);
	int fd = -1, r;

	(void)state;
	/* The VM's devices are all there, and its board file was read. */
	if (in_vm)
		for (const char *const *s = vm_specs; *s; s++)
			assert_non_null(device(*s));
	if (in_vm)
		assert_non_null(device("card2"));
	r = ion_buffer_get_fd(b, &fd);
	if (ion_solution_get_heap_count(sol) == 0) {
		/* The host: memfd only, which no device can import. */
		assert_false(in_vm);
		assert_int_equal(r, -ENODEV);
		assert_int_equal(fd, -1);
		assert_null(ion_buffer_get_heap(b));
		assert_true(contains(ion_buffer_get_reason(b), "any cannot import it"));
		return;
	}
	assert_int_equal(r, 0);
	assert_true(fd >= 0);
	assert_ptr_equal(ion_buffer_get_heap(b), ion_solution_get_heap(sol, 0));
	assert_null(ion_buffer_get_reason(b));
	/* A dma-buf: the sync ioctl is the kernel's, not memfd's no-op. */
	assert_int_equal(ion_sync(fd, ION_SYNC_START | ION_SYNC_RW), 0);
	assert_int_equal(ion_sync(fd, ION_SYNC_END | ION_SYNC_RW), 0);
	if (in_vm) {
		/* vivid-000 needs one contiguous chunk: the CMA heap. */
		assert_string_equal(ion_heap_get_name(ion_buffer_get_heap(b)), "reserved");
		assert_string_equal(ion_heap_get_backend(ion_buffer_get_heap(b)), "dma-heap");
	}
}

/* ---- one allocation, whoever asks first ---- */

#define N_THREADS 16

struct race {
	struct ion_buffer *buffer;
	pthread_barrier_t barrier;
	int fds[N_THREADS];
	int results[N_THREADS];
	const struct ion_heap *heaps[N_THREADS];
};

struct racer {
	struct race *race;
	int index;
};

static void *race_one(void *arg)
{
	struct racer *me = arg;
	struct race *race = me->race;

	pthread_barrier_wait(&race->barrier);
	race->results[me->index] = ion_buffer_get_fd(race->buffer, &race->fds[me->index]);
	race->heaps[me->index] = ion_buffer_get_heap(race->buffer);
	/* A reference taken and dropped meanwhile changes nothing. */
	ion_buffer_unref(ion_buffer_ref(race->buffer));
	return NULL;
}

static void test_get_fd_from_threads(void **state)
{
	const char *const vm_specs[] = { "video0", "card1", NULL };
	struct fd_table before, after;
	struct race race = { 0 };
	struct racer racers[N_THREADS];
	pthread_t threads[N_THREADS];

	(void)state;
	for (int round = 0; round < 8; round++) {
		race.buffer = buffer(3 << 20, in_vm ? vm_specs : NULL);
		fd_table_read(&before);
		assert_int_equal(pthread_barrier_init(&race.barrier, NULL, N_THREADS), 0);
		for (int i = 0; i < N_THREADS; i++) {
			racers[i] = (struct racer){ &race, i };
			race.fds[i] = -1;
			assert_int_equal(pthread_create(&threads[i], NULL, race_one, &racers[i]), 0);
		}
		for (int i = 0; i < N_THREADS; i++)
			assert_int_equal(pthread_join(threads[i], NULL), 0);
		pthread_barrier_destroy(&race.barrier);
		/* Every thread got the one fd, from the one heap ... */
		for (int i = 0; i < N_THREADS; i++) {
			assert_int_equal(race.results[i], 0);
			assert_int_equal(race.fds[i], race.fds[0]);
			assert_ptr_equal(race.heaps[i], race.heaps[0]);
		}
		assert_non_null(race.heaps[0]);
		if (in_vm)
			assert_string_equal(ion_heap_get_name(race.heaps[0]), "reserved");
		/* ... and one allocation happened: one new fd, none lost. */
		fd_table_read(&after);
		assert_int_equal(after.n, before.n + 1);
		assert_true(fd_is_open(race.fds[0]));
		drop_buffer(race.buffer);
		assert_false(fd_is_open(race.fds[0]));
	}
}

/* ---- image layout ---- */

static size_t align_up(size_t v, size_t a)
{
	return (v + a - 1) / a * a;
}

/*
 * Each plane's stride and offset, rounded up to alignment (the devices'
 * largest, at least 1 byte), as the header describes; the length the
 * planes add up to.
 */
static size_t expected_layout(const struct format *f, unsigned int width, unsigned int height,
			      size_t alignment, unsigned int strides[3], size_t offsets[3])
{
	size_t offset = 0;

	for (unsigned int p = 0; p < f->planes; p++) {
		size_t w = p ? (width + f->hsub - 1) / f->hsub : width;
		size_t h = p ? (height + f->vsub - 1) / f->vsub : height;

		strides[p] = (unsigned int)align_up(w * f->cpp[p], alignment);
		offset = align_up(offset, alignment);
		offsets[p] = offset;
		offset += strides[p] * h;
	}
	return offset;
}

/* Every format at two sizes (one odd, so that subsampling rounds up),
 * attached to these devices, laid out with this alignment. */
static void check_layouts(const char *const *specs, size_t alignment)
{
	static const unsigned int sizes[][2] = { { 64, 48 }, { 101, 11 } };

	for (size_t i = 0; i < N_FORMATS; i++)
		for (size_t s = 0; s < 2; s++) {
			const struct format *f = &formats[i];
			unsigned int w = sizes[s][0], h = sizes[s][1], strides[3], stride = 0;
			size_t offsets[3], offset = 0, total, size = 0;
			struct ion_buffer *b = NULL;
			int fd = -1;

			total = expected_layout(f, w, h, alignment, strides, offsets);
			assert_int_equal(ion_buffer_new_image(fx->ctx, f->fourcc, w, h, &b), 0);
			hold((void **)fx->bufs, b);
			for (const char *const *d = specs; d && *d; d++)
				assert_int_equal(ion_buffer_attach(b, device(*d)), 0);
			/* Before the allocation the layout is not fixed. */
			assert_int_equal(ion_buffer_get_plane(b, 0, &stride, &offset), -EBUSY);
			assert_int_equal(ion_buffer_get_size(b), 0);
			assert_int_equal(ion_buffer_get_fd(b, &fd), 0);
			for (unsigned int p = 0; p < f->planes; p++) {
				assert_int_equal(ion_buffer_get_plane(b, p, &stride, &offset), 0);
				if (stride != strides[p] || offset != offsets[p])
					fail_msg("%s %ux%u, alignment %zu, plane %u: stride %u offset %zu, expected %u and %zu",
						 f->name, w, h, alignment, p, stride, offset, strides[p],
						 offsets[p]);
			}
			assert_int_equal(ion_buffer_get_plane(b, f->planes, &stride, &offset), -EINVAL);
			assert_int_equal(ion_buffer_get_size(b), page_round(total));
			assert_int_equal(ion_fd_get_size(fd, &size), 0);
			assert_int_equal(size, page_round(total));
			drop_buffer(b);
		}
}

static void test_image_layout(void **state)
{
	const char *const aligned[] = { "align256", NULL };
	const char *const both[] = { "align256", "align4k", NULL };

	(void)state;
	/* No device: every row and plane packed (alignment 1). */
	check_layouts(NULL, 1);
	if (ion_solution_get_heap_count(solve(1 << 20, both)) == 0) {
		struct ion_buffer *b = NULL;
		unsigned int stride;
		size_t offset;
		int fd = -1;

		/* The host: no heap for a device, so no layout is fixed. */
		assert_false(in_vm);
		print_message("no heap fits a device here: layouts with Alignment are checked in the VM\n");
		assert_int_equal(ion_buffer_new_image(fx->ctx, formats[7].fourcc, 64, 48, &b), 0);
		hold((void **)fx->bufs, b);
		assert_int_equal(ion_buffer_attach(b, device("align256")), 0);
		assert_int_equal(ion_buffer_get_fd(b, &fd), -ENODEV);
		assert_int_equal(ion_buffer_get_plane(b, 0, &stride, &offset), -EBUSY);
		return;
	}
	/* The largest Alignment of the devices attached. */
	check_layouts(aligned, 256);
	check_layouts(both, 4096);
}

/* ---- attach after the allocation ---- */

static void test_attach_after(void **state)
{
	const char *const cam[] = { "video0", NULL };
	struct ion_buffer *b;
	const char *reason;
	char lead[256];
	int fd = -1, again = -1;

	(void)state;
	if (!in_vm) {
		/* The host: a plain buffer is a memfd, which a device refuses. */
		b = buffer(1 << 20, NULL);
		assert_int_equal(ion_buffer_get_fd(b, &fd), 0);
		assert_int_equal(ion_buffer_attach(b, device("any")), -EXDEV);
		reason = ion_buffer_get_reason(b);
		snprintf(lead, sizeof(lead), "any joins a buffer already allocated from %s",
			 ion_heap_get_name(ion_buffer_get_heap(b)));
		assert_true(contains(reason, lead));
		assert_true(contains(reason, "any cannot import it"));
		/* A device that names no heap the buffer has: its constraint. */
		assert_int_equal(ion_buffer_attach(b, device("nowhere")), -EXDEV);
		reason = ion_buffer_get_reason(b);
		assert_true(contains(reason, "nowhere joins a buffer already allocated"));
		/* The reason is the heap's verdict, not every other heap's. */
		assert_false(contains(reason, "not the heap asked for"));
		/* Refused, and the buffer is as it was. */
		assert_int_equal(ion_buffer_get_fd(b, &again), 0);
		assert_int_equal(again, fd);
		return;
	}
	/* The VM: a buffer for video0 comes from reserved ... */
	b = buffer(1 << 20, cam);
	assert_int_equal(ion_buffer_get_fd(b, &fd), 0);
	assert_string_equal(ion_heap_get_name(ion_buffer_get_heap(b)), "reserved");
	/* ... which vkms (KernelMap) can take ... */
	assert_int_equal(ion_buffer_attach(b, device("card1")), 0);
	assert_int_equal(ion_buffer_attach(b, device("align256")), 0);
	/* ... and virtio-gpu cannot: it takes only its own buffers. */
	assert_int_equal(ion_buffer_attach(b, device("card2")), -EXDEV);
	reason = ion_buffer_get_reason(b);
	print_message("attach card2: %s\n", reason);
	assert_true(contains(reason, "card2 joins a buffer already allocated from reserved"));
	assert_true(contains(reason, "card2 takes only buffers of its own DRM device"));
	assert_true(contains(reason, "(OwnBuffersOnly, "));
	assert_true(contains(reason, shipped_where("Device virtio-gpu", "OwnBuffersOnly")));
	assert_false(contains(reason, "not the heap asked for"));
	/* A device whose Heaps leave reserved out: named with its source. */
	assert_int_equal(ion_buffer_attach(b, device("nowhere")), -EXDEV);
	reason = ion_buffer_get_reason(b);
	snprintf(lead, sizeof(lead), "(Heaps, %s:%u)", conf_path, line_of("Heaps = no-such-heap"));
	assert_true(contains(reason, "nowhere takes only the heaps no-such-heap"));
	assert_true(contains(reason, lead));
	assert_int_equal(ion_buffer_get_fd(b, &again), 0);
	assert_int_equal(again, fd);

	/* The other way round: vkms alone gets scattered memory, where
	 * video0 cannot follow. */
	b = buffer(1 << 20, (const char *const[]){ "card1", NULL });
	assert_int_equal(ion_buffer_get_fd(b, &fd), 0);
	assert_string_equal(ion_heap_get_name(ion_buffer_get_heap(b)), "system");
	assert_int_equal(ion_buffer_attach(b, device("video0")), -EXDEV);
	reason = ion_buffer_get_reason(b);
	print_message("attach video0: %s\n", reason);
	assert_true(contains(reason, "video0 joins a buffer already allocated from system"));
	assert_true(contains(reason, "video0 needs physically contiguous memory"));
	assert_true(contains(reason, shipped_where("Device vivid-contig", "Contiguous")));

	/* An image laid out for no device: a device whose Alignment its rows
	 * do not keep is refused, one whose they do is taken. */
	b = NULL;
	assert_int_equal(ion_buffer_new_image(fx->ctx, formats[0].fourcc, 101, 11, &b), 0);
	hold((void **)fx->bufs, b);
	assert_int_equal(ion_buffer_get_fd(b, &fd), 0);
	assert_int_equal(ion_buffer_attach(b, device("align256")), -EXDEV);
	reason = ion_buffer_get_reason(b);
	print_message("attach align256 to a 101-pixel image: %s\n", reason);
	assert_true(contains(reason, "align256 joins an image laid out already"));
	assert_true(contains(reason, "aligned to 256 bytes, and plane 0 has stride 404"));
	/* The key, and the file and line that set it. */
	snprintf(lead, sizeof(lead), "(Alignment, %s:%u)", conf_path, line_of("Alignment = 256"));
	assert_true(contains(reason, lead));
	drop_buffer(b);
	b = NULL;
	assert_int_equal(ion_buffer_new_image(fx->ctx, formats[0].fourcc, 64, 11, &b), 0);
	hold((void **)fx->bufs, b);
	assert_int_equal(ion_buffer_get_fd(b, &fd), 0);
	assert_int_equal(ion_buffer_attach(b, device("align256")), 0);
	drop_buffer(b);
}

/* ---- no heap fits ---- */

static void test_no_heap_fits(void **state)
{
	const char *const specs[] = { "nowhere", "any", NULL };
	struct ion_buffer *b = buffer(1 << 20, specs);
	struct fd_table before;
	const char *reason;
	char part[256];
	int fd = -1;

	(void)state;
	assert_int_equal(ion_solution_get_heap_count(solve(1 << 20, specs)), 0);
	fd_table_read(&before);
	assert_int_equal(ion_buffer_get_fd(b, &fd), -ENODEV);
	assert_int_equal(fd, -1);
	fd_table_assert_same(&before);
	assert_null(ion_buffer_get_heap(b));
	reason = ion_buffer_get_reason(b);
	print_message("%s\n", reason);
	assert_true(contains(reason, "no heap fits every device of the buffer"));
	/* Every heap of the machine, and which device excluded it. */
	for (int i = 0; i < ion_ctx_get_heap_count(fx->ctx); i++) {
		const struct ion_heap *h;

		assert_int_equal(ion_ctx_get_heap(fx->ctx, (unsigned int)i, &h), 0);
		if (ion_heap_get_error(h) != 0)
			continue;
		snprintf(part, sizeof(part), "%s: nowhere ", ion_heap_get_name(h));
		assert_true(contains(reason, part));
		if (ion_heap_get_properties(h) & ION_HEAP_PROP_CPU_ONLY)
			continue;
		snprintf(part, sizeof(part), "%s: nowhere takes only the heaps no-such-heap (Heaps, %s:%u)",
			 ion_heap_get_name(h), conf_path, line_of("Heaps = no-such-heap"));
		assert_true(contains(reason, part));
	}
	/* Asking again asks again, and still nothing fits. */
	assert_int_equal(ion_buffer_get_fd(b, &fd), -ENODEV);
	assert_non_null(ion_buffer_get_reason(b));
	/* Not allocated: flags may still change, and attach still joins. */
	assert_int_equal(ion_buffer_set_flags(b, ION_FLAG_CACHED), 0);
	assert_int_equal(ion_buffer_attach(b, device("align256")), 0);
	fd_table_assert_same(&before);
}

/* ---- references ---- */

static void test_refcounts(void **state)
{
	struct ion_ctx *ctx = NULL;
	struct ion_buffer *b = NULL;
	const struct ion_heap *heap;
	int fd = -1;

	(void)state;
	assert_int_equal(ion_ctx_new(NULL, &ctx), 0);
	ion_ctx_set_log_fn(ctx, log_errors);
	assert_int_equal(ion_ctx_set_heaps_path(ctx, heaps_path), 0);
	assert_int_equal(ion_buffer_new(ctx, 4096, &b), 0);
	/* The buffer keeps its context alive. */
	assert_null(ion_ctx_unref(ctx));
	assert_int_equal(ion_buffer_get_fd(b, &fd), 0);
	heap = ion_buffer_get_heap(b);
	assert_non_null(heap);
	/* The heap lives as long as the context, which the buffer holds. */
	assert_non_null(ion_heap_get_name(heap));
	assert_ptr_equal(ion_buffer_ref(b), b);
	assert_null(ion_buffer_unref(b));
	assert_true(fd_is_open(fd));
	assert_int_equal(ion_buffer_get_size(b), page_round(4096));
	assert_null(ion_buffer_unref(b));
	assert_false(fd_is_open(fd));
	assert_null(ion_buffer_ref(NULL));
	assert_null(ion_buffer_unref(NULL));

	/* A device attached holds the context too, and the buffer the device. */
	assert_int_equal(ion_ctx_new(NULL, &ctx), 0);
	ion_ctx_set_log_fn(ctx, log_errors);
	assert_int_equal(ion_ctx_set_heaps_path(ctx, heaps_path), 0);
	assert_int_equal(ion_buffer_new_image(ctx, formats[0].fourcc, 16, 16, &b), 0);
	{
		struct ion_device *dev = NULL;

		assert_int_equal(ion_ctx_get_device(ctx, "align256", &dev), 0);
		assert_int_equal(ion_buffer_attach(b, dev), 0);
		assert_null(ion_device_unref(dev));
	}
	assert_null(ion_ctx_unref(ctx));
	fd = -1;
	(void)ion_buffer_get_fd(b, &fd);
	assert_null(ion_buffer_unref(b));
	/* (The teardown's fd table says nothing was left open.) */
}

/* ---- bad input ---- */

static void test_bad_input(void **state)
{
	struct ion_buffer *sentinel = (struct ion_buffer *)&sentinel, *b = sentinel;
	struct ion_buffer *plain = buffer(4096, NULL), *image = NULL, *huge = NULL;
	unsigned int stride = 77;
	size_t offset = 77;
	int fd = -77;

	(void)state;
	assert_int_equal(ion_buffer_new(NULL, 4096, &b), -EINVAL);
	assert_int_equal(ion_buffer_new(fx->ctx, 0, &b), -EINVAL);
	assert_int_equal(ion_buffer_new(fx->ctx, 4096, NULL), -EINVAL);
	assert_int_equal(ion_buffer_new_image(NULL, formats[0].fourcc, 16, 16, &b), -EINVAL);
	assert_int_equal(ion_buffer_new_image(fx->ctx, formats[0].fourcc, 16, 16, NULL), -EINVAL);
	assert_int_equal(ion_buffer_new_image(fx->ctx, FOURCC('N', 'V', '1', '6'), 16, 16, &b), -EINVAL);
	assert_int_equal(ion_buffer_new_image(fx->ctx, 0, 16, 16, &b), -EINVAL);
	assert_int_equal(ion_buffer_new_image(fx->ctx, formats[0].fourcc, 0, 16, &b), -EINVAL);
	assert_int_equal(ion_buffer_new_image(fx->ctx, formats[0].fourcc, 16, 0, &b), -EINVAL);
	assert_int_equal(ion_buffer_new_image(fx->ctx, formats[0].fourcc, 1U << 31, 16, &b), -EINVAL);
	assert_int_equal(ion_buffer_new_image(fx->ctx, formats[0].fourcc, 16, UINT32_MAX, &b), -EINVAL);
	assert_ptr_equal(b, sentinel);

	/*
	 * 65536 x 16385 XRGB8888 is 4 GiB + 256 KiB, which a 32-bit size_t
	 * (armhf, run under qemu-user by the cross build) would wrap to
	 * 256 KiB: refused there, with nothing laid out.  Where it fits (64
	 * bits), "nowhere" leaves it no heap, so nothing is allocated either.
	 */
	assert_int_equal(ion_buffer_new_image(fx->ctx, formats[0].fourcc, 65536, 16385, &huge), 0);
	hold((void **)fx->bufs, huge);
	assert_int_equal(ion_buffer_attach(huge, device("nowhere")), 0);
	if (SIZE_MAX == UINT32_MAX) {
		assert_int_equal(ion_buffer_get_fd(huge, &fd), -EINVAL);
		assert_true(contains(ion_buffer_get_reason(huge),
				     "a 65536x16385 image takes more bytes than a size_t counts"));
	} else {
		assert_int_equal(ion_buffer_get_fd(huge, &fd), -ENODEV);
		assert_true(contains(ion_buffer_get_reason(huge), "no heap fits every device"));
	}
	assert_int_equal(fd, -77);
	assert_int_equal(ion_buffer_get_plane(huge, 0, &stride, &offset), -EBUSY);
	assert_int_equal(ion_buffer_get_size(huge), 0);

	assert_int_equal(ion_buffer_attach(NULL, device("any")), -EINVAL);
	assert_int_equal(ion_buffer_attach(plain, NULL), -EINVAL);
	assert_int_equal(ion_buffer_set_flags(NULL, 0), -EINVAL);
	assert_int_equal(ion_buffer_set_flags(plain, 1U << 8), -EINVAL);
	assert_int_equal(ion_buffer_get_fd(NULL, &fd), -EINVAL);
	assert_int_equal(ion_buffer_get_fd(plain, NULL), -EINVAL);
	assert_int_equal(fd, -77);
	assert_null(ion_buffer_get_heap(NULL));
	assert_int_equal(ion_buffer_get_size(NULL), 0);
	assert_null(ion_buffer_get_reason(NULL));

	/* Planes: only an image has them, only as many as its format. */
	assert_int_equal(ion_buffer_get_plane(NULL, 0, &stride, &offset), -EINVAL);
	assert_int_equal(ion_buffer_get_fd(plain, &fd), 0);
	assert_int_equal(ion_buffer_get_plane(plain, 0, &stride, &offset), -EINVAL);
	assert_int_equal(ion_buffer_new_image(fx->ctx, formats[7].fourcc, 16, 16, &image), 0);
	hold((void **)fx->bufs, image);
	assert_int_equal(ion_buffer_get_fd(image, &fd), 0);
	assert_int_equal(ion_buffer_get_plane(image, 0, NULL, &offset), -EINVAL);
	assert_int_equal(ion_buffer_get_plane(image, 0, &stride, NULL), -EINVAL);
	assert_int_equal(ion_buffer_get_plane(image, 2, &stride, &offset), -EINVAL);
	assert_int_equal(ion_buffer_get_plane(image, UINT32_MAX, &stride, &offset), -EINVAL);
	assert_int_equal(stride, 77);
	assert_int_equal(offset, 77);
	assert_int_equal(ion_buffer_get_plane(image, 1, &stride, &offset), 0);
	assert_int_equal(stride, 16);
	assert_int_equal(offset, 16 * 16);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_plain, setup, teardown),
		cmocka_unit_test_setup_teardown(test_attach_then_get_fd, setup, teardown),
		cmocka_unit_test_setup_teardown(test_get_fd_from_threads, setup, teardown),
		cmocka_unit_test_setup_teardown(test_image_layout, setup, teardown),
		cmocka_unit_test_setup_teardown(test_attach_after, setup, teardown),
		cmocka_unit_test_setup_teardown(test_no_heap_fits, setup, teardown),
		cmocka_unit_test_setup_teardown(test_refcounts, setup, teardown),
		cmocka_unit_test_setup_teardown(test_bad_input, setup, teardown),
	};

	return cmocka_run_group_tests(tests, group_setup, group_teardown);
}
