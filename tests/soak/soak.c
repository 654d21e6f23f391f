// SPDX-License-Identifier: MIT
/*
 * The soak test (issue 20): one context lives through 100,000
 * allocations, 1,000 rescans, 1,000 pool trims and 1,000 forks, and its
 * fd count and RSS must stay flat.
 *
 * The context reads a fake root (a temporary folder with the parts of
 * /dev and /sys the library reads), in which a camera is plugged and
 * unplugged between rescans, so that every rescan publishes a new set of
 * devices; a fake DMA-BUF heap node sits there for discovery to open.
 * Allocations come from the root's memfd heap, which works on every
 * machine: by name, by config, through a pool of our own, and through a
 * heap pool (the root's heaps.d gives memfd a Pool hint).  The work is
 * interleaved evenly, the fd count (/proc/self/fd) and RSS
 * (/proc/self/statm) sampled every 1 % of it, and the least-squares slope
 * of each against the work done is taken over the second half of the run,
 * after the pools and malloc's arenas have warmed up.
 *
 * The limits.  fds: the end may be at most --fd-margin (16) above the
 * start, taken before the pools fill: they keep 8 buffers ready and the
 * refill thread opens what it watches (10 in all, measured), which come
 * and go with trims and refills.  One fd kept per rescan ends 1,000
 * above.  And the fd count may grow by --fd-slope-max (0.5) per 1000
 * operations over the second half, where a healthy run measures 0.00
 * and one fd a rescan or a fork 10, so that a leak too small for the
 * margin still fails.  RSS: at most --rss-slope-max (4) KiB per 1000 operations over
 * the second half, one page: 400 KiB over the full run, above what
 * malloc's arenas and the pools' bookkeeping wander by when nothing
 * leaks, and below any leak of 4 bytes an operation, or 400 bytes a
 * rescan (rescans are 1 % of the work).  It is the anonymous part that
 * is judged (see read_rss()); VmRSS is reported beside it.  RSS is not
 * judged under a sanitizer or valgrind, whose own heaps grow, nor in a
 * run of fewer than 20,000 operations (RSS_MIN_OPS).
 *
 * A forked child must find its pools empty, and neither its pool get
 * nor its allocation may hand it a file the parent had at the fork.  The
 * parent's memfds it inherited are counted (child_inherited_memfds), not
 * judged: a buffer the refill thread has allocated and not yet put in
 * its pool when fork() comes is no pooled fd, so the child keeps it.
 *
 * Exit status: 0 flat; 1 a leak (fds above start + margin, or an RSS
 * slope over the limit), an operation that failed, or a rescan that saw
 * no change; 2 a usage error.
 */
#include <errno.h>
#include <fcntl.h>
#include <dirent.h>
#include <limits.h>
#include <poll.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <time.h>
#include <unistd.h>

#include <ion/ion.h>

#include "testlib.h"
#include "watch.h"

enum op { OP_ALLOC, OP_RESCAN, OP_TRIM, OP_FORK, OP_COUNT };

static const char *const op_names[OP_COUNT] = { "allocs", "rescans", "trims", "forks" };

struct options {
	unsigned long target[OP_COUNT];
	unsigned long seconds;
	unsigned long fd_margin;
	double fd_slope_max;  /* fds per 1000 operations, after warm-up */
	double rss_slope_max; /* KiB per 1000 operations, after warm-up */
	bool json;
	bool verbose;
};

/* One look at the process, after ops operations (rescans of them). */
struct sample {
	unsigned long ops;
	unsigned long rescans;
	long fds;
	long rss_kib;  /* VmRSS */
	long anon_kib; /* of which anonymous: malloc's, the stacks */
};

struct stats {
	unsigned long done[OP_COUNT];
	unsigned long by_name, by_config, pool_puts, pool_closes, touched;
	unsigned long changed, plugs, unplugs, devices_got, solves, rejections;
	unsigned long solution_allocs, scratch_pools;
	unsigned long pool_trims, ctx_trims, trimmed;
	unsigned long forks_pooled, child_inherited;
};

/* A file's identity: what tells whether two fds are one buffer. */
struct file_id {
	dev_t dev;
	ino_t ino;
};

struct id_set {
	struct file_id *ids;
	size_t n, cap;
};

/* What a forked child tells its parent: in a shared page, no fd. */
struct child_report {
	unsigned long inherited_memfds;
};

struct soak {
	struct options opt;
	char root[64];
	bool plugged;
	struct ion_ctx *ctx;
	struct ion_pool *pool;
	int monitor;
	struct stats st;
	struct sample *samples;
	size_t n_samples, cap_samples;
	struct id_set parent_ids; /* the parent's files at the last fork */
	struct child_report *report;
	struct timespec start;
	double seconds;
	bool capped; /* stopped by --seconds before the counts were done */
	char failure[512];
};

/* Sizes that cycle through the allocations: a page, the heap pool's two
 * hinted sizes, and one above a size class's start. */
static const size_t sizes[] = { 4096, 64 << 10, 256 << 10, (1 << 20) + 4096 };
#define N_SIZES (sizeof(sizes) / sizeof(sizes[0]))

/* The pool's hints: what a camera stream would keep ready. */
#define POOL_HINTS "2x4K 2x64K 1x1088K"

/* ---- failures ---- */

/* Records the first failure (later ones are its consequences) and
 * returns -1, so that a check reads `return fail(s, ...)`. */
__attribute__((format(printf, 2, 3)))
static int fail(struct soak *s, const char *fmt, ...)
{
	va_list ap;

	if (s->failure[0])
		return -1;
	va_start(ap, fmt);
	vsnprintf(s->failure, sizeof(s->failure), fmt, ap);
	va_end(ap);
	return -1;
}

static int check(struct soak *s, int r, const char *what)
{
	return r < 0 ? fail(s, "%s: %s", what, strerror(-r)) : 0;
}

/* ---- the fake root ---- */

enum entry_kind { E_DIR, E_FILE, E_LINK, E_NODE };

struct entry {
	enum entry_kind kind;
	const char *path;
	const char *text; /* a file's content, a link's target */
	unsigned int major, minor;
};

#define CAM "/sys/devices/platform/soakcam.0/video4linux/video0"

