// SPDX-License-Identifier: MIT
/*
 * Pools: buffers kept ready in user space, so that a hot path takes one
 * with a single fcntl() instead of waiting on the kernel.
 *
 * Each buffer of a pool has an anchor, the pool's own fd of it; a caller
 * gets a duplicate.  A buffer is handed out again only when nothing else
 * holds it: for a dma-buf, the kernel's reference count of its file
 * (fdinfo's "count", which counts fds in every process, mappings and
 * importers) must be the anchor's alone; for a memfd, which has no such
 * count, the caller must vouch.  A returned buffer is zeroed, unless the
 * pool was told not to, and its CPU access ended, so that the caches are
 * clean before a device sees it.
 */
#include <errno.h>
#include <fcntl.h>
#include <dirent.h>
#include <inttypes.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <time.h>

#include <ion/ion.h>

#include "alloc.h"
#include "context.h"
#include "fork.h"
#include "pool.h"
#include "registry.h"

enum buf_state {
	BUF_FREE,	/* clean, ready to hand out */
	BUF_DIRTY,	/* back, nothing holds it, not zeroed yet */
	BUF_SCRUB,	/* being zeroed by the background thread, unlocked */
	BUF_OUT,	/* handed out, or back but still held elsewhere */
};

struct pool_buf {
	int fd;			/* the anchor; -1 for an uncounted buffer out */
	dev_t dev;
	ino_t ino;
	size_t size;
	enum buf_state state;
	bool counted;		/* the kernel counts its references (a dma-buf) */
	uint64_t since_ns;	/* free since */
	unsigned int outs;	/* hand-outs so far: which one a count was read in */
	/* Out and found held by a get's reclaim (at looked_ns): looked at
	 * after the others until then, the wait doubling each time (reset
	 * by a hand-out). */
	uint64_t recheck_ns, looked_ns;
	unsigned int held_seen;
};

struct ion_pool {
	atomic_int refcount;
	struct ion_ctx *ctx;
	bool heap_pool;		/* the context's own: holds no context reference */
	struct ion_solution *solution;
	pthread_mutex_t lock;
	struct pool_buf *bufs;
	size_t n_bufs, cap;
	/* Where the next reclaim scan starts, a get's and the thread's:
	 * each resumes where the last stopped, so that buffers held for
	 * long at the front never hide those closed behind them. */
	size_t scan, bg_scan;
	struct ion_pool_hint *hints;
	size_t n_hints;
	bool zero;
	bool background;
	/* Its heap allocates slower than it zeroes (contiguous, CMA): a get
	 * zeroes a dirty buffer itself rather than allocate. */
	bool alloc_slow;
	unsigned long long max_bytes;
	uint64_t expiry_ns;
	unsigned long long held;
	/* Uncounted buffers out: the caller holds their only fd, and one
	 * closed without a put is forgotten by a scan of the fd table once
	 * there are forget_at of them. */
	size_t n_unanchored, forget_at;
	/* After a refill found the heap out of memory, the thread leaves it
	 * alone until then (CMA answers ENOMEM slowly, after trying to
	 * migrate pages, and the hot path shares the memory). */
	uint64_t refill_after_ns;
	/* Under the context's pools lock: the refill thread's pins on the
	 * pool while it works on it without that lock. */
	unsigned int pins;
	unsigned long long stats[ION_POOL_STAT_COUNT];
	struct ion_pool *next;	/* the context's list */
};

/* Every context's pools, for fork(): the child empties them all. */
static pthread_mutex_t all_lock = PTHREAD_MUTEX_INITIALIZER;
static struct ion_pools *all_pools;

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/*
 * The size class of a request: whole 4 KiB below 512 KiB, 64 KiB below
 * 8 MiB, 1 MiB above, the chunk sizes of the kernel's system heap.  A
 * buffer serves exactly its class: at most 4 KiB - 1 too large below
 * 512 KiB, less than 12.5 % above.  0 for 0 or an overflow.
 */
static size_t size_class(size_t len)
{
	size_t page = ion_page_size();
	size_t grain = len < (512u << 10) ? 4096 : len < (8u << 20) ? (64u << 10) : (1u << 20);

	if (grain < page)
		grain = page;
	if (len == 0 || len > SIZE_MAX - grain)
		return 0;
	return (len + grain - 1) / grain * grain;
}

/* len rounded up to pages, as ion_ctx_alloc() rounds it; 0 for 0 or an
 * overflow. */
static size_t page_round(size_t len)
{
	size_t page = ion_page_size();

	if (len == 0 || len > SIZE_MAX - (page - 1))
		return 0;
	return (len + page - 1) / page * page;
}

/*
 * The size of the buffers that serve a request (or a hint) of len bytes:
 * its size class, but in a heap's pool len rounded to pages, since a
 * board's pool must not change the size of what an allocation by name
 * gives (a hint of 600K keeps buffers of 600 KiB, not of its class).
 */
static size_t class_of(const struct ion_pool *pool, size_t len)
{
	return pool->heap_pool ? page_round(len) : size_class(len);
}

/* A number in fdinfo's text after key ("\ncount:"), or -ENOENT. */
static int fdinfo_value(const char *text, const char *key, uint64_t *ret)
{
	const char *p = strstr(text, key);
	char value[24];
	size_t n;

	if (!p)
		return -ENOENT;
	p += strlen(key);
	p += strspn(p, " \t");
	n = strcspn(p, "\n");
	if (n == 0 || n >= sizeof(value))
		return -EIO;
	memcpy(value, p, n);
	value[n] = '\0';
	return ion_parse_u64(value, 10, ret) < 0 ? -EIO : 0;
}

/*
 * How many references the kernel counts on the buffer's file, or -ENOENT
 * when it does not say (a memfd; before Linux 5.3).  *ret_ino, where
 * given, is the inode the same read saw (fdinfo's "ino", Linux 5.14 and
 * later), or 0.
 */
static int file_refs_ino(int fd, ino_t *ret_ino)
{
	_cleanup_free_ char *text = NULL;
	char path[40];
	uint64_t v, ino;
	size_t len;
	int r;

	snprintf(path, sizeof(path), "/proc/self/fdinfo/%d", fd);
	r = ion_read_file(path, 4096, &text, &len);
	if (r < 0)
		return r;
	r = fdinfo_value(text, "\ncount:", &v);
	if (r < 0)
		return r;
	if (v > INT32_MAX)
		return -EIO;
	if (ret_ino)
		*ret_ino = fdinfo_value(text, "\nino:", &ino) == 0 ? (ino_t)ino : 0;
	return (int)v;
}

static int file_refs(int fd)
{
	return file_refs_ino(fd, NULL);
}

/* Zeroes a buffer and ends CPU access, so that its caches are clean
 * before a device sees it.  0 or a negative errno (the buffer goes then). */
static int scrub(struct pool_buf *b, bool zero)
{
	void *p;
	int r;

	if (!zero)
		return ion_sync(b->fd, ION_SYNC_END | ION_SYNC_WRITE);
	p = mmap(NULL, b->size, PROT_READ | PROT_WRITE, MAP_SHARED, b->fd, 0);
	if (p == MAP_FAILED)
		return neg_errno();
	r = ion_sync(b->fd, ION_SYNC_START | ION_SYNC_WRITE);
	if (r == 0) {
		memset(p, 0, b->size);
		r = ion_sync(b->fd, ION_SYNC_END | ION_SYNC_WRITE);
	}
	munmap(p, b->size);
	return r;
}

/* ---- held bytes ---- */

static void account(struct ion_pool *pool, long long delta)
{
	struct ion_pools *all = &pool->ctx->pools;

	pool->held += (unsigned long long)delta;
	if (pool->held > pool->stats[ION_POOL_STAT_HIGH_WATER])
		pool->stats[ION_POOL_STAT_HIGH_WATER] = pool->held;
	atomic_fetch_add_explicit(&all->held, (unsigned long long)delta, memory_order_relaxed);
}

