// SPDX-License-Identifier: MIT
/*
 * The pools' code itself (src/pool*.c and the fdinfo reader), built into this program with what the host cannot
 * give faked around it: the host has only the memfd heap, whose buffers
 * the kernel does not count, so here a memfd looks like a dma-buf and its
 * fdinfo "count" is the number of this process's fds of it (what the
 * kernel says of a dma-buf that no other process, mapping or device
 * holds).  Everything else is the production code: the pools' own paths
 * through the real registry, solver and memfd backend.
 * tests/integration/test-pool.c checks the same on real kernels.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <syslog.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "src/alloc.h"
#include "src/pool.h"
#include "src/util.h"
#include "testlib.h"
#include "watch.h"

static pthread_t main_thread;

/* madvise() answers ENOSYS while set, as a kernel built without it. */
static atomic_bool no_madvise;

int madvise(void *addr, size_t len, int advice)
{
	if (atomic_load(&no_madvise)) {
		errno = ENOSYS;
		return -1;
	}
	return (int)syscall(SYS_madvise, addr, len, advice);
}

/* Reads of fail_fd's fdinfo fail; the refill thread's reads with the
 * pool lock watched held are counted. */
static atomic_int fail_fd = -1;
static pthread_mutex_t *_Atomic watched;
static atomic_int locked_reads;
/* The main thread's reads of fdinfo. */
static atomic_int main_reads;

/* The mappings of an inode in this process: each holds a reference on
 * the file, as the kernel counts them (the pool keeps one). */
static int mappings_of(ino_t ino)
{
	FILE *f = fopen("/proc/self/maps", "re");
	char line[512];
	int n = 0;

	while (f && fgets(line, sizeof(line), f)) {
		unsigned long long inode = 0;

		if (sscanf(line, "%*s %*s %*s %*s %llu", &inode) == 1 && inode == (unsigned long long)ino)
			n++;
	}
	if (f)
		fclose(f);
	return n;
}

/* The fds of process pid ("self") on the file dev:ino, or -errno.  No
 * cmocka assertion, so that a forked child may use it. */
static int fds_of_file_in(const char *pid, dev_t dev, ino_t ino)
{
	char path[64];
	DIR *dir;
	struct dirent *e;
	int n = 0;

	snprintf(path, sizeof(path), "/proc/%s/fd", pid);
	dir = opendir(path);
	if (!dir)
		return -errno;
	while ((e = readdir(dir))) {
		char p[sizeof(path) + sizeof(e->d_name) + 1];
		struct stat st;

		if (e->d_name[0] == '.' || (!strcmp(pid, "self") && atoi(e->d_name) == dirfd(dir)))
			continue;
		snprintf(p, sizeof(p), "%s/%s", path, e->d_name);
		if (stat(p, &st) == 0 && st.st_dev == dev && st.st_ino == ino)
			n++;
	}
	closedir(dir);
	return n;
}

static int fds_of_file(dev_t dev, ino_t ino)
{
	return fds_of_file_in("self", dev, ino);
}

/* A child that holds fds of the pool's buffers, whose fds the fake count
 * counts too, as the kernel's does: 0 for none. */
static atomic_int holder_pid;

/* fdinfo: "ino" and "count", the fds of this process on the inode and
 * its mappings. */
static int fake_read_file(const char *path, size_t max, char **ret_text, size_t *ret_len)
{
	int fd = atoi(path + strlen("/proc/self/fdinfo/")), n = 0;
	pthread_mutex_t *lock = atomic_load(&watched);
	struct stat me;
	char *text, self[40];

	(void)max;
	if (pthread_equal(pthread_self(), main_thread))
		atomic_fetch_add(&main_reads, 1);
	if (lock && !pthread_equal(pthread_self(), main_thread)) {
		if (pthread_mutex_trylock(lock) == EBUSY)
			atomic_fetch_add(&locked_reads, 1);
		else
			pthread_mutex_unlock(lock);
	}
	if (fd == atomic_load(&fail_fd))
		return -EMFILE;
	/* By path, as the kernel's fdinfo is read: the worker reads counts
	 * without the pool's lock, while a put may close the anchor (the
	 * inode check makes that safe); fstat(fd) would be a use of the fd
	 * itself, which ThreadSanitizer rightly calls a race. */
	snprintf(self, sizeof(self), "/proc/self/fd/%d", fd);
	if (stat(self, &me) < 0)
		return -errno;
	n = fds_of_file(me.st_dev, me.st_ino);
	if (n < 0)
		return n;
	if (atomic_load(&holder_pid) > 0) {
		char pid[16];
		int more;

		snprintf(pid, sizeof(pid), "%d", atomic_load(&holder_pid));
		more = fds_of_file_in(pid, me.st_dev, me.st_ino);
		n += more > 0 ? more : 0;
	}
	n += mappings_of(me.st_ino);
	text = malloc(128);
	if (!text)
		return -ENOMEM;
	*ret_len = (size_t)snprintf(text, 128, "pos:\t0\nflags:\t02\nmnt_id:\t1\nino:\t%lu\ncount:\t%d\n",
				    (unsigned long)me.st_ino, n);
	*ret_text = text;
	return 0;
}

static int fake_fd_kind(int fd)
{
	(void)fd;
	return ION_FD_DMABUF;
}

/*
 * The refill thread's allocations stop here while block_allocs is set
 * (the main thread's go on): a CMA allocation that takes seconds; only
 * block_only's when that is set.  The main thread's fail with ENOMEM
 * while main_enomem is set, every thread's while all_enomem is (a heap
 * that runs out).
 */
static atomic_bool block_allocs, alloc_blocked, main_enomem, all_enomem;
static const struct ion_solution *_Atomic block_only;
/* Set: the refill thread's allocations are held after the kernel made
 * the buffer (its fd open, the pool not told yet), whose inode is left
 * in made_dev and made_ino. */
static atomic_bool block_after;
static _Atomic(dev_t) made_dev;
static _Atomic(ino_t) made_ino;

/* The refill thread waits here while block_allocs is set (10 s at most). */
static void hold_alloc(void)
{
	for (int ms = 0; atomic_load(&block_allocs) && ms < 10000; ms++) {
		struct timespec ts = { 0, 1000000 };

		atomic_store(&alloc_blocked, true);
		nanosleep(&ts, NULL);
	}
	atomic_store(&alloc_blocked, false);
}

static int fake_alloc_len(const struct ion_solution *solution, size_t len, int *ret_fd,
			  const struct ion_heap **ret_heap)
{
	const struct ion_solution *only = atomic_load(&block_only);
	bool hold = !pthread_equal(pthread_self(), main_thread) && (!only || only == solution);
	struct stat st;
	int r;

	if (atomic_load(&all_enomem))
		return -ENOMEM;
	if (pthread_equal(pthread_self(), main_thread) && atomic_load(&main_enomem))
		return -ENOMEM;
	if (hold && !atomic_load(&block_after))
		hold_alloc();
	r = ion_solution_pool_ops.alloc(solution, len, ret_fd, ret_heap);
	if (r == 0 && hold && atomic_load(&block_after)) {
		if (fstat(*ret_fd, &st) == 0) {
			atomic_store(&made_dev, st.st_dev);
			atomic_store(&made_ino, st.st_ino);
		}
		hold_alloc();
	}
	return r;
}

/* What the pools are handed, with the allocate call above. */
static const struct ion_pool_ops fake_pool_ops = {
	.alloc = fake_alloc_len,
	.trackable = ion_fdinfo_trackable,
	.refs = ion_fdinfo_refs,
};

/* A pool as ion_pool_new() (alloc.c) makes it, handed the allocate call above. */
static int new_pool(struct ion_solution *sol, struct ion_pool **ret)
{
	const struct ion_pool_hint *hints = NULL;
	size_t n = 0;

	for (unsigned int i = 0; !n && ion_solution_pool_hints(sol, i, &hints, &n); i++)
		;
	return ion_pool_create(ion_solution_ctx(sol), &fake_pool_ops, sol,
			       ion_solution_heap_pools(sol), hints, n, ret);
}

/* Memory pressure: /proc/pressure/memory is /dev/null, and the thread's
 * poll() says POLLPRI on it once for each pressure_pending. */
static atomic_int fake_psi_fd = -1;
static atomic_bool pressure_pending;

static int fake_open(const char *path, int flags, ...)
{
	va_list ap;
	mode_t mode;
	int fd;

	if (strstr(path, "/proc/pressure/memory")) {
		fd = open("/dev/null", O_RDWR | O_CLOEXEC);
		atomic_store(&fake_psi_fd, fd);
		return fd;
	}
	va_start(ap, flags);
	mode = (mode_t)va_arg(ap, int);
	va_end(ap);
	return open(path, flags, mode);
}

/* Set: the worker's dups fail with EMFILE, counted in dups_failed (the
 * process out of fds); the workers' polls, one a pass, in worker_polls. */
static atomic_bool dup_emfile;
static atomic_uint dups_failed, worker_polls;

static int fake_ppoll(struct pollfd *fds, nfds_t n, const struct timespec *timeout,
		      const sigset_t *mask)
{
	int r;

	atomic_fetch_add(&worker_polls, 1);
	r = ppoll(fds, n, timeout, mask);
	if (r >= 0 && n >= 2 && fds[1].fd == atomic_load(&fake_psi_fd) &&
	    atomic_exchange(&pressure_pending, false)) {
		fds[1].revents |= POLLPRI;
		r++;
	}
	return r;
}

/* Set: the worker's next dup (a spare fd) is held once made, its fd
 * number left in dup_made, until dup_go is set (10 s at most); with
 * hold_before, held before it is made, the fd it dups left in dup_src,
 * the inode it got in dup_ino. */
static atomic_bool hold_dup, hold_before, dup_held, dup_go;
static atomic_int dup_made = -1, dup_src = -1;
static _Atomic(ino_t) dup_ino;

/* The worker waits here until dup_go is set (10 s at most). */
static void hold_in_dup(void)
{
	atomic_store(&dup_held, true);
	for (int ms = 0; !atomic_load(&dup_go) && ms < 10000; ms++) {
		struct timespec ts = { 0, 1000000 };

		nanosleep(&ts, NULL);
	}
	atomic_store(&dup_held, false);
}

static int fake_fcntl(int fd, int cmd, ...)
{
	bool worker = cmd == F_DUPFD_CLOEXEC && !pthread_equal(pthread_self(), main_thread);
	struct stat st;
	va_list ap;
	int arg, r;

	va_start(ap, cmd);
	arg = va_arg(ap, int);
	va_end(ap);
	if (worker && atomic_load(&dup_emfile)) {
		atomic_fetch_add(&dups_failed, 1);
		errno = EMFILE;
		return -1;
	}
	if (worker && atomic_load(&hold_dup) && atomic_exchange(&hold_before, false)) {
		atomic_store(&hold_dup, false);
		atomic_store(&dup_src, fd);
		hold_in_dup();
		r = fcntl(fd, cmd, arg);
		atomic_store(&dup_ino, r >= 0 && fstat(r, &st) == 0 ? st.st_ino : 0);
		return r;
	}
	r = fcntl(fd, cmd, arg);
	if (worker && r >= 0 && atomic_exchange(&hold_dup, false)) {
		atomic_store(&dup_made, r);
		hold_in_dup();
	}
	return r;
}

#define ion_read_file fake_read_file
#define ion_fd_kind fake_fd_kind
#define open(...) fake_open(__VA_ARGS__)
#define ppoll fake_ppoll
#define fcntl(...) fake_fcntl(__VA_ARGS__)
#include "src/fdinfo.c"
#include "src/pool.c"
#include "src/pool-heap.c"
#include "src/pool-hints.c"
#include "src/pool-life.c"
#include "src/pool-limits.c"
#include "src/pool-pace.c"
#include "src/pool-refill.c"
#include "src/pool-scrub.c"
#include "src/pool-spares.c"
#undef ion_read_file
#undef ion_fd_kind
#undef ion_solution_pool_ops
#undef open
#undef ppoll
#undef fcntl

#define KiB(n) ((size_t)(n) << 10)
#define MiB(n) ((size_t)(n) << 20)

struct state {
	struct ion_ctx *ctx;
	struct ion_solution *sol;
	struct ion_pool *pool;
};

static uint64_t now_ms(void)
{
	return pool_now_ns() / 1000000u;
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

	while (stat_of(pool, st) != want) {
		if (now_ms() > end)
			return false;
		sleep_ms(5);
	}
	return true;
}

/* The cell where the pools keep whether a heap's kernel counts mappings. */
static atomic_int *maps_known(struct ion_ctx *ctx, const struct ion_heap *h)
{
	atomic_int *known = ion_heap_pools_maps_known(ion_heap_pools_of(atomic_load(ion_ctx_registry_slot(ctx))), h);

	assert_non_null(known);
	return known;
}

static int setup(void **pstate)
{
	struct state *s = calloc(1, sizeof(*s));
	struct ion_alloc_config *config;
	const struct ion_heap *h;

	assert_non_null(s);
	main_thread = pthread_self();
	atomic_store(&block_allocs, false);
	atomic_store(&block_after, false);
	atomic_store(&main_enomem, false);
	atomic_store(&all_enomem, false);
	atomic_store(&block_only, NULL);
	atomic_store(&pressure_pending, false);
	atomic_store(&fake_psi_fd, -1);
	atomic_store(&hold_dup, false);
	atomic_store(&dup_emfile, false);
	atomic_store(&hold_before, false);
	atomic_store(&dup_go, false);
	atomic_store(&dup_made, -1);
	atomic_store(&dup_src, -1);
	atomic_store(&dup_ino, 0);
	atomic_store(&fail_fd, -1);
	atomic_store(&watched, NULL);
	atomic_store(&no_madvise, false);
	assert_int_equal(ion_ctx_new(NULL, &s->ctx), 0);
	assert_int_equal(ion_ctx_find_heap(s->ctx, "memfd", &h), 0);
	/* The fake count sees no mapping: the pool must not look. */
	atomic_store(maps_known(s->ctx, h), 1);
	assert_int_equal(ion_alloc_config_new(&config), 0);
	assert_int_equal(ion_alloc_config_set_size(config, 4096), 0);
	assert_int_equal(ion_alloc_config_set_heap(config, "memfd"), 0);
	assert_int_equal(ion_ctx_solve(s->ctx, config, &s->sol), 0);
	ion_alloc_config_free(config);
	assert_int_equal(new_pool(s->sol, &s->pool), 0);
	*pstate = s;
	return 0;
}

static int teardown(void **pstate)
{
	struct state *s = *pstate;

	ion_pool_unref(s->pool);
	ion_solution_unref(s->sol);
	ion_ctx_unref(s->ctx);
	free(s);
	return 0;
}

static int get(struct state *s, size_t len)
{
	int fd = -1;

	assert_int_equal(ion_pool_get(s->pool, len, &fd), 0);
	assert_true(fd >= 0);
	return fd;
}

/* The fds of this process on fd's buffer. */
static int fds_on(int fd)
{
	char path[40];
	char *text;
	size_t len;
	int n = -1;

	snprintf(path, sizeof(path), "/proc/self/fdinfo/%d", fd);
	assert_int_equal(fake_read_file(path, 4096, &text, &len), 0);
	sscanf(strstr(text, "count:"), "count: %d", &n);
	free(text);
	return n;
}

#define HELD 20

/*
 * Buffers simply closed come back though many are held: 20 held (more
 * than a get's reclaim reads counts of, and than the thread reads at
 * once), then gets whose buffers are closed.  Were only the first few
 * buffers out ever looked at, every one of those gets would allocate and
 * the closed buffers stay pinned by the pool's anchors.
 */
