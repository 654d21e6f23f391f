// SPDX-License-Identifier: MIT
/*
 * The hostile-input suite (issue 9): the library used as a hostile or
 * unlucky caller would use it, on every heap this machine has.
 *
 *  - spec-NN: the eighteen items of the issue, each held to the answer
 *    tests/../notes/hardening-spec.md gives (errno values, heap types and
 *    ids, what discovery lists);
 *  - the rest: inputs that already work (bad fds, handles, lengths, masks,
 *    odd sysroots), the fd table full at every call, signals every 100 us,
 *    64 threads on one client, ion_close() racing ion_alloc(), and malloc
 *    failing at every allocation.
 *
 * Every check runs in a watched child (tests/lib/watch.c): the parent waits
 * with a timeout, so that a hang or a crash in the library fails the check
 * and names the signal, instead of hanging or killing the runner.  Each
 * child is a fresh process as far as the library is concerned (the parent
 * never calls it), compares its fd table before and after, and checks that
 * failing calls leave their out-parameters alone.  Expectations are soft:
 * each mismatch prints what the call returned and what was expected, and
 * the check fails at its end, so one run lists every deviation.
 *
 * LIBION_HOSTILE_ONLY=name,name runs only those checks; LIBION_HOSTILE_SEED
 * fixes the random delays of the cancellation check.
 */
#include <dirent.h>
#include <dlfcn.h>
#include <execinfo.h>
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <limits.h>
#include <linux/filter.h>
#include <linux/magic.h>
#include <linux/seccomp.h>
#include <pthread.h>
#include <sched.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/sysmacros.h>
#include <sys/time.h>
#include <sys/uio.h>
#include <sys/un.h>
#include <sys/vfs.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "testlib.h"
#include "watch.h"

/* ------------------------------------------------------------------ */
/* malloc failure: malloc, calloc, realloc, aligned_alloc, strdup      */
/* ------------------------------------------------------------------ */

/*
 * libion.so binds to these (the executable comes first in symbol lookup),
 * and so does libc for its own allocations (scandir, realpath, asprintf),
 * which a library call makes on its behalf.  Each passes through to glibc's
 * allocator unless a failure is armed and this is the call to fail.
 * AddressSanitizer and ThreadSanitizer bring their own malloc, which these
 * would replace: there the shim is left out and its check skipped.
 */
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
#define HAVE_MALLOC_SHIM 0
#elif defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer)
#define HAVE_MALLOC_SHIM 0
#endif
#endif
#ifndef HAVE_MALLOC_SHIM
#define HAVE_MALLOC_SHIM 1
#endif

/*
 * AddressSanitizer reports a stack-buffer-underflow in its own thread
 * teardown (the sigaltstack() that unsets a thread's alternate signal
 * stack) after a cancel unwinds instrumented frames: the forced unwind
 * leaves their redzones poisoned.  Without the alternate stack, which
 * only serves ASan's report of a stack overflow, the teardown writes
 * nothing there (spec-09 cancels threads by the hundred).
 */
#if defined(__SANITIZE_ADDRESS__)
#define UNDER_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define UNDER_ASAN 1
#endif
#endif
#ifndef UNDER_ASAN
#define UNDER_ASAN 0
#endif
#if UNDER_ASAN
const char *__asan_default_options(void);
const char *__asan_default_options(void)
{
	return "use_sigaltstack=0";
}
#endif

static struct {
	unsigned int target; /* fail the target-th allocation; 0: disarmed */
	unsigned int calls;
	bool fired;
} mfault;

static void mfault_arm(unsigned int n)
{
	mfault.calls = 0;
	mfault.fired = false;
	mfault.target = n;
}

static bool mfault_disarm(void)
{
	mfault.target = 0;
	return mfault.fired;
}

#if HAVE_MALLOC_SHIM
extern void *__libc_malloc(size_t size);
extern void *__libc_calloc(size_t n, size_t size);
extern void *__libc_realloc(void *p, size_t size);
extern void *__libc_memalign(size_t align, size_t size);

/* Armed only around one library call of a single-threaded child. */
static bool mfault_now(void)
{
	if (!mfault.target || mfault.fired)
		return false;
	if (++mfault.calls != mfault.target)
		return false;
	mfault.fired = true;
	return true;
}

void *malloc(size_t size)
{
	if (mfault_now()) {
		errno = ENOMEM;
		return NULL;
	}
	return __libc_malloc(size);
}

void *calloc(size_t n, size_t size)
{
	if (mfault_now()) {
		errno = ENOMEM;
		return NULL;
	}
	return __libc_calloc(n, size);
}

void *realloc(void *p, size_t size)
{
	if (mfault_now()) {
		errno = ENOMEM;
		return NULL;
	}
	return __libc_realloc(p, size);
}

/* A pool is allocated aligned to a cache line. */
void *aligned_alloc(size_t align, size_t size)
{
	if (mfault_now()) {
		errno = ENOMEM;
		return NULL;
	}
	return __libc_memalign(align, size);
}

void *reallocarray(void *p, size_t n, size_t size)
{
	if (size && n > SIZE_MAX / size) {
		errno = ENOMEM;
		return NULL;
	}
	return realloc(p, n * size);
}

char *strdup(const char *s)
{
	size_t len = strlen(s) + 1;
	char *copy = malloc(len);

	return copy ? memcpy(copy, s, len) : NULL;
}

char *strndup(const char *s, size_t max)
{
	size_t len = strnlen(s, max);
	char *copy = malloc(len + 1);

	if (!copy)
		return NULL;
	memcpy(copy, s, len);
	copy[len] = '\0';
	return copy;
}
#endif

/* ------------------------------------------------------------------ */
/* Soft expectations                                                   */
/* ------------------------------------------------------------------ */

static int soft_failures;
/* What a soft failure happened in (a call and its fault), or "". */
static char soft_context[256];

__attribute__((format(printf, 3, 4)))
static void soft_fail(const char *file, int line, const char *fmt, ...)
{
	char msg[1024];
	va_list args;

	va_start(args, fmt);
	vsnprintf(msg, sizeof(msg), fmt, args);
	va_end(args);
	fprintf(stderr, "%s:%d: FAILED: %s%s%s\n", file, line, soft_context,
		soft_context[0] ? ": " : "", msg);
	fflush(stderr);
	soft_failures++;
}

#define EXPECT(cond, ...)                                                      \
	do {                                                                   \
		if (!(cond))                                                   \
			soft_fail(__FILE__, __LINE__, __VA_ARGS__);            \
	} while (0)

/* "-22 (EINVAL)", "0", "3": what a call returned, readably. */
static const char *rname(int r)
{
	static char bufs[8][48];
	static unsigned int next;
	char *b = bufs[next++ % 8];

	if (r < 0 && r >= -4095 && strerrorname_np(-r))
		snprintf(b, sizeof(bufs[0]), "-%s", strerrorname_np(-r));
	else
		snprintf(b, sizeof(bufs[0]), "%d", r);
	return b;
}

/* The call's answer must be want; says what it was otherwise. */
#define EXPECT_RET(expr, want)                                                 \
	do {                                                                   \
		int got_ = (expr), want_ = (want);                             \
		if (got_ != want_)                                             \
			soft_fail(__FILE__, __LINE__, "%s: got %s, expected %s", \
				  #expr, rname(got_), rname(want_));           \
	} while (0)

/* ------------------------------------------------------------------ */
/* Small helpers                                                       */
/* ------------------------------------------------------------------ */

#define SENTINEL_FD (-0x5eed)
#define SENTINEL_HANDLE ((ion_user_handle_t)-0x5eed)
#define SENTINEL_PTR ((unsigned char *)(uintptr_t)0x5eed000)
#define SENTINEL_SIZE ((size_t)0x5eed5eed)
#define SENTINEL_HEAP ((const struct ion_heap *)(uintptr_t)0x5eed008)
#define SENTINEL_COUNT (-0x5eed)
#define SENTINEL_CTX ((struct ion_ctx *)(uintptr_t)0x5eed010)
#define SENTINEL_SOLUTION ((struct ion_solution *)(uintptr_t)0x5eed018)
#define SENTINEL_DEVICE ((struct ion_device *)(uintptr_t)0x5eed020)
#define SENTINEL_CONFIG ((struct ion_alloc_config *)(uintptr_t)0x5eed028)

static size_t page;

static long long now_us(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (long long)ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}

static void spin_us(long long us)
{
	long long end = now_us() + us;

	while (now_us() < end)
		;
}

/* Iterations: fewer where everything runs slower (valgrind, TCG). */
static int iters(int native, int slow)
{
	return watch_slowdown() > 1 ? slow : native;
}

static bool fd_link(int fd, char *buf, size_t size)
{
	char path[64];
	ssize_t n;

	snprintf(path, sizeof(path), "/proc/self/fd/%d", fd);
	n = readlink(path, buf, size - 1);
	buf[n < 0 ? 0 : n] = '\0';
	return n > 0;
}

static bool is_memfd(int fd)
{
	char target[256];

	return fd_link(fd, target, sizeof(target)) && strncmp(target, "/memfd:", 7) == 0;
}

/* The kernel's name for the buffer's exporter ("drm", "system", "udmabuf"),
 * from fdinfo; "" for a memfd or without it. */
static void buf_exporter(int fd, char *out, size_t size)
{
	char path[64], line[256];
	FILE *f;

	out[0] = '\0';
	snprintf(path, sizeof(path), "/proc/self/fdinfo/%d", fd);
	f = fopen(path, "re");
	if (!f)
		return;
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, "exp_name: %63s", out) == 1)
			break;
	fclose(f);
	(void)size;
}

static int page_pattern(size_t i, int seed)
{
	return (int)((i * 131 + (size_t)seed * 7) & 0xff);
}

/* Writes a pattern through a mapping of fd and reads it back. */
static bool roundtrip(int fd, size_t len, int seed, char *why, size_t why_len)
{
	unsigned char *p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	bool ok = true;

	if (p == MAP_FAILED) {
		snprintf(why, why_len, "mmap: %s", strerror(errno));
		return false;
	}
	ion_sync(fd, ION_SYNC_START | ION_SYNC_WRITE);
	for (size_t i = 0; i < len; i += 512)
		p[i] = (unsigned char)page_pattern(i, seed);
	ion_sync(fd, ION_SYNC_END | ION_SYNC_WRITE);
	ion_sync(fd, ION_SYNC_START | ION_SYNC_READ);
	for (size_t i = 0; i < len && ok; i += 512)
		if (p[i] != (unsigned char)page_pattern(i, seed)) {
			snprintf(why, why_len, "byte %zu reads %#x, wrote %#x", i, p[i],
				 page_pattern(i, seed));
			ok = false;
		}
	ion_sync(fd, ION_SYNC_END | ION_SYNC_READ);
	munmap(p, len);
	return ok;
}

/* ---- the fd table, filled ---- */

#define FD_LIMIT 256

struct filler {
	int fds[FD_LIMIT];
	int n;
};

/* Lowers RLIMIT_NOFILE so that filling the table is quick and every fd
 * stays below testlib's FD_TABLE_MAX. */
static void fd_limit_lower(void)
{
	struct rlimit rl;

	if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur > FD_LIMIT) {
		rl.rlim_cur = FD_LIMIT;
		setrlimit(RLIMIT_NOFILE, &rl);
	}
}

/* Takes every free fd but `spare` of them; the next open() beyond those
 * answers EMFILE. */
static void fill_fds(struct filler *f, int spare)
{
	int fd;

	f->n = 0;
	while (f->n < FD_LIMIT && (fd = open("/dev/null", O_RDONLY | O_CLOEXEC)) >= 0)
		f->fds[f->n++] = fd;
	while (spare-- > 0 && f->n > 0)
		close(f->fds[--f->n]);
}

static void unfill_fds(struct filler *f)
{
	while (f->n > 0)
		close(f->fds[--f->n]);
}

/* ---- what discovery found, to compare one discovery with another ---- */

#define SNAP_MAX 64

struct heap_snap {
	int count;	/* or discovery's error */
	struct {
		char name[64];
		char backend[16];
		char reason[160];
		int error;
		int id;
		unsigned int type;
	} h[SNAP_MAX];
	int devices;
	int config_files;
};

static int snap_take(struct ion_ctx *ctx, struct heap_snap *s)
{
	int n = ion_ctx_get_heap_count(ctx);

	memset(s, 0, sizeof(*s));
	s->count = n;
	if (n < 0)
		return n;
	for (int i = 0; i < n && i < SNAP_MAX; i++) {
		const struct ion_heap *h;
		const char *reason;

		if (ion_ctx_get_heap(ctx, (unsigned int)i, &h) < 0)
			continue;
		snprintf(s->h[i].name, sizeof(s->h[i].name), "%s", ion_heap_get_name(h));
		snprintf(s->h[i].backend, sizeof(s->h[i].backend), "%s", ion_heap_get_backend(h));
		reason = ion_heap_get_reason(h);
		snprintf(s->h[i].reason, sizeof(s->h[i].reason), "%s", reason ? reason : "");
		s->h[i].error = ion_heap_get_error(h);
		s->h[i].id = ion_heap_get_id(h);
		s->h[i].type = ion_heap_get_type(h);
	}
	s->devices = ion_ctx_get_device_count(ctx);
	s->config_files = ion_ctx_get_config_file_count(ctx);
	return n;
}

/* NULL when a and b list the same heaps, available alike; else what differs. */
static const char *snap_diff(const struct heap_snap *a, const struct heap_snap *b)
{
	static char why[512];

	if (a->count != b->count) {
		size_t used = (size_t)snprintf(why, sizeof(why), "%d heaps, %d in the reference:",
					       a->count, b->count);

		for (int i = 0; i < a->count && i < SNAP_MAX && used < sizeof(why); i++) {
			bool found = false;

			for (int k = 0; k < b->count && k < SNAP_MAX && !found; k++)
				found = strcmp(a->h[i].name, b->h[k].name) == 0;
			if (!found)
				used += (size_t)snprintf(why + used, sizeof(why) - used,
							 " extra %s (%s, %s%s%s)", a->h[i].name,
							 a->h[i].backend, rname(a->h[i].error),
							 a->h[i].error ? ": " : "", a->h[i].reason);
		}
		for (int k = 0; k < b->count && k < SNAP_MAX && used < sizeof(why); k++) {
			bool found = false;

			for (int i = 0; i < a->count && i < SNAP_MAX && !found; i++)
				found = strcmp(a->h[i].name, b->h[k].name) == 0;
			if (!found)
				used += (size_t)snprintf(why + used, sizeof(why) - used, " missing %s",
							 b->h[k].name);
		}
		return why;
	}
	for (int i = 0; i < a->count && i < SNAP_MAX; i++)
		if (strcmp(a->h[i].name, b->h[i].name) || a->h[i].error != b->h[i].error ||
		    a->h[i].id != b->h[i].id) {
			snprintf(why, sizeof(why),
				 "heap %d is %s (%s, id %d%s%s), in the reference %s (%s, id %d%s%s)",
				 i, a->h[i].name, rname(a->h[i].error), a->h[i].id,
				 a->h[i].error ? ": " : "", a->h[i].reason,
				 b->h[i].name, rname(b->h[i].error), b->h[i].id,
				 b->h[i].error ? ": " : "", b->h[i].reason);
			return why;
		}
	if (a->devices != b->devices) {
		snprintf(why, sizeof(why), "%d devices, %d in the reference", a->devices, b->devices);
		return why;
	}
	if (a->config_files != b->config_files) {
		snprintf(why, sizeof(why), "%d heaps.d files, %d in the reference",
			 a->config_files, b->config_files);
		return why;
	}
	return NULL;
}

/* A fresh context's discovery of sysroot (NULL: the real one). */
static int snap_fresh(const char *sysroot, const char *heaps_path, struct heap_snap *s)
{
	struct ion_ctx *ctx;
	int r = ion_ctx_new(sysroot, &ctx);

	if (r < 0)
		return r;
	if (heaps_path)
		ion_ctx_set_heaps_path(ctx, heaps_path);
	r = snap_take(ctx, s);
	ion_ctx_unref(ctx);
	return r;
}

/* ---- the compat layer's view ---- */

static int compat_heaps(int client, struct ion_heap_data *heaps)
{
	int cnt = 0;

	if (ion_query_heap_cnt(client, &cnt) < 0 || cnt <= 0)
		return 0;
	if (cnt > (int)ION_NUM_HEAP_IDS)
		cnt = ION_NUM_HEAP_IDS;
	memset(heaps, 0, sizeof(*heaps) * (size_t)cnt);
	if (ion_query_get_heaps(client, cnt, heaps) < 0)
		return 0;
	return cnt;
}

/* The context heap that a compat heap is (same registry, same names). */
static const struct ion_heap *ctx_heap(struct ion_ctx *ctx, const char *name)
{
	const struct ion_heap *h = NULL;

	return ion_ctx_find_heap(ctx, name, &h) == 0 ? h : NULL;
}

/* ---- fake sysroots ---- */

struct root {
	char path[64];
};

enum node_kind { N_FIFO, N_FILE, N_SOCKET, N_DIR, N_CHR_NULL, N_SYMLINK, N_UNREADABLE };

static const char *const node_kind_names[] = {
	"a FIFO", "a regular file", "a socket", "a directory", "/dev/null's char device",
	"a symlink", "an unreadable file",
};

static void root_make(struct root *r)
{
	snprintf(r->path, sizeof(r->path), "/tmp/libion-hostile-XXXXXX");
	assert_non_null(mkdtemp(r->path));
	/* Readable by the unprivileged user some checks drop to. */
	chmod(r->path, 0755);
}

static void root_join(const struct root *r, const char *rel, char *out, size_t size)
{
	snprintf(out, size, "%s/%s", r->path, rel[0] == '/' ? rel + 1 : rel);
}

static void mkdirs(const char *path)
{
	char buf[PATH_MAX];

	snprintf(buf, sizeof(buf), "%s", path);
	for (char *p = buf + 1; *p; p++)
		if (*p == '/') {
			*p = '\0';
			mkdir(buf, 0755);
			*p = '/';
		}
	mkdir(buf, 0755);
}

static void mkparents(const char *path)
{
	char buf[PATH_MAX];
	char *slash;

	snprintf(buf, sizeof(buf), "%s", path);
	slash = strrchr(buf, '/');
	if (slash && slash != buf) {
		*slash = '\0';
		mkdirs(buf);
	}
}

static void write_file(const char *path, const char *content, mode_t mode)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, mode);

	assert_true(fd >= 0);
	if (content)
		assert_int_equal(write(fd, content, strlen(content)), (ssize_t)strlen(content));
	close(fd);
	chmod(path, mode);
}

/* Puts a node of kind at rel under the root; content is a file's text or a
 * symlink's target. */
static void root_node(const struct root *r, const char *rel, enum node_kind kind,
		      const char *content)
{
	char path[PATH_MAX];

	root_join(r, rel, path, sizeof(path));
	mkparents(path);
	switch (kind) {
	case N_FIFO:
		assert_int_equal(mkfifo(path, 0666), 0);
		break;
	case N_FILE:
		write_file(path, content, 0644);
		break;
	case N_UNREADABLE:
		write_file(path, content, 0);
		break;
	case N_SOCKET: {
		struct sockaddr_un addr = { .sun_family = AF_UNIX };
		int s = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);

		assert_true(strlen(path) < sizeof(addr.sun_path));
		strcpy(addr.sun_path, path);
		assert_true(s >= 0);
		assert_int_equal(bind(s, (struct sockaddr *)&addr, sizeof(addr)), 0);
		close(s);
		break;
	}
	case N_DIR:
		mkdirs(path);
		break;
	case N_CHR_NULL:
		assert_int_equal(mknod(path, S_IFCHR | 0666, makedev(1, 3)), 0);
		break;
	case N_SYMLINK:
		assert_int_equal(symlink(content, path), 0);
		break;
	}
}

static void root_remove(struct root *r)
{
	if (r->path[0])
		test_remove_tree(r->path);
	r->path[0] = '\0';
}

/* Like a sysfs entry for a char device: /sys/dev/char/M:m -> its device
 * directory, whose subsystem link names the class. */
static void root_sysfs_chr(const struct root *r, unsigned int maj, unsigned int min,
			   const char *class, const char *name)
{
	char rel[256], target[256], uevent[256];

	snprintf(rel, sizeof(rel), "sys/devices/virtual/%s/%s", class, name);
	root_node(r, rel, N_DIR, NULL);
	snprintf(rel, sizeof(rel), "sys/class/%s", class);
	root_node(r, rel, N_DIR, NULL);
	snprintf(rel, sizeof(rel), "sys/devices/virtual/%s/%s/subsystem", class, name);
	snprintf(target, sizeof(target), "../../../../class/%s", class);
	root_node(r, rel, N_SYMLINK, target);
	snprintf(rel, sizeof(rel), "sys/devices/virtual/%s/%s/uevent", class, name);
	snprintf(uevent, sizeof(uevent), "MAJOR=%u\nMINOR=%u\nDEVNAME=%s\n", maj, min, name);
	root_node(r, rel, N_FILE, uevent);
	snprintf(rel, sizeof(rel), "sys/devices/virtual/%s/%s/dev", class, name);
	snprintf(uevent, sizeof(uevent), "%u:%u\n", maj, min);
	root_node(r, rel, N_FILE, uevent);
	snprintf(rel, sizeof(rel), "sys/dev/char/%u:%u", maj, min);
	snprintf(target, sizeof(target), "../../devices/virtual/%s/%s", class, name);
	root_node(r, rel, N_SYMLINK, target);
}

