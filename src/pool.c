// SPDX-License-Identifier: MIT
/*
 * Pools: buffers kept ready in user space, so that a hot path takes one
 * with a single fcntl() instead of waiting on the kernel.  This file is
 * the cache itself: size classes, get and put, reclaim, expiry, limits
 * and statistics.  A pool's making and end are pool-life.c's, the hints
 * pool-hints.c's, the refill workers pool-refill.c's, the stream's pace
 * pool-pace.c's, the zeroing and its cost pool-scrub.c's, a get's
 * bounded wait for the lock pool-adopt.c's, heaps' own pools
 * pool-heap.c's.
 *
 * Each buffer of a pool has an anchor, the pool's own fd of it; a caller
 * gets a duplicate.  A buffer is handed out again only when nothing else
 * holds it: for a dma-buf, the kernel's reference count of its file
 * (fdinfo's "count", which counts fds in every process, mappings and
 * importers) must be the anchor's alone; for a memfd, which has no such
 * count, the caller must vouch.  A returned buffer is zeroed, unless the
 * pool was told not to, and its CPU access ended, so that the caches are
 * clean before a device sees it.  What it allocates with and how it reads
 * a count it is handed (struct ion_pool_ops).
 */
#include <errno.h>
#include <fcntl.h>
#include <dirent.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>

#include <ion/ion.h>

#include "pool-internal.h"
#include "solver.h"

size_t pool_page_round(size_t len)
{
	size_t rounded;

	return ion_round_len(len, &rounded) < 0 ? 0 : rounded;
}

/*
 * Whether anything will tell when nothing else holds the buffer, which
 * the pool's safety rests on (the check it was handed).  A heap whose
 * kernel counts no mapping (5.10's vgem) is said once: its buffers are
 * treated as uncounted, like a memfd's.
 */
bool pool_is_counted(struct ion_pool *pool, const struct ion_heap *heap, int fd)
{
	atomic_int *known = ion_heap_pools_maps_known(pool->heaps, heap);
	enum ion_fdinfo_track t = pool->ops->trackable(fd, known);

	if (t == ION_FDINFO_MAPS_UNSEEN)
		ion_dbg(pool->ctx, "heap %s: the kernel does not count mappings of its buffers; pooled only when vouched for",
			heap ? heap->name : "?");
	return t == ION_FDINFO_TRACKED;
}

/* Called with the lock held: forgets entry i (an uncounted buffer out,
 * whose only fd is the caller's), closing nothing. */
static void forget(struct ion_pool *pool, size_t i)
{
	pool->n_unanchored--;
	/* In order: the buffers ready stay in the order they came. */
	memmove(&pool->bufs[i], &pool->bufs[i + 1], (--pool->n_bufs - i) * sizeof(pool->bufs[0]));
}

void pool_forget_taken(struct ion_pool *pool)
{
	if (!pool->heap_pool)
		return;
	for (size_t i = pool->n_bufs; pool->n_unanchored && i-- > 0;)
		if (pool->bufs[i].fd < 0 && pool->bufs[i].state == BUF_OUT)
			forget(pool, i);
}

/* Called with the lock held: a new entry for fd's buffer, st its fstat()
 * (taken before the lock: a syscall under it is time that a get may
 * spend waiting).  An uncounted buffer out keeps no anchor: fd is then
 * the caller's, not the pool's.  One not out the caller has charged to
 * the held bytes (pool_charge()). */
int pool_add_buf(struct ion_pool *pool, int fd, const struct stat *st, size_t size,
		 enum buf_state state, bool counted)
{
	struct pool_buf *b;

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
		.fd = fd, .dev = st->st_dev, .ino = st->st_ino, .size = size,
		.state = state, .since_ns = pool_now_ns(), .counted = counted, .spare = -1,
		.slot = -1,
	};
	if (state == BUF_OUT && !counted) {
		b->fd = -1;
		pool->n_unanchored++;
	}
	return 0;
}

/* One scan of /proc/self/fd for every forget_at uncounted buffers out
 * (closed without a put: no fd of this process holds them). */
void pool_forget_closed(struct ion_pool *pool)
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

/* Called with the lock held: buffer i, out and found free again (its
 * count is the anchor's alone), comes back dirty, or is released past a
 * limit or a full hint.  Whether it stayed. */
