// SPDX-License-Identifier: MIT
/*
 * Fault injection on every syscall the library makes, on every heap it
 * finds: each failure point must give a clean negative errno, leave the
 * call's out-parameters untouched and leave nothing behind (no fd, no
 * mapping of a buffer, no GEM handle on the library's DRM fd).
 *
 * The shim, after Wayland's os-wrappers-test: this executable defines the
 * libc calls below, so libion.so and libdrm.so, linked dynamically, bind to
 * them; each wrapper passes through to the real call (dlsym(RTLD_NEXT))
 * unless a fault is armed and this is the call to fail.  A library call
 * under test runs with "fail intercepted call n" armed for n = 1, 2, ...
 * until a run finishes without reaching call n: every failure point is then
 * visited once, with EIO and again with ENOMEM.
 *
 * Calls that only release (close, munmap, GEM_CLOSE, MODE_DESTROY_DUMB)
 * are never failed: an error path cannot do better than release.  Calls libc
 * makes internally (scandir's open, realpath's readlink) bypass the
 * wrappers and are not failed either.
 *
 * Discovery may absorb a fault (the heap hit is unavailable, with a
 * reason) or answer -ENOMEM; every heap it calls available must allocate.
 * It is also faulted in a fresh child process per failure point, so that
 * what the library caches per process (ION's ABI) is probed under the fault.
 *
 * Checks run with the fault disarmed, so that cmocka's own output never
 * meets a fault.  LIBION_FAULTS_VERBOSE=1 lists every call's failure points.
 */
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "testlib.h"

/* ------------------------------------------------------------------ */
/* The shim                                                            */
/* ------------------------------------------------------------------ */

/* Every libc call the library or libdrm may make that can fail. */
#define INTERPOSED(X)                                                          \
	X(open) X(open64) X(__open_2) X(__open64_2)                            \
	X(openat) X(openat64) X(__openat_2) X(__openat64_2)                    \
	X(ioctl) X(fcntl) X(fcntl64)                                           \
	X(mmap) X(mmap64) X(memfd_create) X(ftruncate) X(ftruncate64)         \
	X(dup) X(dup2) X(dup3) X(read)                                         \
	X(fstat) X(fstat64) X(stat) X(stat64) X(fstatfs) X(fstatfs64)          \
	X(readlink) X(access)

enum real_fn {
#define X(name) REAL_##name,
	INTERPOSED(X)
#undef X
	N_REAL
};

static const char *const real_names[N_REAL] = {
#define X(name) #name,
	INTERPOSED(X)
#undef X
};

static void *real_fns[N_REAL];

static void *real_fn(enum real_fn which)
{
	if (!real_fns[which])
		real_fns[which] = dlsym(RTLD_NEXT, real_names[which]);
	if (!real_fns[which]) {
		/* Only code linked against a libc that has it can call it. */
		fprintf(stderr, "test-faults: no %s in libc\n", real_names[which]);
		abort();
	}
	return real_fns[which];
}

#define REAL(name, type) ((type)real_fn(REAL_##name))

/* Before any fault is armed: dlsym must never run under one. */
__attribute__((constructor)) static void resolve_real_fns(void)
{
	for (int i = 0; i < N_REAL; i++)
		real_fns[i] = dlsym(RTLD_NEXT, real_names[i]);
}

static struct {
	unsigned int target;	/* fail the target-th call; 0: disarmed */
	unsigned int calls;
	int error;
	bool paused;
	bool fired;
	char site[128];		/* the call that failed */
} fault;

static void fault_arm(unsigned int n, int error)
{
	fault.target = n;
	fault.calls = 0;
	fault.error = error;
	fault.paused = false;
	fault.fired = false;
	fault.site[0] = '\0';
}

/* Returns whether the fault fired, and where (*site lives until the next arm). */
static bool fault_disarm(const char **site)
{
	fault.target = 0;
	if (site)
		*site = fault.site;
	return fault.fired;
}

/* For test code that runs between library calls of one faulted step. */
static void fault_pause(void)
{
	fault.paused = true;
}

static void fault_resume(void)
{
	fault.paused = false;
}

/* Counts an intercepted call; true when it is the one to fail. */
static bool fault_now(void)
{
	if (!fault.target || fault.paused || fault.fired)
		return false;
	return ++fault.calls == fault.target;
}

__attribute__((format(printf, 1, 2))) static void fault_fire(const char *fmt, ...)
{
	va_list args;

	va_start(args, fmt);
	vsnprintf(fault.site, sizeof(fault.site), fmt, args);
	va_end(args);
	fault.fired = true;
	errno = fault.error;
}

#define FAIL_HERE(ret, ...)                                                    \
	do {                                                                   \
		if (fault_now()) {                                             \
			fault_fire(__VA_ARGS__);                               \
			return ret;                                            \
		}                                                              \
	} while (0)

static const struct {
	char type;
	unsigned int nr;
	const char *name;
	bool release;	/* never failed */
} ioctl_names[] = {
	{ 'H', 0x00, "DMA_HEAP_IOCTL_ALLOC", false },
	{ 'u', 0x42, "UDMABUF_CREATE", false },
	{ 'u', 0x43, "UDMABUF_CREATE_LIST", false },
	{ 'b', 0x00, "DMA_BUF_IOCTL_SYNC", false },
	{ 'b', 0x01, "DMA_BUF_SET_NAME", false },
	{ 'I', 0x00, "ION_IOC_ALLOC", false },
	/* Also the library's ABI probe, and checked after a legacy share. */
	{ 'I', 0x01, "ION_IOC_FREE", false },
	{ 'I', 0x02, "ION_IOC_MAP", false },
	{ 'I', 0x04, "ION_IOC_SHARE", false },
	{ 'I', 0x05, "ION_IOC_IMPORT", false },
	{ 'I', 0x06, "ION_IOC_CUSTOM", false },
	{ 'I', 0x07, "ION_IOC_SYNC", false },
	{ 'I', 0x08, "ION_IOC_HEAP_QUERY", false },
	{ 'd', 0x00, "DRM_IOCTL_VERSION", false },
	{ 'd', 0x09, "DRM_IOCTL_GEM_CLOSE", true },
	{ 'd', 0x0c, "DRM_IOCTL_GET_CAP", false },
	{ 'd', 0x0d, "DRM_IOCTL_SET_CLIENT_CAP", false },
	{ 'd', 0x1f, "DRM_IOCTL_DROP_MASTER", false },
	{ 'd', 0x2d, "DRM_IOCTL_PRIME_HANDLE_TO_FD", false },
	{ 'd', 0xb2, "DRM_IOCTL_MODE_CREATE_DUMB", false },
	{ 'd', 0xb3, "DRM_IOCTL_MODE_MAP_DUMB", false },
	{ 'd', 0xb4, "DRM_IOCTL_MODE_DESTROY_DUMB", true },
};