static void test_closed_behind_held(void **pstate)
{
	struct state *s = *pstate;
	unsigned long long hits, misses;
	int held[HELD];

	for (int i = 0; i < HELD; i++)
		held[i] = get(s, KiB(64));
	for (int i = 0; i < 50; i++)
		close(get(s, KiB(64)));
	hits = stat_of(s->pool, ION_POOL_STAT_HITS);
	misses = stat_of(s->pool, ION_POOL_STAT_MISSES) - HELD;
	print_message("%d held: %llu hits, %llu misses, %llu reclaims, %llu out\n", HELD, hits,
		      misses, stat_of(s->pool, ION_POOL_STAT_RECLAIMS),
		      stat_of(s->pool, ION_POOL_STAT_BUFFERS_OUT));
	assert_true(hits > misses);
	assert_true(stat_of(s->pool, ION_POOL_STAT_BUFFERS_OUT) <= HELD + misses);
	for (int i = 0; i < HELD; i++)
		close(held[i]);
}

/*
 * A buffer a get found held, freed since, is the next get's when nothing
 * else of its class is free ("taken back only once its count says it is
 * free"), however lately it was found held: buffers found held lately
 * come after the others, not never.
 */
static void test_freed_after_found_held(void **pstate)
{
	struct state *s = *pstate;
	struct stat x, st;
	int fd, holder, others[2], again;

	fd = get(s, KiB(64));
	holder = dup(fd);
	assert_true(holder >= 0);
	assert_int_equal(fstat(fd, &x), 0);
	/* Put while held elsewhere: kept aside, read by the next gets. */
	assert_int_equal(ion_pool_put(s->pool, fd, 0), 0);
	for (int i = 0; i < 2; i++) {
		others[i] = get(s, KiB(64));
		assert_int_equal(fstat(others[i], &st), 0);
		assert_true(st.st_ino != x.st_ino);
	}
	close(holder);
	again = get(s, KiB(64));
	assert_int_equal(fstat(again, &st), 0);
	assert_true(st.st_ino == x.st_ino);
	assert_int_equal(stat_of(s->pool, ION_POOL_STAT_RECLAIMS), 1);
	assert_int_equal(ion_pool_put(s->pool, again, 0), 0);
	for (int i = 0; i < 2; i++)
		assert_int_equal(ion_pool_put(s->pool, others[i], 0), 0);
}

/* The same with background refill on: the thread finds the closed ones. */
static void test_closed_behind_held_background(void **pstate)
{
	struct state *s = *pstate;
	int held[HELD];

	assert_int_equal(ion_pool_set_hints(s->pool, "2x64K"), 0);
	assert_int_equal(ion_pool_set_background(s->pool, 1), 0);
	assert_true(stat_reaches(s->pool, ION_POOL_STAT_REFILLS, 2, 5000));
	for (int i = 0; i < HELD; i++)
		held[i] = get(s, KiB(64));
	for (int round = 0; round < 5; round++) {
		unsigned long long reclaims = stat_of(s->pool, ION_POOL_STAT_RECLAIMS);

		close(get(s, KiB(64)));
		/* Back once its count says free: nothing else out. */
		if (!stat_reaches(s->pool, ION_POOL_STAT_BUFFERS_OUT, HELD, 5000))
			fail_msg("round %d: the closed buffer was not taken back", round);
		assert_true(stat_of(s->pool, ION_POOL_STAT_RECLAIMS) > reclaims);
	}
	for (int i = 0; i < HELD; i++)
		close(held[i]);
	assert_int_equal(ion_pool_set_background(s->pool, 0), 0);
}

/* The pool's own fd of fd's buffer. */
static int anchor_of(struct state *s, int fd)
{
	struct stat a, b;
	int anchor = -1;

	assert_int_equal(fstat(fd, &b), 0);
	pool_lock(s->pool);
	for (size_t i = 0; i < s->pool->n_bufs; i++)
		if (fstat(s->pool->bufs[i].fd, &a) == 0 && a.st_ino == b.st_ino)
			anchor = s->pool->bufs[i].fd;
	pthread_mutex_unlock(s->pool->lock);
	return anchor;
}

/* A trim releases buffers that were closed while out: only the pool's
 * anchor held them, so a trim to nothing that kept them kept memory. */
static void test_trim_releases_closed(void **pstate)
{
	struct state *s = *pstate;
	int fd[3], anchor[3];

	for (int i = 0; i < 3; i++)
		fd[i] = get(s, KiB(64));
	for (int k = 0; k < 3; k++) {
		anchor[k] = anchor_of(s, fd[k]);
		assert_true(anchor[k] >= 0);
		assert_int_equal(fds_on(anchor[k]), 2);
	}
	close(fd[0]);
	close(fd[1]);
	assert_int_equal(ion_pool_trim(s->pool, 0), 2);
	assert_int_equal(stat_of(s->pool, ION_POOL_STAT_BUFFERS_OUT), 1);
	assert_int_equal(stat_of(s->pool, ION_POOL_STAT_BYTES_HELD), 0);
	assert_int_equal(fcntl(anchor[0], F_GETFD), -1);
	assert_int_equal(fcntl(anchor[1], F_GETFD), -1);
	assert_int_equal(fds_on(anchor[2]), 2); /* the one still held stays */
	assert_int_equal(ion_pool_put(s->pool, fd[2], 0), 0);
}

static bool wait_flag(atomic_bool *flag, unsigned int ms)
{
	uint64_t end = now_ms() + ms;

	while (!atomic_load(flag)) {
		if (now_ms() > end)
			return false;
		sleep_ms(1);
	}
	return true;
}

/*
 * While the refill thread allocates (seconds, on CMA), the context's pools
 * lock is free: fork() (whose handler takes it), ion_pool_new() and a
 * pool's end do not wait for the allocation.
 */
static void test_refill_off_the_global_lock(void **pstate)
{
	struct state *s = *pstate;
	int busy;

	assert_int_equal(ion_pool_set_hints(s->pool, "2x64K"), 0);
	atomic_store(&block_allocs, true);
	assert_int_equal(ion_pool_set_background(s->pool, 1), 0);
	assert_true(wait_flag(&alloc_blocked, 5000));
	busy = pthread_mutex_trylock(&ion_ctx_pools(s->ctx)->lock);
	if (busy == 0)
		pthread_mutex_unlock(&ion_ctx_pools(s->ctx)->lock);
	atomic_store(&block_allocs, false);
	assert_int_equal(busy, 0);
	assert_true(stat_reaches(s->pool, ION_POOL_STAT_REFILLS, 2, 5000));
	assert_int_equal(ion_pool_set_background(s->pool, 0), 0);
}

/*
 * Memory pressure trims every pool, and the thread then leaves the pools
 * unfilled for a while (10 s): refilled at the next tick, the memory the
 * trim gave back would be taken again at once.
 */
static void test_pressure_backs_off(void **pstate)
{
	struct state *s = *pstate;
	uint64_t after;
	int fd;

	assert_int_equal(ion_pool_set_hints(s->pool, "4x64K"), 0);
	assert_int_equal(ion_pool_set_background(s->pool, 1), 0);
	assert_true(stat_reaches(s->pool, ION_POOL_STAT_REFILLS, 4, 5000));
	assert_true(stat_reaches(s->pool, ION_POOL_STAT_BYTES_HELD, KiB(256), 5000));
	assert_true(atomic_load(&fake_psi_fd) >= 0);
	atomic_store(&pressure_pending, true);
	pool_wake(s->pool);
	assert_true(stat_reaches(s->pool, ION_POOL_STAT_BYTES_HELD, 0, 5000));
	assert_int_equal(stat_of(s->pool, ION_POOL_STAT_TRIMS), 4);
	/* Five ticks and more: nothing refilled. */
	sleep_ms(500);
	assert_int_equal(stat_of(s->pool, ION_POOL_STAT_REFILLS), 4);
	assert_int_equal(stat_of(s->pool, ION_POOL_STAT_BYTES_HELD), 0);
	pool_lock(s->pool);
	after = s->pool->refill_after_ns;
	pthread_mutex_unlock(s->pool->lock);
	assert_true(after > pool_now_ns() + 9000000000ull);
	/* A get allocates meanwhile, as it would from an empty pool. */
	fd = get(s, KiB(64));
	assert_int_equal(stat_of(s->pool, ION_POOL_STAT_MISSES), 1);
	assert_int_equal(ion_pool_put(s->pool, fd, 0), 0);
	assert_int_equal(ion_pool_set_background(s->pool, 0), 0);
}

/* A forked child has no refill thread, nor its pressure trigger's fd. */
static void test_fork_closes_psi(void **pstate)
{
	struct state *s = *pstate;
	uint64_t end = now_ms() + 5000;
	int psi, status;
	pid_t pid;

	assert_int_equal(ion_pool_set_background(s->pool, 1), 0);
	while ((psi = atomic_load(&fake_psi_fd)) < 0 && now_ms() < end)
		sleep_ms(1);
	assert_true(psi >= 0);
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0)
		_exit(fcntl(psi, F_GETFD) < 0 ? 0 : 1);
	assert_int_equal(waitpid(pid, &status, 0), pid);
	assert_true(WIFEXITED(status));
	if (WEXITSTATUS(status))
		print_error("the child still holds the pressure trigger's fd %d\n", psi);
	assert_int_equal(WEXITSTATUS(status), 0);
	assert_int_equal(ion_pool_set_background(s->pool, 0), 0);
}

/*
 * A count the refill thread cannot read (fdinfo failing: out of fds or
 * memory) is skipped for that pass; it does not send the thread to read
 * every count under the pool's lock, which only a kernel whose fdinfo
 * gives no inode (before 5.14) needs.
 */
static void test_unreadable_count(void **pstate)
{
	struct state *s = *pstate;
	int held[HELD];

	for (int i = 0; i < HELD; i++)
		held[i] = get(s, KiB(64));
	atomic_store(&fail_fd, anchor_of(s, held[0]));
	atomic_store(&locked_reads, 0);
	atomic_store(&watched, s->pool->lock);
	assert_int_equal(ion_pool_set_background(s->pool, 1), 0);
	sleep_ms(500);
	atomic_store(&watched, NULL);
	atomic_store(&fail_fd, -1);
	assert_int_equal(ion_pool_set_background(s->pool, 0), 0);
	for (int i = 0; i < HELD; i++)
		close(held[i]);
	assert_int_equal(atomic_load(&locked_reads), 0);
}

/* A pool of one 64K buffer, filled, whose worker is then held in its next
 * allocation: the one buffer, got. */
static int get_with_worker_held(struct state *s)
{
	int fd;

	assert_int_equal(ion_pool_set_hints(s->pool, "1x64K"), 0);
	assert_int_equal(ion_pool_prefill(s->pool), 0);
	atomic_store(&block_allocs, true);
	assert_int_equal(ion_pool_set_background(s->pool, 1), 0);
	fd = get(s, KiB(64));
	/* The class is empty, below its watermark: the worker refills. */
	assert_true(wait_flag(&alloc_blocked, 5000));
	return fd;
}

/*
 * With the refill thread at work, a get that finds no clean buffer does
 * not zero a dirty one itself (8 MiB is a millisecond and more on the hot
 * path): it allocates, and wakes the thread.  Here the thread is held in
 * an allocation, so that what is put back stays dirty.  A get zeroes one
 * itself only once the thread lags (as many dirty as the hint keeps
 * ready, two at least), so that the pool does not grow by a buffer a get,
 * or where the heap allocates slower than it zeroes (contiguous).
 */
static void test_get_leaves_zeroing_to_thread(void **pstate)
{
	struct state *s = *pstate;
	struct stat a, b, c;
	int fd, again, third, fourth;

	assert_int_equal(ion_pool_set_hints(s->pool, "1x64K"), 0);
	assert_int_equal(ion_pool_prefill(s->pool), 0);
	atomic_store(&block_allocs, true);
	assert_int_equal(ion_pool_set_background(s->pool, 1), 0);
	fd = get(s, KiB(64));
	assert_int_equal(stat_of(s->pool, ION_POOL_STAT_HITS), 1);
	/* The class is empty, below its watermark: the thread refills. */
	assert_true(wait_flag(&alloc_blocked, 5000));
	assert_int_equal(fstat(fd, &a), 0);
	assert_int_equal(ion_pool_put(s->pool, fd, 0), 0);
	again = get(s, KiB(64));
	assert_int_equal(fstat(again, &b), 0);
	assert_int_equal(stat_of(s->pool, ION_POOL_STAT_MISSES), 1);
	assert_int_equal(stat_of(s->pool, ION_POOL_STAT_HITS), 1);
	assert_true(a.st_ino != b.st_ino);
	/* Two dirty now: the thread lags, the get zeroes one. */
	assert_int_equal(ion_pool_put(s->pool, again, 0), 0);
	third = get(s, KiB(64));
	assert_int_equal(stat_of(s->pool, ION_POOL_STAT_HITS), 2);
	assert_int_equal(stat_of(s->pool, ION_POOL_STAT_MISSES), 1);
	assert_int_equal(fstat(third, &c), 0);
	assert_true(c.st_ino == a.st_ino || c.st_ino == b.st_ino);
	/* One dirty, but a contiguous heap: zeroed here, not allocated. */
	pool_lock(s->pool);
	s->pool->alloc_slow = true;
	s->pool->alloc_ns_mib = 0; /* unmeasured: the heap's kind decides */
	pthread_mutex_unlock(s->pool->lock);
	fourth = get(s, KiB(64));
	assert_int_equal(stat_of(s->pool, ION_POOL_STAT_HITS), 3);
	assert_int_equal(stat_of(s->pool, ION_POOL_STAT_MISSES), 1);
	atomic_store(&block_allocs, false);
	assert_int_equal(ion_pool_put(s->pool, third, 0), 0);
	assert_int_equal(ion_pool_put(s->pool, fourth, 0), 0);
	assert_int_equal(ion_pool_set_background(s->pool, 0), 0);
}

/* The costs a MiB the pool measured, set by hand. */
static void set_costs(struct ion_pool *pool, uint64_t alloc_ns_mib, uint64_t scrub_ns_mib)
{
	pool_lock(pool);
	pool->alloc_ns_mib = alloc_ns_mib;
	pool->scrub_ns_mib = scrub_ns_mib;
	pthread_mutex_unlock(pool->lock);
}

/*
 * A get that finds no clean buffer does what was measured quicker, with
 * no margin: allocation at 4 ms a MiB against a memset at 6 (not twice as
 * cheap, so the worker zeroes) still has the get allocate; a heap that
 * allocates slower than it zeroes has it zero.
 */
static void test_get_takes_the_quicker_way(void **pstate)
{
	struct state *s = *pstate;
	struct stat a, b, c;
	int fd, again, third;

	fd = get_with_worker_held(s);
	assert_int_equal(fstat(fd, &a), 0);
	assert_int_equal(ion_pool_put(s->pool, fd, 0), 0); /* dirty: the thread is held */
	set_costs(s->pool, 4000, 6000);
	again = get(s, KiB(64));
	assert_int_equal(fstat(again, &b), 0);
	assert_true(a.st_ino != b.st_ino); /* allocated, the dirty one left */
	assert_int_equal(stat_of(s->pool, ION_POOL_STAT_MISSES), 1);
	set_costs(s->pool, 6000, 4000);
	third = get(s, KiB(64));
	assert_int_equal(fstat(third, &c), 0);
	assert_true(c.st_ino == a.st_ino); /* zeroed here */
	assert_int_equal(stat_of(s->pool, ION_POOL_STAT_MISSES), 1);
	atomic_store(&block_allocs, false);
	assert_int_equal(ion_pool_put(s->pool, again, 0), 0);
	assert_int_equal(ion_pool_put(s->pool, third, 0), 0);
	assert_int_equal(ion_pool_set_background(s->pool, 0), 0);
}

/* Sets the stream's gap between gets, as pool_note_get() would. */
static void set_gap(struct ion_pool *pool, uint64_t gap_ns)
{
	pool_lock(pool);
	pool->gap_ns = gap_ns;
	pthread_mutex_unlock(pool->lock);
}

/* pool_alloc_cheaper() for size with these costs and gap. */
static bool alloc_cheaper(struct ion_pool *pool, uint64_t alloc_ns_mib, uint64_t scrub_ns_mib,
			  uint64_t gap_ns, size_t size)
{
	bool r;

	set_costs(pool, alloc_ns_mib, scrub_ns_mib);
	pool_lock(pool);
	pool->gap_ns = gap_ns;
	r = pool_alloc_cheaper(pool, size);
	pthread_mutex_unlock(pool->lock);
	return r;
}

