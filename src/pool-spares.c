// SPDX-License-Identifier: MIT
/*
 * A pool's spare fds: a second fd of a clean buffer, made by the worker
 * off the hot path and off the pool's lock, which a get hands over
 * without a syscall; and the hand-over slots, in which the worker
 * publishes a spare for each hinted class (or an uncounted buffer's
 * only fd, a memfd's), so that a get takes it without waiting for the
 * pool's lock either.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdatomic.h>
#include <string.h>
#include <unistd.h>

#include "pool-internal.h"

/* Spare fds a class keeps at most, and so slots it fills at most (a
 * slot holds a spare): a stream takes one or two buffers between two
 * passes of the worker (each put wakes it), and with two, a stream
 * whose worker comes late once (its vCPU descheduled) still finds one
 * slot full. */
#define SPARES_A_CLASS 2

/* ---- the hand-over slots ---- */

/* The fd that a slot hands over for buffer b: its spare; an uncounted
 * buffer's only fd (a memfd's), which a get under the lock hands over
 * as well (hand_out()).  A heap's pool forgets such a buffer once it is
 * out, as hand_out() does, but not when the take is settled, which may
 * be inside a loop over the buffers: at its next get or refill pass
 * (pool_forget_taken()).  -1: none. */
static int slot_fd(const struct pool_buf *b)
{
	return b->counted ? b->spare : b->fd;
}

/* Called with the lock held: the buffer in slot k, which its v (swapped
 * for empty) says is the pool's again or the caller's. */
static void slot_emptied(struct ion_pool *pool, size_t k, uint64_t v)
{
	pool->slots[k].used = false;
	pool->n_slotted--;
	for (size_t i = 0; i < pool->n_bufs; i++) {
		struct pool_buf *b = &pool->bufs[i];
		uint64_t at;

		if (b->slot != (int)k)
			continue;
		b->slot = -1;
		if (!(v & POOL_SLOT_TAKEN))
			return; /* clean in the pool, with its spare */
		/* The get's caller holds the spare (an uncounted one's only
		 * fd: unanchored, as hand_out() leaves it): a hit at the time
		 * of the take, as the locked get would have counted it. */
		at = v & POOL_SLOT_NS_MASK;
		if (b->counted) {
			b->spare = -1;
		} else {
			b->fd = -1;
			pool->n_unanchored++;
		}
		pool_mark_out(pool, b, at);
		pool->get_wakes += (v & POOL_SLOT_WAKE) != 0;
		pool->slot_hits++;
		pool->put_woke = false;
		/* A take made while a get under the lock was being served
		 * (another thread's) came as good as together with it. */
		pool_note_get(pool, at > pool->last_get_ns ? at : pool->last_get_ns);
		return;
	}
}

void pool_settle(struct ion_pool *pool)
{
	uint64_t taken[POOL_SLOTS];
	size_t of[POOL_SLOTS], n = 0;

	for (size_t k = 0; k < POOL_SLOTS; k++) {
		struct pool_slot *slot = &pool->slots[k];
		uint64_t v;
		size_t j;

		if (!slot->used)
			continue;
		v = atomic_load_explicit(&slot->v, memory_order_acquire);
		/* Only a fill under the lock makes a taken slot anything else. */
		if (!(v & POOL_SLOT_TAKEN))
			continue;
		atomic_store_explicit(&slot->v, 0, memory_order_relaxed);
		/* In the order of the takes, for the pace. */
		for (j = n++; j > 0 && (taken[j - 1] & POOL_SLOT_NS_MASK) > (v & POOL_SLOT_NS_MASK); j--) {
			taken[j] = taken[j - 1];
			of[j] = of[j - 1];
		}
		taken[j] = v;
		of[j] = k;
	}
	for (size_t j = 0; j < n; j++)
		slot_emptied(pool, of[j], taken[j]);
}

bool pool_unslot(struct ion_pool *pool, size_t i)
{
	size_t k = (size_t)pool->bufs[i].slot;
	uint64_t v = atomic_exchange_explicit(&pool->slots[k].v, 0, memory_order_acq_rel);

	slot_emptied(pool, k, v);
	return !(v & POOL_SLOT_TAKEN);
}

void pool_unslot_all(struct ion_pool *pool)
{
	for (size_t i = 0; i < pool->n_bufs; i++)
		if (pool->bufs[i].slot >= 0)
			(void)pool_unslot(pool, i);
}