/* Whether size more bytes fit the pool's limit and the context's. */
static bool room_for(const struct ion_pool *pool, size_t size)
{
	const struct ion_pools *all = &pool->ctx->pools;
	unsigned long long total = atomic_load_explicit(&all->held, memory_order_relaxed);
	unsigned long long limit = atomic_load_explicit(&all->limit, memory_order_relaxed);

	if (pool->max_bytes && pool->held + size > pool->max_bytes)
		return false;
	return !limit || total + size <= limit;
}

/* Called with the pool's lock held: releases buffer i. */
static void drop(struct ion_pool *pool, size_t i, bool trimmed)
{
	struct pool_buf *b = &pool->bufs[i];

	if (b->state != BUF_OUT)
		account(pool, -(long long)b->size);
	if (trimmed)
		pool->stats[ION_POOL_STAT_TRIMS]++;
	if (b->fd >= 0)
		close(b->fd);
	else
		pool->n_unanchored--;
	pool->bufs[i] = pool->bufs[--pool->n_bufs];
}

/*
 * Whether the kernel counts a mapping of the heap's buffers in the file's
 * references, which the pool's safety rests on.  Found out once per heap
 * on its first pooled buffer: a mapping must add one.  (5.10's vgem moves
 * a mapping onto its own shmem file, and the dma-buf's count never sees
 * it: such buffers are treated as uncounted, like a memfd.)
 */
static bool counts_mappings(struct ion_pool *pool, const struct ion_heap *heap, int fd)
{
	atomic_int *known = heap ? (atomic_int *)&heap->maps_counted : NULL;
	int v = known ? atomic_load_explicit(known, memory_order_relaxed) : 0;
	int before, after;
	void *p;

	if (v)
		return v > 0;
	before = file_refs(fd);
	p = mmap(NULL, ion_page_size(), PROT_READ, MAP_SHARED, fd, 0);
	if (p == MAP_FAILED)
		return true; /* not mappable (a protected heap): nothing to miss */
	after = file_refs(fd);
	munmap(p, ion_page_size());
	v = before > 0 && after == before + 1 ? 1 : -1;
	if (known)
		atomic_store_explicit(known, v, memory_order_relaxed);
	if (v < 0)
		ion_dbg(pool->ctx, "heap %s: the kernel does not count mappings of its buffers; pooled only when vouched for",
			heap ? heap->name : "?");
	return v > 0;
}

/* Whether the kernel tells when nothing else holds the buffer. */
static bool is_counted(struct ion_pool *pool, const struct ion_heap *heap, int fd)
{
	return ion_fd_kind(fd) == ION_FD_DMABUF && file_refs(fd) > 0 &&
	       counts_mappings(pool, heap, fd);
}

/* Called with the lock held: forgets entry i (an uncounted buffer out,
 * whose only fd is the caller's), closing nothing. */
static void forget(struct ion_pool *pool, size_t i)
{
	pool->n_unanchored--;
	/* In order: the buffers ready stay in the order they came. */
	memmove(&pool->bufs[i], &pool->bufs[i + 1], (--pool->n_bufs - i) * sizeof(pool->bufs[0]));
}

/* Called with the lock held: a new entry for fd's buffer.  An uncounted
 * buffer out keeps no anchor: fd is then the caller's, not the pool's. */
static int add_buf(struct ion_pool *pool, int fd, size_t size, enum buf_state state,
		   bool counted)
{
	struct pool_buf *b;
	struct stat st;

	if (fstat(fd, &st) < 0)
		return neg_errno();
	if (pool->n_bufs == pool->cap) {
		size_t cap = pool->cap ? 2 * pool->cap : 8;
		struct pool_buf *grown = realloc(pool->bufs, cap * sizeof(*grown));

		if (!grown)
			return -ENOMEM;
		pool->bufs = grown;
		pool->cap = cap;
	}
	b = &pool->bufs[pool->n_bufs++];
	*b = (struct pool_buf){
		.fd = fd, .dev = st.st_dev, .ino = st.st_ino, .size = size,
		.state = state, .since_ns = now_ns(), .counted = counted,
	};
	if (state == BUF_OUT && !counted) {
		b->fd = -1;
		pool->n_unanchored++;
	}
	if (state != BUF_OUT)
		account(pool, (long long)size);
	return 0;
}

/*
 * Called with the lock held, when uncounted buffers out have piled up:
 * forgets those that no fd of this process holds any more (closed without
 * a put).  One scan of /proc/self/fd for every forget_at of them.
 */
static void forget_closed(struct ion_pool *pool)
{
	DIR *dir;
	struct dirent *e;
	bool *seen;

	if (pool->n_unanchored < (pool->forget_at ? pool->forget_at : 64))
		return;
	seen = calloc(pool->n_bufs, sizeof(*seen));
	dir = seen ? opendir("/proc/self/fd") : NULL;
	if (!dir) {
		free(seen);
		return;
	}
	while ((e = readdir(dir))) {
		struct stat st;

		if (e->d_name[0] == '.' || fstatat(dirfd(dir), e->d_name, &st, 0) < 0)
			continue;
		for (size_t i = 0; i < pool->n_bufs; i++)
			if (pool->bufs[i].fd < 0 && pool->bufs[i].dev == st.st_dev &&
			    pool->bufs[i].ino == st.st_ino)
				seen[i] = true;
	}
	closedir(dir);
	for (size_t i = pool->n_bufs; i-- > 0;)
		if (pool->bufs[i].fd < 0 && !seen[i])
			forget(pool, i); /* moves only entries after i, already seen to */
	free(seen);
	pool->forget_at = 2 * pool->n_unanchored > 64 ? 2 * pool->n_unanchored : 64;
}

/* Called with the lock held: whether a heap pool's class has as many
 * buffers ready as its hint asks, so that one more back is one too many. */
static size_t ready(const struct ion_pool *pool, size_t size);
static bool hint_full(const struct ion_pool *pool, size_t size)
{
	/* Only a heap's pool, which no caller can trim: a caller's pool
	 * keeps what comes back, up to its limits. */
	if (!pool->heap_pool)
		return false;
	for (size_t h = 0; h < pool->n_hints; h++)
		if (class_of(pool, pool->hints[h].size) == size)
			return ready(pool, size) >= pool->hints[h].count;
	return false;
}

/* Called with the lock held: buffer i, out and found free again (its
 * count is the anchor's alone), comes back dirty, or is released past a
 * limit or a full hint.  Whether it stayed. */
static bool found_free(struct ion_pool *pool, size_t i)
{
	struct pool_buf *b = &pool->bufs[i];

	if (!room_for(pool, b->size) || hint_full(pool, b->size)) {
		drop(pool, i, true);
		return false;
	}
	b->state = BUF_DIRTY;
	account(pool, (long long)b->size);
	pool->stats[ION_POOL_STAT_RECLAIMS]++;
	return true;
}

/* A get's reclaim found buffer b held: the others come first for 1 ms,
 * doubling each time, up to about a second. */
static void recheck_later(struct pool_buf *b, uint64_t now)
{
	if (b->held_seen < 11)
		b->held_seen++;
	b->recheck_ns = now + (1000000ull << (b->held_seen - 1));
	b->looked_ns = now;
}

/*
 * Called with the lock held: takes back buffers of class size (0: every
 * class) that are free again (a dma-buf whose count is the anchor's
 * alone: its holder simply closed it), reading at most max counts.  The
 * scan resumes where the last one stopped.  A get (hot) stops at the
 * first buffer it takes back, and reads first the counts of buffers not
 * found held lately, then with what is left of max the others: buffers
 * held for long do not eat the reads a get has for those just closed.
 * Whether it took one back.
 */
static bool reclaim(struct ion_pool *pool, size_t size, unsigned int max, bool hot)
{
	uint64_t now = hot ? now_ns() : 0;
	bool took = false;

	for (int pass = hot ? 0 : 1; pass < 2 && max && !took; pass++) {
		size_t i = pool->scan;

		for (size_t seen = 0; seen < pool->n_bufs && max; seen++, i++) {
			struct pool_buf *b;
			bool lately;

			if (i >= pool->n_bufs)
				i = 0;
			b = &pool->bufs[i];
			if (b->state != BUF_OUT || !b->counted || (size && b->size != size))
				continue;
			/* Pass 0 the others, pass 1 those found held lately
			 * (but not just now). */
			lately = hot && now < b->recheck_ns;
			if (pass == 0 ? lately : hot && (!lately || b->looked_ns == now))
				continue;
			max--;
			if (file_refs(b->fd) != 1) {
				if (hot)
					recheck_later(b, now);
				continue;
			}
			if (!found_free(pool, i)) {
				i--; /* the last entry moved here: looked at next (wraps) */
				continue;
			}
			took = true;
			if (hot) {
				i++;
				break;
			}
		}
		pool->scan = i;
	}
	return took;
}