static int ioctl_index(unsigned long request)
{
	for (size_t i = 0; i < sizeof(ioctl_names) / sizeof(ioctl_names[0]); i++)
		if (_IOC_TYPE(request) == (unsigned char)ioctl_names[i].type &&
		    _IOC_NR(request) == ioctl_names[i].nr)
			return (int)i;
	return -1;
}

static const char *fcntl_name(int cmd)
{
	switch (cmd) {
	case F_DUPFD: return "F_DUPFD";
	case F_DUPFD_CLOEXEC: return "F_DUPFD_CLOEXEC";
	case F_GETFD: return "F_GETFD";
	case F_SETFD: return "F_SETFD";
	case F_GETFL: return "F_GETFL";
	case F_SETFL: return "F_SETFL";
	case F_ADD_SEALS: return "F_ADD_SEALS";
	case F_GET_SEALS: return "F_GET_SEALS";
	default: return "?";
	}
}

static bool open_has_mode(int flags)
{
	return (flags & O_CREAT) || (flags & O_TMPFILE) == O_TMPFILE;
}

/*
 * The wrappers.  Each takes its libc name through an asm label: the C names
 * stay clear of <fcntl.h>'s redirections (open to open64 under
 * _FILE_OFFSET_BITS=64), and structs are passed through as void *.
 */
#define WRAPPER(ret, name, params)                                             \
	ret wrap_##name params __asm__(#name);                                 \
	ret wrap_##name params

WRAPPER(int, open, (const char *path, int flags, ...))
{
	mode_t mode = 0;

	if (open_has_mode(flags)) {
		va_list args;

		va_start(args, flags);
		mode = va_arg(args, mode_t);
		va_end(args);
	}
	FAIL_HERE(-1, "open(%s)", path);
	return REAL(open, int (*)(const char *, int, ...))(path, flags, mode);
}

WRAPPER(int, open64, (const char *path, int flags, ...))
{
	mode_t mode = 0;

	if (open_has_mode(flags)) {
		va_list args;

		va_start(args, flags);
		mode = va_arg(args, mode_t);
		va_end(args);
	}
	FAIL_HERE(-1, "open(%s)", path);
	return REAL(open64, int (*)(const char *, int, ...))(path, flags, mode);
}

WRAPPER(int, __open_2, (const char *path, int flags))
{
	FAIL_HERE(-1, "open(%s)", path);
	return REAL(__open_2, int (*)(const char *, int))(path, flags);
}

WRAPPER(int, __open64_2, (const char *path, int flags))
{
	FAIL_HERE(-1, "open(%s)", path);
	return REAL(__open64_2, int (*)(const char *, int))(path, flags);
}

WRAPPER(int, openat, (int dirfd, const char *path, int flags, ...))
{
	mode_t mode = 0;

	if (open_has_mode(flags)) {
		va_list args;

		va_start(args, flags);
		mode = va_arg(args, mode_t);
		va_end(args);
	}
	FAIL_HERE(-1, "openat(%s)", path);
	return REAL(openat, int (*)(int, const char *, int, ...))(dirfd, path, flags, mode);
}

WRAPPER(int, openat64, (int dirfd, const char *path, int flags, ...))
{
	mode_t mode = 0;

	if (open_has_mode(flags)) {
		va_list args;

		va_start(args, flags);
		mode = va_arg(args, mode_t);
		va_end(args);
	}
	FAIL_HERE(-1, "openat(%s)", path);
	return REAL(openat64, int (*)(int, const char *, int, ...))(dirfd, path, flags, mode);
}

WRAPPER(int, __openat_2, (int dirfd, const char *path, int flags))
{
	FAIL_HERE(-1, "openat(%s)", path);
	return REAL(__openat_2, int (*)(int, const char *, int))(dirfd, path, flags);
}

WRAPPER(int, __openat64_2, (int dirfd, const char *path, int flags))
{
	FAIL_HERE(-1, "openat(%s)", path);
	return REAL(__openat64_2, int (*)(int, const char *, int))(dirfd, path, flags);
}

WRAPPER(int, ioctl, (int fd, unsigned long request, ...))
{
	va_list args;
	void *arg;
	int i = ioctl_index(request);

	/* Every ioctl the library makes takes one pointer or integer. */
	va_start(args, request);
	arg = va_arg(args, void *);
	va_end(args);
	if (i < 0 || !ioctl_names[i].release) {
		if (i >= 0)
			FAIL_HERE(-1, "ioctl(%s)", ioctl_names[i].name);
		else
			FAIL_HERE(-1, "ioctl(%c, %#x)", (char)_IOC_TYPE(request),
				  (unsigned int)_IOC_NR(request));
	}
	return REAL(ioctl, int (*)(int, unsigned long, ...))(fd, request, arg);
}

WRAPPER(int, fcntl, (int fd, int cmd, ...))
{
	va_list args;
	void *arg;

	/* glibc reads the argument the same way, whatever cmd wants. */
	va_start(args, cmd);
	arg = va_arg(args, void *);
	va_end(args);
	FAIL_HERE(-1, "fcntl(%s)", fcntl_name(cmd));
	return REAL(fcntl, int (*)(int, int, ...))(fd, cmd, arg);
}

WRAPPER(int, fcntl64, (int fd, int cmd, ...))
{
	va_list args;
	void *arg;

	va_start(args, cmd);
	arg = va_arg(args, void *);
	va_end(args);
	FAIL_HERE(-1, "fcntl(%s)", fcntl_name(cmd));
	return REAL(fcntl64, int (*)(int, int, ...))(fd, cmd, arg);
}

WRAPPER(void *, mmap, (void *addr, size_t len, int prot, int flags, int fd, __off_t off))
{
	FAIL_HERE(MAP_FAILED, "mmap");
	return REAL(mmap, void *(*)(void *, size_t, int, int, int, __off_t))(
		addr, len, prot, flags, fd, off);
}

