// SPDX-License-Identifier: MIT
/*
 * Pools (<ion/libion.h>, "Pools"), on every available heap: hits and
 * misses, size classes, a buffer never handed out again while a child, a
 * mapping or a device holds it, buffers simply closed, zeroing, limits,
 * expiry and trims, background refill, fork, many threads, bad input, and
 * a heaps.d Pool hint serving the context's and Android's allocations.
 * Runs on the host (memfd) and in the VM on real kernels (dma-buf heaps).
 *
 * Every test checks that the fd table after it, with its context gone, is
 * the one before the context was made.  Each expected value follows from
 * the header: the comments quote the line they check.
 */
#include <errno.h>
#include <fcntl.h>
#include <dirent.h>
#include <limits.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <syslog.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include <BufferAllocator/BufferAllocatorWrapper.h>

#ifdef TEST_HAVE_LIBDRM
#include <xf86drm.h>
#endif

#include "fdpass.h"
#include "testlib.h"

#define KiB(n) ((size_t)(n) << 10)
#define MiB(n) ((size_t)(n) << 20)

struct state {
	const char *heap;
	const char *backend;
	unsigned int props;
	/* A dma-buf: the kernel counts its references (fdinfo "count"). */
	bool counted;
	/* ION_POOL_VOUCH where put needs it to recycle (memfd), else 0. */
	unsigned int vouch;
	/* The larger class used: 8 MiB, 2 MiB on a contiguous heap. */
	size_t big;
	struct ion_ctx *ctx;
	struct ion_solution *sol;
	struct ion_pool *pool;
	struct fd_table fds;	/* before the context */
};

static const char *current_heap;

/* ---- helpers ---- */

static struct ion_solution *solve(struct ion_ctx *ctx, const char *heap)
{
	struct ion_alloc_config *config;
	struct ion_solution *sol = NULL;

	assert_int_equal(ion_alloc_config_new(&config), 0);
	assert_int_equal(ion_alloc_config_set_size(config, 4096), 0);
	assert_int_equal(ion_alloc_config_set_heap(config, heap), 0);
	assert_int_equal(ion_ctx_solve(ctx, config, &sol), 0);
	ion_alloc_config_free(config);
	assert_true(ion_solution_get_heap_count(sol) >= 1);
	return sol;
}

static int refs_of(int fd);

/*
 * Whether the kernel's count of a buffer's references sees a mapping: the
 * header's "checks once per heap that the kernel counts a mapping too";
 * where it does not (5.10's vgem), the heap's buffers are uncounted, as a
 * memfd's.  Found out here on the test's own buffer, not asked of the pool.
 */
static bool mappings_counted(struct ion_ctx *ctx, const char *heap)
{
	int fd = -1, before, after;
	void *p;

	assert_int_equal(ion_ctx_alloc(ctx, heap, 4096, 0, &fd), 0);
	before = refs_of(fd);
	p = mmap(NULL, 4096, PROT_READ, MAP_SHARED, fd, 0);
	assert_true(p != MAP_FAILED);
	after = refs_of(fd);
	munmap(p, 4096);
	close(fd);
	if (before > 0 && after != before + 1)
		print_message("%s: the kernel's count misses a mapping (%d, then %d): uncounted\n",
			      heap, before, after);
	return before > 0 && after == before + 1;
}

static int setup(void **pstate)
{
	struct state *s = calloc(1, sizeof(*s));
	const struct ion_heap *h;

	assert_non_null(s);
	s->heap = current_heap;
	/* Before the context: its end must give back every fd it took. */
	fd_table_read(&s->fds);
	assert_int_equal(ion_ctx_new(NULL, &s->ctx), 0);
	assert_int_equal(ion_ctx_find_heap(s->ctx, s->heap, &h), 0);
	assert_int_equal(ion_heap_get_error(h), 0);
	s->props = ion_heap_get_properties(h);
	s->backend = ion_heap_get_backend(h);
	s->counted = strcmp(s->backend, "memfd") != 0 && mappings_counted(s->ctx, s->heap);
	s->vouch = s->counted ? 0 : ION_POOL_VOUCH;
	s->big = (s->props & ION_HEAP_PROP_CONTIGUOUS) ? MiB(2) : MiB(8);
	s->sol = solve(s->ctx, s->heap);
	assert_int_equal(ion_pool_new(s->sol, &s->pool), 0);
	*pstate = s;
	return 0;
}

static int teardown(void **pstate)
{
	struct state *s = *pstate;
	struct fd_table fds = s->fds;

	ion_pool_unref(s->pool);
	ion_solution_unref(s->sol);
	ion_ctx_unref(s->ctx);
	free(s);
	/* Last: a failure here must not leak the state. */
	fd_table_assert_same(&fds);
	return 0;
}

static uint64_t now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

static void sleep_ms(unsigned int ms)
{
	struct timespec ts = { ms / 1000, (long)(ms % 1000) * 1000000 };

	while (nanosleep(&ts, &ts) < 0 && errno == EINTR)
		;
}

static unsigned long long stat_of(const struct ion_pool *pool, enum ion_pool_stat st)
{
	return ion_pool_get_stat(pool, st);
}

/* Polls a statistic for up to ms; true once it equals want. */
static bool stat_reaches(const struct ion_pool *pool, enum ion_pool_stat st,
			 unsigned long long want, unsigned int ms)
{
	uint64_t end = now_ms() + ms;

	for (;;) {
		if (stat_of(pool, st) == want)
			return true;
		if (now_ms() > end)
			return false;
		sleep_ms(10);
	}
}

struct buf_id {
	dev_t dev;
	ino_t ino;
};

static struct buf_id id_of(int fd)
{
	struct stat st;

	assert_int_equal(fstat(fd, &st), 0);
	return (struct buf_id){ st.st_dev, st.st_ino };
}

static bool same_buf(struct buf_id a, struct buf_id b)
{
	return a.dev == b.dev && a.ino == b.ino;
}

static bool id_in(struct buf_id id, const struct buf_id *ids, int n)
{
	for (int i = 0; i < n; i++)
		if (same_buf(id, ids[i]))
			return true;
	return false;
}

/* The kernel's count of references to a dma-buf's file (fdinfo), less
 * none: dma-buf's fdinfo already leaves out procfs's own; -1 if absent. */
static int refs_of(int fd)
{
	char path[48], line[128];
	FILE *f;
	int n = -1;

	snprintf(path, sizeof(path), "/proc/self/fdinfo/%d", fd);
	f = fopen(path, "re");
	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, "count: %d", &n) == 1)
			break;
	fclose(f);
	return n;
}

/*
 * What an fd of the process refers to, by path (/proc/self/fd/N): the
 * library's thread opens and closes fds of its own meanwhile, and an
 * fstat() of those would be a data race on the fd (as TSan says).
 */
static int stat_fd(int fd, struct stat *st)
{
	char path[40];

	snprintf(path, sizeof(path), "/proc/self/fd/%d", fd);
	return stat(path, st);
}

/*
 * Calls fn for every fd of this process (not the directory's own); no
 * cmocka assertion, so a forked child may use it.
 */
static void each_fd(void (*fn)(int fd, void *data), void *data)
{
	DIR *dir = opendir("/proc/self/fd");
	struct dirent *de;

	if (!dir)
		return;
	while ((de = readdir(dir)))
		if (de->d_name[0] != '.' && atoi(de->d_name) != dirfd(dir))
			fn(atoi(de->d_name), data);
	closedir(dir);
}

struct fd_ids;
static bool fd_id_in(const struct fd_ids *t, int fd, struct buf_id id);

struct fd_match {
	const struct buf_id *ids;
	int n_ids;
	dev_t dev;		/* with n_ids 0: any file of this device ... */
	const struct fd_ids *old; /* ... but these (there before), or NULL */
	int except;		/* an fd left out, or -1 */
	int count;
	int fds[64];
};

static void match_fd(int fd, void *data)
{
	struct fd_match *m = data;
	struct stat st;
	struct buf_id id;

	if (fd == m->except || stat_fd(fd, &st) < 0)
		return;
	id = (struct buf_id){ st.st_dev, st.st_ino };
	if (m->n_ids ? id_in(id, m->ids, m->n_ids)
		     : st.st_dev == m->dev && !fd_id_in(m->old, fd, id)) {
		if (m->count < 64)
			m->fds[m->count] = fd;
		m->count++;
	}
}

/* The process's fds and what they refer to, without cmocka assertions. */
struct fd_ids {
	int n;
	int fds[FD_TABLE_MAX];
	struct buf_id ids[FD_TABLE_MAX];
};

static void add_fd_id(int fd, void *data)
{
	struct fd_ids *t = data;
	struct stat st;

	if (t->n < FD_TABLE_MAX && stat_fd(fd, &st) == 0) {
		t->fds[t->n] = fd;
		t->ids[t->n++] = (struct buf_id){ st.st_dev, st.st_ino };
	}
}

static bool fd_id_in(const struct fd_ids *t, int fd, struct buf_id id)
{
	for (int i = 0; t && i < t->n; i++)
		if (t->fds[i] == fd && same_buf(t->ids[i], id))
			return true;
	return false;
}

/* How many fds of the process refer to these buffers. */
static int fds_of(const struct buf_id *ids, int n)
{
	struct fd_match m = { .ids = ids, .n_ids = n, .except = -1 };

	each_fd(match_fd, &m);
	return m.count;
}

/* The buffers behind the fds opened since before (the pool's own). */
static int new_buffers(const struct fd_table *before, struct buf_id *ids, int max)
{
	struct fd_table now;
	int n = 0;

	fd_table_read(&now);
	for (int i = 0; i < now.n; i++) {
		bool old = false;

		for (int j = 0; j < before->n && !old; j++)
			old = before->fds[j] == now.fds[i];
		struct stat st;

		if (!old && n < max && stat_fd(now.fds[i], &st) == 0) {
			struct buf_id id = { st.st_dev, st.st_ino };

			if (!id_in(id, ids, n))
				ids[n++] = id;
		}
	}
	return n;
}

static unsigned char *map(int fd, size_t len)
{
	void *p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);

	assert_true(p != MAP_FAILED);
	return p;
}

static void fill(int fd, size_t len, unsigned char byte)
{
	unsigned char *p = map(fd, len);

	assert_int_equal(ion_sync(fd, ION_SYNC_START | ION_SYNC_WRITE), 0);
	memset(p, byte, len);
	assert_int_equal(ion_sync(fd, ION_SYNC_END | ION_SYNC_WRITE), 0);
	munmap(p, len);
}

/* Whether every byte is byte; no cmocka assertion (children use it). */
static bool all_are(int fd, size_t len, unsigned char byte)
{
	unsigned char *p = mmap(NULL, len, PROT_READ, MAP_SHARED, fd, 0);
	bool ok = true;

	if (p == MAP_FAILED)
		return false;
	ion_sync(fd, ION_SYNC_START | ION_SYNC_READ);
	for (size_t i = 0; i < len && ok; i++)
		ok = p[i] == byte;
	ion_sync(fd, ION_SYNC_END | ION_SYNC_READ);
	munmap(p, len);
	return ok;
}

static size_t size_of(int fd)
{
	size_t size = 0;

	assert_int_equal(ion_fd_get_size(fd, &size), 0);
	return size;
}

static int get_from(struct ion_pool *pool, size_t len)
{
	int fd = -1;
	int r = ion_pool_get(pool, len, &fd);

	if (r != 0)
		print_error("ion_pool_get(%zu): %s\n", len, strerror(-r));
	assert_int_equal(r, 0);
	assert_true(fd >= 0);
	/* Header, ion_pool_get: "The fd is the caller's (read-write,
	 * close-on-exec)". */
	assert_true(fd_is_cloexec(fd));
	assert_int_equal(fcntl(fd, F_GETFL) & O_ACCMODE, O_RDWR);
	return fd;
}

static int get(struct state *s, size_t len)
{
	return get_from(s->pool, len);
}

static void put(struct state *s, int fd)
{
	assert_int_equal(ion_pool_put(s->pool, fd, s->vouch), 0);
}

static void wait_ok(pid_t pid)
{
	int status;

	assert_int_equal(waitpid(pid, &status, 0), pid);
	if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
		print_error("child: %s %d\n", WIFEXITED(status) ? "exit" : "signal",
			    WIFEXITED(status) ? WEXITSTATUS(status) : WTERMSIG(status));
	assert_true(WIFEXITED(status));
	assert_int_equal(WEXITSTATUS(status), 0);
}

static void skip_unless_counted(const struct state *s)
{
	/* Header: "For a dma-buf the kernel says so (the "count" of
	 * /proc/self/fdinfo ...)"; a memfd is never taken back unvouched. */
	if (!s->counted)
		skip();
}

/* ---- hits, misses and size classes ---- */