/*
 * Where allocation was measured quicker but not twice as cheap, the worker
 * still refills by allocation once zeroing one buffer takes longer than
 * the stream's gap between gets: zeroing could not keep up.  The figures
 * are 5.10's system heap under TCG (0.5 ms a MiB to allocate, 0.75 to
 * zero) and 6.1's (1.3 and 0.44).  A put then releases the buffer rather
 * than leave it to be zeroed.
 */
static void test_alloc_where_zeroing_falls_behind(void **pstate)
{
	struct state *s = *pstate;
	int fd, again;

	fd = get_with_worker_held(s);
	again = get(s, KiB(64));
	/* 240/s: 8 MiB zeroed in 6 ms falls behind, 4 MiB in 3 keeps up */
	assert_true(alloc_cheaper(s->pool, 500000, 750000, 4166666, MiB(8)));
	assert_false(alloc_cheaper(s->pool, 500000, 750000, 4166666, MiB(4)));
	/* 60/s, and no stream */
	assert_false(alloc_cheaper(s->pool, 500000, 750000, 16666666, MiB(8)));
	assert_false(alloc_cheaper(s->pool, 500000, 750000, 0, MiB(8)));
	/* twice as cheap: allocation whatever the pace; slower: zeroing */
	assert_true(alloc_cheaper(s->pool, 300000, 750000, 0, MiB(8)));
	assert_false(alloc_cheaper(s->pool, 1300000, 440000, 1000, MiB(8)));
	/* 64 KiB zeroed in 47 us: behind a gap of 10 us, released at the put;
	 * kept to be zeroed with no stream. */
	set_costs(s->pool, 500000, 750000);
	set_gap(s->pool, 10000);
	assert_int_equal(ion_pool_put(s->pool, fd, 0), 0);
	assert_int_equal(stat_of(s->pool, ION_POOL_STAT_BYTES_HELD), 0);
	set_gap(s->pool, 0);
	assert_int_equal(ion_pool_put(s->pool, again, 0), 0);
	assert_int_equal(stat_of(s->pool, ION_POOL_STAT_BYTES_HELD), KiB(64));
	atomic_store(&block_allocs, false);
	assert_int_equal(ion_pool_set_background(s->pool, 0), 0);
}

/*
 * A pool that zeroes allocates seldom: a cost of allocation measured
 * over a second ago is replaced by the next measure, not averaged with
 * it, and where zeroing one buffer falls behind the stream, the worker
 * releases one returned buffer a second (a probe) so that its refill
 * measures allocation again; not where the heap was found full lately.
 */
static void test_stale_alloc_cost_measured_again(void **pstate)
{
	struct state *s = *pstate;
	struct ion_pool *pool = s->pool;
	uint64_t now, fresh, replaced;
	bool stale_probe, again, fresh_probe, keeps_up, full, slow;

	pool_lock(pool);
	now = pool_now_ns();
	/* 50 ms a MiB, measured just now: a 1 ms allocation averages in */
	pool->alloc_ns_mib = 50000000;
	pool->alloc_noted_ns = now;
	pool_note_alloc(pool, 1000000, MiB(1));
	fresh = pool->alloc_ns_mib;
	/* ... measured 2 s ago: it is replaced */
	pool->alloc_ns_mib = 50000000;
	pool->alloc_noted_ns = pool_now_ns() - 2000000000ull;
	pool_note_alloc(pool, 1000000, MiB(1));
	replaced = pool->alloc_ns_mib;
	/* The probe: 8 MiB zeroed in 6 ms against a gap of 4.2, allocation
	 * measured 2 s ago; once, then not again within the second. */
	now = pool_now_ns();
	pool->alloc_ns_mib = 1110000;
	pool->scrub_ns_mib = 750000;
	pool->gap_ns = 4166666;
	pool->alloc_noted_ns = now - 2000000000ull;
	pool->probe_ns = 0;
	stale_probe = pool_alloc_probe(pool, MiB(8), now);
	again = pool_alloc_probe(pool, MiB(8), now + 500000000ull);
	/* measured just now; zeroing that keeps up (4 MiB in 3 ms); no stream */
	pool->probe_ns = 0;
	pool->alloc_noted_ns = now - 100000000ull;
	fresh_probe = pool_alloc_probe(pool, MiB(8), now);
	pool->alloc_noted_ns = now - 2000000000ull;
	keeps_up = pool_alloc_probe(pool, MiB(4), now);
	pool->refill_after_ns = now + 1000000000ull; /* the heap was full */
	full = pool_alloc_probe(pool, MiB(8), now);
	pool->refill_after_ns = 0;
	pool->gap_ns = 0;
	slow = pool_alloc_probe(pool, MiB(8), now);
	pthread_mutex_unlock(pool->lock);
	/* (3 * 50 + 1) / 4 ms, and 1 ms */
	assert_int_equal(fresh, 37750000);
	assert_int_equal(replaced, 1000000);
	assert_true(stale_probe);
	assert_false(again);
	assert_false(fresh_probe);
	assert_false(keeps_up);
	assert_false(full);
	assert_false(slow);
}

/*
 * The other way round: a pool that refills by allocation zeroes nothing,
 * so a cost of zeroing measured too dear (one memset of 4 KiB timed at
 * 5 ms while the host descheduled the vCPU: 1.3 s a MiB) would stand for
 * ever.  A put keeps one returned buffer a second for the worker to zero
 * where it would release it, once zeroing was last measured over a
 * second ago, and that measure replaces the stale one.  And one measure
 * counts as four times the average at most.
 */
static void test_stale_scrub_cost_measured_again(void **pstate)
{
	struct state *s = *pstate;
	struct ion_pool *pool = s->pool;
	uint64_t now, clamped, replaced = UINT64_MAX, end;
	bool stale_probe, again, fresh_probe, full;
	int fd, second;

	pool_lock(pool);
	now = pool_now_ns();
	/* 1 ms a MiB; an allocation of 1 MiB timed at 100 ms counts as 4 */
	pool->alloc_ns_mib = 1000000;
	pool->alloc_noted_ns = now;
	pool_note_alloc(pool, 100000000ull, MiB(1));
	clamped = pool->alloc_ns_mib;
	pool->alloc_ns_mib = 0;
	pool->alloc_noted_ns = 0;
	/* the probe: zeroing measured 2 s ago; once, then not within the
	 * second; not if measured lately, nor where the heap was full */
	pool->scrub_noted_ns = now - 2000000000ull;
	stale_probe = pool_scrub_probe(pool, now);
	again = pool_scrub_probe(pool, now + 500000000ull);
	pool->scrub_probe_ns = 0;
	pool->scrub_noted_ns = now - 100000000ull;
	fresh_probe = pool_scrub_probe(pool, now);
	pool->scrub_noted_ns = now - 2000000000ull;
	pool->refill_after_ns = now + 1000000000ull;
	full = pool_scrub_probe(pool, now);
	pool->refill_after_ns = 0;
	pool->scrub_probe_ns = 0;
	pthread_mutex_unlock(pool->lock);
	assert_int_equal(clamped, 1750000); /* (3 * 1 + 4) / 4 ms */
	assert_true(stale_probe);
	assert_false(again);
	assert_false(fresh_probe);
	assert_false(full);

	/* In a pool: allocation measured 2600 times cheaper, zeroing's
	 * cost 2 s old.  The first put keeps its buffer, the second (within
	 * the second, with room in the hint) releases its own. */
	fd = get_with_worker_held(s);
	second = get(s, KiB(64));
	assert_int_equal(ion_pool_set_hints(pool, "2x64K"), 0);
	set_costs(pool, 500000, 1300000000ull);
	pool_lock(pool);
	pool->scrub_noted_ns = pool_now_ns() - 2000000000ull;
	pthread_mutex_unlock(pool->lock);
	assert_int_equal(ion_pool_put(pool, fd, 0), 0);
	assert_int_equal(stat_of(pool, ION_POOL_STAT_BYTES_HELD), KiB(64));
	assert_int_equal(ion_pool_put(pool, second, 0), 0);
	assert_int_equal(stat_of(pool, ION_POOL_STAT_BYTES_HELD), KiB(64));
	/* The worker zeroes the one kept: its measure replaces 1.3 s. */
	atomic_store(&block_allocs, false);
	end = now_ms() + 5000;
	while (replaced >= 975000000ull && now_ms() < end) {
		sleep_ms(1);
		pool_lock(pool);
		replaced = pool->scrub_ns_mib;
		pthread_mutex_unlock(pool->lock);
	}
	assert_true(replaced < 975000000ull); /* averaged, it would be 3/4 of 1.3 s */
	assert_int_equal(ion_pool_set_background(pool, 0), 0);
}

/* Called without the lock: pool_clean() of class size. */
static size_t clean_of(struct ion_pool *pool, size_t size)
{
	size_t n;

	pool_lock(pool);
	n = pool_clean(pool, size);
	pthread_mutex_unlock(pool->lock);
	return n;
}

/*
 * Where the heap was found out of memory lately, the worker zeroes what
 * comes back even where allocation was measured far cheaper: released,
 * a buffer might not come back.  Seen in a loaded sanitizer run, where a
 * memfd's zeroing was measured three times slower than its allocation: a
 * stream that ran out mid-way ended with an empty pool.
 */
static void test_full_heap_keeps_returned(void **pstate)
{
	struct state *s = *pstate;
	int fds[4];
	uint64_t end;

	assert_int_equal(ion_pool_set_hints(s->pool, "4x64K"), 0);
	for (int k = 0; k < 4; k++)
		fds[k] = get(s, KiB(64));
	assert_int_equal(ion_pool_set_background(s->pool, 1), 0);
	/* Allocation a thousand times as cheap, and the heap full now. */
	set_costs(s->pool, 1000, 1000000);
	atomic_store(&all_enomem, true);
	pool_lock(s->pool);
	s->pool->refill_after_ns = pool_now_ns() + 10000000000ull;
	pthread_mutex_unlock(s->pool->lock);
	for (int k = 0; k < 4; k++)
		assert_int_equal(ion_pool_put(s->pool, fds[k], 0), 0);
	end = now_ms() + 5000;
	while (clean_of(s->pool, KiB(64)) < 4 && now_ms() < end)
		sleep_ms(10);
	assert_int_equal(clean_of(s->pool, KiB(64)), 4);
	assert_int_equal(stat_of(s->pool, ION_POOL_STAT_BYTES_HELD), KiB(256));
	atomic_store(&all_enomem, false);
}

/*
 * With the worker running, a get that finds nothing clean reads counts
 * (so that buffers closed without a put do not make the pool grow) only
 * of buffers out for a quarter longer than their holders keep those they
 * put back: in a stream that puts its buffers back, the buffers out are
 * held, and reading them was a get's tail.  Before any put it reads them
 * all; one closed, and older than that, is read and taken back.
 */
static void test_get_reads_counts_of_old_buffers_only(void **pstate)
{
	struct state *s = *pstate;
	int first, fds[4], fresh, again, last;
	uint64_t wait;

	first = get_with_worker_held(s); /* nothing is zeroed from here on */
	set_costs(s->pool, 4000, 6000);	 /* lag 2: counts read with 4 out */
	sleep_ms(300);
	for (int k = 0; k < 4; k++)
		fds[k] = get(s, KiB(64));
	/* Each get below allocates (a miss), and reads its new buffer's
	 * fdinfo once, to know whether the kernel counts it: one read. */
	atomic_store(&main_reads, 0);
	fresh = get(s, KiB(64));
	assert_true(atomic_load(&main_reads) > 1); /* no put yet: all read */
	assert_int_equal(ion_pool_put(s->pool, first, 0), 0); /* held 300 ms */
	atomic_store(&main_reads, 0);
	again = get(s, KiB(64));
	assert_int_equal(atomic_load(&main_reads), 1); /* all out < 375 ms */
	assert_int_equal(stat_of(s->pool, ION_POOL_STAT_RECLAIMS), 0);
	/* Until every buffer out is older than that (375 ms and more on a
	 * loaded machine). */
	pool_lock(s->pool);
	wait = pool_likely_back(s->pool) / 1000000 + 50;
	pthread_mutex_unlock(s->pool->lock);
	sleep_ms((unsigned int)wait);
	close(fds[0]); /* not put: only its count tells */
	atomic_store(&main_reads, 0);
	last = get(s, KiB(64));
	assert_true(atomic_load(&main_reads) > 1);
	assert_int_equal(stat_of(s->pool, ION_POOL_STAT_RECLAIMS), 1);
	assert_int_equal(stat_of(s->pool, ION_POOL_STAT_MISSES), 7);
	atomic_store(&block_allocs, false);
	for (int k = 1; k < 4; k++)
		assert_int_equal(ion_pool_put(s->pool, fds[k], 0), 0);
	assert_int_equal(ion_pool_put(s->pool, fresh, 0), 0);
	assert_int_equal(ion_pool_put(s->pool, again, 0), 0);
	assert_int_equal(ion_pool_put(s->pool, last, 0), 0);
	assert_int_equal(ion_pool_set_background(s->pool, 0), 0);
}

/*
 * A get that left the zeroing to the thread and then found the heap out
 * of memory takes a dirty buffer and zeroes it after all: ENOMEM with a
 * buffer of the class at hand would be a failure the pool caused.
 */
static void test_get_zeroes_when_heap_is_full(void **pstate)
{
	struct state *s = *pstate;
	struct stat a, b;
	int fd, again, r;

	fd = get_with_worker_held(s);
	assert_int_equal(fstat(fd, &a), 0);
	assert_int_equal(ion_pool_put(s->pool, fd, 0), 0); /* dirty: the thread is held */
	atomic_store(&main_enomem, true);
	again = -1;
	r = ion_pool_get(s->pool, KiB(64), &again);
	atomic_store(&main_enomem, false);
	atomic_store(&block_allocs, false);
	assert_int_equal(r, 0);
	assert_int_equal(fstat(again, &b), 0);
	assert_true(a.st_ino == b.st_ino);
	assert_int_equal(stat_of(s->pool, ION_POOL_STAT_HITS), 2);
	assert_int_equal(stat_of(s->pool, ION_POOL_STAT_MISSES), 0);
	assert_int_equal(ion_pool_put(s->pool, again, 0), 0);
	assert_int_equal(ion_pool_set_background(s->pool, 0), 0);
}

struct churn {
	struct ion_pool *pool;
	atomic_bool *stop;
	int failures;
};

static void *churn_main(void *data)
{
	struct churn *c = data;

	while (!atomic_load(c->stop)) {
		int fd;

		if (ion_pool_get(c->pool, KiB(64), &fd) < 0 || ion_pool_put(c->pool, fd, 0) < 0)
			c->failures++;
	}
	return NULL;
}

/*
 * Settings changed while other threads get and put, and the refill
 * thread starts: what those read under the pool's lock alone (the
 * context's limit, whether the thread runs, whether to zero) is written
 * safely (the TSan build's check).
 */
static void test_settings_while_busy(void **pstate)
{
	struct state *s = *pstate;
	atomic_bool stop = false;
	struct churn c[2];
	pthread_t t[2];
	struct ion_pool *other;

	assert_int_equal(new_pool(s->sol, &other), 0);
	assert_int_equal(ion_pool_set_hints(s->pool, "2x64K"), 0);
	assert_int_equal(ion_pool_set_background(s->pool, 1), 0);
	for (int i = 0; i < 2; i++) {
		c[i] = (struct churn){ .pool = s->pool, .stop = &stop };
		assert_int_equal(pthread_create(&t[i], NULL, churn_main, &c[i]), 0);
	}
	for (int round = 0; round < 50; round++) {
		assert_int_equal(ion_ctx_set_pool_limit(s->ctx, round % 2 ? KiB(640) : 0), 0);
		assert_int_equal(ion_pool_set_zeroing(s->pool, round % 3 != 0), 0);
		assert_int_equal(ion_pool_set_background(other, round % 2), 0);
		sleep_ms(2);
	}
	atomic_store(&stop, true);
	for (int i = 0; i < 2; i++) {
		pthread_join(t[i], NULL);
		assert_int_equal(c[i].failures, 0);
	}
	ion_pool_unref(other);
	assert_int_equal(ion_pool_set_background(s->pool, 0), 0);
}