/* Runs fn in a grandchild with its own timeout: one hanging case fails
 * with its name, and the check goes on with the next. */
struct sub_call {
	int (*fn)(void *);
	void *arg;
};

/* The grandchild counts its own failures, not those of the check so far. */
static int sub_trampoline(void *data)
{
	const struct sub_call *c = data;

	soft_failures = 0;
	return c->fn(c->arg);
}

static void sub_watch(const char *what, unsigned int timeout_s, int (*fn)(void *), void *arg)
{
	struct sub_call c = { fn, arg };

	if (watch_run(what, timeout_s * 1000 * watch_slowdown(), sub_trampoline, &c) < 0) {
		fprintf(stderr, "FAILED: %s (see above)\n", what);
		soft_failures++;
	}
}

/* In a grandchild: the soft failures it counted become its exit status. */
static int sub_status(void)
{
	return soft_failures ? 1 : 0;
}

/* Drops root (to nobody) so that permissions bite; false where it cannot. */
static bool drop_root(void)
{
	if (geteuid() != 0)
		return true;
	return setgroups(0, NULL) == 0 && setresgid(65534, 65534, 65534) == 0 &&
	       setresuid(65534, 65534, 65534) == 0;
}

/* A private mount namespace (root on a full kernel; not in the test VM). */
static int private_mounts(void)
{
	if (unshare(CLONE_NEWNS) < 0)
		return -errno;
	if (mount("none", "/", "none", MS_REC | MS_PRIVATE, NULL) < 0)
		return -errno;
	return 0;
}


/* The fd table now against before, softly: names each fd that changed. */
static bool fd_table_same_soft(const struct fd_table *before, const char *what)
{
	struct fd_table now;
	bool same = true;

	fd_table_read(&now);
	for (int i = 0; i < now.n; i++) {
		bool found = false;

		for (int j = 0; j < before->n && !found; j++)
			found = before->fds[j] == now.fds[i];
		if (!found) {
			char target[256];

			fd_link(now.fds[i], target, sizeof(target));
			soft_fail(__FILE__, __LINE__, "%s: fd %d left open: %s", what,
				  now.fds[i], target);
			same = false;
		}
	}
	for (int j = 0; j < before->n; j++) {
		bool found = false;

		for (int i = 0; i < now.n && !found; i++)
			found = before->fds[j] == now.fds[i];
		if (!found) {
			soft_fail(__FILE__, __LINE__, "%s: fd %d was closed behind the caller's back",
				  what, before->fds[j]);
			same = false;
		}
	}
	return same;
}

/* ------------------------------------------------------------------ */
/* Spec items 1-7: Android semantics                                    */
/* ------------------------------------------------------------------ */

/* 1. A NULL buffer is Android's "how many", answered 0; cnt <= 0 with a
 * buffer is the kernel's -EINVAL. */
static void spec01_query_null_buffer(void)
{
	static const int cnts[] = { 1, 2, 1000, INT_MAX, 0, -1, INT_MIN };
	struct ion_heap_data heaps[ION_NUM_HEAP_IDS], guard[ION_NUM_HEAP_IDS];
	int client = ion_open(), cnt;

	assert_true(client >= 0);
	cnt = compat_heaps(client, heaps);
	EXPECT(cnt >= 1, "no compat heap");
	for (size_t i = 0; i < sizeof(cnts) / sizeof(cnts[0]); i++) {
		int r = ion_query_get_heaps(client, cnts[i], NULL);

		EXPECT(r == 0, "ion_query_get_heaps(client, %d, NULL): got %s, expected 0 (Android)",
		       cnts[i], rname(r));
	}
	for (int c = 0; c >= -1; c--) {
		int r;

		memset(guard, 0xa5, sizeof(guard));
		memcpy(heaps, guard, sizeof(heaps));
		r = ion_query_get_heaps(client, c ? INT_MIN : 0, heaps);
		EXPECT(r == -EINVAL, "ion_query_get_heaps(client, %d, buffer): got %s, expected -EINVAL",
		       c ? INT_MIN : 0, rname(r));
		EXPECT(memcmp(heaps, guard, sizeof(heaps)) == 0, "a refused query wrote its buffer");
	}
	EXPECT_RET(ion_query_get_heaps(client, -1, heaps), -EINVAL);
	EXPECT_RET(ion_query_get_heaps(-1, 1, NULL), -EBADF);
	ion_close(client);
}

/* Makes process_vm_writev() answer err, as a seccomp policy or a kernel
 * without CONFIG_CROSS_MEMORY_ATTACH would.  0, or why it cannot. */
static int deny_process_vm_writev(int err)
{
	struct sock_filter filter[] = {
		BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr)),
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, __NR_process_vm_writev, 0, 1),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | ((unsigned int)err & SECCOMP_RET_DATA)),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
	};
	struct sock_fprog prog = {
		.len = sizeof(filter) / sizeof(filter[0]),
		.filter = filter,
	};

	if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0 ||
	    prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &prog) < 0)
		return -errno;
	return 0;
}

static bool mapped(const void *addr)
{
	unsigned char vec;
	void *pg = (void *)((uintptr_t)addr & ~(uintptr_t)(page - 1));

	return mincore(pg, page, &vec) == 0 || errno != ENOMEM;
}

/* 2: every bad destination is -EFAULT, never a crash; odd addresses get
 * the same bytes as aligned ones.  One grandchild per case, so that each
 * crash is named. */
enum efault_case {
	E_DEADF00D, E_PROT_NONE, E_READ_ONLY, E_INTO_UNMAPPED, E_INTO_PROT_NONE, E_ODD,
	E_SHORT_CNT, E_COUNT
};

static const char *const efault_names[] = {
	"buffer 0xdeadf00d", "a PROT_NONE buffer", "a read-only buffer",
	"a buffer running into an unmapped page", "a buffer running into a PROT_NONE page",
	"an odd-address buffer", "cnt 1 into an odd address",
};

struct efault_arg {
	enum efault_case which;
	int deny;	/* process_vm_writev answers this, or 0 */
};