WRAPPER(void *, mmap64, (void *addr, size_t len, int prot, int flags, int fd, __off64_t off))
{
	FAIL_HERE(MAP_FAILED, "mmap");
	return REAL(mmap64, void *(*)(void *, size_t, int, int, int, __off64_t))(
		addr, len, prot, flags, fd, off);
}

WRAPPER(int, memfd_create, (const char *name, unsigned int flags))
{
	FAIL_HERE(-1, "memfd_create(%s)", name);
	return REAL(memfd_create, int (*)(const char *, unsigned int))(name, flags);
}

WRAPPER(int, ftruncate, (int fd, __off_t len))
{
	FAIL_HERE(-1, "ftruncate");
	return REAL(ftruncate, int (*)(int, __off_t))(fd, len);
}

WRAPPER(int, ftruncate64, (int fd, __off64_t len))
{
	FAIL_HERE(-1, "ftruncate");
	return REAL(ftruncate64, int (*)(int, __off64_t))(fd, len);
}

WRAPPER(int, dup, (int fd))
{
	FAIL_HERE(-1, "dup");
	return REAL(dup, int (*)(int))(fd);
}

WRAPPER(int, dup2, (int fd, int fd2))
{
	FAIL_HERE(-1, "dup2");
	return REAL(dup2, int (*)(int, int))(fd, fd2);
}

WRAPPER(int, dup3, (int fd, int fd2, int flags))
{
	FAIL_HERE(-1, "dup3");
	return REAL(dup3, int (*)(int, int, int))(fd, fd2, flags);
}

WRAPPER(ssize_t, read, (int fd, void *buf, size_t len))
{
	FAIL_HERE(-1, "read");
	return REAL(read, ssize_t (*)(int, void *, size_t))(fd, buf, len);
}

WRAPPER(int, fstat, (int fd, void *st))
{
	FAIL_HERE(-1, "fstat");
	return REAL(fstat, int (*)(int, void *))(fd, st);
}

WRAPPER(int, fstat64, (int fd, void *st))
{
	FAIL_HERE(-1, "fstat");
	return REAL(fstat64, int (*)(int, void *))(fd, st);
}

WRAPPER(int, stat, (const char *path, void *st))
{
	FAIL_HERE(-1, "stat(%s)", path);
	return REAL(stat, int (*)(const char *, void *))(path, st);
}

WRAPPER(int, stat64, (const char *path, void *st))
{
	FAIL_HERE(-1, "stat(%s)", path);
	return REAL(stat64, int (*)(const char *, void *))(path, st);
}

WRAPPER(int, fstatfs, (int fd, void *st))
{
	FAIL_HERE(-1, "fstatfs");
	return REAL(fstatfs, int (*)(int, void *))(fd, st);
}

WRAPPER(int, fstatfs64, (int fd, void *st))
{
	FAIL_HERE(-1, "fstatfs");
	return REAL(fstatfs64, int (*)(int, void *))(fd, st);
}

WRAPPER(ssize_t, readlink, (const char *path, char *buf, size_t len))
{
	FAIL_HERE(-1, "readlink(%s)", path);
	return REAL(readlink, ssize_t (*)(const char *, char *, size_t))(path, buf, len);
}

WRAPPER(int, access, (const char *path, int mode))
{
	FAIL_HERE(-1, "access(%s)", path);
	return REAL(access, int (*)(const char *, int))(path, mode);
}

/* ------------------------------------------------------------------ */
/* What a failed call must leave as it was                             */
/* ------------------------------------------------------------------ */

/* DRM's dumb-buffer uapi, to watch GEM handles on the library's DRM fds. */
struct probe_create_dumb {
	uint32_t height, width, bpp, flags, handle, pitch;
	uint64_t size;
};
struct probe_destroy_dumb {
	uint32_t handle;
};
#define PROBE_CREATE_DUMB _IOWR('d', 0xb2, struct probe_create_dumb)
#define PROBE_DESTROY_DUMB _IOWR('d', 0xb4, struct probe_destroy_dumb)

#define MAX_DRM_FDS 16

struct snapshot {
	struct fd_table fds;
	int buffer_maps;	/* mappings of buffers and device nodes */
	int n_drm;
	struct {
		int fd;
		uint32_t next_handle;
	} drm[MAX_DRM_FDS];
};

static bool fd_target(int fd, char *buf, size_t size)
{
	char path[64];
	ssize_t n;

	snprintf(path, sizeof(path), "/proc/self/fd/%d", fd);
	n = readlink(path, buf, size - 1);
	buf[n < 0 ? 0 : n] = '\0';
	return n > 0;
}

/*
 * GEM handles are allocated lowest-free-first (idr_alloc from 1), so the
 * handle a new object gets moves when one is left behind.  0 when the fd
 * makes no dumb buffers.
 */
static uint32_t gem_next_handle(int fd)
{
	struct probe_create_dumb create = { .height = 1, .width = 1024, .bpp = 32 };
	struct probe_destroy_dumb destroy;

	if (ioctl(fd, PROBE_CREATE_DUMB, &create) < 0)
		return 0;
	destroy.handle = create.handle;
	ioctl(fd, PROBE_DESTROY_DUMB, &destroy);
	return create.handle;
}

static bool is_buffer_map(const char *line)
{
	static const char *const marks[] = {
		"dmabuf", "memfd:", "/dev/dri/", "/dev/dma_heap", "/dev/ion",
		"/dev/udmabuf",
	};

	for (size_t i = 0; i < sizeof(marks) / sizeof(marks[0]); i++)
		if (strstr(line, marks[i]))
			return true;
	return false;
}

static int count_buffer_maps(void)
{
	FILE *f = fopen("/proc/self/maps", "re");
	char line[1024];
	int n = 0;

	assert_non_null(f);
	while (fgets(line, sizeof(line), f))
		if (is_buffer_map(line))
			n++;
	fclose(f);
	return n;
}