/* What stays: a DMA-BUF heap node of the dma_heap class (/dev/null's
 * numbers, so that opening it is harmless), which discovery opens and a
 * registry keeps open; the camera's platform device; a board file. */
static const struct entry base_tree[] = {
	{ E_DIR, "/dev/dri", NULL, 0, 0 },
	{ E_DIR, "/sys/class/video4linux", NULL, 0, 0 },
	{ E_DIR, "/sys/bus/platform/drivers/soakcam", NULL, 0, 0 },
	{ E_FILE, "/proc/meminfo", "MemTotal:        4000000 kB\n", 0, 0 },
	{ E_FILE, "/sys/devices/virtual/dma_heap/system/uevent",
	  "MAJOR=1\nMINOR=3\nDEVNAME=dma_heap/system\n", 0, 0 },
	{ E_FILE, "/sys/devices/virtual/dma_heap/system/dev", "1:3\n", 0, 0 },
	{ E_LINK, "/sys/devices/virtual/dma_heap/system/subsystem", "../../../../class/dma_heap", 0, 0 },
	{ E_DIR, "/sys/class/dma_heap", NULL, 0, 0 },
	{ E_LINK, "/sys/class/dma_heap/system", "../../devices/virtual/dma_heap/system", 0, 0 },
	{ E_LINK, "/sys/dev/char/1:3", "../../devices/virtual/dma_heap/system", 0, 0 },
	{ E_NODE, "/dev/dma_heap/system", NULL, 1, 3 },
	{ E_LINK, "/sys/devices/platform/soakcam.0/subsystem", "../../../bus/platform", 0, 0 },
	{ E_LINK, "/sys/devices/platform/soakcam.0/driver", "../../../bus/platform/drivers/soakcam", 0, 0 },
	/* memfd's heap pool makes ion_ctx_alloc() of 64K and 256K a pool
	 * hit; the camera gets a constraint for the solver to word. */
	{ E_FILE, "/heaps.d/50-soak.conf",
	  "[Heap memfd]\nPool = 2x64K 1x256K\n\n"
	  "[Device soakcam]\nMatchSubsystem = video4linux\nMatchName = soak-camera\n"
	  "Heaps = system\nAddressBits = 32\n", 0, 0 },
};

/* The camera, in the order the kernel makes it: the class device, its
 * links, then devtmpfs's node (which the monitor's inotify sees).  A
 * minor no real V4L2 driver hands out first, so that a real videodev
 * major opened by discovery answers ENXIO at worst. */
static const struct entry camera[] = {
	{ E_FILE, CAM "/uevent", "MAJOR=81\nMINOR=199\nDEVNAME=video0\n", 0, 0 },
	{ E_FILE, CAM "/dev", "81:199\n", 0, 0 },
	{ E_FILE, CAM "/name", "soak-camera\n", 0, 0 },
	{ E_LINK, CAM "/subsystem", "../../../../../class/video4linux", 0, 0 },
	{ E_LINK, CAM "/device", "../../../soakcam.0", 0, 0 },
	{ E_LINK, "/sys/class/video4linux/video0", "../../devices/platform/soakcam.0/video4linux/video0", 0, 0 },
	{ E_LINK, "/sys/dev/char/81:199", "../../devices/platform/soakcam.0/video4linux/video0", 0, 0 },
	{ E_NODE, "/dev/video0", NULL, 81, 199 },
};

/* Folders the camera's entries made, deepest first, for the unplug. */
static const char *const camera_dirs[] = { CAM, "/sys/devices/platform/soakcam.0/video4linux" };

static void root_path(const struct soak *s, const char *rel, char *out, size_t size)
{
	snprintf(out, size, "%s%s", s->root, rel);
}

/* mkdir -p of path's folders (and of path itself when whole). */
static int make_dirs(const char *path, bool whole)
{
	char buf[PATH_MAX];
	size_t len;

	snprintf(buf, sizeof(buf), "%s", path);
	len = strlen(buf);
	for (size_t i = 1; i <= len; i++) {
		if (buf[i] != '/' && (buf[i] != '\0' || !whole))
			continue;
		buf[i] = '\0';
		if (mkdir(buf, 0755) < 0 && errno != EEXIST)
			return -errno;
		if (i < len)
			buf[i] = '/';
	}
	return 0;
}

static int write_text(const char *path, const char *text)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	ssize_t n;

	if (fd < 0)
		return -errno;
	n = write(fd, text, strlen(text));
	close(fd);
	return n == (ssize_t)strlen(text) ? 0 : -EIO;
}

/* A character device node: the real thing as root; elsewhere a link to
 * /dev/null, which discovery stats as a char device all the same. */
static int make_node(const char *path, unsigned int major, unsigned int minor)
{
	if (mknod(path, S_IFCHR | 0666, makedev(major, minor)) == 0)
		return 0;
	if (errno != EPERM)
		return -errno;
	return symlink("/dev/null", path) == 0 ? 0 : -errno;
}

static int put_entry(const struct soak *s, const struct entry *e)
{
	char path[PATH_MAX];
	int r;

	root_path(s, e->path, path, sizeof(path));
	r = make_dirs(path, e->kind == E_DIR);
	if (r < 0 || e->kind == E_DIR)
		return r;
	if (e->kind == E_FILE)
		return write_text(path, e->text);
	if (e->kind == E_NODE)
		return make_node(path, e->major, e->minor);
	return symlink(e->text, path) == 0 ? 0 : -errno;
}

static int put_entries(struct soak *s, const struct entry *e, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		int r = put_entry(s, &e[i]);

		if (r < 0)
			return fail(s, "fake root: %s: %s", e[i].path, strerror(-r));
	}
	return 0;
}

static int plug(struct soak *s)
{
	s->st.plugs++;
	s->plugged = true;
	return put_entries(s, camera, sizeof(camera) / sizeof(camera[0]));
}