/* Called with the lock held: how many slots hold a buffer of class size. */
static size_t slots_of(const struct ion_pool *pool, size_t size)
{
	size_t n = 0;

	for (size_t k = 0; k < POOL_SLOTS; k++)
		n += pool->slots[k].used &&
		     atomic_load_explicit(&pool->slots[k].size, memory_order_relaxed) == size;
	return n;
}

/*
 * Called with the lock held, by the worker: the wake bits of class
 * size's slots (h its hint), fresh[k] the v of a slot this pass fills
 * (0: none), which it publishes.  A take wakes the worker if it leaves
 * the class at its watermark, as serve() decides for a get under the
 * lock: the first slot, in the order gets take them (the slots'), whose
 * take does, unless the worker comes by itself at the stream's pace
 * until its next pass (paced).  Marked again each pass: a bit left out
 * while a stream ran must not outlive it.  A burst of gets after a pause
 * took every slot without waking the idle worker, and then allocated.
 */
static void mark_slots(struct ion_pool *pool, size_t h, size_t size, bool paced,
		       const uint64_t *fresh)
{
	size_t clean = pool_clean(pool, size), mark = pool_want(pool, h) / 2;
	bool marked = paced;

	/* A buffer whose take is not settled yet is gone already. */
	for (size_t k = 0; k < POOL_SLOTS; k++)
		if (pool->slots[k].used && !fresh[k] &&
		    atomic_load_explicit(&pool->slots[k].size, memory_order_relaxed) == size &&
		    !(atomic_load_explicit(&pool->slots[k].v, memory_order_relaxed) & POOL_SLOT_FULL))
			clean -= clean > 0;
	for (size_t k = 0; k < POOL_SLOTS; k++) {
		struct pool_slot *slot = &pool->slots[k];
		uint64_t v = fresh[k] ? fresh[k] : atomic_load_explicit(&slot->v, memory_order_relaxed);
		uint64_t want = v & ~POOL_SLOT_WAKE;

		if (!slot->used || atomic_load_explicit(&slot->size, memory_order_relaxed) != size ||
		    !(v & POOL_SLOT_FULL))
			continue;
		clean -= clean > 0;
		if (!marked && clean <= mark) {
			want |= POOL_SLOT_WAKE;
			marked = true;
		}
		if (fresh[k])
			atomic_store_explicit(&slot->v, want, memory_order_release);
		else if (want != v)
			/* Fails only where a get took it meanwhile. */
			atomic_compare_exchange_strong_explicit(&slot->v, &v, want, memory_order_acq_rel,
								memory_order_relaxed);
	}
}

/*
 * Called with the lock held, by the worker: each hinted class gets up
 * to SPARES_A_CLASS slots, with clean buffers that have a fd to hand
 * over (slot_fd()), while slots are left, and its slots' wake bits as
 * paced says (mark_slots()).
 */
static void fill_slots(struct ion_pool *pool, bool paced)
{
	for (size_t h = 0; h < pool->n_hints; h++) {
		size_t size = pool_class_of(pool, pool->hints[h].size), n = slots_of(pool, size);
		uint64_t fresh[POOL_SLOTS] = { 0 };

		for (size_t i = 0; i < pool->n_bufs && n < SPARES_A_CLASS &&
				   pool->n_slotted < POOL_SLOTS; i++) {
			struct pool_buf *b = &pool->bufs[i];
			size_t k = 0;
			int fd;

			if (b->size != size || b->state != BUF_FREE || b->slot >= 0 ||
			    (fd = slot_fd(b)) < 0)
				continue;
			while (pool->slots[k].used)
				k++;
			pool->slot_gen = (pool->slot_gen + 1) & POOL_SLOT_GEN_MASK;
			fresh[k] = POOL_SLOT_FULL | (uint64_t)pool->slot_gen << POOL_SLOT_GEN_SHIFT |
				   (uint32_t)fd;
			b->slot = (int)k;
			pool->slots[k].used = true;
			pool->n_slotted++;
			n++;
			atomic_store_explicit(&pool->slots[k].size, size, memory_order_relaxed);
		}
		mark_slots(pool, h, size, paced, fresh);
	}
}

/* ---- spare fds ---- */

/* A spare being made: for the buffer anchored by fd with this inode. */
struct spare_dup {
	int fd;
	dev_t dev;
	ino_t ino;
	int spare;
};

/* Called with the lock held: the buffers that get a spare this pass,
 * up to SPARES_A_CLASS clean counted ones of each hinted class, within
 * the hints' share of RLIMIT_NOFILE with the anchors, marked as being
 * dup'ed.  How many. */