static int efault_case(void *arg)
{
	const struct efault_arg *a = arg;
	const char *what = efault_names[a->which];
	struct ion_heap_data ref[ION_NUM_HEAP_IDS];
	size_t sz = sizeof(struct ion_heap_data), len;
	struct fd_table before;
	unsigned char *area, *odd;
	int client, cnt, r = 0;

	if (a->deny && a->which < E_ODD && watch_under_valgrind()) {
		/* memcheck reports the very read() into a bad buffer that
		 * the pipe fallback must survive. */
		printf("spec-02: %s, process_vm_writev denied: not under valgrind\n", what);
		return 0;
	}
	if (a->deny)
		assert_int_equal(deny_process_vm_writev(a->deny), 0);
	fd_table_read(&before);
	client = ion_open();
	assert_true(client >= 0);
	cnt = compat_heaps(client, ref);
	EXPECT(cnt >= 1, "no compat heap");
	/* Four pages: read-write, PROT_NONE, read-only, unmapped. */
	area = mmap(NULL, 4 * page, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	assert_true(area != MAP_FAILED);
	munmap(area + 3 * page, page);
	mprotect(area + page, page, PROT_NONE);
	mprotect(area + 2 * page, page, PROT_READ);
	len = cnt * sz + 1 + 64;
	odd = malloc(len);
	assert_non_null(odd);
	memset(odd, 0xa5, len);
	switch (a->which) {
	case E_DEADF00D:
		if (mapped((void *)(uintptr_t)0xdeadf00d)) {
			printf("spec-02: 0xdeadf00d is mapped in this process: not tried\n");
			r = -EFAULT;
			break;
		}
		r = ion_query_get_heaps(client, cnt, (void *)(uintptr_t)0xdeadf00d);
		break;
	case E_PROT_NONE:
		r = ion_query_get_heaps(client, cnt, area + page);
		break;
	case E_READ_ONLY:
		r = ion_query_get_heaps(client, cnt, area + 2 * page);
		for (size_t i = 0; i < page; i++)
			if (area[2 * page + i]) {
				soft_fail(__FILE__, __LINE__, "%s: a read-only page changed", what);
				break;
			}
		break;
	case E_INTO_UNMAPPED:
		/* The first entry straddles the read-only page's end. */
		r = ion_query_get_heaps(client, cnt, area + 3 * page - sz / 2);
		break;
	case E_INTO_PROT_NONE:
		r = ion_query_get_heaps(client, cnt, area + page - sz / 2);
		break;
	case E_ODD:
		/* Filled byte-wise: UBSan sees any misaligned store. */
		r = ion_query_get_heaps(client, cnt, odd + 1);
		EXPECT(r == 0, "%s: got %s, expected 0", what, rname(r));
		EXPECT(r != 0 || memcmp(odd + 1, ref, cnt * sz) == 0,
		       "%s holds other bytes than an aligned one", what);
		for (size_t i = cnt * sz + 1; i < len; i++)
			if (odd[i] != 0xa5) {
				soft_fail(__FILE__, __LINE__, "the query wrote byte %zu past %d entries",
					  i - 1 - cnt * sz, cnt);
				break;
			}
		break;
	case E_SHORT_CNT:
		/* cnt below the count: exactly cnt entries. */
		r = ion_query_get_heaps(client, 1, odd + 1);
		EXPECT(r == 0, "%s: got %s", what, rname(r));
		for (size_t i = sz + 1; i < len; i++)
			if (odd[i] != 0xa5) {
				soft_fail(__FILE__, __LINE__, "cnt 1 wrote byte %zu past the first entry",
					  i - 1 - sz);
				break;
			}
		break;
	case E_COUNT:
		break;
	}
	if (a->which < E_ODD)
		EXPECT(r == -EFAULT, "%s%s: got %s, expected -EFAULT", what,
		       a->deny ? " (process_vm_writev denied)" : "", rname(r));
	free(odd);
	munmap(area, 3 * page);
	ion_close(client);
	fd_table_same_soft(&before, what);
	return sub_status();
}

/* Whether seccomp can take process_vm_writev away here. */
static bool can_deny(void)
{
	int status;
	pid_t pid = fork();

	if (pid == 0)
		_exit(deny_process_vm_writev(EPERM) == 0 ? 0 : 1);
	return pid > 0 && waitpid(pid, &status, 0) == pid && WIFEXITED(status) &&
	       WEXITSTATUS(status) == 0;
}

static void spec02_query_bad_pointer(void)
{
	static const int denies[] = { 0, EPERM, ENOSYS };
	char dst = 0, src = 1;
	struct iovec local = { &src, 1 }, remote = { &dst, 1 };
	long r = syscall(SYS_process_vm_writev, getpid(), &local, 1UL, &remote, 1UL, 0UL);
	bool deny = can_deny();

	printf("spec-02: process_vm_writev to itself here: %s; %s\n",
	       r == 1 ? "works" : strerrorname_np(errno),
	       deny ? "denied through seccomp for the fallback's cases"
		    : "seccomp cannot deny it here: the fallback is tested only where the kernel lacks the call");
	for (size_t d = 0; d < sizeof(denies) / sizeof(denies[0]); d++) {
		if (denies[d] && !deny)
			continue;
		for (int c = 0; c < E_COUNT; c++) {
			struct efault_arg a = { (enum efault_case)c, denies[d] };
			char what[160];

			snprintf(what, sizeof(what), "spec-02: %s%s%s", efault_names[c],
				 denies[d] ? ", process_vm_writev denied with " : "",
				 denies[d] ? strerrorname_np(denies[d]) : "");
			sub_watch(what, 10, efault_case, &a);
		}
	}
}

/* 3: a heap reported with type T < CUSTOM has id T; the extra ids are
 * CUSTOM; the context API keeps the true type. */
static void spec03_types_and_ids(void)
{
	struct ion_heap_data heaps[ION_NUM_HEAP_IDS];
	struct ion_ctx *ctx;
	int client = ion_open(), cnt;
	bool system_seen = false;

	assert_true(client >= 0);
	assert_int_equal(ion_ctx_new(NULL, &ctx), 0);
	cnt = compat_heaps(client, heaps);
	for (int i = 0; i < cnt; i++) {
		const struct ion_heap_data *d = &heaps[i];
		const struct ion_heap *h = ctx_heap(ctx, d->name), *served = NULL;
		int fd = -1, r;

		printf("spec-03: heap %s: id %u, type %u (context API: type %u, backend %s)\n",
		       d->name, d->heap_id, d->type, h ? ion_heap_get_type(h) : 99,
		       h ? ion_heap_get_backend(h) : "?");
		EXPECT(h, "compat heap %s is not a heap of the context API", d->name);
		if (!h)
			continue;
		system_seen |= d->type == ION_HEAP_TYPE_SYSTEM;
		if (d->type < ION_HEAP_TYPE_CUSTOM) {
			EXPECT(d->heap_id == d->type,
			       "heap %s: reported with type %u but id %u: the type's mask %#x does not reach it",
			       d->name, d->type, d->heap_id, 1U << d->type);
			r = ion_ctx_alloc_mask(ctx, 1U << d->type, page, ION_FLAG_CACHED, &fd, &served);
			EXPECT(r == 0 && served == h,
			       "heap %s (type %u): its type's mask gave %s from %s",
			       d->name, d->type, rname(r), served ? ion_heap_get_name(served) : "no heap");
			if (r == 0)
				close(fd);
		}
		if (d->heap_id != ion_heap_get_type(h))
			EXPECT(d->type == ION_HEAP_TYPE_CUSTOM,
			       "heap %s: id %u is not its type %u's: reported with type %u, expected ION_HEAP_TYPE_CUSTOM (%u)",
			       d->name, d->heap_id, ion_heap_get_type(h), d->type, ION_HEAP_TYPE_CUSTOM);
		else
			EXPECT(d->type == ion_heap_get_type(h), "heap %s: type %u, the context says %u",
			       d->name, d->type, ion_heap_get_type(h));
		/* The context API keeps what the heap is. */
		if (strcmp(ion_heap_get_backend(h), "memfd") == 0 ||
		    strcmp(ion_heap_get_backend(h), "udmabuf") == 0)
			EXPECT(ion_heap_get_type(h) == ION_HEAP_TYPE_SYSTEM,
			       "heap %s: the context API's type is %u, not SYSTEM", d->name,
			       ion_heap_get_type(h));
	}
	EXPECT(system_seen, "no heap reported with type SYSTEM");
	ion_ctx_unref(ctx);
	ion_close(client);
}

/* 4: Android 11's ion_is_using_modular_heaps(). */
static void spec04_modular_heaps(void)
{
	int client, devnull, closed, want = 0;
	unsigned int version = 0;
	char target[256];

	client = ion_open();
	assert_true(client >= 0);
	/* What the spec says it asks: ION_IOC_ABI_VERSION of /dev/ion. */
	if (fd_link(client, target, sizeof(target)) && strcmp(target, "/dev/ion") == 0 &&
	    ioctl(client, _IOR('I', 9, unsigned int), &version) == 0 && version >= 2)
		want = 1;
	EXPECT_RET(ion_is_using_modular_heaps(client), want);
	devnull = open("/dev/null", O_RDONLY | O_CLOEXEC);
	closed = open("/dev/null", O_RDONLY | O_CLOEXEC);
	close(closed);
	/* A yes-or-no, as Android's: no negative errno to read as a yes. */
	EXPECT_RET(ion_is_using_modular_heaps(devnull), 0);
	EXPECT_RET(ion_is_using_modular_heaps(closed), 0);
	EXPECT_RET(ion_is_using_modular_heaps(-1), 0);
	EXPECT_RET(ion_is_using_modular_heaps(INT_MAX), 0);
	close(devnull);
	ion_close(client);
}

/* ---- 5: the largest length of each heap ---- */

static uint64_t meminfo_kib(const char *key)
{
	FILE *f = fopen("/proc/meminfo", "re");
	char line[256];
	unsigned long long v = 0;
	size_t len = strlen(key);

	if (!f)
		return 0;
	while (fgets(line, sizeof(line), f))
		if (strncmp(line, key, len) == 0 && line[len] == ':') {
			sscanf(line + len + 1, "%llu", &v);
			break;
		}
	fclose(f);
	return v;
}

/* The spec's rule, worked out here from the same sources. */
static uint64_t expected_max(const struct ion_heap *h)
{
	const char *backend = ion_heap_get_backend(h);
	unsigned int type = ion_heap_get_type(h);

	if ((strcmp(backend, "dma-heap") == 0 || strcmp(backend, "ion") == 0) &&
	    type == ION_HEAP_TYPE_DMA)
		return meminfo_kib("CmaTotal") << 10;
	if (strcmp(backend, "ion") == 0 && type == ION_HEAP_TYPE_SYSTEM_CONTIG)
		return 4 << 20;
	if (strcmp(backend, "udmabuf") == 0) {
		FILE *f = fopen("/sys/module/udmabuf/parameters/size_limit_mb", "re");
		unsigned long long mb = 64;

		if (f) {
			if (fscanf(f, "%llu", &mb) != 1)
				mb = 64;
			fclose(f);
		}
		return (uint64_t)mb << 20;
	}
	return (meminfo_kib("MemTotal") << 10) / 2;
}

struct too_long {
	const char *heap;
	size_t len;
};

/* In a grandchild: before the rule, the kernel may try to give it all. */
static int too_long_case(void *arg)
{
	const struct too_long *t = arg;
	const struct ion_heap *h, *served = SENTINEL_HEAP;
	struct ion_ctx *ctx;
	int fd = SENTINEL_FD, r, id;

	assert_int_equal(ion_ctx_new(NULL, &ctx), 0);
	assert_int_equal(ion_ctx_find_heap(ctx, t->heap, &h), 0);
	r = ion_ctx_alloc(ctx, t->heap, t->len, ION_FLAG_CACHED, &fd);
	EXPECT(r == -ENOMEM && fd == SENTINEL_FD,
	       "heap %s (%s), %zu bytes, above its largest length: ion_ctx_alloc got %s, expected -ENOMEM",
	       t->heap, ion_heap_get_backend(h), t->len, rname(r));
	if (r == 0)
		close(fd);
	id = ion_heap_get_id(h);
	if (id >= 0) {
		fd = SENTINEL_FD;
		r = ion_ctx_alloc_mask(ctx, 1U << id, t->len, ION_FLAG_CACHED, &fd, &served);
		EXPECT(r == -ENOMEM && fd == SENTINEL_FD && served == SENTINEL_HEAP,
		       "heap %s, %zu bytes, by its mask %#x: got %s, expected -ENOMEM",
		       t->heap, t->len, 1U << id, rname(r));
		if (r == 0)
			close(fd);
	}
	ion_ctx_unref(ctx);
	return sub_status();
}

static int all_of_ram(void *arg)
{
	size_t len = (size_t)(meminfo_kib("MemTotal") << 10);
	int client = ion_open(), fd = SENTINEL_FD, r;

	(void)arg;
	r = ion_alloc_fd(client, len, 0, ION_HEAP_SYSTEM_MASK, ION_FLAG_CACHED, &fd);
	EXPECT(r == -ENOMEM && fd == SENTINEL_FD,
	       "ion_alloc_fd(ION_HEAP_SYSTEM_MASK, all of RAM: %zu bytes): got %s, expected -ENOMEM",
	       len, rname(r));
	if (r == 0)
		close(fd);
	ion_close(client);
	return sub_status();
}

static void spec05_largest_length(void)
{
	struct ion_ctx *ctx;
	struct root r;
	char conf[PATH_MAX];
	int n, fd = SENTINEL_FD, ret;

	assert_int_equal(ion_ctx_new(NULL, &ctx), 0);
	n = ion_ctx_get_heap_count(ctx);
	for (int i = 0; i < n; i++) {
		const struct ion_heap *h;
		struct too_long t;
		char what[128];
		uint64_t max;

		assert_int_equal(ion_ctx_get_heap(ctx, (unsigned int)i, &h), 0);
		if (ion_heap_get_error(h))
			continue;
		max = expected_max(h);
		/* A 32-bit process on a big machine cannot ask for more than
		 * the rule allows: nothing to refuse. */
		if (max >= SIZE_MAX - page) {
			printf("spec-05: heap %s: largest length %llu, beyond what size_t holds\n",
			       ion_heap_get_name(h), (unsigned long long)max);
			continue;
		}
		t.heap = ion_heap_get_name(h);
		t.len = (size_t)((max + page) & ~(uint64_t)(page - 1));
		printf("spec-05: heap %s (%s): largest length %llu by the rule, asking %zu\n",
		       t.heap, ion_heap_get_backend(h), (unsigned long long)max, t.len);
		snprintf(what, sizeof(what), "spec-05: heap %s, above its largest length", t.heap);
		sub_watch(what, 30, too_long_case, &t);
	}
	/* Both only where RAM's size fits size_t (a 64-bit process). */
	if ((meminfo_kib("MemTotal") << 10) < SIZE_MAX / 2) {
		sub_watch("spec-05: all of RAM through ION_HEAP_SYSTEM_MASK", 30, all_of_ram, NULL);
		/* Half the address space (8 EiB on 64-bit) is a fine sparse
		 * memfd: until the rule, it "succeeds". */
		ret = ion_ctx_alloc(ctx, "memfd", SIZE_MAX / 2 + 1, 0, &fd);
		EXPECT(ret == -ENOMEM && fd == SENTINEL_FD,
		       "memfd, half the address space: got %s, expected -ENOMEM", rname(ret));
		if (ret == 0)
			close(fd);
	}
	ion_ctx_unref(ctx);

	/* A board file's MaxSize. */
	root_make(&r);
	root_node(&r, "heaps.d/90-max.conf", N_FILE, "[Heap memfd]\nMaxSize = 1M\n");
	root_join(&r, "heaps.d", conf, sizeof(conf));
	assert_int_equal(ion_ctx_new(NULL, &ctx), 0);
	assert_int_equal(ion_ctx_set_heaps_path(ctx, conf), 0);
	EXPECT_RET(ion_ctx_get_config_error_count(ctx), 0);
	fd = SENTINEL_FD;
	ret = ion_ctx_alloc(ctx, "memfd", (1 << 20) + page, 0, &fd);
	EXPECT(ret == -ENOMEM && fd == SENTINEL_FD,
	       "memfd with MaxSize = 1M, 1 MiB + a page: got %s, expected -ENOMEM", rname(ret));
	if (ret == 0)
		close(fd);
	ret = ion_ctx_alloc(ctx, "memfd", 1 << 20, 0, &fd);
	EXPECT(ret == 0, "memfd with MaxSize = 1M, 1 MiB: got %s, expected 0", rname(ret));
	if (ret == 0)
		close(fd);
	ion_ctx_unref(ctx);
	root_remove(&r);
}

/* 6: a GEM buffer at a nonzero offset is refused, not wrong pages. */
static void spec06_gem_offset(void)
{
	struct ion_ctx *ctx;
	int client = ion_open(), n, gem = 0;

	assert_true(client >= 0);
	assert_int_equal(ion_ctx_new(NULL, &ctx), 0);
	n = ion_ctx_get_heap_count(ctx);
	for (int i = 0; i < n; i++) {
		const struct ion_heap *h;
		ion_user_handle_t handle = 0;
		unsigned char *p, *q = SENTINEL_PTR;
		int fd, map_fd = SENTINEL_FD, r;
		char exporter[64];
		bool is_gem;

		assert_int_equal(ion_ctx_get_heap(ctx, (unsigned int)i, &h), 0);
		if (ion_heap_get_error(h) || (ion_heap_get_properties(h) & ION_HEAP_PROP_PROTECTED))
			continue;
		if (ion_ctx_alloc(ctx, ion_heap_get_name(h), 2 * page, ION_FLAG_CACHED, &fd) < 0) {
			soft_fail(__FILE__, __LINE__, "heap %s: cannot allocate", ion_heap_get_name(h));
			continue;
		}
		buf_exporter(fd, exporter, sizeof(exporter));
		is_gem = strcmp(ion_heap_get_backend(h), "gem") == 0 || strcmp(exporter, "drm") == 0;
		gem += is_gem;
		p = mmap(NULL, 2 * page, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
		assert_true(p != MAP_FAILED);
		ion_sync(fd, ION_SYNC_START | ION_SYNC_WRITE);
		memset(p, 'A', page);
		memset(p + page, 'B', page);
		ion_sync(fd, ION_SYNC_END | ION_SYNC_WRITE);
		munmap(p, 2 * page);
		assert_int_equal(ion_import(client, fd, &handle), 0);
		r = ion_map(client, handle, page, PROT_READ, MAP_SHARED, (off_t)page, &q, &map_fd);
		if (is_gem) {
			EXPECT(r == -EINVAL && q == SENTINEL_PTR && map_fd == SENTINEL_FD,
			       "GEM heap %s: ion_map at offset %zu: got %s%s, expected -EINVAL",
			       ion_heap_get_name(h), page, rname(r),
			       r == 0 && q[0] == 'A' ? " and the buffer's FIRST page (wrong data)" : "");
		} else {
			EXPECT(r == 0 && q[0] == 'B', "heap %s: ion_map at offset %zu: got %s%s",
			       ion_heap_get_name(h), page, rname(r),
			       r == 0 ? (q[0] == 'B' ? "" : ", wrong page") : "");
		}
		if (r == 0) {
			munmap(q, page);
			close(map_fd);
		}
		r = ion_map(client, handle, 2 * page, PROT_READ, MAP_SHARED, 0, &q, &map_fd);
		EXPECT(r == 0, "heap %s: ion_map at offset 0: got %s", ion_heap_get_name(h), rname(r));
		if (r == 0) {
			EXPECT(q[0] == 'A' && q[page] == 'B', "heap %s: offset 0 maps other data",
			       ion_heap_get_name(h));
			munmap(q, 2 * page);
			close(map_fd);
		}
		ion_free(client, handle);
		close(fd);
	}
	if (!gem)
		printf("spec-06: no GEM heap here: the refusal at an offset is checked in the VM\n");
	ion_ctx_unref(ctx);
	ion_close(client);
}

/* 7: ion_map64 beside ion_map (the armhf half is issue 10's). */
static void spec07_map64(void)
{
	ion_user_handle_t h;
	unsigned char *p = SENTINEL_PTR;
	int client = ion_open(), map_fd = SENTINEL_FD, r;

	assert_true(client >= 0);
	/* Both names exist for 32-bit callers of either off_t. */
	EXPECT(dlsym(RTLD_DEFAULT, "ion_map"), "ion_map is not exported");
	EXPECT(dlsym(RTLD_DEFAULT, "ion_map64"), "ion_map64 is not exported");
	assert_int_equal(ion_alloc(client, 2 * page, 0, ION_HEAP_SYSTEM_MASK, ION_FLAG_CACHED, &h), 0);
	r = ion_map64(client, h, page, PROT_READ | PROT_WRITE, MAP_SHARED, (long long)page, &p, &map_fd);
	EXPECT(r == 0, "ion_map64 at offset %zu: got %s", page, rname(r));
	if (r == 0) {
		p[0] = 'x';
		munmap(p, page);
		close(map_fd);
	}
	p = SENTINEL_PTR;
	map_fd = SENTINEL_FD;
	r = ion_map64(client, h, page, PROT_READ, MAP_SHARED, -(long long)page, &p, &map_fd);
	EXPECT(r == -EINVAL && p == SENTINEL_PTR && map_fd == SENTINEL_FD,
	       "ion_map64 at a negative offset: got %s, expected -EINVAL", rname(r));
	r = ion_map64(client, h, page, PROT_READ, MAP_SHARED, 1LL << 40, &p, &map_fd);
	EXPECT(r == -EINVAL && p == SENTINEL_PTR, "ion_map64 at 1 TiB: got %s, expected -EINVAL",
	       rname(r));
	r = ion_map(client, h, page, PROT_READ, MAP_SHARED, (off_t)page, &p, &map_fd);
	EXPECT(r == 0 && p[0] == 'x', "ion_map at offset %zu after ion_map64: got %s", page, rname(r));
	if (r == 0) {
		munmap(p, page);
		close(map_fd);
	}
	ion_free(client, h);
	ion_close(client);
}

/* ------------------------------------------------------------------ */
/* Spec items 8-18: robustness                                          */
/* ------------------------------------------------------------------ */

/* 8, the issue's own case: the fd table full at a fresh process's first
 * allocation is -EMFILE, and memfd works once fds are free. */
static void spec08_first_call_emfile(void)
{
	struct filler f;
	int client, fd = SENTINEL_FD, r;

	fd_limit_lower();
	client = ion_open();
	assert_true(client >= 0);
	fill_fds(&f, 0);
	r = ion_alloc_fd(client, page, 0, ION_HEAP_SYSTEM_MASK, ION_FLAG_CACHED, &fd);
	unfill_fds(&f);
	EXPECT(r == -EMFILE && fd == SENTINEL_FD,
	       "first ion_alloc_fd(ION_HEAP_SYSTEM_MASK) with the fd table full: got %s, expected -EMFILE",
	       rname(r));
	if (r == 0)
		close(fd);
	r = ion_alloc_fd(client, page, 0, ION_HEAP_SYSTEM_MASK, ION_FLAG_CACHED, &fd);
	EXPECT(r == 0, "ion_alloc_fd once fds are free again: got %s, expected 0 (the EMFILE stuck)",
	       rname(r));
	if (r == 0)
		close(fd);
	ion_close(client);

	/* The context API alike: the count is -EMFILE, then the full list. */
	struct heap_snap ref, now;
	struct ion_ctx *ctx;

	assert_true(snap_fresh(NULL, NULL, &ref) > 0);
	assert_int_equal(ion_ctx_new(NULL, &ctx), 0);
	fill_fds(&f, 0);
	r = ion_ctx_get_heap_count(ctx);
	unfill_fds(&f);
	EXPECT(r == -EMFILE, "discovery with the fd table full: got %s, expected -EMFILE", rname(r));
	snap_take(ctx, &now);
	EXPECT(!snap_diff(&now, &ref), "discovery after an EMFILE: %s", snap_diff(&now, &ref));
	ion_ctx_unref(ctx);
}

/* A sysroot whose every directory discovery scans holds something, so
 * that a scan lost to EMFILE shows as a heap, device or file missing. */
static void make_scan_root(struct root *r)
{
	root_make(r);
	root_node(r, "dev/dma_heap/system", N_FILE, "");
	root_node(r, "dev/dma_heap/reserved", N_FILE, "");
	root_node(r, "dev/udmabuf", N_FILE, "");
	root_node(r, "dev/dri/card0", N_FILE, "");
	root_node(r, "sys/class/drm/card0/uevent", N_FILE, "MAJOR=226\nMINOR=0\nDEVNAME=dri/card0\n");
	root_node(r, "sys/class/video4linux/video0/uevent", N_FILE,
		  "MAJOR=81\nMINOR=0\nDEVNAME=video0\n");
	root_node(r, "proc/meminfo", N_FILE, "MemTotal:        1000000 kB\nCmaTotal:   65536 kB\n");
	root_node(r, "heaps.d/50-a.conf", N_FILE, "[Heap memfd]\nPreference = 1\n");
	root_node(r, "heaps.d/60-b.conf", N_FILE, "[Heap system]\nContiguous = no\n");
}

/* 8: with 0, 1, 2, ... fds to spare, discovery either fails with
 * -EMFILE (and the same context then finds everything) or finds exactly
 * what it finds with fds to spare.  Never less. */
static void discovery_under_emfile(const char *what, const char *sysroot, const char *heaps_path)
{
	struct heap_snap ref, now;
	int ok_in_a_row = 0;

	fd_limit_lower();
	assert_true(snap_fresh(sysroot, heaps_path, &ref) > 0);
	for (int spare = 0; spare < 48 && ok_in_a_row < 3; spare++) {
		struct ion_ctx *ctx;
		struct filler f;
		const char *diff;
		int r;

		assert_int_equal(ion_ctx_new(sysroot, &ctx), 0);
		if (heaps_path)
			assert_int_equal(ion_ctx_set_heaps_path(ctx, heaps_path), 0);
		fill_fds(&f, spare);
		r = ion_ctx_get_heap_count(ctx);
		unfill_fds(&f);
		if (r < 0) {
			ok_in_a_row = 0;
			EXPECT(r == -EMFILE || r == -ENFILE,
			       "%s, %d fds to spare: discovery got %s, expected -EMFILE", what, spare,
			       rname(r));
			snap_take(ctx, &now);
			diff = snap_diff(&now, &ref);
			EXPECT(!diff, "%s, %d fds to spare: discovery again, fds free: %s", what,
			       spare, diff);
		} else {
			snap_take(ctx, &now);
			diff = snap_diff(&now, &ref);
			EXPECT(!diff, "%s, %d fds to spare: discovery succeeded with less (a transient EMFILE taken for an answer): %s",
			       what, spare, diff);
			ok_in_a_row = diff ? 0 : ok_in_a_row + 1;
		}
		ion_ctx_unref(ctx);
	}
	EXPECT(ok_in_a_row >= 3, "%s: discovery never got through with up to 48 fds to spare", what);
}

static void spec08_discovery_emfile(void)
{
	struct root r;
	char heaps[PATH_MAX];

	discovery_under_emfile("the real root", NULL, NULL);
	/* Nothing to read before the memfd probe: its memfd_create meets the
	 * full table first (the issue's case). */
	root_make(&r);
	discovery_under_emfile("an empty sysroot", r.path, NULL);
	root_remove(&r);
	make_scan_root(&r);
	root_join(&r, "heaps.d", heaps, sizeof(heaps));
	discovery_under_emfile("a sysroot with a node in every scanned place", r.path, heaps);
	root_remove(&r);
}

/* ---- 9: cancellation inside discovery ---- */

struct cancel_arg {
	struct ion_ctx *ctx;
	int client;		/* the compat variant's */
	atomic_int started;
	atomic_int go;		/* the call may start */
	atomic_int done;	/* the call has returned */
	int result;
};

static void *discover_then_return(void *data)
{
	struct cancel_arg *a = data;

	atomic_store(&a->started, 1);
	while (!atomic_load(&a->go))
		; /* no cancellation point: a cancel sent now stays pending */
	if (a->ctx)
		a->result = ion_ctx_get_heap_count(a->ctx);
	else
		ion_query_heap_cnt(a->client, &a->result);
	atomic_store(&a->done, 1);
	/* A cancel the library held back while it worked takes effect here. */
	pthread_testcancel();
	return NULL;
}

struct later_call {
	struct ion_ctx *ctx;
	int result;
};

static void *later_call(void *data)
{
	struct later_call *l = data;

	if (l->ctx) {
		l->result = ion_ctx_get_heap_count(l->ctx);
	} else {
		int client = ion_open(), fd;

		l->result = ion_alloc_fd(client, page, 0, ION_HEAP_SYSTEM_MASK, 0, &fd);
		if (l->result == 0)
			close(fd);
		ion_close(client);
	}
	return NULL;
}

/* A call from another thread must come back: a lock left held would not. */
static bool later_call_returns(struct ion_ctx *ctx, int *result)
{
	struct later_call l = { ctx, -1 };
	struct timespec deadline;
	pthread_t t;

	assert_int_equal(pthread_create(&t, NULL, later_call, &l), 0);
	clock_gettime(CLOCK_REALTIME, &deadline);
	deadline.tv_sec += 10 * watch_slowdown();
	if (pthread_timedjoin_np(t, NULL, &deadline) != 0)
		return false;
	*result = l.result;
	return true;
}

static long long discovery_us(void)
{
	long long best = -1;

	for (int i = 0; i < 5; i++) {
		struct ion_ctx *ctx;
		long long t0 = now_us(), t;

		assert_int_equal(ion_ctx_new(NULL, &ctx), 0);
		assert_true(ion_ctx_get_heap_count(ctx) > 0);
		t = now_us() - t0;
		ion_ctx_unref(ctx);
		if (best < 0 || t < best)
			best = t;
	}
	return best;
}

static unsigned int seed(void)
{
	const char *env = getenv("LIBION_HOSTILE_SEED");

	return env ? (unsigned int)strtoul(env, NULL, 0) : (unsigned int)now_us();
}

static void cancel_rounds(bool compat)
{
	unsigned int s = seed();
	long long span = discovery_us();
	int rounds = iters(200, 25), cancelled = 0, inside = 0, ref = -1;

	if (compat) {
		int client = ion_open();

		ion_query_heap_cnt(client, &ref);
		ion_close(client);
	} else {
		struct ion_ctx *ctx;

		assert_int_equal(ion_ctx_new(NULL, &ctx), 0);
		ref = ion_ctx_get_heap_count(ctx);
		ion_ctx_unref(ctx);
	}
	printf("spec-09 (%s): discovery takes %lld us; %d rounds, seed %u\n",
	       compat ? "compat" : "context", span, rounds, s);
	srand(s);
	for (int i = 0; i < rounds; i++) {
		struct cancel_arg a = { .client = -1, .result = -1 };
		struct fd_table before;
		long long delay = span > 0 ? rand() % (span + span / 4 + 1) : 0;
		void *ret = NULL;
		pthread_t t;
		int result = -1;

		fd_table_read(&before);
		if (compat)
			a.client = ion_open();
		else
			assert_int_equal(ion_ctx_new(NULL, &a.ctx), 0);
		/* Every other round sends the cancel before the call starts, so
		 * that it is pending at the library's first cancellation point
		 * whatever the scheduler does (a loaded machine runs the whole
		 * discovery before this thread wakes); the others aim at a
		 * random point of it. */
		bool pending = i % 2 == 0, mid;

		atomic_store(&a.go, !pending);
		assert_int_equal(pthread_create(&t, NULL, discover_then_return, &a), 0);
		while (!atomic_load(&a.started))
			sched_yield();
		if (pending) {
			pthread_cancel(t);
			atomic_store(&a.go, 1);
			mid = true;
		} else {
			spin_us(delay);
			/* Whether the cancel comes while the library works: else
			 * the round proves less, and the next one aims earlier. */
			mid = !atomic_load(&a.done);
			pthread_cancel(t);
		}
		pthread_join(t, &ret);
		cancelled += ret == PTHREAD_CANCELED;
		inside += mid && ret == PTHREAD_CANCELED;
		if (!mid && !pending)
			span = span * 3 / 4;
		if (!later_call_returns(a.ctx, &result)) {
			fprintf(stderr, "FAILED: spec-09 (%s), round %d: cancelled %lld us into discovery "
				"(seed %u): a later call from another thread did not return within %u s: "
				"a lock is held by the cancelled thread\n",
				compat ? "compat" : "context", i, delay, s, 10 * watch_slowdown());
			fflush(stderr);
			_exit(1);
		}
		if (compat) {
			EXPECT(result == 0, "round %d: ion_alloc_fd after a cancelled discovery: got %s",
			       i, rname(result));
			ion_close(a.client);
		} else {
			EXPECT(result == ref, "round %d: the count after a cancelled discovery: got %s, expected %d",
			       i, rname(result), ref);
			ion_ctx_unref(a.ctx);
		}
		if (!fd_table_same_soft(&before, "after a cancelled discovery"))
			break;
	}
	printf("spec-09 (%s): %d of %d threads were cancelled, %d of them inside the call "
	       "(the rest finished first)\n", compat ? "compat" : "context", cancelled, rounds, inside);
	/* A suite where no cancel landed inside the library tested nothing. */
	EXPECT(inside > 0, "spec-09 (%s): no cancel of %d came while the library worked (seed %u)",
	       compat ? "compat" : "context", rounds, s);
}

static void spec09_cancel_in_discovery(void)
{
	cancel_rounds(false);
	cancel_rounds(true);
}

/* ---- 10: fork while other threads are inside the library ---- */

static atomic_int stop_threads;

static void *compat_loop(void *data)
{
	(void)data;
	while (!atomic_load(&stop_threads)) {
		int client = ion_open(), fd;

		if (ion_alloc_fd(client, page, 0, ION_HEAP_SYSTEM_MASK, 0, &fd) == 0)
			close(fd);
		ion_close(client);
	}
	return NULL;
}

static void *discovery_loop(void *data)
{
	(void)data;
	while (!atomic_load(&stop_threads)) {
		struct ion_ctx *ctx;
		int fd;

		if (ion_ctx_new(NULL, &ctx) < 0)
			continue;
		ion_ctx_get_heap_count(ctx);
		if (ion_ctx_alloc_mask(ctx, ION_HEAP_SYSTEM_MASK, page, 0, &fd, NULL) == 0)
			close(fd);
		ion_ctx_unref(ctx);
	}
	return NULL;
}

/* The forked child: allocates at once, through both APIs. */
static int child_allocates_now(void)
{
	struct ion_ctx *ctx;
	int client, fd, r;

	client = ion_open();
	if (client < 0)
		return 2;
	r = ion_alloc_fd(client, page, 0, ION_HEAP_SYSTEM_MASK, 0, &fd);
	if (r < 0)
		return 3;
	close(fd);
	ion_close(client);
	if (ion_ctx_new(NULL, &ctx) < 0 || ion_ctx_get_heap_count(ctx) <= 0)
		return 4;
	if (ion_ctx_alloc_mask(ctx, ION_HEAP_SYSTEM_MASK, page, 0, &fd, NULL) < 0)
		return 5;
	close(fd);
	ion_ctx_unref(ctx);
	return 0;
}

/* Says how it went in *verdict, shared with the parent.  Under valgrind it
 * then dies of SIGKILL: the leak check at exit would count what the other
 * threads, absent in a forked child, had allocated. */
static int child_allocates(void *arg)
{
	volatile int *verdict = arg;

	*verdict = child_allocates_now();
	if (watch_under_valgrind())
		kill(getpid(), SIGKILL);
	return *verdict;
}

struct fork_run {
	const char *load;	/* what the other threads do, for messages */
	int forks;
	int hung;
	atomic_int done;
};

/* Forks from its own thread, so that a fork() that never returns (its
 * atfork handler waiting for ever) is seen by the thread that waits. */
static void *fork_rounds(void *data)
{
	struct fork_run *f = data;
	volatile int *verdict = mmap(NULL, sizeof(int), PROT_READ | PROT_WRITE,
				     MAP_SHARED | MAP_ANONYMOUS, -1, 0);

	for (int i = 0; i < f->forks && verdict != MAP_FAILED; i++) {
		char what[160];
		int status, r;

		usleep((useconds_t)(rand() % 2000));
		snprintf(what, sizeof(what), "spec-10: fork %d of %d, %s", i + 1, f->forks, f->load);
		*verdict = -1;
		r = watch_wait(what, 5000 * watch_slowdown(), child_allocates, (void *)verdict,
			       &status);
		if (r == 0 && !(WIFEXITED(status) && WEXITSTATUS(status) == 0) &&
		    !(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL && *verdict == 0)) {
			fprintf(stderr, "%s: the child ended with %s %d (verdict %d)\n", what,
				WIFEXITED(status) ? "exit status" : "signal",
				WIFEXITED(status) ? WEXITSTATUS(status) : WTERMSIG(status), *verdict);
			r = -1;
		}
		if (r < 0 && ++f->hung == 2) {
			f->forks = i + 1; /* enough said; each hang costs its timeout */
			break;
		}
	}
	if (verdict != MAP_FAILED)
		munmap((void *)verdict, sizeof(int));
	atomic_store(&f->done, 1);
	return NULL;
}

static void fork_under_load(int compat_threads, int discovery_threads)
{
	pthread_t threads[16], forker;
	struct fork_run f = { .forks = iters(40, 8) };
	int n = compat_threads + discovery_threads;
	char load[96];
	struct timespec deadline;

	snprintf(load, sizeof(load), "%d threads in ion_open/ion_alloc_fd/ion_close and %d in discovery",
		 compat_threads, discovery_threads);
	f.load = load;
	atomic_store(&stop_threads, 0);
	for (int i = 0; i < n; i++)
		assert_int_equal(pthread_create(&threads[i], NULL,
						i < compat_threads ? compat_loop : discovery_loop, NULL), 0);
	assert_int_equal(pthread_create(&forker, NULL, fork_rounds, &f), 0);
	clock_gettime(CLOCK_REALTIME, &deadline);
	/* Two hung children (5 s each) and the forks themselves. */
	deadline.tv_sec += 12 * (time_t)watch_slowdown();
	if (pthread_timedjoin_np(forker, NULL, &deadline) != 0) {
		fprintf(stderr, "FAILED: spec-10, %s: fork() itself has not returned in %lld s "
			"(its atfork handler waits for a lock the other threads keep taking)\n",
			load, 12LL * watch_slowdown());
		fflush(stderr);
		_exit(1);
	}
	atomic_store(&stop_threads, 1);
	for (int i = 0; i < n; i++)
		pthread_join(threads[i], NULL);
	EXPECT(f.hung == 0, "%s: %d of %d forked children did not allocate (exit status 2: ion_open, "
	       "3: ion_alloc_fd, 4/5: a context; or a hang)", load, f.hung, f.forks);
}

static void spec10_fork_with_threads_inside(void)
{
	fork_under_load(2, 2);
	/* Discovery never pauses here: fork must still get its turn. */
	fork_under_load(2, 6);
}

/* ---- 11/12: odd files at device nodes ---- */

static const struct {
	const char *node;
	const char *backend;	/* whose heap the node would be, or NULL */
} device_nodes[] = {
	{ "dev/dma_heap/system", "dma-heap" },
	{ "dev/udmabuf", "udmabuf" },
	{ "dev/ion", "ion" },
	{ "dev/dri/card0", "gem" },
	{ "dev/video0", NULL },
};

struct node_case {
	const char *root;
	size_t node;
	enum node_kind kind;
};

/* Discovery in a sysroot with one odd node: it completes, the node's heap
 * is absent or unavailable for being no character device, and
 * ION_HEAP_SYSTEM_MASK falls to memfd. */
static int odd_node_case(void *arg)
{
	const struct node_case *c = arg;
	const char *backend = device_nodes[c->node].backend;
	const struct ion_heap *served = NULL;
	struct ion_device *dev = NULL;
	struct fd_table before;
	struct ion_ctx *ctx;
	int n, fd = -1, r;

	fd_table_read(&before);
	assert_int_equal(ion_ctx_new(c->root, &ctx), 0);
	n = ion_ctx_get_heap_count(ctx);
	EXPECT(n >= 1, "/%s as %s: discovery got %s", device_nodes[c->node].node,
	       node_kind_names[c->kind], rname(n));
	for (int i = 0; i < n; i++) {
		const struct ion_heap *h;
		const char *reason;

		assert_int_equal(ion_ctx_get_heap(ctx, (unsigned int)i, &h), 0);
		if (!backend || strcmp(ion_heap_get_backend(h), backend) != 0)
			continue;
		reason = ion_heap_get_reason(h);
		EXPECT(ion_heap_get_error(h) != 0, "/%s as %s: heap %s is available",
		       device_nodes[c->node].node, node_kind_names[c->kind], ion_heap_get_name(h));
		EXPECT(reason && (strstr(reason, "not a character device") ||
				  (strcmp(backend, "udmabuf") == 0 && c->kind == N_FILE &&
				   strstr(reason, "not the udmabuf device"))),
		       "/%s as %s: heap %s is unavailable because \"%s\", expected \"... is not a character device\"",
		       device_nodes[c->node].node, node_kind_names[c->kind], ion_heap_get_name(h),
		       reason ? reason : "(no reason)");
	}
	r = ion_ctx_alloc_mask(ctx, ION_HEAP_SYSTEM_MASK, page, ION_FLAG_CACHED, &fd, &served);
	EXPECT(r == 0 && served && strcmp(ion_heap_get_name(served), "memfd") == 0,
	       "/%s as %s: ION_HEAP_SYSTEM_MASK got %s from %s, expected memfd",
	       device_nodes[c->node].node, node_kind_names[c->kind], rname(r),
	       served ? ion_heap_get_name(served) : "no heap");
	if (r == 0)
		close(fd);
	if (!backend) {
		/* The device layer's own view of the node. */
		r = ion_ctx_get_device(ctx, "/dev/video0", &dev);
		if (r == 0)
			ion_device_unref(dev);
		r = ion_ctx_get_device(ctx, "video0", &dev);
		if (r == 0)
			ion_device_unref(dev);
	}
	ion_ctx_unref(ctx);
	fd_table_same_soft(&before, "an odd device node");
	return sub_status();
}

/* ion_open() reads the real /dev/ion: an odd file there only in a private
 * mount namespace, with a tmpfs over /dev. */
static int odd_dev_ion_case(void *arg)
{
	const struct node_case *c = arg;
	struct root fake = { "/dev" };
	char target[256];
	int client, fd, r;

	r = private_mounts();
	if (r == 0 && mount("tmpfs", "/dev", "tmpfs", 0, "mode=0755") < 0)
		r = -errno;
	if (r < 0) {
		printf("spec-11: no private mount namespace here (%s): ion_open() with %s at /dev/ion "
		       "is not tested\n", rname(r), node_kind_names[c->kind]);
		return 0;
	}
	root_node(&fake, "null", N_CHR_NULL, NULL);
	root_node(&fake, "ion", c->kind, NULL);
	client = ion_open();
	EXPECT(client >= 0, "ion_open() with %s at /dev/ion: got %s", node_kind_names[c->kind],
	       rname(client));
	if (client < 0)
		return sub_status();
	fd_link(client, target, sizeof(target));
	EXPECT(is_memfd(client), "ion_open() with %s at /dev/ion: the client is %s, expected a memfd",
	       node_kind_names[c->kind], target);
	r = ion_alloc_fd(client, page, 0, ION_HEAP_SYSTEM_MASK, 0, &fd);
	EXPECT(r == 0, "ion_open() with %s at /dev/ion: ion_alloc_fd got %s",
	       node_kind_names[c->kind], rname(r));
	if (r == 0)
		close(fd);
	ion_close(client);
	return sub_status();
}

static void spec11_odd_device_nodes(void)
{
	static const enum node_kind kinds[] = { N_FIFO, N_FILE, N_SOCKET, N_DIR };

	for (size_t n = 0; n < sizeof(device_nodes) / sizeof(device_nodes[0]); n++)
		for (size_t k = 0; k < sizeof(kinds) / sizeof(kinds[0]); k++) {
			struct node_case c = { .node = n, .kind = kinds[k] };
			char what[160];
			struct root r;

			root_make(&r);
			root_node(&r, device_nodes[n].node, kinds[k], "");
			/* sysfs speaks of the node, so that nothing skips it
			 * for being unknown. */
			root_node(&r, "sys/class/drm/card0/uevent", N_FILE,
				  "MAJOR=226\nMINOR=0\nDEVNAME=dri/card0\n");
			root_node(&r, "sys/class/video4linux/video0/uevent", N_FILE,
				  "MAJOR=81\nMINOR=0\nDEVNAME=video0\n");
			c.root = r.path;
			snprintf(what, sizeof(what), "spec-11: /%s as %s", device_nodes[n].node,
				 node_kind_names[kinds[k]]);
			sub_watch(what, 10, odd_node_case, &c);
			root_remove(&r);
		}
	for (size_t k = 0; k < sizeof(kinds) / sizeof(kinds[0]); k++) {
		struct node_case c = { .kind = kinds[k] };
		char what[160];

		snprintf(what, sizeof(what), "spec-11: ion_open() with %s at the real /dev/ion",
			 node_kind_names[kinds[k]]);
		sub_watch(what, 10, odd_dev_ion_case, &c);
	}
}

/* 12: only the udmabuf device is the udmabuf heap. */
static int not_udmabuf_case(void *arg)
{
	const struct node_case *c = arg;
	const struct ion_heap *h = NULL, *served = NULL;
	struct ion_ctx *ctx;
	const char *reason;
	int fd = SENTINEL_FD, r;

	assert_int_equal(ion_ctx_new(c->root, &ctx), 0);
	r = ion_ctx_find_heap(ctx, "udmabuf", &h);
	EXPECT(r == 0, "%s at /dev/udmabuf: no heap udmabuf listed (%s), expected it unavailable",
	       node_kind_names[c->kind], rname(r));
	if (r == 0) {
		reason = ion_heap_get_reason(h);
		EXPECT(ion_heap_get_error(h) != 0, "%s at /dev/udmabuf: heap udmabuf is available",
		       node_kind_names[c->kind]);
		/* The spec words the regular file's reason; another device's
		 * must at least say that udmabuf was wanted. */
		EXPECT(reason && (strstr(reason, "not the udmabuf device") ||
				  (c->kind != N_CHR_NULL && strstr(reason, "not a character device")) ||
				  (c->kind == N_CHR_NULL && strstr(reason, "udmabuf") &&
				   !strstr(reason, "Inappropriate ioctl"))),
		       "%s at /dev/udmabuf: unavailable because \"%s\", expected \"... not the udmabuf device\"",
		       node_kind_names[c->kind], reason ? reason : "(no reason)");
	}
	r = ion_ctx_alloc_mask(ctx, ION_HEAP_SYSTEM_MASK, page, ION_FLAG_CACHED, &fd, &served);
	EXPECT(r == 0 && served && strcmp(ion_heap_get_name(served), "memfd") == 0,
	       "%s at /dev/udmabuf: ION_HEAP_SYSTEM_MASK got %s from %s, expected memfd",
	       node_kind_names[c->kind], rname(r), served ? ion_heap_get_name(served) : "no heap");
	if (r == 0)
		close(fd);
	ion_ctx_unref(ctx);
	return sub_status();
}

static void spec12_udmabuf_must_be_udmabuf(void)
{
	static const enum node_kind kinds[] = { N_FILE, N_CHR_NULL };

	for (size_t k = 0; k < sizeof(kinds) / sizeof(kinds[0]); k++) {
		struct node_case c = { .kind = kinds[k] };
		char what[128];
		struct root r;

		root_make(&r);
		root_node(&r, "dev/udmabuf", kinds[k], "");
		/* Its sysfs entry, as a real /dev/null's. */
		root_sysfs_chr(&r, 1, 3, "mem", "null");
		c.root = r.path;
		snprintf(what, sizeof(what), "spec-12: %s at /dev/udmabuf", node_kind_names[kinds[k]]);
		sub_watch(what, 10, not_udmabuf_case, &c);
		root_remove(&r);
	}
}

/* 13: a memfd buffer carries F_SEAL_SEAL: no receiver can add F_SEAL_WRITE. */
static void check_memfd_seals(const char *what, int fd)
{
	const int want = F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_SEAL;
	int seals = fcntl(fd, F_GET_SEALS), r;
	unsigned char *p;

	EXPECT(seals >= 0 && (seals & want) == want,
	       "%s: seals %#x, expected F_SEAL_SHRINK|F_SEAL_GROW|F_SEAL_SEAL (%#x)", what, seals, want);
	r = fcntl(fd, F_ADD_SEALS, F_SEAL_WRITE);
	EXPECT(r < 0 && errno == EPERM, "%s: a receiver's F_ADD_SEALS(F_SEAL_WRITE): got %s, expected EPERM",
	       what, r < 0 ? strerrorname_np(errno) : "success");
	EXPECT(ftruncate(fd, 0) < 0 && errno == EPERM, "%s: shrinking it did not fail with EPERM", what);
	/* The producer can still write. */
	p = mmap(NULL, page, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	EXPECT(p != MAP_FAILED, "%s: a writable mapping: %s", what, strerror(errno));
	if (p != MAP_FAILED) {
		p[0] = 1;
		munmap(p, page);
	}
}

static void spec13_memfd_sealed(void)
{
	struct ion_heap_data heaps[ION_NUM_HEAP_IDS];
	struct ion_ctx *ctx;
	int client = ion_open(), cnt, fd;

	assert_int_equal(ion_ctx_new(NULL, &ctx), 0);
	assert_int_equal(ion_ctx_alloc(ctx, "memfd", page, 0, &fd), 0);
	check_memfd_seals("ion_ctx_alloc(memfd)", fd);
	close(fd);
	cnt = compat_heaps(client, heaps);
	for (int i = 0; i < cnt; i++) {
		ion_user_handle_t h;
		char what[96];
		int share;

		if (ion_alloc(client, page, 0, 1U << heaps[i].heap_id, ION_FLAG_CACHED, &h) < 0)
			continue;
		assert_int_equal(ion_share(client, h, &share), 0);
		snprintf(what, sizeof(what), "ion_share of a buffer of %s", heaps[i].name);
		if (is_memfd(share))
			check_memfd_seals(what, share);
		close(share);
		ion_free(client, h);
	}
	ion_ctx_unref(ctx);
	ion_close(client);
}

/* 14: RLIMIT_FSIZE makes memfd and udmabuf answer -EFBIG, not SIGXFSZ. */
static int fsize_case(void *arg)
{
	const char *name = arg;
	const struct ion_heap *h, *served = SENTINEL_HEAP;
	struct rlimit rl = { 1 << 20, 1 << 20 };
	struct ion_ctx *ctx;
	int fd = SENTINEL_FD, r, id;

	/* SIGXFSZ at its default action: a kill, which watch_run reports. */
	signal(SIGXFSZ, SIG_DFL);
	assert_int_equal(setrlimit(RLIMIT_FSIZE, &rl), 0);
	assert_int_equal(ion_ctx_new(NULL, &ctx), 0);
	assert_int_equal(ion_ctx_find_heap(ctx, name, &h), 0);
	r = ion_ctx_alloc(ctx, name, 4 << 20, 0, &fd);
	EXPECT(r == -EFBIG && fd == SENTINEL_FD,
	       "heap %s under a 1 MiB RLIMIT_FSIZE, 4 MiB: got %s, expected -EFBIG", name, rname(r));
	if (r == 0)
		close(fd);
	id = ion_heap_get_id(h);
	if (id >= 0) {
		r = ion_ctx_alloc_mask(ctx, 1U << id, 4 << 20, ION_FLAG_CACHED, &fd, &served);
		EXPECT(r == -EFBIG && served == SENTINEL_HEAP,
		       "heap %s under a 1 MiB RLIMIT_FSIZE, 4 MiB by its mask: got %s, expected -EFBIG",
		       name, rname(r));
		if (r == 0)
			close(fd);
		if (id == ION_HEAP_TYPE_SYSTEM) {
			int client = ion_open();

			r = ion_alloc_fd(client, 4 << 20, 0, ION_HEAP_SYSTEM_MASK, ION_FLAG_CACHED, &fd);
			EXPECT(r == -EFBIG, "ion_alloc_fd(ION_HEAP_SYSTEM_MASK) on %s under RLIMIT_FSIZE: got %s, expected -EFBIG",
			       name, rname(r));
			if (r == 0)
				close(fd);
			ion_close(client);
		}
	}
	r = ion_ctx_alloc(ctx, name, 64 << 10, 0, &fd);
	EXPECT(r == 0, "heap %s under a 1 MiB RLIMIT_FSIZE, 64 KiB: got %s", name, rname(r));
	if (r == 0)
		close(fd);
	ion_ctx_unref(ctx);
	return sub_status();
}

static void spec14_rlimit_fsize(void)
{
	char **heaps = test_heap_names();
	struct ion_ctx *ctx;

	assert_int_equal(ion_ctx_new(NULL, &ctx), 0);
	for (char **n = heaps; *n; n++) {
		const struct ion_heap *h;
		char what[128];

		if (ion_ctx_find_heap(ctx, *n, &h) < 0 ||
		    (strcmp(ion_heap_get_backend(h), "memfd") && strcmp(ion_heap_get_backend(h), "udmabuf")))
			continue;
		snprintf(what, sizeof(what), "spec-14: heap %s under RLIMIT_FSIZE", *n);
		sub_watch(what, 10, fsize_case, *n);
	}
	ion_ctx_unref(ctx);
	test_heap_names_free(heaps);
}

/* A tmpfs file that memfd_create did not make, or -1 without /dev/shm. */
static int shm_file(void)
{
	struct statfs sfs;
	int fd = open("/dev/shm", O_TMPFILE | O_RDWR | O_CLOEXEC, 0600);

	if (fd < 0)
		return -1;
	if (fstatfs(fd, &sfs) < 0 || sfs.f_type != TMPFS_MAGIC || ftruncate(fd, 2 * page) < 0) {
		close(fd);
		return -1;
	}
	return fd;
}

/* A memfd the way a sender outside libion makes one. */
static int plain_memfd(size_t len, unsigned int seals)
{
	int fd = memfd_create("hostile-sender", MFD_CLOEXEC | MFD_ALLOW_SEALING);

	assert_true(fd >= 0);
	assert_int_equal(ftruncate(fd, (off_t)len), 0);
	if (seals)
		assert_int_equal(fcntl(fd, F_ADD_SEALS, seals), 0);
	return fd;
}

static int memfd_without_proc(void *arg)
{
	struct ion_ctx *ctx;
	ion_user_handle_t h = 0;
	int client, fd, r;

	(void)arg;
	client = ion_open();
	assert_int_equal(ion_ctx_new(NULL, &ctx), 0);
	assert_int_equal(ion_ctx_alloc(ctx, "memfd", page, 0, &fd), 0);
	r = private_mounts();
	if (r == 0 && umount2("/proc", MNT_DETACH) < 0)
		r = -errno;
	if (r < 0) {
		printf("spec-15: cannot unmount /proc privately here (%s): memfds without /proc untested\n",
		       rname(r));
		return 0;
	}
	EXPECT_RET(ion_import(client, fd, &h), 0);
	EXPECT_RET(ion_sync(fd, ION_SYNC_START | ION_SYNC_RW), 0);
	EXPECT_RET(ion_sync_fd(client, fd), 0);
	if (h > 0)
		ion_free(client, h);
	close(fd);
	ion_ctx_unref(ctx);
	ion_close(client);
	return sub_status();
}

/* 15: only memfd_create's files are memfds. */
static void spec15_tmpfs_is_not_memfd(void)
{
	struct ion_ctx *ctx;
	ion_user_handle_t h = SENTINEL_HANDLE;
	int client = ion_open(), shm = shm_file(), memfd;
	size_t size = SENTINEL_SIZE;

	assert_int_equal(ion_ctx_new(NULL, &ctx), 0);
	if (shm < 0) {
		printf("spec-15: no tmpfs at /dev/shm: tmpfs files untested\n");
	} else {
		EXPECT_RET(ion_import(client, shm, &h), -EINVAL);
		EXPECT(h == SENTINEL_HANDLE, "a refused import wrote its handle");
		EXPECT_RET(ion_sync(shm, ION_SYNC_START | ION_SYNC_RW), -ENOTTY);
		EXPECT_RET(ion_sync(shm, ION_SYNC_END | ION_SYNC_RW), -ENOTTY);
		EXPECT_RET(ion_sync_fd(client, shm), -ENOTTY);
		EXPECT_RET(ion_ctx_sync_for_device(ctx, shm), -ENOTTY);
		EXPECT_RET(ion_fd_get_size(shm, &size), -EINVAL);
		EXPECT(size == SENTINEL_SIZE, "a refused ion_fd_get_size wrote its size");
		close(shm);
	}
	/* What is a memfd stays one. */
	memfd = plain_memfd(2 * page, F_SEAL_SHRINK);
	EXPECT_RET(ion_import(client, memfd, &h), 0);
	EXPECT_RET(ion_sync(memfd, ION_SYNC_START | ION_SYNC_RW), 0);
	EXPECT_RET(ion_sync_fd(client, memfd), 0);
	EXPECT_RET(ion_ctx_sync_for_device(ctx, memfd), 0);
	if (h > 0)
		ion_free(client, h);
	close(memfd);
	ion_ctx_unref(ctx);
	ion_close(client);
	sub_watch("spec-15: a memfd where /proc is not mounted", 10, memfd_without_proc, NULL);
}

/* 16: a client's number reused by another file is not that client. */
static void stale_client(const char *what, int (*reopen)(void))
{
	struct ion_heap_data heaps[2];
	struct fd_table before;
	ion_user_handle_t h, out = SENTINEL_HANDLE;
	unsigned char *p = SENTINEL_PTR;
	int keep, client, again, fd = SENTINEL_FD, cnt = SENTINEL_COUNT, buf, map_fd = SENTINEL_FD, r;

	/* Another client keeps the shared context (and its fds) alive. */
	keep = ion_open();
	assert_true(keep >= 0);
	ion_query_heap_cnt(keep, &cnt);
	fd_table_read(&before);
	client = ion_open();
	assert_true(client >= 0);
	assert_int_equal(ion_alloc(client, page, 0, ION_HEAP_SYSTEM_MASK, 0, &h), 0);
	assert_int_equal(ion_alloc_fd(client, page, 0, ION_HEAP_SYSTEM_MASK, 0, &buf), 0);
	close(client); /* Android's ion_close() */
	again = reopen();
	if (again != client) {
		assert_true(dup2(again, client) == client);
		close(again);
	}
	cnt = SENTINEL_COUNT;
	r = ion_alloc(client, page, 0, ION_HEAP_SYSTEM_MASK, 0, &out);
	EXPECT(r == -ENOTTY && out == SENTINEL_HANDLE,
	       "%s: ion_alloc on the stale number: got %s, expected -ENOTTY", what, rname(r));
	if (r == 0)
		ion_free(client, out);
	out = SENTINEL_HANDLE;
	EXPECT_RET(ion_alloc_fd(client, page, 0, ION_HEAP_SYSTEM_MASK, 0, &fd), -ENOTTY);
	if (fd >= 0)
		close(fd);
	EXPECT_RET(ion_map(client, h, page, PROT_READ, MAP_SHARED, 0, &p, &map_fd), -ENOTTY);
	if (p != SENTINEL_PTR) {
		soft_fail(__FILE__, __LINE__, "%s: an old handle of the stale client mapped", what);
		munmap(p, page);
		close(map_fd);
	}
	fd = SENTINEL_FD;
	EXPECT_RET(ion_share(client, h, &fd), -ENOTTY);
	if (fd >= 0)
		close(fd);
	EXPECT_RET(ion_import(client, buf, &out), -ENOTTY);
	EXPECT_RET(ion_sync_fd(client, buf), -ENOTTY);
	EXPECT_RET(ion_query_heap_cnt(client, &cnt), -ENOTTY);
	EXPECT_RET(ion_query_get_heaps(client, 2, heaps), -ENOTTY);
	EXPECT_RET(ion_is_legacy(client), -ENOTTY);
	EXPECT_RET(ion_is_using_modular_heaps(client), 0);
	EXPECT_RET(ion_free(client, h), -ENOTTY);
	EXPECT(cnt == SENTINEL_COUNT, "%s: a refused query wrote its count", what);
	close(buf);
	/* Android's ion_close() of a foreign fd closes it. */
	EXPECT_RET(ion_close(client), 0);
	/* The stale client's buffer went with it. */
	fd_table_same_soft(&before, what);
	ion_close(keep);
}

static int reopen_devnull(void)
{
	return open("/dev/null", O_RDONLY | O_CLOEXEC);
}

static int reopen_memfd(void)
{
	return memfd_create("unrelated", MFD_CLOEXEC);
}

static int reopen_socket(void)
{
	return socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
}

static void spec16_stale_client(void)
{
	stale_client("client number reused by /dev/null", reopen_devnull);
	stale_client("client number reused by an unrelated memfd", reopen_memfd);
	stale_client("client number reused by a socket", reopen_socket);
}

/* 17: ion_fd_get_size() takes buffers only and moves no offset. */
static void spec17_get_size(void)
{
	struct ion_ctx *ctx;
	size_t size = SENTINEL_SIZE;
	int pipefd[2], sv[2], dir, devnull, shm, file, memfd, r;
	char path[] = "/tmp/libion-hostile-file-XXXXXX";
	off_t pos;

	assert_int_equal(pipe2(pipefd, O_CLOEXEC), 0);
	assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv), 0);
	dir = open("/tmp", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	devnull = open("/dev/null", O_RDONLY | O_CLOEXEC);
	shm = shm_file();
	file = mkostemp(path, O_CLOEXEC);
	assert_true(dir >= 0 && devnull >= 0 && file >= 0);
	unlink(path);
	assert_int_equal(ftruncate(file, 3 * page), 0);

	pos = lseek(dir, 0, SEEK_CUR);
	r = ion_fd_get_size(dir, &size);
	EXPECT(r == -EINVAL && size == SENTINEL_SIZE,
	       "a directory: got %s (size %zu), expected -EINVAL", rname(r), size);
	EXPECT(lseek(dir, 0, SEEK_CUR) == pos, "a directory's offset moved from %lld to %lld",
	       (long long)pos, (long long)lseek(dir, 0, SEEK_CUR));
	size = SENTINEL_SIZE;
	EXPECT_RET(ion_fd_get_size(pipefd[0], &size), -EINVAL);
	EXPECT_RET(ion_fd_get_size(pipefd[1], &size), -EINVAL);
	EXPECT_RET(ion_fd_get_size(sv[0], &size), -EINVAL);
	EXPECT_RET(ion_fd_get_size(devnull, &size), -EINVAL);
	EXPECT_RET(ion_fd_get_size(file, &size), -EINVAL);
	if (shm >= 0)
		EXPECT_RET(ion_fd_get_size(shm, &size), -EINVAL);
	EXPECT(size == SENTINEL_SIZE, "a refused ion_fd_get_size wrote its size (%zu)", size);
	EXPECT_RET(ion_fd_get_size(-1, &size), -EBADF);

	/* Buffers: the size, and the offset where it was. */
	memfd = plain_memfd(5 * page, F_SEAL_SHRINK);
	lseek(memfd, 123, SEEK_SET);
	EXPECT_RET(ion_fd_get_size(memfd, &size), 0);
	EXPECT(size == 5 * page, "a memfd of %zu bytes: size %zu", 5 * page, size);
	EXPECT(lseek(memfd, 0, SEEK_CUR) == 123, "a memfd's offset moved");
	close(memfd);
	assert_int_equal(ion_ctx_new(NULL, &ctx), 0);
	char **heaps = test_heap_names();
	for (char **n = heaps; *n; n++) {
		int fd;

		if (ion_ctx_alloc(ctx, *n, 3 * page, 0, &fd) < 0)
			continue;
		size = 0;
		r = ion_fd_get_size(fd, &size);
		EXPECT(r == 0 && size == 3 * page, "heap %s: a buffer of %zu bytes: got %s, size %zu",
		       *n, 3 * page, rname(r), size);
		close(fd);
	}
	test_heap_names_free(heaps);
	ion_ctx_unref(ctx);
	close(pipefd[0]);
	close(pipefd[1]);
	close(sv[0]);
	close(sv[1]);
	close(dir);
	close(devnull);
	close(file);
	if (shm >= 0)
		close(shm);
}

/* 18: an imported memfd must be sealed against shrinking. */
static void spec18_import_needs_seal(void)
{
	ion_user_handle_t h = SENTINEL_HANDLE;
	unsigned char *p = SENTINEL_PTR;
	int client = ion_open(), fd, map_fd = SENTINEL_FD, r;

	assert_true(client >= 0);
	/* Unsealed, sealable: the sender could shrink it under the map. */
	fd = plain_memfd(2 * page, 0);
	r = ion_import(client, fd, &h);
	EXPECT(r == -EINVAL && h == SENTINEL_HANDLE,
	       "an unsealed memfd: ion_import got %s, expected -EINVAL", rname(r));
	if (r == 0)
		ion_free(client, h);
	close(fd);
	/* Not sealable at all (F_SEAL_SEAL from birth, no F_SEAL_SHRINK). */
	fd = memfd_create("hostile-unsealable", MFD_CLOEXEC);
	assert_int_equal(ftruncate(fd, 2 * page), 0);
	h = SENTINEL_HANDLE;
	r = ion_import(client, fd, &h);
	EXPECT(r == -EINVAL && h == SENTINEL_HANDLE,
	       "a memfd made without MFD_ALLOW_SEALING: ion_import got %s, expected -EINVAL", rname(r));
	if (r == 0)
		ion_free(client, h);
	close(fd);
	/* Grow-sealed only. */
	fd = plain_memfd(2 * page, F_SEAL_GROW);
	h = SENTINEL_HANDLE;
	r = ion_import(client, fd, &h);
	EXPECT(r == -EINVAL && h == SENTINEL_HANDLE,
	       "a memfd sealed F_SEAL_GROW only: ion_import got %s, expected -EINVAL", rname(r));
	if (r == 0)
		ion_free(client, h);
	close(fd);

	/* Sealed: imported, mapped to its size and no further; the sender
	 * cannot shrink it. */
	fd = plain_memfd(2 * page, F_SEAL_SHRINK);
	h = SENTINEL_HANDLE;
	EXPECT_RET(ion_import(client, fd, &h), 0);
	if (h != SENTINEL_HANDLE) {
		r = ion_map(client, h, 3 * page, PROT_READ, MAP_SHARED, 0, &p, &map_fd);
		EXPECT(r == -EINVAL && p == SENTINEL_PTR, "mapping past a sealed memfd's end: got %s",
		       rname(r));
		r = ion_map(client, h, 2 * page, PROT_READ, MAP_SHARED, 0, &p, &map_fd);
		EXPECT(r == 0, "mapping a sealed memfd: got %s", rname(r));
		EXPECT(ftruncate(fd, page) < 0 && errno == EPERM, "the sender shrank a sealed memfd");
		if (r == 0) {
			/* Touching every page must not SIGBUS. */
			volatile unsigned char sum = 0;

			for (size_t i = 0; i < 2 * page; i += page)
				sum += p[i];
			(void)sum;
			munmap(p, 2 * page);
			close(map_fd);
		}
		ion_free(client, h);
	}
	close(fd);
	ion_close(client);
}

/* ------------------------------------------------------------------ */
/* Inputs that already work                                            */
/* ------------------------------------------------------------------ */

/* Every call that takes a client fd, on one bad fd: want for all. */
static void compat_calls_on(const char *what, int bad, int want, int buf_fd)
{
	struct ion_heap_data heaps[2];
	ion_user_handle_t h = SENTINEL_HANDLE;
	unsigned char *p = SENTINEL_PTR;
	int fd = SENTINEL_FD, map_fd = SENTINEL_FD, cnt = SENTINEL_COUNT, r;

	memset(heaps, 0xa5, sizeof(heaps));
#define ON_BAD(call)                                                           \
	do {                                                                   \
		r = (call);                                                    \
		EXPECT(r == want, "%s: %s: got %s, expected %s", what, #call,  \
		       rname(r), rname(want));                                 \
	} while (0)
	ON_BAD(ion_alloc(bad, page, 0, ION_HEAP_SYSTEM_MASK, 0, &h));
	ON_BAD(ion_alloc_fd(bad, page, 0, ION_HEAP_SYSTEM_MASK, 0, &fd));
	ON_BAD(ion_free(bad, 1));
	ON_BAD(ion_map(bad, 1, page, PROT_READ, MAP_SHARED, 0, &p, &map_fd));
	ON_BAD(ion_share(bad, 1, &fd));
	ON_BAD(ion_import(bad, buf_fd, &h));
	ON_BAD(ion_sync_fd(bad, buf_fd));
	ON_BAD(ion_query_heap_cnt(bad, &cnt));
	ON_BAD(ion_query_get_heaps(bad, 2, heaps));
	ON_BAD(ion_is_legacy(bad));
	/* The fd is checked before any pointer. */
	ON_BAD(ion_alloc(bad, page, 0, ION_HEAP_SYSTEM_MASK, 0, NULL));
	ON_BAD(ion_alloc_fd(bad, page, 0, ION_HEAP_SYSTEM_MASK, 0, NULL));
	ON_BAD(ion_map(bad, 1, page, PROT_READ, MAP_SHARED, 0, NULL, NULL));
	ON_BAD(ion_share(bad, 1, NULL));
	ON_BAD(ion_import(bad, buf_fd, NULL));
	ON_BAD(ion_query_heap_cnt(bad, NULL));
#undef ON_BAD
	EXPECT(h == SENTINEL_HANDLE && fd == SENTINEL_FD && p == SENTINEL_PTR &&
	       map_fd == SENTINEL_FD && cnt == SENTINEL_COUNT && heaps[0].type == 0xa5a5a5a5U,
	       "%s: a refused call wrote an out-parameter", what);
}

/* Every call that takes a buffer fd, on one bad fd. */
static void buffer_calls_on(const char *what, struct ion_ctx *ctx, int client, int bad,
			    int want, int want_size, int want_import)
{
	ion_user_handle_t h = SENTINEL_HANDLE;
	size_t size = SENTINEL_SIZE;

	int r = ion_sync(bad, ION_SYNC_START | ION_SYNC_RW);

	EXPECT(r == want, "%s: ion_sync: got %s, expected %s", what, rname(r), rname(want));
	EXPECT_RET(ion_fd_set_name(bad, "hostile"), want);
	EXPECT_RET(ion_ctx_sync_for_device(ctx, bad), want);
	EXPECT_RET(ion_sync_fd(client, bad), want);
	if (want_size != INT_MIN) /* /dev/null's size is spec-17's */
		EXPECT_RET(ion_fd_get_size(bad, &size), want_size);
	EXPECT_RET(ion_import(client, bad, &h), want_import);
	EXPECT(h == SENTINEL_HANDLE && size == SENTINEL_SIZE, "%s: a refused call wrote an out-parameter",
	       what);
}

static void check_bad_fds(void)
{
	struct ion_ctx *ctx;
	int client = ion_open(), closed, devnull, buf;
	struct {
		const char *what;
		int fd;
	} bads[] = {
		{ "fd -1", -1 }, { "a closed fd", 0 }, { "fd INT_MAX", INT_MAX },
		{ "fd 1 << 20", 1 << 20 }, { "fd INT_MIN", INT_MIN },
	};

	assert_true(client >= 0);
	assert_int_equal(ion_ctx_new(NULL, &ctx), 0);
	assert_int_equal(ion_alloc_fd(client, page, 0, ION_HEAP_SYSTEM_MASK, 0, &buf), 0);
	/* Closed last, so that no fd of this check takes the number. */
	closed = open("/dev/null", O_RDONLY | O_CLOEXEC);
	close(closed);
	bads[1].fd = closed;
	for (size_t i = 0; i < sizeof(bads) / sizeof(bads[0]); i++) {
		compat_calls_on(bads[i].what, bads[i].fd, -EBADF, buf);
		buffer_calls_on(bads[i].what, ctx, client, bads[i].fd, -EBADF, -EBADF, -EBADF);
		int r = ion_close(bads[i].fd);

		EXPECT(r == -EBADF, "%s: ion_close: got %s, expected -EBADF", bads[i].what, rname(r));
	}
	/* An open fd that is no client: what the kernel answers an unknown ioctl. */
	devnull = open("/dev/null", O_RDONLY | O_CLOEXEC);
	compat_calls_on("/dev/null as a client", devnull, -ENOTTY, buf);
	compat_calls_on("a buffer fd as a client", buf, -ENOTTY, buf);
	buffer_calls_on("/dev/null as a buffer", ctx, client, devnull, -ENOTTY, INT_MIN, -EINVAL);
	EXPECT_RET(ion_close(devnull), 0); /* Android's ion_close() closes it */
	EXPECT(fcntl(devnull, F_GETFD) < 0, "ion_close() left a foreign fd open");
	close(buf);
	ion_ctx_unref(ctx);
	ion_close(client);
}

static void check_bad_handles(void)
{
	const ion_user_handle_t bad[] = { 0, -1, INT_MIN, INT_MAX, 1000, 0x10000 };
	ion_user_handle_t h, freed;
	unsigned char *p = SENTINEL_PTR;
	int a = ion_open(), b = ion_open(), fd = SENTINEL_FD, map_fd = SENTINEL_FD;

	assert_true(a >= 0 && b >= 0);
	assert_int_equal(ion_alloc(a, page, 0, ION_HEAP_SYSTEM_MASK, 0, &h), 0);
	assert_int_equal(ion_alloc(a, page, 0, ION_HEAP_SYSTEM_MASK, 0, &freed), 0);
	assert_int_equal(ion_free(a, freed), 0);
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]) + 1; i++) {
		ion_user_handle_t x = i < sizeof(bad) / sizeof(bad[0]) ? bad[i] : freed;

		int r = ion_free(a, x);

		EXPECT(r == -EINVAL, "ion_free(handle %d): got %s, expected -EINVAL", x, rname(r));
		r = ion_share(a, x, &fd);
		EXPECT(r == -EINVAL, "ion_share(handle %d): got %s, expected -EINVAL", x, rname(r));
		r = ion_map(a, x, page, PROT_READ, MAP_SHARED, 0, &p, &map_fd);
		EXPECT(r == -EINVAL, "ion_map(handle %d): got %s, expected -EINVAL", x, rname(r));
	}
	/* Client b has no handle: a's is not b's. */
	EXPECT_RET(ion_share(b, h, &fd), -EINVAL);
	EXPECT_RET(ion_map(b, h, page, PROT_READ, MAP_SHARED, 0, &p, &map_fd), -EINVAL);
	EXPECT_RET(ion_free(b, h), -EINVAL);
	EXPECT(fd == SENTINEL_FD && p == SENTINEL_PTR && map_fd == SENTINEL_FD,
	       "a refused handle call wrote an out-parameter");
	EXPECT_RET(ion_free(a, h), 0);
	EXPECT_RET(ion_free(a, h), -EINVAL);
	ion_close(b);
	ion_close(a);
}