/* The reverse: the node goes first, as devtmpfs removes it first. */
static int unplug(struct soak *s)
{
	char path[PATH_MAX];

	s->st.unplugs++;
	s->plugged = false;
	for (size_t i = sizeof(camera) / sizeof(camera[0]); i-- > 0;) {
		root_path(s, camera[i].path, path, sizeof(path));
		if (unlink(path) < 0)
			return fail(s, "unplug: %s: %s", camera[i].path, strerror(errno));
	}
	for (size_t i = 0; i < sizeof(camera_dirs) / sizeof(camera_dirs[0]); i++) {
		root_path(s, camera_dirs[i], path, sizeof(path));
		if (rmdir(path) < 0)
			return fail(s, "unplug: %s: %s", camera_dirs[i], strerror(errno));
	}
	return 0;
}

static int make_root(struct soak *s)
{
	snprintf(s->root, sizeof(s->root), "/tmp/libion-soak-XXXXXX");
	if (!mkdtemp(s->root)) {
		s->root[0] = '\0';
		return fail(s, "mkdtemp: %s", strerror(errno));
	}
	return put_entries(s, base_tree, sizeof(base_tree) / sizeof(base_tree[0]));
}

/* ---- what the process holds ---- */

/* Room for one more of n elements in *v, doubling: 0 or -ENOMEM. */
static int grow(void **v, size_t *cap, size_t n, size_t elem)
{
	size_t more = *cap ? 2 * *cap : 64;
	void *grown;

	if (n < *cap)
		return 0;
	grown = realloc(*v, more * elem);
	if (!grown)
		return -ENOMEM;
	*v = grown;
	*cap = more;
	return 0;
}

/* Calls fn on every fd of the process (but the directory's own). */
static int each_fd(int (*fn)(int fd, void *arg), void *arg)
{
	DIR *dir = opendir("/proc/self/fd");
	struct dirent *de;
	int r = 0;

	if (!dir)
		return -errno;
	while (r == 0 && (de = readdir(dir)))
		if (de->d_name[0] != '.' && atoi(de->d_name) != dirfd(dir))
			r = fn(atoi(de->d_name), arg);
	closedir(dir);
	return r;
}

static int count_one(int fd, void *arg)
{
	(void)fd;
	++*(long *)arg;
	return 0;
}

static long count_fds(void)
{
	long n = 0;

	return each_fd(count_one, &n) < 0 ? -1 : n;
}

/*
 * RSS, and of it what is not file pages: the buffers' pages count as
 * "shared" while the refill thread maps one to zero it (up to 1 MiB,
 * in a third of the samples at small counts), which says nothing of
 * what the library keeps.  0, or -1 when statm cannot be read.
 */
static int read_rss(struct sample *smp)
{
	FILE *f = fopen("/proc/self/statm", "re");
	unsigned long size, resident, shared, kib = (unsigned long)sysconf(_SC_PAGESIZE) / 1024;
	int n;

	if (!f)
		return -1;
	n = fscanf(f, "%lu %lu %lu", &size, &resident, &shared);
	fclose(f);
	if (n != 3)
		return -1;
	smp->rss_kib = (long)(resident * kib);
	smp->anon_kib = (long)((resident - shared) * kib);
	return 0;
}

static unsigned long ops_done(const struct soak *s)
{
	unsigned long n = 0;

	for (int k = 0; k < OP_COUNT; k++)
		n += s->st.done[k];
	return n;
}

static int take_sample(struct soak *s)
{
	struct sample *smp;

	if (grow((void **)&s->samples, &s->cap_samples, s->n_samples, sizeof(*s->samples)) < 0)
		return fail(s, "samples: out of memory");
	smp = &s->samples[s->n_samples++];
	smp->ops = ops_done(s);
	smp->rescans = s->st.done[OP_RESCAN];
	smp->fds = count_fds();
	if (smp->fds < 0 || read_rss(smp) < 0)
		return fail(s, "/proc/self: cannot read the fd table or statm");
	if (s->opt.verbose)
		fprintf(stderr, "sample ops=%lu rescans=%lu fds=%ld rss_kib=%ld anon_kib=%ld\n",
			smp->ops, smp->rescans, smp->fds, smp->rss_kib, smp->anon_kib);
	return 0;
}

/* ---- allocations ---- */

/* Maps the first page, writes it between sync brackets, as a producer
 * does, so that the soak also goes through mmap and ion_sync. */