/* ---- hints capped ---- */

/* The last log line that said a hint was capped, and at which priority. */
static char cap_line[1024];
static atomic_int cap_priority = -1;

__attribute__((format(printf, 6, 0)))
static void capture_cap(struct ion_ctx *ctx, int priority, const char *file, int line,
			const char *fn, const char *format, va_list args)
{
	char text[1024];

	(void)ctx, (void)file, (void)line, (void)fn;
	vsnprintf(text, sizeof(text), format, args);
	if (strstr(text, "capped to")) {
		snprintf(cap_line, sizeof(cap_line), "%s", text);
		atomic_store(&cap_priority, priority);
	}
}

static void cap_log_reset(void)
{
	cap_line[0] = '\0';
	atomic_store(&cap_priority, -1);
}

/* MemTotal, read here rather than taken from the library; 0 if unknown. */
static uint64_t mem_total(void)
{
	unsigned long long kib = 0;
	char line[128];
	FILE *f = fopen("/proc/meminfo", "re");

	if (!f)
		return 0;
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, "MemTotal: %llu kB", &kib) == 1)
			break;
	fclose(f);
	return (uint64_t)kib << 10;
}

/*
 * The process's open fds, or only those whose link starts with prefix
 * ("/memfd:", the pooled buffers on the memfd heap); -1 where no fd is
 * left to read them.  No cmocka assertion, so that a forked child may use
 * it.
 */
static int fd_count(const char *prefix)
{
	DIR *dir = opendir("/proc/self/fd");
	struct dirent *e;
	int n = 0;

	if (!dir)
		return -1;
	while ((e = readdir(dir))) {
		char path[300], target[64];
		ssize_t len;

		if (e->d_name[0] == '.' || atoi(e->d_name) == dirfd(dir))
			continue;
		snprintf(path, sizeof(path), "/proc/self/fd/%s", e->d_name);
		len = prefix ? readlink(path, target, sizeof(target) - 1) : 0;
		if (prefix && len > 0)
			target[len] = '\0';
		if (!prefix || (len > 0 && strncmp(target, prefix, strlen(prefix)) == 0))
			n++;
	}
	closedir(dir);
	return n;
}

/* The fds a pool's filling took: its buffers' and the process's in all. */
struct fd_use {
	int buffers, total;
};

static struct fd_use fd_use_since(const struct fd_use *before)
{
	int buffers = fd_count("/memfd:"), total = fd_count(NULL);

	if (!before)
		return (struct fd_use){ buffers, total };
	return (struct fd_use){ buffers < 0 ? -1 : buffers - before->buffers,
				total < 0 ? -1 : total - before->total };
}

/* Within a pool's fd cap: its buffers, and the rest of the process but for
 * the context's own few fds (the refill thread's eventfd, the PSI
 * trigger). */
static bool fd_use_within(const struct fd_use *added, unsigned long long cap)
{
	return added->buffers >= 0 && (unsigned long long)added->buffers <= cap &&
	       added->total >= 0 && (unsigned long long)added->total <= cap + 4;
}

static unsigned long long nofile_soft(void)
{
	struct rlimit lim;

	assert_int_equal(getrlimit(RLIMIT_NOFILE, &lim), 0);
	return lim.rlim_cur;
}

/*
 * What the documented rule keeps of "1024x1G 1024x2G": a quarter of RAM,
 * earlier hints first, so some buffers of 1 GiB and none of 2 GiB unless
 * all 1024 of 1 GiB fit (no machine here); "nothing" below 4 GiB of RAM.
 */
static void capped_1g_2g(char *buf, size_t size)
{
	unsigned long long ones = (mem_total() / 4) >> 30;

	if (ones)
		snprintf(buf, size, "capped to %llux1G:", ones);
	else
		snprintf(buf, size, "capped to nothing:");
}

/* A temporary heaps.d folder with one file of text. */
static void heaps_d_write(char dir[64], const char *text)
{
	char path[128];
	FILE *f;

	snprintf(dir, 64, "/tmp/libion-hints-XXXXXX");
	assert_non_null(mkdtemp(dir));
	snprintf(path, sizeof(path), "%s/50-pool.conf", dir);
	f = fopen(path, "we");
	assert_non_null(f);
	fputs(text, f);
	fclose(f);
}

/* Waits (up to ms) until the refills have stopped for 500 ms; false if
 * they still go on.  No cmocka assertion (a child uses it). */
static bool refills_settle(const struct ion_pool *pool, unsigned int ms)
{
	uint64_t end = now_ms() + ms;
	unsigned long long last = stat_of(pool, ION_POOL_STAT_REFILLS);

	for (;;) {
		unsigned long long now;

		sleep_ms(500);
		now = stat_of(pool, ION_POOL_STAT_REFILLS);
		if (now == last && now > 0)
			return true;
		if (now_ms() > end)
			return false;
		last = now;
	}
}

/*
 * A program's own hint is capped as a board's is: "1024x1G 1024x2G", 3
 * TiB in 2048 buffers, would have the pool ask for more memory than the
 * machine has and for fds its program needs.  ion_pool_set_hints()
 * keeps a quarter of RAM at most (and of RLIMIT_NOFILE), earlier hints
 * first, and says so at debug level: the program asked, no error is
 * logged on its behalf.
 */
static void test_caller_hint_capped(void **pstate)
{
	struct state *s = *pstate;
	unsigned long long held, quarter = mem_total() / 4, fd_cap = nofile_soft() / 4;
	struct fd_use before = fd_use_since(NULL), added;
	char want[64];

	ion_ctx_set_log_fn(s->ctx, capture_cap);
	ion_ctx_set_log_priority(s->ctx, LOG_DEBUG);
	cap_log_reset();
	assert_int_equal(ion_pool_set_hints(s->pool, "1024x1G 1024x2G"), 0);
	assert_int_equal(ion_pool_prefill(s->pool), 0);
	held = stat_of(s->pool, ION_POOL_STAT_BYTES_HELD);
	added = fd_use_since(&before);
	print_message("held %llu bytes (a quarter of RAM: %llu), %d buffer fds, %d fds in all more (cap %llu); log: %s\n",
		      held, quarter, added.buffers, added.total, fd_cap, cap_line);
	assert_true(held <= quarter);
	assert_true(fd_use_within(&added, fd_cap));
	capped_1g_2g(want, sizeof(want));
	assert_non_null(strstr(cap_line, "'1024x1G 1024x2G'"));
	assert_non_null(strstr(cap_line, want));
	assert_int_equal(atomic_load(&cap_priority), LOG_DEBUG);
}

/* The context of a heaps.d folder, and its memfd heap's pool once an
 * allocation (of a size the hint does not name) made it. */
static struct ion_ctx *hinted_ctx(const char *dir, struct ion_pool **ret_pool)
{
	const struct ion_heap *h;
	struct ion_ctx *ctx;
	int fd = -1;

	if (ion_ctx_new(NULL, &ctx) < 0)
		return NULL;
	ion_ctx_set_log_fn(ctx, capture_cap);
	if (ion_ctx_set_heaps_path(ctx, dir) < 0 || ion_ctx_find_heap(ctx, "memfd", &h) < 0) {
		ion_ctx_unref(ctx);
		return NULL;
	}
	/* The fake count sees no mapping: the pool must not look. */
	atomic_store(maps_known(ctx, h), 1);
	if (ion_ctx_alloc(ctx, "memfd", KiB(12), 0, &fd) == 0)
		close(fd);
	*ret_pool = ion_heap_pools_peek(ion_heap_pools_of(atomic_load(ion_ctx_registry_slot(ctx))), h, 0);
	return ctx;
}

/*
 * The board's "Pool = 1024x1G 1024x2G" on the memfd heap: the heap pool's
 * refill thread would make 2048 memfds of 3 TiB together (on a DMA-BUF
 * heap it would ask the kernel for them).  Capped, the pool holds at most
 * a quarter of RAM, its fds stay far below RLIMIT_NOFILE, and the cap is
 * logged as heaps.d's problems are, at error level, with the file and
 * line, the heap, the hint as written and what is left of it.
 */
static void test_board_hint_capped(void **pstate)
{
	unsigned long long held, quarter = mem_total() / 4, fd_cap = nofile_soft() / 4;
	struct ion_pool *pool = NULL;
	struct ion_ctx *ctx;
	char dir[64], want[64], where[128];
	struct fd_use before, added;
	bool settled;

	(void)pstate;
	heaps_d_write(dir, "[Heap memfd]\nPool = 1024x1G 1024x2G\n");
	cap_log_reset();
	before = fd_use_since(NULL);
	ctx = hinted_ctx(dir, &pool);
	assert_non_null(ctx);
	assert_non_null(pool);
	settled = refills_settle(pool, 15000);
	held = stat_of(pool, ION_POOL_STAT_BYTES_HELD);
	added = fd_use_since(&before);
	print_message("held %llu bytes (a quarter of RAM: %llu), %d buffer fds, %d fds in all more (cap %llu, limit %llu); log: %s\n",
		      held, quarter, added.buffers, added.total, fd_cap, nofile_soft(), cap_line);
	ion_ctx_unref(ctx);
	assert_int_equal(test_remove_tree(dir), 0);
	assert_true(settled);
	assert_true(held <= quarter);
	assert_true(fd_use_within(&added, fd_cap));
	capped_1g_2g(want, sizeof(want));
	snprintf(where, sizeof(where), "%s/50-pool.conf:2: heap memfd: Pool = 1024x1G 1024x2G ", dir);
	assert_non_null(strstr(cap_line, where));
	assert_non_null(strstr(cap_line, want));
	assert_int_equal(atomic_load(&cap_priority), LOG_ERR);
}

#define LOW_NOFILE 256
#define LOW_NOFILE_SKIP 99

/* The child of test_board_hint_low_nofile(): 0, or bits of what failed. */
static int low_nofile_child(const char *dir)
{
	struct ion_pool *pool = NULL;
	struct ion_ctx *ctx;
	struct rlimit lim;
	unsigned long long held;
	struct fd_use before, added;
	int fd, code = 0;

	if (getrlimit(RLIMIT_NOFILE, &lim) < 0 || lim.rlim_max < LOW_NOFILE)
		return LOW_NOFILE_SKIP;
	lim.rlim_cur = LOW_NOFILE;
	if (setrlimit(RLIMIT_NOFILE, &lim) < 0)
		return 1;
	cap_log_reset();
	before = fd_use_since(NULL);
	ctx = hinted_ctx(dir, &pool);
	if (!ctx || !pool) {
		ion_ctx_unref(ctx);
		return 2;
	}
	if (!refills_settle(pool, 10000))
		code |= 4;
	held = stat_of(pool, ION_POOL_STAT_BYTES_HELD);
	added = fd_use_since(&before);
	fprintf(stderr, "limit %d: %d buffer fds, %d fds in all more (-1: none left to count them), %llu bytes held; log: %s\n",
		LOW_NOFILE, added.buffers, added.total, held, cap_line);
	if (!fd_use_within(&added, LOW_NOFILE / 4))
		code |= 8;
	if (held != (LOW_NOFILE / 4) * KiB(4))
		code |= 16;
	if (!strstr(cap_line, "heap memfd: Pool = 1024x4K 1x8K capped to 64x4K:") ||
	    atomic_load(&cap_priority) != LOG_ERR)
		code |= 32;
	/* The size the cap left out is the heap's again, not the pool's: a
	 * buffer of it closed is not kept (the thread reads counts every
	 * 100 ms). */
	if (ion_ctx_alloc(ctx, "memfd", KiB(8), 0, &fd) < 0)
		code |= 64;
	else
		close(fd);
	sleep_ms(500);
	held = stat_of(pool, ION_POOL_STAT_BYTES_HELD);
	added = fd_use_since(&before);
	fprintf(stderr, "after 8 KiB closed: %d buffer fds, %llu bytes held\n", added.buffers, held);
	if (held != (LOW_NOFILE / 4) * KiB(4) || added.buffers != LOW_NOFILE / 4)
		code |= 128;
	ion_ctx_unref(ctx);
	return code;
}

/*
 * A low fd limit (256, set in a child): the board's "Pool = 1024x4K 1x8K",
 * little memory, keeps a quarter of the limit, 64 buffers of 4 KiB, read
 * when the hints are applied, so that the refill thread leaves the
 * program three quarters of its fds rather than run it out of them.  The
 * 8 KiB the cap left out are no size the heap's pool serves or keeps.
 */
static void test_board_hint_low_nofile(void **pstate)
{
	char dir[64];
	int status;
	pid_t pid;

	(void)pstate;
	heaps_d_write(dir, "[Heap memfd]\nPool = 1024x4K 1x8K\n");
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0)
		_exit(low_nofile_child(dir));
	assert_int_equal(waitpid(pid, &status, 0), pid);
	assert_int_equal(test_remove_tree(dir), 0);
	assert_true(WIFEXITED(status));
	if (WEXITSTATUS(status) == LOW_NOFILE_SKIP)
		skip(); /* a hard limit below 256 */
	if (WEXITSTATUS(status))
		print_error("the child failed: %d\n", WEXITSTATUS(status));
	assert_int_equal(WEXITSTATUS(status), 0);
}

/* A pool of the same heap with a solution of its own, which the fake
 * allocator does not hold while it holds s's. */
static struct ion_pool *second_pool(struct state *s)
{
	struct ion_alloc_config *config;
	struct ion_solution *sol;
	struct ion_pool *pool;

	assert_int_equal(ion_alloc_config_new(&config), 0);
	assert_int_equal(ion_alloc_config_set_size(config, 4096), 0);
	assert_int_equal(ion_alloc_config_set_heap(config, "memfd"), 0);
	assert_int_equal(ion_ctx_solve(s->ctx, config, &sol), 0);
	ion_alloc_config_free(config);
	assert_ptr_not_equal(sol, s->sol);
	assert_int_equal(new_pool(sol, &pool), 0);
	ion_solution_unref(sol);
	return pool;
}

/* s's pool, with these hints, has its worker held in a refill's
 * allocation (the fake allocator holds only s's solution). */
static void hold_refill(struct state *s, const char *hints)
{
	assert_int_equal(ion_pool_set_hints(s->pool, hints), 0);
	atomic_store(&block_only, s->sol);
	atomic_store(&block_allocs, true);
	assert_int_equal(ion_pool_set_background(s->pool, 1), 0);
	assert_true(wait_flag(&alloc_blocked, 5000));
}

/* Its refill still held, then let go: it fills; both pools stop, and
 * the other is let go. */
static void release_refill(struct state *s, struct ion_pool *other)
{
	assert_int_equal(stat_of(s->pool, ION_POOL_STAT_REFILLS), 0);
	assert_true(atomic_load(&alloc_blocked));
	atomic_store(&block_allocs, false);
	assert_true(stat_reaches(s->pool, ION_POOL_STAT_REFILLS, 2, 5000));
	assert_int_equal(ion_pool_set_background(other, 0), 0);
	assert_int_equal(ion_pool_set_background(s->pool, 0), 0);
	ion_pool_unref(other);
}

/*
 * A refill worker a heap: a refill that takes seconds on one heap (CMA
 * migrating pages) does not hold up another heap's pool.  The host has
 * one heap, so the second pool is given the worker of a heap named
 * otherwise, as a pool of a second heap gets.
 */
static void test_worker_per_heap(void **pstate)
{
	struct state *s = *pstate;
	struct ion_pool *other = second_pool(s);
	int r;

	assert_int_equal(ion_pool_set_hints(other, "2x64K"), 0);
	hold_refill(s, "2x64K");
	pthread_mutex_lock(&ion_ctx_pools(s->ctx)->lock);
	pool_lock(other);
	other->background = true;
	pthread_mutex_unlock(other->lock);
	r = pool_start_worker_for(other, "other-heap");
	pool_wake(other);
	pthread_mutex_unlock(&ion_ctx_pools(s->ctx)->lock);
	/* Asserted without the lock: a failing assertion must not leave the
	 * teardown waiting for it. */
	assert_int_equal(r, 0);
	/* The other heap's pool fills while the first's refill is stuck. */
	assert_true(stat_reaches(other, ION_POOL_STAT_REFILLS, 2, 5000));
	release_refill(s, other);
}