static size_t spares_wanted(struct ion_pool *pool, struct spare_dup *want)
{
	uint64_t fds = 0;
	size_t n = 0;

	for (size_t i = 0; i < pool->n_bufs; i++)
		fds += (pool->bufs[i].fd >= 0) + (pool->bufs[i].spare >= 0);
	for (size_t h = 0; h < pool->n_hints && fds < pool->fd_share; h++) {
		size_t size = pool_class_of(pool, pool->hints[h].size), spares = 0;

		for (size_t i = 0; i < pool->n_bufs; i++)
			spares += pool->bufs[i].size == size && pool->bufs[i].spare >= 0;
		for (size_t i = 0; i < pool->n_bufs && spares < SPARES_A_CLASS &&
				   fds < pool->fd_share && n < POOL_SPARES_A_PASS; i++) {
			struct pool_buf *b = &pool->bufs[i];

			if (b->size != size || b->state != BUF_FREE || !b->counted || b->spare >= 0)
				continue;
			want[n++] = (struct spare_dup){ b->fd, b->dev, b->ino, -1 };
			b->duping = true;
			spares++;
			fds++;
		}
	}
	return n;
}

/*
 * A second fd, for the caller, of up to SPARES_A_CLASS clean counted
 * buffers of each hinted class, so that a get hands it over without a
 * syscall (the dup was what a hit did that its floor did not: 2.2 times
 * the floor on 6.1's system heap, and dups of 1 to 4 ms among the slow
 * hits under TCG).  Made by the worker, off the hot path, and without
 * the pool's lock: under it, gets of the 6.1 VM's 4 KiB stream waited
 * up to 250 us for the worker's dups.  The dup lock keeps fork() out
 * meanwhile, as a child would hold a copy of a spare that is in no
 * entry, which its fork handler could not close.  A spare goes to its
 * buffer if that is still the same one, clean and without a spare (a get
 * may have handed it out meanwhile); else it is closed, before fork() may
 * come again.  A buffer detached meanwhile (a trim, an expiry, a put past
 * a limit) leaves its anchor to be closed here, after the dups: closed
 * at once, its number could be another file's by the time of the dup.
 * A dup that fails (out of fds) is no error: the get dups then, and the
 * pass tries no more after one that found the fds used up.  The pass's
 * last step: when the worker should look at the pool next, read
 * in the last hold of the lock.
 */
struct pool_look pool_make_spares(struct ion_pool *pool)
{
	struct spare_dup want[POOL_SPARES_A_PASS];
	int orphans[POOL_SPARES_A_PASS];
	struct pool_look next;
	size_t n, n_orphans;

	pthread_mutex_lock(&pool->dup_lock);
	pool_lock(pool);
	n = spares_wanted(pool, want);
	if (!n) {
		next = pool_next_look(pool, pool_now_ns());
		if (pool->background)
			fill_slots(pool, pool_paced_by(pool, next.every_us));
		pthread_mutex_unlock(pool->lock);
		pthread_mutex_unlock(&pool->dup_lock);
		return next;
	}
	pthread_mutex_unlock(pool->lock);
	for (size_t k = 0; k < n; k++) {
		want[k].spare = fcntl(want[k].fd, F_DUPFD_CLOEXEC, 3);
		/* Out of fds: the others would fail alike, a syscall each. */
		if (want[k].spare < 0 && (errno == EMFILE || errno == ENFILE))
			break;
	}
	pool_lock(pool);
	for (size_t k = 0; k < n; k++) {
		for (size_t i = 0; i < pool->n_bufs; i++) {
			struct pool_buf *b = &pool->bufs[i];

			if (b->fd != want[k].fd || b->dev != want[k].dev || b->ino != want[k].ino)
				continue;
			b->duping = false;
			if (b->state == BUF_FREE && b->spare < 0 && want[k].spare >= 0) {
				b->spare = want[k].spare;
				want[k].spare = -1;
			}
			break;
		}
	}
	n_orphans = pool->n_dup_orphans;
	memcpy(orphans, pool->dup_orphans, n_orphans * sizeof(orphans[0]));
	pool->n_dup_orphans = 0;
	next = pool_next_look(pool, pool_now_ns());
	if (pool->background)
		fill_slots(pool, pool_paced_by(pool, next.every_us));
	pthread_mutex_unlock(pool->lock);
	/* Closed before a fork may come. */
	for (size_t k = 0; k < n; k++)
		if (want[k].spare >= 0)
			close(want[k].spare);
	for (size_t k = 0; k < n_orphans; k++)
		close(orphans[k]);
	pthread_mutex_unlock(&pool->dup_lock);
	return next;
}
