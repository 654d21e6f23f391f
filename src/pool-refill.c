// SPDX-License-Identifier: MIT
/*
 * A context's pools together: the workers (two a heap: one for pools of
 * small buffers, one for the others) that refill them in the background,
 * read the kernel's counts and zero returned buffers off the hot path,
 * the memory pressure trigger that makes them trim, and what fork() does
 * to the pools.
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include <ion/ion.h>

#include "fork.h"
#include "pool-internal.h"

/* Every context's pools, for fork(): the child empties them all. */
static pthread_mutex_t all_lock = PTHREAD_MUTEX_INITIALIZER;
static struct ion_pools *all_pools;
/* Forks so far, counted by fork()'s handler while it holds every pool's
 * lock: a refill that saw it change while it allocated may have left
 * its new buffer's fd in a child (fill_one()). */
static atomic_uint forks;

/*
 * The worker's zeroing, one buffer at a time without the lock (a memset
 * of megabytes must not stall a hot path's get): the buffer is BUF_SCRUB
 * meanwhile, which nothing else touches, and is found again by its
 * anchor, since other buffers may have moved.  Where a fresh buffer (the
 * kernel zeroes it) was measured to cost less than a memset, a returned
 * one is released instead, once a zeroing was measured, and
 * pool_fill() allocates in its place.  The lock is taken once a buffer
 * and once more: a zeroed one is entered and the next one looked for in
 * one hold, since a get that comes during any hold may wait for it (the
 * worker's vCPU, stalled under TCG while it held the lock, kept gets
 * waiting for milliseconds, whatever it did under it).
 */
static void scrub_unlocked(struct ion_pool *pool)
{
	pool_lock(pool);
	for (;;) {
		struct pool_releasing releasing;
		struct pool_buf copy;
		bool zero, found = false, release = false;
		uint64_t ns;
		int r;

		zero = pool->zero;
		for (size_t i = 0; i < pool->n_bufs && !found; i++) {
			if (pool->bufs[i].state != BUF_DIRTY)
				continue;
			found = true;
			/* A fresh one costs less, or allocation is measured
			 * again: pool_fill() allocates it.  Unless it was kept,
			 * or is zeroed now, to measure zeroing again. */
			release = zero && pool->scrub_ns_mib && !pool->bufs[i].probe &&
				  ((pool_alloc_cheaper(pool, pool->bufs[i].size) &&
				    !pool_scrub_probe(pool, pool_now_ns())) ||
				   pool_alloc_probe(pool, pool->bufs[i].size, pool_now_ns()));
			pool->bufs[i].probe = false;
			if (release) {
				pool_detach_to_release(pool, i, false, &copy, &releasing);
			} else {
				pool->bufs[i].state = BUF_SCRUB;
				copy = pool->bufs[i];
			}
		}
		if (!found)
			break;
		pthread_mutex_unlock(pool->lock);
		if (release) {
			pool_release_unlocked(pool, &copy, &releasing);
			pool_lock(pool);
			continue;
		}
		r = pool_scrub(pool, &copy, zero, &ns);
		pool_lock(pool);
		pool_note_scrub(pool, ns, copy.size, false);
		found = false;
		for (size_t i = 0; i < pool->n_bufs && !found; i++)
			if (pool->bufs[i].fd == copy.fd && pool->bufs[i].state == BUF_SCRUB) {
				found = true;
				pool->bufs[i].map = copy.map;
				if (r < 0) {
					pool_drop(pool, i, false);
				} else {
					pool->bufs[i].state = BUF_FREE;
					pool->bufs[i].since_ns = pool_now_ns();
				}
			}
		if (!found && copy.map) {
			/* Dropped meanwhile (a fork's child). */
			pthread_mutex_unlock(pool->lock);
			munmap(copy.map, copy.size);
			pool_lock(pool);
		}
	}
	pthread_mutex_unlock(pool->lock);
}