/*
 * Two workers a heap: a pool of small buffers (a cursor's 4 KiB) is not
 * refilled by the worker that zeroes and allocates the heap's large ones
 * (8 MiB frames), so that it never waits behind a memset of megabytes.
 * The large pool's refill is held; the small pool of the same heap fills
 * all the same.
 */
static void test_small_buffers_not_behind_large(void **pstate)
{
	struct state *s = *pstate;
	struct ion_pool *small = second_pool(s);

	assert_int_equal(ion_pool_set_hints(small, "2x4K 2x256K"), 0);
	hold_refill(s, "2x1M");
	assert_int_equal(ion_pool_set_background(small, 1), 0);
	/* The same heap, another worker: both classes fill meanwhile. */
	assert_ptr_not_equal(atomic_load(&small->worker), atomic_load(&s->pool->worker));
	assert_true(stat_reaches(small, ION_POOL_STAT_REFILLS, 4, 5000));
	release_refill(s, small);
}

/*
 * Whether a child of this process, which has threads, may start one.
 * glibc lets it; ThreadSanitizer does not (it dies, 66); GCC 12's
 * AddressSanitizer does not hold its allocator's locks across fork(), so
 * a parent's thread that was in malloc() leaves the child one held, and
 * the child's new thread waits for it forever (seen with gdb in 1 run of
 * 10: SizeClassAllocator64::GetFromAllocator under AsanThread::Init);
 * qemu-user aborts in cpu_exec (cpu == current_cpu).  A test whose child
 * starts a worker is left out there.
 */
static bool child_may_start_threads(void)
{
	return !watch_under_sanitizer() && !watch_emulated();
}

/*
 * In a forked child, where no worker runs, the first worker started again
 * polls the memory pressure trigger, whichever it is.  Here the parent's
 * poller is the large buffers' worker, and the child restarts only the
 * small ones': under pressure, its pool is trimmed all the same.
 */
static void test_fork_child_polls_pressure(void **pstate)
{
	struct state *s = *pstate;
	struct ion_pool *small = second_pool(s);
	uint64_t end = now_ms() + 5000;
	int status;
	pid_t pid;

	if (!child_may_start_threads()) {
		ion_pool_unref(small);
		skip();
	}
	assert_int_equal(ion_pool_set_hints(s->pool, "2x1M"), 0);
	assert_int_equal(ion_pool_set_hints(small, "2x4K"), 0);
	assert_int_equal(ion_pool_set_background(s->pool, 1), 0);
	assert_int_equal(ion_pool_set_background(small, 1), 0);
	assert_ptr_not_equal(atomic_load(&small->worker), atomic_load(&s->pool->worker));
	while (atomic_load(&fake_psi_fd) < 0 && now_ms() < end)
		sleep_ms(1);
	assert_true(atomic_load(&fake_psi_fd) >= 0);
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		atomic_store(&fake_psi_fd, -1); /* the parent's, closed here */
		if (ion_pool_set_background(small, 1) != 0)
			_exit(2);
		while (stat_of(small, ION_POOL_STAT_BYTES_HELD) < KiB(8) && now_ms() < end + 5000)
			sleep_ms(5);
		if (stat_of(small, ION_POOL_STAT_BYTES_HELD) < KiB(8)) {
			fprintf(stderr, "child: %llu bytes held, %llu refills, %llu out, running %d, after %llu\n",
				stat_of(small, ION_POOL_STAT_BYTES_HELD), stat_of(small, ION_POOL_STAT_REFILLS),
				stat_of(small, ION_POOL_STAT_BUFFERS_OUT), (int)pool_worker_running(small),
				(unsigned long long)small->refill_after_ns);
			_exit(3);
		}
		atomic_store(&pressure_pending, true);
		pool_wake(small);
		_exit(stat_reaches(small, ION_POOL_STAT_BYTES_HELD, 0, 5000) ? 0 : 4);
	}
	assert_int_equal(waitpid(pid, &status, 0), pid);
	assert_true(WIFEXITED(status));
	if (WEXITSTATUS(status))
		print_error("the child failed: %d (4: its pool not trimmed under pressure)\n",
			    WEXITSTATUS(status));
	assert_int_equal(WEXITSTATUS(status), 0);
	assert_int_equal(ion_pool_set_background(small, 0), 0);
	assert_int_equal(ion_pool_set_background(s->pool, 0), 0);
	ion_pool_unref(small);
}

/* The inodes of the n fds: none the same (no buffer handed out twice). */
static void assert_distinct(const int *fds, int n)
{
	struct stat a, b;

	for (int i = 0; i < n; i++)
		for (int j = i + 1; j < n; j++) {
			if (fds[i] < 0 || fds[j] < 0)
				continue;
			assert_int_equal(fstat(fds[i], &a), 0);
			assert_int_equal(fstat(fds[j], &b), 0);
			assert_false(a.st_ino == b.st_ino && a.st_dev == b.st_dev);
		}
}

/*
 * Background off, and the pool trimmed until no fd of its buffers is
 * left that was not there at before.  Background off stops the worker's
 * next pass, not the one under way: that one may still close a buffer it
 * released (outside the lock) or add a refill after the trim (seen once
 * in the armhf build under qemu-user).  So it trims for 5 s at most.
 */
static void stop_and_empty(struct state *s, const struct fd_use *before)
{
	struct fd_use after;

	assert_int_equal(ion_pool_set_background(s->pool, 0), 0);
	for (uint64_t end = now_ms() + 5000;;) {
		assert_true(ion_pool_trim(s->pool, 0) >= 0);
		after = fd_use_since(before);
		if (after.buffers == 0 || now_ms() > end)
			break;
		sleep_ms(10);
	}
	assert_int_equal(after.buffers, 0);
}

#define STREAM_HELD 4

/* A stream of n gets from s->pool, holding STREAM_HELD (4), handing the oldest back
 * (or closing it, every other time: the kernel's count brings it back);
 * from get enomem_at on, the heap is out of memory. */
static void stream(struct state *s, int n, int enomem_at)
{
	int held[STREAM_HELD];

	for (int k = 0; k < STREAM_HELD; k++)
		held[k] = -1;
	for (int i = 0; i < n; i++) {
		int fd = -1;

		if (i == enomem_at)
			atomic_store(&all_enomem, true);
		if (held[i % STREAM_HELD] >= 0) {
			if (i % 2)
				assert_int_equal(ion_pool_put(s->pool, held[i % STREAM_HELD], 0), 0);
			else
				close(held[i % STREAM_HELD]);
			held[i % STREAM_HELD] = -1;
		}
		assert_int_equal(ion_pool_get(s->pool, KiB(64), &fd), 0);
		held[i % STREAM_HELD] = fd;
		assert_distinct(held, STREAM_HELD);
		sleep_ms(1);
	}
	for (int k = 0; k < STREAM_HELD; k++)
		if (held[k] >= 0)
			assert_int_equal(ion_pool_put(s->pool, held[k], 0), 0);
	atomic_store(&all_enomem, false);
}

/*
 * A heap that runs out mid-stream: the stream goes on with the buffers
 * it has (recycled, zeroed), none handed out twice; and a stream that
 * stops and starts again finds its buffers ready.  No fd is left behind.
 */
static void test_stream_runs_out_stops_restarts(void **pstate)
{
	struct state *s = *pstate;
	struct fd_use before = fd_use_since(NULL);

	assert_int_equal(ion_pool_set_hints(s->pool, "2x64K"), 0);
	assert_int_equal(ion_pool_prefill(s->pool), 0);
	assert_int_equal(ion_pool_set_background(s->pool, 1), 0);
	stream(s, 40, 20);
	/* Stopped: the worker fills the class again meanwhile. */
	sleep_ms(300);
	assert_true(stat_of(s->pool, ION_POOL_STAT_BYTES_HELD) >= KiB(128));
	stream(s, 40, -1);
	/* What the stream closed, back through the worker's reads (before
	 * the trim closes anchors the worker may be reading). */
	assert_true(stat_reaches(s->pool, ION_POOL_STAT_BUFFERS_OUT, 0, 5000));
	stop_and_empty(s, &before);
	assert_int_equal(stat_of(s->pool, ION_POOL_STAT_BUFFERS_OUT), 0);
}

/*
 * fork() while the worker is in the middle of a refill: the kernel has
 * made the buffer (its fd is open) and the pool does not hold it yet.
 * The fork does not wait for the allocation, so the child may keep an fd
 * of the new buffer; the parent then takes that buffer as out, not
 * clean, and hands it out only once the child let go of it.  The
 * child's pools are empty and it holds none of the pool's own fds.
 */
static void test_fork_during_refill(void **pstate)
{
	struct state *s = *pstate;
	int fd, got[2], status, gate[2];
	char child[16];
	struct stat st;
	dev_t dev;
	ino_t ino;
	pid_t pid;
	char c;

	assert_int_equal(ion_pool_set_hints(s->pool, "2x64K"), 0);
	fd = get(s, KiB(64)); /* an anchor the child must close */
	atomic_store(&made_ino, 0);
	atomic_store(&block_after, true);
	atomic_store(&block_allocs, true);
	assert_int_equal(ion_pool_set_background(s->pool, 1), 0);
	assert_true(wait_flag(&alloc_blocked, 5000));
	ino = atomic_load(&made_ino);
	dev = atomic_load(&made_dev);
	assert_true(ino != 0);
	assert_int_equal(pipe2(gate, O_CLOEXEC), 0);
	pid = fork(); /* the worker still holds the new buffer's fd */
	assert_true(pid >= 0);
	if (pid == 0) {
		struct ion_pool *p = s->pool;
		bool empty;

		close(gate[1]);
		pool_lock(p);
		empty = p->n_bufs == 0;
		pthread_mutex_unlock(p->lock);
		/* Its own fd of the buffer only: the anchor was closed.  It
		 * keeps the new buffer's until the parent closes the gate. */
		if (!empty || fds_on(fd) != 1 || fds_of_file(dev, ino) != 1)
			_exit(1);
		_exit(read(gate[0], &c, 1) == 0 ? 0 : 2);
	}
	close(gate[0]);
	/* Its fds count, as the kernel's count: this process must see them. */
	snprintf(child, sizeof(child), "%d", (int)pid);
	assert_int_equal(fds_of_file_in(child, dev, ino), 1);
	atomic_store(&holder_pid, pid);
	atomic_store(&block_allocs, false);
	atomic_store(&block_after, false);
	/* Two clean beside it: the hint's (the worker refills in its place). */
	assert_true(stat_reaches(s->pool, ION_POOL_STAT_BYTES_HELD, KiB(128), 5000));
	/* While the child holds it, the new buffer is not handed out. */
	for (int k = 0; k < 2; k++) {
		got[k] = get(s, KiB(64));
		assert_int_equal(fstat(got[k], &st), 0);
		assert_true(st.st_ino != ino);
	}
	close(gate[1]);
	assert_int_equal(waitpid(pid, &status, 0), pid);
	atomic_store(&holder_pid, 0);
	assert_true(WIFEXITED(status));
	assert_int_equal(WEXITSTATUS(status), 0);
	/* The child gone, its count brings the buffer back. */
	assert_true(stat_reaches(s->pool, ION_POOL_STAT_BUFFERS_OUT, 3, 5000));
	for (int k = 0; k < 2; k++)
		assert_int_equal(ion_pool_put(s->pool, got[k], 0), 0);
	assert_int_equal(ion_pool_put(s->pool, fd, 0), 0);
	assert_int_equal(ion_pool_set_background(s->pool, 0), 0);
}

/*
 * fork() while a thread releases a buffer it took off the pool (a put
 * past a limit, a refill that allocates instead of zeroing): detached
 * under the lock, closed without it, since freeing megabytes takes
 * milliseconds.  The child has a copy of the buffer's fds that no entry
 * names; its fork handler closes them from the releasing list.  The
 * parent's release then takes the entry off that list.
 */
static void test_fork_while_releasing(void **pstate)
{
	struct state *s = *pstate;
	struct pool_releasing r;
	struct pool_buf b;
	int status, fd;
	struct stat st;
	pid_t pid;

	assert_int_equal(ion_pool_set_hints(s->pool, "1x64K"), 0);
	assert_int_equal(ion_pool_prefill(s->pool), 0);
	pool_lock(s->pool);
	assert_int_equal(s->pool->n_bufs, 1);
	fd = s->pool->bufs[0].fd;
	pool_detach_to_release(s->pool, 0, false, &b, &r);
	pthread_mutex_unlock(s->pool->lock);
	assert_int_equal(fstat(fd, &st), 0);
	assert_int_equal(fds_of_file(st.st_dev, st.st_ino), 1);
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0)
		_exit(fds_of_file(st.st_dev, st.st_ino) == 0 ? 0 : 1);
	assert_int_equal(waitpid(pid, &status, 0), pid);
	pool_release_unlocked(s->pool, &b, &r);
	assert_true(WIFEXITED(status));
	if (WEXITSTATUS(status))
		print_error("the child kept the fd of a buffer being released\n");
	assert_int_equal(WEXITSTATUS(status), 0);
	assert_int_equal(fds_of_file(st.st_dev, st.st_ino), 0);
	assert_null(s->pool->releasing);
}

/* s's pool, two 64K buffers ready, with its worker held in its first
 * dup for a spare (before: before the dup is made). */
static void hold_spare_dup(struct state *s, bool before)
{
	assert_int_equal(ion_pool_set_hints(s->pool, "2x64K"), 0);
	assert_int_equal(ion_pool_prefill(s->pool), 0);
	atomic_store(&hold_before, before);
	atomic_store(&hold_dup, true);
	assert_int_equal(ion_pool_set_background(s->pool, 1), 0);
	assert_true(wait_flag(&dup_held, 5000));
}

/* A fork from another thread: the child exits 0 if the worker's spare
 * fd is not open in it, and the thread notes when fork() returned. */
static atomic_bool forked_now;

static void *fork_thread(void *arg)
{
	struct stat st;
	pid_t pid;

	(void)arg;
	pid = fork();
	if (pid == 0)
		_exit(fstat(atomic_load(&dup_made), &st) < 0 ? 0 : 1);
	atomic_store(&forked_now, true);
	return (void *)(intptr_t)pid;
}

/*
 * The worker makes spare fds without the pool's lock: a get meanwhile is
 * a hit at once.  A fork waits for the dups: a child would otherwise hold
 * a copy of a spare that is in no entry yet, which its fork handler
 * cannot close (a pooled buffer shared with the child).
 */
static void test_spares_out_of_the_way(void **pstate)
{
	struct state *s = *pstate;
	pthread_t t;
	uint64_t t0;
	void *pid;
	int fd, status;

	atomic_store(&forked_now, false);
	hold_spare_dup(s, false);
	/* A get while the worker is held in its dup. */
	t0 = now_ms();
	fd = get(s, KiB(64));
	assert_true(now_ms() - t0 < 1000);
	assert_int_equal(stat_of(s->pool, ION_POOL_STAT_HITS), 1);
	/* A fork meanwhile waits for the dups. */
	assert_int_equal(pthread_create(&t, NULL, fork_thread, NULL), 0);
	sleep_ms(200);
	assert_false(atomic_load(&forked_now));
	atomic_store(&dup_go, true);
	assert_int_equal(pthread_join(t, &pid), 0);
	assert_true((intptr_t)pid > 0);
	assert_int_equal(waitpid((pid_t)(intptr_t)pid, &status, 0), (pid_t)(intptr_t)pid);
	assert_true(WIFEXITED(status));
	if (WEXITSTATUS(status))
		print_error("the child holds the worker's spare fd %d\n", atomic_load(&dup_made));
	assert_int_equal(WEXITSTATUS(status), 0);
	assert_int_equal(ion_pool_put(s->pool, fd, 0), 0);
	assert_int_equal(ion_pool_set_background(s->pool, 0), 0);
}