static void check_bad_lengths(void)
{
	const size_t lens[] = { 0, SIZE_MAX, SIZE_MAX - 1, SIZE_MAX - page + 2 };
	struct ion_alloc_config *config;
	struct ion_solution *sol = SENTINEL_SOLUTION;
	struct ion_ctx *ctx;
	ion_user_handle_t h = SENTINEL_HANDLE, ok;
	unsigned char *p = SENTINEL_PTR;
	int client = ion_open(), fd = SENTINEL_FD, map_fd = SENTINEL_FD;
	size_t size = 0;
	char **heaps = test_heap_names();

	assert_int_equal(ion_ctx_new(NULL, &ctx), 0);
	for (size_t i = 0; i < sizeof(lens) / sizeof(lens[0]); i++) {
		size_t len = lens[i];

		EXPECT(ion_alloc_fd(client, len, 0, ION_HEAP_SYSTEM_MASK, 0, &fd) == -EINVAL,
		       "ion_alloc_fd, length %zu: expected -EINVAL", len);
		EXPECT(ion_alloc(client, len, 0, ION_HEAP_SYSTEM_MASK, 0, &h) == -EINVAL,
		       "ion_alloc, length %zu: expected -EINVAL", len);
		/* The length comes before the mask. */
		EXPECT(ion_alloc_fd(client, len, 0, 0, 0, &fd) == -EINVAL,
		       "ion_alloc_fd, length %zu, mask 0: expected -EINVAL", len);
		EXPECT(ion_ctx_alloc_mask(ctx, ION_HEAP_SYSTEM_MASK, len, 0, &fd, NULL) == -EINVAL,
		       "ion_ctx_alloc_mask, length %zu: expected -EINVAL", len);
		for (char **n = heaps; *n; n++)
			EXPECT(ion_ctx_alloc(ctx, *n, len, 0, &fd) == -EINVAL,
			       "ion_ctx_alloc(%s), length %zu: expected -EINVAL", *n, len);
		assert_int_equal(ion_alloc_config_new(&config), 0);
		if (len) {
			assert_int_equal(ion_alloc_config_set_size(config, len), 0);
			EXPECT(ion_ctx_solve(ctx, config, &sol) == -EINVAL,
			       "ion_ctx_solve, length %zu: expected -EINVAL", len);
		} else {
			EXPECT_RET(ion_alloc_config_set_size(config, 0), -EINVAL);
			EXPECT(ion_ctx_solve(ctx, config, &sol) == -EINVAL,
			       "ion_ctx_solve with no size: expected -EINVAL");
		}
		EXPECT(ion_ctx_allocate(ctx, config, &fd, NULL) == -EINVAL,
		       "ion_ctx_allocate, length %zu: expected -EINVAL", len);
		ion_alloc_config_free(config);
	}
	EXPECT(fd == SENTINEL_FD && h == SENTINEL_HANDLE && sol == SENTINEL_SOLUTION,
	       "a refused length wrote an out-parameter");
	/* One byte is a page. */
	assert_int_equal(ion_alloc_fd(client, 1, 0, ION_HEAP_SYSTEM_MASK, 0, &fd), 0);
	EXPECT(ion_fd_get_size(fd, &size) == 0 && size == page, "1 byte: a buffer of %zu", size);
	close(fd);
	fd = SENTINEL_FD;

	/* Map lengths and offsets. */
	assert_int_equal(ion_alloc(client, 2 * page, 0, ION_HEAP_SYSTEM_MASK, 0, &ok), 0);
	const struct {
		size_t len;
		off_t off;
	} maps[] = {
		{ 0, 0 }, { SIZE_MAX, 0 }, { 3 * page, 0 }, { 2 * page, (off_t)page },
		{ page, 2 * (off_t)page }, { page, -(off_t)page }, { SIZE_MAX - page + 1, (off_t)page },
		{ page, (off_t)1 << 40 }, { page, INT64_MAX & ~(off_t)(page - 1) },
	};
	for (size_t i = 0; i < sizeof(maps) / sizeof(maps[0]); i++) {
		int r = ion_map(client, ok, maps[i].len, PROT_READ, MAP_SHARED, maps[i].off, &p, &map_fd);

		EXPECT(r == -EINVAL && p == SENTINEL_PTR && map_fd == SENTINEL_FD,
		       "ion_map of %zu bytes at %lld in a %zu-byte buffer: got %s, expected -EINVAL",
		       maps[i].len, (long long)maps[i].off, 2 * page, rname(r));
		if (r == 0) {
			munmap(p, maps[i].len);
			close(map_fd);
			p = SENTINEL_PTR;
			map_fd = SENTINEL_FD;
		}
	}
	ion_free(client, ok);
	test_heap_names_free(heaps);
	ion_ctx_unref(ctx);
	ion_close(client);
}