static void test_hits_and_misses(void **pstate)
{
	struct state *s = *pstate;
	struct fd_table before;
	struct buf_id pooled[8], seen[6];
	char hints[32];
	int fd[6], n;

	snprintf(hints, sizeof(hints), "4x1M 2x%zuM", s->big >> 20);
	assert_int_equal(ion_pool_set_hints(s->pool, hints), 0);
	fd_table_read(&before);
	/* "ion_pool_prefill() allocates up to them now" */
	assert_int_equal(ion_pool_prefill(s->pool), 0);
	assert_int_equal(stat_of(s->pool, ION_POOL_STAT_REFILLS), 6);
	assert_int_equal(stat_of(s->pool, ION_POOL_STAT_HITS), 0);
	assert_int_equal(stat_of(s->pool, ION_POOL_STAT_MISSES), 0);
	assert_int_equal(stat_of(s->pool, ION_POOL_STAT_BUFFERS_OUT), 0);
	assert_int_equal(stat_of(s->pool, ION_POOL_STAT_BYTES_HELD), MiB(4) + 2 * s->big);
	assert_int_equal(stat_of(s->pool, ION_POOL_STAT_HIGH_WATER), MiB(4) + 2 * s->big);
	/* The pool's own fds of its buffers: what hits may hand out. */
	n = new_buffers(&before, pooled, 8);
	assert_int_equal(n, 6);

	/* "a hit is one fcntl(F_DUPFD_CLOEXEC)": no allocation, a pooled buffer. */
	for (int i = 0; i < 4; i++) {
		fd[i] = get(s, MiB(1));
		seen[i] = id_of(fd[i]);
		assert_true(id_in(seen[i], pooled, n));
		assert_false(id_in(seen[i], seen, i));
		assert_int_equal(size_of(fd[i]), MiB(1));
		assert_int_equal(stat_of(s->pool, ION_POOL_STAT_HITS), i + 1);
		assert_int_equal(stat_of(s->pool, ION_POOL_STAT_MISSES), 0);
		assert_int_equal(stat_of(s->pool, ION_POOL_STAT_REFILLS), 6);
	}
	assert_int_equal(stat_of(s->pool, ION_POOL_STAT_BUFFERS_OUT), 4);
	assert_int_equal(stat_of(s->pool, ION_POOL_STAT_BYTES_HELD), 2 * s->big);
	/* The class is empty: "else a new one of the solution" (a miss). */
	fd[4] = get(s, MiB(1));
	seen[4] = id_of(fd[4]);
	assert_false(id_in(seen[4], pooled, n));
	assert_int_equal(stat_of(s->pool, ION_POOL_STAT_MISSES), 1);
	assert_int_equal(stat_of(s->pool, ION_POOL_STAT_HITS), 4);
	/* The other class still hits. */
	fd[5] = get(s, s->big);
	seen[5] = id_of(fd[5]);
	assert_true(id_in(seen[5], pooled, n));
	assert_int_equal(size_of(fd[5]), s->big);
	assert_int_equal(stat_of(s->pool, ION_POOL_STAT_HITS), 5);
	assert_int_equal(stat_of(s->pool, ION_POOL_STAT_BUFFERS_OUT), 6);
	assert_int_equal(stat_of(s->pool, ION_POOL_STAT_BYTES_HELD), s->big);

	for (int i = 0; i < 6; i++)
		put(s, fd[i]);
	assert_int_equal(stat_of(s->pool, ION_POOL_STAT_BUFFERS_OUT), 0);
	assert_int_equal(stat_of(s->pool, ION_POOL_STAT_BYTES_HELD), MiB(5) + 2 * s->big);
	/* "the most bytes held at once" */
	assert_int_equal(stat_of(s->pool, ION_POOL_STAT_HIGH_WATER), MiB(5) + 2 * s->big);
}

/*
 * "a request is rounded up to 4 KiB below 512 KiB, to 64 KiB below 8 MiB,
 * and to 1 MiB above ... ion_fd_get_size() tells the buffer's real size."
 */
static const struct {
	size_t len, class;
} classes[] = {
	{ 1, KiB(4) },
	{ KiB(4), KiB(4) },
	{ KiB(4) + 1, KiB(8) },
	{ KiB(100) + 1, KiB(104) },
	{ KiB(512) - 1, KiB(512) },
	{ KiB(512), KiB(512) },
	{ KiB(512) + 1, KiB(576) },
	{ KiB(960), KiB(960) },
	{ KiB(960) + 1, MiB(1) },
	{ MiB(1), MiB(1) },
	{ MiB(1) + 1, MiB(1) + KiB(64) },
	{ MiB(2) - 1, MiB(2) },
	{ MiB(2) + 1, MiB(2) + KiB(64) },
	{ MiB(8) - 1, MiB(8) },
	{ MiB(8), MiB(8) },
	{ MiB(8) + 1, MiB(9) },
};

static void test_size_classes(void **pstate)
{
	struct state *s = *pstate;

	for (size_t i = 0; i < sizeof(classes) / sizeof(classes[0]); i++) {
		size_t len = classes[i].len, class = classes[i].class;
		unsigned long long hits;
		struct buf_id id;
		int fd;

		if (class > s->big + KiB(64))
			continue; /* a contiguous heap's large buffers: not this test's */
		fd = get(s, len);
		assert_int_equal(size_of(fd), class);
		/* "at most 4 KiB - 1 larger than asked below 512 KiB, and less
		 * than 12.5 % larger above" */
		if (len < KiB(512))
			assert_true(class - len <= KiB(4) - 1);
		else
			assert_true((class - len) * 8 < len);
		id = id_of(fd);
		put(s, fd);
		/* "a pooled buffer serves exactly its class": the class's own
		 * size is the same class, and gets the same buffer. */
		hits = stat_of(s->pool, ION_POOL_STAT_HITS);
		fd = get(s, class);
		assert_true(same_buf(id_of(fd), id));
		assert_int_equal(stat_of(s->pool, ION_POOL_STAT_HITS), hits + 1);
		put(s, fd);
	}
}

/* "a pooled buffer serves exactly its class": never a neighbour's. */
static void test_classes_do_not_serve_each_other(void **pstate)
{
	struct state *s = *pstate;
	unsigned long long misses;
	int fd;

	assert_int_equal(ion_pool_set_hints(s->pool, "1x1M"), 0);
	assert_int_equal(ion_pool_prefill(s->pool), 0);
	const size_t others[] = { KiB(4), KiB(960), MiB(1) + 1, MiB(2) };
	for (size_t i = 0; i < sizeof(others) / sizeof(others[0]); i++) {
		misses = stat_of(s->pool, ION_POOL_STAT_MISSES);
		fd = get(s, others[i]);
		assert_int_equal(stat_of(s->pool, ION_POOL_STAT_MISSES), misses + 1);
		assert_int_equal(stat_of(s->pool, ION_POOL_STAT_HITS), 0);
		assert_int_not_equal(size_of(fd), MiB(1));
		put(s, fd);
	}
	/* One byte over 960 KiB is the 1 MiB class: the prefilled buffer. */
	fd = get(s, KiB(960) + 1);
	assert_int_equal(stat_of(s->pool, ION_POOL_STAT_HITS), 1);
	assert_int_equal(size_of(fd), MiB(1));
	put(s, fd);
}

/* ---- never recycled while referenced (dma-buf heaps) ---- */

/*
 * The buffer x was put back while something else holds it: "a buffer
 * returned while still referenced is kept aside".  Two more gets of its
 * class must be other buffers; they are returned in *others (held, so
 * that nothing free is left in the class).
 */
static bool expect_kept_aside(struct state *s, struct buf_id x, size_t len, int others[2])
{
	bool aside = true;

	for (int i = 0; i < 2; i++) {
		others[i] = get(s, len);
		if (same_buf(id_of(others[i]), x))
			aside = false;
	}
	if (!aside) {
		/* The caller cleans up its holder, then fails: nothing leaks
		 * into the next tests. */
		print_error("%s: a buffer still held was handed out again\n", s->heap);
		close(others[0]);
		close(others[1]);
	}
	return aside;
}

/* "... and taken back only once its count says it is free": with nothing
 * else free in the class, the next get is x again, zeroed. */
static void expect_back(struct state *s, struct buf_id x, size_t len,
			unsigned long long reclaims, int others[2])
{
	int fd = get(s, len);

	assert_true(same_buf(id_of(fd), x));
	assert_int_equal(stat_of(s->pool, ION_POOL_STAT_RECLAIMS), reclaims + 1);
	/* "A returned buffer is zeroed (unless turned off)" */
	assert_true(all_are(fd, len, 0));
	put(s, fd);
	put(s, others[0]);
	put(s, others[1]);
}

/* A child that holds the buffer: (a) inherited through fork(). */
static void test_held_by_forked_child(void **pstate)
{
	struct state *s = *pstate;
	const size_t len = MiB(1);
	int fd, go[2], others[2];
	unsigned long long reclaims;
	struct buf_id x;
	bool aside;
	pid_t pid;
	char c = 0;

	skip_unless_counted(s);
	fd = get(s, len);
	x = id_of(fd);
	fill(fd, len, 0x5a);
	assert_int_equal(pipe2(go, O_CLOEXEC), 0);
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		close(go[1]);
		if (read(go[0], &c, 1) != 1)
			_exit(2);
		/* Nobody zeroed it, nobody else got it, while it was held. */
		_exit(all_are(fd, len, 0x5a) ? 0 : 3);
	}
	close(go[0]);
	assert_int_equal(ion_pool_put(s->pool, fd, 0), 0);
	aside = expect_kept_aside(s, x, len, others);
	reclaims = stat_of(s->pool, ION_POOL_STAT_RECLAIMS);
	assert_int_equal(write(go[1], &c, 1), 1);
	close(go[1]);
	wait_ok(pid);
	assert_true(aside);
	expect_back(s, x, len, reclaims, others);
}

static int socket_child(int sock, size_t len)
{
	char c = 1;
	int fd;

	if (fdpass_recv(sock, &fd) < 0)
		return 2;
	if (write(sock, &c, 1) != 1 || read(sock, &c, 1) != 1)
		return 3;
	return all_are(fd, len, 0x6b) ? 0 : 4;
}

/* (a') a child that did not inherit it: passed over a Unix socket. */
static void test_held_by_child_over_socket(void **pstate)
{
	struct state *s = *pstate;
	const size_t len = MiB(1);
	int fd, sv[2], others[2];
	unsigned long long reclaims;
	struct buf_id x;
	bool aside;
	pid_t pid;
	char c;

	skip_unless_counted(s);
	assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv), 0);
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		close(sv[0]);
		_exit(socket_child(sv[1], len));
	}
	close(sv[1]);
	fd = get(s, len);
	x = id_of(fd);
	fill(fd, len, 0x6b);
	assert_int_equal(fdpass_send(sv[0], fd), 0);
	assert_int_equal(read(sv[0], &c, 1), 1); /* the child has it */
	assert_int_equal(ion_pool_put(s->pool, fd, 0), 0);
	aside = expect_kept_aside(s, x, len, others);
	reclaims = stat_of(s->pool, ION_POOL_STAT_RECLAIMS);
	assert_int_equal(write(sv[0], &c, 1), 1);
	wait_ok(pid);
	close(sv[0]);
	assert_true(aside);
	expect_back(s, x, len, reclaims, others);
}

/* (b) a mapping: the fd put is a dup, the mapping outlives both fds. */
static void test_held_by_mapping(void **pstate)
{
	struct state *s = *pstate;
	const size_t len = MiB(1);
	int fd, dup_fd, others[2];
	unsigned long long reclaims;
	unsigned char *p;
	struct buf_id x;
	bool intact = true;

	skip_unless_counted(s);
	fd = get(s, len);
	x = id_of(fd);
	p = map(fd, len);
	assert_int_equal(ion_sync(fd, ION_SYNC_START | ION_SYNC_WRITE), 0);
	memset(p, 0x7c, len);
	assert_int_equal(ion_sync(fd, ION_SYNC_END | ION_SYNC_WRITE), 0);
	dup_fd = fcntl(fd, F_DUPFD_CLOEXEC, 3);
	assert_true(dup_fd >= 0);
	close(fd);
	/* VOUCH is for memfd, "where the kernel cannot tell": on a dma-buf
	 * the kernel's count still says the mapping holds it. */
	assert_int_equal(ion_pool_put(s->pool, dup_fd, ION_POOL_VOUCH), 0);
	if (!expect_kept_aside(s, x, len, others)) {
		munmap(p, len);
		fail_msg("the mapping did not keep the buffer from going out again");
	}
	/* Nobody zeroed it under the mapping. */
	for (size_t i = 0; i < len; i += 4096)
		intact = intact && p[i] == 0x7c;
	intact = intact && p[len - 1] == 0x7c;
	reclaims = stat_of(s->pool, ION_POOL_STAT_RECLAIMS);
	munmap(p, len);
	assert_true(intact);
	expect_back(s, x, len, reclaims, others);
}

#ifdef TEST_HAVE_LIBDRM
/* vgem's node, opened, or -1 (the VM's card0). */
static int open_vgem(void)
{
	for (int i = 0; i < 16; i++) {
		char path[32];
		drmVersionPtr v;
		int fd;

		snprintf(path, sizeof(path), "/dev/dri/card%d", i);
		fd = open(path, O_RDWR | O_CLOEXEC);
		if (fd < 0)
			continue;
		v = drmGetVersion(fd);
		if (v && strcmp(v->name, "vgem") == 0) {
			drmFreeVersion(v);
			return fd;
		}
		drmFreeVersion(v);
		close(fd);
	}
	return -1;
}
#endif

/* (c) a device import: PRIME into vgem. */
static void test_held_by_device_import(void **pstate)
{
#ifdef TEST_HAVE_LIBDRM
	struct state *s = *pstate;
	const size_t len = MiB(1);
	int fd, drm, back, others[2];
	unsigned long long reclaims;
	uint32_t handle;
	struct buf_id x;
	int r;

	skip_unless_counted(s);
	drm = open_vgem();
	if (drm < 0)
		skip();
	fd = get(s, len);
	x = id_of(fd);
	fill(fd, len, 0x1d);
	r = drmPrimeFDToHandle(drm, fd, &handle);
	if (r != 0) {
		print_error("vgem does not import a %s buffer: %s\n", s->heap, strerror(errno));
		close(fd);
		close(drm);
		skip();
	}
	assert_int_equal(ion_pool_put(s->pool, fd, 0), 0);
	if (!expect_kept_aside(s, x, len, others)) {
		drmCloseBufferHandle(drm, handle);
		close(drm);
		fail_msg("the vgem import did not keep the buffer from going out again");
	}
	/* The import is that buffer, intact: re-exported, it is the same file. */
	assert_int_equal(drmPrimeHandleToFD(drm, handle, DRM_CLOEXEC | DRM_RDWR, &back), 0);
	assert_true(same_buf(id_of(back), x));
	assert_true(all_are(back, len, 0x1d));
	close(back);
	reclaims = stat_of(s->pool, ION_POOL_STAT_RECLAIMS);
	assert_int_equal(drmCloseBufferHandle(drm, handle), 0);
	close(drm);
	expect_back(s, x, len, reclaims, others);
#else
	(void)pstate;
	skip();
#endif
}