static int touch(struct soak *s, int fd)
{
	long page = sysconf(_SC_PAGESIZE);
	unsigned char *p = mmap(NULL, (size_t)page, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	int r;

	if (p == MAP_FAILED)
		return fail(s, "mmap: %s", strerror(errno));
	r = ion_sync(fd, ION_SYNC_START | ION_SYNC_WRITE);
	p[0] = 0xa5;
	if (r == 0)
		r = ion_sync(fd, ION_SYNC_END | ION_SYNC_WRITE);
	munmap(p, (size_t)page);
	s->st.touched++;
	return check(s, r, "ion_sync");
}

/* Every buffer is at least as long as asked, whichever path made it. */
static int check_size(struct soak *s, int fd, size_t len, const char *what)
{
	size_t size = 0;
	int r = ion_fd_get_size(fd, &size);

	if (r < 0)
		return check(s, r, what);
	return size >= len ? 0 : fail(s, "%s: %zu bytes for %zu", what, size, len);
}

static int alloc_by_name(struct soak *s, size_t len, int *ret_fd)
{
	s->st.by_name++;
	return check(s, ion_ctx_alloc(s->ctx, "memfd", len, 0, ret_fd), "ion_ctx_alloc");
}

/* A builder made and freed each time: the config holds nothing across
 * a rescan. */
static int alloc_by_config(struct soak *s, size_t len, bool cached, int *ret_fd)
{
	struct ion_alloc_config *config = NULL;
	int r = ion_alloc_config_new(&config);

	if (r == 0)
		r = ion_alloc_config_set_size(config, len);
	if (r == 0)
		r = ion_alloc_config_set_heap(config, "memfd");
	if (r == 0 && cached)
		r = ion_alloc_config_set_flags(config, ION_FLAG_CACHED);
	if (r == 0)
		r = ion_ctx_allocate(s->ctx, config, ret_fd, NULL);
	ion_alloc_config_free(config);
	s->st.by_config++;
	return check(s, r, "ion_alloc_config + ion_ctx_allocate");
}

/* From the pool; given back with the caller's word (a memfd's only way
 * back), or, every other time, simply closed, which the pool must
 * notice by itself. */
static int alloc_pooled(struct soak *s, size_t len, bool give_back)
{
	int fd = -1, r = ion_pool_get(s->pool, len, &fd);

	if (r < 0)
		return check(s, r, "ion_pool_get");
	r = check_size(s, fd, len, "ion_pool_get");
	if (r == 0 && give_back) {
		s->st.pool_puts++;
		r = ion_pool_put(s->pool, fd, ION_POOL_VOUCH);
		if (r < 0)
			close(fd);
		return check(s, r, "ion_pool_put");
	}
	s->st.pool_closes++;
	close(fd);
	return r;
}

static int op_alloc(struct soak *s)
{
	unsigned long n = s->st.done[OP_ALLOC];
	size_t len = sizes[(n / 4) % N_SIZES];
	int fd = -1, r;

	switch (n % 4) {
	case 0:
		r = alloc_by_name(s, len, &fd);
		break;
	case 1:
		r = alloc_by_config(s, len, (n / 4) % 2, &fd);
		break;
	default:
		return alloc_pooled(s, len, n % 4 == 2);
	}
	if (r == 0)
		r = check_size(s, fd, len, "allocation");
	if (r == 0 && n % 16 == 0)
		r = touch(s, fd);
	if (fd >= 0)
		close(fd);
	return r;
}

/* ---- rescans ---- */

/* Every rejection of a solution, worded (the strings live with it). */
static int word_rejections(struct soak *s, const struct ion_solution *solution)
{
	int n = ion_solution_get_rejection_count(solution), r = n < 0 ? n : 0;

	for (int i = 0; r == 0 && i < n; i++) {
		const struct ion_heap *heap;
		const struct ion_device *device;
		const char *reason;

		r = ion_solution_get_rejection(solution, (unsigned int)i, &heap, &device, &reason);
		s->st.rejections++;
	}
	return r;
}

/* The camera's constraint, key by key, and its text for another process. */
static int read_constraint(struct ion_device *cam, struct ion_alloc_config *config)
{
	int n = ion_device_get_constraint_count(cam), r = n < 0 ? n : 0;
	char *text = NULL;

	for (int i = 0; r == 0 && i < n; i++) {
		const char *key, *value, *src;

		r = ion_device_get_constraint(cam, (unsigned int)i, &key, &value, &src);
	}
	if (r == 0)
		r = ion_alloc_config_serialize(config, &text);
	free(text);
	return r;
}

/* A solution for the camera, from the new set, let go at once. */
static int use_camera(struct soak *s, struct ion_device *cam)
{
	struct ion_alloc_config *config = NULL;
	struct ion_solution *solution = NULL;
	int r = ion_alloc_config_new(&config), heaps = 0;

	if (r == 0)
		r = ion_alloc_config_set_size(config, 1 << 20);
	if (r == 0)
		r = ion_alloc_config_add_device(config, cam);
	if (r == 0)
		r = read_constraint(cam, config);
	if (r == 0)
		r = ion_ctx_solve(s->ctx, config, &solution);
	if (r == 0)
		r = word_rejections(s, solution);
	if (r == 0)
		heaps = ion_solution_get_heap_count(solution);
	s->st.solves++;
	ion_solution_unref(solution);
	ion_alloc_config_free(config);
	if (r < 0)
		return check(s, r, "solving for the camera");
	/* The board file's Heaps = system: the fake heap is the answer. */
	return heaps == 1 ? 0 : fail(s, "the camera's solution has %d heaps, not system alone", heaps);
}

/* A solution and a pool of the new set, used once and let go. */
static int use_new_set(struct soak *s)
{
	struct ion_alloc_config *config = NULL;
	struct ion_solution *solution = NULL;
	struct ion_pool *pool = NULL;
	int fd = -1, r = ion_alloc_config_new(&config);

	if (r == 0)
		r = ion_alloc_config_set_size(config, 64 << 10);
	if (r == 0)
		r = ion_alloc_config_set_heap(config, "memfd");
	if (r == 0)
		r = ion_ctx_solve(s->ctx, config, &solution);
	if (r == 0 && (r = ion_solution_alloc(solution, &fd, NULL)) == 0) {
		s->st.solution_allocs++;
		close(fd);
	}
	if (r == 0)
		r = ion_pool_new(solution, &pool);
	if (r == 0 && (r = ion_pool_get(pool, 4096, &fd)) == 0) {
		s->st.scratch_pools++;
		r = ion_pool_put(pool, fd, ION_POOL_VOUCH);
		if (r < 0)
			close(fd);
	}
	ion_pool_unref(pool);
	ion_solution_unref(solution);
	ion_alloc_config_free(config);
	return check(s, r, "a solution and a pool of the new set");
}

static int check_device(struct soak *s)
{
	struct ion_device *cam = NULL;
	int r = ion_ctx_get_device(s->ctx, "/dev/video0", &cam);
	int count = ion_ctx_get_device_count(s->ctx);

	if (count != (s->plugged ? 1 : 0))
		return fail(s, "rescan %lu: %d devices with the camera %s", s->st.done[OP_RESCAN],
			    count, s->plugged ? "plugged" : "unplugged");
	if (!s->plugged)
		return r == -ENODEV ? 0
				    : fail(s, "the unplugged camera: ion_ctx_get_device answered %d", r);
	if (r < 0)
		return check(s, r, "ion_ctx_get_device(/dev/video0)");
	s->st.devices_got++;
	r = use_camera(s, cam);
	ion_device_unref(cam);
	return r;
}

/* Whether the monitor fd polls readable (within a second: inotify
 * queues the event as the node is made, so at once in practice). */
static bool monitor_readable(const struct soak *s)
{
	struct pollfd p = { .fd = s->monitor, .events = POLLIN };

	return poll(&p, 1, 1000) == 1 && (p.revents & POLLIN);
}

static int op_rescan(struct soak *s)
{
	int r = s->plugged ? unplug(s) : plug(s);

	if (r < 0)
		return r;
	if (!monitor_readable(s))
		return fail(s, "rescan %lu: the monitor fd did not poll readable after the %s",
			    s->st.done[OP_RESCAN], s->plugged ? "plug" : "unplug");
	r = ion_ctx_rescan(s->ctx);
	if (r < 0)
		return check(s, r, "ion_ctx_rescan");
	if (r != 1)
		return fail(s, "rescan %lu answered %d after the camera was %s, not 1",
			    s->st.done[OP_RESCAN], r, s->plugged ? "plugged" : "unplugged");
	s->st.changed++;
	r = check_device(s);
	return r < 0 ? r : use_new_set(s);
}

/* ---- trims ---- */

static int op_trim(struct soak *s)
{
	unsigned long n = s->st.done[OP_TRIM];
	int r;

	if (n % 2 == 0) {
		/* Keep 64 KiB every other time: a partial trim too. */
		r = ion_pool_trim(s->pool, n % 4 == 0 ? 0 : 64 << 10);
		s->st.pool_trims++;
	} else {
		r = ion_ctx_trim_pools(s->ctx);
		s->st.ctx_trims++;
	}
	if (r < 0)
		return check(s, r, n % 2 == 0 ? "ion_pool_trim" : "ion_ctx_trim_pools");
	s->st.trimmed += (unsigned long)r;
	return 0;
}

/* ---- forks ---- */

static bool has_id(const struct id_set *set, struct file_id id)
{
	for (size_t i = 0; i < set->n; i++)
		if (set->ids[i].dev == id.dev && set->ids[i].ino == id.ino)
			return true;
	return false;
}

static int add_id(struct id_set *set, struct file_id id)
{
	if (grow((void **)&set->ids, &set->cap, set->n, sizeof(*set->ids)) < 0)
		return -ENOMEM;
	set->ids[set->n++] = id;
	return 0;
}

static bool is_memfd(int fd)
{
	char path[64], target[64];
	ssize_t n;

	snprintf(path, sizeof(path), "/proc/self/fd/%d", fd);
	n = readlink(path, target, sizeof(target) - 1);
	return n > 7 && strncmp(target, "/memfd:", 7) == 0;
}

static int record_fd(int fd, void *arg)
{
	struct stat st;

	if (fstat(fd, &st) < 0)
		return 0; /* closed meanwhile by the refill thread */
	return add_id(arg, (struct file_id){ st.st_dev, st.st_ino });
}

struct inherited {
	const struct id_set *parent;
	unsigned long n;
	bool verbose;
};

static int count_inherited(int fd, void *arg)
{
	struct inherited *in = arg;
	struct stat st;

	if (!is_memfd(fd) || fstat(fd, &st) < 0 ||
	    !has_id(in->parent, (struct file_id){ st.st_dev, st.st_ino }))
		return 0;
	in->n++;
	if (in->verbose)
		fprintf(stderr, "soak child: inherited fd %d, a memfd of %lld bytes (inode %lu)\n",
			fd, (long long)st.st_size, (unsigned long)st.st_ino);
	return 0;
}

/* In the child: a buffer it got must be no file the parent had. */
static int child_check_fresh(const struct soak *s, int fd, const char *what)
{
	struct stat st;

	if (fstat(fd, &st) < 0) {
		fprintf(stderr, "soak child: %s: fstat: %s\n", what, strerror(errno));
		return 5;
	}
	if (has_id(&s->parent_ids, (struct file_id){ st.st_dev, st.st_ino })) {
		fprintf(stderr, "soak child: %s handed out a buffer the parent holds\n", what);
		return 6;
	}
	return 0;
}

/*
 * The child: its pools start empty, so its get is a miss and a fresh
 * buffer, and so is its allocation by name (memfd's heap pool is empty
 * too); neither is a file the parent had at the fork.  The memfds it
 * inherited from the parent's pools are counted, for the report.
 */
static int fork_child(void *arg)
{
	struct soak *s = arg;
	struct inherited in = { &s->parent_ids, 0, s->opt.verbose };
	unsigned long long hits = ion_pool_get_stat(s->pool, ION_POOL_STAT_HITS);
	int fd = -1, r;

	each_fd(count_inherited, &in);
	s->report->inherited_memfds = in.n;
	if (ion_pool_get_stat(s->pool, ION_POOL_STAT_BYTES_HELD) != 0) {
		fprintf(stderr, "soak child: the pool holds the parent's buffers\n");
		return 2;
	}
	r = ion_pool_get(s->pool, 4096, &fd);
	if (r < 0) {
		fprintf(stderr, "soak child: ion_pool_get: %s\n", strerror(-r));
		return 3;
	}
	if (ion_pool_get_stat(s->pool, ION_POOL_STAT_HITS) != hits) {
		fprintf(stderr, "soak child: a pool hit after the fork\n");
		return 4;
	}
	r = child_check_fresh(s, fd, "ion_pool_get");
	close(fd);
	if (r)
		return r;
	r = ion_ctx_alloc(s->ctx, "memfd", 64 << 10, 0, &fd);
	if (r < 0) {
		fprintf(stderr, "soak child: ion_ctx_alloc: %s\n", strerror(-r));
		return 7;
	}
	r = child_check_fresh(s, fd, "ion_ctx_alloc");
	close(fd);
	return r;
}

static int op_fork(struct soak *s)
{
	char what[64];
	int r;

	/* Something in the pool at the fork, or the check proves nothing. */
	r = alloc_pooled(s, 4096, true);
	if (r < 0)
		return r;
	s->st.forks_pooled += ion_pool_get_stat(s->pool, ION_POOL_STAT_BYTES_HELD) > 0;
	s->parent_ids.n = 0;
	r = each_fd(record_fd, &s->parent_ids);
	if (r < 0)
		return check(s, r, "the parent's fd table");
	s->report->inherited_memfds = 0;
	snprintf(what, sizeof(what), "soak: fork %lu", s->st.done[OP_FORK] + 1);
	if (watch_run(what, 10000 * watch_slowdown(), fork_child, s) < 0)
		return fail(s, "%s: the child failed (above)", what);
	s->st.child_inherited += s->report->inherited_memfds;
	return 0;
}

/* ---- the run ---- */

static double elapsed(const struct soak *s)
{
	struct timespec now;

	clock_gettime(CLOCK_MONOTONIC, &now);
	return (double)(now.tv_sec - s->start.tv_sec) + (now.tv_nsec - s->start.tv_nsec) / 1e9;
}

/* The kind whose share of its own count is furthest behind, so that
 * every kind is spread evenly over the run; -1 when all are done. */
static int next_op(const struct soak *s)
{
	int best = -1;

	for (int k = 0; k < OP_COUNT; k++) {
		unsigned long long done = s->st.done[k], target = s->opt.target[k];

		if (done >= target)
			continue;
		if (best < 0 || (done + 1) * s->opt.target[best] <
				       (s->st.done[best] + 1ULL) * target)
			best = k;
	}
	return best;
}

static int run_op(struct soak *s, int kind)
{
	static int (*const ops[OP_COUNT])(struct soak *) = { op_alloc, op_rescan, op_trim, op_fork };
	int r = ops[kind](s);

	if (r == 0)
		s->st.done[kind]++;
	return r;
}

/* The pool of a camera stream: hints, background refill, limits. */
static int make_pool(struct soak *s)
{
	struct ion_alloc_config *config = NULL;
	struct ion_solution *solution = NULL;
	int r = ion_alloc_config_new(&config);

	if (r == 0)
		r = ion_alloc_config_set_size(config, 4096);
	if (r == 0)
		r = ion_alloc_config_set_heap(config, "memfd");
	if (r == 0)
		r = ion_ctx_solve(s->ctx, config, &solution);
	if (r == 0)
		r = ion_pool_new(solution, &s->pool);
	if (r == 0)
		r = ion_pool_set_hints(s->pool, POOL_HINTS);
	if (r == 0)
		r = ion_pool_set_max_bytes(s->pool, 8ULL << 20);
	if (r == 0)
		r = ion_ctx_set_pool_limit(s->ctx, 32ULL << 20);
	if (r == 0)
		r = ion_pool_set_background(s->pool, 1);
	if (r == 0)
		r = ion_pool_prefill(s->pool);
	ion_solution_unref(solution);
	ion_alloc_config_free(config);
	return check(s, r, "the pool");
}

static int setup(struct soak *s)
{
	char heaps[PATH_MAX];
	int fd = -1;

	if (make_root(s) < 0)
		return -1;
	root_path(s, "/heaps.d", heaps, sizeof(heaps));
	if (check(s, ion_ctx_new(s->root, &s->ctx), "ion_ctx_new") < 0 ||
	    check(s, ion_ctx_set_heaps_path(s->ctx, heaps), "ion_ctx_set_heaps_path") < 0)
		return -1;
	s->monitor = ion_ctx_get_monitor_fd(s->ctx);
	if (check(s, s->monitor, "ion_ctx_get_monitor_fd") < 0)
		return -1;
	if (ion_ctx_get_config_error_count(s->ctx) != 0)
		return fail(s, "the fake root's heaps.d file has problems (ION_LOG=err shows them)");
	if (make_pool(s) < 0)
		return -1;
	/* memfd's heap pool starts at the heap's first use. */
	if (check(s, ion_ctx_alloc(s->ctx, "memfd", 64 << 10, 0, &fd), "ion_ctx_alloc") < 0)
		return -1;
	close(fd);
	return 0;
}

static void teardown(struct soak *s)
{
	s->pool = ion_pool_unref(s->pool);
	s->ctx = ion_ctx_unref(s->ctx);
	if (s->root[0])
		test_remove_tree(s->root);
	if (s->report)
		munmap(s->report, sizeof(*s->report));
	free(s->samples);
	free(s->parent_ids.ids);
}

/* A leak shows as fds over the cap; the cap would end the run with
 * EMFILE first: raised to the hard limit, so that the slope is measured. */
static void raise_fd_limit(void)
{
	struct rlimit rl;

	if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < rl.rlim_max) {
		rl.rlim_cur = rl.rlim_max;
		setrlimit(RLIMIT_NOFILE, &rl);
	}
}