/*
 * The background thread's reclaim: the kernel's counts read without the
 * lock (an fdinfo read is slow, slower still under emulation, and a hot
 * path's get must not wait for sixteen of them).  A count is trusted only
 * for the hand-out it was read in: the same fd and inode, still out, and
 * not put back and handed out again meanwhile (a count of 1 read between
 * the put and the next get is no longer true after it), when the lock is
 * taken again; where fdinfo does not give the inode (before Linux 5.14),
 * the counts are read under the lock as before.  The pass's first step:
 * false, having done nothing, if the pool's background refill is off.
 */
static bool reclaim_unlocked(struct ion_pool *pool, bool all)
{
	struct { int fd; ino_t ino; unsigned int outs; int refs, own; ino_t seen; } c[16];
	uint64_t now, young;
	size_t n = 0, i;

	pool_lock(pool);
	if (!pool->background) {
		pthread_mutex_unlock(pool->lock);
		return false;
	}
	now = pool_now_ns(); /* after the lock: no get hands out later */
	pool_expire(pool);
	/* Between two of its 100 ms looks, the worker paced to a stream
	 * reads only the counts of buffers out longer than their holders
	 * keep them, as a get does: a stream that puts its buffers back
	 * holds those out, and reading their counts at every pass would be
	 * all loss. */
	young = all ? 0 : pool_likely_back(pool);
	/* Sixteen at a time, from where the last pass stopped. */
	i = pool->bg_scan;
	for (size_t seen = 0; seen < pool->n_bufs && n < 16; seen++, i++) {
		if (i >= pool->n_bufs)
			i = 0;
		if (pool->bufs[i].state == BUF_OUT && pool->bufs[i].counted &&
		    now - pool->bufs[i].since_ns >= young)
			c[n++] = (typeof(c[0])){ pool->bufs[i].fd, pool->bufs[i].ino,
						 pool->bufs[i].outs, 0,
						 pool_own_refs(&pool->bufs[i]), 0 };
	}
	pool->bg_scan = i;
	pthread_mutex_unlock(pool->lock);
	if (!n)
		return true;
	for (size_t k = 0; k < n; k++)
		c[k].refs = pool->ops->refs(c[k].fd, &c[k].seen);
	pool_lock(pool);
	for (size_t k = 0; k < n; k++) {
		if (c[k].refs < 0)
			continue; /* unread (out of fds or memory): next pass */
		if (!c[k].seen) {
			pool_reclaim(pool, 0, 16, false, 0); /* no inode in fdinfo */
			break;
		}
		if (c[k].refs != c[k].own || c[k].seen != c[k].ino)
			continue;
		for (i = 0; i < pool->n_bufs; i++) {
			struct pool_buf *b = &pool->bufs[i];

			if (b->fd == c[k].fd && b->ino == c[k].ino && b->state == BUF_OUT &&
			    b->outs == c[k].outs) {
				pool_found_free(pool, i);
				break;
			}
		}
	}
	pthread_mutex_unlock(pool->lock);
	return true;
}

/* ---- the workers ---- */

/*
 * Two refill workers a heap: threads (all signals blocked), each with its
 * own eventfd, working on the pools whose solution starts with that heap,
 * one on those hinted for small buffers, one on the others.  A CMA
 * refill, which can take seconds, never holds up the system heap's pools
 * (one thread for all made every stream wait for the slowest), and
 * another pool's memset of 8 MiB does not hold up a cursor's 4 KiB refill
 * on the same heap.  Workers live
 * until the context's end (a pool's worker pointer stays valid); a forked
 * child has none running, and starts them again.
 */
struct pool_worker {
	struct ion_ctx *ctx;
	char *heap;		/* the heap's name and */
	bool small;		/* whether its pools' buffers are small: the key */
	pthread_t thread;
	atomic_int wake_fd;	/* an eventfd, or -1 */
	/* How often it looks at its pools by itself now, in us: set by the
	 * thread after each pass (struct pool_look), read by gets and puts. */
	atomic_uint tick_us;
	/* Set under the context's pools lock, read under a pool's alone. */
	atomic_bool running;
	bool stop;		/* under the context's pools lock */
	bool psi;		/* the one that polls the pressure trigger (worker_start()) */
	/* Its snapshot of the pools it works on, pinned (the context's
	 * memory, so that a forked child still frees it). */
	struct ion_pool **snap;
	size_t snap_cap;
	struct pool_worker *next;
};

