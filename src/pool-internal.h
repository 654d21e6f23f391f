/* SPDX-License-Identifier: MIT */
/*
 * A pool's body and the functions its files share: the cache (pool.c),
 * its hints (pool-hints.c), its limits and statistics (pool-limits.c),
 * the refill workers (pool-refill.c), the stream's pace (pool-pace.c),
 * the zeroing and its cost (pool-scrub.c), the spare fds and the
 * hand-over slots (pool-spares.c), a get's bounded wait for the lock and
 * the buffers misses allocated (pool-adopt.c) and heaps' own pools
 * (pool-heap.c).
 * Nothing outside these files includes it.
 */
#ifndef LIBION_POOL_INTERNAL_H
#define LIBION_POOL_INTERNAL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <time.h>
#include <sys/stat.h>
#include <sys/types.h>

#include "context.h"
#include "heaps-conf.h"
#include "pool.h"
#include "util.h"

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
	uint64_t since_ns;	/* free since, or out since */
	unsigned int outs;	/* hand-outs so far: which one a count was read in */
	/* Out and found held by a get's reclaim (at looked_ns): looked at
	 * after the others until then, the wait doubling each time (reset
	 * by a hand-out). */
	uint64_t recheck_ns, looked_ns;
	unsigned int held_seen;
	/* The pool's own mapping of a counted buffer, kept from its first
	 * zeroing on (NULL: none): one more reference in the kernel's count,
	 * which pool_own_refs() expects. */
	void *map;
	/* A clean counted buffer's second fd, made by the worker ahead of
	 * its hand-out (pool_make_spares()), so that a get hands it over
	 * with no syscall; -1: none. */
	int spare;
	/* The hand-over slot its spare is published in (clean: a get may
	 * take it without the lock at any time); -1: none. */
	int slot;
	/* Its anchor is being dup'ed by the worker without the lock: a
	 * detach leaves the anchor open until that is done (pool_detach()). */
	bool duping;
	/* Dirty, kept to measure zeroing again (pool_scrub_probe()): the
	 * worker zeroes it whatever the costs say. */
	bool probe;
};

/* The spare fds a worker's pass makes at most: the next makes the rest. */
#define POOL_SPARES_A_PASS 16

/*
 * A hand-over slot: one clean buffer's spare fd (an uncounted buffer's
 * only fd: slot_fd() in pool-spares.c), published by the worker
 * under the pool's lock, which a get takes with one compare-and-swap
 * without the lock (pool_slot_take()).  v is 0 (empty), POOL_SLOT_FULL
 * with a generation and the fd, or POOL_SLOT_TAKEN with the time of the
 * take; the next holder of the lock settles a take (pool_settle()).
 * used, under the lock: a buffer is in it (full or taken).
 */
#define POOL_SLOTS 4
#define POOL_SLOT_FULL (1ull << 63)
#define POOL_SLOT_TAKEN (1ull << 62)
#define POOL_SLOT_WAKE (1ull << 61)	/* the take wakes the worker */
struct pool_slot {
	_Atomic uint64_t v;
	_Atomic size_t size;	/* the class of the buffer in it */
	bool used;
};

/* The references on a buffer's file when nothing but the pool holds it:
 * its anchor, its spare fd and its mapping, those it has. */
static inline int pool_own_refs(const struct pool_buf *b)
{
	return 1 + (b->spare >= 0) + (b->map != NULL);
}

/*
 * A buffer a get allocated, to be entered in the pool by the lock's next
 * holder (pool_lock() adopts it): the get hands its fd over without
 * waiting for the lock, which the worker may hold (pool-adopt.c).  fd:
 * the anchor of a counted buffer, -1 for an uncounted one (the caller
 * holds its only fd).  get_ns: when a get that did not take the lock was
 * made, for the pace and the count of misses; 0 for one that did.
 */
struct pool_adopt {
	int fd;
	dev_t dev;
	ino_t ino;
	size_t size;
	bool counted;
	uint64_t get_ns;
	struct pool_adopt *next;
};

/* A buffer being released without the pool's lock: its fds. */
struct pool_releasing {
	int fd, spare;
	struct pool_releasing *next;
};