static int run(struct soak *s)
{
	unsigned long total = 0, every, next;
	int kind;

	for (int k = 0; k < OP_COUNT; k++)
		total += s->opt.target[k];
	every = total / 100 ? total / 100 : 1;
	next = every;
	clock_gettime(CLOCK_MONOTONIC, &s->start);
	if (take_sample(s) < 0)
		return -1;
	while ((kind = next_op(s)) >= 0) {
		if (s->opt.seconds && elapsed(s) >= (double)s->opt.seconds) {
			s->capped = true;
			break;
		}
		if (run_op(s, kind) < 0)
			break;
		if (ops_done(s) >= next) {
			next += every;
			if (take_sample(s) < 0)
				break;
		}
	}
	/* The last sample at the end of the work, wherever it fell. */
	if (!s->failure[0] && s->samples[s->n_samples - 1].ops != ops_done(s))
		take_sample(s);
	s->seconds = elapsed(s);
	return s->failure[0] ? -1 : 0;
}

/* ---- the figures ---- */

enum metric { M_FDS, M_RSS, M_ANON };

static double metric_of(const struct sample *p, enum metric m)
{
	return m == M_FDS ? (double)p->fds : m == M_RSS ? (double)p->rss_kib : (double)p->anon_kib;
}

/* Least-squares slope of y against x over the samples from the middle
 * of the run on (the second half of the work, after warm-up). */