static void *refill_thread(void *arg);

static void worker_wake(struct pool_worker *w)
{
	int fd = w ? atomic_load_explicit(&w->wake_fd, memory_order_acquire) : -1;
	uint64_t one = 1;

	/* A full counter wakes the thread all the same: no error to mind. */
	if (fd >= 0)
		(void)!write(fd, &one, sizeof(one));
}

void pool_wake(const struct ion_pool *pool)
{
	worker_wake(atomic_load_explicit(&pool->worker, memory_order_acquire));
}

unsigned int pool_worker_tick_us(const struct ion_pool *pool)
{
	struct pool_worker *w = atomic_load_explicit(&pool->worker, memory_order_acquire);

	if (!w || !atomic_load_explicit(&w->running, memory_order_acquire))
		return 0;
	return atomic_load_explicit(&w->tick_us, memory_order_relaxed);
}

bool pool_worker_running(const struct ion_pool *pool)
{
	struct pool_worker *w = atomic_load_explicit(&pool->worker, memory_order_acquire);

	return w && atomic_load_explicit(&w->running, memory_order_acquire);
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

/* The name of the heap whose worker refills pool: its solution's first. */
static const char *pool_heap_name(const struct ion_pool *pool)
{
	const struct ion_heap *heap = ion_solution_get_heap(pool->solution, 0);

	return heap ? ion_heap_get_name(heap) : "";
}

/* Called with the context's pools lock held: the worker of the heap for
 * small buffers or the others, made if there is none yet (not started);
 * NULL if out of memory. */
static struct pool_worker *worker_of(struct ion_ctx *ctx, const char *heap, bool small)
{
	struct ion_pools *all = ion_ctx_pools(ctx);
	struct pool_worker *w;

	for (w = all->workers; w; w = w->next)
		if (strcmp(w->heap, heap) == 0 && w->small == small)
			return w;
	w = calloc(1, sizeof(*w));
	if (!w || !(w->heap = strdup(heap))) {
		free(w);
		return NULL;
	}
	w->small = small;
	w->ctx = ctx;
	atomic_init(&w->wake_fd, -1);
	atomic_init(&w->running, false);
	atomic_init(&w->tick_us, POOL_IDLE_TICK_US);
	w->next = all->workers;
	all->workers = w;
	return w;
}

/* Called with the context's pools lock held: starts w's thread. */
static int worker_start(struct pool_worker *w)
{
	struct ion_pools *all = ion_ctx_pools(w->ctx);
	sigset_t every, old;
	int r;

	if (atomic_load_explicit(&w->running, memory_order_relaxed))
		return 0;
	/* One worker polls the pressure trigger, for every pool: the first
	 * one started, and in a forked child, where none runs, the first
	 * one started again, which need not be the parent's poller. */
	w->psi = true;
	for (struct pool_worker *o = all->workers; o; o = o->next)
		if (o != w && o->psi && atomic_load_explicit(&o->running, memory_order_relaxed))
			w->psi = false;
	if (atomic_load_explicit(&w->wake_fd, memory_order_relaxed) < 0) {
		int fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);

		if (fd < 0)
			return neg_errno();
		atomic_store_explicit(&w->wake_fd, fd, memory_order_release);
	}
	/* Kept in the context, not the thread: a forked child, which has no
	 * thread, closes it with the context's other fds. */
	if (w->psi && all->psi_fd < 0)
		all->psi_fd = open_psi(w->ctx);
	w->stop = false;
	/* The library's thread takes none of the program's signals. */
	sigfillset(&every);
	pthread_sigmask(SIG_SETMASK, &every, &old);
	r = -pthread_create(&w->thread, NULL, refill_thread, w);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	if (r == 0)
		atomic_store_explicit(&w->running, true, memory_order_release);
	return r;
}