struct ion_pool {
	atomic_int refcount;
	struct ion_ctx *ctx;
	bool heap_pool;		/* the context's own: holds no context reference */
	size_t page;		/* ion_page_size(), read once: for the size classes */
	/* What it allocates from, and with what (handed in, see pool.h). */
	const struct ion_pool_ops *ops;
	struct ion_solution *solution;
	/* The solution's registry's heap table: what the pool found out
	 * about each heap's buffers (ion_heap_pools_maps_known()). */
	struct ion_heap_pools *heaps;
	/* The pool's lock, reached through a pointer so that a getter of a
	 * const pool locks it all the same: the lock is no part of what the
	 * pool holds, only of how it is read.  The lock itself starts the
	 * next cache line: each lock and unlock by the worker wrote the
	 * line that a get reads first (heap_pool, in pool_class_of()), so
	 * a get after the worker's pass waited for that line to come back
	 * from the other core (the pool is allocated aligned to it). */
	pthread_mutex_t *lock;
	_Alignas(64) pthread_mutex_t lock_storage;
	/* Held by the worker while it makes spare fds without the pool's
	 * lock (pool_make_spares() in pool-spares.c), and by fork(): a child
	 * never inherits a spare that is in no entry yet.  Taken before the
	 * pool's lock. */
	pthread_mutex_t dup_lock;
	struct pool_buf *bufs;
	size_t n_bufs, cap;
	/* Where the next reclaim scan starts, a get's and the thread's:
	 * each resumes where the last stopped, so that buffers held for
	 * long at the front never hide those closed behind them. */
	size_t scan, bg_scan;
	struct ion_pool_hint *hints;
	size_t n_hints;
	/* The fds its hinted buffers may hold (a quarter of RLIMIT_NOFILE
	 * when the hints were set): spares are made within it. */
	uint64_t fd_share;
	/* Buffers beyond each hint's count the worker keeps ready: one more
	 * for each get that found none while the worker ran (the stream
	 * outruns it), up to the count again; back to 0 at a trim.  A
	 * caller's pool only (a heap pool keeps its hinted count). */
	size_t ahead;
	/* The hand-over slots, and how many are used (under the lock);
	 * the generation of the next fill, against a take that read a
	 * slot before it was emptied and filled again. */
	struct pool_slot slots[POOL_SLOTS];
	unsigned int n_slotted;
	uint32_t slot_gen;
	/* Buffers gets allocated, newest first, for the lock's next holder
	 * to enter (pool_adopt_all()); and how long a get waits for the
	 * lock before it allocates instead: as long as the pool's last
	 * allocation took (ns; 0: none yet, it waits as long as it takes). */
	_Atomic(struct pool_adopt *) adopt;
	_Atomic uint64_t lock_wait_ns;
	/* Gets waiting for the lock now: one that finds others waiting
	 * waits as long as it takes (a queue of gets, not a stalled
	 * holder: allocating past it would only grow the pool). */
	atomic_uint lock_waiters;
	/* Anchors of buffers detached while the worker dup'ed them, closed
	 * by the worker once its dups are made. */
	int dup_orphans[POOL_SPARES_A_PASS];
	size_t n_dup_orphans;
	/* Buffers detached and being released without the lock (each on
	 * its releasing thread's stack): a fork()'s child closes its copies
	 * of their fds, which are in no entry. */
	struct pool_releasing *releasing;
	bool zero;
	bool background;
	/* What a fresh buffer costs against zeroing a returned one, in ns a
	 * MiB (moving averages; 0: not measured yet), and the guess until
	 * both are measured: a contiguous heap (CMA) allocates slower.  The
	 * cheaper way refills, or the quicker where zeroing falls behind the
	 * stream (pool_alloc_cheaper()). */
	uint64_t alloc_ns_mib, scrub_ns_mib;
	bool alloc_slow;
	/* When allocation was last measured, and when the worker last
	 * released a buffer to measure it again (pool_alloc_probe()). */
	uint64_t alloc_noted_ns, probe_ns;
	/* The same for zeroing: when it was last measured, and when the
	 * worker last zeroed a buffer to measure it (pool_scrub_probe()). */
	uint64_t scrub_noted_ns, scrub_probe_ns;
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
	/* A put woke the worker since the last get: that get's refill is
	 * under way, and the next get need not wake it again (serve()). */
	bool put_woke;
	/* The stream's pace: when the last get was, and the time between
	 * two gets (a moving average; 0: not known, or the gets paused for
	 * a second).  The worker looks at the pool by itself once a gap,
	 * halfway between two gets, so that neither a get nor a put has to
	 * wake it (pool_paced()). */
	uint64_t last_get_ns, gap_ns;
	/* When background refill was turned on: a stream is likely to
	 * start, and the worker looks often until its pace is known. */
	uint64_t armed_ns;
	/* How long a holder keeps a buffer it puts back (a moving average
	 * of the puts' holds, ns; 0: no put yet): a get does not read the
	 * count of a buffer out for less, which is still held (likely_back()). */
	uint64_t hold_ns;
	/* Under the context's pools lock: the refill worker's pins on the
	 * pool while it works on it without that lock. */
	unsigned int pins;
	/* The refill worker of its heap and buffers' size, once background refill is on: set
	 * once (under the context's pools lock), never changed. */
	_Atomic(struct pool_worker *) worker;
	unsigned long long stats[ION_POOL_STAT_COUNT];
	/* For an instrumented run (logged at the pool's end, ION_LOG=debug):
	 * the zeroings, how many a get did itself, and their time; how many
	 * gets woke the worker, how many puts; how many hits a slot gave. */
	unsigned long long scrubs, get_scrubs, scrub_ns, scrub_ns_max, get_wakes, put_wakes;
	unsigned long long slot_hits;
	/* Gets that found the lock held and waited for it, the longest
	 * wait (ns), and those that allocated past it (pool-adopt.c). */
	unsigned long long lock_waits, lock_wait_max_ns, past_lock;
	/* Whether the log said that its mappings cannot be kept (no
	 * madvise): once a pool. */
	atomic_bool map_told;
	struct ion_pool *next;	/* the context's list */
};