static void check_bad_masks_and_flags(void)
{
	struct ion_heap_data heaps[ION_NUM_HEAP_IDS];
	unsigned int used = 0;
	int client = ion_open(), cnt, fd = SENTINEL_FD, r;

	cnt = compat_heaps(client, heaps);
	for (int i = 0; i < cnt; i++)
		used |= 1U << heaps[i].heap_id;
	EXPECT_RET(ion_alloc_fd(client, page, 0, 0, 0, &fd), -ENODEV);
	EXPECT_RET(ion_alloc_fd(client, page, 0, ~used, ION_FLAG_CACHED, &fd), -ENODEV);
	for (unsigned int bit = 0; bit < 32; bit++)
		if (!(used & (1U << bit))) {
			r = ion_alloc_fd(client, page, 0, 1U << bit, ION_FLAG_CACHED, &fd);
			EXPECT(r == -ENODEV, "mask %#x (no heap has id %u): got %s, expected -ENODEV",
			       1U << bit, bit, rname(r));
		}
	EXPECT(fd == SENTINEL_FD, "a refused mask wrote the fd");
	/* Unknown bits beside a known one: the known heap serves. */
	r = ion_alloc_fd(client, page, 0, ~used | ION_HEAP_SYSTEM_MASK, ION_FLAG_CACHED, &fd);
	EXPECT(r == 0, "mask %#x: got %s, expected 0", ~used | ION_HEAP_SYSTEM_MASK, rname(r));
	if (r == 0)
		close(fd);
	fd = SENTINEL_FD;
	for (unsigned int bit = 2; bit < 32; bit++) {
		ion_user_handle_t h = SENTINEL_HANDLE;

		r = ion_alloc_fd(client, page, 0, ION_HEAP_SYSTEM_MASK, 1U << bit, &fd);
		EXPECT(r == -EINVAL, "flag %#x: got %s, expected -EINVAL", 1U << bit, rname(r));
		r = ion_alloc(client, page, 0, ION_HEAP_SYSTEM_MASK, 1U << bit, &h);
		EXPECT(r == -EINVAL && h == SENTINEL_HANDLE, "ion_alloc, flag %#x: got %s", 1U << bit,
		       rname(r));
	}
	EXPECT(fd == SENTINEL_FD, "a refused flag wrote the fd");
	ion_close(client);
}