/*
 * The background thread's zeroing, one buffer at a time without the lock
 * (a memset of megabytes must not stall a hot path's get): the buffer is
 * BUF_SCRUB meanwhile, which nothing else touches, and is found again by
 * its anchor, since other buffers may have moved.
 */
static void scrub_unlocked(struct ion_pool *pool)
{
	for (;;) {
		struct pool_buf copy;
		bool zero, found = false;
		int r;

		pthread_mutex_lock(&pool->lock);
		for (size_t i = 0; i < pool->n_bufs && !found; i++)
			if (pool->bufs[i].state == BUF_DIRTY) {
				pool->bufs[i].state = BUF_SCRUB;
				copy = pool->bufs[i];
				found = true;
			}
		zero = pool->zero;
		pthread_mutex_unlock(&pool->lock);
		if (!found)
			return;
		r = scrub(&copy, zero);
		pthread_mutex_lock(&pool->lock);
		for (size_t i = 0; i < pool->n_bufs; i++)
			if (pool->bufs[i].fd == copy.fd && pool->bufs[i].state == BUF_SCRUB) {
				if (r < 0) {
					drop(pool, i, false);
				} else {
					pool->bufs[i].state = BUF_FREE;
					pool->bufs[i].since_ns = now_ns();
				}
				break;
			}
		pthread_mutex_unlock(&pool->lock);
	}
}

static void expire(struct ion_pool *pool)
{
	uint64_t now;

	if (!pool->expiry_ns)
		return;
	now = now_ns();
	for (size_t i = 0; i < pool->n_bufs; i++)
		if (pool->bufs[i].state == BUF_FREE &&
		    now - pool->bufs[i].since_ns > pool->expiry_ns)
			drop(pool, i--, true);
}

/*
 * The background thread's reclaim: the kernel's counts read without the
 * lock (an fdinfo read is slow, slower still under emulation, and a hot
 * path's get must not wait for sixteen of them).  A count is trusted only
 * for the hand-out it was read in: the same fd and inode, still out, and
 * not put back and handed out again meanwhile (a count of 1 read between
 * the put and the next get is no longer true after it), when the lock is
 * taken again; where fdinfo does not give the inode (before Linux 5.14),
 * the counts are read under the lock as before.
 */
static void reclaim_unlocked(struct ion_pool *pool)
{
	struct { int fd; ino_t ino; unsigned int outs; int refs; ino_t seen; } c[16];
	size_t n = 0, i;

	pthread_mutex_lock(&pool->lock);
	expire(pool);
	/* Sixteen at a time, from where the last pass stopped. */
	i = pool->bg_scan;
	for (size_t seen = 0; seen < pool->n_bufs && n < 16; seen++, i++) {
		if (i >= pool->n_bufs)
			i = 0;
		if (pool->bufs[i].state == BUF_OUT && pool->bufs[i].counted)
			c[n++] = (typeof(c[0])){ pool->bufs[i].fd, pool->bufs[i].ino,
						 pool->bufs[i].outs, 0, 0 };
	}
	pool->bg_scan = i;
	pthread_mutex_unlock(&pool->lock);
	for (size_t k = 0; k < n; k++)
		c[k].refs = file_refs_ino(c[k].fd, &c[k].seen);
	pthread_mutex_lock(&pool->lock);
	for (size_t k = 0; k < n; k++) {
		if (c[k].refs < 0)
			continue; /* unread (out of fds or memory): next pass */
		if (!c[k].seen) {
			reclaim(pool, 0, 16, false); /* no inode in fdinfo */
			break;
		}
		if (c[k].refs != 1 || c[k].seen != c[k].ino)
			continue;
		for (i = 0; i < pool->n_bufs; i++) {
			struct pool_buf *b = &pool->bufs[i];

			if (b->fd == c[k].fd && b->ino == c[k].ino && b->state == BUF_OUT &&
			    b->outs == c[k].outs) {
				found_free(pool, i);
				break;
			}
		}
	}
	pthread_mutex_unlock(&pool->lock);
}

static ssize_t find_free(const struct ion_pool *pool, size_t size)
{
	for (size_t i = 0; i < pool->n_bufs; i++)
		if (pool->bufs[i].state == BUF_FREE && pool->bufs[i].size == size)
			return (ssize_t)i;
	return -1;
}

/* ---- the background thread ---- */

static void *refill_thread(void *arg);

static void wake(struct ion_pools *all)
{
	int fd = atomic_load_explicit(&all->wake_fd, memory_order_acquire);
	uint64_t one = 1;

	/* A full counter wakes the thread all the same: no error to mind. */
	if (fd >= 0)
		(void)!write(fd, &one, sizeof(one));
}

static int open_psi(struct ion_ctx *ctx);

/* Called with the context's pools lock held. */
static int start_thread(struct ion_ctx *ctx)
{
	struct ion_pools *all = &ctx->pools;
	sigset_t every, old;
	int r;

	if (atomic_load_explicit(&all->running, memory_order_relaxed))
		return 0;
	if (atomic_load_explicit(&all->wake_fd, memory_order_relaxed) < 0) {
		int fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);

		if (fd < 0)
			return neg_errno();
		atomic_store_explicit(&all->wake_fd, fd, memory_order_release);
	}
	/* Kept in the context, not the thread: a forked child, which has no
	 * thread, closes it with the context's other fds. */
	if (all->psi_fd < 0)
		all->psi_fd = open_psi(ctx);
	all->stop = false;
	/* The library's thread takes none of the program's signals. */
	sigfillset(&every);
	pthread_sigmask(SIG_SETMASK, &every, &old);
	r = -pthread_create(&all->thread, NULL, refill_thread, ctx);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	if (r == 0)
		atomic_store_explicit(&all->running, true, memory_order_release);
	return r;
}

/* The number of buffers of class size the pool holds ready or dirty:
 * what it holds of the class, for a heap pool's hinted count. */
static size_t ready(const struct ion_pool *pool, size_t size)
{
	size_t n = 0;

	for (size_t i = 0; i < pool->n_bufs; i++)
		if (pool->bufs[i].size == size && pool->bufs[i].state != BUF_OUT)
			n++; /* free, dirty or being zeroed: ready soon */
	return n;
}

/* The number of buffers of class size clean, which a get may hand out at
 * once: what the watermark and the refill count, so that buffers waiting
 * for the thread to zero them are no reason to let a get wait. */
static size_t clean(const struct ion_pool *pool, size_t size)
{
	size_t n = 0;

	for (size_t i = 0; i < pool->n_bufs; i++)
		if (pool->bufs[i].size == size && pool->bufs[i].state == BUF_FREE)
			n++;
	return n;
}

/* Called with the lock held: whether a hinted class fell to half. */
static bool below_watermark(const struct ion_pool *pool, size_t size)
{
	for (size_t h = 0; h < pool->n_hints; h++)
		if (class_of(pool, pool->hints[h].size) == size)
			return clean(pool, size) <= pool->hints[h].count / 2;
	return false;
}

/*
 * Fills each hinted class up to its count, allocating without the lock
 * (a kernel allocation can take milliseconds).  only_low: only classes
 * that fell to half their count (background refill).  Returns the buffers
 * added, or a negative errno from the first allocation that failed.
 */