/* Where a pool's hints came from, which decides how a cap is logged. */
enum hints_origin {
	HINTS_CALLER,	/* ion_pool_set_hints(): the program's own */
	HINTS_DEVICE,	/* a device's Pool (heaps.d, udev), at ion_pool_new() */
	HINTS_HEAP,	/* the heap's Pool in heaps.d: a heap pool */
};

/* ---- the cache (pool.c) ---- */
static inline uint64_t pool_now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/*
 * The size class of a request: whole pages of 4 KiB below 512 KiB, 64 KiB
 * below 8 MiB, 1 MiB above, the chunk sizes of the kernel's system heap
 * (the page at least).  A buffer serves exactly its class: at most 4 KiB
 * - 1 too large below 512 KiB, less than 12.5 % above.  0 for 0 or an
 * overflow.
 */
static inline size_t pool_size_class(size_t len, size_t page)
{
	size_t grain = len < (512u << 10) ? 4096 : len < (8u << 20) ? (64u << 10) : (1u << 20);

	if (grain < page)
		grain = page;
	if (len == 0 || len > SIZE_MAX - grain)
		return 0;
	return (len + grain - 1) / grain * grain;
}

/* len rounded up to pages, as ion_ctx_alloc() rounds it; 0 for 0 or an
 * overflow. */
size_t pool_page_round(size_t len);

/*
 * The size of the buffers that serve a request (or a hint) of len bytes:
 * its size class, but in a heap's pool len rounded to pages, since a
 * board's pool must not change the size of what an allocation by name
 * gives (a hint of 600K keeps buffers of 600 KiB, not of its class).
 * 0 for 0 or an overflow.
 */
static inline size_t pool_class_of(const struct ion_pool *pool, size_t len)
{
	return pool->heap_pool ? pool_page_round(len) : pool_size_class(len, pool->page);
}

/* Called with the lock held: b, free, is handed out at now (its fd
 * given already): the bookkeeping of a hit. */
void pool_mark_out(struct ion_pool *pool, struct pool_buf *b, uint64_t now);
void pool_drop(struct ion_pool *pool, size_t i, bool trimmed);
void pool_detach(struct ion_pool *pool, size_t i, bool trimmed, struct pool_buf *out);
void pool_release(struct pool_buf *b);
/* Called with the lock held: buffer i detached into *out (pool_detach())
 * to be released without the lock by pool_release_unlocked(), listed in
 * r (the caller's) until then. */
void pool_detach_to_release(struct ion_pool *pool, size_t i, bool trimmed, struct pool_buf *out,
			    struct pool_releasing *r);