/* ---- sysroots with odd files ---- */

struct odd_root {
	const char *what;
	void (*make)(struct root *r);
	bool unprivileged;	/* run as nobody: permissions must bite */
};

static void make_loops(struct root *r)
{
	root_node(r, "dev/dma_heap", N_SYMLINK, "dma_heap");
	root_node(r, "dev/udmabuf", N_SYMLINK, "udmabuf2");
	root_node(r, "dev/udmabuf2", N_SYMLINK, "udmabuf");
	root_node(r, "dev/ion", N_SYMLINK, "ion");
	root_node(r, "dev/dri", N_SYMLINK, "dri");
	root_node(r, "dev/video0", N_SYMLINK, "video0");
	root_node(r, "sys/class/drm", N_SYMLINK, "drm");
	root_node(r, "sys/class/video4linux/video0", N_SYMLINK, "video0");
	root_node(r, "sys/dev/char", N_SYMLINK, "char");
	root_node(r, "sys/firmware/memmap", N_SYMLINK, "memmap");
	root_node(r, "sys/module/udmabuf/parameters/size_limit_mb", N_SYMLINK, "size_limit_mb");
	root_node(r, "proc/meminfo", N_SYMLINK, "meminfo");
	root_node(r, "proc/sys/kernel/osrelease", N_SYMLINK, "osrelease");
	root_node(r, "proc/device-tree", N_SYMLINK, "device-tree");
	root_node(r, "heaps.d", N_SYMLINK, "heaps.d");
}

static void make_dirs_for_files(struct root *r)
{
	root_node(r, "dev/udmabuf", N_DIR, NULL);
	root_node(r, "dev/ion", N_DIR, NULL);
	root_node(r, "dev/dma_heap/system", N_DIR, NULL);
	root_node(r, "dev/dri/card0", N_DIR, NULL);
	root_node(r, "dev/dri/renderD128", N_DIR, NULL);
	root_node(r, "sys/class/drm/card0/uevent", N_DIR, NULL);
	root_node(r, "sys/class/video4linux/video0/uevent", N_DIR, NULL);
	root_node(r, "sys/firmware/memmap/0/type", N_DIR, NULL);
	root_node(r, "sys/firmware/memmap/0/end", N_DIR, NULL);
	root_node(r, "sys/module/udmabuf/parameters/size_limit_mb", N_DIR, NULL);
	root_node(r, "proc/meminfo", N_DIR, NULL);
	root_node(r, "proc/sys/kernel/osrelease", N_DIR, NULL);
	root_node(r, "proc/device-tree/compatible", N_DIR, NULL);
	root_node(r, "sys/class/dmi/id/sys_vendor", N_DIR, NULL);
	root_node(r, "heaps.d/50-dir.conf", N_DIR, NULL);
}

static void make_files_for_dirs(struct root *r)
{
	root_node(r, "dev/dma_heap", N_FILE, "not a directory\n");
	root_node(r, "dev/dri", N_FILE, "");
	root_node(r, "sys/class/drm", N_FILE, "");
	root_node(r, "sys/class/video4linux", N_FILE, "");
	root_node(r, "sys/dev/char", N_FILE, "");
	root_node(r, "sys/firmware/memmap", N_FILE, "");
	root_node(r, "proc/sys", N_FILE, "");
	root_node(r, "heaps.d", N_FILE, "[Heap memfd]\n");
}

static void make_unreadable(struct root *r)
{
	char path[PATH_MAX];

	root_node(r, "dev/dma_heap/system", N_UNREADABLE, "");
	root_node(r, "dev/udmabuf", N_UNREADABLE, "");
	root_node(r, "dev/ion", N_UNREADABLE, "");
	root_node(r, "proc/meminfo", N_UNREADABLE, "MemTotal: 1000 kB\n");
	root_node(r, "proc/sys/kernel/osrelease", N_UNREADABLE, "6.1.0\n");
	root_node(r, "sys/module/udmabuf/parameters/size_limit_mb", N_UNREADABLE, "64\n");
	root_node(r, "sys/class/drm/card0/uevent", N_UNREADABLE, "DEVNAME=dri/card0\n");
	root_node(r, "heaps.d/50-a.conf", N_UNREADABLE, "[Heap memfd]\n");
	root_node(r, "sys/class/video4linux/video0/uevent", N_FILE, "DEVNAME=video0\n");
	root_join(r, "sys/class/video4linux", path, sizeof(path));
	chmod(path, 0);
	root_node(r, "dev/dri/card0", N_FILE, "");
	root_join(r, "dev/dri", path, sizeof(path));
	chmod(path, 0);
}

static void make_garbage(struct root *r)
{
	static const char junk[] = "\x01\xff\xfe garbage\n\n\n:::\t";

	root_node(r, "proc/meminfo", N_FILE,
		  "MemTotal: 99999999999999999999999 kB\nCmaTotal: -5 kB\nMemTotal: x\n");
	root_node(r, "sys/module/udmabuf/parameters/size_limit_mb", N_FILE, "-1\n");
	root_node(r, "sys/firmware/memmap/0/type", N_FILE, "System RAM\n");
	root_node(r, "sys/firmware/memmap/0/end", N_FILE, "0xffffffffffffffff\n");
	root_node(r, "sys/firmware/memmap/1/type", N_FILE, "System RAM\n");
	root_node(r, "sys/firmware/memmap/1/end", N_FILE, junk);
	root_node(r, "proc/sys/kernel/osrelease", N_FILE, junk);
	root_node(r, "proc/device-tree/compatible", N_FILE, junk);
	root_node(r, "sys/class/drm/card0/uevent", N_FILE,
		  "MAJOR=99999999999\nMINOR=-1\nDEVNAME=../../../etc/passwd\n");
	root_node(r, "sys/class/video4linux/video0/uevent", N_FILE, "DEVNAME=\nMAJOR=\n");
	root_node(r, "heaps.d/50-junk.conf", N_FILE, junk);
	root_node(r, "heaps.d/60-max.conf", N_FILE, "[Heap memfd]\nMaxSize = 0\nMaxSize = 99999999999999999999G\n");
}

static void make_missing(struct root *r)
{
	/* A sysroot with nothing in it: every source absent. */
	(void)r;
}

struct odd_run {
	const struct odd_root *o;
	const char *root;
};

static int odd_root_case(void *arg)
{
	const struct odd_run *run = arg;
	const struct ion_heap *memfd = NULL, *served = NULL;
	struct ion_device *dev = NULL;
	struct fd_table before;
	struct ion_ctx *ctx;
	char heaps[PATH_MAX];
	int n, fd, r;

	if (run->o->unprivileged && !drop_root()) {
		printf("%s: cannot drop root here: untested\n", run->o->what);
		return 0;
	}
	fd_table_read(&before);
	assert_int_equal(ion_ctx_new(run->root, &ctx), 0);
	snprintf(heaps, sizeof(heaps), "%s/heaps.d", run->root);
	assert_int_equal(ion_ctx_set_heaps_path(ctx, heaps), 0);
	n = ion_ctx_get_heap_count(ctx);
	EXPECT(n >= 1, "%s: discovery got %s", run->o->what, rname(n));
	for (int i = 0; i < n; i++) {
		const struct ion_heap *h;

		assert_int_equal(ion_ctx_get_heap(ctx, (unsigned int)i, &h), 0);
		EXPECT(ion_heap_get_error(h) == 0 || ion_heap_get_reason(h),
		       "%s: heap %s is unavailable without a reason", run->o->what, ion_heap_get_name(h));
		printf("%s: heap %s (%s): %s\n", run->o->what, ion_heap_get_name(h),
		       ion_heap_get_backend(h),
		       ion_heap_get_error(h) ? ion_heap_get_reason(h) : "available");
	}
	r = ion_ctx_find_heap(ctx, "memfd", &memfd);
	EXPECT(r == 0 && ion_heap_get_error(memfd) == 0, "%s: no available memfd heap", run->o->what);
	r = ion_ctx_alloc(ctx, "memfd", page, 0, &fd);
	EXPECT(r == 0, "%s: memfd: got %s", run->o->what, rname(r));
	if (r == 0)
		close(fd);
	r = ion_ctx_alloc_mask(ctx, ION_HEAP_SYSTEM_MASK, page, 0, &fd, &served);
	EXPECT(r == 0, "%s: ION_HEAP_SYSTEM_MASK: got %s", run->o->what, rname(r));
	if (r == 0)
		close(fd);
	r = ion_ctx_get_device_count(ctx);
	EXPECT(r >= 0, "%s: device count: %s", run->o->what, rname(r));
	if (ion_ctx_get_device(ctx, "/dev/video0", &dev) == 0)
		ion_device_unref(dev);
	if (ion_ctx_get_device(ctx, "card0", &dev) == 0)
		ion_device_unref(dev);
	ion_ctx_unref(ctx);
	fd_table_same_soft(&before, run->o->what);
	return sub_status();
}

static void check_odd_sysroots(void)
{
	static const struct odd_root roots[] = {
		{ "symlink loops everywhere", make_loops, false },
		{ "directories where files belong", make_dirs_for_files, false },
		{ "files where directories belong", make_files_for_dirs, false },
		{ "unreadable files, as nobody", make_unreadable, true },
		{ "garbage in every file", make_garbage, false },
		{ "an empty sysroot", make_missing, false },
	};
	struct ion_ctx *ctx = SENTINEL_CTX;

	for (size_t i = 0; i < sizeof(roots) / sizeof(roots[0]); i++) {
		struct odd_run run = { &roots[i], NULL };
		struct root r;
		char what[128];

		root_make(&r);
		roots[i].make(&r);
		run.root = r.path;
		snprintf(what, sizeof(what), "sysroot with %s", roots[i].what);
		sub_watch(what, 10, odd_root_case, &run);
		root_remove(&r);
	}
	/* Sysroots that are no directory. */
	const char *const odd[] = { "/nonexistent-libion-root", "/dev/null", "/proc/self/fd/0" };
	for (size_t i = 0; i < sizeof(odd) / sizeof(odd[0]); i++) {
		int n;

		assert_int_equal(ion_ctx_new(odd[i], &ctx), 0);
		n = ion_ctx_get_heap_count(ctx);
		EXPECT(n >= 1, "sysroot %s: discovery got %s", odd[i], rname(n));
		ion_ctx_unref(ctx);
	}
	ctx = SENTINEL_CTX;
	EXPECT_RET(ion_ctx_new("relative/root", &ctx), -EINVAL);
	EXPECT_RET(ion_ctx_new("", &ctx), -EINVAL);
	EXPECT(ctx == SENTINEL_CTX, "a refused ion_ctx_new wrote its context");
}

/* ------------------------------------------------------------------ */
/* Every public call, with the fd table full or malloc failing          */
/* ------------------------------------------------------------------ */

#define BUF_LEN ((size_t)64 << 10)

/* What the calls work on (made unfaulted), and their out-parameters. */
struct base {
	struct ion_ctx *ctx;
	int client;
	ion_user_handle_t handle;
	int buf_fd;
	struct ion_alloc_config *config;
	struct ion_solution *solution;
	const char *heap;	/* the heap of ion_ctx_alloc */
	struct heap_snap ref;	/* discovery, unfaulted */
	int ref_compat;

	/* made by pre(), released by post() */
	int tmp_client;
	struct ion_ctx *tmp_ctx;
	ion_user_handle_t tmp_handle;
	struct ion_solution *tmp_solution;
	struct ion_alloc_config *tmp_config;

	int out_fd;
	ion_user_handle_t out_handle;
	unsigned char *out_ptr;
	size_t out_size;
	const struct ion_heap *out_heap;
	int out_count;
	struct ion_ctx *out_ctx;
	struct ion_solution *out_solution;
	struct ion_device *out_device;
	struct ion_alloc_config *out_config;
	unsigned char out_heaps[sizeof(struct ion_heap_data) * 4];
};

struct call {
	const char *name;
	void (*pre)(struct base *b);		/* unfaulted, before each run */
	int (*run)(struct base *b);		/* the call, faulted */
	void (*release)(struct base *b, int r);	/* checks and undoes a success */
	void (*cleanup)(struct base *b);	/* after a failure */
	void (*post)(struct base *b);		/* unfaulted, after each run */
	/* Reaches discovery's allocations through another door: where
	 * everything is slow (TCG), every 7th failure point of it will do. */
	bool repeats_discovery;
};

static void preset(struct base *b)
{
	b->out_fd = SENTINEL_FD;
	b->out_handle = SENTINEL_HANDLE;
	b->out_ptr = SENTINEL_PTR;
	b->out_size = SENTINEL_SIZE;
	b->out_heap = SENTINEL_HEAP;
	b->out_count = SENTINEL_COUNT;
	b->out_ctx = SENTINEL_CTX;
	b->out_solution = SENTINEL_SOLUTION;
	b->out_device = SENTINEL_DEVICE;
	b->out_config = SENTINEL_CONFIG;
	memset(b->out_heaps, 0xa5, sizeof(b->out_heaps));
}

/* The out-parameters a failed call wrote, or "". */
static const char *written(const struct base *b)
{
	static char what[160];
	bool heaps = false;

	for (size_t i = 0; i < sizeof(b->out_heaps); i++)
		heaps |= b->out_heaps[i] != 0xa5;
	snprintf(what, sizeof(what), "%s%s%s%s%s%s%s%s%s%s%s",
		 b->out_fd != SENTINEL_FD ? " fd" : "",
		 b->out_handle != SENTINEL_HANDLE ? " handle" : "",
		 b->out_ptr != SENTINEL_PTR ? " ptr" : "",
		 b->out_size != SENTINEL_SIZE ? " size" : "",
		 b->out_heap != SENTINEL_HEAP ? " heap" : "",
		 b->out_count != SENTINEL_COUNT ? " count" : "",
		 b->out_ctx != SENTINEL_CTX ? " ctx" : "",
		 b->out_solution != SENTINEL_SOLUTION ? " solution" : "",
		 b->out_device != SENTINEL_DEVICE ? " device" : "",
		 b->out_config != SENTINEL_CONFIG ? " config" : "",
		 heaps ? " heap data" : "");
	return what;
}

static void check_buf(const char *what, int fd, size_t len)
{
	size_t size = 0;

	EXPECT(fd >= 0 && fd_is_cloexec(fd), "%s: fd %d is no close-on-exec fd", what, fd);
	EXPECT(ion_fd_get_size(fd, &size) == 0 && size == len, "%s: a buffer of %zu bytes, asked %zu",
	       what, size, len);
}

static void release_fd(struct base *b, int r)
{
	(void)r;
	check_buf("the buffer", b->out_fd, BUF_LEN);
	close(b->out_fd);
}

static void release_fd_heap(struct base *b, int r)
{
	EXPECT(b->out_heap && b->out_heap != SENTINEL_HEAP, "no heap reported");
	release_fd(b, r);
}

static void release_handle(struct base *b, int r)
{
	(void)r;
	EXPECT(b->out_handle > 0, "handle %d", b->out_handle);
	EXPECT_RET(ion_free(b->client, b->out_handle), 0);
}

static void release_nothing(struct base *b, int r)
{
	(void)b;
	(void)r;
}

/* ---- calls that need no state: discovery and clients ---- */

static int run_ctx_new(struct base *b)
{
	return ion_ctx_new(NULL, &b->out_ctx);
}

static void release_ctx_new(struct base *b, int r)
{
	(void)r;
	EXPECT(b->out_ctx && b->out_ctx != SENTINEL_CTX, "no context");
	ion_ctx_unref(b->out_ctx);
}

static void pre_ctx(struct base *b)
{
	assert_int_equal(ion_ctx_new(NULL, &b->tmp_ctx), 0);
}

static void post_ctx(struct base *b)
{
	b->tmp_ctx = ion_ctx_unref(b->tmp_ctx);
}

static int run_discovery(struct base *b)
{
	int r = ion_ctx_get_heap_count(b->tmp_ctx);

	if (r >= 0)
		b->out_count = r;
	return r;
}

/* What discovery found is what it finds unfaulted. */
static void release_discovery(struct base *b, int r)
{
	struct heap_snap now;
	const char *diff;

	(void)r;
	snap_take(b->tmp_ctx, &now);
	diff = snap_diff(&now, &b->ref);
	EXPECT(!diff, "discovery succeeded with a different answer: %s", diff);
}

/* A failed discovery runs again, and then finds everything. */
static void cleanup_discovery(struct base *b)
{
	struct heap_snap now;
	const char *diff;

	snap_take(b->tmp_ctx, &now);
	diff = snap_diff(&now, &b->ref);
	EXPECT(!diff, "discovery again, unfaulted, after the failure: %s", diff);
}

static void pre_client(struct base *b)
{
	b->tmp_client = ion_open();
	assert_true(b->tmp_client >= 0);
}

static void post_client(struct base *b)
{
	if (b->tmp_client >= 0)
		ion_close(b->tmp_client);
	b->tmp_client = -1;
}

static int run_compat_discovery(struct base *b)
{
	return ion_query_heap_cnt(b->tmp_client, &b->out_count);
}

static void release_compat_discovery(struct base *b, int r)
{
	(void)r;
	EXPECT(b->out_count == b->ref_compat, "the compat layer counts %d heaps, %d unfaulted",
	       b->out_count, b->ref_compat);
}

static void cleanup_compat_discovery(struct base *b)
{
	int cnt = -1, r = ion_query_heap_cnt(b->tmp_client, &cnt);

	EXPECT(r == 0 && cnt == b->ref_compat,
	       "the compat query again after the failure: %s, %d heaps, %d unfaulted", rname(r), cnt,
	       b->ref_compat);
}

static int run_ion_open(struct base *b)
{
	int fd = ion_open();

	if (fd < 0)
		return fd;
	b->out_fd = fd;
	return 0;
}

static void release_client(struct base *b, int r)
{
	(void)r;
	EXPECT(b->out_fd >= 0 && fd_is_cloexec(b->out_fd), "client fd %d", b->out_fd);
	EXPECT_RET(ion_close(b->out_fd), 0);
}

static int run_ion_close(struct base *b)
{
	int r = ion_close(b->tmp_client);

	if (r == 0)
		b->tmp_client = -1;
	return r;
}

/* A first allocation through a client of a fresh shared context. */
static int run_compat_first_alloc(struct base *b)
{
	return ion_alloc_fd(b->tmp_client, BUF_LEN, 0, ION_HEAP_SYSTEM_MASK, ION_FLAG_CACHED,
			    &b->out_fd);
}

static void cleanup_compat_first_alloc(struct base *b)
{
	int fd, r = ion_alloc_fd(b->tmp_client, BUF_LEN, 0, ION_HEAP_SYSTEM_MASK, ION_FLAG_CACHED, &fd);

	EXPECT(r == 0, "ion_alloc_fd again after the failure: %s (the failure stuck)", rname(r));
	if (r == 0)
		close(fd);
}

