// SPDX-License-Identifier: MIT
/*
 * How a returned buffer is made clean again, and what that costs: zeroed
 * (a memfd by punching a hole, a dma-buf through the pool's own mapping,
 * kept), its CPU access ended; and the measured cost of a zeroing beside
 * that of a fresh allocation, which decides how a pool refills
 * (pool_alloc_cheaper()).
 */
#include <errno.h>
#include <fcntl.h>
#include <stdatomic.h>
#include <string.h>
#include <sys/mman.h>

#include <ion/ion.h>

#include "pool-internal.h"

/*
 * A buffer the kernel can zero for us: a memfd's pages are given back
 * (FALLOC_FL_PUNCH_HOLE) and come back zeroed when next touched, which
 * costs the pool a syscall instead of a memset of megabytes.  Only for a
 * buffer the kernel does not count (a memfd: a dma-buf has no fallocate);
 * whether it worked.
 */
static bool punch(const struct pool_buf *b)
{
	return !b->counted &&
	       fallocate(b->fd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, 0,
			 (off_t)b->size) == 0;
}

/*
 * The pool's mapping of a counted buffer, made once and kept: the CMA
 * heap (and 5.10's system heap) map a buffer a page per fault, and
 * mapping 8 MiB again for each zeroing cost more than the memset under
 * emulation (a recycle of 8 MiB: 9.0 ms on 6.1's CMA heap against 3.5
 * on its system heap, which maps all at once; on 5.10's system heap 6
 * ms, of which the memset took 1.5-1.9).  MADV_DONTFORK: a forked
 * child, whose pools are empty, holds no reference through it; a kernel
 * without madvise(2) (built without CONFIG_ADVISE_SYSCALLS, as
 * tinyconfig is) cannot promise that, so there the mapping is made for
 * each zeroing, and the log says so once a pool.  An uncounted buffer
 * is mapped for the zeroing alone, as its holder's close must free it.
 * NULL with errno on failure.
 */
static void *scrub_map(struct ion_pool *pool, struct pool_buf *b)
{
	void *p;
	int e;

	if (b->map)
		return b->map;
	p = mmap(NULL, b->size, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_POPULATE, b->fd, 0);
	if (p == MAP_FAILED || !b->counted)
		return p == MAP_FAILED ? NULL : p;
	if (madvise(p, b->size, MADV_DONTFORK) == 0) {
		b->map = p;
	} else if (!atomic_exchange_explicit(&pool->map_told, true, memory_order_relaxed)) {
		e = errno;
		ion_dbg(pool->ctx, "madvise(MADV_DONTFORK): %s: each zeroing maps its buffer again",
			strerror(e));
	}
	return p;
}

/* Zeroes a buffer and ends CPU access, so that its caches are clean
 * before a device sees it; *from, if 0, becomes the time a mapping made
 * here and kept was made.  0 or a negative errno (the buffer goes then). */
static int scrub(struct ion_pool *pool, struct pool_buf *b, bool zero, uint64_t *from)
{
	void *p;
	int r;

	if (!zero)
		return ion_sync(b->fd, ION_SYNC_END | ION_SYNC_WRITE);
	if (punch(b))
		return 0; /* a memfd: no device, nothing to flush */
	p = scrub_map(pool, b);
	if (!p)
		return neg_errno();
	if (p == b->map && *from == 0)
		*from = pool_now_ns();
	r = ion_sync(b->fd, ION_SYNC_START | ION_SYNC_WRITE);
	if (r == 0) {
		memset(p, 0, b->size);
		r = ion_sync(b->fd, ION_SYNC_END | ION_SYNC_WRITE);
	}
	if (p != b->map)
		munmap(p, b->size);
	return r;
}

int pool_scrub(struct ion_pool *pool, struct pool_buf *b, bool zero, uint64_t *ns)
{
	uint64_t t0 = pool_now_ns(), from = b->map ? t0 : 0;
	int r = scrub(pool, b, zero, &from);

	/* A mapping made now and kept is no part of what the next zeroing
	 * costs (tens of ms for 8 MiB of CMA under emulation, which would
	 * pass for a slow memset); one made for each zeroing is. */
	if (ns)
		*ns = pool_now_ns() - (from ? from : t0);
	return r;
}

/*
 * The moving average of a cost, in ns a MiB: the newest weighs 1/4, and
 * counts as four times the average at most.  One measure taken while the
 * host descheduled the vCPU must not swing the choice of a refill: in
 * the 5.10 VM one zeroing of 4 KiB took 5 ms (1.3 s a MiB), the pool
 * judged allocation 18 times cheaper, and a 240/s stream that refilled
 * by allocation missed 50 of its 1200 gets.
 */
static void cost_add(uint64_t *avg, uint64_t ns, size_t size)
{
	uint64_t per_mib = size ? ns * (1u << 20) / size : 0;

	if (*avg && per_mib > 4 * *avg)
		per_mib = 4 * *avg;
	*avg = *avg ? (3 * *avg + per_mib) / 4 : per_mib + !per_mib;
}

/* A cost measured longer ago than this is of another moment (the
 * stream's start, another stream): the next measure replaces it. */
#define COST_STALE_NS 1000000000ull

void pool_note_scrub(struct ion_pool *pool, uint64_t ns, size_t size, bool by_get)
{
	uint64_t now = pool_now_ns();

	pool->scrubs++;
	pool->get_scrubs += by_get;
	pool->scrub_ns += ns;
	if (ns > pool->scrub_ns_max)
		pool->scrub_ns_max = ns;
	if (!pool->zero)
		return;
	if (pool->scrub_noted_ns && now - pool->scrub_noted_ns > COST_STALE_NS)
		pool->scrub_ns_mib = 0;
	cost_add(&pool->scrub_ns_mib, ns, size);
	pool->scrub_noted_ns = now;
}