/* ---- buffers simply closed ---- */

/*
 * ion_pool_get: "give it back with ion_pool_put() or simply close it (a
 * dma-buf then comes back on its own once nothing holds it)"; "For a memfd
 * ... goes back only when the caller vouches for it (ION_POOL_VOUCH), and
 * is dropped otherwise."
 */
static void test_closed_buffer(void **pstate)
{
	struct state *s = *pstate;
	const size_t len = KiB(256);
	int fd = get(s, len);
	struct buf_id x = id_of(fd);

	close(fd);
	fd = get(s, len);
	if (s->counted) {
		assert_true(same_buf(id_of(fd), x));
		assert_int_equal(stat_of(s->pool, ION_POOL_STAT_RECLAIMS), 1);
		assert_int_equal(stat_of(s->pool, ION_POOL_STAT_HITS), 1);
	} else {
		assert_false(same_buf(id_of(fd), x));
		assert_int_equal(stat_of(s->pool, ION_POOL_STAT_RECLAIMS), 0);
		assert_int_equal(stat_of(s->pool, ION_POOL_STAT_MISSES), 2);
	}
	assert_int_equal(ion_pool_put(s->pool, fd, 0), 0);
}

#define HELD 20

/*
 * Buffers simply closed come back though many are held: 20 held (more
 * than a get's reclaim reads counts of, and than the refill thread reads
 * at once), then gets whose buffers are closed.  Were only the first few
 * buffers out ever looked at, every one of these gets would allocate and
 * the closed buffers stay pinned by the pool's anchors: a pool leaking a
 * buffer a frame (a board's pool that Android's callers, who only close,
 * keep many buffers of).
 */
static void test_closed_behind_held(void **pstate)
{
	struct state *s = *pstate;
	unsigned long long hits, misses, out;
	int held[HELD];

	skip_unless_counted(s);
	for (int i = 0; i < HELD; i++)
		held[i] = get(s, KiB(64));
	for (int i = 0; i < 50; i++)
		close(get(s, KiB(64)));
	hits = stat_of(s->pool, ION_POOL_STAT_HITS);
	misses = stat_of(s->pool, ION_POOL_STAT_MISSES) - HELD;
	out = stat_of(s->pool, ION_POOL_STAT_BUFFERS_OUT);
	for (int i = 0; i < HELD; i++)
		close(held[i]);
	print_message("%s: %d held, then 50 closed: %llu hits, %llu misses, %llu out\n",
		      s->heap, HELD, hits, misses, out);
	assert_true(hits > misses);
	assert_true(out <= HELD + misses);
}

/* With background refill on: the thread finds the closed one, each time. */
static void test_closed_behind_held_background(void **pstate)
{
	struct state *s = *pstate;
	bool back = true;
	int held[HELD], round;

	skip_unless_counted(s);
	assert_int_equal(ion_pool_set_hints(s->pool, "2x64K"), 0);
	assert_int_equal(ion_pool_set_background(s->pool, 1), 0);
	assert_true(stat_reaches(s->pool, ION_POOL_STAT_REFILLS, 2, 5000));
	for (int i = 0; i < HELD; i++)
		held[i] = get(s, KiB(64));
	for (round = 0; round < 5 && back; round++) {
		close(get(s, KiB(64)));
		/* "comes back on its own once nothing holds it" */
		back = stat_reaches(s->pool, ION_POOL_STAT_BUFFERS_OUT, HELD, 10000);
	}
	for (int i = 0; i < HELD; i++)
		close(held[i]);
	assert_int_equal(ion_pool_set_background(s->pool, 0), 0);
	if (!back)
		print_error("round %d: a buffer closed behind %d held was not taken back\n",
			    round, HELD);
	assert_true(back);
}

/* A trim releases buffers closed while out: only the pool's own fd held
 * them, so a trim to nothing that kept them would keep their memory. */
static void test_trim_releases_closed(void **pstate)
{
	struct state *s = *pstate;
	struct buf_id id[3];
	int fd[3];

	skip_unless_counted(s);
	for (int i = 0; i < 3; i++) {
		fd[i] = get(s, KiB(64));
		id[i] = id_of(fd[i]);
	}
	close(fd[0]);
	close(fd[1]);
	/* "Releases held buffers until at most keep_bytes remain" */
	assert_int_equal(ion_pool_trim(s->pool, 0), 2);
	assert_int_equal(stat_of(s->pool, ION_POOL_STAT_BYTES_HELD), 0);
	assert_int_equal(stat_of(s->pool, ION_POOL_STAT_BUFFERS_OUT), 1);
	assert_int_equal(fds_of(&id[0], 2), 0);
	/* The one still held stays the pool's: its fd and the anchor. */
	assert_int_equal(fds_of(&id[2], 1), 2);
	put(s, fd[2]);
}

/* memfd: put without VOUCH drops the buffer, put with it recycles it. */
static void test_memfd_needs_vouch(void **pstate)
{
	struct state *s = *pstate;
	const size_t len = KiB(256);
	struct buf_id x;
	int fd;

	if (s->counted)
		skip();
	fd = get(s, len);
	x = id_of(fd);
	assert_int_equal(ion_pool_put(s->pool, fd, 0), 0);
	/* "and is dropped otherwise": not held, no fd of it left. */
	assert_int_equal(stat_of(s->pool, ION_POOL_STAT_BYTES_HELD), 0);
	assert_int_equal(fds_of(&x, 1), 0);
	fd = get(s, len);
	assert_false(same_buf(id_of(fd), x));
	assert_int_equal(stat_of(s->pool, ION_POOL_STAT_HITS), 0);
	x = id_of(fd);
	assert_int_equal(ion_pool_put(s->pool, fd, ION_POOL_VOUCH), 0);
	assert_int_equal(stat_of(s->pool, ION_POOL_STAT_BYTES_HELD), len);
	fd = get(s, len);
	assert_true(same_buf(id_of(fd), x));
	assert_int_equal(stat_of(s->pool, ION_POOL_STAT_HITS), 1);
	assert_int_equal(ion_pool_put(s->pool, fd, ION_POOL_VOUCH), 0);
}

/*
 * memfd: a buffer simply closed was not vouched for, so it is "dropped
 * otherwise": the pool may not keep it (its memory) alive.  Looped, a
 * kept one would grow the process by a buffer and an fd per get.
 */
static void test_memfd_closed_is_released(void **pstate)
{
	struct state *s = *pstate;
	const size_t len = KiB(64);
	struct fd_table before, after;
	struct buf_id x;
	int fd;

	if (s->counted)
		skip();
	fd = get(s, len);
	x = id_of(fd);
	close(fd);
	fd = get(s, len);
	assert_int_equal(ion_pool_put(s->pool, fd, 0), 0);
	if (fds_of(&x, 1) != 0)
		print_error("the pool still holds the closed memfd buffer\n");
	assert_int_equal(fds_of(&x, 1), 0);

	fd_table_read(&before);
	for (int i = 0; i < 64; i++)
		close(get(s, len));
	fd_table_read(&after);
	assert_int_equal(after.n, before.n);
	assert_int_equal(stat_of(s->pool, ION_POOL_STAT_BYTES_HELD), 0);
	/* Nor does the pool keep count of them for ever: what no fd of the
	 * process holds is forgotten (a scan once 64 pile up). */
	for (int i = 0; i < 300; i++)
		close(get(s, len));
	assert_true(stat_of(s->pool, ION_POOL_STAT_BUFFERS_OUT) <= 128);
}

/* ---- zeroing ---- */

static void test_zeroing(void **pstate)
{
	struct state *s = *pstate;
	const size_t len = KiB(64);
	int fd = get(s, len);
	struct buf_id x = id_of(fd);

	fill(fd, len, 0xa5);
	put(s, fd);
	fd = get(s, len);
	assert_true(same_buf(id_of(fd), x));
	/* "A returned buffer is zeroed (unless turned off)" */
	assert_true(all_are(fd, len, 0));

	/* "off for producers that overwrite every byte" */
	assert_int_equal(ion_pool_set_zeroing(s->pool, 0), 0);
	fill(fd, len, 0x3c);
	put(s, fd);
	fd = get(s, len);
	assert_true(same_buf(id_of(fd), x));
	assert_true(all_are(fd, len, 0x3c));

	assert_int_equal(ion_pool_set_zeroing(s->pool, 1), 0);
	put(s, fd);
	fd = get(s, len);
	assert_true(same_buf(id_of(fd), x));
	assert_true(all_are(fd, len, 0));
	put(s, fd);
}

/* ---- limits, expiry, trims ---- */

static void test_max_bytes(void **pstate)
{
	struct state *s = *pstate;
	struct fd_table before, after;
	int fd[4];

	/* "The most bytes the pool holds (not handed out)" */
	assert_int_equal(ion_pool_set_max_bytes(s->pool, MiB(2)), 0);
	assert_int_equal(ion_pool_set_hints(s->pool, "4x1M"), 0);
	fd_table_read(&before);
	assert_int_equal(ion_pool_prefill(s->pool), 0);
	assert_int_equal(stat_of(s->pool, ION_POOL_STAT_REFILLS), 2);
	assert_int_equal(stat_of(s->pool, ION_POOL_STAT_BYTES_HELD), MiB(2));
	for (int i = 0; i < 4; i++)
		fd[i] = get(s, MiB(1));
	assert_int_equal(stat_of(s->pool, ION_POOL_STAT_HITS), 2);
	assert_int_equal(stat_of(s->pool, ION_POOL_STAT_MISSES), 2);
	for (int i = 0; i < 4; i++)
		put(s, fd[i]);
	/* "past it a returned buffer is released"; TRIMS counts "buffers
	 * released by trim, expiry, limits or pressure" */
	assert_int_equal(stat_of(s->pool, ION_POOL_STAT_BYTES_HELD), MiB(2));
	assert_int_equal(stat_of(s->pool, ION_POOL_STAT_HIGH_WATER), MiB(2));
	assert_int_equal(stat_of(s->pool, ION_POOL_STAT_TRIMS), 2);
	fd_table_read(&after);
	assert_int_equal(after.n, before.n + 2); /* the released ones are closed */

	/* Lowered: what the pool holds is at most the new limit at once. */
	assert_int_equal(ion_pool_set_max_bytes(s->pool, MiB(1)), 0);
	assert_int_equal(stat_of(s->pool, ION_POOL_STAT_BYTES_HELD), MiB(1));
	assert_int_equal(stat_of(s->pool, ION_POOL_STAT_TRIMS), 3);

	/* "0: no limit of its own" */
	assert_int_equal(ion_pool_set_max_bytes(s->pool, 0), 0);
	for (int i = 0; i < 3; i++)
		fd[i] = get(s, MiB(1));
	for (int i = 0; i < 3; i++)
		put(s, fd[i]);
	assert_int_equal(stat_of(s->pool, ION_POOL_STAT_BYTES_HELD), MiB(3));
	assert_int_equal(stat_of(s->pool, ION_POOL_STAT_TRIMS), 3);
}

static unsigned long long held_both(struct ion_pool *a, struct ion_pool *b)
{
	return stat_of(a, ION_POOL_STAT_BYTES_HELD) + stat_of(b, ION_POOL_STAT_BYTES_HELD);
}

/* "The most bytes all pools of the context hold together" */
static void test_context_limit(void **pstate)
{
	struct state *s = *pstate;
	struct ion_pool *other;
	unsigned long long trims;
	int fd[3];

	assert_int_equal(ion_pool_new(s->sol, &other), 0);
	assert_int_equal(ion_ctx_set_pool_limit(s->ctx, MiB(6)), 0);
	assert_int_equal(ion_pool_set_hints(s->pool, "4x1M"), 0);
	assert_int_equal(ion_pool_set_hints(other, "4x1M"), 0);
	assert_int_equal(ion_pool_prefill(s->pool), 0);
	assert_int_equal(ion_pool_prefill(other), 0);
	assert_int_equal(stat_of(s->pool, ION_POOL_STAT_BYTES_HELD), MiB(4));
	assert_int_equal(stat_of(other, ION_POOL_STAT_BYTES_HELD), MiB(2));
	assert_int_equal(stat_of(other, ION_POOL_STAT_REFILLS), 2);

	for (int i = 0; i < 3; i++)
		fd[i] = get_from(other, MiB(1));
	assert_int_equal(stat_of(other, ION_POOL_STAT_MISSES), 1);
	for (int i = 0; i < 3; i++)
		assert_int_equal(ion_pool_put(other, fd[i], s->vouch), 0);
	/* Two fit under the context's limit again; the third is released. */
	assert_int_equal(held_both(s->pool, other), MiB(6));
	trims = stat_of(other, ION_POOL_STAT_TRIMS);

	/* "Trims every pool of the context to nothing; returns the buffers
	 * released." */
	assert_int_equal(ion_ctx_trim_pools(s->ctx), 6);
	assert_int_equal(held_both(s->pool, other), 0);
	assert_int_equal(stat_of(s->pool, ION_POOL_STAT_TRIMS), 4);
	assert_int_equal(stat_of(other, ION_POOL_STAT_TRIMS), trims + 2);
	assert_int_equal(ion_ctx_trim_pools(s->ctx), 0);

	/* "0: no limit" */
	assert_int_equal(ion_ctx_set_pool_limit(s->ctx, 0), 0);
	assert_int_equal(ion_pool_prefill(s->pool), 0);
	assert_int_equal(ion_pool_prefill(other), 0);
	assert_int_equal(held_both(s->pool, other), MiB(8));
	ion_pool_unref(other);
	/* TRIMS: "buffers released by trim, expiry, limits or pressure": the
	 * third buffer put back, past the limit, was one. */
	assert_int_equal(trims, 1);
}