/* Without the lock: releases b as pool_release() does, its fds closed
 * and r taken off the list in one hold of the dup lock, which fork()
 * takes: a child has either both fds and the entry that closes them,
 * or neither. */
void pool_release_unlocked(struct ion_pool *pool, struct pool_buf *b, struct pool_releasing *r);
int pool_add_buf(struct ion_pool *pool, int fd, const struct stat *st, size_t size,
		 enum buf_state state, bool counted);
bool pool_is_counted(struct ion_pool *pool, const struct ion_heap *heap, int fd);
/* Called with the lock held, where no index into the buffers is held (a
 * get's start, a refill pass's): a heap's pool forgets the uncounted
 * buffers taken from its slots since (it has no put to bring them back),
 * which settling a take, run inside loops over the buffers, must not.
 * Any other pool: nothing. */
void pool_forget_taken(struct ion_pool *pool);
/* Called with the lock held: forgets the uncounted buffers out that no
 * fd of this process holds any more, once enough have piled up. */
void pool_forget_closed(struct ion_pool *pool);
bool pool_found_free(struct ion_pool *pool, size_t i);
bool pool_reclaim(struct ion_pool *pool, size_t size, unsigned int max, bool hot,
		  uint64_t out_ns);
void pool_expire(struct ion_pool *pool);
/* A pool of solution's buffers, listed in the context's pools. */
int pool_create(struct ion_ctx *ctx, const struct ion_pool_ops *ops,
		struct ion_solution *solution, struct ion_heap_pools *heaps,
		bool heap_pool, bool background, struct ion_pool **ret);
void pool_free(struct ion_pool *pool);
/* ion_pool_get() for a length already the pool's size for it. */
int pool_get_size(struct ion_pool *pool, size_t size, int *ret_fd);

/* ---- zeroing and its cost (pool-scrub.c) ---- */
/* Zeroes b, one of pool's (unless !zero), and ends CPU access; 0 or a
 * negative errno.  *ns (if ns): what it took, less the making of a
 * mapping that the pool keeps from now on. */
int pool_scrub(struct ion_pool *pool, struct pool_buf *b, bool zero, uint64_t *ns);
/* Called with the lock held: a zeroing of size that took ns is done (by
 * a get or the refill worker), for the costs and the figures logged at
 * the pool's end.  A cost of zeroing measured over a second before is
 * replaced, not averaged. */
void pool_note_scrub(struct ion_pool *pool, uint64_t ns, size_t size, bool by_get);
/* Called with the lock held: an allocation of size took ns.  A cost
 * measured over a second before is replaced, not averaged. */
void pool_note_alloc(struct ion_pool *pool, uint64_t ns, size_t size);
/* Called with the lock held: whether the worker, which zeroes, releases a
 * returned buffer of size now (and allocates its replacement) to measure
 * allocation again; at most once a second.  Notes the probe. */
bool pool_alloc_probe(struct ion_pool *pool, size_t size, uint64_t now);
/* Called with the lock held: whether a returned buffer is zeroed now
 * where allocation was measured cheaper, to measure zeroing again (its
 * last measure over a second old); at most once a second.  Notes it. */
bool pool_scrub_probe(struct ion_pool *pool, uint64_t now);
/* Called with the lock held: whether the worker refills size's class by
 * allocation (the kernel zeroes a fresh buffer), as measured: allocation
 * twice as cheap as zeroing one, or quicker at all where zeroing one
 * takes longer than the stream's gap between gets. */
bool pool_alloc_cheaper(const struct ion_pool *pool, size_t size);
/* ... costs less than zeroing one, with no margin: a get's choice. */
bool pool_alloc_faster(const struct ion_pool *pool);

/* ---- hints (pool-hints.c) ---- */
int pool_set_hints(struct ion_pool *pool, const struct ion_pool_hint *hints, size_t n,
		   enum hints_origin origin);
size_t pool_ready(const struct ion_pool *pool, size_t size);
size_t pool_clean(const struct ion_pool *pool, size_t size);
bool pool_hint_full(const struct ion_pool *pool, size_t size);
bool pool_below_watermark(const struct ion_pool *pool, size_t size);
/* A hint's count and the buffers kept ahead of a stream. */
size_t pool_want(const struct ion_pool *pool, size_t h);