/*
 * The largest class a worker for small buffers refills: a refill or a
 * zeroing of one takes tens of microseconds, where one of 8 MiB took 1.2
 * to 4.5 ms under TCG.  Sharing one worker, four streams at once on the
 * 6.1 VM's system heap left the 4 KiB one at 240/s waiting behind the
 * 8 MiB one's zeroing (0 to 12 misses in half the runs).
 */
#define SMALL_CLASS_MAX ((size_t)256 << 10)

/* Whether every class the pool's hints ask for is small (no hint: none
 * known, so not). */
static bool pool_small(struct ion_pool *pool)
{
	bool small;

	pool_lock(pool);
	small = pool->n_hints > 0;
	for (size_t h = 0; h < pool->n_hints; h++)
		small = small && pool_class_of(pool, pool->hints[h].size) <= SMALL_CLASS_MAX;
	pthread_mutex_unlock(pool->lock);
	return small;
}

int pool_start_worker(struct ion_pool *pool)
{
	return pool_start_worker_for(pool, pool_heap_name(pool));
}

/* A pool keeps the worker it was given first: a pool whose hints grow
 * past SMALL_CLASS_MAX later shares the small buffers' worker, as every
 * pool of a heap did before there were two. */
int pool_start_worker_for(struct ion_pool *pool, const char *heap)
{
	struct pool_worker *w = atomic_load_explicit(&pool->worker, memory_order_acquire);

	if (!w) {
		w = worker_of(pool->ctx, heap, pool_small(pool));
		if (!w)
			return -ENOMEM;
		atomic_store_explicit(&pool->worker, w, memory_order_release);
	}
	return worker_start(w);
}

/*
 * Called with the lock held, which it drops meanwhile: one buffer of
 * class size allocated and added to the pool.  1 if it was added clean,
 * 0 if not (no room left, or a fork came between), or a negative errno.
 *
 * A fork() in another thread between the kernel's return and the pool's
 * entry leaves the child an fd of the new buffer, which the pool cannot
 * close there.  So a buffer whose allocation saw a fork is entered as out
 * (not clean): the kernel's count then says when the child let go of it,
 * and it is never handed out while the child holds it.  Nobody can count
 * a memfd's holders: such a buffer is released instead.  fork() itself
 * never waits for an allocation, which can take seconds on CMA.
 */
static int fill_one(struct ion_pool *pool, size_t size)
{
	unsigned int forks_before = atomic_load_explicit(&forks, memory_order_relaxed);
	const struct ion_heap *heap = NULL;
	bool counted = false, forked;
	struct stat st;
	uint64_t t0, took;
	int fd, r;

	pthread_mutex_unlock(pool->lock);
	t0 = pool_now_ns();
	r = pool->ops->alloc(pool->solution, size, &fd, &heap);
	took = pool_now_ns() - t0; /* not the wait for the lock below */
	if (r == 0 && fstat(fd, &st) < 0) {
		r = neg_errno();
		close(fd);
	}
	if (r == 0)
		counted = pool_is_counted(pool, heap, fd);
	pool_lock(pool);
	if (r < 0)
		return r;
	pool_note_alloc(pool, took, size);
	forked = atomic_load_explicit(&forks, memory_order_relaxed) != forks_before;
	/* Puts, or other pools of the context, may have filled it to a
	 * limit meanwhile: the room was there before the lock was dropped,
	 * not necessarily now.  The buffer is then released without the
	 * lock (freeing megabytes takes milliseconds, and that is when a
	 * stream's gets are busy). */
	if ((forked && !counted) || (!forked && !pool_charge(pool, size))) {
		pthread_mutex_unlock(pool->lock);
		close(fd);
		pool_lock(pool);
		return 0;
	}
	r = pool_add_buf(pool, fd, &st, size, forked ? BUF_OUT : BUF_FREE, counted);
	if (r < 0) {
		if (!forked)
			pool_account(pool, -(long long)size);
		close(fd);
	}
	return r < 0 ? r : !forked;
}