/* The limit lowered below what the pools hold: "The most bytes all pools
 * of the context hold together" is true from then on, as for a pool's own
 * limit (ion_pool_set_max_bytes releases at once). */
static void test_context_limit_lowered(void **pstate)
{
	struct state *s = *pstate;
	unsigned long long held;
	struct ion_pool *other;

	assert_int_equal(ion_pool_new(s->sol, &other), 0);
	assert_int_equal(ion_pool_set_hints(s->pool, "4x1M"), 0);
	assert_int_equal(ion_pool_set_hints(other, "4x1M"), 0);
	assert_int_equal(ion_pool_prefill(s->pool), 0);
	assert_int_equal(ion_pool_prefill(other), 0);
	assert_int_equal(held_both(s->pool, other), MiB(8));
	assert_int_equal(ion_ctx_set_pool_limit(s->ctx, MiB(3)), 0);
	held = held_both(s->pool, other);
	ion_pool_unref(other);
	if (held > MiB(3))
		print_error("the pools hold %llu bytes under a limit of 3 MiB\n", held);
	assert_true(held <= MiB(3));
}

/* "Idle buffers older than this are released" */
static void test_expiry(void **pstate)
{
	struct state *s = *pstate;
	int fd;

	assert_int_equal(ion_pool_set_hints(s->pool, "2x64K"), 0);
	assert_int_equal(ion_pool_prefill(s->pool), 0);
	assert_int_equal(ion_pool_set_expiry_ms(s->pool, 50), 0);
	sleep_ms(200);
	fd = get(s, KiB(64));
	assert_int_equal(stat_of(s->pool, ION_POOL_STAT_HITS), 0);
	assert_int_equal(stat_of(s->pool, ION_POOL_STAT_MISSES), 1);
	assert_int_equal(stat_of(s->pool, ION_POOL_STAT_TRIMS), 2);
	assert_int_equal(stat_of(s->pool, ION_POOL_STAT_BYTES_HELD), 0);
	/* "0: never" */
	assert_int_equal(ion_pool_set_expiry_ms(s->pool, 0), 0);
	put(s, fd);
	sleep_ms(100);
	fd = get(s, KiB(64));
	assert_int_equal(stat_of(s->pool, ION_POOL_STAT_HITS), 1);
	put(s, fd);
}

/* "Releases held buffers until at most keep_bytes remain; returns how
 * many it released." */
static void test_trim(void **pstate)
{
	struct state *s = *pstate;
	struct fd_table before, after;
	int n, m, fd;

	assert_int_equal(ion_pool_set_hints(s->pool, "4x1M 2x2M"), 0);
	assert_int_equal(ion_pool_prefill(s->pool), 0);
	assert_int_equal(stat_of(s->pool, ION_POOL_STAT_BYTES_HELD), MiB(8));
	fd = get(s, MiB(2)); /* out: not the pool's to trim */
	fd_table_read(&before);
	n = ion_pool_trim(s->pool, MiB(3));
	assert_true(n >= 1);
	assert_true(stat_of(s->pool, ION_POOL_STAT_BYTES_HELD) <= MiB(3));
	assert_int_equal(stat_of(s->pool, ION_POOL_STAT_TRIMS), n);
	fd_table_read(&after);
	assert_int_equal(after.n, before.n - n);
	m = ion_pool_trim(s->pool, 0);
	assert_int_equal(n + m, 5);
	assert_int_equal(stat_of(s->pool, ION_POOL_STAT_BYTES_HELD), 0);
	assert_int_equal(stat_of(s->pool, ION_POOL_STAT_TRIMS), 5);
	assert_int_equal(ion_pool_trim(s->pool, 0), 0);
	/* The buffer out survived the trims, and comes back. */
	assert_int_equal(stat_of(s->pool, ION_POOL_STAT_BUFFERS_OUT), 1);
	assert_int_equal(size_of(fd), MiB(2));
	put(s, fd);
	assert_int_equal(stat_of(s->pool, ION_POOL_STAT_BYTES_HELD), MiB(2));
	/* The high-water mark stays. */
	assert_int_equal(stat_of(s->pool, ION_POOL_STAT_HIGH_WATER), MiB(8));
}

/* ---- background refill ---- */

/*
 * "with background refill on, the context's thread keeps each class at
 * its count, refilling when it falls to half"; REFILLS: "buffers
 * allocated ahead of need".  Polled for up to 5 s (the thread is quick;
 * valgrind and TCG are not).
 */
static void test_background_refill(void **pstate)
{
	struct state *s = *pstate;
	int fd[3];

	assert_int_equal(ion_pool_set_hints(s->pool, "4x256K"), 0);
	assert_int_equal(ion_pool_set_background(s->pool, 1), 0);
	/* An empty class is below half: the thread fills it. */
	assert_true(stat_reaches(s->pool, ION_POOL_STAT_REFILLS, 4, 5000));
	assert_true(stat_reaches(s->pool, ION_POOL_STAT_BYTES_HELD, KiB(1024), 5000));
	fd[0] = get(s, KiB(256));
	fd[1] = get(s, KiB(256));
	/* Two of four left: half, so it refills back to the count. */
	assert_true(stat_reaches(s->pool, ION_POOL_STAT_REFILLS, 6, 5000));
	assert_true(stat_reaches(s->pool, ION_POOL_STAT_BYTES_HELD, KiB(1024), 5000));
	fd[2] = get(s, KiB(256));
	/* The caller never allocated. */
	assert_int_equal(stat_of(s->pool, ION_POOL_STAT_HITS), 3);
	assert_int_equal(stat_of(s->pool, ION_POOL_STAT_MISSES), 0);
	for (int i = 0; i < 3; i++)
		put(s, fd[i]);
	/* Returned buffers are zeroed by the thread: all come back ready. */
	assert_true(stat_reaches(s->pool, ION_POOL_STAT_BYTES_HELD, KiB(256) * 6, 5000));
	assert_int_equal(ion_pool_set_background(s->pool, 0), 0);
}

/* ---- fork ---- */

/* Child codes: one bit for each thing found wrong. */
#define CHILD_INHERITED	(1 << 0) /* holds pooled fds besides what it was handed */
#define CHILD_NOT_EMPTY	(1 << 1) /* BYTES_HELD not 0 */
#define CHILD_HIT	(1 << 2) /* its first get was no miss, or a parent's buffer */
#define CHILD_TOOK	(1 << 3) /* its pool took the parent's buffer back */
#define CHILD_IO	(1 << 4)

static int fork_child(struct state *s, int fd, const struct buf_id *pooled, int n,
		      int ready_fd, int go_fd)
{
	unsigned long long misses = stat_of(s->pool, ION_POOL_STAT_MISSES);
	unsigned long long hits = stat_of(s->pool, ION_POOL_STAT_HITS);
	struct fd_match m = { .ids = pooled, .n_ids = n, .except = fd };
	int code = 0, g = -1;
	char c = 0;

	/* "it closes the pooled fds it inherited": only fd itself is left. */
	each_fd(match_fd, &m);
	if (m.count != 0)
		code |= CHILD_INHERITED;
	/* "the child's pools start empty" */
	if (stat_of(s->pool, ION_POOL_STAT_BYTES_HELD) != 0)
		code |= CHILD_NOT_EMPTY;
	/* "parent and child never share a pooled buffer" */
	if (ion_pool_put(s->pool, fd, 0) != -EINVAL || fcntl(fd, F_GETFD) < 0)
		code |= CHILD_TOOK;
	if (ion_pool_get(s->pool, MiB(1), &g) != 0 ||
	    stat_of(s->pool, ION_POOL_STAT_MISSES) != misses + 1 ||
	    stat_of(s->pool, ION_POOL_STAT_HITS) != hits) {
		code |= CHILD_HIT;
	} else {
		struct stat st;

		if (fstat(g, &st) < 0 || id_in((struct buf_id){ st.st_dev, st.st_ino }, pooled, n))
			code |= CHILD_HIT;
		close(g);
	}
	close(fd);
	if (write(ready_fd, &c, 1) != 1 || read(go_fd, &c, 1) != 1)
		code |= CHILD_IO;
	return code;
}

static void check_child_code(int status)
{
	int code;

	if (!WIFEXITED(status))
		print_error("the child died of signal %d\n", WTERMSIG(status));
	assert_true(WIFEXITED(status));
	code = WEXITSTATUS(status);
	if (code > (CHILD_IO << 1) - 1)
		print_error("the child exited with %d\n", code);
	if (code & CHILD_INHERITED)
		print_error("the child holds pooled fds it inherited\n");
	if (code & CHILD_NOT_EMPTY)
		print_error("the child's pool is not empty\n");
	if (code & CHILD_HIT)
		print_error("the child's first get was no miss of a new buffer\n");
	if (code & CHILD_TOOK)
		print_error("the child's pool took the parent's buffer\n");
	assert_int_equal(code, 0);
}

static void test_fork(void **pstate)
{
	struct state *s = *pstate;
	struct fd_table before;
	struct buf_id pooled[8];
	int fd, n, ready[2], go[2], status;
	unsigned long long hits;
	pid_t pid;
	char c = 0;

	assert_int_equal(ion_pool_set_hints(s->pool, "4x1M"), 0);
	fd_table_read(&before);
	assert_int_equal(ion_pool_prefill(s->pool), 0);
	n = new_buffers(&before, pooled, 8);
	assert_int_equal(n, 4);
	fd = get(s, MiB(1));
	assert_true(id_in(id_of(fd), pooled, n));
	assert_int_equal(pipe2(ready, O_CLOEXEC), 0);
	assert_int_equal(pipe2(go, O_CLOEXEC), 0);
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		close(ready[0]);
		close(go[1]);
		_exit(fork_child(s, fd, pooled, n, ready[1], go[0]));
	}
	close(ready[1]);
	close(go[0]);
	assert_int_equal(read(ready[0], &c, 1), 1);
	/* While the child lives: "the parent's reference counts are not held
	 * up by the child" (it closed its copy of fd, the pool its anchors). */
	if (s->counted) {
		struct fd_match m = { .ids = pooled, .n_ids = n, .except = -1 };
		struct buf_id x = id_of(fd);

		each_fd(match_fd, &m);
		assert_int_equal(m.count, 5); /* four anchors and fd */
		for (int i = 0; i < m.count && i < 64; i++)
			assert_int_equal(refs_of(m.fds[i]),
					 same_buf(id_of(m.fds[i]), x) ? 2 : 1);
		/* So fd, put now, is free at once: not kept aside. */
		put(s, fd);
		assert_int_equal(stat_of(s->pool, ION_POOL_STAT_BYTES_HELD), MiB(4));
	} else {
		put(s, fd);
	}
	assert_int_equal(write(go[1], &c, 1), 1);
	close(go[1]);
	close(ready[0]);
	assert_int_equal(waitpid(pid, &status, 0), pid);
	check_child_code(status);
	/* The parent's pool still works. */
	hits = stat_of(s->pool, ION_POOL_STAT_HITS);
	fd = get(s, MiB(1));
	assert_true(id_in(id_of(fd), pooled, n));
	assert_int_equal(stat_of(s->pool, ION_POOL_STAT_HITS), hits + 1);
	put(s, fd);
}

/* With the refill thread running: the child holds no buffer of the
 * pool's (any dma-buf or memfd but the one it was handed) and allocates. */
static void test_fork_with_background(void **pstate)
{
	static struct fd_ids old;
	struct state *s = *pstate;
	int fd, status;
	pid_t pid;

	/* What the process held before this pool had a buffer. */
	old.n = 0;
	each_fd(add_fd_id, &old);
	assert_int_equal(ion_pool_set_hints(s->pool, "8x64K"), 0);
	assert_int_equal(ion_pool_set_background(s->pool, 1), 0);
	assert_true(stat_reaches(s->pool, ION_POOL_STAT_REFILLS, 8, 5000));
	fd = get(s, KiB(64));
	for (int round = 0; round < 4; round++) {
		pid = fork();
		assert_true(pid >= 0);
		if (pid == 0) {
			struct fd_match m = { .dev = id_of(fd).dev, .old = &old, .except = fd };
			int code = 0, g = -1;

			each_fd(match_fd, &m);
			if (m.count)
				code |= CHILD_INHERITED;
			if (stat_of(s->pool, ION_POOL_STAT_BYTES_HELD) != 0)
				code |= CHILD_NOT_EMPTY;
			if (ion_pool_get(s->pool, KiB(64), &g) != 0)
				code |= CHILD_HIT;
			_exit(code);
		}
		assert_int_equal(waitpid(pid, &status, 0), pid);
		check_child_code(status);
		/* The parent's thread still refills. */
		int more = get(s, KiB(64));
		put(s, more);
	}
	put(s, fd);
	assert_int_equal(ion_pool_set_background(s->pool, 0), 0);
}

/* ---- threads ---- */

#define THREADS 16
#define HELD_MAX (THREADS * 2)

struct held_set {
	pthread_mutex_t lock;
	struct buf_id ids[HELD_MAX];
	int n;
};

static bool held_add(struct held_set *h, struct buf_id id)
{
	bool fresh;

	pthread_mutex_lock(&h->lock);
	fresh = !id_in(id, h->ids, h->n) && h->n < HELD_MAX;
	if (fresh)
		h->ids[h->n++] = id;
	pthread_mutex_unlock(&h->lock);
	return fresh;
}

static void held_remove(struct held_set *h, struct buf_id id)
{
	pthread_mutex_lock(&h->lock);
	for (int i = 0; i < h->n; i++)
		if (same_buf(h->ids[i], id)) {
			h->ids[i] = h->ids[--h->n];
			break;
		}
	pthread_mutex_unlock(&h->lock);
}

struct worker {
	struct ion_pool *pool;
	struct held_set *held;
	pthread_barrier_t *start;
	atomic_bool *stop;
	uint64_t deadline;
	bool counted;
	unsigned int seed;
	unsigned char mark;
	unsigned long gets;
	int failures;
	char why[96];
};