static void snapshot_take(struct snapshot *s)
{
	fd_table_read(&s->fds);
	s->buffer_maps = count_buffer_maps();
	s->n_drm = 0;
	for (int i = 0; i < s->fds.n && s->n_drm < MAX_DRM_FDS; i++) {
		char target[256];
		uint32_t next;

		if (!fd_target(s->fds.fds[i], target, sizeof(target)) ||
		    strncmp(target, "/dev/dri/", 9) != 0)
			continue;
		next = gem_next_handle(s->fds.fds[i]);
		if (next) {
			s->drm[s->n_drm].fd = s->fds.fds[i];
			s->drm[s->n_drm++].next_handle = next;
		}
	}
}

static bool fd_tables_equal(const struct fd_table *a, const struct fd_table *b)
{
	if (a->n != b->n)
		return false;
	for (int i = 0; i < a->n; i++) {
		bool found = false;

		for (int j = 0; j < b->n && !found; j++)
			found = a->fds[i] == b->fds[j];
		if (!found)
			return false;
	}
	return true;
}

/* Fails the test, saying what changed, unless everything is as before. */
static void check_unchanged(const struct snapshot *before, const char *context)
{
	struct snapshot now;
	bool same = true;

	snapshot_take(&now);
	if (!fd_tables_equal(&before->fds, &now.fds)) {
		print_error("%s: the fd table changed\n", context);
		fd_table_assert_same(&before->fds); /* names the fds, fails */
	}
	if (now.buffer_maps != before->buffer_maps) {
		print_error("%s: %d buffer mappings, %d before\n", context,
			    now.buffer_maps, before->buffer_maps);
		same = false;
	}
	for (int i = 0; i < before->n_drm; i++)
		for (int j = 0; j < now.n_drm; j++)
			if (now.drm[j].fd == before->drm[i].fd &&
			    now.drm[j].next_handle != before->drm[i].next_handle) {
				print_error("%s: GEM handles left on fd %d: the next one is %u, was %u\n",
					    context, now.drm[j].fd, now.drm[j].next_handle,
					    before->drm[i].next_handle);
				same = false;
			}
	if (!same)
		fail();
}

/* ------------------------------------------------------------------ */
/* The driver: fail call 1, 2, ... of one library call                 */
/* ------------------------------------------------------------------ */

#define MAX_POINTS 2000
#define BUF_LEN ((size_t)64 << 10)

#define SENTINEL_FD (-0x5eed)
#define SENTINEL_HANDLE ((ion_user_handle_t)-0x5eed)
#define SENTINEL_PTR ((unsigned char *)(uintptr_t)0x5eed000)
#define SENTINEL_SIZE ((size_t)0x5eed5eed)
#define SENTINEL_HEAP ((const struct ion_heap *)(uintptr_t)0x5eed008)
#define SENTINEL_COUNT (-0x5eed)

/* The inputs of a call under test, and its out-parameters. */
struct args {
	struct ion_ctx *ctx;
	const char *heap;
	unsigned int flags;
	unsigned int mask;
	int client;
	ion_user_handle_t handle;
	int buf_fd;

	int out_fd;
	ion_user_handle_t out_handle;
	unsigned char *out_ptr;
	size_t out_size;
	const struct ion_heap *out_heap;
	int out_count;
	struct ion_ctx *out_ctx; /* made by the call itself: not checked */
};

static void preset(struct args *a)
{
	a->out_fd = SENTINEL_FD;
	a->out_handle = SENTINEL_HANDLE;
	a->out_ptr = SENTINEL_PTR;
	a->out_size = SENTINEL_SIZE;
	a->out_heap = SENTINEL_HEAP;
	a->out_count = SENTINEL_COUNT;
	a->out_ctx = NULL;
}

static bool untouched(const struct args *a, char *what, size_t size)
{
	snprintf(what, size, "%s%s%s%s%s%s",
		 a->out_fd != SENTINEL_FD ? " fd" : "",
		 a->out_handle != SENTINEL_HANDLE ? " handle" : "",
		 a->out_ptr != SENTINEL_PTR ? " ptr" : "",
		 a->out_size != SENTINEL_SIZE ? " size" : "",
		 a->out_heap != SENTINEL_HEAP ? " heap" : "",
		 a->out_count != SENTINEL_COUNT ? " count" : "");
	return what[0] == '\0';
}

struct call {
	const char *name;
	int (*run)(struct args *a);
	/* Checks and undoes a success. */
	void (*release)(struct args *a);
	/* Cleans up after a failure (what the call made on its way). */
	void (*cleanup)(struct args *a);
	/* A fallback may absorb a fault: success after one is no error. */
	bool absorbs;
	/* The only error allowed (discovery: -ENOMEM), or 0 for any. */
	int only_error;
};

struct report {
	unsigned int points;	/* runs with a fault that fired */
	unsigned int absorbed;	/* of which the library absorbed */
	char sites[2048];	/* the failed calls, in order */
};

static void add_site(struct report *rep, const char *site)
{
	size_t used = strlen(rep->sites);

	if (used + strlen(site) + 3 < sizeof(rep->sites))
		snprintf(rep->sites + used, sizeof(rep->sites) - used, "%s%s",
			 used ? ", " : "", site);
	else if (used + 4 < sizeof(rep->sites) && !strstr(rep->sites, "..."))
		strcat(rep->sites, ", ...");
}

static const char *errno_name(int error)
{
	return error == EIO ? "EIO" : error == ENOMEM ? "ENOMEM" : strerror(error);
}

/* LIBION_FAULTS_VERBOSE=1: print every call's failure points. */
static bool verbose;

/*
 * Runs c with call 1, 2, ... of it failing with error, until a run no
 * longer reaches the call to fail; that run must succeed.
 */