bool pool_refill_held_off(const struct ion_pool *pool, uint64_t now)
{
	return pool->refill_after_ns && now < pool->refill_after_ns;
}

size_t pool_class_to_fill(const struct ion_pool *pool, size_t h, bool only_low)
{
	size_t size = pool_class_of(pool, pool->hints[h].size), have, want;

	if (!size)
		return 0;
	have = pool_clean(pool, size);
	want = pool_want(pool, h);
	if (have >= want || (only_low && have > want / 2) || !pool_room_for(pool, size))
		return 0;
	return size;
}

/*
 * Fills each hinted class up to its count, allocating without the lock
 * (a kernel allocation can take milliseconds).  only_low: only classes
 * that fell to half their count, unless held off after a failed refill
 * (background refill).  Returns the buffers added, or a negative errno
 * from the first allocation that failed.
 */
int pool_fill(struct ion_pool *pool, bool only_low)
{
	int added = 0;

	pool_lock(pool);
	pool_forget_taken(pool);
	if (only_low && pool_refill_held_off(pool, pool_now_ns())) {
		pthread_mutex_unlock(pool->lock);
		return 0;
	}
	for (size_t h = 0; h < pool->n_hints; h++) {
		size_t size = pool_class_to_fill(pool, h, only_low);
		size_t n = size ? pool_want(pool, h) - pool_clean(pool, size) : 0;

		for (; n && pool_room_for(pool, size); n--) {
			int r = fill_one(pool, size);

			if (r < 0) {
				if (only_low)
					pool->refill_after_ns = pool_now_ns() + 1000000000u;
				pthread_mutex_unlock(pool->lock);
				return added ? added : r;
			}
			pool->refill_after_ns = 0;
			if (!r)
				break; /* none clean: the next pass tries again */
			pool->stats[ION_POOL_STAT_REFILLS]++;
			added++;
		}
	}
	pthread_mutex_unlock(pool->lock);
	return added;
}

/* After memory pressure made the thread trim a pool, it refills none of
 * it for this long: the trim gave that memory back to a system short of
 * it, and the next tick would take it all again. */
#define PRESSURE_BACKOFF_NS (10 * 1000000000ull)

/* The worker's work on one pool, without the context's pools lock
 * (all: a 100 ms look, which reads every count); when it wants to be
 * looked at next. */
static struct pool_look tend(struct ion_ctx *ctx, struct ion_pool *pool, bool pressure, bool all)
{
	if (pressure) {
		int n = pool_trim(pool, 0);

		pool_lock(pool);
		pool->refill_after_ns = pool_now_ns() + PRESSURE_BACKOFF_NS;
		pthread_mutex_unlock(pool->lock);
		if (n)
			ion_dbg(ctx, "memory pressure: %d pooled buffers released", n);
		return (struct pool_look){ UINT64_MAX, POOL_IDLE_TICK_US };
	}
	/* Each step takes the pool's lock as few times as it can: a get
	 * may wait for any hold (see scrub_unlocked()). */
	if (!reclaim_unlocked(pool, all))
		return (struct pool_look){ UINT64_MAX, POOL_IDLE_TICK_US };
	scrub_unlocked(pool);
	pool_fill(pool, true);
	return pool_make_spares(pool);
}

/* Called with the context's pools lock held: pins w's pools (every pool
 * under pressure) in its snapshot.  How many. */
static size_t pin_pools(struct pool_worker *w, bool pressure)
{
	size_t n = 0;

	for (struct ion_pool *p = ion_ctx_pools(w->ctx)->list; p; p = p->next) {
		if (!pressure && atomic_load_explicit(&p->worker, memory_order_relaxed) != w)
			continue;
		if (n == w->snap_cap) {
			size_t more = n ? 2 * n : 16;
			struct ion_pool **grown = realloc(w->snap, more * sizeof(*grown));

			if (!grown)
				break; /* these now, the others next time */
			w->snap = grown;
			w->snap_cap = more;
		}
		w->snap[n++] = p;
		p->pins++;
	}
	return n;
}