struct taken {
	int fd;
	size_t len;
	struct buf_id id;
	unsigned char *p;
};

static void worker_fail(struct worker *w, const char *why)
{
	if (!w->failures++)
		snprintf(w->why, sizeof(w->why), "%s", why);
}

static bool worker_take(struct worker *w, struct taken *t)
{
	static const size_t lens[] = { KiB(4), KiB(64), KiB(256) };
	struct stat st;
	int r;

	t->len = lens[rand_r(&w->seed) % 3];
	r = ion_pool_get(w->pool, t->len, &t->fd);
	if (r != 0) {
		worker_fail(w, strerror(-r));
		return false;
	}
	w->gets++;
	if (fstat(t->fd, &st) < 0) {
		worker_fail(w, "fstat");
		close(t->fd);
		return false;
	}
	t->id = (struct buf_id){ st.st_dev, st.st_ino };
	/* "no buffer handed out twice" */
	if (!held_add(w->held, t->id))
		worker_fail(w, "a buffer handed out twice at once");
	t->p = mmap(NULL, t->len, PROT_READ | PROT_WRITE, MAP_SHARED, t->fd, 0);
	if (t->p == MAP_FAILED) {
		worker_fail(w, "mmap");
		t->p = NULL;
		return true;
	}
	ion_sync(t->fd, ION_SYNC_START | ION_SYNC_RW);
	/* Zeroed on recycle (and new from the kernel). */
	if (t->p[0] || t->p[t->len - 1])
		worker_fail(w, "a buffer handed out dirty");
	t->p[0] = t->p[t->len - 1] = w->mark;
	ion_sync(t->fd, ION_SYNC_END | ION_SYNC_RW);
	return true;
}

static void worker_give(struct worker *w, struct taken *t)
{
	unsigned int how = rand_r(&w->seed) % 2;

	if (t->p) {
		ion_sync(t->fd, ION_SYNC_START | ION_SYNC_READ);
		if (t->p[0] != w->mark || t->p[t->len - 1] != w->mark)
			worker_fail(w, "another thread wrote to a buffer held");
		ion_sync(t->fd, ION_SYNC_END | ION_SYNC_READ);
		munmap(t->p, t->len);
	}
	/* Out of the set before it goes back: it may be handed out at once. */
	held_remove(w->held, t->id);
	if (w->counted && how == 0) {
		close(t->fd); /* comes back on its own */
	} else {
		unsigned int flags = !w->counted && how == 0 ? ION_POOL_VOUCH : 0;

		if (ion_pool_put(w->pool, t->fd, flags) != 0) {
			worker_fail(w, "put failed");
			close(t->fd);
		}
	}
}

static void *worker_main(void *data)
{
	struct worker *w = data;
	struct taken held[2];
	int n = 0;

	pthread_barrier_wait(w->start);
	while (now_ms() < w->deadline && w->failures == 0 && !atomic_load(w->stop)) {
		if (n < 2 && worker_take(w, &held[n]))
			n++;
		/* Give one back, at random, or when two are held. */
		if (n == 2 || (n && rand_r(&w->seed) % 2)) {
			unsigned int i = (unsigned int)rand_r(&w->seed) % (unsigned int)n;

			worker_give(w, &held[i]);
			held[i] = held[--n];
		}
	}
	while (n)
		worker_give(w, &held[--n]);
	return NULL;
}

/* The most a worker set ever holds out at once: two of the largest size
 * per thread. */
#define THREADS_OUT_MAX ((unsigned long long)THREADS * 2 * KiB(256))

/*
 * 16 threads on one pool for 3 s, background refill on: get, write, check,
 * put or close.  Returns the failures; *held_max the most bytes the pool
 * held while they ran (they stop early past bound).
 */
static int run_workers(struct state *s, unsigned long long bound,
		       unsigned long long *held_max)
{
	struct held_set held = { .n = 0 };
	struct worker w[THREADS];
	pthread_t threads[THREADS];
	pthread_barrier_t start;
	atomic_bool stop = false;
	unsigned long gets = 0;
	uint64_t deadline = now_ms() + 3000;
	int failures = 0;

	*held_max = 0;
	pthread_mutex_init(&held.lock, NULL);
	assert_int_equal(ion_pool_set_hints(s->pool, "8x4K 8x64K 4x256K"), 0);
	assert_int_equal(ion_pool_set_background(s->pool, 1), 0);
	pthread_barrier_init(&start, NULL, THREADS);
	for (int i = 0; i < THREADS; i++) {
		w[i] = (struct worker){
			.pool = s->pool, .held = &held, .start = &start, .stop = &stop,
			.deadline = deadline, .counted = s->counted,
			.seed = 1234u + (unsigned int)i, .mark = (unsigned char)(i + 1),
		};
		assert_int_equal(pthread_create(&threads[i], NULL, worker_main, &w[i]), 0);
	}
	while (now_ms() < deadline && !atomic_load(&stop)) {
		unsigned long long now = stat_of(s->pool, ION_POOL_STAT_BYTES_HELD);

		if (now > *held_max)
			*held_max = now;
		if (now > bound)
			atomic_store(&stop, true);
		sleep_ms(10);
	}
	/* Every thread joined before any assertion: a failure must not leave
	 * threads running on a pool the teardown frees. */
	for (int i = 0; i < THREADS; i++)
		pthread_join(threads[i], NULL);
	pthread_barrier_destroy(&start);
	pthread_mutex_destroy(&held.lock);
	print_message("%s: held %llu bytes at most (%llu now), %llu hits, %llu misses, "
		      "%llu refills, %llu reclaims, %llu trims\n", s->heap,
		      stat_of(s->pool, ION_POOL_STAT_HIGH_WATER),
		      stat_of(s->pool, ION_POOL_STAT_BYTES_HELD),
		      stat_of(s->pool, ION_POOL_STAT_HITS),
		      stat_of(s->pool, ION_POOL_STAT_MISSES),
		      stat_of(s->pool, ION_POOL_STAT_REFILLS),
		      stat_of(s->pool, ION_POOL_STAT_RECLAIMS),
		      stat_of(s->pool, ION_POOL_STAT_TRIMS));
	for (int i = 0; i < THREADS; i++) {
		if (w[i].failures)
			print_error("thread %d: %d failures, first: %s\n", i, w[i].failures,
				    w[i].why);
		failures += w[i].failures;
		gets += w[i].gets;
	}
	assert_int_equal(held.n, 0);
	assert_true(gets > 0);
	assert_int_equal(stat_of(s->pool, ION_POOL_STAT_HITS) +
			 stat_of(s->pool, ION_POOL_STAT_MISSES), gets);
	/* Everything comes back: closed dma-bufs once the thread (or a get)
	 * finds them free. */
	if (!failures && !stat_reaches(s->pool, ION_POOL_STAT_BUFFERS_OUT, 0, 10000))
		failures++;
	assert_int_equal(ion_pool_set_background(s->pool, 0), 0);
	return failures;
}

/*
 * "a pool may be used from any number of threads at once": no buffer
 * handed out twice at once (a locked set of the inodes held), none dirty,
 * none written by another thread while held, every call answered.  The
 * pool has a limit (32 MiB, past what the workers hold), so that this is
 * the locking alone; test_threads_default_pool is the same without one.
 */
static void test_threads(void **pstate)
{
	struct state *s = *pstate;
	unsigned long long held_max;

	assert_int_equal(ion_pool_set_max_bytes(s->pool, MiB(32)), 0);
	assert_int_equal(run_workers(s, ULLONG_MAX, &held_max), 0);
	assert_true(held_max <= MiB(32));
}

/*
 * The same with a pool as ion_pool_new() makes it (no limit).  The
 * workers never hold more than THREADS_OUT_MAX (8 MiB) at once and the
 * hints ask for 1.6 MiB: a pool there "so that a hot path takes a buffer
 * without waiting on the kernel" has no cause to hold 8 times that, and a
 * pool that keeps every buffer it allocates on a miss runs the heap out
 * of memory (the VM's 64 MiB CMA area).  The workers stop past the bound.
 */
static void test_threads_default_pool(void **pstate)
{
	struct state *s = *pstate;
	const unsigned long long bound = 8 * (THREADS_OUT_MAX + MiB(2));
	unsigned long long held_max;
	int failures = run_workers(s, bound, &held_max);

	if (held_max > bound)
		print_error("the pool held %llu bytes with at most %llu out at once\n",
			    held_max, THREADS_OUT_MAX);
	assert_int_equal(failures, 0);
	assert_true(held_max <= bound);
}

/* ---- bad input ---- */

static void assert_fd_intact(int fd, struct buf_id id)
{
	assert_true(fcntl(fd, F_GETFD) >= 0);
	assert_true(same_buf(id_of(fd), id));
}

/*
 * ion_pool_put: "-EINVAL for an fd that is not one of this pool's buffers
 * out (another pool's, a foreign fd, one already given back): then fd
 * stays the caller's, untouched."
 */
static void test_put_foreign(void **pstate)
{
	struct state *s = *pstate;
	struct ion_pool *other;
	struct buf_id id;
	char text[5] = "";
	int fd, nul, own;

	own = memfd_create("not-a-pool-buffer", MFD_CLOEXEC);
	assert_true(own >= 0);
	assert_int_equal(write(own, "mine", 4), 4);
	id = id_of(own);
	assert_int_equal(ion_pool_put(s->pool, own, 0), -EINVAL);
	assert_int_equal(ion_pool_put(s->pool, own, ION_POOL_VOUCH), -EINVAL);
	assert_fd_intact(own, id);
	assert_int_equal(pread(own, text, 4, 0), 4);
	assert_string_equal(text, "mine");
	close(own);

	nul = open("/dev/null", O_RDWR | O_CLOEXEC);
	assert_true(nul >= 0);
	id = id_of(nul);
	assert_int_equal(ion_pool_put(s->pool, nul, ION_POOL_VOUCH), -EINVAL);
	assert_fd_intact(nul, id);
	close(nul);

	/* A buffer of the same heap, not of a pool. */
	assert_int_equal(ion_ctx_alloc(s->ctx, s->heap, KiB(64), 0, &fd), 0);
	id = id_of(fd);
	assert_int_equal(ion_pool_put(s->pool, fd, s->vouch), -EINVAL);
	assert_fd_intact(fd, id);
	close(fd);

	/* Another pool's, of the very same solution. */
	assert_int_equal(ion_pool_new(s->sol, &other), 0);
	fd = get_from(other, KiB(64));
	id = id_of(fd);
	assert_int_equal(ion_pool_put(s->pool, fd, s->vouch), -EINVAL);
	assert_fd_intact(fd, id);
	assert_int_equal(stat_of(s->pool, ION_POOL_STAT_BYTES_HELD), 0);
	assert_int_equal(ion_pool_put(other, fd, s->vouch), 0);
	ion_pool_unref(other);

	/* "-EBADF" */
	assert_int_equal(ion_pool_put(s->pool, -1, 0), -EBADF);
	/* flags: "ION_POOL_VOUCH or 0" */
	fd = get(s, KiB(64));
	id = id_of(fd);
	assert_int_equal(ion_pool_put(s->pool, fd, 1U << 7), -EINVAL);
	assert_fd_intact(fd, id);
	put(s, fd);
	assert_int_equal(stat_of(s->pool, ION_POOL_STAT_BUFFERS_OUT), 0);
}

static void test_double_put(void **pstate)
{
	struct state *s = *pstate;
	int fd = get(s, KiB(64)), number = fd, again;
	struct buf_id x = id_of(fd);

	put(s, fd); /* "the pool closes fd" */
	assert_int_equal(fcntl(number, F_GETFD), -1);
	assert_int_equal(ion_pool_put(s->pool, number, s->vouch), -EBADF);
	/* Back once: held once, handed out once. */
	assert_int_equal(stat_of(s->pool, ION_POOL_STAT_BYTES_HELD), KiB(64));
	fd = get(s, KiB(64));
	assert_true(same_buf(id_of(fd), x));
	assert_int_equal(ion_pool_put(s->pool, -1, 0), -EBADF);
	again = get(s, KiB(64));
	assert_false(same_buf(id_of(again), x));
	put(s, again);
	put(s, fd);

	/* Put after close. */
	fd = get(s, KiB(64));
	number = fd;
	close(fd);
	assert_int_equal(ion_pool_put(s->pool, number, s->vouch), -EBADF);
}

/*
 * A double put whose number the pool has meanwhile taken for a buffer of
 * its own (the kernel gives out the lowest free number): the fd is not
 * one the pool handed out, "one already given back", so -EINVAL, and the
 * pool's own fd must not be closed behind its back (which would leave it
 * counting references through a number that anything may take next).
 */
static void test_double_put_number_reused(void **pstate)
{
	struct state *s = *pstate;
	int a, b, number, held[3], r, rb;
	struct buf_id y;
	bool intact;

	a = get(s, MiB(1));
	number = a;
	put(s, a);
	b = get(s, MiB(2)); /* a miss: the pool's new fd takes a's number */
	if (b == number || fcntl(number, F_GETFD) < 0 ||
	    !same_buf(id_of(number), id_of(b))) {
		put(s, b);
		skip(); /* the number went elsewhere */
	}
	y = id_of(b);
	r = ion_pool_put(s->pool, number, s->vouch);
	intact = fcntl(number, F_GETFD) >= 0 && same_buf(id_of(number), y);
	rb = ion_pool_put(s->pool, b, s->vouch);
	if (rb != 0)
		close(b);
	assert_int_equal(r, -EINVAL);
	assert_true(intact);
	assert_int_equal(rb, 0); /* b is still the pool's buffer out */
	/* And nothing is handed out twice after it. */
	for (int round = 0; round < 2; round++) {
		for (int i = 0; i < 3; i++) {
			held[i] = get(s, MiB(2));
			for (int j = 0; j < i; j++)
				assert_false(same_buf(id_of(held[i]), id_of(held[j])));
		}
		close(held[0]);
		for (int i = 1; i < 3; i++)
			put(s, held[i]);
	}
}