static double slope(const struct soak *s, enum metric m, bool per_rescan)
{
	const struct sample *last = &s->samples[s->n_samples - 1];
	double sx = 0, sy = 0, sxx = 0, sxy = 0, n = 0;

	for (size_t i = 0; i < s->n_samples; i++) {
		const struct sample *p = &s->samples[i];
		double x = per_rescan ? (double)p->rescans : (double)p->ops;
		double y = metric_of(p, m);

		if (2 * p->ops < last->ops)
			continue;
		sx += x;
		sy += y;
		sxx += x * x;
		sxy += x * y;
		n++;
	}
	if (n < 2 || n * sxx - sx * sx == 0)
		return 0;
	return (n * sxy - sx * sy) / (n * sxx - sx * sx);
}

/*
 * Below this many operations RSS is not judged: malloc takes pages
 * one at a time, and in a second half shorter than ~10,000 operations
 * one page taken late reads as 3 to 6 KiB per 1000, over the limit with
 * nothing leaking (5,150 operations, the fixed registry: 5.8).
 */
#define RSS_MIN_OPS 20000

struct verdict {
	double fd_slope, rss_slope, anon_slope; /* per 1000 operations */
	double fd_per_rescan, rss_per_rescan, anon_per_rescan;
	bool fds_ok, rss_ok, rss_judged;
	const char *rss_why_not; /* why RSS is not judged, or NULL */
};