static void exercise(const struct call *c, struct args *a, int error,
		     const char *what, struct report *rep)
{
	memset(rep, 0, sizeof(*rep));
	for (unsigned int n = 1;; n++) {
		struct snapshot before;
		char context[512], written[64];
		const char *site;
		bool fired;
		int r;

		if (n > MAX_POINTS) {
			print_error("%s: %s still reaches a new call after %u\n",
				    what, c->name, MAX_POINTS);
			fail();
		}
		snapshot_take(&before);
		preset(a);
		fault_arm(n, error);
		r = c->run(a);
		fired = fault_disarm(&site);
		snprintf(context, sizeof(context), "%s: %s, call %u (%s) failing with %s",
			 what, c->name, n, fired ? site : "none reached",
			 errno_name(error));

		if (!fired) {
			if (r < 0) {
				print_error("%s: failed unfaulted: %s\n", context,
					    strerror(-r));
				fail();
			}
			c->release(a);
			check_unchanged(&before, context);
			if (verbose)
				printf("faults: %s: %s with %s: %u points (%u absorbed): %s\n",
				       what, c->name, errno_name(error), rep->points,
				       rep->absorbed, rep->sites[0] ? rep->sites : "none");
			return;
		}
		rep->points++;
		add_site(rep, site);
		if (r >= 0) {
			if (!c->absorbs) {
				print_error("%s: returned %d, not an error\n", context, r);
				c->release(a);
				fail();
			}
			rep->absorbed++;
			c->release(a);
			check_unchanged(&before, context);
			continue;
		}
		if (r < -4095 || (c->only_error && r != c->only_error)) {
			print_error("%s: returned %d (%s)\n", context, r,
				    r >= -4095 ? strerror(-r) : "not an errno");
			fail();
		}
		if (!untouched(a, written, sizeof(written))) {
			print_error("%s: returned %s but wrote its out-parameter(s):%s\n",
				    context, strerror(-r), written);
			fail();
		}
		if (c->cleanup)
			c->cleanup(a);
		check_unchanged(&before, context);
	}
}

/* ------------------------------------------------------------------ */
/* The calls under test                                                */
/* ------------------------------------------------------------------ */

static void check_buffer_fd(int fd)
{
	size_t size = 0;

	assert_true(fd >= 0);
	assert_true(fd_is_cloexec(fd));
	assert_int_equal(ion_fd_get_size(fd, &size), 0);
	assert_int_equal(size, BUF_LEN);
}

static void release_buffer_fd(struct args *a)
{
	check_buffer_fd(a->out_fd);
	close(a->out_fd);
}

static void release_handle(struct args *a)
{
	assert_true(a->out_handle > 0);
	assert_int_equal(ion_free(a->client, a->out_handle), 0);
}

static int run_ctx_alloc(struct args *a)
{
	return ion_ctx_alloc(a->ctx, a->heap, BUF_LEN, a->flags, &a->out_fd);
}

static const struct call call_ctx_alloc = {
	"ion_ctx_alloc", run_ctx_alloc, release_buffer_fd, NULL, false, 0,
};

static int run_ctx_alloc_mask(struct args *a)
{
	return ion_ctx_alloc_mask(a->ctx, a->mask, BUF_LEN, a->flags,
				  &a->out_fd, &a->out_heap);
}

static void release_alloc_mask(struct args *a)
{
	assert_true(a->out_heap != SENTINEL_HEAP && a->out_heap);
	assert_string_equal(ion_heap_get_name(a->out_heap), a->heap);
	release_buffer_fd(a);
}

static const struct call call_ctx_alloc_mask = {
	"ion_ctx_alloc_mask", run_ctx_alloc_mask, release_alloc_mask, NULL, false, 0,
};

static int run_ion_open(struct args *a)
{
	int fd = ion_open();

	if (fd < 0)
		return fd;
	a->out_fd = fd;
	return 0;
}

static void release_client(struct args *a)
{
	assert_true(a->out_fd >= 0);
	assert_true(fd_is_cloexec(a->out_fd));
	assert_int_equal(ion_close(a->out_fd), 0);
}

/* Without /dev/ion (or with its open failing) a client is a memfd. */
static const struct call call_ion_open = {
	"ion_open", run_ion_open, release_client, NULL, true, 0,
};

static int run_ion_alloc(struct args *a)
{
	return ion_alloc(a->client, BUF_LEN, 0, a->mask, a->flags, &a->out_handle);
}

static const struct call call_ion_alloc = {
	"ion_alloc", run_ion_alloc, release_handle, NULL, false, 0,
};

static int run_ion_alloc_fd(struct args *a)
{
	return ion_alloc_fd(a->client, BUF_LEN, 0, a->mask, a->flags, &a->out_fd);
}

static const struct call call_ion_alloc_fd = {
	"ion_alloc_fd", run_ion_alloc_fd, release_buffer_fd, NULL, false, 0,
};

static int run_ion_share(struct args *a)
{
	return ion_share(a->client, a->handle, &a->out_fd);
}

static const struct call call_ion_share = {
	"ion_share", run_ion_share, release_buffer_fd, NULL, false, 0,
};

static int run_ion_map(struct args *a)
{
	return ion_map(a->client, a->handle, BUF_LEN, PROT_READ | PROT_WRITE,
		       MAP_SHARED, 0, &a->out_ptr, &a->out_fd);
}

static void release_map(struct args *a)
{
	assert_true(a->out_ptr != SENTINEL_PTR && a->out_ptr);
	a->out_ptr[BUF_LEN - 1] = 0x5a;
	assert_int_equal(munmap(a->out_ptr, BUF_LEN), 0);
	release_buffer_fd(a);
}

static const struct call call_ion_map = {
	"ion_map", run_ion_map, release_map, NULL, false, 0,
};

static int run_ion_import(struct args *a)
{
	return ion_import(a->client, a->buf_fd, &a->out_handle);
}

static const struct call call_ion_import = {
	"ion_import", run_ion_import, release_handle, NULL, false, 0,
};

static int run_get_size(struct args *a)
{
	return ion_fd_get_size(a->buf_fd, &a->out_size);
}

static void release_size(struct args *a)
{
	assert_int_equal(a->out_size, BUF_LEN);
}

static const struct call call_get_size = {
	"ion_fd_get_size", run_get_size, release_size, NULL, false, 0,
};

static int run_sync(struct args *a)
{
	return ion_sync(a->buf_fd, ION_SYNC_START | ION_SYNC_RW);
}

static void release_sync(struct args *a)
{
	assert_int_equal(ion_sync(a->buf_fd, ION_SYNC_END | ION_SYNC_RW), 0);
}

static const struct call call_sync = {
	"ion_sync", run_sync, release_sync, NULL, false, 0,
};

/* ---- discovery: a count or -ENOMEM, and a reason for each unavailable heap ---- */

static int baseline_heaps = -1;

static int run_ctx_discovery(struct args *a)
{
	int r = ion_ctx_new(NULL, &a->out_ctx);

	if (r < 0)
		return r;
	r = ion_ctx_get_heap_count(a->out_ctx);
	if (r < 0)
		return r;
	a->out_count = r;
	return 0;
}