/* ion_pool_get: "-EINVAL (len 0, or too large to round); the solution's". */
static void test_bad_sizes(void **pstate)
{
	struct state *s = *pstate;
	int fd = -77;

	assert_int_equal(ion_pool_get(s->pool, 0, &fd), -EINVAL);
	assert_int_equal(ion_pool_get(s->pool, SIZE_MAX, &fd), -EINVAL);
	assert_int_equal(ion_pool_get(s->pool, SIZE_MAX - 4095, &fd), -EINVAL);
	assert_int_equal(ion_pool_get(s->pool, SIZE_MAX - MiB(1) + 2, &fd), -EINVAL);
	assert_int_equal(fd, -77);
	/* Rounds, but no heap has it: the solution's error, nothing left. */
	/* (Where size_t is 32 bits, 3.5 GiB is a length a big machine's
	 * memfd heap can give.) */
	if (sizeof(size_t) == 8) {
		assert_true(ion_pool_get(s->pool, SIZE_MAX / 8 * 7, &fd) < 0);
		assert_int_equal(fd, -77);
	}
	assert_int_equal(stat_of(s->pool, ION_POOL_STAT_BUFFERS_OUT), 0);
	assert_int_equal(stat_of(s->pool, ION_POOL_STAT_BYTES_HELD), 0);
	assert_int_equal(stat_of(s->pool, ION_POOL_STAT_HITS), 0);
}

/*
 * A solution no heap can serve (no error: "the solution has no heaps")
 * makes a pool whose gets answer "the solution's" error:
 * ion_solution_alloc's -ENODEV "when the solution has no heap".
 */
static void test_pool_of_no_heap(void **pstate)
{
	struct state *s = *pstate;
	struct ion_alloc_config *config;
	struct ion_solution *sol;
	struct ion_pool *pool;
	int fd = -77;

	assert_int_equal(ion_alloc_config_new(&config), 0);
	assert_int_equal(ion_alloc_config_set_size(config, 4096), 0);
	assert_int_equal(ion_alloc_config_set_heap(config, "no-such-heap"), 0);
	assert_int_equal(ion_ctx_solve(s->ctx, config, &sol), 0);
	ion_alloc_config_free(config);
	assert_int_equal(ion_solution_get_heap_count(sol), 0);
	assert_int_equal(ion_pool_new(sol, &pool), 0);
	assert_int_equal(ion_pool_get(pool, 4096, &fd), -ENODEV);
	assert_int_equal(fd, -77);
	assert_int_equal(ion_pool_set_hints(pool, "2x4K"), 0);
	assert_int_equal(ion_pool_prefill(pool), -ENODEV);
	assert_int_equal(stat_of(pool, ION_POOL_STAT_BYTES_HELD), 0);
	ion_pool_unref(pool);
	ion_solution_unref(sol);
}

/* "A NULL object or out-pointer is -EINVAL"; "writes its out-parameters
 * (named ret_*) only on success". */
static void test_null_arguments(void **pstate)
{
	struct state *s = *pstate;
	struct ion_pool *p = (struct ion_pool *)&p;
	int fd = -77;

	assert_int_equal(ion_pool_new(NULL, &p), -EINVAL);
	assert_ptr_equal(p, (struct ion_pool *)&p);
	assert_int_equal(ion_pool_new(s->sol, NULL), -EINVAL);
	assert_null(ion_pool_ref(NULL));
	assert_null(ion_pool_unref(NULL));
	assert_int_equal(ion_pool_get(NULL, 4096, &fd), -EINVAL);
	assert_int_equal(ion_pool_get(s->pool, 4096, NULL), -EINVAL);
	assert_int_equal(fd, -77);
	assert_int_equal(ion_pool_put(NULL, 0, 0), -EINVAL);
	assert_int_equal(ion_pool_set_hints(NULL, "1x4K"), -EINVAL);
	assert_int_equal(ion_pool_set_hints(s->pool, NULL), -EINVAL);
	assert_int_equal(ion_pool_prefill(NULL), -EINVAL);
	assert_int_equal(ion_pool_set_background(NULL, 1), -EINVAL);
	assert_int_equal(ion_pool_set_zeroing(NULL, 0), -EINVAL);
	assert_int_equal(ion_pool_set_max_bytes(NULL, 1), -EINVAL);
	assert_int_equal(ion_pool_set_expiry_ms(NULL, 1), -EINVAL);
	assert_int_equal(ion_pool_trim(NULL, 0), -EINVAL);
	assert_int_equal(ion_ctx_set_pool_limit(NULL, 1), -EINVAL);
	assert_int_equal(ion_ctx_trim_pools(NULL), -EINVAL);
	/* "A statistic, or 0 for NULL or an unknown one." */
	for (int st = 0; st < ION_POOL_STAT_COUNT; st++)
		assert_int_equal(ion_pool_get_stat(NULL, (enum ion_pool_stat)st), 0);
	assert_int_equal(ion_pool_get_stat(s->pool, ION_POOL_STAT_COUNT), 0);
	assert_int_equal(ion_pool_get_stat(s->pool, (enum ion_pool_stat)-1), 0);
	/* A reference pair leaves the pool working. */
	assert_ptr_equal(ion_pool_ref(s->pool), s->pool);
	assert_null(ion_pool_unref(s->pool));
	fd = get(s, 4096);
	put(s, fd);
}

/* "-EINVAL with a malformed hint": and the hints in place stay. */
static void test_bad_hints(void **pstate)
{
	struct state *s = *pstate;
	static const char *const bad[] = {
		"4x", "x1M", "0x1M", "4*1M", "4x0", "4X1M", "1025x4K", "2x1M junk", "-1x4K",
	};

	assert_int_equal(ion_pool_set_hints(s->pool, "2x64K"), 0);
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		int r = ion_pool_set_hints(s->pool, bad[i]);

		if (r != -EINVAL)
			print_error("hints '%s': %d\n", bad[i], r);
		assert_int_equal(r, -EINVAL);
	}
	assert_int_equal(ion_pool_prefill(s->pool), 0);
	assert_int_equal(stat_of(s->pool, ION_POOL_STAT_REFILLS), 2);
	assert_int_equal(stat_of(s->pool, ION_POOL_STAT_BYTES_HELD), KiB(128));
}

/* "The pool holds a reference to the solution and its context": it works
 * with the caller's references to both dropped, and frees them last. */
static void test_pool_outlives_context(void **pstate)
{
	struct state *s = *pstate;
	struct ion_ctx *ctx;
	struct ion_solution *sol;
	struct ion_pool *pool;
	int fd;

	assert_int_equal(ion_ctx_new(NULL, &ctx), 0);
	sol = solve(ctx, s->heap);
	assert_int_equal(ion_pool_new(sol, &pool), 0);
	ion_solution_unref(sol);
	ion_ctx_unref(ctx);

	/* Four, so that one taken leaves the class above half: no refill. */
	assert_int_equal(ion_pool_set_hints(pool, "4x64K"), 0);
	assert_int_equal(ion_pool_prefill(pool), 0);
	assert_int_equal(ion_pool_set_background(pool, 1), 0);
	fd = get_from(pool, KiB(64));
	assert_int_equal(ion_pool_put(pool, fd, s->vouch), 0);
	assert_true(stat_reaches(pool, ION_POOL_STAT_BYTES_HELD, KiB(256), 5000));
	fd = get_from(pool, KiB(64));
	assert_int_equal(stat_of(pool, ION_POOL_STAT_MISSES), 0);
	assert_int_equal(ion_pool_put(pool, fd, s->vouch), 0);
	assert_true(ion_pool_trim(pool, 0) >= 0);
	ion_pool_unref(pool); /* the context goes with it: teardown's fd check */
}

/* ---- a heaps.d Pool hint ---- */

static atomic_int pool_hint_logged, pool_capped_logged;
static char stats_logged[512], heap_stats_logged[512];

__attribute__((format(printf, 6, 0)))
static void capture_log(struct ion_ctx *ctx, int priority, const char *file, int line,
			const char *fn, const char *format, va_list args)
{
	char text[512];

	(void)ctx, (void)file, (void)line, (void)fn;
	vsnprintf(text, sizeof(text), format, args);
	if (strstr(text, "a pool for the board's Pool hint"))
		atomic_store(&pool_hint_logged, 1);
	/* As heaps.d's problems are: at error level, with file:line. */
	if (priority == LOG_ERR && strstr(text, "50-pool.conf:2: heap ") &&
	    strstr(text, ": Pool = 1024x64K capped to 64x64K:"))
		atomic_store(&pool_capped_logged, 1);
	if (strncmp(text, "heap pool done:", 15) == 0)
		snprintf(heap_stats_logged, sizeof(heap_stats_logged), "%s", text);
	else if (strstr(text, "pool done:"))
		snprintf(stats_logged, sizeof(stats_logged), "%s", text);
}

/*
 * Whether a heap pool's last words (its "heap pool done:" line, logged
 * when the context frees it) count these hits and no miss: every
 * allocation of a hinted size was a buffer the pool held.  Timing-free,
 * where the buffers' identities are not: a refill that lands between one
 * allocation and the next is a buffer no earlier look saw, and the pool
 * may hand out that one first.
 */
static bool heap_pool_served(const char *line, unsigned long long want)
{
	const char *done = line ? strstr(line, "heap pool done: ") : NULL;
	unsigned long long hits, misses;

	if (done && sscanf(done, "heap pool done: %llu hits, %llu misses", &hits, &misses) == 2 &&
	    hits == want && misses == 0)
		return true;
	print_error("want %llu hits and no miss; the pool said: %s\n", want,
		    done ? done : "nothing");
	return false;
}

/* "Stats: ... in the log at debug level": a pool says what it did when it
 * ends. */
static void test_stats_logged(void **pstate)
{
	struct state *s = *pstate;
	struct ion_pool *pool;
	int fd;

	ion_ctx_set_log_fn(s->ctx, capture_log);
	ion_ctx_set_log_priority(s->ctx, LOG_DEBUG);
	stats_logged[0] = '\0';
	assert_int_equal(ion_pool_new(s->sol, &pool), 0);
	assert_int_equal(ion_pool_get(pool, KiB(64), &fd), 0);
	assert_int_equal(ion_pool_put(pool, fd, s->vouch), 0);
	assert_int_equal(ion_pool_get(pool, KiB(64), &fd), 0);
	assert_int_equal(ion_pool_put(pool, fd, s->vouch), 0);
	ion_pool_unref(pool);
	print_message("%s\n", stats_logged);
	assert_non_null(strstr(stats_logged, "pool done: 1 hits, 1 misses"));
	/* Nothing measured: no refill allocated, no worker zeroed. */
	assert_non_null(strstr(stats_logged, "a MiB allocated in 0 us, zeroed in 0 "));

	/* A prefill allocates as the worker does: measured and said. */
	stats_logged[0] = '\0';
	assert_int_equal(ion_pool_new(s->sol, &pool), 0);
	assert_int_equal(ion_pool_set_hints(pool, "1x64K"), 0);
	assert_int_equal(ion_pool_prefill(pool), 0);
	ion_pool_unref(pool);
	print_message("%s\n", stats_logged);
	assert_non_null(strstr(stats_logged, "a MiB allocated in "));
	assert_null(strstr(stats_logged, "a MiB allocated in 0 us"));
}

/* A temporary heaps.d folder giving the heap "Pool = hint". */
static void make_heaps_d_hint(const struct state *s, char dir[64], const char *hint)
{
	char path[128];
	FILE *f;

	snprintf(dir, 64, "/tmp/libion-pool-XXXXXX");
	assert_non_null(mkdtemp(dir));
	snprintf(path, sizeof(path), "%s/50-pool.conf", dir);
	f = fopen(path, "we");
	assert_non_null(f);
	fprintf(f, "[Heap %s]\nPool = %s\n", s->heap, hint);
	fclose(f);
}

static void make_heaps_d(const struct state *s, char dir[64])
{
	make_heaps_d_hint(s, dir, "4x1M");
}

static struct ion_ctx *hinted_ctx_hint(const struct state *s, const char *dir,
				       const char *hint)
{
	const struct ion_heap *h;
	const char *key, *value, *source;
	struct ion_ctx *ctx;
	bool found = false;

	assert_int_equal(ion_ctx_new(NULL, &ctx), 0);
	assert_int_equal(ion_ctx_set_heaps_path(ctx, dir), 0);
	ion_ctx_set_log_fn(ctx, capture_log);
	ion_ctx_set_log_priority(ctx, LOG_DEBUG);
	assert_int_equal(ion_ctx_find_heap(ctx, s->heap, &h), 0);
	assert_int_equal(ion_ctx_get_config_error_count(ctx), 0);
	for (int i = 0; i < ion_heap_get_attribute_count(h); i++) {
		assert_int_equal(ion_heap_get_attribute(h, (unsigned int)i, &key, &value, &source), 0);
		if (strcmp(key, "Pool") == 0) {
			assert_string_equal(value, hint);
			found = true;
		}
	}
	assert_true(found);
	return ctx;
}

static struct ion_ctx *hinted_ctx(const struct state *s, const char *dir)
{
	return hinted_ctx_hint(s, dir, "4x1M");
}

static void remove_dir(char *dir)
{
	assert_int_equal(test_remove_tree(dir), 0);
}

struct size_match {
	dev_t dev;
	size_t size;
	const struct fd_ids *old;	/* fds left out (there before), or NULL */
	int count;
	struct buf_id ids[16];
};