static const struct call fresh_calls[] = {
	{ "ion_ctx_new", NULL, run_ctx_new, release_ctx_new, NULL, NULL, false },
	{ "discovery (ion_ctx_get_heap_count)", pre_ctx, run_discovery, release_discovery,
	  cleanup_discovery, post_ctx, false },
	{ "ion_open", NULL, run_ion_open, release_client, NULL, NULL, false },
	{ "ion_close", pre_client, run_ion_close, release_nothing, NULL, post_client, false },
	{ "compat discovery (ion_query_heap_cnt)", pre_client, run_compat_discovery,
	  release_compat_discovery, cleanup_compat_discovery, post_client, true },
	{ "compat first ion_alloc_fd", pre_client, run_compat_first_alloc, release_fd,
	  cleanup_compat_first_alloc, post_client, true },
};

/* ---- calls on a client, a context, a buffer ---- */

static int run_alloc(struct base *b)
{
	return ion_alloc(b->client, BUF_LEN, 0, ION_HEAP_SYSTEM_MASK, ION_FLAG_CACHED, &b->out_handle);
}

static int run_alloc_fd(struct base *b)
{
	return ion_alloc_fd(b->client, BUF_LEN, 0, ION_HEAP_SYSTEM_MASK, ION_FLAG_CACHED, &b->out_fd);
}

static int run_share(struct base *b)
{
	return ion_share(b->client, b->handle, &b->out_fd);
}

static int run_map(struct base *b)
{
	return ion_map(b->client, b->handle, BUF_LEN, PROT_READ | PROT_WRITE, MAP_SHARED, 0,
		       &b->out_ptr, &b->out_fd);
}

static void release_map(struct base *b, int r)
{
	(void)r;
	EXPECT(b->out_ptr && b->out_ptr != SENTINEL_PTR, "no mapping");
	b->out_ptr[BUF_LEN - 1] = 0x5a;
	munmap(b->out_ptr, BUF_LEN);
	release_fd(b, r);
}

static int run_import(struct base *b)
{
	return ion_import(b->client, b->buf_fd, &b->out_handle);
}

static void pre_handle(struct base *b)
{
	assert_int_equal(ion_alloc(b->client, page, 0, ION_HEAP_SYSTEM_MASK, 0, &b->tmp_handle), 0);
}

static void post_handle(struct base *b)
{
	if (b->tmp_handle > 0)
		ion_free(b->client, b->tmp_handle);
	b->tmp_handle = 0;
}

static int run_free(struct base *b)
{
	int r = ion_free(b->client, b->tmp_handle);

	if (r == 0)
		b->tmp_handle = 0;
	return r;
}

static int run_sync_fd(struct base *b)
{
	return ion_sync_fd(b->client, b->buf_fd);
}

static int run_query_cnt(struct base *b)
{
	return ion_query_heap_cnt(b->client, &b->out_count);
}

static void release_count(struct base *b, int r)
{
	(void)r;
	EXPECT(b->out_count == b->ref_compat, "%d heaps, %d unfaulted", b->out_count, b->ref_compat);
}

static int run_query_heaps(struct base *b)
{
	return ion_query_get_heaps(b->client, 1, b->out_heaps);
}

static int run_is_legacy(struct base *b)
{
	return ion_is_legacy(b->client);
}

static int run_ctx_alloc(struct base *b)
{
	return ion_ctx_alloc(b->ctx, b->heap, BUF_LEN, ION_FLAG_CACHED, &b->out_fd);
}

static int run_ctx_alloc_mask(struct base *b)
{
	return ion_ctx_alloc_mask(b->ctx, ION_HEAP_SYSTEM_MASK, BUF_LEN, ION_FLAG_CACHED, &b->out_fd,
				  &b->out_heap);
}

static int run_ctx_allocate(struct base *b)
{
	return ion_ctx_allocate(b->ctx, b->config, &b->out_fd, &b->out_heap);
}

static int run_solve(struct base *b)
{
	return ion_ctx_solve(b->ctx, b->config, &b->out_solution);
}

static void release_solve(struct base *b, int r)
{
	(void)r;
	EXPECT(b->out_solution && b->out_solution != SENTINEL_SOLUTION, "no solution");
	EXPECT(ion_solution_get_heap_count(b->out_solution) ==
	       ion_solution_get_heap_count(b->solution), "the solution has %d heaps, %d unfaulted",
	       ion_solution_get_heap_count(b->out_solution), ion_solution_get_heap_count(b->solution));
	ion_solution_unref(b->out_solution);
}

static void pre_solution(struct base *b)
{
	assert_int_equal(ion_ctx_solve(b->ctx, b->config, &b->tmp_solution), 0);
}

static void post_solution(struct base *b)
{
	b->tmp_solution = ion_solution_unref(b->tmp_solution);
}

/* The rejections are worded on first use: that can fail, and then works. */
static int run_rejections(struct base *b)
{
	const struct ion_heap *h;
	const struct ion_device *d;
	const char *reason;
	int n = ion_solution_get_rejection_count(b->tmp_solution), r;

	if (n <= 0)
		return n;
	r = ion_solution_get_rejection(b->tmp_solution, 0, &h, &d, &reason);
	return r < 0 ? r : n;
}

static void cleanup_rejections(struct base *b)
{
	int want = ion_solution_get_rejection_count(b->solution);

	EXPECT_RET(ion_solution_get_rejection_count(b->tmp_solution), want);
}

static int run_solution_alloc(struct base *b)
{
	return ion_solution_alloc(b->solution, &b->out_fd, &b->out_heap);
}

static int run_config_new(struct base *b)
{
	return ion_alloc_config_new(&b->out_config);
}

static void release_config(struct base *b, int r)
{
	(void)r;
	EXPECT(b->out_config && b->out_config != SENTINEL_CONFIG, "no config");
	ion_alloc_config_free(b->out_config);
}

static void pre_config(struct base *b)
{
	assert_int_equal(ion_alloc_config_new(&b->tmp_config), 0);
}

static void post_config(struct base *b)
{
	b->tmp_config = ion_alloc_config_free(b->tmp_config);
}

static int run_config_set_heap(struct base *b)
{
	return ion_alloc_config_set_heap(b->tmp_config, "memfd");
}

static int run_sync(struct base *b)
{
	int r = ion_sync(b->buf_fd, ION_SYNC_START | ION_SYNC_RW);

	if (r == 0)
		ion_sync(b->buf_fd, ION_SYNC_END | ION_SYNC_RW);
	return r;
}

static int run_get_size(struct base *b)
{
	return ion_fd_get_size(b->buf_fd, &b->out_size);
}

static void release_size(struct base *b, int r)
{
	(void)r;
	EXPECT(b->out_size == BUF_LEN, "size %zu", b->out_size);
}

static int run_set_name(struct base *b)
{
	return ion_fd_set_name(b->buf_fd, "hostile");
}

static int run_sync_for_device(struct base *b)
{
	return ion_ctx_sync_for_device(b->ctx, b->buf_fd);
}

static int run_get_device(struct base *b)
{
	return ion_ctx_get_device(b->ctx, "/dev/null", &b->out_device);
}

static void release_device(struct base *b, int r)
{
	(void)r;
	/* ion_ctx_get_device_at() of a machine without devices is 0 too. */
	if (b->out_device != SENTINEL_DEVICE)
		ion_device_unref(b->out_device);
}

static int run_device_at(struct base *b)
{
	int n = ion_ctx_get_device_count(b->ctx);

	if (n <= 0)
		return n;
	return ion_ctx_get_device_at(b->ctx, 0, &b->out_device);
}

static const struct call base_calls[] = {
	{ "ion_alloc", NULL, run_alloc, release_handle, NULL, NULL, false },
	{ "ion_alloc_fd", NULL, run_alloc_fd, release_fd, NULL, NULL, false },
	{ "ion_share", NULL, run_share, release_fd, NULL, NULL, false },
	{ "ion_map", NULL, run_map, release_map, NULL, NULL, false },
	{ "ion_import", NULL, run_import, release_handle, NULL, NULL, false },
	{ "ion_free", pre_handle, run_free, release_nothing, NULL, post_handle, false },
	{ "ion_sync_fd", NULL, run_sync_fd, release_nothing, NULL, NULL, false },
	{ "ion_query_heap_cnt", NULL, run_query_cnt, release_count, NULL, NULL, false },
	{ "ion_query_get_heaps", NULL, run_query_heaps, release_nothing, NULL, NULL, false },
	{ "ion_is_legacy", NULL, run_is_legacy, release_nothing, NULL, NULL, false },
	{ "ion_ctx_alloc_mask", NULL, run_ctx_alloc_mask, release_fd_heap, NULL, NULL, false },
	{ "ion_ctx_allocate", NULL, run_ctx_allocate, release_fd_heap, NULL, NULL, false },
	{ "ion_ctx_solve", NULL, run_solve, release_solve, NULL, NULL, false },
	{ "ion_solution_get_rejection", pre_solution, run_rejections, release_nothing,
	  cleanup_rejections, post_solution, false },
	{ "ion_solution_alloc", NULL, run_solution_alloc, release_fd_heap, NULL, NULL, false },
	{ "ion_alloc_config_new", NULL, run_config_new, release_config, NULL, NULL, false },
	{ "ion_alloc_config_set_heap", pre_config, run_config_set_heap, release_nothing, NULL,
	  post_config, false },
	{ "ion_sync", NULL, run_sync, release_nothing, NULL, NULL, false },
	{ "ion_fd_get_size", NULL, run_get_size, release_size, NULL, NULL, false },
	{ "ion_fd_set_name", NULL, run_set_name, release_nothing, NULL, NULL, false },
	{ "ion_ctx_sync_for_device", NULL, run_sync_for_device, release_nothing, NULL, NULL, false },
	{ "ion_ctx_get_device", NULL, run_get_device, release_device, NULL, NULL, false },
	{ "ion_ctx_get_device_at", NULL, run_device_at, release_device, NULL, NULL, false },
};

static const struct call call_ctx_alloc = {
	"ion_ctx_alloc", NULL, run_ctx_alloc, release_fd, NULL, NULL, false,
};

static void base_make(struct base *b)
{
	memset(b, 0, sizeof(*b));
	b->tmp_client = -1;
	assert_true(snap_fresh(NULL, NULL, &b->ref) > 0);
	b->client = ion_open();
	assert_true(b->client >= 0);
	assert_int_equal(ion_query_heap_cnt(b->client, &b->ref_compat), 0);
	assert_int_equal(ion_ctx_new(NULL, &b->ctx), 0);
	assert_true(ion_ctx_get_heap_count(b->ctx) > 0);
	assert_int_equal(ion_alloc(b->client, BUF_LEN, 0, ION_HEAP_SYSTEM_MASK, ION_FLAG_CACHED,
				   &b->handle), 0);
	assert_int_equal(ion_share(b->client, b->handle, &b->buf_fd), 0);
	assert_int_equal(ion_alloc_config_new(&b->config), 0);
	assert_int_equal(ion_alloc_config_set_size(b->config, BUF_LEN), 0);
	assert_int_equal(ion_alloc_config_set_heap_mask(b->config, ION_HEAP_SYSTEM_MASK), 0);
	assert_int_equal(ion_alloc_config_set_flags(b->config, ION_FLAG_CACHED), 0);
	assert_int_equal(ion_ctx_solve(b->ctx, b->config, &b->solution), 0);
}

static void base_free(struct base *b)
{
	ion_solution_unref(b->solution);
	ion_alloc_config_free(b->config);
	close(b->buf_fd);
	ion_free(b->client, b->handle);
	ion_ctx_unref(b->ctx);
	ion_close(b->client);
}

enum fault_mode { FAULT_FDS, FAULT_MALLOC };

/*
 * Runs c unfaulted for its answer, then with 0, 1, 2, ... fds to spare (or
 * with allocation 1, 2, ... failing) until it gives that answer again.
 * Each other answer must be a clean -EMFILE (-ENOMEM), with the
 * out-parameters untouched and the fd table as before.  Returns the number
 * of failure points.
 */
/* One failure point: n fds to spare, or allocation n failing. */
static void exercise_point(const struct call *c, struct base *b, enum fault_mode mode,
			   unsigned int n, int want, bool *ret_fired, int *ret_r)
{
	struct fd_table before;
	struct filler f;
	bool fired;
	int r;

	if (mode == FAULT_FDS)
		snprintf(soft_context, sizeof(soft_context), "%s, %u fds to spare", c->name, n);
	else
		snprintf(soft_context, sizeof(soft_context), "%s, allocation %u failing", c->name, n);
	fd_table_read(&before);
	if (c->pre)
		c->pre(b);
	preset(b);
	if (mode == FAULT_FDS) {
		fill_fds(&f, (int)n);
		r = c->run(b);
		unfill_fds(&f);
		fired = r != want;
	} else {
		mfault_arm(n);
		r = c->run(b);
		fired = mfault_disarm();
		if (!fired && r != want)
			soft_fail(__FILE__, __LINE__, "no allocation failed, yet %s (unfaulted: %s)",
				  rname(r), rname(want));
	}
	if (r == want) {
		if (r >= 0)
			c->release(b, r);
	} else if (r >= 0) {
		soft_fail(__FILE__, __LINE__, "succeeded (%s), unfaulted it answers %s", rname(r),
			  rname(want));
		if (c->cleanup)
			c->cleanup(b);
	} else {
		const char *w = written(b);

		if (mode == FAULT_FDS)
			EXPECT(r == -EMFILE || r == -ENFILE, "got %s, expected -EMFILE", rname(r));
		else
			EXPECT(r == -ENOMEM, "got %s, expected -ENOMEM", rname(r));
		EXPECT(!w[0], "failed with %s but wrote its out-parameter(s):%s", rname(r), w);
		if (c->cleanup)
			c->cleanup(b);
	}
	if (c->post)
		c->post(b);
	fd_table_same_soft(&before, soft_context);
	*ret_fired = fired;
	*ret_r = r;
}

struct point {
	const struct call *c;
	struct base *b;
	unsigned int n;
	int want;
	struct {
		bool fired;
		int r;
	} *shared;
};

/* A crash under a failed allocation: where, as far as the dynamic
 * symbols tell (libion.so+0x... offsets for addr2line), then the crash. */
static void print_crash(int sig)
{
	void *frames[32];
	int n = backtrace(frames, 32);

	backtrace_symbols_fd(frames, n, STDERR_FILENO);
	signal(sig, SIG_DFL);
	raise(sig);
}

static int point_child(void *arg)
{
	struct point *p = arg;
	void *frame;
	bool fired;
	int r;

	/* backtrace() loads libgcc_s on first use: not under the fault. */
	backtrace(&frame, 1);
	signal(SIGSEGV, print_crash);
	signal(SIGBUS, print_crash);

	exercise_point(p->c, p->b, FAULT_MALLOC, p->n, p->want, &fired, &r);
	p->shared->fired = fired;
	p->shared->r = r;
	return sub_status();
}

/*
 * Runs c unfaulted for its answer, then with 0, 1, 2, ... fds to spare (or
 * with allocation 1, 2, ... failing) until it gives that answer again.
 * Each other answer must be a clean -EMFILE (-ENOMEM), with the
 * out-parameters untouched and the fd table as before.  An allocation
 * failure runs in a grandchild of its own, so that a crash names its
 * point and the next points still run.  Returns the number of failure
 * points.
 */
static unsigned int exercise(const struct call *c, struct base *b, enum fault_mode mode)
{
	struct fd_table before;
	unsigned int points = 0;
	int want;
	struct point p = { c, b, 0, 0, NULL };

	snprintf(soft_context, sizeof(soft_context), "%s, unfaulted", c->name);
	fd_table_read(&before);
	if (c->pre)
		c->pre(b);
	preset(b);
	want = c->run(b);
	if (want >= 0)
		c->release(b, want);
	if (c->post)
		c->post(b);
	fd_table_same_soft(&before, c->name);
	p.want = want;
	if (mode == FAULT_MALLOC) {
		p.shared = mmap(NULL, sizeof(*p.shared), PROT_READ | PROT_WRITE,
				MAP_SHARED | MAP_ANONYMOUS, -1, 0);
		assert_true(p.shared != MAP_FAILED);
	}
	unsigned int step = mode == FAULT_MALLOC && c->repeats_discovery && watch_slowdown() > 1 ? 7 : 1;

	if (step > 1)
		printf("%s: every %uth allocation failure only (slow machine; discovery's are all tried)\n",
		       c->name, step);
	for (unsigned int n = mode == FAULT_FDS ? 0 : 1;; n += step) {
		bool fired;
		int r;

		if (n > (mode == FAULT_FDS ? 64U : 20000U)) {
			soft_fail(__FILE__, __LINE__, "%s: still failing at point %u", c->name, n);
			break;
		}
		if (mode == FAULT_FDS) {
			exercise_point(c, b, mode, n, want, &fired, &r);
		} else {
			char what[160];

			snprintf(what, sizeof(what), "%s, allocation %u failing", c->name, n);
			p.n = n;
			/* A crash fired, surely: go on with the next point. */
			p.shared->fired = true;
			p.shared->r = want - 1;
			soft_context[0] = '\0';
			sub_watch(what, 20, point_child, &p);
			fired = p.shared->fired;
			r = p.shared->r;
		}
		if (!fired)
			break;
		points++;
		if (mode == FAULT_FDS && r == want)
			break;
	}
	if (p.shared)
		munmap(p.shared, sizeof(*p.shared));
	soft_context[0] = '\0';
	return points;
}

static void exercise_all(enum fault_mode mode)
{
	struct base b;
	char **heaps;

	memset(&b, 0, sizeof(b));
	b.tmp_client = -1;
	assert_true(snap_fresh(NULL, NULL, &b.ref) > 0);
	{
		int client = ion_open();

		assert_int_equal(ion_query_heap_cnt(client, &b.ref_compat), 0);
		ion_close(client);
	}
	/* Before any client or context exists: fresh discoveries. */
	for (size_t i = 0; i < sizeof(fresh_calls) / sizeof(fresh_calls[0]); i++) {
		unsigned int points = exercise(&fresh_calls[i], &b, mode);

		printf("%s: %u failure points\n", fresh_calls[i].name, points);
	}
	base_make(&b);
	for (size_t i = 0; i < sizeof(base_calls) / sizeof(base_calls[0]); i++) {
		unsigned int points = exercise(&base_calls[i], &b, mode);

		printf("%s: %u failure points\n", base_calls[i].name, points);
	}
	heaps = test_heap_names();
	for (char **n = heaps; *n; n++) {
		unsigned int points;

		b.heap = *n;
		points = exercise(&call_ctx_alloc, &b, mode);
		printf("ion_ctx_alloc(%s): %u failure points\n", *n, points);
	}
	test_heap_names_free(heaps);
	base_free(&b);
	fflush(stdout);
}

static void check_fd_exhaustion(void)
{
	fd_limit_lower();
	exercise_all(FAULT_FDS);
}

static void check_malloc_failure(void)
{
	if (!HAVE_MALLOC_SHIM || watch_under_valgrind()) {
		printf("malloc failure: skipped: %s replaces malloc, which this check interposes\n",
		       HAVE_MALLOC_SHIM ? "valgrind" : "the sanitizer");
		skip();
	}
	exercise_all(FAULT_MALLOC);
}

/* ---- signals every 100 us ---- */

static volatile sig_atomic_t alarms;

static void on_alarm(int sig)
{
	(void)sig;
	alarms++;
}

/* Only EINTR and EAGAIN are what an interrupted call may answer. */
static bool interrupted(int r, int *eintr)
{
	if (r == -EINTR || r == -EAGAIN) {
		(*eintr)++;
		return true;
	}
	return false;
}