static int fill(struct ion_pool *pool, bool only_low)
{
	int added = 0;

	pthread_mutex_lock(&pool->lock);
	if (only_low && pool->refill_after_ns && now_ns() < pool->refill_after_ns) {
		pthread_mutex_unlock(&pool->lock);
		return 0;
	}
	for (size_t h = 0; h < pool->n_hints; h++) {
		size_t size = class_of(pool, pool->hints[h].size);
		size_t have = clean(pool, size), want = pool->hints[h].count;

		if (!size || have >= want || (only_low && have > want / 2))
			continue;
		while (have < want) {
			const struct ion_heap *heap = NULL;
			bool counted = false;
			int fd, r;

			if (!room_for(pool, size))
				break;
			pthread_mutex_unlock(&pool->lock);
			r = ion_solution_alloc_len(pool->solution, size, &fd, &heap);
			if (r == 0)
				counted = is_counted(pool, heap, fd);
			pthread_mutex_lock(&pool->lock);
			if (r == 0 && (r = add_buf(pool, fd, size, BUF_FREE, counted)) < 0)
				close(fd);
			if (r < 0) {
				if (only_low)
					pool->refill_after_ns = now_ns() + 1000000000u;
				pthread_mutex_unlock(&pool->lock);
				return added ? added : r;
			}
			pool->refill_after_ns = 0;
			pool->stats[ION_POOL_STAT_REFILLS]++;
			have++;
			added++;
		}
	}
	pthread_mutex_unlock(&pool->lock);
	return added;
}

/* Memory pressure, where the kernel offers PSI: a trigger on 150 ms of
 * stall in 2 s.  -1 where there is none (or it may not be set). */
static int open_psi(struct ion_ctx *ctx)
{
	static const char trigger[] = "some 150000 2000000";
	_cleanup_free_ char *path = ion_ctx_path(ctx, "/proc/pressure/memory");
	int fd;

	if (!path)
		return -1;
	fd = open(path, O_RDWR | O_NONBLOCK | O_CLOEXEC);
	if (fd < 0)
		return -1;
	if (write(fd, trigger, sizeof(trigger)) < 0) {
		ion_dbg(ctx, "no memory pressure trigger: %m");
		close(fd);
		return -1;
	}
	return fd;
}

static int trim_pool(struct ion_pool *pool, unsigned long long keep)
{
	int released = 0;

	pthread_mutex_lock(&pool->lock);
	/* First what its holders closed: its anchor alone still pins it. */
	for (size_t i = 0; i < pool->n_bufs; i++) {
		struct pool_buf *b = &pool->bufs[i];

		if (b->state == BUF_OUT && b->counted && file_refs(b->fd) == 1 &&
		    !found_free(pool, i)) {
			released++;
			i--; /* the last entry moved here */
		}
	}
	for (size_t i = 0; i < pool->n_bufs && pool->held > keep; i++)
		if (pool->bufs[i].state == BUF_FREE || pool->bufs[i].state == BUF_DIRTY) {
			drop(pool, i--, true);
			released++;
		}
	pthread_mutex_unlock(&pool->lock);
	return released;
}

/* After memory pressure made the thread trim a pool, it refills none of
 * it for this long: the trim gave that memory back to a system short of
 * it, and the next tick would take it all again. */
#define PRESSURE_BACKOFF_NS (10 * 1000000000ull)

/* The thread's work on one pool, without the context's pools lock. */
static void tend(struct ion_ctx *ctx, struct ion_pool *pool, bool pressure)
{
	bool background;

	if (pressure) {
		int n = trim_pool(pool, 0);

		pthread_mutex_lock(&pool->lock);
		pool->refill_after_ns = now_ns() + PRESSURE_BACKOFF_NS;
		pthread_mutex_unlock(&pool->lock);
		if (n)
			ion_dbg(ctx, "memory pressure: %d pooled buffers released", n);
		return;
	}
	pthread_mutex_lock(&pool->lock);
	background = pool->background;
	pthread_mutex_unlock(&pool->lock);
	if (!background)
		return;
	reclaim_unlocked(pool);
	scrub_unlocked(pool);
	fill(pool, true);
}

static void *refill_thread(void *arg)
{
	struct ion_ctx *ctx = arg;
	struct ion_pools *all = &ctx->pools;
	/* Both set before the thread starts, closed after it ends. */
	int wake_fd = atomic_load_explicit(&all->wake_fd, memory_order_relaxed);
	int psi = all->psi_fd;

	for (;;) {
		struct pollfd fds[2] = {
			{ .fd = wake_fd, .events = POLLIN },
			{ .fd = psi, .events = POLLPRI },
		};
		uint64_t count;
		size_t n = 0;
		bool pressure;

		poll(fds, psi >= 0 ? 2 : 1, 100);
		if (fds[0].revents & POLLIN && read(wake_fd, &count, sizeof(count)) < 0)
			count = 0;
		pressure = psi >= 0 && (fds[1].revents & POLLPRI);
		/*
		 * The pools, each pinned, then the work without the lock: a
		 * refill's allocation can take seconds on CMA, and fork(),
		 * ion_pool_new() and a pool's end take this lock.  A pool's
		 * end waits for its pin (unlink_pool()).
		 */
		pthread_mutex_lock(&all->lock);
		if (all->stop) {
			pthread_mutex_unlock(&all->lock);
			break;
		}
		for (struct ion_pool *p = all->list; p; p = p->next) {
			if (n == all->snap_cap) {
				size_t more = n ? 2 * n : 16;
				struct ion_pool **grown = realloc(all->snap, more * sizeof(*grown));

				if (!grown)
					break; /* these now, the others next time */
				all->snap = grown;
				all->snap_cap = more;
			}
			all->snap[n++] = p;
			p->pins++;
		}
		pthread_mutex_unlock(&all->lock);
		for (size_t k = 0; k < n; k++)
			tend(ctx, all->snap[k], pressure);
		pthread_mutex_lock(&all->lock);
		for (size_t k = 0; k < n; k++)
			all->snap[k]->pins--;
		if (n)
			pthread_cond_broadcast(&all->unpinned);
		pthread_mutex_unlock(&all->lock);
	}
	return NULL;
}

/* ---- fork ---- */

void ion_pools_fork_prepare(void)
{
	pthread_mutex_lock(&all_lock);
	for (struct ion_pools *all = all_pools; all; all = all->next) {
		pthread_mutex_lock(&all->lock);
		for (struct ion_pool *p = all->list; p; p = p->next)
			pthread_mutex_lock(&p->lock);
	}
}

void ion_pools_fork_parent(void)
{
	for (struct ion_pools *all = all_pools; all; all = all->next) {
		for (struct ion_pool *p = all->list; p; p = p->next)
			pthread_mutex_unlock(&p->lock);
		pthread_mutex_unlock(&all->lock);
	}
	pthread_mutex_unlock(&all_lock);
}

/* The child: empty pools, no thread, none of the parent's pooled fds. */
void ion_pools_fork_child(void)
{
	for (struct ion_pools *all = all_pools; all; all = all->next) {
		int wake_fd = atomic_exchange_explicit(&all->wake_fd, -1, memory_order_relaxed);

		for (struct ion_pool *p = all->list; p; p = p->next) {
			while (p->n_bufs)
				drop(p, p->n_bufs - 1, false);
			p->pins = 0; /* the parent's thread's */
			pthread_mutex_unlock(&p->lock);
		}
		if (wake_fd >= 0)
			close(wake_fd);
		if (all->psi_fd >= 0)
			close(all->psi_fd);
		all->psi_fd = -1;
		/* A thread of the parent may have waited on it. */
		pthread_cond_init(&all->unpinned, NULL);
		atomic_store_explicit(&all->running, false, memory_order_relaxed);
		pthread_mutex_unlock(&all->lock);
	}
	pthread_mutex_unlock(&all_lock);
}

/* ---- the context's side ---- */

void ion_pools_init(struct ion_pools *pools)
{
	ion_fork_handlers_register();
	pthread_mutex_init(&pools->lock, NULL);
	atomic_init(&pools->held, 0);
	atomic_init(&pools->limit, 0);
	atomic_init(&pools->running, false);
	atomic_init(&pools->wake_fd, -1);
	pools->psi_fd = -1;
	pthread_cond_init(&pools->unpinned, NULL);
	pools->snap = NULL;
	pools->snap_cap = 0;
	pthread_mutex_lock(&all_lock);
	pools->next = all_pools;
	all_pools = pools;
	pthread_mutex_unlock(&all_lock);
}