/*
 * A buffer trimmed while the worker is about to dup its anchor for a
 * spare: the anchor stays open until the dup is made, so that the
 * number cannot be another file's by then (the worker would dup the
 * program's file, and its close would drop the program's record locks
 * on it).  Here the program's next fd would take that number.
 */
static void test_spare_of_a_trimmed_buffer(void **pstate)
{
	struct state *s = *pstate;
	int src, other, fd;
	struct stat st;

	hold_spare_dup(s, true);
	src = atomic_load(&dup_src);
	assert_int_equal(fstat(src, &st), 0);
	assert_true(ion_pool_trim(s->pool, 0) >= 2);
	other = memfd_create("not-the-pool's", MFD_CLOEXEC);
	assert_true(other >= 0);
	fd = fcntl(other, F_DUPFD_CLOEXEC, src); /* src itself if it is free */
	assert_true(fd >= 0);
	atomic_store(&dup_go, true);
	while (atomic_load(&dup_held))
		sleep_ms(1);
	/* The worker dup'ed the pool's buffer, never the program's file. */
	assert_true(atomic_load(&dup_ino) == st.st_ino);
	assert_int_not_equal(fd, src);
	close(fd);
	close(other);
	assert_int_equal(ion_pool_set_background(s->pool, 0), 0);
}

/* The clean buffers' spare fds, once the worker made them for all
 * (5 s at most): how many, and their numbers in spare[]. */
static size_t spares_of(struct state *s, int spare[], size_t want)
{
	uint64_t end = now_ms() + 5000;
	size_t n;

	do {
		n = 0;
		pool_lock(s->pool);
		for (size_t i = 0; i < s->pool->n_bufs; i++)
			if (s->pool->bufs[i].state == BUF_FREE && s->pool->bufs[i].spare >= 0)
				spare[n++] = s->pool->bufs[i].spare;
		pthread_mutex_unlock(s->pool->lock);
	} while (n < want && now_ms() < end && (sleep_ms(5), true));
	return n;
}

/*
 * With the worker running, a hit hands over a spare fd the worker made
 * ahead (no syscall on the hot path): the fd the get returns is one of
 * them.  The spare is no holder: a buffer put back, or closed, comes
 * back.  A forked child holds no spare.
 */
static void test_hit_hands_over_a_spare(void **pstate)
{
	struct state *s = *pstate;
	int spare[8], fd, status;
	struct stat st;
	pid_t pid;

	assert_int_equal(ion_pool_set_hints(s->pool, "2x64K"), 0);
	assert_int_equal(ion_pool_prefill(s->pool), 0);
	assert_int_equal(ion_pool_set_background(s->pool, 1), 0);
	assert_int_equal(spares_of(s, spare, 2), 2);
	fd = get(s, KiB(64));
	assert_true(fd == spare[0] || fd == spare[1]);
	assert_int_equal(fds_on(fd), 2); /* the anchor and the caller's */
	assert_int_equal(ion_pool_put(s->pool, fd, 0), 0);
	assert_true(stat_reaches(s->pool, ION_POOL_STAT_BUFFERS_OUT, 0, 5000));
	/* Closed instead: back through its count, as before. */
	assert_int_equal(spares_of(s, spare, 2), 2);
	fd = get(s, KiB(64));
	assert_true(fd == spare[0] || fd == spare[1]);
	close(fd);
	assert_true(stat_reaches(s->pool, ION_POOL_STAT_BUFFERS_OUT, 0, 5000));
	/* A forked child: no fd of a clean buffer, spare or anchor. */
	assert_int_equal(spares_of(s, spare, 2), 2);
	assert_int_equal(fstat(spare[0], &st), 0);
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0)
		_exit(fds_of_file(st.st_dev, st.st_ino) == 0 ? 0 : 1);
	assert_int_equal(waitpid(pid, &status, 0), pid);
	assert_true(WIFEXITED(status));
	assert_int_equal(WEXITSTATUS(status), 0);
	assert_int_equal(ion_pool_set_background(s->pool, 0), 0);
}

/* Polls until the worker has filled at least n hand-over slots (none
 * for 0; 5 s at most); the slotted buffers' fds and inodes in fd[] and
 * ino[], -1 and 0 after them (POOL_SLOTS in all). */
static bool slots_filled(struct state *s, unsigned int n, int fd[], ino_t ino[])
{
	uint64_t end = now_ms() + 5000;
	bool done;

	do {
		size_t k = 0;

		pool_lock(s->pool);
		done = n ? s->pool->n_slotted >= n : s->pool->n_slotted == 0;
		for (size_t i = 0; i < s->pool->n_bufs; i++)
			if (s->pool->bufs[i].slot >= 0 && k < POOL_SLOTS) {
				fd[k] = s->pool->bufs[i].spare;
				ino[k++] = s->pool->bufs[i].ino;
			}
		for (; k < POOL_SLOTS; k++) {
			fd[k] = -1;
			ino[k] = 0;
		}
		pthread_mutex_unlock(s->pool->lock);
	} while (!done && now_ms() < end && (sleep_ms(5), true));
	return done;
}

/* Whether fd (not -1) is one of the slots' in fd[] (slots_filled()). */
static bool in_slots(int fd, const int slot_fd[])
{
	for (size_t k = 0; k < POOL_SLOTS && fd >= 0; k++)
		if (slot_fd[k] == fd)
			return true;
	return false;
}

/* s's pool with hints, prefilled, its worker running and n slots
 * filled. */
static void slot_up(struct state *s, const char *hints, unsigned int n, int fd[], ino_t ino[])
{
	assert_int_equal(ion_pool_set_hints(s->pool, hints), 0);
	assert_int_equal(ion_pool_prefill(s->pool), 0);
	assert_int_equal(ion_pool_set_background(s->pool, 1), 0);
	assert_true(slots_filled(s, n, fd, ino));
}

/* Two gets in a thread of their own. */
struct slot_get {
	struct ion_pool *pool;
	int fd[2], r[2];
	atomic_bool done;
};

static void *slot_get_main(void *data)
{
	struct slot_get *g = data;

	for (int k = 0; k < 2; k++)
		g->r[k] = ion_pool_get(g->pool, KiB(64), &g->fd[k]);
	atomic_store(&g->done, true);
	return NULL;
}

/*
 * A get takes a buffer the worker published in a slot without the
 * pool's lock: here the lock is held (as by a worker whose vCPU the host
 * deschedules), and two gets of a class hinted at two are hits all the
 * same, with the two slots' fds.  The hits are counted once the lock is
 * free, and the buffers come back.
 */
static void test_get_takes_slot_without_lock(void **pstate)
{
	struct state *s = *pstate;
	struct slot_get g = { .pool = s->pool, .fd = { -1, -1 } };
	int slot_fd[POOL_SLOTS];
	ino_t ino[POOL_SLOTS];
	unsigned long long slot_hits;
	pthread_t t;
	bool quick;
	int r;

	slot_up(s, "2x64K", 2, slot_fd, ino);
	pool_lock(s->pool);
	r = pthread_create(&t, NULL, slot_get_main, &g);
	quick = r == 0 && wait_flag(&g.done, 1000);
	pthread_mutex_unlock(s->pool->lock);
	assert_int_equal(r, 0);
	assert_int_equal(pthread_join(t, NULL), 0);
	assert_true(quick);
	for (int k = 0; k < 2; k++) {
		assert_int_equal(g.r[k], 0);
		assert_true(in_slots(g.fd[k], slot_fd));
		assert_int_equal(fds_on(g.fd[k]), 2); /* the anchor and the caller's */
	}
	assert_int_not_equal(g.fd[0], g.fd[1]);
	assert_int_equal(stat_of(s->pool, ION_POOL_STAT_HITS), 2);
	assert_int_equal(stat_of(s->pool, ION_POOL_STAT_BUFFERS_OUT), 2);
	pool_lock(s->pool);
	slot_hits = s->pool->slot_hits;
	pthread_mutex_unlock(s->pool->lock);
	assert_int_equal(slot_hits, 2);
	for (int k = 0; k < 2; k++)
		assert_int_equal(ion_pool_put(s->pool, g.fd[k], 0), 0);
	assert_true(stat_reaches(s->pool, ION_POOL_STAT_BUFFERS_OUT, 0, 5000));
	/* Filled again, and emptied when background refill stops: their
	 * buffers are ordinary clean ones, which a get takes under the lock. */
	assert_true(slots_filled(s, 2, slot_fd, ino));
	assert_int_equal(ion_pool_set_background(s->pool, 0), 0);
	assert_true(slots_filled(s, 0, slot_fd, ino));
	g.fd[0] = get(s, KiB(64));
	assert_int_equal(stat_of(s->pool, ION_POOL_STAT_HITS), 3);
	assert_int_equal(ion_pool_put(s->pool, g.fd[0], 0), 0);
}

/* One get of 64K by another thread. */
struct timed_get {
	struct ion_pool *pool;
	int fd, r;
	atomic_bool done;
};

static void *timed_get_main(void *data)
{
	struct timed_get *g = data;

	g->r = ion_pool_get(g->pool, KiB(64), &g->fd);
	atomic_store(&g->done, true);
	return NULL;
}

static ino_t inode_of(int fd)
{
	struct stat st;

	assert_int_equal(fstat(fd, &st), 0);
	return st.st_ino;
}

/* A get of 64K in another thread while this one holds the pool's lock
 * (pthread's own: the buffers waiting are not entered); whether it was
 * done within ms, the lock still held.  The lock is let go after. */
static bool get_past_lock(struct state *s, struct timed_get *g, unsigned int ms)
{
	pthread_t t;
	bool done;
	int r;

	*g = (struct timed_get){ .pool = s->pool, .fd = -1, .r = 1 };
	pthread_mutex_lock(s->pool->lock);
	r = pthread_create(&t, NULL, timed_get_main, g);
	done = r == 0 && wait_flag(&g->done, ms);
	pthread_mutex_unlock(s->pool->lock);
	assert_int_equal(r, 0);
	assert_int_equal(pthread_join(t, NULL), 0);
	return done;
}

/*
 * A get waits for the pool's lock at most as long as an allocation took
 * (a holder the host deschedules keeps it for milliseconds), then
 * allocates without it.  The lock's next holder enters the buffer: a put
 * finds it, and the miss is counted.  Before any allocation was timed,
 * a get waits for the lock as long as it takes.
 */
static void test_get_allocates_past_held_lock(void **pstate)
{
	struct state *s = *pstate;
	struct timed_get g;
	int total = fd_count(NULL), first;
	unsigned long long waits, past;

	/* Nothing timed yet: the get waits for the lock. */
	assert_int_equal(atomic_load(&s->pool->lock_wait_ns), 0);
	assert_false(get_past_lock(s, &g, 100));
	assert_int_equal(g.r, 0);
	first = g.fd;
	assert_true(atomic_load(&s->pool->lock_wait_ns) > 0);
	/* Timed: past it, the get allocates with the lock still held. */
	assert_true(get_past_lock(s, &g, 2000));
	assert_int_equal(g.r, 0);
	assert_int_equal(fds_on(g.fd), 2); /* the caller's and the anchor */
	assert_int_not_equal(inode_of(g.fd), inode_of(first));
	assert_int_equal(stat_of(s->pool, ION_POOL_STAT_MISSES), 2);
	assert_int_equal(stat_of(s->pool, ION_POOL_STAT_BUFFERS_OUT), 2);
	assert_null(atomic_load(&s->pool->adopt));
	/* For the log at the pool's end: one wait, one get past the lock. */
	pool_lock(s->pool);
	waits = s->pool->lock_waits;
	past = s->pool->past_lock;
	pthread_mutex_unlock(s->pool->lock);
	assert_int_equal(waits, 1);
	assert_int_equal(past, 1);
	assert_int_equal(ion_pool_put(s->pool, g.fd, 0), 0);
	assert_int_equal(ion_pool_put(s->pool, first, 0), 0);
	assert_int_equal(stat_of(s->pool, ION_POOL_STAT_BUFFERS_OUT), 0);
	assert_int_equal(stat_of(s->pool, ION_POOL_STAT_BYTES_HELD), KiB(128));
	/* Two anchors are all the fds it added. */
	assert_int_equal(fd_count(NULL), total + 2);
}

/*
 * fork() while a buffer a get allocated waits to be entered: the child
 * closes its copy of the anchor, which no entry names yet, and keeps
 * only the caller's fd; the parent enters it as before.
 */
static void test_fork_with_buffer_to_adopt(void **pstate)
{
	struct state *s = *pstate;
	struct timed_get g;
	int status;
	pid_t pid;

	close(get(s, KiB(64))); /* an allocation timed */
	assert_true(get_past_lock(s, &g, 2000));
	assert_int_equal(g.r, 0);
	assert_non_null(atomic_load(&s->pool->adopt));
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0)
		_exit(fds_on(g.fd) == 1 && atomic_load(&s->pool->adopt) == NULL ? 0 : 1);
	assert_int_equal(waitpid(pid, &status, 0), pid);
	assert_true(WIFEXITED(status));
	if (WEXITSTATUS(status))
		print_error("the child kept the anchor of a buffer waiting to be entered\n");
	assert_int_equal(WEXITSTATUS(status), 0);
	assert_int_equal(fds_on(g.fd), 2);
	assert_int_not_equal(anchor_of(s, g.fd), -1); /* entered at last */
	assert_int_equal(ion_pool_put(s->pool, g.fd, 0), 0);
}

/*
 * Takes are settled in the order they were made, whatever their slots:
 * the stream's pace sees both gets, 1 ms apart.  Here the second slot
 * is taken first.
 */
static void test_takes_settled_in_order(void **pstate)
{
	struct state *s = *pstate;
	int slot_fd[POOL_SLOTS];
	ino_t ino[POOL_SLOTS];
	uint64_t t, v, last, gap;
	unsigned int n;
	bool full = true;

	slot_up(s, "2x64K", 2, slot_fd, ino);
	pool_lock(s->pool);
	t = pool_now_ns();
	s->pool->last_get_ns = 0;
	s->pool->gap_ns = 0;
	for (int k = 1; k >= 0; k--) {
		v = atomic_load(&s->pool->slots[k].v);
		full = full && (v & POOL_SLOT_FULL);
		atomic_store(&s->pool->slots[k].v, POOL_SLOT_TAKEN | (t + (2 - (uint64_t)k) * 1000000u));
	}
	pool_settle(s->pool);
	n = s->pool->n_slotted;
	last = s->pool->last_get_ns;
	gap = s->pool->gap_ns;
	pthread_mutex_unlock(s->pool->lock);
	assert_true(full);
	assert_int_equal(n, 0);
	assert_true(last == t + 2000000u);
	assert_true(gap == 1000000u);
	assert_int_equal(ion_pool_set_background(s->pool, 0), 0);
	for (int k = 0; k < 2; k++)
		assert_int_equal(ion_pool_put(s->pool, slot_fd[k], 0), 0);
	assert_int_equal(stat_of(s->pool, ION_POOL_STAT_BUFFERS_OUT), 0);
}

/*
 * A trim, an expiry or a pool's end empties a slot first.  A slot still
 * full: its buffer is released with its spare, which no fd of the
 * process holds after.  A slot a get took before the trim saw it: the
 * buffer is the caller's, out, and its put is accepted.  A fork leaves
 * the child no fd of a slotted buffer.
 */