static void check_signals(void)
{
	struct ion_heap_data ref_heaps[ION_NUM_HEAP_IDS], heaps[ION_NUM_HEAP_IDS];
	struct sigaction sa = { .sa_handler = on_alarm }; /* no SA_RESTART */
	struct itimerval every = { { 0, 100 }, { 0, 100 } }, off = { { 0, 0 }, { 0, 0 } };
	struct heap_snap ref, now;
	struct ion_ctx *ctx;
	sigset_t alrm;
	char **names = test_heap_names();
	int client, ref_cnt, rounds = 0, eintr = 0, bad = 0;
	long long end;
	char why[256] = "";

	assert_true(snap_fresh(NULL, NULL, &ref) > 0);
	client = ion_open();
	ref_cnt = compat_heaps(client, ref_heaps);
	assert_int_equal(ion_ctx_new(NULL, &ctx), 0);
	assert_true(ion_ctx_get_heap_count(ctx) > 0);
	sigemptyset(&alrm);
	sigaddset(&alrm, SIGALRM);
	assert_int_equal(sigaction(SIGALRM, &sa, NULL), 0);
	assert_int_equal(setitimer(ITIMER_REAL, &every, NULL), 0);
	/* Nothing is printed while the timer runs: stdio would lose it. */
#define BAD(...)                                                               \
	do {                                                                   \
		if (!bad++)                                                    \
			snprintf(why, sizeof(why), __VA_ARGS__);               \
	} while (0)
	end = now_us() + 2000000;
	while (now_us() < end && bad < 10) {
		ion_user_handle_t h, h2;
		unsigned char *p;
		int fd, map_fd, share, cnt, r;
		size_t size;

		rounds++;
		for (char **n = names; *n; n++) {
			r = ion_ctx_alloc(ctx, *n, BUF_LEN, ION_FLAG_CACHED, &fd);
			if (r < 0) {
				if (!interrupted(r, &eintr))
					BAD("ion_ctx_alloc(%s): %s", *n, rname(r));
				continue;
			}
			size = 0;
			r = ion_fd_get_size(fd, &size);
			if (!interrupted(r, &eintr) && (r < 0 || size != BUF_LEN))
				BAD("ion_fd_get_size(%s): %s, %zu bytes", *n, rname(r), size);
			if (!roundtrip(fd, BUF_LEN, rounds, why, sizeof(why)))
				bad++;
			r = ion_sync(fd, ION_SYNC_START | ION_SYNC_RW);
			if (r < 0 && !interrupted(r, &eintr))
				BAD("ion_sync(%s): %s", *n, rname(r));
			if (r == 0)
				ion_sync(fd, ION_SYNC_END | ION_SYNC_RW);
			close(fd);
		}
		r = ion_alloc(client, BUF_LEN, 0, ION_HEAP_SYSTEM_MASK, ION_FLAG_CACHED, &h);
		if (r < 0) {
			if (!interrupted(r, &eintr))
				BAD("ion_alloc: %s", rname(r));
		} else {
			r = ion_map(client, h, BUF_LEN, PROT_READ | PROT_WRITE, MAP_SHARED, 0, &p, &map_fd);
			if (r == 0) {
				memset(p, rounds & 0xff, BUF_LEN);
				r = ion_sync_fd(client, map_fd);
				if (r < 0 && !interrupted(r, &eintr))
					BAD("ion_sync_fd: %s", rname(r));
				munmap(p, BUF_LEN);
				close(map_fd);
			} else if (!interrupted(r, &eintr)) {
				BAD("ion_map: %s", rname(r));
			}
			r = ion_share(client, h, &share);
			if (r == 0) {
				r = ion_import(client, share, &h2);
				if (r == 0) {
					r = ion_map(client, h2, BUF_LEN, PROT_READ, MAP_SHARED, 0, &p, &map_fd);
					if (r == 0) {
						if (p[BUF_LEN - 1] != (rounds & 0xff))
							BAD("an imported handle reads %#x, wrote %#x",
							    p[BUF_LEN - 1], rounds & 0xff);
						munmap(p, BUF_LEN);
						close(map_fd);
					}
					ion_free(client, h2);
				}
				if (r < 0 && !interrupted(r, &eintr))
					BAD("ion_import/ion_map of a share: %s", rname(r));
				close(share);
			} else if (!interrupted(r, &eintr)) {
				BAD("ion_share: %s", rname(r));
			}
			if (ion_free(client, h) < 0)
				BAD("ion_free failed");
		}
		cnt = compat_heaps(client, heaps);
		if (cnt != ref_cnt || memcmp(heaps, ref_heaps, sizeof(heaps[0]) * (size_t)cnt))
			BAD("the compat query answered %d heaps, %d without signals (or other data)",
			    cnt, ref_cnt);
		if (rounds % 8 == 1) {
			const char *diff;

			r = snap_fresh(NULL, NULL, &now);
			if (r < 0) {
				if (!interrupted(r, &eintr))
					BAD("a fresh discovery: %s", rname(r));
			} else if ((diff = snap_diff(&now, &ref))) {
				BAD("a fresh discovery under signals: %s", diff);
			}
			int c = ion_open();
			if (c < 0 && !interrupted(c, &eintr))
				BAD("ion_open: %s", rname(c));
			if (c >= 0 && ion_close(c) < 0)
				BAD("ion_close failed");
		}
	}
#undef BAD
	setitimer(ITIMER_REAL, &off, NULL);
	printf("signals: %d rounds, %d SIGALRMs, %d calls answered EINTR/EAGAIN\n", rounds,
	       (int)alarms, eintr);
	EXPECT(bad == 0, "%d wrong results under signals; the first: %s", bad, why);
	EXPECT(alarms > rounds, "only %d signals arrived in %d rounds", (int)alarms, rounds);
	ion_ctx_unref(ctx);
	ion_close(client);
	test_heap_names_free(names);
}

/* ---- 64 threads on one client ---- */

struct worker {
	int client;
	int id;
	int rounds;
	pthread_barrier_t *start;
	int failures;
	char first[256];
};

#define WORKER_FAIL(w, ...)                                                    \
	do {                                                                   \
		if (!(w)->failures++)                                          \
			snprintf((w)->first, sizeof((w)->first), __VA_ARGS__); \
	} while (0)

static void *worker(void *data)
{
	struct worker *w = data;
	size_t len = page * (size_t)(1 + w->id % 4);

	pthread_barrier_wait(w->start);
	for (int i = 0; i < w->rounds; i++) {
		ion_user_handle_t h, h2;
		unsigned char *p, *q;
		int map_fd, map2, share, fd, cnt, r;

		r = ion_alloc(w->client, len, 0, ION_HEAP_SYSTEM_MASK, ION_FLAG_CACHED, &h);
		if (r < 0) {
			WORKER_FAIL(w, "ion_alloc: %s", rname(r));
			continue;
		}
		r = ion_map(w->client, h, len, PROT_READ | PROT_WRITE, MAP_SHARED, 0, &p, &map_fd);
		if (r < 0) {
			WORKER_FAIL(w, "ion_map: %s", rname(r));
			ion_free(w->client, h);
			continue;
		}
		memset(p, w->id, len);
		if ((r = ion_sync_fd(w->client, map_fd)) < 0)
			WORKER_FAIL(w, "ion_sync_fd: %s", rname(r));
		if ((r = ion_share(w->client, h, &share)) < 0) {
			WORKER_FAIL(w, "ion_share: %s", rname(r));
		} else {
			if ((r = ion_import(w->client, share, &h2)) < 0) {
				WORKER_FAIL(w, "ion_import: %s", rname(r));
			} else {
				if (h2 == h)
					WORKER_FAIL(w, "ion_import gave handle %d, the live one it shares", h2);
				r = ion_map(w->client, h2, len, PROT_READ, MAP_SHARED, 0, &q, &map2);
				if (r == 0) {
					/* Another thread's handle would show another id. */
					for (size_t k = 0; k < len; k += 256)
						if (q[k] != w->id) {
							WORKER_FAIL(w, "handle %d shows thread %d's data", h2, q[k]);
							break;
						}
					munmap(q, len);
					close(map2);
				} else {
					WORKER_FAIL(w, "ion_map of an import: %s", rname(r));
				}
				if ((r = ion_free(w->client, h2)) < 0)
					WORKER_FAIL(w, "ion_free(import): %s", rname(r));
			}
			close(share);
		}
		munmap(p, len);
		close(map_fd);
		if ((r = ion_free(w->client, h)) < 0)
			WORKER_FAIL(w, "ion_free: %s", rname(r));
		if ((r = ion_alloc_fd(w->client, len, 0, ION_HEAP_SYSTEM_MASK, 0, &fd)) < 0) {
			WORKER_FAIL(w, "ion_alloc_fd: %s", rname(r));
		} else {
			size_t size = 0;

			if (ion_fd_get_size(fd, &size) < 0 || size != len)
				WORKER_FAIL(w, "ion_alloc_fd: a buffer of %zu bytes, asked %zu", size, len);
			close(fd);
		}
		if ((r = ion_query_heap_cnt(w->client, &cnt)) < 0)
			WORKER_FAIL(w, "ion_query_heap_cnt: %s", rname(r));
	}
	return NULL;
}

static void check_64_threads_one_client(void)
{
	enum { N = 64 };
	static struct worker workers[N];
	pthread_t threads[N];
	pthread_barrier_t start;
	int client = ion_open();

	assert_true(client >= 0);
	pthread_barrier_init(&start, NULL, N);
	for (int i = 0; i < N; i++) {
		workers[i] = (struct worker){ client, i + 1, iters(16, 3), &start, 0, "" };
		assert_int_equal(pthread_create(&threads[i], NULL, worker, &workers[i]), 0);
	}
	for (int i = 0; i < N; i++) {
		pthread_join(threads[i], NULL);
		EXPECT(workers[i].failures == 0, "thread %d: %d failures; the first: %s", i + 1,
		       workers[i].failures, workers[i].first);
	}
	pthread_barrier_destroy(&start);
	EXPECT_RET(ion_close(client), 0);
}

/* ---- ion_close racing ion_alloc on the same client ---- */

struct racer {
	int client;
	atomic_int *ops;
	atomic_int *closed;
	int failures;
	char first[256];
};

/* Before the close a call succeeds; after it, it is -EBADF, or -ENOTTY
 * once the number holds another file. */
static bool race_ok(int r)
{
	return r == 0 || r == -EBADF || r == -ENOTTY || r == -EINVAL;
}

static void *racer(void *data)
{
	struct racer *x = data;
	int after = 0;

	while (after < 20) {
		ion_user_handle_t h;
		unsigned char *p;
		int fd, map_fd, r;

		if (atomic_load(x->closed))
			after++;
		r = ion_alloc(x->client, page, 0, ION_HEAP_SYSTEM_MASK, 0, &h);
		atomic_fetch_add(x->ops, 1);
		if (r == 0 || r == -EBADF || r == -ENOTTY) {
			if (r < 0)
				continue;
		} else {
			WORKER_FAIL(x, "ion_alloc: %s", rname(r));
			continue;
		}
		/* A handle the close may take away at any moment: -EINVAL then. */
		r = ion_map(x->client, h, page, PROT_READ | PROT_WRITE, MAP_SHARED, 0, &p, &map_fd);
		if (r == 0) {
			p[0] = 1;
			munmap(p, page);
			close(map_fd);
		} else if (!race_ok(r)) {
			WORKER_FAIL(x, "ion_map: %s", rname(r));
		}
		r = ion_share(x->client, h, &fd);
		if (r == 0)
			close(fd);
		else if (!race_ok(r))
			WORKER_FAIL(x, "ion_share: %s", rname(r));
		r = ion_free(x->client, h);
		if (!race_ok(r))
			WORKER_FAIL(x, "ion_free: %s", rname(r));
		r = ion_alloc_fd(x->client, page, 0, ION_HEAP_SYSTEM_MASK, 0, &fd);
		if (r == 0)
			close(fd);
		else if (!race_ok(r))
			WORKER_FAIL(x, "ion_alloc_fd: %s", rname(r));
	}
	return NULL;
}

static void check_close_races_alloc(void)
{
	enum { T = 4 };
	int rounds = iters(200, 20);
	int keep = ion_open(), cnt;

	/* The shared context lives on, so that its fds are no leak. */
	ion_query_heap_cnt(keep, &cnt);
	for (int round = 0; round < rounds; round++) {
		struct racer racers[T];
		pthread_t threads[T];
		atomic_int ops = 0, closed = 0;
		struct fd_table before;
		int client, r;

		fd_table_read(&before);
		client = ion_open();
		assert_true(client >= 0);
		for (int i = 0; i < T; i++) {
			racers[i] = (struct racer){ client, &ops, &closed, 0, "" };
			assert_int_equal(pthread_create(&threads[i], NULL, racer, &racers[i]), 0);
		}
		while (atomic_load(&ops) < 2 + round % 16)
			sched_yield();
		r = ion_close(client);
		atomic_store(&closed, 1);
		EXPECT(r == 0, "round %d: ion_close while others allocate: %s", round, rname(r));
		for (int i = 0; i < T; i++) {
			pthread_join(threads[i], NULL);
			EXPECT(racers[i].failures == 0, "round %d, thread %d: %d failures; the first: %s",
			       round, i, racers[i].failures, racers[i].first);
		}
		/* Every buffer went with the client, or with the caller's close. */
		if (!fd_table_same_soft(&before, "after ion_close raced ion_alloc"))
			break;
	}
	ion_close(keep);
}

/* ---- 19: more heap nodes than the fd table holds ---- */

#define MANY_HEAP_NODES 1000

static int fds_open(void)
{
	struct fd_table t;

	fd_table_read(&t);
	return t.n;
}

/*
 * Issue 20, 7: a sysroot with 1,000 dma_heap nodes under an fd limit of
 * 256.  Discovery lists them all and keeps only a few open; memfd still
 * allocates; a heap whose node is not kept open is opened for the call
 * (the ioctl reaches the node: /dev/null answers ENOTTY) and closed, and a
 * node replaced by another device is refused with ENODEV.
 */
static void spec19_many_heap_nodes(void)
{
	const struct ion_heap *served = NULL;
	struct fd_table before;
	struct ion_ctx *ctx;
	char path[PATH_MAX], name[32];
	struct root r;
	int n, fd = SENTINEL_FD, base, held, ret;

	if (geteuid() != 0)
		skip(); /* mknod */
	fd_limit_lower();
	root_make(&r);
	root_sysfs_chr(&r, 1, 3, "dma_heap", "heap0000");
	for (int i = 0; i < MANY_HEAP_NODES; i++) {
		snprintf(name, sizeof(name), "dev/dma_heap/heap%04d", i);
		root_node(&r, name, N_CHR_NULL, NULL);
	}
	fd_table_read(&before);
	base = before.n;
	assert_int_equal(ion_ctx_new(r.path, &ctx), 0);
	n = ion_ctx_get_heap_count(ctx);
	held = fds_open() - base;
	EXPECT(n > MANY_HEAP_NODES,
	       "spec-19: %d heap nodes under RLIMIT_NOFILE %d: discovery got %s, expected %d heaps and memfd",
	       MANY_HEAP_NODES, FD_LIMIT, rname(n), MANY_HEAP_NODES);
	EXPECT(held <= 16, "spec-19: the context holds %d fds after discovering %d heap nodes",
	       held, MANY_HEAP_NODES);

	ret = ion_ctx_alloc_mask(ctx, ION_HEAP_SYSTEM_MASK, page, ION_FLAG_CACHED, &fd, &served);
	EXPECT(ret == 0 && served && strcmp(ion_heap_get_name(served), "memfd") == 0,
	       "spec-19: ION_HEAP_SYSTEM_MASK beside %d heap nodes got %s from %s, expected memfd",
	       MANY_HEAP_NODES, rname(ret), served ? ion_heap_get_name(served) : "no heap");
	if (ret == 0)
		close(fd);

	/* The last node is not held: it is opened for the call. */
	fd = SENTINEL_FD;
	ret = ion_ctx_alloc(ctx, "heap0999", page, 0, &fd);
	EXPECT(ret == -ENOTTY && fd == SENTINEL_FD,
	       "spec-19: allocation from a node not kept open got %s, expected -ENOTTY from the node",
	       rname(ret));
	EXPECT(fds_open() - base == held, "spec-19: allocating from a node not kept open left %d fds",
	       fds_open() - base - held);

	/* Another device at its path since discovery: not the heap. */
	root_join(&r, "dev/dma_heap/heap0999", path, sizeof(path));
	assert_int_equal(unlink(path), 0);
	assert_int_equal(mknod(path, S_IFCHR | 0666, makedev(1, 5)), 0);
	ret = ion_ctx_alloc(ctx, "heap0999", page, 0, &fd);
	EXPECT(ret == -ENODEV && fd == SENTINEL_FD,
	       "spec-19: a node replaced by /dev/zero's device got %s, expected -ENODEV", rname(ret));

	ion_ctx_unref(ctx);
	fd_table_same_soft(&before, "spec-19: after the context with many heap nodes");
	root_remove(&r);
}

/* ------------------------------------------------------------------ */
/* The watched runner                                                  */
/* ------------------------------------------------------------------ */

struct check {
	const char *name;
	void (*fn)(void);
	unsigned int timeout_s;	/* natively; scaled by watch_slowdown() */
};

static const struct check checks[] = {
	{ "spec-01 query with a NULL buffer", spec01_query_null_buffer, 20 },
	{ "spec-02 query into a bad buffer", spec02_query_bad_pointer, 60 },
	{ "spec-03 heap types keep the id convention", spec03_types_and_ids, 20 },
	{ "spec-04 ion_is_using_modular_heaps", spec04_modular_heaps, 20 },
	{ "spec-05 a length no heap can give", spec05_largest_length, 120 },
	{ "spec-06 GEM buffers at an offset", spec06_gem_offset, 20 },
	{ "spec-07 ion_map64", spec07_map64, 20 },
	{ "spec-08 EMFILE at the first call", spec08_first_call_emfile, 20 },
	{ "spec-08 discovery under EMFILE", spec08_discovery_emfile, 60 },
	{ "spec-09 cancellation inside discovery", spec09_cancel_in_discovery, 60 },
	{ "spec-10 fork with threads inside", spec10_fork_with_threads_inside, 120 },
	{ "spec-11 odd files at device nodes", spec11_odd_device_nodes, 300 },
	{ "spec-12 /dev/udmabuf must be udmabuf", spec12_udmabuf_must_be_udmabuf, 30 },
	{ "spec-13 memfds sealed with F_SEAL_SEAL", spec13_memfd_sealed, 20 },
	{ "spec-14 RLIMIT_FSIZE", spec14_rlimit_fsize, 30 },
	{ "spec-15 tmpfs files are no memfds", spec15_tmpfs_is_not_memfd, 30 },
	{ "spec-16 a stale client's number reused", spec16_stale_client, 20 },
	{ "spec-17 ion_fd_get_size on non-buffers", spec17_get_size, 20 },
	{ "spec-18 import requires the seal", spec18_import_needs_seal, 20 },
	{ "spec-19 more heap nodes than fds", spec19_many_heap_nodes, 60 },
	{ "bad fds", check_bad_fds, 20 },
	{ "bad handles", check_bad_handles, 20 },
	{ "bad lengths", check_bad_lengths, 20 },
	{ "bad masks and flags", check_bad_masks_and_flags, 20 },
	{ "odd sysroots", check_odd_sysroots, 90 },
	{ "fd exhaustion at every call", check_fd_exhaustion, 120 },
	{ "signals every 100 us", check_signals, 30 },
	{ "64 threads on one client", check_64_threads_one_client, 60 },
	{ "ion_close racing ion_alloc", check_close_races_alloc, 60 },
	{ "malloc failure at every allocation", check_malloc_failure, 300 },
};

/* A crash must kill the child, for the parent to name the signal. */
static void default_crash_signals(void)
{
	static const int sigs[] = { SIGSEGV, SIGBUS, SIGILL, SIGFPE, SIGSYS, SIGABRT };

	for (size_t i = 0; i < sizeof(sigs) / sizeof(sigs[0]); i++)
		signal(sigs[i], SIG_DFL);
}

/* In the child: the check, then the fd table and its soft failures. */
static void child_test(void **state)
{
	const struct check *c = *state;
	struct fd_table before;

	default_crash_signals();
	page = (size_t)sysconf(_SC_PAGESIZE);
	soft_failures = 0;
	fd_table_read(&before);
	c->fn();
	soft_context[0] = '\0';
	fd_table_same_soft(&before, c->name);
	if (soft_failures) {
		print_error("%s: %d expectation(s) failed (above)\n", c->name, soft_failures);
		fail();
	}
}

/*
 * LeakSanitizer's check, where the build has it.  The watched child ends
 * with _exit() (exit() would run LSan's atexit check in every forked
 * grandchild too, where it cannot stop the world), so the check child asks
 * for it itself.
 */
int __lsan_do_recoverable_leak_check(void) __attribute__((weak));

static int run_check_child(void *arg)
{
	const struct check *c = arg;
	const struct CMUnitTest test[] = {
		{ c->name, child_test, NULL, NULL, (void *)c },
	};
	int failed = _cmocka_run_group_tests(c->name, test, 1, NULL, NULL);

	if (__lsan_do_recoverable_leak_check && __lsan_do_recoverable_leak_check()) {
		fprintf(stderr, "%s: LeakSanitizer found leaks (above)\n", c->name);
		failed = 1;
	}
	return failed ? 1 : 0;
}

/* In the parent: the check in a watched child. */
static void watched(void **state)
{
	const struct check *c = *state;
	unsigned int timeout = c->timeout_s * watch_slowdown();
	long long t0 = now_us();
	int r = watch_run(c->name, timeout * 1000, run_check_child, (void *)c);

	/* The VM runner gives the whole program 200 s: say where they go. */
	printf("hostile: %s took %.1f s\n", c->name, (double)(now_us() - t0) / 1e6);
	if (r < 0)
		fail_msg("%s: failed in its watched child (above)", c->name);
}

static bool selected(const char *name)
{
	const char *only = getenv("LIBION_HOSTILE_ONLY");
	char *copy, *save = NULL;
	bool found = false;

	if (!only || !*only)
		return true;
	copy = strdup(only);
	for (char *t = strtok_r(copy, ",", &save); t && !found; t = strtok_r(NULL, ",", &save))
		found = strstr(name, t) != NULL;
	free(copy);
	return found;
}

int main(void)
{
	struct CMUnitTest tests[sizeof(checks) / sizeof(checks[0])];
	size_t n = 0;

	/* The parent never calls the library: each child starts fresh. */
	for (size_t i = 0; i < sizeof(checks) / sizeof(checks[0]); i++)
		if (selected(checks[i].name))
			tests[n++] = (struct CMUnitTest){ checks[i].name, watched, NULL, NULL,
							  (void *)&checks[i] };
	printf("hostile: %zu checks, timeouts x%u%s%s%s\n", n, watch_slowdown(),
	       watch_under_sanitizer() ? " (sanitizer)" : "",
	       watch_under_valgrind() ? " (valgrind)" : "",
	       __lsan_do_recoverable_leak_check ? ", LeakSanitizer after each check" : "");
	return _cmocka_run_group_tests("hostile", tests, n, NULL, NULL) ? 1 : 0;
}