static void pool_free(struct ion_pool *pool);

void ion_pools_stop(struct ion_pools *pools)
{
	bool joined;

	pthread_mutex_lock(&all_lock);
	for (struct ion_pools **p = &all_pools; *p; p = &(*p)->next)
		if (*p == pools) {
			*p = pools->next;
			break;
		}
	pthread_mutex_unlock(&all_lock);
	pthread_mutex_lock(&pools->lock);
	pools->stop = true;
	joined = atomic_exchange_explicit(&pools->running, false, memory_order_acq_rel);
	wake(pools);
	pthread_mutex_unlock(&pools->lock);
	if (joined)
		pthread_join(pools->thread, NULL);
}

void ion_pools_fini(struct ion_pools *pools)
{
	int wake_fd = atomic_load_explicit(&pools->wake_fd, memory_order_relaxed);

	/* Users' pools hold the context alive, and the heap pools went
	 * with their registries: none is left. */
	if (wake_fd >= 0)
		close(wake_fd);
	if (pools->psi_fd >= 0)
		close(pools->psi_fd);
	free(pools->snap);
	pthread_cond_destroy(&pools->unpinned);
	pthread_mutex_destroy(&pools->lock);
}

/* ---- pools ---- */

static void unlink_pool(struct ion_pool *pool)
{
	struct ion_pools *all = &pool->ctx->pools;

	pthread_mutex_lock(&all->lock);
	for (struct ion_pool **p = &all->list; *p; p = &(*p)->next)
		if (*p == pool) {
			*p = pool->next;
			break;
		}
	/* Off the list, but the refill thread may still work on it. */
	while (pool->pins)
		pthread_cond_wait(&all->unpinned, &all->lock);
	pthread_mutex_unlock(&all->lock);
}

static void pool_free(struct ion_pool *pool)
{
	const unsigned long long *st = pool->stats;

	ion_dbg(pool->ctx, "%spool done: %llu hits, %llu misses, %llu refills, %llu reclaims, %llu trims, %llu bytes at most",
		pool->heap_pool ? "heap " : "", st[ION_POOL_STAT_HITS], st[ION_POOL_STAT_MISSES],
		st[ION_POOL_STAT_REFILLS], st[ION_POOL_STAT_RECLAIMS], st[ION_POOL_STAT_TRIMS],
		st[ION_POOL_STAT_HIGH_WATER]);
	unlink_pool(pool);
	pthread_mutex_lock(&pool->lock);
	while (pool->n_bufs)
		drop(pool, pool->n_bufs - 1, false);
	pthread_mutex_unlock(&pool->lock);
	free(pool->bufs);
	free(pool->hints);
	pthread_mutex_destroy(&pool->lock);
	ion_solution_unref(pool->solution);
	if (!pool->heap_pool)
		ion_ctx_unref(pool->ctx);
	free(pool);
}

/* ---- hints, and what they may ask for ---- */

/*
 * A hint is a wish, the administrator's or the program's, and the refill
 * thread makes it come true unasked: a board's "Pool = 1024x1G 1024x2G"
 * (or one written for a larger machine) would take 2048 fds and 3 TiB.
 * So what a pool's hints keep together is capped when they are set.
 */

/* The share of RAM a pool's hinted buffers may take together: a pool is a
 * cache ahead of demand, and its buffers are pinned (no shrinker gives a
 * dma-buf's pages back; PSI trims only once the system stalls), so three
 * quarters stay for the buffers the program holds and for the system.
 * Android's system heap allows one buffer half of RAM; a cache, less. */
#define HINT_RAM_SHARE 4
/* The share of the soft RLIMIT_NOFILE: a pooled buffer holds an fd for the
 * pool's life and a get adds the caller's, so a pool of N costs up to 2N
 * fds; three quarters of the limit stay the program's. */
#define HINT_NOFILE_SHARE 4

struct hint_limits {
	uint64_t max_len;	/* one buffer: the largest its heaps give */
	uint64_t bytes;		/* all the hinted buffers together */
	const char *bytes_why;
	uint64_t buffers;	/* their number: each holds an fd */
	uint64_t nofile;	/* the soft limit that came from, 0: none */
};

/* Where a pool's hints came from, which decides how a cap is logged. */
enum hints_origin {
	HINTS_CALLER,	/* ion_pool_set_hints(): the program's own */
	HINTS_DEVICE,	/* a device's Pool (heaps.d, udev), at ion_pool_new() */
	HINTS_HEAP,	/* the heap's Pool in heaps.d: a heap pool */
};

/* The machine's RAM: the registry's MemTotal (the sysroot's meminfo),
 * else what the kernel says; 0 if neither knows. */
static uint64_t ram_total(const struct ion_registry *reg)
{
	long pages = sysconf(_SC_PHYS_PAGES);

	if (reg && reg->mem_total)
		return reg->mem_total;
	return pages > 0 ? (uint64_t)pages * ion_page_size() : 0;
}

/* What a heap's buffers come out of: a CMA heap's the CMA area (the rule
 * registry.c gives its largest buffer), any other's the RAM. */
static uint64_t heap_memory(const struct ion_registry *reg, const struct ion_heap *h,
			    uint64_t ram)
{
	if (reg && reg->cma_total &&
	    (h->type == ION_HEAP_TYPE_DMA || ion_is_cma_name(h->kernel_name)))
		return reg->cma_total;
	return ram;
}

/* Read when the hints are set: the fd limit is the one of that moment. */
static void hint_limits_read(const struct ion_pool *pool, struct hint_limits *lim)
{
	const struct ion_registry *reg =
		atomic_load_explicit(&pool->ctx->registry, memory_order_acquire);
	int n = ion_solution_get_heap_count(pool->solution);
	uint64_t ram = ram_total(reg), memory = n > 0 ? 0 : ram;
	struct rlimit nofile;

	*lim = (struct hint_limits){ .max_len = n > 0 ? 0 : UINT64_MAX };
	/* The solution allocates from any of its heaps: the most any gives. */
	for (int i = 0; i < n; i++) {
		const struct ion_heap *h = ion_solution_get_heap(pool->solution, (unsigned int)i);
		uint64_t m = heap_memory(reg, h, ram);

		if (h->max_len > lim->max_len)
			lim->max_len = h->max_len;
		if (m > memory)
			memory = m;
	}
	lim->bytes = ram ? ram / HINT_RAM_SHARE : UINT64_MAX;
	lim->bytes_why = "a quarter of RAM";
	if (memory && memory < lim->bytes) {
		lim->bytes = memory;
		lim->bytes_why = "the heap's CMA area";
	}
	lim->buffers = UINT64_MAX;
	if (getrlimit(RLIMIT_NOFILE, &nofile) == 0 && nofile.rlim_cur != RLIM_INFINITY) {
		lim->nofile = nofile.rlim_cur;
		lim->buffers = nofile.rlim_cur / HINT_NOFILE_SHARE;
	}
}

/*
 * Caps hints in place to lim, in the order they are written (the first
 * wish first): a size no heap of the pool gives is left out, a count
 * lowered to what the bytes and fds left allow, a hint left with none
 * dropped.  Counts at the size the pool allocates (class_of()).  *n
 * becomes the number kept; returns whether anything was cut.
 */
static bool hints_cap(const struct ion_pool *pool, const struct hint_limits *lim,
		      struct ion_pool_hint *v, size_t *n)
{
	uint64_t bytes = 0, buffers = 0;
	bool cut = false;
	size_t kept = 0;

	for (size_t i = 0; i < *n; i++) {
		uint64_t size = v[i].size <= SIZE_MAX ? class_of(pool, (size_t)v[i].size) : 0;
		uint64_t count = v[i].count, room;

		if (!size || size > lim->max_len) {
			cut = true;
			continue;
		}
		room = (lim->bytes - bytes) / size;
		if (room > lim->buffers - buffers)
			room = lim->buffers - buffers;
		if (count > room) {
			count = room;
			cut = true;
		}
		if (!count)
			continue;
		bytes += count * size;
		buffers += count;
		v[kept] = v[i];
		v[kept++].count = (uint32_t)count;
	}
	*n = kept;
	return cut;
}

