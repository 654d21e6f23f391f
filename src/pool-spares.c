// SPDX-License-Identifier: MIT
/*
 * A pool's spare fds: a second fd of a clean buffer, made by the worker
 * off the hot path and off the pool's lock, which a get hands over
 * without a syscall.
 */
#include <fcntl.h>
#include <string.h>
#include <unistd.h>

#include "pool-internal.h"

/* Spare fds a class keeps at most: a stream takes one or two buffers
 * between two passes of the worker (each put wakes it). */
#define SPARES_A_CLASS 2

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
 * A dup that fails (out of fds) is no error: the get dups then.  The
 * pass's last step: when the worker should look at the pool next, read
 * in the last hold of the lock.
 */
struct pool_look pool_make_spares(struct ion_pool *pool)
{
	struct spare_dup want[POOL_SPARES_A_PASS];
	int orphans[POOL_SPARES_A_PASS];
	struct pool_look next;
	size_t n, n_orphans;

	pthread_mutex_lock(&pool->dup_lock);
	pthread_mutex_lock(pool->lock);
	n = spares_wanted(pool, want);
	if (!n) {
		next = pool_next_look(pool, pool_now_ns());
		pthread_mutex_unlock(pool->lock);
		pthread_mutex_unlock(&pool->dup_lock);
		return next;
	}
	pthread_mutex_unlock(pool->lock);
	for (size_t k = 0; k < n; k++)
		want[k].spare = fcntl(want[k].fd, F_DUPFD_CLOEXEC, 3);
	pthread_mutex_lock(pool->lock);
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