bool pool_found_free(struct ion_pool *pool, size_t i)
{
	struct pool_buf *b = &pool->bufs[i];

	if (pool_hint_full(pool, b->size) || !pool_charge(pool, b->size)) {
		pool_drop(pool, i, true);
		return false;
	}
	b->state = BUF_DIRTY;
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
 * alone: its holder simply closed it), reading at most max counts of
 * buffers out for out_ns at least.  The scan resumes where the last one
 * stopped.  A get (hot) stops at the first buffer it takes back, and
 * reads first the counts of buffers not found held lately, then with
 * what is left of max the others: buffers held for long do not eat the
 * reads a get has for those just closed.  Whether it took one back.
 */
bool pool_reclaim(struct ion_pool *pool, size_t size, unsigned int max, bool hot,
		  uint64_t out_ns)
{
	uint64_t now = hot || out_ns ? pool_now_ns() : 0;
	bool took = false;

	for (int pass = hot ? 0 : 1; pass < 2 && max && !took; pass++) {
		size_t i = pool->scan;

		for (size_t seen = 0; seen < pool->n_bufs && max; seen++, i++) {
			struct pool_buf *b;
			bool lately;

			if (i >= pool->n_bufs)
				i = 0;
			b = &pool->bufs[i];
			if (b->state != BUF_OUT || !b->counted || (size && b->size != size) ||
			    now - b->since_ns < out_ns)
				continue;
			/* Pass 0 the others, pass 1 those found held lately
			 * (but not just now). */
			lately = hot && now < b->recheck_ns;
			if (pass == 0 ? lately : hot && (!lately || b->looked_ns == now))
				continue;
			max--;
			if (pool->ops->refs(b->fd, NULL) != pool_own_refs(b)) {
				if (hot)
					recheck_later(b, now);
				continue;
			}
			if (!pool_found_free(pool, i)) {
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

void pool_expire(struct ion_pool *pool)
{
	uint64_t now;

	if (!pool->expiry_ns)
		return;
	now = pool_now_ns();
	for (size_t i = 0; i < pool->n_bufs; i++)
		if (pool->bufs[i].state == BUF_FREE &&
		    now - pool->bufs[i].since_ns > pool->expiry_ns &&
		    (pool->bufs[i].slot < 0 || pool_unslot(pool, i)))
			pool_drop(pool, i--, true);
}

/* A clean buffer of class size: one with a spare fd (or an uncounted
 * one, whose only fd is handed over) first, then one in a slot (its
 * spare; emptying the slot is one atomic exchange, where a buffer
 * without a spare costs a dup under the lock). */
static ssize_t find_free(const struct ion_pool *pool, size_t size)
{
	ssize_t plain = -1, slotted = -1;

	for (size_t i = 0; i < pool->n_bufs; i++) {
		const struct pool_buf *b = &pool->bufs[i];

		if (b->state != BUF_FREE || b->size != size)
			continue;
		if (b->slot >= 0)
			slotted = slotted < 0 ? (ssize_t)i : slotted;
		else if (b->spare >= 0 || !b->counted)
			return (ssize_t)i;
		else if (plain < 0)
			plain = (ssize_t)i;
	}
	return slotted >= 0 ? slotted : plain;
}

/* Called with the lock held: find_free(), taken out of its slot if it
 * is in one (a get may take it first: then the next). */
static ssize_t take_free(struct ion_pool *pool, size_t size)
{
	ssize_t i;

	while ((i = find_free(pool, size)) >= 0 && pool->bufs[i].slot >= 0 &&
	       !pool_unslot(pool, (size_t)i))
		;
	return i;
}

/* ---- pools ---- */

static ssize_t scrub_one(struct ion_pool *pool, size_t size)
{
	struct pool_buf copy;
	bool zero = pool->zero;
	uint64_t ns;
	ssize_t i;
	int r;

	for (i = 0; i < (ssize_t)pool->n_bufs; i++)
		if (pool->bufs[i].state == BUF_DIRTY && pool->bufs[i].size == size)
			break;
	if (i == (ssize_t)pool->n_bufs)
		return -1;
	pool->bufs[i].state = BUF_SCRUB;
	copy = pool->bufs[i];
	pthread_mutex_unlock(pool->lock);
	r = pool_scrub(pool, &copy, zero, &ns);
	pool_lock(pool);
	pool_note_scrub(pool, ns, copy.size, true);
	/* Found again by its anchor: other buffers may have moved. */
	for (i = 0; i < (ssize_t)pool->n_bufs; i++)
		if (pool->bufs[i].fd == copy.fd && pool->bufs[i].state == BUF_SCRUB)
			break;
	if (i == (ssize_t)pool->n_bufs) {
		if (copy.map)
			munmap(copy.map, copy.size);
		return -1;
	}
	pool->bufs[i].map = copy.map;
	if (r < 0) {
		pool_drop(pool, (size_t)i, false);
		return -1;
	}
	pool->bufs[i].state = BUF_FREE;
	pool->bufs[i].since_ns = pool_now_ns();
	return i;
}

/*
 * Called with the lock held, when no buffer of class size is clean:
 * whether a get leaves the zeroing to the refill worker and allocates.
 * Yes while the worker runs and keeps up, unless zeroing takes less time
 * than allocating on this heap (as measured, pool_alloc_faster()) or there
 * is nothing to zero (zeroing off: only CPU access to end).  The worker
 * lags once as many buffers of the class wait for it as the hint keeps
 * ready (two at least): a get then zeroes one itself, or a pool whose
 * worker lags would grow by a buffer a get.  Buffers out count too: one
 * its holder closed stays out until a count is read, so with twice the
 * lag out (*reclaim) a get reads counts itself before it allocates (the
 * 5.10 VM's 16-thread test grew its pool to the fd limit without), but
 * no longer zeroes for that alone: a stream that holds four frames
 * against a hint of two made every fourth get zero 8 MiB itself.
 */
static bool leave_to_thread(const struct ion_pool *pool, size_t size, bool *reclaim)
{
	size_t waiting = 0, out = 0, lag = 2;

	if (!pool->background || !pool->zero || !pool_alloc_faster(pool) ||
	    !pool_worker_running(pool))
		return false;
	/* Measured cheaper to allocate: the worker releases what waits
	 * rather than zero it, so nothing it lags at is worth a memset. */
	if (pool->alloc_ns_mib && pool->scrub_ns_mib && pool_alloc_cheaper(pool, size))
		lag = SIZE_MAX;
	for (size_t h = 0; h < pool->n_hints; h++)
		if (pool_class_of(pool, pool->hints[h].size) == size && pool->hints[h].count > lag)
			lag = pool->hints[h].count;
	for (size_t i = 0; i < pool->n_bufs; i++)
		if (pool->bufs[i].size == size &&
		    (pool->bufs[i].state == BUF_DIRTY || pool->bufs[i].state == BUF_SCRUB))
			waiting++;
		else if (pool->bufs[i].size == size && pool->bufs[i].state == BUF_OUT)
			out++;
	*reclaim = out >= 2 * (lag == SIZE_MAX ? 2 : lag);
	return waiting < lag;
}

void pool_mark_out(struct ion_pool *pool, struct pool_buf *b, uint64_t now)
{
	b->state = BUF_OUT;
	b->since_ns = now;
	b->outs++;
	b->recheck_ns = 0; /* a new holder: looked at from the next get on */
	b->held_seen = 0;
	b->probe = false;
	pool_account(pool, -(long long)b->size);
	pool->stats[ION_POOL_STAT_HITS]++;
}

/* Called with the lock held: hands out buffer i (free) at now; its fd
 * for the caller, or a negative errno. */
static int hand_out(struct ion_pool *pool, size_t i, uint64_t now)
{
	struct pool_buf *b = &pool->bufs[i];
	int fd;

	if (b->counted) {
		/* The anchor stays: the kernel's count says when it is back.
		 * The worker's spare fd, if it made one, is the caller's. */
		fd = b->spare >= 0 ? b->spare : fcntl(b->fd, F_DUPFD_CLOEXEC, 3);
		if (fd < 0)
			return neg_errno();
		b->spare = -1;
	} else {
		/* Nobody could tell when it is back: the caller gets the only
		 * fd, so that a close releases it. */
		fd = b->fd;
		b->fd = -1;
		pool->n_unanchored++;
	}
	pool_mark_out(pool, b, now);
	/* A heap's pool has no put: what it cannot count, it forgets. */
	if (!b->counted && pool->heap_pool)
		forget(pool, i);
	return fd;
}

/* Called with the lock held, which it drops: hands out buffer i of class
 * size to the caller at now.  0, or a negative errno. */
static int serve(struct ion_pool *pool, size_t i, size_t size, uint64_t now, int *ret_fd)
{
	int fd = hand_out(pool, i, now);
	/* Wake the refill thread only at the low watermark: a write to its
	 * eventfd on every hit would cost the hot path a syscall and a
	 * contended wake-up.  Nor when a put has woken it since the last
	 * get, nor when it looks at the pool by itself at the stream's pace
	 * (pool_paced()).  The wake-up was what a get's p99 was made of in
	 * the 6.1 VM: waking a thread on an idle vCPU costs the writer 0.4
	 * to 4 ms under TCG (`wakes` in ionctl bench --pool), while the hit
	 * itself takes 40 us. */
	bool low = fd >= 0 && pool->background && !pool->put_woke &&
		   pool_below_watermark(pool, size) && !pool_paced(pool);

	pool->put_woke = false;
	pool->get_wakes += low;

	pthread_mutex_unlock(pool->lock);
	if (fd < 0)
		return fd;
	if (low)
		pool_wake(pool);
	*ret_fd = fd;
	return 0;
}

/*
 * A buffer the get allocated, handed to the caller: tracked so that a put
 * or a reclaim knows it, anchored where the kernel will tell when it is
 * back.  The lock's next holder enters it (pool_adopt_later()): the get
 * does not wait for the lock again.  get_ns: see struct pool_adopt.  0,
 * or a negative errno.
 */
static int track_new(struct ion_pool *pool, const struct ion_heap *heap, int fd,
		     size_t size, uint64_t get_ns, int *ret_fd)
{
	bool counted = pool_is_counted(pool, heap, fd);
	struct stat st;
	int out = fd, r;

	if (counted) {
		/* fd stays the pool's, as the anchor; the caller's is a dup. */
		out = fcntl(fd, F_DUPFD_CLOEXEC, 3);
		if (out < 0) {
			r = neg_errno();
			close(fd);
			return r;
		}
	}
	if ((fstat(fd, &st) < 0 ||
	     pool_adopt_later(pool, counted ? fd : -1, &st, size, counted, get_ns) < 0) && counted)
		close(fd); /* the caller's fd stands: not pooled, that is all */
	*ret_fd = out;
	return 0;
}

/* Whether a buffer of class size is being zeroed by the worker. */
static bool scrubbing(const struct ion_pool *pool, size_t size)
{
	for (size_t i = 0; i < pool->n_bufs; i++)
		if (pool->bufs[i].state == BUF_SCRUB && pool->bufs[i].size == size)
			return true;
	return false;
}

/*
 * The kernel said no (the heap ran out mid-stream): a buffer of the pool
 * is still one.  A clean one, a dirty one zeroed here, one its holder
 * closed (the worker may not have read its count yet), or one the worker
 * is zeroing, waited for (at most 100 ms).  -ENOMEM if there is none.
 */
static int get_after_enomem(struct ion_pool *pool, size_t size, bool counted_miss, int *ret_fd)
{
	ssize_t i;

	pool_lock(pool);
	/* Refill by allocation failed: a put keeps its buffer from now on. */
	pool->refill_after_ns = pool_now_ns() + 1000000000u;
	for (int waited = 0;; waited++) {
		i = take_free(pool, size);
		if (i < 0)
			i = scrub_one(pool, size);
		if (i < 0 && pool_reclaim(pool, size, 8, true, 0))
			i = scrub_one(pool, size);
		if (i >= 0 || waited == 100 || !scrubbing(pool, size))
			break;
		pthread_mutex_unlock(pool->lock);
		usleep(1000);
		pool_lock(pool);
	}
	if (i < 0) {
		pthread_mutex_unlock(pool->lock);
		return -ENOMEM;
	}
	if (counted_miss)
		pool->stats[ION_POOL_STAT_MISSES]--; /* it allocated nothing */
	else
		pool_note_get(pool, pool_now_ns());
	return serve(pool, (size_t)i, size, pool_now_ns(), ret_fd);
}

/* The get's allocation, timed (pool_note_alloc_wait()); then tracked
 * (get_ns: see struct pool_adopt). */
static int get_new(struct ion_pool *pool, size_t size, uint64_t get_ns, int *ret_fd)
{
	const struct ion_heap *heap = NULL;
	uint64_t t0 = pool_now_ns();
	int fd, r = pool->ops->alloc(pool->solution, size, &fd, &heap);

	if (r == -ENOMEM)
		return get_after_enomem(pool, size, !get_ns, ret_fd);
	if (r < 0)
		return r;
	pool_note_alloc_wait(pool, pool_now_ns() - t0);
	return track_new(pool, heap, fd, size, get_ns, ret_fd);
}

/* A get that found no slot full: under the lock, unless another holds
 * it for longer than an allocation takes (pool_lock_wait(), out of the
 * way of a hit: one page of code less after a stream's sleep). */
static int get_locked(struct ion_pool *pool, size_t size, int *ret_fd)
{
	bool thread_zeroes = false, reclaim = false;
	uint64_t now;
	ssize_t i;

	if (pthread_mutex_trylock(pool->lock) == 0)
		pool_locked(pool);
	else if (!pool_lock_wait(pool))
		return get_new(pool, size, pool_now_ns(), ret_fd);
	pool_forget_taken(pool);
	pool_expire(pool);
	i = take_free(pool, size);
	/* None clean while the worker runs: it is behind the stream, and
	 * keeps one more ready from now on (pool_want()). */
	if (i < 0 && pool->background && !pool->heap_pool && pool->ahead < 64 &&
	    pool_worker_running(pool))
		pool->ahead++;
	/*
	 * No clean buffer: with the refill thread at work, the get allocates
	 * and leaves it to the thread to read the counts and zero what came
	 * back, off the hot path (a memset of 8 MiB is a millisecond and
	 * more).  Else it takes back and zeroes a buffer of the class itself.
	 */
	if (i < 0 && !(thread_zeroes = leave_to_thread(pool, size, &reclaim))) {
		i = scrub_one(pool, size);
		/* Before asking the kernel: buffers of the class free again. */
		if (i < 0 && pool_reclaim(pool, size, 8, true, 0))
			i = scrub_one(pool, size);
	} else if (i < 0 && reclaim) {
		/* Closed ones back (dirty: the worker's), then allocate. */
		pool_reclaim(pool, size, 8, true, pool_likely_back(pool));
	}
	now = pool_now_ns();
	pool_note_get(pool, now);
	if (i >= 0)
		return serve(pool, (size_t)i, size, now, ret_fd);
	pool->stats[ION_POOL_STAT_MISSES]++;
	/* What came back, zeroed for the next, unless the worker comes by
	 * itself before the next get. */
	thread_zeroes = thread_zeroes && !pool_paced(pool);
	pthread_mutex_unlock(pool->lock);
	if (thread_zeroes)
		pool_wake(pool);
	return get_new(pool, size, 0, ret_fd);
}

/* First a slot, which the worker filled: no wait for the lock, which
 * the worker may hold (a vCPU the host deschedules holds it for
 * milliseconds). */
static inline __attribute__((always_inline)) int slot_or_locked(struct ion_pool *pool,
								size_t size, int *ret_fd)
{
	int fd = pool_slot_take(pool, size);

	if (fd < 0)
		return get_locked(pool, size, ret_fd);
	*ret_fd = fd;
	return 0;
}

int pool_get_size(struct ion_pool *pool, size_t size, int *ret_fd)
{
	return slot_or_locked(pool, size, ret_fd);
}

/*
 * pool_get_size(), with the size class and the slot's take inlined: a
 * hit from a slot runs this one function, which its alignment keeps on
 * one page of code (it is smaller than 1 KiB).  After a stream's sleep,
 * each page of code a call reaches costs the call: on the host, a
 * trivial call to one other page took 0.7 us more at the median of a
 * 60/s stream than no call, a second page 0.08 us more and a p99 1.2 us
 * higher; the hit path used to alternate between two.
 */
ION_EXPORT ION_HOT __attribute__((aligned(1024))) int ion_pool_get(struct ion_pool *pool,
								   size_t len, int *ret_fd)
{
	size_t size;

	if (!pool || !ret_fd)
		return -EINVAL;
	size = pool_class_of(pool, len);
	if (!size)
		return -EINVAL;
	return slot_or_locked(pool, size, ret_fd);
}

/* Whether fd is one of b's own: its anchor or its spare. */
static bool pool_holds_fd(const struct pool_buf *b, int fd)
{
	return b->fd == fd || b->spare == fd;
}

/* Called with the lock held: buffer i, back and held by nothing else,
 * becomes dirty, or goes where a limit, a full hint or the costs say so:
 * then true, the buffer detached into *gone for the caller to release
 * without the lock. */
static bool take_back(struct ion_pool *pool, size_t i, struct pool_buf *gone,
		      struct pool_releasing *r)
{
	bool worker = pool->background && pool_worker_running(pool);

	if (!pool_room_for(pool, pool->bufs[i].size) || pool_hint_full(pool, pool->bufs[i].size)) {
		pool_detach_to_release(pool, i, true, gone, r); /* over a limit: released, as a trim */
		return true;
	}
	/* Measured cheaper to allocate than to zero: released here, as a
	 * close without a pool would (the worker allocates a fresh one),
	 * so that returned buffers never pile up waiting for it; but one a
	 * second is kept for the worker to zero, which measures zeroing
	 * again (pool_scrub_probe()). */
	if (worker && pool->zero && pool->alloc_ns_mib && pool->scrub_ns_mib &&
	    pool_alloc_cheaper(pool, pool->bufs[i].size) &&
	    !(pool->bufs[i].probe = pool_scrub_probe(pool, pool_now_ns()))) {
		pool_detach_to_release(pool, i, false, gone, r);
		return true;
	}
	/* Another pool may have taken the context's last room since. */
	if (!pool_charge(pool, pool->bufs[i].size)) {
		pool_detach_to_release(pool, i, true, gone, r);
		return true;
	}
	pool->bufs[i].state = BUF_DIRTY;
	if (!worker) {
		if (pool_scrub(pool, &pool->bufs[i], pool->zero, NULL) < 0) {
			pool_drop(pool, i, false);
		} else {
			pool->bufs[i].state = BUF_FREE;
			pool->bufs[i].since_ns = pool_now_ns();
		}
	}
	return false;
}

ION_EXPORT int ion_pool_put(struct ion_pool *pool, int fd, unsigned int flags)
{
	struct pool_releasing releasing;
	struct pool_buf gone;
	struct stat st;
	size_t i;
	int refs;
	bool dirty, released, wake;

	if (!pool || (flags & ~ION_POOL_VOUCH))
		return -EINVAL;
	if (fd < 0 || fstat(fd, &st) < 0)
		return fd < 0 ? -EBADF : neg_errno();
	pool_lock(pool);
	/* The pool's own fd under a stale number (a second put of an fd
	 * whose number an anchor or a spare took since): not the caller's
	 * to give. */
	for (i = 0; i < pool->n_bufs; i++)
		if (pool_holds_fd(&pool->bufs[i], fd))
			break;
	if (i == pool->n_bufs)
		for (i = 0; i < pool->n_bufs; i++)
			if (pool->bufs[i].state == BUF_OUT && pool->bufs[i].dev == st.st_dev &&
			    pool->bufs[i].ino == st.st_ino)
				break;
	if (i == pool->n_bufs || pool_holds_fd(&pool->bufs[i], fd)) {
		/* Not one of ours out: the fd stays the caller's. */
		pthread_mutex_unlock(pool->lock);
		return -EINVAL;
	}
	if (!pool->bufs[i].counted) {
		/* A memfd: nobody can tell, so only the caller's word brings it
		 * back, and then its fd becomes the anchor. */
		int anchor = flags & ION_POOL_VOUCH ? fcntl(fd, F_DUPFD_CLOEXEC, 3) : -1;

		close(fd);
		if (anchor < 0) {
			forget(pool, i);
			pthread_mutex_unlock(pool->lock);
			return 0;
		}
		pool->bufs[i].fd = anchor;
		pool->n_unanchored--;
	} else {
		close(fd);
		/* Held anywhere else (a dup, another process, a mapping, a
		 * device), it stays out: pool_reclaim() takes it back once its
		 * count says free. */
		refs = pool->ops->refs(pool->bufs[i].fd, NULL);
		if (refs != pool_own_refs(&pool->bufs[i])) {
			pthread_mutex_unlock(pool->lock);
			return 0;
		}
	}
	pool_note_hold(pool, &pool->bufs[i]);
	released = take_back(pool, i, &gone, &releasing);
	dirty = !released && i < pool->n_bufs && pool->bufs[i].state == BUF_DIRTY;
	/* Work for the worker: woken, unless it comes by itself before the
	 * next get (a wake-up can cost a put milliseconds, as a get). */
	wake = (dirty || released) && !pool_paced(pool);
	if (wake) {
		pool->put_woke = true;
		pool->put_wakes++;
	}
	pthread_mutex_unlock(pool->lock);
	if (released)
		pool_release_unlocked(pool, &gone, &releasing);
	if (wake)
		pool_wake(pool);
	return 0;
}

ION_EXPORT int ion_pool_set_zeroing(struct ion_pool *pool, int zero)
{
	if (!pool)
		return -EINVAL;
	pool_lock(pool);
	pool->zero = zero != 0;
	pthread_mutex_unlock(pool->lock);
	return 0;
}