/* A slope that rounds to 0 at three decimals, as 0: not "-0.000". */
static double tidy(double v)
{
	return v > -0.0005 && v < 0.0005 ? 0.0 : v;
}

static struct verdict judge(const struct soak *s)
{
	const struct sample *first = &s->samples[0], *last = &s->samples[s->n_samples - 1];
	struct verdict v = {
		.fd_slope = tidy(1000 * slope(s, M_FDS, false)),
		.rss_slope = tidy(1000 * slope(s, M_RSS, false)),
		.anon_slope = tidy(1000 * slope(s, M_ANON, false)),
		.fd_per_rescan = tidy(slope(s, M_FDS, true)),
		.rss_per_rescan = tidy(slope(s, M_RSS, true)),
		.anon_per_rescan = tidy(slope(s, M_ANON, true)),
	};

	/* A sanitizer's quarantine and valgrind's own heap grow by
	 * design: RSS says nothing of the library there. */
	if (watch_under_sanitizer() || watch_under_valgrind())
		v.rss_why_not = "not judged under a sanitizer or valgrind";
	else if (last->ops < RSS_MIN_OPS)
		v.rss_why_not = "not judged in a run this short (under 20000 operations)";
	v.rss_judged = !v.rss_why_not;

	v.fds_ok = last->fds <= first->fds + (long)s->opt.fd_margin &&
		   v.fd_slope <= s->opt.fd_slope_max;
	v.rss_ok = !v.rss_judged || v.anon_slope <= s->opt.rss_slope_max;
	return v;
}

static void print_json_string(const char *text)
{
	putchar('"');
	for (const char *p = text; *p; p++) {
		if (*p == '"' || *p == '\\')
			printf("\\%c", *p);
		else if ((unsigned char)*p < 0x20)
			printf("\\u%04x", (unsigned char)*p);
		else
			putchar(*p);
	}
	putchar('"');
}

static void print_json(const struct soak *s, const struct verdict *v, bool pass)
{
	const struct sample *first = &s->samples[0], *last = &s->samples[s->n_samples - 1];
	const struct stats *st = &s->st;

	printf("{\"fd_start\": %ld, \"fd_end\": %ld, \"fd_slope_per_1000_ops\": %.3f, "
	       "\"fd_margin\": %lu, \"fd_slope_max_per_1000_ops\": %.3f, \"fds_per_rescan\": %.3f, ",
	       first->fds, last->fds, v->fd_slope, s->opt.fd_margin, s->opt.fd_slope_max,
	       v->fd_per_rescan);
	printf("\"rss_kib_start\": %ld, \"rss_kib_end\": %ld, \"rss_slope_kib_per_1000_ops\": %.3f, "
	       "\"rss_kib_per_rescan\": %.3f, ",
	       first->rss_kib, last->rss_kib, v->rss_slope, v->rss_per_rescan);
	printf("\"rss_anon_kib_start\": %ld, \"rss_anon_kib_end\": %ld, "
	       "\"rss_anon_slope_kib_per_1000_ops\": %.3f, \"rss_anon_kib_per_rescan\": %.3f, "
	       "\"rss_slope_max_kib_per_1000_ops\": %.3f, \"rss_judged\": %s, ",
	       first->anon_kib, last->anon_kib, v->anon_slope, v->anon_per_rescan,
	       s->opt.rss_slope_max, v->rss_judged ? "true" : "false");
	for (int k = 0; k < OP_COUNT; k++)
		printf("\"%s\": %lu, ", op_names[k], st->done[k]);
	printf("\"rescans_changed\": %lu, \"allocs_by_name\": %lu, \"allocs_by_config\": %lu, "
	       "\"pool_puts\": %lu, \"pool_closes\": %lu, \"pool_trims\": %lu, \"ctx_trims\": %lu, "
	       "\"buffers_trimmed\": %lu, \"forks_with_pooled_buffers\": %lu, "
	       "\"child_inherited_memfds\": %lu, \"samples\": %zu, ",
	       st->changed, st->by_name, st->by_config, st->pool_puts, st->pool_closes,
	       st->pool_trims, st->ctx_trims, st->trimmed, st->forks_pooled, st->child_inherited,
	       s->n_samples);
	printf("\"seconds\": %.3f, \"complete\": %s, \"pass\": %s, \"failure\": ", s->seconds,
	       s->capped || s->failure[0] ? "false" : "true", pass ? "true" : "false");
	if (s->failure[0])
		print_json_string(s->failure);
	else
		printf("null");
	printf("}\n");
}