static void *refill_thread(void *arg)
{
	struct pool_worker *w = arg;
	struct ion_ctx *ctx = w->ctx;
	struct ion_pools *all = ion_ctx_pools(ctx);
	/* Both set before the thread starts, closed after it ends. */
	int wake_fd = atomic_load_explicit(&w->wake_fd, memory_order_relaxed);
	int psi = w->psi ? all->psi_fd : -1;
	struct sched_param batch = { 0 };
	uint64_t last_all = 0, wait_ns = 1000ull * POOL_IDLE_TICK_US;

	/*
	 * SCHED_BATCH (no privilege needed): a woken worker does not preempt
	 * the thread that woke it, which is a get on the hot path.  Under
	 * SCHED_OTHER it did, and the get's time included the worker's
	 * zeroing or allocation.  Its share of the CPU stays the same.
	 */
	pthread_setschedparam(pthread_self(), SCHED_BATCH, &batch);
	for (;;) {
		struct pollfd fds[2] = {
			{ .fd = wake_fd, .events = POLLIN },
			{ .fd = psi, .events = POLLPRI },
		};
		struct timespec wait = { .tv_sec = (time_t)(wait_ns / 1000000000u),
					 .tv_nsec = (long)(wait_ns % 1000000000u) };
		struct pool_look next;
		uint64_t count, now;
		size_t n;
		bool pressure, every;

		ppoll(fds, psi >= 0 ? 2 : 1, &wait, NULL);
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
		if (w->stop) {
			pthread_mutex_unlock(&all->lock);
			break;
		}
		n = pin_pools(w, pressure);
		pthread_mutex_unlock(&all->lock);
		now = pool_now_ns();
		/* Every count read, once each idle tick. */
		every = now - last_all >= 1000ull * POOL_IDLE_TICK_US;
		if (every)
			last_all = now;
		next = (struct pool_look){ now + 1000ull * POOL_IDLE_TICK_US, POOL_IDLE_TICK_US };
		for (size_t k = 0; k < n; k++)
			pool_look_sooner(&next, tend(ctx, w->snap[k], pressure, every));
		/* A pressure pass trimmed every pool and holds their refills
		 * off: it looks again in 100 ms, and until then gets and puts
		 * wake it as they would an idle worker. */
		atomic_store_explicit(&w->tick_us, pressure ? POOL_IDLE_TICK_US : next.every_us,
				      memory_order_relaxed);
		now = pool_now_ns();
		/* Never a spin: 100 us at least. */
		wait_ns = next.at_ns > now + 100000u ? next.at_ns - now : 100000u;
		if (wait_ns > 1000ull * POOL_IDLE_TICK_US)
			wait_ns = 1000ull * POOL_IDLE_TICK_US;
		pthread_mutex_lock(&all->lock);
		for (size_t k = 0; k < n; k++)
			w->snap[k]->pins--;
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
		for (struct ion_pool *p = all->list; p; p = p->next) {
			pthread_mutex_lock(&p->dup_lock);
			pthread_mutex_lock(p->lock);
		}
	}
	/* Every pool's lock held: a refill reads it under its pool's. */
	atomic_fetch_add_explicit(&forks, 1, memory_order_relaxed);
}

void ion_pools_fork_parent(void)
{
	for (struct ion_pools *all = all_pools; all; all = all->next) {
		for (struct ion_pool *p = all->list; p; p = p->next) {
			pthread_mutex_unlock(p->lock);
			pthread_mutex_unlock(&p->dup_lock);
		}
		pthread_mutex_unlock(&all->lock);
	}
	pthread_mutex_unlock(&all_lock);
}

/* The child: empty pools, no worker running, none of the parent's
 * pooled fds. */