static void check_heaps(struct ion_ctx *ctx, int count)
{
	for (int i = 0; i < count; i++) {
		const struct ion_heap *h;
		const char *reason;
		int fd = -1, r;

		assert_int_equal(ion_ctx_get_heap(ctx, (unsigned int)i, &h), 0);
		if (ion_heap_get_error(h) < 0) {
			reason = ion_heap_get_reason(h);
			if (!reason || !reason[0]) {
				print_error("heap %s is unavailable without a reason\n",
					    ion_heap_get_name(h));
				fail();
			}
			continue;
		}
		assert_int_equal(ion_heap_get_error(h), 0);
		/* What discovery calls available must allocate. */
		r = ion_ctx_alloc(ctx, ion_heap_get_name(h), 4096, 0, &fd);
		if (r < 0) {
			print_error("heap %s is available but cannot allocate: %s\n",
				    ion_heap_get_name(h), strerror(-r));
			fail();
		}
		close(fd);
	}
}

static void release_ctx_discovery(struct args *a)
{
	assert_true(a->out_count >= 0);
	check_heaps(a->out_ctx, a->out_count);
	a->out_ctx = ion_ctx_unref(a->out_ctx);
}

/* A discovery that failed leaves the context able to try again. */
static void cleanup_ctx_discovery(struct args *a)
{
	if (a->out_ctx) {
		assert_int_equal(ion_ctx_get_heap_count(a->out_ctx), baseline_heaps);
		a->out_ctx = ion_ctx_unref(a->out_ctx);
	}
}

static const struct call call_ctx_discovery = {
	"ion_ctx_new+ion_ctx_get_heap_count", run_ctx_discovery,
	release_ctx_discovery, cleanup_ctx_discovery, true, -ENOMEM,
};

/* The compat layer's discovery runs on a client's first query. */
static int run_compat_discovery(struct args *a)
{
	int r;

	fault_pause();
	a->client = ion_open();
	fault_resume();
	if (a->client < 0)
		return a->client;
	r = ion_query_heap_cnt(a->client, &a->out_count);
	fault_pause();
	ion_close(a->client);
	fault_resume();
	return r;
}

static void release_compat_discovery(struct args *a)
{
	assert_true(a->out_count >= 0 && a->out_count <= (int)ION_NUM_HEAP_IDS);
}

/* Any errno: the client's lookup (fstat, to know the number still names
 * the client's file) comes before discovery and answers its own error.
 * Discovery itself is held to -ENOMEM by call_ctx_discovery. */
static const struct call call_compat_discovery = {
	"ion_query_heap_cnt (discovery)", run_compat_discovery,
	release_compat_discovery, NULL, true, 0,
};

/* ------------------------------------------------------------------ */
/* The tests                                                           */
/* ------------------------------------------------------------------ */

static const int errors[] = { EIO, ENOMEM };
#define N_ERRORS (sizeof(errors) / sizeof(errors[0]))

/* What one heap's group found, printed after it. */
enum tally {
	T_CTX_ALLOC, T_CTX_ALLOC_MASK, T_ION_ALLOC, T_ION_ALLOC_FD, T_ION_SHARE,
	T_ION_MAP, T_ION_IMPORT, T_GET_SIZE, T_SYNC, N_TALLY
};

static struct {
	const char *heap;
	const char *backend;
	unsigned int points[N_TALLY][N_ERRORS];
	bool ran[N_TALLY];
	unsigned int absorbed;
	char alloc_sites[2048];
	const char *skipped_compat;
} heap_tally;

/* Runs c with every error, counting into the heap's tally. */
static void exercise_all(const struct call *c, struct args *a, enum tally t,
			 const char *what)
{
	for (size_t e = 0; e < N_ERRORS; e++) {
		struct report rep;

		exercise(c, a, errors[e], what, &rep);
		heap_tally.points[t][e] += rep.points;
		heap_tally.absorbed += rep.absorbed;
		heap_tally.ran[t] = true;
		if (t == T_CTX_ALLOC && e == 0 && !heap_tally.alloc_sites[0])
			snprintf(heap_tally.alloc_sites, sizeof(heap_tally.alloc_sites),
				 "%s", rep.sites);
	}
}

struct state {
	const char *heap;
	struct ion_ctx *ctx;
	const struct ion_heap *h;
	struct fd_table fds;
	/* What a test holds, released by teardown even after a failure. */
	int client;
	int buf_fd;
};

static const char *current_heap;

static int setup(void **pstate)
{
	struct state *s = calloc(1, sizeof(*s));

	assert_non_null(s);
	s->heap = current_heap;
	/* Discovery runs here, unfaulted; its fds belong to the context. */
	assert_int_equal(ion_ctx_new(NULL, &s->ctx), 0);
	assert_true(ion_ctx_get_heap_count(s->ctx) > 0);
	assert_int_equal(ion_ctx_find_heap(s->ctx, s->heap, &s->h), 0);
	assert_int_equal(ion_heap_get_error(s->h), 0);
	s->client = -1;
	s->buf_fd = -1;
	fd_table_read(&s->fds);
	*pstate = s;
	return 0;
}

static int teardown(void **pstate)
{
	struct state *s = *pstate;

	fault_disarm(NULL);
	if (s->buf_fd >= 0)
		close(s->buf_fd);
	if (s->client >= 0)
		ion_close(s->client); /* and its handles */
	fd_table_assert_same(&s->fds);
	ion_ctx_unref(s->ctx);
	free(s);
	return 0;
}

static void test_ctx_alloc(void **pstate)
{
	struct state *s = *pstate;
	static const unsigned int flag_sets[] = { 0, ION_FLAG_CACHED };
	struct args a = { .ctx = s->ctx, .heap = s->heap };
	char what[128];

	for (size_t f = 0; f < sizeof(flag_sets) / sizeof(flag_sets[0]); f++) {
		a.flags = flag_sets[f];
		snprintf(what, sizeof(what), "heap %s, flags %#x", s->heap, a.flags);
		exercise_all(&call_ctx_alloc, &a, T_CTX_ALLOC, what);
	}
	snprintf(what, sizeof(what), "heap %s", s->heap);
	/* Every backend allocates through at least one syscall. */
	if (!heap_tally.points[T_CTX_ALLOC][0]) {
		print_error("%s: ion_ctx_alloc reached no call to fail\n", what);
		fail();
	}
	if (ion_heap_get_id(s->h) >= 0) {
		a.mask = 1U << ion_heap_get_id(s->h);
		/* Cached: the system heap's uncached twin stays out of it. */
		a.flags = ION_FLAG_CACHED;
		exercise_all(&call_ctx_alloc_mask, &a, T_CTX_ALLOC_MASK, what);
	}
}

