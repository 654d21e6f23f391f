// SPDX-License-Identifier: MIT
/*
 * A pool's pace: how often its stream gets a buffer and how long the
 * holders keep one, as gets and puts note them, and what follows from
 * that: when the refill worker looks at the pool by itself, whether a get
 * or a put must wake it (pool_paced()), and whose count a get reads.
 * All of it but pool_look_sooner() is called with the pool's lock held.
 */
#include <stdatomic.h>

#include "pool-internal.h"

/* The fastest a worker follows a stream.  A pool whose last get is older
 * than STREAM_GONE_NS is not streaming; one whose first get is older than
 * STREAM_START_NS with no second one yet is not starting a stream (a get
 * now and then, not 10 a second). */
#define MIN_TICK_US 1000u
#define STREAM_GONE_NS 1000000000ull
#define STREAM_START_NS 100000000ull

/* A moving average over about the last eight samples, where one sample
 * counts as four times the average at most (0: none yet). */
static uint64_t average_in(uint64_t avg, uint64_t sample)
{
	if (!avg)
		return sample;
	if (sample > 4 * avg)
		sample = 4 * avg;
	return avg - avg / 8 + sample / 8;
}

/*
 * A get at now.  A pause of a second starts the measure over: a stream
 * that stops and restarts may come back at another rate.  A shorter pause
 * (a seek) counts as four gaps at most, as a hold does in
 * pool_note_hold(): one pause of 900 ms must not make the worker plan its
 * looks 100 ms apart for the next twenty gets of a 240/s stream.
 */
void pool_note_get(struct ion_pool *pool, uint64_t now)
{
	uint64_t gap = now - pool->last_get_ns;

	pool->gap_ns = !pool->last_get_ns || gap >= STREAM_GONE_NS ? 0 : average_in(pool->gap_ns, gap);
	pool->last_get_ns = now;
}

/* b came back by a put, after its holder kept it since since_ns (one
 * hold counts as four times the average at most: a buffer kept for a
 * minute must not stop the gets' reads for the next fifty puts). */
void pool_note_hold(struct ion_pool *pool, const struct pool_buf *b)
{
	pool->hold_ns = average_in(pool->hold_ns, pool_now_ns() - b->since_ns);
}

/*
 * How long a buffer has been out before a get reads its count: a
 * quarter longer than its holders keep the buffers they put back.  A get
 * with the worker running reads counts only so that buffers closed
 * without a put do not make the pool grow; in a stream that puts its
 * buffers back, those out are held, and reading them is all loss (the
 * 4 KiB streams' slow gets under TCG, four at once, spent 18 ms on
 * average there).  A buffer closed instead of put is soon older than
 * that, and the worker reads every count at least every 100 ms.  0
 * before any put.
 */
uint64_t pool_likely_back(const struct ion_pool *pool)
{
	uint64_t t = pool->hold_ns + pool->hold_ns / 4;

	/* Past a second, a get reads a count whatever the holds were. */
	return t < 1000000000u ? t : 1000000000u;
}

/* A gap between gets the worker's tick covers: a stream's pace may
 * jitter by half a gap before a get wakes the worker after all. */
static bool tick_covers(uint64_t tick_ns, uint64_t gap_ns)
{
	return 2 * tick_ns <= 3 * gap_ns;
}

bool pool_paced_by(const struct ion_pool *pool, unsigned int tick_us)
{
	uint64_t tick = 1000ull * tick_us;

	if (!tick)
		return false;
	return pool->gap_ns ? tick_covers(tick, pool->gap_ns) : tick <= 1000ull * POOL_WARM_TICK_US;
}

bool pool_paced(const struct ion_pool *pool)
{
	return pool_paced_by(pool, pool_worker_tick_us(pool));
}

/*
 * When the worker should look at pool next.  While a stream runs at a
 * known pace, once a gap between two of its gets, halfway between them:
 * it zeroes and refills between two gets without being woken
 * (pool_paced()), as far as it can be from both (a pass takes the pool's
 * lock, which a get would wait for).  Often (the warm tick) after
 * background refill was turned on or a stream started, until its pace is
 * known; the idle tick once the gets stopped for a second.  Sooner looks
 * of other pools come first (pool_look_sooner()).
 */
static struct pool_look pool_look(const struct ion_pool *pool, uint64_t now)
{
	uint64_t since = pool->last_get_ns ? now - pool->last_get_ns : UINT64_MAX;
	uint64_t gap = pool->gap_ns, at;

	if (!pool->background)
		return (struct pool_look){ now + 1000ull * POOL_IDLE_TICK_US, POOL_IDLE_TICK_US };
	/* A stream at a pace the worker can follow. */
	if (gap >= 1000ull * MIN_TICK_US && since < STREAM_GONE_NS) {
		at = pool->last_get_ns + gap / 2;
		if (at <= now)
			at += ((now - at) / gap + 1) * gap;
		return (struct pool_look){ at, (unsigned int)(gap / 1000) };
	}
	/* Refill just turned on, or a first get with no second yet: a
	 * stream may be starting.  (A burst of gets closer than a tick is
	 * none to follow: they wake the worker, as before.) */
	if ((!gap && since < STREAM_START_NS) ||
	    (pool->armed_ns && now - pool->armed_ns < STREAM_GONE_NS))
		return (struct pool_look){ now + 1000ull * POOL_WARM_TICK_US, POOL_WARM_TICK_US };
	return (struct pool_look){ now + 1000ull * POOL_IDLE_TICK_US, POOL_IDLE_TICK_US };
}

/* Whether a pass now would find work: a buffer to zero, or a class that
 * its refill would fill. */
static bool pool_has_work(const struct ion_pool *pool, uint64_t now)
{
	for (size_t i = 0; i < pool->n_bufs; i++)
		if (pool->bufs[i].state == BUF_DIRTY)
			return true;
	if (pool_refill_held_off(pool, now))
		return false;
	for (size_t h = 0; h < pool->n_hints; h++)
		if (pool_class_to_fill(pool, h, true))
			return true;
	return false;
}

/* The same, but at once while work is left: a pass that zeroed or
 * allocated for longer than a gap (8 MiB at 240/s on 5.10's system heap)
 * must not then wait for the next halfway point, which a put's wake-up
 * never made it do. */
struct pool_look pool_next_look(const struct ion_pool *pool, uint64_t now)
{
	struct pool_look next = pool_look(pool, now);

	if (pool->background && pool_has_work(pool, now))
		next.at_ns = now;
	return next;
}

void pool_look_sooner(struct pool_look *next, struct pool_look other)
{
	if (other.at_ns < next->at_ns)
		next->at_ns = other.at_ns;
	if (other.every_us < next->every_us)
		next->every_us = other.every_us;
}