/* ---- held bytes and limits (pool-limits.c) ---- */
/* Called with the lock held, as every function on a pool's buffers is:
 * the held bytes moved by delta, no limit looked at.  The callers give
 * bytes back (a negative delta); a buffer joins through pool_charge(). */
void pool_account(struct ion_pool *pool, long long delta);
bool pool_room_for(const struct ion_pool *pool, size_t size);
/* Called with the lock held: size bytes more held, if they fit the
 * pool's limit and the context's; whether they did (nothing charged if
 * not).  The context's total is checked and added in one step: two pools,
 * each under its own lock, never pass the context's limit together, as a
 * check (pool_room_for()) and then an add could. */
bool pool_charge(struct ion_pool *pool, size_t size);
/* Releases what is free again, then idle buffers down to keep bytes. */
int pool_trim(struct ion_pool *pool, unsigned long long keep);

/* ---- the stream's pace (pool-pace.c), all called with the lock held ---- */
/* How often an idle worker looks at its pools by itself, in us; how often
 * before a stream's pace is known (2 ms: a stream of 240 frames a second
 * takes its two ready buffers in 8 ms). */
#define POOL_IDLE_TICK_US 100000u
#define POOL_WARM_TICK_US 2000u
/* When the worker looks at a pool next, and how often it then does. */
struct pool_look {
	uint64_t at_ns;
	unsigned int every_us;
};
/* A get at now; a put of b. */
void pool_note_get(struct ion_pool *pool, uint64_t now);
void pool_note_hold(struct ion_pool *pool, const struct pool_buf *b);
/* How long a buffer has been out before its count is worth reading. */
uint64_t pool_likely_back(const struct ion_pool *pool);
/* Whether the worker looks at the pool often enough by itself (at least
 * once between two of its gets) that a get or a put need not wake it. */
bool pool_paced(const struct ion_pool *pool);
/* The same for a worker that looks every tick_us (a pass's own look:
 * the worker's tick is the least of its pools'). */
bool pool_paced_by(const struct ion_pool *pool, unsigned int tick_us);
/* When the worker should look at the pool next: at once if a pass would
 * find work (pool_class_to_fill(), a buffer to zero). */
struct pool_look pool_next_look(const struct ion_pool *pool, uint64_t now);
/* Makes *next the sooner and more frequent of the two (no lock). */
void pool_look_sooner(struct pool_look *next, struct pool_look other);

/* ---- the refill workers (pool-refill.c) ---- */
/* Wakes the pool's worker, if it has one. */
void pool_wake(const struct ion_pool *pool);
/* Whether a worker refills the pool in the background now. */
bool pool_worker_running(const struct ion_pool *pool);
/* How often its worker looks at its pools by itself now, in us (as it
 * published after its last pass); 0 without a running worker. */
unsigned int pool_worker_tick_us(const struct ion_pool *pool);
/* Called with the lock held: whether a failed refill holds the
 * background refill off at now. */
bool pool_refill_held_off(const struct ion_pool *pool, uint64_t now);
/* Called with the lock held: the class of hint h if a refill would add
 * to it now (below its count, with room; only_low: only at its
 * watermark, half its count), else 0. */
size_t pool_class_to_fill(const struct ion_pool *pool, size_t h, bool only_low);
/* Called with the context's pools lock held, not the pool's (it reads
 * the hints, under the pool's lock): the pool's heap's worker for its
 * buffers' size, started if it is not running. */
int pool_start_worker(struct ion_pool *pool);
/* The same with a worker of the heap named (the tests' second heap). */
int pool_start_worker_for(struct ion_pool *pool, const char *heap);
/* Fills hinted classes up to their counts (only_low: those at half). */
int pool_fill(struct ion_pool *pool, bool only_low);

/* ---- spare fds and hand-over slots (pool-spares.c) ---- */
/* The worker's pass's last step, without the pool's lock held: spare
 * fds for the next hits, published in the slots; when the worker should
 * look at the pool next. */
struct pool_look pool_make_spares(struct ion_pool *pool);
/* The bits of a slot's v: a full one's fd and generation, a taken one's
 * time (ns of CLOCK_MONOTONIC: 2^61 is 73 years). */