/* Hints as heaps.d writes them ("8x1M 4x8M"), or "nothing"; NULL on ENOMEM. */
static char *hints_format(const struct ion_pool_hint *v, size_t n)
{
	struct ion_conf_field f = {
		.set = true, .v.pool = { .v = (struct ion_pool_hint *)v, .n = n },
	};

	return n ? ion_conf_field_format(ION_KEY_POOL, &f) : strdup("nothing");
}

/* Where the board set the heap's Pool ("file:line"), or NULL. */
static const char *heap_pool_source(const struct ion_heap *heap)
{
	const char *key, *value, *source;

	for (unsigned int i = 0; ion_attrs_get(&heap->attrs, i, &key, &value, &source) == 0; i++)
		if (strcmp(key, "Pool") == 0)
			return source;
	return NULL;
}

/*
 * Says what a cap kept of the hints and why.  A board's or a device's
 * hint is the system's configuration, wrong for this machine or this
 * process: logged as heaps.d's own problems are, at error level, where
 * the administrator looks.  A program's own is its caller's business (the
 * call succeeds): debug level, as the library logs nothing at error
 * level on its caller's behalf.
 */
static void hints_log_cap(const struct ion_pool *pool, enum hints_origin origin,
			  const struct ion_pool_hint *asked, size_t n_asked,
			  const struct ion_pool_hint *kept, size_t n_kept,
			  const struct hint_limits *lim)
{
	const struct ion_heap *heap = ion_solution_get_heap(pool->solution, 0);
	const char *name = heap ? heap->name : "?";
	const char *source = heap && origin == HINTS_HEAP ? heap_pool_source(heap) : NULL;
	_cleanup_free_ char *was = hints_format(asked, n_asked);
	_cleanup_free_ char *now = hints_format(kept, n_kept);
	char why[256];

	if (!was || !now)
		return;
	snprintf(why, sizeof(why),
		 "a pool's hints keep %s at most (%" PRIu64 " MiB), buffers of %" PRIu64
		 " MiB at most (the largest its heap gives), and %" PRIu64
		 " buffers at most (a quarter of the %" PRIu64 " fds RLIMIT_NOFILE allows)",
		 lim->bytes_why, lim->bytes >> 20, lim->max_len >> 20, lim->buffers, lim->nofile);
	if (origin == HINTS_CALLER)
		ion_dbg(pool->ctx, "heap %s: pool hints '%s' capped to %s: %s", name, was, now, why);
	else if (source)
		ion_err(pool->ctx, "%s: heap %s: Pool = %s capped to %s: %s", source, name, was, now,
			why);
	else
		ion_err(pool->ctx, "heap %s: %s Pool = %s capped to %s: %s", name,
			origin == HINTS_DEVICE ? "a device's" : "the board's", was, now, why);
}

static int set_hints(struct ion_pool *pool, const struct ion_pool_hint *hints, size_t n,
		     enum hints_origin origin)
{
	struct ion_pool_hint *copy = n ? malloc(n * sizeof(*copy)) : NULL;
	struct hint_limits lim;
	size_t kept = n;

	if (n && !copy)
		return -ENOMEM;
	if (n)
		memcpy(copy, hints, n * sizeof(*copy));
	hint_limits_read(pool, &lim);
	if (hints_cap(pool, &lim, copy, &kept))
		hints_log_cap(pool, origin, hints, n, copy, kept, &lim);
	if (!kept) {
		free(copy);
		copy = NULL;
	}
	pthread_mutex_lock(&pool->lock);
	free(pool->hints);
	pool->hints = copy;
	pool->n_hints = kept;
	pthread_mutex_unlock(&pool->lock);
	return 0;
}

static int pool_create(struct ion_ctx *ctx, struct ion_solution *solution,
		       bool heap_pool, bool background, struct ion_pool **ret)
{
	struct ion_pools *all = &ctx->pools;
	struct ion_pool *pool = calloc(1, sizeof(*pool));
	const struct ion_heap *heap;

	if (!pool)
		return -ENOMEM;
	atomic_init(&pool->refcount, 1);
	pthread_mutex_init(&pool->lock, NULL);
	pool->ctx = heap_pool ? ctx : ion_ctx_ref(ctx);
	pool->heap_pool = heap_pool;
	pool->solution = ion_solution_ref(solution);
	pool->zero = true;
	heap = ion_solution_get_heap(solution, 0);
	pool->alloc_slow = heap && (heap->props & ION_HEAP_PROP_CONTIGUOUS);
	/* Set before the pool is listed: the thread reads it from then on. */
	pool->background = background;
	pthread_mutex_lock(&all->lock);
	pool->next = all->list;
	all->list = pool;
	pthread_mutex_unlock(&all->lock);
	*ret = pool;
	return 0;
}

ION_EXPORT int ion_pool_new(struct ion_solution *solution, struct ion_pool **ret_pool)
{
	const struct ion_pool_hint *hints;
	struct ion_pool *pool;
	size_t n = 0;
	int r;

	if (!solution || !ret_pool)
		return -EINVAL;
	r = pool_create(ion_solution_ctx(solution), solution, false, false, &pool);
	if (r < 0)
		return r;
	/* The first device of the solution that a board gives a Pool hint. */
	for (unsigned int i = 0; !n && ion_solution_pool_hints(solution, i, &hints, &n); i++)
		;
	if (n && (r = set_hints(pool, hints, n, HINTS_DEVICE)) < 0) {
		pool_free(pool);
		return r;
	}
	*ret_pool = pool;
	return 0;
}

/*
 * Whether a heap's pool serves len bytes: a hint of it is left after the
 * cap (the board's alone would have the pool keep a size the cap left
 * out, with no count to stop it).  A heap pool's hints are set before it
 * is published and never after, so they are read without its lock.
 */
static struct ion_pool *heap_pool_for(struct ion_pool *pool, size_t len)
{
	for (size_t h = 0; h < pool->n_hints; h++)
		if (page_round(pool->hints[h].size) == len)
			return pool;
	return NULL;
}

struct ion_pool *ion_pools_heap_pool(struct ion_ctx *ctx, struct ion_registry *reg,
				     const struct ion_heap *heap, unsigned int flags,
				     size_t len)
{
	struct ion_pools *all = &ctx->pools;
	_Atomic(struct ion_pool *) *slot;
	struct ion_solution *solution = NULL;
	struct ion_pool *pool = NULL, *expected = NULL;

	if (!heap->n_pool_hints)
		return NULL;
	/* A heap is immutable but for this slot, set once. */
	slot = &reg->heaps[heap->index]->pools[flags & 3];
	pool = atomic_load_explicit(slot, memory_order_acquire);
	if (pool)
		return heap_pool_for(pool, len);
	/* Made at the heap's first use, whatever the size, so that the
	 * hinted sizes are ready by the time they are asked for. */
	if (ion_solution_for_heap(ctx, reg, heap, flags, &solution) < 0 ||
	    pool_create(ctx, solution, true, true, &pool) < 0 ||
	    set_hints(pool, heap->pool_hints, heap->n_pool_hints, HINTS_HEAP) < 0) {
		if (pool)
			pool_free(pool);
		ion_solution_unref(solution);
		return NULL;
	}
	ion_solution_unref(solution);
	if (!atomic_compare_exchange_strong_explicit(slot, &expected, pool,
						     memory_order_acq_rel, memory_order_acquire)) {
		pool_free(pool); /* another thread made it first */
		return heap_pool_for(expected, len);
	}
	pthread_mutex_lock(&all->lock);
	if (start_thread(ctx) < 0)
		ion_dbg(ctx, "heap %s: no background refill thread", heap->name);
	wake(all);
	pthread_mutex_unlock(&all->lock);
	ion_dbg(ctx, "heap %s: a pool for the board's Pool hint", heap->name);
	return heap_pool_for(pool, len);
}

void ion_pools_heap_pool_free(struct ion_pool *pool)
{
	pool_free(pool);
}