static void match_size(int fd, void *data)
{
	struct size_match *m = data;
	struct stat st;

	/* A dma-buf's inode and a memfd have the buffer's size. */
	if (stat_fd(fd, &st) == 0 && st.st_dev == m->dev && (size_t)st.st_size == m->size &&
	    !fd_id_in(m->old, fd, (struct buf_id){ st.st_dev, st.st_ino })) {
		struct buf_id id = { st.st_dev, st.st_ino };

		if (m->count < 16 && !id_in(id, m->ids, m->count))
			m->ids[m->count++] = id;
	}
}

/*
 * Waits (up to 10 s: TCG is slow) until the process holds count buffers
 * of this size on dev that were not among old: the pool's own fds of what
 * it prefilled.  A buffer's fd exists before the pool lists it (the
 * thread checks how the kernel counts it first), so the count must still
 * be there 100 ms later.  No cmocka assertion (the Android case's child
 * uses it).
 */
static bool wait_prefilled(dev_t dev, size_t size, int count, const struct fd_ids *old,
			   struct size_match *m)
{
	uint64_t end = now_ms() + 10000;
	bool seen = false;

	for (;;) {
		*m = (struct size_match){ .dev = dev, .size = size, .old = old };
		each_fd(match_size, m);
		if (m->count >= count && seen)
			return true;
		seen = m->count >= count;
		if (now_ms() > end)
			return false;
		sleep_ms(seen ? 100 : 20);
	}
}

/*
 * The board's hint gives the heap a pool of the context's own ("A heap
 * that a board file gives a Pool hint gets a pool"), made on the heap's
 * first allocation (here one of 64 KiB, another class) and prefilled by
 * the context's thread.  Timing-free evidence that ion_ctx_alloc() is
 * served from it: once the process holds the four prefilled buffers (the
 * pool's fds of them), the next four allocations are those very buffers,
 * and the log says the pool was made.
 */
static void test_heaps_d_pool(void **pstate)
{
	struct state *s = *pstate;
	static struct fd_ids old;
	struct size_match pooled;
	struct ion_ctx *ctx;
	struct buf_id got[4];
	bool prefilled, served = true;
	char dir[64];
	int fd[4], first = -1;
	dev_t dev;

	make_heaps_d(s, dir);
	atomic_store(&pool_hint_logged, 0);
	old.n = 0;
	each_fd(add_fd_id, &old);
	ctx = hinted_ctx(s, dir);
	assert_int_equal(ion_ctx_alloc(ctx, s->heap, KiB(64), 0, &first), 0);
	dev = id_of(first).dev;
	close(first);
	prefilled = wait_prefilled(dev, MiB(1), 4, &old, &pooled);
	for (int i = 0; prefilled && i < 4; i++) {
		assert_int_equal(ion_ctx_alloc(ctx, s->heap, MiB(1), 0, &fd[i]), 0);
		assert_true(fd_is_cloexec(fd[i]));
		assert_int_equal(size_of(fd[i]), MiB(1));
		got[i] = id_of(fd[i]);
		/* The first is a prefilled one: nothing else is in the pool
		 * yet.  Later ones may be a refill's (heap_pool_served()). */
		if ((i == 0 && !id_in(got[i], pooled.ids, pooled.count)) || id_in(got[i], got, i))
			served = false;
	}
	for (int i = 0; prefilled && i < 4; i++)
		close(fd[i]);
	heap_stats_logged[0] = '\0';
	ion_ctx_unref(ctx);
	remove_dir(dir);
	assert_true(atomic_load(&pool_hint_logged));
	if (!prefilled)
		print_error("the heap pool did not prefill 4 buffers of 1 MiB\n");
	assert_true(prefilled);
	assert_true(served);
	assert_true(heap_pool_served(heap_stats_logged, 4));
}

/*
 * A hint of a size that is no size class: an NV12 1080p frame, 3110400
 * bytes.  "every allocation of exactly a hinted size ... is served from
 * it", and at the size ion_ctx_alloc() gives without a pool, rounded to
 * pages (3112960), not to the class (3 MiB): the pool prefills buffers of
 * that size, and the allocations of the frame size are those buffers.
 */
static void test_heaps_d_pool_odd_size(void **pstate)
{
	struct state *s = *pstate;
	const size_t frame = 1920 * 1080 * 3 / 2, rounded = 760 * 4096;
	static struct fd_ids old;
	struct size_match pooled;
	struct ion_ctx *ctx;
	struct buf_id got[2];
	bool prefilled, served = true;
	char dir[64];
	int fd[2], first = -1;
	dev_t dev;

	make_heaps_d_hint(s, dir, "2x3110400");
	old.n = 0;
	each_fd(add_fd_id, &old);
	ctx = hinted_ctx_hint(s, dir, "2x3110400");
	assert_int_equal(ion_ctx_alloc(ctx, s->heap, KiB(64), 0, &first), 0);
	dev = id_of(first).dev;
	close(first);
	prefilled = wait_prefilled(dev, rounded, 2, &old, &pooled);
	for (int i = 0; prefilled && i < 2; i++) {
		assert_int_equal(ion_ctx_alloc(ctx, s->heap, frame, 0, &fd[i]), 0);
		assert_int_equal(size_of(fd[i]), rounded);
		got[i] = id_of(fd[i]);
		/* As in test_heaps_d_pool: the first is a prefilled one. */
		if ((i == 0 && !id_in(got[i], pooled.ids, pooled.count)) || id_in(got[i], got, i))
			served = false;
	}
	for (int i = 0; prefilled && i < 2; i++)
		close(fd[i]);
	heap_stats_logged[0] = '\0';
	ion_ctx_unref(ctx);
	remove_dir(dir);
	if (!prefilled)
		print_error("the heap pool did not prefill 2 buffers of %zu bytes\n", rounded);
	assert_true(prefilled);
	if (!served)
		print_error("allocations of %zu bytes were not served by the pool\n", frame);
	assert_true(served);
	assert_true(heap_pool_served(heap_stats_logged, 2));
}

/*
 * ion_solution_get_size: "The page-rounded length the solution allocates";
 * ion_ctx_alloc() rounds to pages, as it does without a pool: a board's
 * hint must not change the size of the buffers a program gets.
 */
static void test_heaps_d_pool_sizes(void **pstate)
{
	struct state *s = *pstate;
	struct ion_alloc_config *config;
	struct ion_solution *sol;
	size_t got_alloc, got_solution;
	struct ion_ctx *ctx;
	char dir[64];
	int fd = -1;

	make_heaps_d(s, dir);
	ctx = hinted_ctx(s, dir);
	assert_int_equal(ion_ctx_alloc(ctx, s->heap, KiB(600), 0, &fd), 0);
	got_alloc = size_of(fd);
	close(fd);
	assert_int_equal(ion_alloc_config_new(&config), 0);
	assert_int_equal(ion_alloc_config_set_size(config, MiB(1) + 1), 0);
	assert_int_equal(ion_alloc_config_set_heap(config, s->heap), 0);
	assert_int_equal(ion_ctx_solve(ctx, config, &sol), 0);
	ion_alloc_config_free(config);
	assert_int_equal(ion_solution_get_size(sol), MiB(1) + KiB(4));
	assert_int_equal(ion_solution_alloc(sol, &fd, NULL), 0);
	got_solution = size_of(fd);
	close(fd);
	ion_solution_unref(sol);
	ion_ctx_unref(ctx);
	remove_dir(dir);
	if (got_alloc != KiB(600))
		print_error("ion_ctx_alloc(600 KiB) gave %zu bytes\n", got_alloc);
	assert_int_equal(got_alloc, KiB(600));
	if (got_solution != MiB(1) + KiB(4))
		print_error("ion_solution_alloc() of 1 MiB + 4 KiB gave %zu bytes\n",
			    got_solution);
	assert_int_equal(got_solution, MiB(1) + KiB(4));
}

/*
 * "Hints: how many buffers of which sizes to keep ready": the board asks
 * for 4 of 1 MiB, so buffers of 3 MiB that the program allocated and
 * closed are not the heap pool's to keep (the program has no handle on
 * that pool to put a limit on, and Android's calls none at all): the
 * memory goes back to the heap.
 */
static void test_heaps_d_pool_keeps_only_hinted(void **pstate)
{
	struct state *s = *pstate;
	static struct fd_ids old;
	struct size_match m = { .size = MiB(3), .old = &old };
	struct ion_ctx *ctx;
	char dir[64];
	int fd[4];

	make_heaps_d(s, dir);
	old.n = 0;
	each_fd(add_fd_id, &old);
	ctx = hinted_ctx(s, dir);
	for (int i = 0; i < 4; i++)
		assert_int_equal(ion_ctx_alloc(ctx, s->heap, MiB(3), 0, &fd[i]), 0);
	m.dev = id_of(fd[0]).dev;
	for (int i = 0; i < 4; i++)
		close(fd[i]);
	/* Kept, they would be the pool's fds of them now (taken back or not). */
	each_fd(match_size, &m);
	ion_ctx_unref(ctx);
	remove_dir(dir);
	if (m.count)
		print_error("%d buffers of 3 MiB kept after the program closed them\n", m.count);
	assert_int_equal(m.count, 0);
}

/*
 * ion_pool_new: "A device of the solution with a heaps.d Pool hint gives
 * the pool its hints (ion_pool_set_hints() replaces them)."  A [Device]
 * section without Match keys is a device asked for by its name.
 */
static void test_device_pool_hint(void **pstate)
{
	struct state *s = *pstate;
	struct ion_alloc_config *config;
	struct ion_solution *sol;
	struct ion_device *dev;
	struct ion_pool *pool;
	struct ion_ctx *ctx;
	char dir[64], path[128];
	FILE *f;

	snprintf(dir, sizeof(dir), "/tmp/libion-pool-XXXXXX");
	assert_non_null(mkdtemp(dir));
	snprintf(path, sizeof(path), "%s/50-pool.conf", dir);
	f = fopen(path, "we");
	assert_non_null(f);
	fprintf(f, "[Device pool-test]\nPool = 2x64K 1x8K\n");
	fclose(f);
	assert_int_equal(ion_ctx_new(NULL, &ctx), 0);
	assert_int_equal(ion_ctx_set_heaps_path(ctx, dir), 0);
	assert_int_equal(ion_ctx_get_device(ctx, "pool-test", &dev), 0);
	assert_int_equal(ion_alloc_config_new(&config), 0);
	assert_int_equal(ion_alloc_config_set_size(config, 4096), 0);
	assert_int_equal(ion_alloc_config_set_heap(config, s->heap), 0);
	assert_int_equal(ion_alloc_config_add_device(config, dev), 0);
	assert_int_equal(ion_ctx_solve(ctx, config, &sol), 0);
	ion_alloc_config_free(config);
	ion_device_unref(dev);
	if (ion_solution_get_heap_count(sol) == 0 && (s->props & ION_HEAP_PROP_CPU_ONLY)) {
		/* No device sees a CPU-only (memfd) buffer. */
		ion_solution_unref(sol);
		ion_ctx_unref(ctx);
		remove_dir(dir);
		skip();
	}
	assert_int_equal(ion_solution_get_heap_count(sol), 1);
	assert_int_equal(ion_pool_new(sol, &pool), 0);
	ion_solution_unref(sol);
	ion_ctx_unref(ctx);
	assert_int_equal(ion_pool_prefill(pool), 0);
	assert_int_equal(stat_of(pool, ION_POOL_STAT_REFILLS), 3);
	assert_int_equal(stat_of(pool, ION_POOL_STAT_BYTES_HELD), KiB(136));
	assert_int_equal(ion_pool_set_hints(pool, "2x4K"), 0);
	assert_int_equal(ion_pool_prefill(pool), 0);
	assert_int_equal(stat_of(pool, ION_POOL_STAT_REFILLS), 5);
	assert_int_equal(stat_of(pool, ION_POOL_STAT_BYTES_HELD), KiB(144));
	ion_pool_unref(pool);
	remove_dir(dir);
}

/* The context of a hinted heap, used and dropped, gives back every fd. */
static void test_heaps_d_pool_context_freed(void **pstate)
{
	struct state *s = *pstate;
	struct fd_table before;
	struct ion_ctx *ctx;
	char dir[64];
	int fd = -1;

	make_heaps_d(s, dir);
	fd_table_read(&before);
	ctx = hinted_ctx(s, dir);
	assert_int_equal(ion_ctx_alloc(ctx, s->heap, MiB(1), 0, &fd), 0);
	close(fd);
	/* "the last one frees the context and its heaps" */
	ion_ctx_unref(ctx);
	remove_dir(dir);
	fd_table_assert_same(&before);
}

#define LOW_NOFILE 256
#define CAPPED_SKIP 99

/* The buffers of dev that the process holds and did not before; -1 when
 * no fd is left to look. */
static int new_fds_on(dev_t dev, const struct fd_ids *old)
{
	struct fd_match m = { .dev = dev, .old = old, .except = -1 };
	DIR *dir = opendir("/proc/self/fd");

	if (!dir)
		return -1;
	closedir(dir);
	each_fd(match_fd, &m);
	return m.count;
}

/* test_heaps_d_pool_capped's child: 0, CAPPED_SKIP, or bits of what failed. */
static int capped_child(const struct state *s, const char *dir)
{
	static struct fd_ids old;
	struct ion_ctx *ctx;
	struct rlimit lim;
	struct stat st;
	uint64_t end;
	int fd = -1, n = 0, code = 0;

	if (getrlimit(RLIMIT_NOFILE, &lim) < 0 || lim.rlim_max < LOW_NOFILE)
		return CAPPED_SKIP;
	lim.rlim_cur = LOW_NOFILE;
	if (setrlimit(RLIMIT_NOFILE, &lim) < 0)
		return 1;
	old.n = 0;
	each_fd(add_fd_id, &old);
	atomic_store(&pool_capped_logged, 0);
	if (ion_ctx_new(NULL, &ctx) < 0)
		return 2;
	ion_ctx_set_log_fn(ctx, capture_log);
	/* The heap's first allocation, of a size the hint does not name,
	 * makes its pool. */
	if (ion_ctx_set_heaps_path(ctx, dir) < 0 ||
	    ion_ctx_alloc(ctx, s->heap, KiB(4), 0, &fd) < 0 || fstat(fd, &st) < 0) {
		ion_ctx_unref(ctx);
		return 2;
	}
	close(fd);
	/* Up to 10 s (TCG, CMA) for the pool to fill, then 300 ms more for
	 * it to go past the cap, had it none. */
	for (end = now_ms() + 10000; (n = new_fds_on(st.st_dev, &old)) < LOW_NOFILE / 4 &&
				     now_ms() < end;)
		sleep_ms(20);
	sleep_ms(300);
	n = new_fds_on(st.st_dev, &old);
	fprintf(stderr, "%s, RLIMIT_NOFILE %d: the pool holds %d buffers (-1: no fd left to count them)\n",
		s->heap, LOW_NOFILE, n);
	if (n != LOW_NOFILE / 4)
		code |= 4;
	if (!atomic_load(&pool_capped_logged))
		code |= 8;
	ion_ctx_unref(ctx);
	return code;
}