#define POOL_SLOT_FD_MASK 0xffffffffull
#define POOL_SLOT_GEN_SHIFT 32
#define POOL_SLOT_GEN_MASK ((1ull << 29) - 1)
#define POOL_SLOT_NS_MASK (POOL_SLOT_WAKE - 1)

/*
 * Without the lock: the spare fd of a clean buffer of class size taken
 * from a slot (the caller's now), or -1 if no slot holds one.  One
 * compare-and-swap from full to taken, which the worker's fill (full
 * from empty) and the lock holder's unslot (empty from either) race
 * with.  Whoever changes v owns the buffer's spare: the get takes it to
 * its caller, the unslot back to the pool.  The generation keeps a take
 * from succeeding on a slot emptied and filled again with a buffer of
 * another class under the same fd number since its first read (it would
 * have to be filled 2^29 times meanwhile).  Inline: a get's hit is one
 * function (ion_pool_get()).
 */
static inline int pool_slot_take(struct ion_pool *pool, size_t size)
{
	for (size_t k = 0; k < POOL_SLOTS; k++) {
		struct pool_slot *slot = &pool->slots[k];
		uint64_t v = atomic_load_explicit(&slot->v, memory_order_acquire), taken;

		if (!(v & POOL_SLOT_FULL) ||
		    atomic_load_explicit(&slot->size, memory_order_relaxed) != size)
			continue;
		taken = POOL_SLOT_TAKEN | (v & POOL_SLOT_WAKE) | (pool_now_ns() & POOL_SLOT_NS_MASK);
		if (!atomic_compare_exchange_strong_explicit(&slot->v, &v, taken, memory_order_acq_rel,
							     memory_order_relaxed))
			continue;
		if (v & POOL_SLOT_WAKE)
			pool_wake(pool);
		return (int)(v & POOL_SLOT_FD_MASK);
	}
	return -1;
}
/* Called with the lock held: the buffers taken from slots since, out. */
void pool_settle(struct ion_pool *pool);
/* Called with the lock held: buffer i, in a slot, taken back out of it.
 * Whether it is still clean in the pool (false: a get took it first,
 * and it is out now). */
bool pool_unslot(struct ion_pool *pool, size_t i);
/* Called with the lock held: every slot emptied (background refill off). */
void pool_unslot_all(struct ion_pool *pool);

/* ---- buffers a get allocated, entered later (pool-adopt.c) ---- */
/* Without the lock: fd's buffer (st its fstat()), which a get allocated
 * and hands to its caller, given to the lock's next holder to enter (an
 * anchor for a counted one: anchor; -1 for an uncounted one); get_ns as
 * in struct pool_adopt.  0, or -ENOMEM: then nothing was taken, and the
 * anchor is still the caller's to close. */
int pool_adopt_later(struct ion_pool *pool, int anchor, const struct stat *st, size_t size,
		     bool counted, uint64_t get_ns);
/* Called with the lock held: enters the buffers waiting for it. */
void pool_adopt_all(struct ion_pool *pool);
/* A fork()'s child: closes the anchors of the buffers waiting; no get
 * waits for the lock there. */
void pool_adopt_fork_child(struct ion_pool *pool);
/* An allocation of the pool's took ns: a get waits that long for the
 * lock at most from now on. */
static inline void pool_note_alloc_wait(struct ion_pool *pool, uint64_t ns)
{
	atomic_store_explicit(&pool->lock_wait_ns, ns ? ns : 1, memory_order_relaxed);
}
/* The lock found held by a get's try: waits for it as long as an
 * allocation takes (lock_wait_ns; as long as it takes until one was
 * timed) and takes it (pool_locked()); false if it is held longer, and
 * the get allocates. */
bool pool_lock_wait(struct ion_pool *pool);

/* The lock just taken: the buffers waiting for it entered, and the
 * takes from the slots settled, so that what its holder reads of the
 * buffers is true at least as of then. */
static inline void pool_locked(struct ion_pool *pool)
{
	if (atomic_load_explicit(&pool->adopt, memory_order_relaxed))
		pool_adopt_all(pool);
	if (pool->n_slotted)
		pool_settle(pool);
}

/* Takes the pool's lock, which every function on a pool's buffers holds
 * (pool_locked()). */
static inline void pool_lock(struct ion_pool *pool)
{
	pthread_mutex_lock(pool->lock);
	pool_locked(pool);
}

#endif