void pool_note_alloc(struct ion_pool *pool, uint64_t ns, size_t size)
{
	uint64_t now = pool_now_ns();

	if (pool->alloc_noted_ns && now - pool->alloc_noted_ns > COST_STALE_NS)
		pool->alloc_ns_mib = 0;
	cost_add(&pool->alloc_ns_mib, ns, size);
	pool->alloc_noted_ns = now;
	pool_note_alloc_wait(pool, ns);
}

/* What zeroing one buffer of size costs, as measured (0: not yet). */
static uint64_t zero_one_ns(const struct ion_pool *pool, size_t size)
{
	return pool->scrub_ns_mib * (uint64_t)size / (1u << 20);
}

/*
 * Measured per pool (so per heap), as it differs by more than ten times
 * either way: under emulation a memset of 8 MiB took 7 ms where the
 * system heap gave fresh pages in 2, while the CMA heap took 33 ms to
 * allocate and 11 to zero.  Until both are measured, the heap's kind
 * decides (contiguous: allocation is slower).
 */
bool pool_alloc_cheaper(const struct ion_pool *pool, size_t size)
{
	/* No cheaper while it cannot be done: where the heap was found out
	 * of memory lately, a buffer released might not come back (a stream
	 * that ran out mid-way lost every buffer it returned). */
	if (pool->refill_after_ns)
		return false;
	if (!pool->alloc_ns_mib || !pool->scrub_ns_mib)
		return !pool->alloc_slow;
	/* Twice as cheap at least: a refill by allocation costs the worker
	 * a round trip a buffer and the stream a miss when it is late (the
	 * 6.1 VM's system heap, at 1.4 times, missed 499 of 1200 gets at
	 * 240/s that way, against 2 with zeroing; a zeroing of 8 MiB takes
	 * about 3.5 ms there, within the 4.2 between frames). */
	if (2 * pool->alloc_ns_mib < pool->scrub_ns_mib)
		return true;
	/* Quicker at all, where zeroing one buffer takes longer than the
	 * stream's gap between two gets: the zeroing way then falls behind
	 * by a buffer a gap, and the gets zero for it (5.10's system heap,
	 * 8 MiB at 240/s: memsets of 6 ms against 4.2 between frames, where
	 * a fresh buffer came in 4 to 5; its p99 was 14 ms where the pool
	 * zeroed, 4 where it allocated). */
	return pool->alloc_ns_mib < pool->scrub_ns_mib && pool->gap_ns &&
	       zero_one_ns(pool, size) > pool->gap_ns;
}

/*
 * A pool that zeroes allocates seldom, so the cost of allocation it
 * weighs may date from the stream's start, when allocations competed
 * with gets that zeroed: 5.10's system heap measured 8.9 ms for 8 MiB
 * there where the raw call took 4.2, and the pool zeroed (6 ms a buffer
 * against a frame each 4.2 ms) for the whole stream, 421 of 1200 gets
 * zeroing themselves.  So where zeroing one falls behind the stream's
 * gap and allocation was last measured over a second ago, the worker
 * releases one returned buffer rather than zero it, once a second, and
 * the refill that replaces it measures allocation afresh.  On a heap
 * that truly allocates slower (CMA), that costs one slower refill a
 * second where zeroing falls behind anyway.
 */
bool pool_alloc_probe(struct ion_pool *pool, size_t size, uint64_t now)
{
	/* Not where the heap was found out of memory lately: the buffer
	 * released might not come back. */
	if (!pool->alloc_noted_ns || !pool->gap_ns || pool->refill_after_ns ||
	    now - pool->alloc_noted_ns <= COST_STALE_NS || now - pool->probe_ns <= COST_STALE_NS ||
	    zero_one_ns(pool, size) <= pool->gap_ns)
		return false;
	pool->probe_ns = now;
	return true;
}

/*
 * The other way round: a pool that refills by allocation zeroes nothing,
 * so its cost of zeroing, once measured dearer, would never be measured
 * again, however wrong (a vCPU descheduled during the measure).  So the
 * worker zeroes one returned buffer a second where it would release it,
 * once zeroing was last measured over a second ago: one memset a second
 * where allocation is truly cheaper.
 */
bool pool_scrub_probe(struct ion_pool *pool, uint64_t now)
{
	if (!pool->scrub_noted_ns || pool->refill_after_ns ||
	    now - pool->scrub_noted_ns <= COST_STALE_NS || now - pool->scrub_probe_ns <= COST_STALE_NS)
		return false;
	pool->scrub_probe_ns = now;
	return true;
}

/*
 * For a get that finds no clean buffer and may allocate instead of
 * zeroing a returned one: which is quicker for it, as measured, with no
 * margin (the get waits for one or the other; the margin above is for
 * the worker's way).  With the margin, a get on the 6.1 VM's system heap
 * zeroed 8 MiB itself (40 ms: the stream's p99) where the raw call gave
 * fresh pages in 2.3 ms and the worker's memsets took 6 on average.
 */
bool pool_alloc_faster(const struct ion_pool *pool)
{
	if (pool->alloc_ns_mib && pool->scrub_ns_mib)
		return pool->alloc_ns_mib < pool->scrub_ns_mib;
	return !pool->alloc_slow;
}