ION_EXPORT struct ion_pool *ion_pool_ref(struct ion_pool *pool)
{
	if (pool && !pool->heap_pool)
		atomic_fetch_add_explicit(&pool->refcount, 1, memory_order_relaxed);
	return pool;
}

ION_EXPORT struct ion_pool *ion_pool_unref(struct ion_pool *pool)
{
	if (pool && !pool->heap_pool &&
	    atomic_fetch_sub_explicit(&pool->refcount, 1, memory_order_acq_rel) == 1)
		pool_free(pool);
	return NULL;
}

/*
 * Called with the lock held, when no buffer of the class is clean and no
 * thread zeroes them (or the heap allocates slower than a memset): zeroes
 * a dirty one here, without the lock.  Its index once clean, or -1.
 */
static ssize_t scrub_one(struct ion_pool *pool, size_t size)
{
	struct pool_buf copy;
	bool zero = pool->zero;
	ssize_t i;
	int r;

	for (i = 0; i < (ssize_t)pool->n_bufs; i++)
		if (pool->bufs[i].state == BUF_DIRTY && pool->bufs[i].size == size)
			break;
	if (i == (ssize_t)pool->n_bufs)
		return -1;
	pool->bufs[i].state = BUF_SCRUB;
	copy = pool->bufs[i];
	pthread_mutex_unlock(&pool->lock);
	r = scrub(&copy, zero);
	pthread_mutex_lock(&pool->lock);
	/* Found again by its anchor: other buffers may have moved. */
	for (i = 0; i < (ssize_t)pool->n_bufs; i++)
		if (pool->bufs[i].fd == copy.fd && pool->bufs[i].state == BUF_SCRUB)
			break;
	if (i == (ssize_t)pool->n_bufs)
		return -1;
	if (r < 0) {
		drop(pool, (size_t)i, false);
		return -1;
	}
	pool->bufs[i].state = BUF_FREE;
	return i;
}

/*
 * Called with the lock held, when no buffer of class size is clean:
 * whether a get leaves the zeroing to the refill thread and allocates.
 * Yes while the thread runs and keeps up, unless the heap allocates
 * slower than a memset (contiguous: CMA migrates pages) or there is
 * nothing to zero (zeroing off: only CPU access to end).  The thread
 * lags once as many buffers of the class wait for it as the hint keeps
 * ready (two at least): a get then zeroes one itself, or a pool whose
 * thread lags would grow by a buffer a get.  Buffers out count too: one
 * its holder closed stays out until a count is read, which only the
 * thread does on this path, so with twice the lag out a get reads counts
 * itself (the 5.10 VM's 16-thread test grew its pool to the fd limit).
 */
static bool leave_to_thread(const struct ion_pool *pool, size_t size)
{
	size_t waiting = 0, out = 0, lag = 2;

	if (!pool->background || !pool->zero || pool->alloc_slow ||
	    !atomic_load_explicit(&pool->ctx->pools.running, memory_order_acquire))
		return false;
	for (size_t h = 0; h < pool->n_hints; h++)
		if (class_of(pool, pool->hints[h].size) == size && pool->hints[h].count > lag)
			lag = pool->hints[h].count;
	for (size_t i = 0; i < pool->n_bufs; i++)
		if (pool->bufs[i].size == size &&
		    (pool->bufs[i].state == BUF_DIRTY || pool->bufs[i].state == BUF_SCRUB))
			waiting++;
		else if (pool->bufs[i].size == size && pool->bufs[i].state == BUF_OUT)
			out++;
	return waiting < lag && out < 2 * lag;
}

/* Called with the lock held: hands out buffer i (free); its fd for the
 * caller, or a negative errno. */
static int hand_out(struct ion_pool *pool, size_t i)
{
	struct pool_buf *b = &pool->bufs[i];
	int fd;

	if (b->counted) {
		/* The anchor stays: the kernel's count says when it is back. */
		fd = fcntl(b->fd, F_DUPFD_CLOEXEC, 3);
		if (fd < 0)
			return neg_errno();
	} else {
		/* Nobody could tell when it is back: the caller gets the only
		 * fd, so that a close releases it. */
		fd = b->fd;
		b->fd = -1;
		pool->n_unanchored++;
	}
	b->state = BUF_OUT;
	b->outs++;
	b->recheck_ns = 0; /* a new holder: looked at from the next get on */
	b->held_seen = 0;
	account(pool, -(long long)b->size);
	pool->stats[ION_POOL_STAT_HITS]++;
	/* A heap's pool has no put: what it cannot count, it forgets. */
	if (!b->counted && pool->heap_pool)
		forget(pool, i);
	return fd;
}

/* Called with the lock held, which it drops: hands out buffer i of class
 * size to the caller.  0, or a negative errno. */
static int serve(struct ion_pool *pool, size_t i, size_t size, int *ret_fd)
{
	int fd = hand_out(pool, i);
	/* Wake the refill thread only at the low watermark: a write to its
	 * eventfd on every hit would cost the hot path a syscall and a
	 * contended wake-up. */
	bool low = fd >= 0 && pool->background && below_watermark(pool, size);

	pthread_mutex_unlock(&pool->lock);
	if (fd < 0)
		return fd;
	if (low)
		wake(&pool->ctx->pools);
	*ret_fd = fd;
	return 0;
}

ION_EXPORT int ion_pool_get(struct ion_pool *pool, size_t len, int *ret_fd)
{
	const struct ion_heap *heap = NULL;
	size_t size;
	ssize_t i;
	int fd, out, r;
	bool counted, thread_zeroes = false;

	if (!pool || !ret_fd)
		return -EINVAL;
	size = class_of(pool, len);
	if (!size)
		return -EINVAL;
	pthread_mutex_lock(&pool->lock);
	expire(pool);
	i = find_free(pool, size);
	/*
	 * No clean buffer: with the refill thread at work, the get allocates
	 * and leaves it to the thread to read the counts and zero what came
	 * back, off the hot path (a memset of 8 MiB is a millisecond and
	 * more).  Else it takes back and zeroes a buffer of the class itself.
	 */
	if (i < 0 && !(thread_zeroes = leave_to_thread(pool, size))) {
		i = scrub_one(pool, size);
		/* Before asking the kernel: buffers of the class free again. */
		if (i < 0 && reclaim(pool, size, 8, true))
			i = scrub_one(pool, size);
	}
	if (i >= 0)
		return serve(pool, (size_t)i, size, ret_fd);
	pool->stats[ION_POOL_STAT_MISSES]++;
	pthread_mutex_unlock(&pool->lock);
	if (thread_zeroes)
		wake(&pool->ctx->pools); /* what came back, zeroed for the next */

	r = ion_solution_alloc_len(pool->solution, size, &fd, &heap);
	if (r < 0 && thread_zeroes) {
		/* The kernel said no: a dirty buffer zeroed here is still one. */
		pthread_mutex_lock(&pool->lock);
		i = find_free(pool, size);
		if (i < 0)
			i = scrub_one(pool, size);
		if (i >= 0) {
			pool->stats[ION_POOL_STAT_MISSES]--; /* it allocated nothing */
			return serve(pool, (size_t)i, size, ret_fd);
		}
		pthread_mutex_unlock(&pool->lock);
	}
	if (r < 0)
		return r;
	counted = is_counted(pool, heap, fd);
	if (!counted) {
		/* Tracked (for a put to recognise) but not anchored. */
		if (!pool->heap_pool) {
			pthread_mutex_lock(&pool->lock);
			forget_closed(pool);
			(void)add_buf(pool, fd, size, BUF_OUT, false);
			pthread_mutex_unlock(&pool->lock);
		}
		*ret_fd = fd;
		return 0;
	}
	out = fcntl(fd, F_DUPFD_CLOEXEC, 3);
	if (out < 0) {
		r = neg_errno();
		close(fd);
		return r;
	}
	pthread_mutex_lock(&pool->lock);
	r = add_buf(pool, fd, size, BUF_OUT, true);
	pthread_mutex_unlock(&pool->lock);
	if (r < 0)
		close(fd); /* the caller's fd stands: not pooled, that is all */
	*ret_fd = out;
	return 0;
}

/* Called with the lock held: buffer i, back and held by nothing else,
 * becomes dirty, or goes where a limit or a full hint says so. */