static void test_slot_emptied_before_trim(void **pstate)
{
	struct state *s = *pstate;
	int slot_fd[POOL_SLOTS], fd, status;
	ino_t ino[POOL_SLOTS];
	uint64_t expiry;
	struct stat st;
	pid_t pid;

	slot_up(s, "1x64K", 1, slot_fd, ino);
	assert_int_equal(fstat(slot_fd[0], &st), 0);
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0)
		_exit(fds_of_file(st.st_dev, ino[0]) == 0 ? 0 : 1);
	assert_int_equal(waitpid(pid, &status, 0), pid);
	assert_true(WIFEXITED(status));
	assert_int_equal(WEXITSTATUS(status), 0);
	/* Full: released. */
	assert_true(ion_pool_trim(s->pool, 0) >= 1);
	assert_int_equal(fds_of_file(st.st_dev, ino[0]), 0);
	/* Taken, not settled yet: out, the caller's. */
	assert_true(slots_filled(s, 1, slot_fd, ino));
	fd = pool_slot_take(s->pool, KiB(64));
	assert_true(in_slots(fd, slot_fd));
	assert_true(ion_pool_trim(s->pool, 0) >= 0);
	assert_int_equal(fds_on(fd), 2);
	assert_int_equal(stat_of(s->pool, ION_POOL_STAT_BUFFERS_OUT), 1);
	assert_int_equal(ion_pool_put(s->pool, fd, 0), 0);
	assert_int_equal(stat_of(s->pool, ION_POOL_STAT_BUFFERS_OUT), 0);
	/* Taken while the lock is held, then every clean buffer expired
	 * and, after, every slotted one dropped (as a pool's end does):
	 * the expiry leaves it out, the drop leaves the caller's fd open. */
	assert_true(slots_filled(s, 1, slot_fd, ino));
	pool_lock(s->pool);
	fd = pool_slot_take(s->pool, KiB(64));
	for (size_t i = 0; i < s->pool->n_bufs; i++)
		if (s->pool->bufs[i].state == BUF_FREE)
			s->pool->bufs[i].since_ns = 0;
	expiry = s->pool->expiry_ns;
	s->pool->expiry_ns = 1;
	pool_expire(s->pool);
	s->pool->expiry_ns = expiry;
	pthread_mutex_unlock(s->pool->lock);
	assert_true(in_slots(fd, slot_fd));
	assert_int_equal(stat_of(s->pool, ION_POOL_STAT_BUFFERS_OUT), 1);
	assert_int_equal(ion_pool_put(s->pool, fd, 0), 0);
	assert_true(slots_filled(s, 1, slot_fd, ino));
	pool_lock(s->pool);
	fd = pool_slot_take(s->pool, KiB(64));
	for (size_t i = 0; i < s->pool->n_bufs; i++)
		if (s->pool->bufs[i].slot >= 0)
			pool_drop(s->pool, i--, false);
	pthread_mutex_unlock(s->pool->lock);
	assert_true(in_slots(fd, slot_fd));
	assert_int_equal(fds_on(fd), 1); /* the caller's alone */
	close(fd);
	assert_int_equal(ion_pool_set_background(s->pool, 0), 0);
}

/*
 * The pool's own mapping (kept from a buffer's first zeroing) is one
 * reference the pool expects; a caller's mapping is another, and holds
 * the buffer out.
 */
static void test_kept_mapping_is_not_a_holder(void **pstate)
{
	struct state *s = *pstate;
	struct stat a, b;
	void *p;
	int fd, again;

	fd = get(s, KiB(64));
	assert_int_equal(ion_pool_put(s->pool, fd, 0), 0); /* zeroed: mapped */
	fd = get(s, KiB(64));
	assert_int_equal(stat_of(s->pool, ION_POOL_STAT_HITS), 1);
	p = mmap(NULL, KiB(64), PROT_READ, MAP_SHARED, fd, 0);
	assert_true(p != MAP_FAILED);
	assert_int_equal(fstat(fd, &a), 0);
	close(fd);
	/* Mapped by the caller: not handed out again, nor taken back. */
	again = get(s, KiB(64));
	assert_int_equal(fstat(again, &b), 0);
	assert_true(a.st_ino != b.st_ino);
	assert_true(ion_pool_trim(s->pool, ~0ull) >= 0);
	assert_int_equal(stat_of(s->pool, ION_POOL_STAT_RECLAIMS), 0);
	munmap(p, KiB(64));
	assert_int_equal(ion_pool_put(s->pool, again, 0), 0);
	/* Unmapped and closed: the pool's mapping alone is left, and the
	 * buffer comes back. */
	assert_true(ion_pool_trim(s->pool, ~0ull) >= 0);
	assert_int_equal(stat_of(s->pool, ION_POOL_STAT_RECLAIMS), 1);
}

/* The log lines that name madvise. */
static atomic_int madvise_lines;

__attribute__((format(printf, 6, 0)))
static void capture_madvise(struct ion_ctx *ctx, int priority, const char *file, int line,
			    const char *fn, const char *format, va_list args)
{
	char text[1024];

	(void)ctx, (void)priority, (void)file, (void)line, (void)fn;
	vsnprintf(text, sizeof(text), format, args);
	if (strstr(text, "madvise"))
		atomic_fetch_add(&madvise_lines, 1);
}

/*
 * A kernel without madvise(2) (tinyconfig's, which the test VMs had):
 * no MADV_DONTFORK keeps a mapping from a forked child, so the pool
 * keeps none and maps the buffer for each zeroing, which still zeroes;
 * the log says so once.
 */