void ion_pools_fork_child(void)
{
	for (struct ion_pools *all = all_pools; all; all = all->next) {
		for (struct ion_pool *p = all->list; p; p = p->next) {
			/* The pool's mappings stayed with the parent
			 * (MADV_DONTFORK): nothing to unmap here. */
			for (size_t i = 0; i < p->n_bufs; i++)
				p->bufs[i].map = NULL;
			pool_adopt_fork_child(p);
			while (p->n_bufs)
				pool_drop(p, p->n_bufs - 1, false);
			/* Released by a thread of the parent's meanwhile: the
			 * copies are the child's alone to close. */
			for (struct pool_releasing *r = p->releasing; r; r = r->next) {
				if (r->fd >= 0)
					close(r->fd);
				if (r->spare >= 0)
					close(r->spare);
			}
			p->releasing = NULL;
			p->pins = 0; /* the parent's workers' */
			pthread_mutex_unlock(p->lock);
			pthread_mutex_unlock(&p->dup_lock);
		}
		for (struct pool_worker *w = all->workers; w; w = w->next) {
			int wake_fd = atomic_exchange_explicit(&w->wake_fd, -1, memory_order_relaxed);

			if (wake_fd >= 0)
				close(wake_fd);
			atomic_store_explicit(&w->running, false, memory_order_relaxed);
		}
		if (all->psi_fd >= 0)
			close(all->psi_fd);
		all->psi_fd = -1;
		/* A thread of the parent may have waited on it. */
		pthread_cond_init(&all->unpinned, NULL);
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
	pools->workers = NULL;
	pools->psi_fd = -1;
	pthread_cond_init(&pools->unpinned, NULL);
	pthread_mutex_lock(&all_lock);
	pools->next = all_pools;
	all_pools = pools;
	pthread_mutex_unlock(&all_lock);
}

void ion_pools_stop(struct ion_pools *pools)
{
	pthread_mutex_lock(&all_lock);
	for (struct ion_pools **p = &all_pools; *p; p = &(*p)->next)
		if (*p == pools) {
			*p = pools->next;
			break;
		}
	pthread_mutex_unlock(&all_lock);
	for (struct pool_worker *w = pools->workers; w; w = w->next) {
		bool joined;

		pthread_mutex_lock(&pools->lock);
		w->stop = true;
		joined = atomic_exchange_explicit(&w->running, false, memory_order_acq_rel);
		worker_wake(w);
		pthread_mutex_unlock(&pools->lock);
		if (joined)
			pthread_join(w->thread, NULL);
	}
}

void ion_pools_fini(struct ion_pools *pools)
{
	/* Users' pools hold the context alive, and the heap pools went
	 * with their registries: none is left, nor any worker running. */
	while (pools->workers) {
		struct pool_worker *w = pools->workers;
		int wake_fd = atomic_load_explicit(&w->wake_fd, memory_order_relaxed);

		pools->workers = w->next;
		if (wake_fd >= 0)
			close(wake_fd);
		free(w->snap);
		free(w->heap);
		free(w);
	}
	if (pools->psi_fd >= 0)
		close(pools->psi_fd);
	pthread_cond_destroy(&pools->unpinned);
	pthread_mutex_destroy(&pools->lock);
}

ION_EXPORT int ion_pool_prefill(struct ion_pool *pool)
{
	int r;

	if (!pool)
		return -EINVAL;
	r = pool_fill(pool, false);
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
	all = ion_ctx_pools(pool->ctx);
	pthread_mutex_lock(&all->lock);
	pool_lock(pool);
	pool->background = background != 0;
	/* A stream is likely to start: the worker looks often (and gets
	 * need not wake it) until its pace is known. */
	pool->armed_ns = background ? pool_now_ns() : 0;
	if (!background)
		pool_unslot_all(pool); /* the worker's, which refills them no more */
	pthread_mutex_unlock(pool->lock);
	if (background)
		r = pool_start_worker(pool);
	if (background && r == 0) {
		/* At once, not at its next pass: the first get need not wake it. */
		struct pool_worker *w = atomic_load_explicit(&pool->worker, memory_order_acquire);

		if (atomic_load_explicit(&w->tick_us, memory_order_relaxed) > POOL_WARM_TICK_US)
			atomic_store_explicit(&w->tick_us, POOL_WARM_TICK_US, memory_order_relaxed);
	}
	pool_wake(pool);
	pthread_mutex_unlock(&all->lock);
	return r;
}