static void print_summary(const struct soak *s, const struct verdict *v, bool pass)
{
	const struct sample *first = &s->samples[0], *last = &s->samples[s->n_samples - 1];
	const struct stats *st = &s->st;

	printf("soak: %lu allocations, %lu rescans (%lu reported a change), %lu pool trims, "
	       "%lu forks in %.1f s%s\n",
	       st->done[OP_ALLOC], st->done[OP_RESCAN], st->changed, st->done[OP_TRIM],
	       st->done[OP_FORK], s->seconds,
	       s->capped ? " (stopped by --seconds before the counts were done)" : "");
	printf("  allocations: %lu by name, %lu by config, %lu pooled and put back, %lu pooled "
	       "and closed (%lu mapped and written); %lu solutions and %lu pools of a new set\n",
	       st->by_name, st->by_config, st->pool_puts, st->pool_closes, st->touched,
	       st->solution_allocs, st->scratch_pools);
	printf("  rescans: camera plugged %lu, unplugged %lu; got it %lu times, %lu solves "
	       "(%lu rejections worded)\n",
	       st->plugs, st->unplugs, st->devices_got, st->solves, st->rejections);
	printf("  trims: %lu of the pool, %lu of the context's pools, %lu buffers released\n",
	       st->pool_trims, st->ctx_trims, st->trimmed);
	printf("  forks: %lu with the pool holding buffers; children inherited %lu of the "
	       "parent's memfds%s\n", st->forks_pooled, st->child_inherited,
	       st->child_inherited ? " (refills in flight at the fork: not judged)" : "");
	printf("fds: %ld at the start, %ld at the end (limit %ld); slope after warm-up "
	       "%.3f per 1000 ops (limit %.3f), %.3f per rescan: %s\n",
	       first->fds, last->fds, first->fds + (long)s->opt.fd_margin, v->fd_slope,
	       s->opt.fd_slope_max, v->fd_per_rescan, v->fds_ok ? "flat" : "LEAK");
	printf("RSS: %ld KiB at the start, %ld KiB at the end; slope after warm-up %.3f KiB "
	       "per 1000 ops, %.3f KiB per rescan\n",
	       first->rss_kib, last->rss_kib, v->rss_slope, v->rss_per_rescan);
	printf("  anonymous: %ld KiB at the start, %ld KiB at the end; slope after warm-up "
	       "%.3f KiB per 1000 ops (limit %.3f), %.3f KiB per rescan: %s\n",
	       first->anon_kib, last->anon_kib, v->anon_slope, s->opt.rss_slope_max,
	       v->anon_per_rescan,
	       v->rss_why_not ? v->rss_why_not
	       : v->rss_ok ? "flat" : "LEAK");
	if (s->failure[0])
		printf("FAILED: %s\n", s->failure);
	printf("%s\n", pass ? "PASS" : "FAIL");
}

/* ---- options ---- */

static void usage(FILE *f)
{
	fprintf(f,
		"usage: soak [--allocs N] [--rescans N] [--trims N] [--forks N] [--seconds N]\n"
		"            [--fd-margin N] [--fd-slope-max N] [--rss-slope-max KIB] [--json]\n"
		"            [--verbose]\n"
		"One context through N allocations, rescans, pool trims and forks (defaults\n"
		"100000, 1000, 1000, 1000), interleaved evenly, on a fake root where a camera\n"
		"comes and goes at each rescan.  Fails when the fds end above the start plus\n"
		"--fd-margin (16), or over the second half of the run grow by more than\n"
		"--fd-slope-max (0.5) or anonymous RSS by more than --rss-slope-max KiB (4)\n"
		"per 1000 operations (judged from 20000 operations on).  --seconds (600,\n"
		"0: none) caps the run; --json prints the figures as one JSON object;\n"
		"--verbose prints every sample to stderr.\n");
}

static bool parse_ulong(const char *text, unsigned long *ret)
{
	char *end;
	unsigned long v;

	if (!text || !*text || *text == '-')
		return false;
	errno = 0;
	v = strtoul(text, &end, 10);
	if (errno || *end)
		return false;
	*ret = v;
	return true;
}

static bool parse_double(const char *text, double *ret)
{
	char *end;
	double v;

	if (!text || !*text)
		return false;
	errno = 0;
	v = strtod(text, &end);
	if (errno || *end || v < 0)
		return false;
	*ret = v;
	return true;
}

/* The options that take a number: where each goes. */
static bool parse_value(const char *arg, const char *value, struct options *o, bool *ret_ok)
{
	for (int k = 0; k < OP_COUNT; k++)
		if (strncmp(arg, "--", 2) == 0 && strcmp(arg + 2, op_names[k]) == 0) {
			*ret_ok = parse_ulong(value, &o->target[k]);
			return true;
		}
	if (strcmp(arg, "--seconds") == 0)
		*ret_ok = parse_ulong(value, &o->seconds);
	else if (strcmp(arg, "--fd-margin") == 0)
		*ret_ok = parse_ulong(value, &o->fd_margin);
	else if (strcmp(arg, "--fd-slope-max") == 0)
		*ret_ok = parse_double(value, &o->fd_slope_max);
	else if (strcmp(arg, "--rss-slope-max") == 0)
		*ret_ok = parse_double(value, &o->rss_slope_max);
	else
		return false;
	return true;
}

/* 0, or 2 (the usage exit status) after saying what is wrong. */
static int parse_options(int argc, char **argv, struct options *o)
{
	*o = (struct options){
		.target = { 100000, 1000, 1000, 1000 },
		.seconds = 600,
		.fd_margin = 16,
		.fd_slope_max = 0.5,
		.rss_slope_max = 4.0,
	};
	for (int i = 1; i < argc; i++) {
		const char *arg = argv[i];
		bool ok = true;

		if (strcmp(arg, "--json") == 0) {
			o->json = true;
		} else if (strcmp(arg, "--verbose") == 0) {
			o->verbose = true;
		} else if (strcmp(arg, "--help") == 0) {
			usage(stdout);
			exit(0);
		} else if (parse_value(arg, i + 1 < argc ? argv[i + 1] : NULL, o, &ok)) {
			if (!ok) {
				fprintf(stderr, "soak: %s wants a number\n", arg);
				return 2;
			}
			i++;
		} else {
			fprintf(stderr, "soak: unknown option %s\n", arg);
			usage(stderr);
			return 2;
		}
	}
	return 0;
}

int main(int argc, char **argv)
{
	static struct soak s;
	struct verdict v;
	bool pass;

	if (parse_options(argc, argv, &s.opt))
		return 2;
	raise_fd_limit();
	s.monitor = -1;
	s.report = mmap(NULL, sizeof(*s.report), PROT_READ | PROT_WRITE,
			MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	if (s.report == MAP_FAILED) {
		s.report = NULL;
		fail(&s, "mmap: %s", strerror(errno));
	} else if (setup(&s) == 0) {
		run(&s);
	}
	if (!s.n_samples) {
		fprintf(stderr, "soak: %s\n", s.failure);
		teardown(&s);
		return 1;
	}
	v = judge(&s);
	pass = !s.failure[0] && v.fds_ok && v.rss_ok;
	if (s.opt.json)
		print_json(&s, &v, pass);
	else
		print_summary(&s, &v, pass);
	teardown(&s);
	return pass ? 0 : 1;
}