static void test_no_madvise_keeps_no_mapping(void **pstate)
{
	struct state *s = *pstate;
	struct stat st, again;
	unsigned char *p;
	int fd;

	ion_ctx_set_log_fn(s->ctx, capture_madvise);
	ion_ctx_set_log_priority(s->ctx, LOG_DEBUG);
	atomic_store(&madvise_lines, 0);
	atomic_store(&no_madvise, true);
	fd = get(s, KiB(64));
	assert_int_equal(fstat(fd, &st), 0);
	for (int k = 0; k < 3; k++) {
		p = mmap(NULL, KiB(64), PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
		assert_true(p != MAP_FAILED);
		memset(p, 0xa5, KiB(64));
		munmap(p, KiB(64));
		assert_int_equal(ion_pool_put(s->pool, fd, 0), 0); /* zeroed now */
		assert_int_equal(mappings_of(st.st_ino), 0);
		fd = get(s, KiB(64));
		assert_int_equal(fstat(fd, &again), 0);
		assert_true(again.st_ino == st.st_ino); /* the same buffer, a hit */
		p = mmap(NULL, KiB(64), PROT_READ, MAP_SHARED, fd, 0);
		assert_true(p != MAP_FAILED);
		for (size_t i = 0; i < KiB(64); i += 4096)
			assert_int_equal(p[i] | p[i + 4095], 0);
		munmap(p, KiB(64));
	}
	assert_int_equal(stat_of(s->pool, ION_POOL_STAT_HITS), 3);
	assert_int_equal(atomic_load(&madvise_lines), 1);
	assert_int_equal(ion_pool_put(s->pool, fd, 0), 0);
	atomic_store(&no_madvise, false);
	/* With madvise the next zeroing keeps its mapping. */
	fd = get(s, KiB(64));
	assert_int_equal(ion_pool_put(s->pool, fd, 0), 0);
	assert_int_equal(mappings_of(st.st_ino), 1);
}

/*
 * Refilling ahead of a stream: a get that finds no clean buffer while the
 * worker runs makes the worker keep one more ready (up to the hint's
 * count again); a trim forgets it.
 */
static void test_refill_ahead_of_stream(void **pstate)
{
	struct state *s = *pstate;
	int a, b;

	a = get_with_worker_held(s);
	b = get(s, KiB(64)); /* none clean: the worker is behind */
	assert_int_equal(stat_of(s->pool, ION_POOL_STAT_MISSES), 1);
	atomic_store(&block_allocs, false);
	/* Two ready now, not the hint's one. */
	assert_true(stat_reaches(s->pool, ION_POOL_STAT_BYTES_HELD, KiB(128), 5000));
	sleep_ms(300);
	assert_int_equal(stat_of(s->pool, ION_POOL_STAT_BYTES_HELD), KiB(128));
	/* A trim forgets it: back to the hint's one. */
	assert_true(ion_pool_trim(s->pool, 0) >= 0);
	pool_wake(s->pool);
	assert_true(stat_reaches(s->pool, ION_POOL_STAT_BYTES_HELD, KiB(64), 5000));
	sleep_ms(300);
	assert_int_equal(stat_of(s->pool, ION_POOL_STAT_BYTES_HELD), KiB(64));
	assert_int_equal(ion_pool_set_background(s->pool, 0), 0);
	assert_int_equal(ion_pool_put(s->pool, a, 0), 0);
	assert_int_equal(ion_pool_put(s->pool, b, 0), 0);
}

/*
 * The pool's limit holds against a refill: the worker saw room, dropped
 * the lock to allocate, and puts filled the pool to its limit meanwhile.
 * The refill's buffer is then released, not added past the limit.
 */
static void test_refill_keeps_the_limit(void **pstate)
{
	struct state *s = *pstate;
	uint64_t cost = 0, end;
	int a, b;

	assert_int_equal(ion_pool_set_hints(s->pool, "2x64K"), 0);
	assert_int_equal(ion_pool_set_max_bytes(s->pool, KiB(128)), 0);
	a = get(s, KiB(64));
	b = get(s, KiB(64));
	/* The worker finds the class empty and allocates: held there. */
	atomic_store(&block_only, NULL);
	atomic_store(&block_allocs, true);
	assert_int_equal(ion_pool_set_background(s->pool, 1), 0);
	assert_true(wait_flag(&alloc_blocked, 5000));
	/* Both back: the pool is at its limit. */
	assert_int_equal(ion_pool_put(s->pool, a, 0), 0);
	assert_int_equal(ion_pool_put(s->pool, b, 0), 0);
	assert_int_equal(stat_of(s->pool, ION_POOL_STAT_BYTES_HELD), KiB(128));
	atomic_store(&block_allocs, false);
	/* The refill noted its allocation's cost when it took the lock
	 * back, and chose in the same hold whether the buffer stays. */
	for (end = now_ms() + 5000; !cost && now_ms() < end; sleep_ms(1)) {
		pool_lock(s->pool);
		cost = s->pool->alloc_ns_mib;
		pthread_mutex_unlock(s->pool->lock);
	}
	assert_true(cost > 0);
	assert_int_equal(ion_pool_set_background(s->pool, 0), 0);
	assert_true(stat_of(s->pool, ION_POOL_STAT_HIGH_WATER) <= KiB(128));
	assert_int_equal(stat_of(s->pool, ION_POOL_STAT_REFILLS), 0);
}

#define CHARGERS 8

struct charger {
	struct ion_pool *pool;
	pthread_barrier_t *start;
	unsigned long long charged, over;
};

/* 100000 times: 4 KiB charged to c's pool and given back, and whether the
 * context's total was above 8 KiB right after a charge. */
static void *charge_loop(void *arg)
{
	struct charger *c = arg;
	struct ion_pools *all = ion_ctx_pools(c->pool->ctx);

	pthread_barrier_wait(c->start);
	for (int k = 0; k < 100000; k++) {
		pool_lock(c->pool);
		if (pool_charge(c->pool, KiB(4))) {
			c->charged++;
			c->over += atomic_load_explicit(&all->held, memory_order_relaxed) > KiB(8);
			pool_account(c->pool, -(long long)KiB(4));
		}
		pthread_mutex_unlock(c->pool->lock);
	}
	return NULL;
}

/*
 * The context's limit holds across pools.  One pool: two charges of
 * 4 KiB fit a limit of 8 KiB, a third does not and changes nothing.
 * Then eight threads, each charging a pool of its own under that pool's
 * lock and giving it back, 100000 times: right after each charge the
 * context's total is still within the limit.  Checked and then added in
 * two steps (as before), two pools that each saw 4 KiB held would both
 * pass the check and together hold 12 KiB: the refill workers of two
 * heaps, or a worker and a put.
 */
static void test_context_limit_across_pools(void **pstate)
{
	struct state *s = *pstate;
	struct ion_pools *all = ion_ctx_pools(s->ctx);
	struct ion_pool *pools[CHARGERS] = { NULL };
	struct charger c[CHARGERS];
	pthread_t threads[CHARGERS];
	pthread_barrier_t start;
	unsigned long long charged = 0;

	assert_int_equal(ion_ctx_set_pool_limit(s->ctx, KiB(8)), 0);
	pool_lock(s->pool);
	assert_true(pool_charge(s->pool, KiB(4)));
	assert_true(pool_charge(s->pool, KiB(4)));
	assert_false(pool_charge(s->pool, KiB(4)));
	assert_int_equal(s->pool->held, KiB(8));
	assert_int_equal(atomic_load(&all->held), KiB(8));
	pool_account(s->pool, -(long long)KiB(8));
	pthread_mutex_unlock(s->pool->lock);
	assert_int_equal(atomic_load(&all->held), 0);

	assert_int_equal(pthread_barrier_init(&start, NULL, CHARGERS), 0);
	for (int k = 0; k < CHARGERS; k++) {
		assert_int_equal(new_pool(s->sol, &pools[k]), 0);
		c[k] = (struct charger){ .pool = pools[k], .start = &start };
		assert_int_equal(pthread_create(&threads[k], NULL, charge_loop, &c[k]), 0);
	}
	for (int k = 0; k < CHARGERS; k++) {
		assert_int_equal(pthread_join(threads[k], NULL), 0);
		assert_int_equal(c[k].over, 0);
		charged += c[k].charged;
		ion_pool_unref(pools[k]);
	}
	pthread_barrier_destroy(&start);
	assert_true(charged > 0);
	assert_int_equal(atomic_load(&all->held), 0);
}

/* The tick the worker of s's pool looks at its pools by itself now. */
static unsigned int worker_tick_us(struct state *s)
{
	struct pool_worker *w = atomic_load(&s->pool->worker);

	return w ? atomic_load(&w->tick_us) : 0;
}

/* The wake-ups by gets so far, takes from the slots settled. */
static unsigned long long get_wakes_of(struct state *s)
{
	unsigned long long n;

	(void)stat_of(s->pool, ION_POOL_STAT_HITS); /* settles the takes */
	pool_lock(s->pool);
	n = s->pool->get_wakes;
	pthread_mutex_unlock(s->pool->lock);
	return n;
}

/*
 * A stream at a steady pace, a get each 5 ms: the worker looks at the
 * pool by itself twice a gap, so neither the gets nor the puts wake it
 * (an eventfd write that wakes a thread on an idle vCPU costs the writer
 * 0.4 to 4 ms under TCG), and the gets are hits all the same.  Before,
 * each put woke the worker, and each get at the watermark did until the
 * first put.  A stream that closes its buffers instead wakes nobody
 * either: the worker reads the counts of buffers out longer than their
 * holders keep them.  Once the gets stop for a second, the worker goes
 * back to its idle tick, and the next get at the watermark wakes it.
 */
static void test_paced_stream_wakes_nobody(void **pstate)
{
	struct state *s = *pstate;
	int held[4] = { -1, -1, -1, -1 };
	unsigned long long hits, wakes;
	uint64_t end;
	size_t n;

	assert_int_equal(ion_pool_set_hints(s->pool, "2x64K"), 0);
	assert_int_equal(ion_pool_prefill(s->pool), 0);
	assert_int_equal(ion_pool_set_background(s->pool, 1), 0);
	for (int i = 0; i < 60; i++) {
		int fd = get(s, KiB(64));

		if (held[i % 4] >= 0)
			assert_int_equal(ion_pool_put(s->pool, held[i % 4], 0), 0);
		held[i % 4] = fd;
		sleep_ms(5);
	}
	/* At most a couple, where a stall of the worker let the gap shrink
	 * below its tick (emulation, sanitizers): 56 puts woke it before. */
	wakes = s->pool->get_wakes + s->pool->put_wakes;
	print_message("paced stream of puts: %llu wake-ups, %llu hits, tick %u us\n", wakes,
		      stat_of(s->pool, ION_POOL_STAT_HITS), worker_tick_us(s));
	assert_true(wakes <= 2);
	assert_true(stat_of(s->pool, ION_POOL_STAT_HITS) >= 40);
	/* Once a gap (5 ms and what the loop adds): not the warm tick, nor idle. */
	assert_true(worker_tick_us(s) >= 5000 && worker_tick_us(s) < 50000);
	for (int k = 0; k < 4; k++)
		assert_int_equal(ion_pool_put(s->pool, held[k], 0), 0);
	hits = stat_of(s->pool, ION_POOL_STAT_HITS);
	for (int i = 0; i < 40; i++) {
		close(get(s, KiB(64)));
		sleep_ms(5);
	}
	print_message("paced stream of closes: %llu wake-ups, %llu hits\n",
		      s->pool->get_wakes + s->pool->put_wakes - wakes,
		      stat_of(s->pool, ION_POOL_STAT_HITS) - hits);
	assert_true(s->pool->get_wakes + s->pool->put_wakes - wakes <= 2);
	assert_true(stat_of(s->pool, ION_POOL_STAT_HITS) - hits >= 20);
	/* The stream gone: back to the idle tick. */
	end = now_ms() + 5000;
	while (worker_tick_us(s) != POOL_IDLE_TICK_US && now_ms() < end)
		sleep_ms(20);
	assert_int_equal(worker_tick_us(s), POOL_IDLE_TICK_US);
	/* Gets after the pause: their pace unknown and the worker idle, the
	 * first at the watermark wakes it (the pool kept some ahead, as many
	 * as it holds at most; closed, they stay out until a count). */
	wakes = get_wakes_of(s);
	pool_lock(s->pool);
	n = s->pool->n_bufs;
	pthread_mutex_unlock(s->pool->lock);
	for (size_t k = 0; k <= n && get_wakes_of(s) == wakes; k++)
		close(get(s, KiB(64)));
	assert_int_equal(get_wakes_of(s), wakes + 1);
	/* Neither that burst nor, after a pause, one get alone is a stream
	 * to follow: the worker stays at (or goes back to) its idle tick,
	 * not a second of ticks every millisecond or two. */
	sleep_ms(300);
	assert_int_equal(worker_tick_us(s), POOL_IDLE_TICK_US);
	sleep_ms(1000);
	close(get(s, KiB(64)));
	sleep_ms(300);
	assert_int_equal(worker_tick_us(s), POOL_IDLE_TICK_US);
}

/*
 * A take from a hand-over slot wakes the worker where it leaves the class
 * at its watermark, by what the worker will do until its next pass, not
 * by what it did when it filled the slot: slots filled while a stream's
 * pace brought the worker by itself must wake it once the stream is gone.
 * A burst after such a pause took every slot without a wake-up, and its
 * next get allocated (seen in a loaded TSan run).  The pool holds two
 * buffers at most here, both in slots once the stream stops.
 */
static void test_slot_take_after_stream_wakes(void **pstate)
{
	struct state *s = *pstate;
	unsigned long long wakes;
	size_t clean, full = 0, mark;
	int held = -1, a, b;
	uint64_t end;

	assert_int_equal(ion_pool_set_hints(s->pool, "2x64K"), 0);
	assert_int_equal(ion_pool_set_max_bytes(s->pool, KiB(128)), 0);
	assert_int_equal(ion_pool_prefill(s->pool), 0);
	assert_int_equal(ion_pool_set_background(s->pool, 1), 0);
	for (int i = 0; i < 60; i++) {
		int fd = get(s, KiB(64));

		if (held >= 0)
			assert_int_equal(ion_pool_put(s->pool, held, 0), 0);
		held = fd;
		sleep_ms(5);
	}
	assert_int_equal(ion_pool_put(s->pool, held, 0), 0);
	end = now_ms() + 5000;
	while (worker_tick_us(s) != POOL_IDLE_TICK_US && now_ms() < end)
		sleep_ms(20);
	assert_int_equal(worker_tick_us(s), POOL_IDLE_TICK_US);
	/* Every buffer clean and in its slot, after an idle pass. */
	end = now_ms() + 5000;
	do {
		sleep_ms(150);
		pool_lock(s->pool);
		clean = pool_clean(s->pool, KiB(64));
		mark = pool_want(s->pool, 0) / 2;
		full = 0;
		for (size_t k = 0; k < POOL_SLOTS; k++)
			full += (atomic_load(&s->pool->slots[k].v) & POOL_SLOT_FULL) != 0;
		pthread_mutex_unlock(s->pool->lock);
	} while ((full < 2 || clean != full) && now_ms() < end);
	print_message("after the stream: %zu clean, %zu in slots, watermark %zu\n", clean, full,
		      mark);
	assert_int_equal(full, 2);
	assert_int_equal(clean, 2);
	assert_true(clean - full <= mark);
	/* Both taken without the lock: nothing settles between them. */
	wakes = get_wakes_of(s);
	a = get(s, KiB(64));
	b = get(s, KiB(64));
	/* (Two, where the woken worker marked the second slot in between.) */
	assert_true(get_wakes_of(s) > wakes);
	close(a);
	close(b);
}

/* The inode of fd's file (0 if none). */
static ino_t ino_of(int fd)
{
	struct stat st;

	return fstat(fd, &st) == 0 ? st.st_ino : 0;
}

/*
 * Uncounted buffers (a memfd's: no count tells when its holders let go)
 * go into the hand-over slots too, their only fd in place of a spare: a
 * get takes one without the pool's lock, as a get under it hands over
 * that fd.  A buffer taken is out until its put (vouched), never handed
 * out twice, and once the pool is trimmed no fd of it is left.
 */
static void test_uncounted_in_slots(void **pstate)
{
	struct state *s = *pstate;
	struct fd_use before = fd_use_since(NULL);
	const struct ion_heap *h;
	unsigned long long slot_hits;
	int fds[4];
	ino_t inos[4];
	size_t full = 0;
	uint64_t end;

	assert_int_equal(ion_ctx_find_heap(s->ctx, "memfd", &h), 0);
	atomic_store(maps_known(s->ctx, h), -1);
	assert_int_equal(ion_pool_set_hints(s->pool, "2x64K"), 0);
	for (int k = 0; k < 4; k++)
		fds[k] = get(s, KiB(64));
	for (int k = 0; k < 4; k++)
		assert_int_equal(ion_pool_put(s->pool, fds[k], ION_POOL_VOUCH), 0);
	pool_lock(s->pool);
	for (size_t i = 0; i < s->pool->n_bufs; i++)
		assert_false(s->pool->bufs[i].counted);
	slot_hits = s->pool->slot_hits;
	pthread_mutex_unlock(s->pool->lock);
	assert_int_equal(ion_pool_set_background(s->pool, 1), 0);
	end = now_ms() + 5000;
	while (full < 2 && now_ms() < end) {
		sleep_ms(10);
		full = 0;
		for (size_t k = 0; k < POOL_SLOTS; k++)
			full += (atomic_load(&s->pool->slots[k].v) & POOL_SLOT_FULL) != 0;
	}
	assert_int_equal(full, 2);
	/* Four gets: two from the slots, two under the lock; four buffers. */
	for (int k = 0; k < 4; k++) {
		fds[k] = get(s, KiB(64));
		inos[k] = ino_of(fds[k]);
		assert_true(inos[k] != 0);
		for (int j = 0; j < k; j++)
			assert_true(inos[j] != inos[k]);
	}
	pool_lock(s->pool);
	pool_settle(s->pool);
	assert_true(s->pool->slot_hits >= slot_hits + 2);
	/* Out, each, and none the pool's any more: the caller holds the only fd. */
	for (size_t i = 0; i < s->pool->n_bufs; i++) {
		assert_int_equal(s->pool->bufs[i].state, BUF_OUT);
		assert_int_equal(s->pool->bufs[i].fd, -1);
	}
	pthread_mutex_unlock(s->pool->lock);
	for (int k = 0; k < 4; k++)
		assert_int_equal(ion_pool_put(s->pool, fds[k], ION_POOL_VOUCH), 0);
	assert_int_equal(stat_of(s->pool, ION_POOL_STAT_BUFFERS_OUT), 0);
	stop_and_empty(s, &before);
}

/* Waits (up to 5 s) until n of pool's slots are full. */
static bool slots_full(struct ion_pool *pool, size_t n)
{
	for (uint64_t end = now_ms() + 5000;; sleep_ms(5)) {
		size_t full = 0;

		for (size_t k = 0; k < POOL_SLOTS; k++)
			full += (atomic_load(&pool->slots[k].v) & POOL_SLOT_FULL) != 0;
		if (full >= n)
			return true;
		if (now_ms() > end)
			return false;
	}
}

/*
 * A heap's pool (a board's "Pool =") puts uncounted buffers, a memfd's,
 * in its slots too: ion_ctx_alloc() of the hinted size takes one without
 * the pool's lock.  With no put to bring them back, the pool forgets
 * each once it is out, at its next get or refill pass: after 40 rounds
 * of two allocations, closed by the program, it keeps no entry of a
 * buffer it handed out, the two of a round are never one, and at the
 * context's end no fd is left.
 */
static void test_heap_pool_uncounted_in_slots(void **pstate)
{
	struct fd_use before = fd_use_since(NULL), after;
	const struct ion_heap *h;
	struct ion_pool *pool;
	unsigned long long slot_hits;
	size_t n_bufs, unanchored;
	struct ion_ctx *ctx;
	bool full = true;
	char dir[64];
	int fd[2];

	(void)pstate;
	heaps_d_write(dir, "[Heap memfd]\nPool = 2x64K\n");
	assert_int_equal(ion_ctx_new(NULL, &ctx), 0);
	assert_int_equal(ion_ctx_set_heaps_path(ctx, dir), 0);
	assert_int_equal(ion_ctx_find_heap(ctx, "memfd", &h), 0);
	atomic_store(maps_known(ctx, h), -1); /* uncounted, as on a kernel that cannot tell */
	assert_int_equal(ion_ctx_alloc(ctx, "memfd", KiB(12), 0, &fd[0]), 0);
	close(fd[0]);
	pool = ion_heap_pools_peek(ion_heap_pools_of(atomic_load(ion_ctx_registry_slot(ctx))), h, 0);
	assert_non_null(pool);
	for (int round = 0; round < 40 && (full = slots_full(pool, 2)); round++) {
		for (int k = 0; k < 2; k++)
			assert_int_equal(ion_ctx_alloc(ctx, "memfd", KiB(64), 0, &fd[k]), 0);
		assert_true(ino_of(fd[0]) != ino_of(fd[1]));
		close(fd[0]);
		close(fd[1]);
	}
	/* Full again: the worker's pass after the last takes has run. */
	full = full && slots_full(pool, 2);
	pool_lock(pool);
	for (size_t i = 0; i < pool->n_bufs; i++)
		assert_false(pool->bufs[i].counted);
	slot_hits = pool->slot_hits;
	n_bufs = pool->n_bufs;
	unanchored = pool->n_unanchored;
	pthread_mutex_unlock(pool->lock);
	ion_ctx_unref(ctx);
	assert_int_equal(test_remove_tree(dir), 0);
	after = fd_use_since(&before);
	print_message("%llu hits from a slot, %zu entries (%zu out), fds %d more\n", slot_hits,
		      n_bufs, unanchored, after.total);
	assert_true(full);
	assert_true(slot_hits >= 40);
	assert_int_equal(unanchored, 0);
	assert_true(n_bufs <= POOL_SLOTS);
	assert_int_equal(after.buffers, 0);
	assert_int_equal(after.total, 0);
}

/*
 * Out of fds, a worker's pass stops making spares at the first dup that
 * fails: the others would fail alike, a syscall each, every pass.  The
 * gets still hand out buffers, dup'ing under the lock.
 */
static void test_spares_stop_at_emfile(void **pstate)
{
	struct state *s = *pstate;
	unsigned int polls, failed;

	assert_int_equal(ion_pool_set_hints(s->pool, "2x64K 2x128K"), 0);
	assert_int_equal(ion_pool_prefill(s->pool), 0);
	atomic_store(&dups_failed, 0);
	atomic_store(&dup_emfile, true);
	polls = atomic_load(&worker_polls);
	assert_int_equal(ion_pool_set_background(s->pool, 1), 0);
	sleep_ms(300);
	assert_int_equal(ion_pool_set_background(s->pool, 0), 0);
	failed = atomic_load(&dups_failed);
	polls = atomic_load(&worker_polls) - polls;
	atomic_store(&dup_emfile, false);
	print_message("%u dups failed in %u passes at most\n", failed, polls);
	assert_true(failed >= 1);
	assert_true(failed <= polls);
	close(get(s, KiB(64)));
	close(get(s, KiB(128)));
}

int main(void)
{
	static const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_closed_behind_held, setup, teardown),
		cmocka_unit_test_setup_teardown(test_freed_after_found_held, setup, teardown),
		cmocka_unit_test_setup_teardown(test_closed_behind_held_background, setup, teardown),
		cmocka_unit_test_setup_teardown(test_trim_releases_closed, setup, teardown),
		cmocka_unit_test_setup_teardown(test_refill_off_the_global_lock, setup, teardown),
		cmocka_unit_test_setup_teardown(test_pressure_backs_off, setup, teardown),
		cmocka_unit_test_setup_teardown(test_fork_child_polls_pressure, setup, teardown),
		cmocka_unit_test_setup_teardown(test_fork_closes_psi, setup, teardown),
		cmocka_unit_test_setup_teardown(test_unreadable_count, setup, teardown),
		cmocka_unit_test_setup_teardown(test_worker_per_heap, setup, teardown),
		cmocka_unit_test_setup_teardown(test_small_buffers_not_behind_large, setup, teardown),
		cmocka_unit_test_setup_teardown(test_refill_ahead_of_stream, setup, teardown),
		cmocka_unit_test_setup_teardown(test_paced_stream_wakes_nobody, setup, teardown),
		cmocka_unit_test_setup_teardown(test_slot_take_after_stream_wakes, setup, teardown),
		cmocka_unit_test_setup_teardown(test_uncounted_in_slots, setup, teardown),
		cmocka_unit_test_setup_teardown(test_heap_pool_uncounted_in_slots, setup, teardown),
		cmocka_unit_test_setup_teardown(test_spares_stop_at_emfile, setup, teardown),
		cmocka_unit_test_setup_teardown(test_stream_runs_out_stops_restarts, setup, teardown),
		cmocka_unit_test_setup_teardown(test_fork_during_refill, setup, teardown),
		cmocka_unit_test_setup_teardown(test_fork_while_releasing, setup, teardown),
		cmocka_unit_test_setup_teardown(test_spares_out_of_the_way, setup, teardown),
		cmocka_unit_test_setup_teardown(test_spare_of_a_trimmed_buffer, setup, teardown),
		cmocka_unit_test_setup_teardown(test_get_reads_counts_of_old_buffers_only, setup, teardown),
		cmocka_unit_test_setup_teardown(test_hit_hands_over_a_spare, setup, teardown),
		cmocka_unit_test_setup_teardown(test_get_takes_slot_without_lock, setup, teardown),
		cmocka_unit_test_setup_teardown(test_get_allocates_past_held_lock, setup, teardown),
		cmocka_unit_test_setup_teardown(test_fork_with_buffer_to_adopt, setup, teardown),
		cmocka_unit_test_setup_teardown(test_slot_emptied_before_trim, setup, teardown),
		cmocka_unit_test_setup_teardown(test_takes_settled_in_order, setup, teardown),
		cmocka_unit_test_setup_teardown(test_kept_mapping_is_not_a_holder, setup, teardown),
		cmocka_unit_test_setup_teardown(test_no_madvise_keeps_no_mapping, setup, teardown),
		cmocka_unit_test_setup_teardown(test_get_leaves_zeroing_to_thread, setup, teardown),
		cmocka_unit_test_setup_teardown(test_get_zeroes_when_heap_is_full, setup, teardown),
		cmocka_unit_test_setup_teardown(test_get_takes_the_quicker_way, setup, teardown),
		cmocka_unit_test_setup_teardown(test_alloc_where_zeroing_falls_behind, setup, teardown),
		cmocka_unit_test_setup_teardown(test_stale_alloc_cost_measured_again, setup, teardown),
		cmocka_unit_test_setup_teardown(test_stale_scrub_cost_measured_again, setup, teardown),
		cmocka_unit_test_setup_teardown(test_full_heap_keeps_returned, setup, teardown),
		cmocka_unit_test_setup_teardown(test_refill_keeps_the_limit, setup, teardown),
		cmocka_unit_test_setup_teardown(test_context_limit_across_pools, setup, teardown),
		cmocka_unit_test_setup_teardown(test_settings_while_busy, setup, teardown),
		cmocka_unit_test_setup_teardown(test_caller_hint_capped, setup, teardown),
		cmocka_unit_test_setup_teardown(test_board_hint_capped, setup, teardown),
		cmocka_unit_test_setup_teardown(test_board_hint_low_nofile, setup, teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
