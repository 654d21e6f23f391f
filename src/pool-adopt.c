// SPDX-License-Identifier: MIT
/*
 * A get never waits for the pool's lock longer than an allocation takes.
 *
 * The lock is held for microseconds, but a holder can be descheduled
 * while it holds it: in the 5.10 VM a get of a 4 KiB stream waited 4.1 ms
 * for it while the worker held it, where the kernel gives a fresh 4 KiB
 * buffer in about 0.1 ms.  So a get waits for the lock at most as long
 * as the pool's last allocation took, and past that allocates as a miss
 * does, without the lock.  What it allocated (and what every miss
 * allocates) is entered in the pool by the lock's next holder: it waits
 * in a list that a get pushes onto with one compare-and-swap and the
 * holder takes whole with one exchange (pool_locked()), so a put or a
 * count read later finds the buffer as if the get had entered it.
 *
 * fork(): a child closes the anchors waiting in the list.  An anchor
 * made but not yet in the list when the child was made stays open there,
 * as a refill's new buffer does (fill_one()): the kernel's count then
 * includes the child's copy, so the parent never hands the buffer out
 * while the child holds it.
 */
#include <errno.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

#include "pool-internal.h"

int pool_adopt_later(struct ion_pool *pool, int anchor, const struct stat *st, size_t size,
		     bool counted, uint64_t get_ns)
{
	struct pool_adopt *a = malloc(sizeof(*a));

	if (!a)
		return -ENOMEM;
	*a = (struct pool_adopt){
		.fd = anchor, .dev = st->st_dev, .ino = st->st_ino, .size = size,
		.counted = counted, .get_ns = get_ns,
		.next = atomic_load_explicit(&pool->adopt, memory_order_relaxed),
	};
	while (!atomic_compare_exchange_weak_explicit(&pool->adopt, &a->next, a,
						      memory_order_release, memory_order_relaxed))
		;
	return 0;
}

/* Called with the lock held: enters a, as the get that made it would
 * have under the lock. */
static void adopt(struct ion_pool *pool, const struct pool_adopt *a)
{
	struct stat st = { .st_dev = a->dev, .st_ino = a->ino };

	if (a->get_ns) {
		/* A get the lock did not see: a miss, and a step of the
		 * stream's pace unless a later get was noted already. */
		pool->stats[ION_POOL_STAT_MISSES]++;
		pool->past_lock++;
		if (a->get_ns > pool->last_get_ns)
			pool_note_get(pool, a->get_ns);
	}
	/* A heap's pool has no put: what it cannot count, it forgets. */
	if (!a->counted && pool->heap_pool)
		return;
	if (!a->counted)
		pool_forget_closed(pool);
	if (pool_add_buf(pool, a->fd, &st, a->size, BUF_OUT, a->counted) < 0 && a->fd >= 0)
		close(a->fd); /* the caller's fd stands: not pooled, that is all */
}

void pool_adopt_all(struct ion_pool *pool)
{
	struct pool_adopt *a = atomic_exchange_explicit(&pool->adopt, NULL, memory_order_acquire);
	struct pool_adopt *oldest = NULL, *next;

	/* Oldest first: the buffers stay in the order of their gets. */
	for (; a; a = next) {
		next = a->next;
		a->next = oldest;
		oldest = a;
	}
	for (a = oldest; a; a = next) {
		next = a->next;
		adopt(pool, a);
		free(a);
	}
}

void pool_adopt_fork_child(struct ion_pool *pool)
{
	struct pool_adopt *a = atomic_exchange_explicit(&pool->adopt, NULL, memory_order_acquire);
	struct pool_adopt *next;

	for (; a; a = next) {
		next = a->next;
		if (a->fd >= 0)
			close(a->fd);
		free(a);
	}
	atomic_store_explicit(&pool->lock_waiters, 0, memory_order_relaxed); /* the parent's */
}

bool pool_lock_wait(struct ion_pool *pool)
{
	uint64_t wait = atomic_load_explicit(&pool->lock_wait_ns, memory_order_relaxed);
	uint64_t t0 = pool_now_ns(), waited;
	struct timespec until;
	int r;

	/* Other gets wait too: the lock is busy, not stalled, and comes
	 * round (16 threads on one pool of the 6.1 VM's udmabuf heap, each
	 * allocating past it, ran the process out of fds). */
	if (atomic_fetch_add_explicit(&pool->lock_waiters, 1, memory_order_relaxed) > 0)
		wait = 0;
	if (!wait) {
		r = pthread_mutex_lock(pool->lock);
	} else {
		/* CLOCK_REALTIME, as pthread_mutex_timedlock() wants (the
		 * sanitizers know no pthread_mutex_clocklock()): a step of
		 * the clock meanwhile lengthens or shortens the wait. */
		clock_gettime(CLOCK_REALTIME, &until);
		until.tv_sec += (time_t)(wait / 1000000000u);
		until.tv_nsec += (long)(wait % 1000000000u);
		if (until.tv_nsec >= 1000000000) {
			until.tv_sec++;
			until.tv_nsec -= 1000000000;
		}
		r = pthread_mutex_timedlock(pool->lock, &until);
	}
	atomic_fetch_sub_explicit(&pool->lock_waiters, 1, memory_order_relaxed);
	if (r != 0)
		return false;
	waited = pool_now_ns() - t0;
	pool->lock_waits++;
	if (waited > pool->lock_wait_max_ns)
		pool->lock_wait_max_ns = waited;
	pool_locked(pool);
	return true;
}