static void test_buffer_calls(void **pstate)
{
	struct state *s = *pstate;
	struct args a = { .ctx = s->ctx, .heap = s->heap };
	char what[128];

	snprintf(what, sizeof(what), "heap %s", s->heap);
	assert_int_equal(ion_ctx_alloc(s->ctx, s->heap, BUF_LEN, ION_FLAG_CACHED,
				       &s->buf_fd), 0);
	a.buf_fd = s->buf_fd;
	exercise_all(&call_get_size, &a, T_GET_SIZE, what);
	exercise_all(&call_sync, &a, T_SYNC, what);
	close(s->buf_fd);
	s->buf_fd = -1;
}

/* The Android calls, on this heap alone through its mask bit. */
static void test_compat_calls(void **pstate)
{
	struct state *s = *pstate;
	struct ion_heap_data heaps[ION_NUM_HEAP_IDS];
	struct args a = { .heap = s->heap, .flags = ION_FLAG_CACHED };
	char what[128];
	int cnt = 0;

	snprintf(what, sizeof(what), "heap %s", s->heap);
	s->client = a.client = ion_open();
	assert_true(a.client >= 0);
	/* The shared context's discovery, unfaulted. */
	assert_int_equal(ion_query_heap_cnt(a.client, &cnt), 0);
	assert_true(cnt >= 0 && cnt <= (int)ION_NUM_HEAP_IDS);
	if (cnt > 0)
		assert_int_equal(ion_query_get_heaps(a.client, cnt, heaps), 0);
	for (int i = 0; i < cnt; i++)
		if (strcmp(heaps[i].name, s->heap) == 0)
			a.mask = 1U << heaps[i].heap_id;
	if (!a.mask) {
		heap_tally.skipped_compat = "no compat id";
		return;
	}

	exercise_all(&call_ion_alloc, &a, T_ION_ALLOC, what);
	exercise_all(&call_ion_alloc_fd, &a, T_ION_ALLOC_FD, what);

	assert_int_equal(ion_alloc(a.client, BUF_LEN, 0, a.mask, a.flags, &a.handle), 0);
	exercise_all(&call_ion_share, &a, T_ION_SHARE, what);
	exercise_all(&call_ion_map, &a, T_ION_MAP, what);
	assert_int_equal(ion_share(a.client, a.handle, &s->buf_fd), 0);
	a.buf_fd = s->buf_fd;
	exercise_all(&call_ion_import, &a, T_ION_IMPORT, what);
	assert_int_equal(ion_free(a.client, a.handle), 0);
}

/* ---- not per heap ---- */

static int global_setup(void **pstate)
{
	struct fd_table *fds = calloc(1, sizeof(*fds));

	assert_non_null(fds);
	fd_table_read(fds);
	*pstate = fds;
	return 0;
}

static int global_teardown(void **pstate)
{
	struct fd_table *fds = *pstate;

	fault_disarm(NULL);
	fd_table_assert_same(fds);
	free(fds);
	return 0;
}

static void print_report(const char *name, const struct report *reps)
{
	printf("faults: %s: %u failure points with EIO, %u with ENOMEM "
	       "(%u absorbed): %s\n",
	       name, reps[0].points, reps[1].points,
	       reps[0].absorbed + reps[1].absorbed,
	       reps[0].sites[0] ? reps[0].sites : "none");
	fflush(stdout);
}

static void test_discovery(void **pstate)
{
	struct report reps[N_ERRORS];
	struct ion_ctx *ctx;
	struct args a = { 0 };

	(void)pstate;
	assert_int_equal(ion_ctx_new(NULL, &ctx), 0);
	baseline_heaps = ion_ctx_get_heap_count(ctx);
	assert_true(baseline_heaps > 0);
	ion_ctx_unref(ctx);
	for (size_t e = 0; e < N_ERRORS; e++)
		exercise(&call_ctx_discovery, &a, errors[e], "discovery", &reps[e]);
	print_report("discovery", reps);
	assert_true(reps[0].points > 0);
}

static void test_compat_discovery(void **pstate)
{
	struct report reps[N_ERRORS];
	struct args a = { 0 };

	(void)pstate;
	for (size_t e = 0; e < N_ERRORS; e++)
		exercise(&call_compat_discovery, &a, errors[e], "compat discovery",
			 &reps[e]);
	print_report("compat discovery", reps);
	assert_true(reps[0].points > 0);
}

/*
 * Discovery in a fresh process each time, forked before this one ever ran
 * discovery: what the library keeps for the life of a process (ION's ABI)
 * is then probed under the fault, as in a program whose first discovery
 * meets it.
 */
struct child_result {
	bool fired;
	bool absorbed;
	char site[128];
	char message[512];
};

/* Runs in the child, without cmocka: a failure would unwind into the
 * parent's test runner there.  0 when all is well. */
static int first_discovery(unsigned int n, int error, struct child_result *res)
{
	struct fd_table before, after;
	struct ion_ctx *ctx;
	const char *site;
	int count;

	fd_table_read(&before);
	if (ion_ctx_new(NULL, &ctx) < 0)
		return 1;
	fault_arm(n, error);
	count = ion_ctx_get_heap_count(ctx);
	res->fired = fault_disarm(&site);
	res->absorbed = count >= 0;
	snprintf(res->site, sizeof(res->site), "%s", site);
	if (count < 0 && count != -ENOMEM) {
		snprintf(res->message, sizeof(res->message),
			 "discovery returned %d (%s)", count, strerror(-count));
		return 1;
	}
	if (count < 0)
		count = ion_ctx_get_heap_count(ctx);
	for (int i = 0; i < count; i++) {
		const struct ion_heap *h;
		const char *reason;
		int fd = -1, r;

		if (ion_ctx_get_heap(ctx, (unsigned int)i, &h) < 0)
			return 1;
		if (ion_heap_get_error(h) < 0) {
			reason = ion_heap_get_reason(h);
			if (reason && reason[0])
				continue;
			snprintf(res->message, sizeof(res->message),
				 "heap %s is unavailable without a reason",
				 ion_heap_get_name(h));
			return 1;
		}
		r = ion_ctx_alloc(ctx, ion_heap_get_name(h), 4096, 0, &fd);
		if (r < 0) {
			snprintf(res->message, sizeof(res->message),
				 "heap %s is available but cannot allocate: %s",
				 ion_heap_get_name(h), strerror(-r));
			return 1;
		}
		close(fd);
	}
	ion_ctx_unref(ctx);
	fd_table_read(&after);
	if (!fd_tables_equal(&before, &after)) {
		snprintf(res->message, sizeof(res->message),
			 "the fd table changed (%d fds, %d before)", after.n, before.n);
		return 1;
	}
	return 0;
}