/*
 * A board's hint is a wish: "Pool = 1024x64K" under a soft fd limit of
 * 256 (set in a child) keeps a quarter of the limit, 64 buffers, so that
 * the refill thread leaves the program three quarters of its fds rather
 * than run it out of them; the cap is logged at error level, as heaps.d's
 * problems are, with the file and line.
 */
static void test_heaps_d_pool_capped(void **pstate)
{
	struct state *s = *pstate;
	char dir[64];
	int status;
	pid_t pid;

	make_heaps_d_hint(s, dir, "1024x64K");
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0)
		_exit(capped_child(s, dir));
	assert_int_equal(waitpid(pid, &status, 0), pid);
	remove_dir(dir);
	assert_true(WIFEXITED(status));
	if (WEXITSTATUS(status) == CAPPED_SKIP)
		skip(); /* a hard limit below 256 */
	if (WEXITSTATUS(status))
		print_error("the child failed: %d\n", WEXITSTATUS(status));
	assert_int_equal(WEXITSTATUS(status), 0);
}

#define ANDROID_ALLOC	(1 << 0)
#define ANDROID_NEW	(1 << 1) /* not the prefilled buffers: no pool served */
#define ANDROID_FDS	(1 << 2) /* fds left after ion_close() */
#define ANDROID_OPEN	(1 << 3)
#define ANDROID_PREFILL	(1 << 4) /* no prefilled buffers to be seen */

static void count_fd(int fd, void *data)
{
	(void)fd;
	++*(int *)data;
}

/*
 * One of Android's front doors: how a program opens it, allocates len
 * bytes from a heap (by name or by Android id) and closes it.
 */
struct front_door {
	void *(*open)(void);
	int (*alloc)(void *door, const char *heap, unsigned int mask, size_t len); /* fd */
	void (*close)(void *door);
};

static void *libion_open(void)
{
	int client = ion_open();

	return client < 0 ? NULL : (void *)(intptr_t)(client + 1);
}

static int libion_alloc(void *door, const char *heap, unsigned int mask, size_t len)
{
	int fd = -1, r = ion_alloc_fd((int)(intptr_t)door - 1, len, 0, mask, 0, &fd);

	(void)heap;
	return r < 0 ? r : fd;
}

static void libion_close(void *door)
{
	ion_close((int)(intptr_t)door - 1);
}

static const struct front_door android_libion = { libion_open, libion_alloc, libion_close };

static void *dmabufheap_open(void)
{
	return CreateDmabufHeapBufferAllocator();
}

static int dmabufheap_alloc(void *door, const char *heap, unsigned int mask, size_t len)
{
	(void)mask;
	return DmabufHeapAlloc2(door, heap, len, 0);
}

static void dmabufheap_close(void *door)
{
	FreeDmabufHeapBufferAllocator(door);
}

static const struct front_door android_dmabufheap = {
	dmabufheap_open, dmabufheap_alloc, dmabufheap_close
};

static int android_child(const char *dir, const struct front_door *door, const char *heap,
			 unsigned int mask, int log_fd)
{
	static struct fd_ids old;
	struct size_match pooled;
	struct buf_id got[4];
	int code = 0, before = 0, after = 0, fd[4], n = 0;
	struct stat st;
	void *client;

	setenv("ION_HEAPS_PATH", dir, 1);
	setenv("ION_LOG", "debug", 1);
	dup2(log_fd, STDERR_FILENO);
	close(log_fd);
	each_fd(count_fd, &before);
	each_fd(add_fd_id, &old);
	client = door->open();
	if (!client)
		return ANDROID_OPEN;
	/* The first allocation of the heap makes its pool. */
	if ((fd[0] = door->alloc(client, heap, mask, KiB(64))) < 0 || fstat(fd[0], &st) < 0) {
		code |= ANDROID_ALLOC;
		goto out;
	}
	close(fd[0]);
	if (!wait_prefilled(st.st_dev, MiB(1), 4, &old, &pooled)) {
		code |= ANDROID_PREFILL;
		goto out;
	}
	for (; n < 4; n++) {
		if ((fd[n] = door->alloc(client, heap, mask, MiB(1))) < 0 || fstat(fd[n], &st) < 0) {
			code |= ANDROID_ALLOC;
			break;
		}
		got[n] = (struct buf_id){ st.st_dev, st.st_ino };
		/* The first a prefilled one (heap_pool_served() for all). */
		if ((n == 0 && !id_in(got[n], pooled.ids, pooled.count)) || id_in(got[n], got, n))
			code |= ANDROID_NEW;
	}
	while (n)
		close(fd[--n]);
out:
	door->close(client);
	each_fd(count_fd, &after);
	if (after != before)
		code |= ANDROID_FDS;
	fflush(stderr);
	return code;
}

/*
 * Android's calls take the one allocation path, so a board's Pool hint
 * serves them too; their context is the shared one, with the default
 * configuration, so ION_HEAPS_PATH is set before the first ion_open() of
 * a child, whose ION_LOG=debug log is read back.
 */
static void pool_serves(const struct state *s, const struct front_door *door, unsigned int mask)
{
	char dir[64], log[8192], done[1024] = "";
	bool logged = false;
	size_t used = 0;
	ssize_t got;
	int pipe_fds[2], status, code;
	pid_t pid;

	make_heaps_d(s, dir);
	assert_int_equal(pipe2(pipe_fds, O_CLOEXEC), 0);
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		close(pipe_fds[0]);
		_exit(android_child(dir, door, s->heap, mask, pipe_fds[1]));
	}
	close(pipe_fds[1]);
	/* Read to the end (a full pipe would stop the child), line by line:
	 * the library's own lines are looked through, any other (a
	 * sanitizer's report) is passed on. */
	while ((got = read(pipe_fds[0], log + used, sizeof(log) - 1 - used)) > 0) {
		char *line = log, *nl;

		used += (size_t)got;
		log[used] = '\0';
		while ((nl = strchr(line, '\n')) || used == sizeof(log) - 1) {
			if (nl)
				*nl = '\0';
			if (strstr(line, "a pool for the board's Pool hint"))
				logged = true;
			if (strstr(line, "heap pool done:"))
				snprintf(done, sizeof(done), "%.1000s", line);
			if (strncmp(line, "libion: ", 8) != 0)
				print_error("child: %s\n", line);
			if (!nl) {
				line = log + used;
				break;
			}
			line = nl + 1;
		}
		used -= (size_t)(line - log);
		memmove(log, line, used);
	}
	close(pipe_fds[0]);
	assert_int_equal(waitpid(pid, &status, 0), pid);
	remove_dir(dir);
	assert_true(WIFEXITED(status));
	code = WEXITSTATUS(status);
	if (code & ~(ANDROID_OPEN | ANDROID_ALLOC | ANDROID_NEW | ANDROID_FDS | ANDROID_PREFILL))
		print_error("the child exited with %d\n", code);
	assert_int_equal(code & ~(ANDROID_OPEN | ANDROID_ALLOC | ANDROID_NEW | ANDROID_FDS |
				  ANDROID_PREFILL), 0);
	assert_int_equal(code & (ANDROID_OPEN | ANDROID_ALLOC), 0);
	if (code & ANDROID_PREFILL)
		print_error("the heap pool did not prefill 4 buffers of 1 MiB\n");
	assert_int_equal(code & ANDROID_PREFILL, 0);
	if (code & ANDROID_NEW)
		print_error("Android's allocations were not served by the pool\n");
	assert_int_equal(code & ANDROID_NEW, 0);
	assert_true(logged);
	if (code & ANDROID_FDS)
		print_error("fds left after the close: the shared context lives on\n");
	assert_int_equal(code & ANDROID_FDS, 0);
	/* The shared context went with the last client: its pool's words. */
	assert_true(heap_pool_served(done, 4));
}

static void test_heaps_d_pool_android(void **pstate)
{
	struct state *s = *pstate;
	const struct ion_heap *h;
	int id;

	assert_int_equal(ion_ctx_find_heap(s->ctx, s->heap, &h), 0);
	id = ion_heap_get_id(h);
	if (id < 0)
		skip(); /* no Android id: no mask reaches it */
	pool_serves(s, &android_libion, 1U << id);
}

/* Android's current allocator, libdmabufheap's C API (libion-dmabufheap),
 * by heap name: the same one path, so the same pool serves it. */
static void test_heaps_d_pool_dmabufheap(void **pstate)
{
	pool_serves(*pstate, &android_dmabufheap, 0);
}

int main(void)
{
	static const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_hits_and_misses, setup, teardown),
		cmocka_unit_test_setup_teardown(test_size_classes, setup, teardown),
		cmocka_unit_test_setup_teardown(test_classes_do_not_serve_each_other, setup, teardown),
		cmocka_unit_test_setup_teardown(test_held_by_forked_child, setup, teardown),
		cmocka_unit_test_setup_teardown(test_held_by_child_over_socket, setup, teardown),
		cmocka_unit_test_setup_teardown(test_held_by_mapping, setup, teardown),
		cmocka_unit_test_setup_teardown(test_held_by_device_import, setup, teardown),
		cmocka_unit_test_setup_teardown(test_closed_buffer, setup, teardown),
		cmocka_unit_test_setup_teardown(test_closed_behind_held, setup, teardown),
		cmocka_unit_test_setup_teardown(test_closed_behind_held_background, setup, teardown),
		cmocka_unit_test_setup_teardown(test_trim_releases_closed, setup, teardown),
		cmocka_unit_test_setup_teardown(test_memfd_needs_vouch, setup, teardown),
		cmocka_unit_test_setup_teardown(test_memfd_closed_is_released, setup, teardown),
		cmocka_unit_test_setup_teardown(test_zeroing, setup, teardown),
		cmocka_unit_test_setup_teardown(test_stats_logged, setup, teardown),
		cmocka_unit_test_setup_teardown(test_max_bytes, setup, teardown),
		cmocka_unit_test_setup_teardown(test_context_limit, setup, teardown),
		cmocka_unit_test_setup_teardown(test_context_limit_lowered, setup, teardown),
		cmocka_unit_test_setup_teardown(test_expiry, setup, teardown),
		cmocka_unit_test_setup_teardown(test_trim, setup, teardown),
		cmocka_unit_test_setup_teardown(test_background_refill, setup, teardown),
		cmocka_unit_test_setup_teardown(test_fork, setup, teardown),
		cmocka_unit_test_setup_teardown(test_fork_with_background, setup, teardown),
		cmocka_unit_test_setup_teardown(test_threads, setup, teardown),
		cmocka_unit_test_setup_teardown(test_threads_default_pool, setup, teardown),
		cmocka_unit_test_setup_teardown(test_put_foreign, setup, teardown),
		cmocka_unit_test_setup_teardown(test_double_put, setup, teardown),
		cmocka_unit_test_setup_teardown(test_double_put_number_reused, setup, teardown),
		cmocka_unit_test_setup_teardown(test_bad_sizes, setup, teardown),
		cmocka_unit_test_setup_teardown(test_pool_of_no_heap, setup, teardown),
		cmocka_unit_test_setup_teardown(test_null_arguments, setup, teardown),
		cmocka_unit_test_setup_teardown(test_bad_hints, setup, teardown),
		cmocka_unit_test_setup_teardown(test_pool_outlives_context, setup, teardown),
		cmocka_unit_test_setup_teardown(test_device_pool_hint, setup, teardown),
		cmocka_unit_test_setup_teardown(test_heaps_d_pool, setup, teardown),
		cmocka_unit_test_setup_teardown(test_heaps_d_pool_sizes, setup, teardown),
		cmocka_unit_test_setup_teardown(test_heaps_d_pool_odd_size, setup, teardown),
		cmocka_unit_test_setup_teardown(test_heaps_d_pool_keeps_only_hinted, setup, teardown),
		cmocka_unit_test_setup_teardown(test_heaps_d_pool_context_freed, setup, teardown),
		cmocka_unit_test_setup_teardown(test_heaps_d_pool_android, setup, teardown),
		cmocka_unit_test_setup_teardown(test_heaps_d_pool_dmabufheap, setup, teardown),
		cmocka_unit_test_setup_teardown(test_heaps_d_pool_capped, setup, teardown),
	};
	char **heaps = test_heap_names();
	const char *filter = getenv("LIBION_TEST_FILTER");
	int failed = 0, n = 0;

	/* One test (a glob) at a time, for a quick run in the VM. */
	if (filter && *filter)
		cmocka_set_test_filter(filter);

	for (char **h = heaps; *h; h++, n++) {
		char group[96];

		current_heap = *h;
		snprintf(group, sizeof(group), "pool on heap %s", *h);
		failed += _cmocka_run_group_tests(group, tests,
						  sizeof(tests) / sizeof(tests[0]),
						  NULL, NULL);
	}
	test_heap_names_free(heaps);
	if (n == 0) {
		fprintf(stderr, "no available heap to test\n");
		return 1;
	}
	return failed ? 1 : 0;
}