static void take_back(struct ion_pool *pool, size_t i)
{
	if (!room_for(pool, pool->bufs[i].size) || hint_full(pool, pool->bufs[i].size)) {
		drop(pool, i, true); /* over a limit: released, as a trim */
		return;
	}
	pool->bufs[i].state = BUF_DIRTY;
	account(pool, (long long)pool->bufs[i].size);
	if (!pool->background ||
	    !atomic_load_explicit(&pool->ctx->pools.running, memory_order_acquire)) {
		if (scrub(&pool->bufs[i], pool->zero) < 0) {
			drop(pool, i, false);
		} else {
			pool->bufs[i].state = BUF_FREE;
			pool->bufs[i].since_ns = now_ns();
		}
	}
}

ION_EXPORT int ion_pool_put(struct ion_pool *pool, int fd, unsigned int flags)
{
	struct stat st;
	size_t i;
	int refs;
	bool dirty;

	if (!pool || (flags & ~ION_POOL_VOUCH))
		return -EINVAL;
	if (fd < 0 || fstat(fd, &st) < 0)
		return fd < 0 ? -EBADF : neg_errno();
	pthread_mutex_lock(&pool->lock);
	/* The pool's own fd under a stale number (a second put of an fd
	 * whose number an anchor took since): not the caller's to give. */
	for (i = 0; i < pool->n_bufs; i++)
		if (pool->bufs[i].fd == fd)
			break;
	if (i == pool->n_bufs)
		for (i = 0; i < pool->n_bufs; i++)
			if (pool->bufs[i].state == BUF_OUT && pool->bufs[i].dev == st.st_dev &&
			    pool->bufs[i].ino == st.st_ino)
				break;
	if (i == pool->n_bufs || pool->bufs[i].fd == fd) {
		/* Not one of ours out: the fd stays the caller's. */
		pthread_mutex_unlock(&pool->lock);
		return -EINVAL;
	}
	if (!pool->bufs[i].counted) {
		/* A memfd: nobody can tell, so only the caller's word brings it
		 * back, and then its fd becomes the anchor. */
		int anchor = flags & ION_POOL_VOUCH ? fcntl(fd, F_DUPFD_CLOEXEC, 3) : -1;

		close(fd);
		if (anchor < 0) {
			forget(pool, i);
			pthread_mutex_unlock(&pool->lock);
			return 0;
		}
		pool->bufs[i].fd = anchor;
		pool->n_unanchored--;
	} else {
		close(fd);
		/* Held anywhere else (a dup, another process, a mapping, a
		 * device), it stays out: reclaim() takes it back once its
		 * count says free. */
		refs = file_refs(pool->bufs[i].fd);
		if (refs != 1) {
			pthread_mutex_unlock(&pool->lock);
			return 0;
		}
	}
	take_back(pool, i);
	dirty = i < pool->n_bufs && pool->bufs[i].state == BUF_DIRTY;
	pthread_mutex_unlock(&pool->lock);
	if (dirty)
		wake(&pool->ctx->pools);
	return 0;
}

ION_EXPORT int ion_pool_set_hints(struct ion_pool *pool, const char *hints)
{
	struct ion_conf_field field = { 0 };
	const char *message;
	int r;

	if (!pool || !hints)
		return -EINVAL;
	r = ion_conf_field_parse(ION_KEY_POOL, hints, (struct ion_conf_src){ "hints", 0 },
				 &field, &message);
	if (r < 0) {
		ion_dbg(pool->ctx, "pool hints '%s': %s", hints, r == -EINVAL ? message : "");
		return r;
	}
	r = set_hints(pool, field.v.pool.v, field.v.pool.n, HINTS_CALLER);
	free(field.v.pool.v);
	return r;
}

ION_EXPORT int ion_pool_prefill(struct ion_pool *pool)
{
	int r;

	if (!pool)
		return -EINVAL;
	r = fill(pool, false);
	if (r > 0)
		ion_dbg(pool->ctx, "pool prefilled with %d buffers", r);
	return r < 0 ? r : 0;
}

ION_EXPORT int ion_pool_set_background(struct ion_pool *pool, int background)
{
	struct ion_pools *all;
	int r = 0;

	if (!pool)
		return -EINVAL;
	all = &pool->ctx->pools;
	pthread_mutex_lock(&all->lock);
	pthread_mutex_lock(&pool->lock);
	pool->background = background != 0;
	pthread_mutex_unlock(&pool->lock);
	if (background)
		r = start_thread(pool->ctx);
	wake(all);
	pthread_mutex_unlock(&all->lock);
	return r;
}

ION_EXPORT int ion_pool_set_zeroing(struct ion_pool *pool, int zero)
{
	if (!pool)
		return -EINVAL;
	pthread_mutex_lock(&pool->lock);
	pool->zero = zero != 0;
	pthread_mutex_unlock(&pool->lock);
	return 0;
}

ION_EXPORT int ion_pool_set_max_bytes(struct ion_pool *pool, unsigned long long bytes)
{
	if (!pool)
		return -EINVAL;
	pthread_mutex_lock(&pool->lock);
	pool->max_bytes = bytes;
	pthread_mutex_unlock(&pool->lock);
	if (bytes)
		trim_pool(pool, bytes);
	return 0;
}

ION_EXPORT int ion_pool_set_expiry_ms(struct ion_pool *pool, unsigned int ms)
{
	if (!pool)
		return -EINVAL;
	pthread_mutex_lock(&pool->lock);
	pool->expiry_ns = (uint64_t)ms * 1000000u;
	pthread_mutex_unlock(&pool->lock);
	return 0;
}

ION_EXPORT int ion_pool_trim(struct ion_pool *pool, unsigned long long keep_bytes)
{
	int n;

	if (!pool)
		return -EINVAL;
	n = trim_pool(pool, keep_bytes);
	if (n)
		ion_dbg(pool->ctx, "pool trimmed: %d buffers released", n);
	return n;
}

ION_EXPORT unsigned long long ion_pool_get_stat(const struct ion_pool *pool,
						enum ion_pool_stat stat)
{
	struct ion_pool *p = (struct ion_pool *)pool;
	unsigned long long v = 0;

	if (!pool || (unsigned int)stat >= ION_POOL_STAT_COUNT)
		return 0;
	pthread_mutex_lock(&p->lock);
	if (stat == ION_POOL_STAT_BYTES_HELD) {
		v = p->held;
	} else if (stat == ION_POOL_STAT_BUFFERS_OUT) {
		for (size_t i = 0; i < p->n_bufs; i++)
			v += p->bufs[i].state == BUF_OUT;
	} else {
		v = p->stats[stat];
	}
	pthread_mutex_unlock(&p->lock);
	return v;
}

ION_EXPORT int ion_ctx_set_pool_limit(struct ion_ctx *ctx, unsigned long long bytes)
{
	struct ion_pools *all;

	if (!ctx)
		return -EINVAL;
	all = &ctx->pools;
	pthread_mutex_lock(&all->lock);
	atomic_store_explicit(&all->limit, bytes, memory_order_relaxed);
	/* A lower limit holds at once: pools give up idle buffers, in turn,
	 * until all of them together are within it. */
	for (struct ion_pool *p = all->list; bytes && p; p = p->next) {
		unsigned long long total = atomic_load_explicit(&all->held, memory_order_relaxed);
		unsigned long long over = total > bytes ? total - bytes : 0, held;

		if (!over)
			break;
		pthread_mutex_lock(&p->lock);
		held = p->held;
		pthread_mutex_unlock(&p->lock);
		trim_pool(p, held > over ? held - over : 0);
	}
	pthread_mutex_unlock(&all->lock);
	return 0;
}

ION_EXPORT int ion_ctx_trim_pools(struct ion_ctx *ctx)
{
	int n = 0;

	if (!ctx)
		return -EINVAL;
	pthread_mutex_lock(&ctx->pools.lock);
	for (struct ion_pool *p = ctx->pools.list; p; p = p->next)
		n += trim_pool(p, 0);
	pthread_mutex_unlock(&ctx->pools.lock);
	return n;
}