static void test_first_discovery(void **pstate)
{
	struct report reps[N_ERRORS];
	struct child_result *res;

	(void)pstate;
	res = mmap(NULL, sizeof(*res), PROT_READ | PROT_WRITE,
		   MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	assert_true(res != MAP_FAILED);
	for (size_t e = 0; e < N_ERRORS; e++) {
		memset(&reps[e], 0, sizeof(reps[e]));
		for (unsigned int n = 1;; n++) {
			int status;
			pid_t pid;

			assert_true(n <= MAX_POINTS);
			memset(res, 0, sizeof(*res));
			fflush(stdout);
			fflush(stderr);
			pid = fork();
			assert_true(pid >= 0);
			if (pid == 0)
				_exit(first_discovery(n, errors[e], res));
			assert_int_equal(waitpid(pid, &status, 0), pid);
			if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
				print_error("first discovery, call %u (%s) failing with %s: %s\n",
					    n, res->fired ? res->site : "none reached",
					    errno_name(errors[e]),
					    res->message[0] ? res->message : "the child failed");
				fail();
			}
			if (!res->fired)
				break;
			reps[e].points++;
			reps[e].absorbed += res->absorbed;
			add_site(&reps[e], res->site);
		}
	}
	munmap(res, sizeof(*res));
	print_report("first discovery", reps);
	assert_true(reps[0].points > 0);
}

static void test_ion_open(void **pstate)
{
	struct report reps[N_ERRORS];
	struct args a = { 0 };

	(void)pstate;
	for (size_t e = 0; e < N_ERRORS; e++)
		exercise(&call_ion_open, &a, errors[e], "ion_open", &reps[e]);
	print_report("ion_open", reps);
	assert_true(reps[0].points > 0);
}

static void print_heap_tally(void)
{
	static const char *const names[N_TALLY] = {
		"ion_ctx_alloc", "ion_ctx_alloc_mask", "ion_alloc",
		"ion_alloc_fd", "ion_share", "ion_map", "ion_import",
		"ion_fd_get_size", "ion_sync",
	};
	unsigned int total = 0;
	char line[1024] = "";

	for (int t = 0; t < N_TALLY; t++) {
		size_t used = strlen(line);

		if (!heap_tally.ran[t])
			continue;
		total += heap_tally.points[t][0] + heap_tally.points[t][1];
		snprintf(line + used, sizeof(line) - used, "%s%s %u/%u",
			 used ? ", " : "", names[t], heap_tally.points[t][0],
			 heap_tally.points[t][1]);
	}
	printf("faults: heap %s (%s): %u failure points exercised "
	       "(per call, EIO/ENOMEM: %s%s%s; %u absorbed); "
	       "ion_ctx_alloc fails at: %s\n",
	       heap_tally.heap, heap_tally.backend, total, line,
	       heap_tally.skipped_compat ? "; compat skipped: " : "",
	       heap_tally.skipped_compat ? heap_tally.skipped_compat : "",
	       heap_tally.absorbed,
	       heap_tally.alloc_sites[0] ? heap_tally.alloc_sites : "none");
	fflush(stdout);
}

static const char *heap_backend(const char *name)
{
	static char backend[32];
	struct ion_ctx *ctx;
	const struct ion_heap *h;

	snprintf(backend, sizeof(backend), "?");
	if (ion_ctx_new(NULL, &ctx) < 0)
		return backend;
	if (ion_ctx_find_heap(ctx, name, &h) == 0)
		snprintf(backend, sizeof(backend), "%s", ion_heap_get_backend(h));
	ion_ctx_unref(ctx);
	return backend;
}

int main(void)
{
	static const struct CMUnitTest global_tests[] = {
		/* First: no discovery may have run in this process yet. */
		cmocka_unit_test_setup_teardown(test_first_discovery, global_setup, global_teardown),
		cmocka_unit_test_setup_teardown(test_discovery, global_setup, global_teardown),
		cmocka_unit_test_setup_teardown(test_compat_discovery, global_setup, global_teardown),
		cmocka_unit_test_setup_teardown(test_ion_open, global_setup, global_teardown),
	};
	static const struct CMUnitTest heap_tests[] = {
		cmocka_unit_test_setup_teardown(test_ctx_alloc, setup, teardown),
		cmocka_unit_test_setup_teardown(test_buffer_calls, setup, teardown),
		cmocka_unit_test_setup_teardown(test_compat_calls, setup, teardown),
	};
	const char *env = getenv("LIBION_FAULTS_VERBOSE");
	char **heaps;
	int failed, n = 0;

	verbose = env && strcmp(env, "1") == 0;
	failed = cmocka_run_group_tests_name("faults: discovery and clients",
					     global_tests, NULL, NULL);
	heaps = test_heap_names();
	for (char **h = heaps; *h; h++, n++) {
		char group[96];

		memset(&heap_tally, 0, sizeof(heap_tally));
		heap_tally.heap = *h;
		heap_tally.backend = heap_backend(*h);
		current_heap = *h;
		snprintf(group, sizeof(group), "faults: heap %s", *h);
		failed += _cmocka_run_group_tests(group, heap_tests,
						  sizeof(heap_tests) / sizeof(heap_tests[0]),
						  NULL, NULL);
		print_heap_tally();
	}
	test_heap_names_free(heaps);
	if (n == 0) {
		fprintf(stderr, "no available heap to test\n");
		return 1;
	}
	return failed ? 1 : 0;
}
