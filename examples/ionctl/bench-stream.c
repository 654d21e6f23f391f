// SPDX-License-Identifier: MIT
/*
 * ionctl bench --pool's streams: what a camera or a compositor does.
 * A stream takes a buffer at a steady rate from a pool with background
 * refill and holds the last four (the frames in flight), handing the
 * oldest back; each get is timed.  Beside it, the raw call paced the
 * same way, which wakes from each sleep as cold as the pool does: the
 * goal is a p99 under 2 x the stream's p50 and under the paced raw
 * call's p50.  First each stream alone (8 MiB, an NV12 1080p frame and
 * 4 KiB, 60 and 240 a second), then four at once on two heaps (a camera
 * on the contiguous heap, a compositor on the other), the raw calls then
 * four at once too; the floor of a hit paced alike, whose p99 / p50 is
 * the machine's own noise at that rate; nothing at all paced alike (two
 * reads of the clock), the least any get can be timed at: what is left
 * of a p99 above it is the get's own; and a spin as long as the pooled
 * get's median, register work touching no memory, paced alike: where
 * its own p99 is above twice its p50, the machine itself took more from
 * a window of that length than the 2 x goal allows; a call through a
 * pointer to a function that begins a page of code and changes a line of
 * data on a page of its own, alone (what reaching another page of code
 * and of data after a sleep costs here, the least a get from a library
 * does), then the same call with as much spin in it as makes the window
 * as long as a get.  For the pooled run
 * also its p99 after the first second and its three slowest gets, by
 * position: at 60/s the p99 is the third slowest of 300, so a stream's
 * first frames alone can set it.  Last, what waking a thread costs the
 * thread that wakes it (an eventfd write to a thread blocked in poll(),
 * as the pools' refill worker is), paced at both rates: what a get or a
 * put would pay if it woke the worker, which the pools no longer do
 * while a stream runs at a steady pace.
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include "bench-raw.h"
#include "bench-stream.h"
#include "ionctl.h"

int series_add(struct series *s, double ns)
{
	if (s->n == s->cap) {
		unsigned int cap = s->cap ? 2 * s->cap : 256;
		double *grown = realloc(s->ns, cap * sizeof(*grown));

		if (!grown)
			return -ENOMEM;
		s->ns = grown;
		s->cap = cap;
	}
	s->ns[s->n++] = ns;
	return 0;
}

double series_pct(struct series *s, unsigned int p)
{
	if (!s->n)
		return 0;
	ionctl_median(s->ns, s->n); /* sorts */
	return s->ns[(size_t)(s->n - 1) * p / 100];
}

void series_free(struct series *s)
{
	free(s->ns);
	memset(s, 0, sizeof(*s));
}

int bench_solve_heap(struct ion_ctx *ctx, const struct ion_heap *h, size_t size,
		     struct ion_solution **ret)
{
	struct ion_alloc_config *config;
	int r = ion_alloc_config_new(&config);

	if (r == 0)
		r = ion_alloc_config_set_size(config, size);
	if (r == 0)
		r = ion_alloc_config_set_heap(config, ion_heap_get_name(h));
	if (r == 0)
		r = ion_ctx_solve(ctx, config, ret);
	ion_alloc_config_free(config);
	return r;
}

#define NV12_1080P (1920u * 1080u * 3 / 2)
#define HELD 4

struct stream {
	const struct ion_heap *heap;
	size_t size;
	unsigned int rate, seconds;
	bool together;
	struct ion_solution *sol;
	enum { RUN_POOL, RUN_RAW, RUN_FLOOR, RUN_NOTHING, RUN_SPIN, RUN_CALL, RUN_FAR } mode; /* this run's */
	int error;
	double p50, p99, raw50, paced50, paced99, floor50, floor99, nothing50, nothing99;
	/* The spin's slowest too: time the machine took from any window. */
	double spin50, spin99, spin_max, spin_round_ns;
	/* A bare call to a page of code of its own that changes a line of
	 * data on a page of its own; one as long as a get; that line, this
	 * stream's own. */
	double call50, call99, far50, far99;
	_Atomic unsigned long *far_line;
	/* The pooled run's p99 after its first second: the steady state,
	 * without the stream's start (under TCG its first frames run code
	 * the emulator translates then, and a worker that starts). */
	double steady99;
	unsigned long long hits, misses;
	/* The pooled run's three slowest gets: which (from 0) and how long,
	 * to tell a stream's start from its steady state. */
	unsigned int slow_at[3];
	double slow_ns[3];
};

/* What each run of a stream is called in the progress line. */
static const char *const run_names[] = {
	[RUN_POOL] = "pooled", [RUN_RAW] = "raw", [RUN_FLOOR] = "the floor", [RUN_NOTHING] = "nothing",
	[RUN_SPIN] = "a spin as long as a get",
	[RUN_CALL] = "a call to a page of code of its own",
	[RUN_FAR] = "that call as long as a get",
};

/* Sleeps until *next, then moves it on by a period. */
static void pace(double *next, double period)
{
	struct timespec ts;

	*next += period;
	ts.tv_sec = (time_t)(*next / 1e9);
	ts.tv_nsec = (long)(*next - (double)ts.tv_sec * 1e9);
	clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL);
}

/* The pooled stream: a hint of two ready beside the four held. */
static int run_pooled(struct stream *st, struct series *s)
{
	int held[HELD] = { -1, -1, -1, -1 };
	double next = ionctl_now_ns();
	struct ion_pool *pool = NULL;
	char hint[32];
	int r = ion_pool_new(st->sol, &pool);

	snprintf(hint, sizeof(hint), "2x%zu", st->size);
	if (r == 0)
		r = ion_pool_set_hints(pool, hint);
	if (r == 0)
		r = ion_pool_prefill(pool);
	if (r == 0)
		r = ion_pool_set_background(pool, 1);
	for (unsigned int i = 0; r == 0 && i < st->seconds * st->rate; i++) {
		double t0;
		int fd;

		pace(&next, 1e9 / st->rate);
		t0 = ionctl_now_ns();
		r = ion_pool_get(pool, st->size, &fd);
		if (r < 0 || (r = series_add(s, ionctl_now_ns() - t0)) < 0)
			break;
		/* The benchmark knows nothing else holds it: vouch (memfd). */
		if (held[i % HELD] >= 0)
			r = ion_pool_put(pool, held[i % HELD], ION_POOL_VOUCH);
		held[i % HELD] = fd;
	}
	for (int k = 0; k < HELD; k++)
		if (held[k] >= 0)
			ion_pool_put(pool, held[k], ION_POOL_VOUCH);
	if (pool) {
		st->hits = ion_pool_get_stat(pool, ION_POOL_STAT_HITS);
		st->misses = ion_pool_get_stat(pool, ION_POOL_STAT_MISSES);
	}
	ion_pool_unref(pool);
	return r;
}

static int run_paced(struct stream *st, struct series *s)
{
	double next = ionctl_now_ns();
	struct raw_alloc raw;
	int r = raw_alloc_init(&raw, st->heap, 1);

	if (r < 0 && (r = raw_alloc_init(&raw, st->heap, 0)) < 0)
		return r;
	for (unsigned int i = 0; r == 0 && i < st->seconds * st->rate; i++) {
		double t0;

		pace(&next, 1e9 / st->rate);
		t0 = ionctl_now_ns();
		r = raw.alloc_close(&raw, st->size);
		if (r == 0)
			r = series_add(s, ionctl_now_ns() - t0);
	}
	raw_alloc_fini(&raw);
	return r;
}

/*
 * The machine's own noise at this rate: the floor of a hit (an
 * uncontended lock, an F_DUPFD_CLOEXEC and its close) paced the same
 * way.  Its p99 / p50 is what waking from a sleep costs here, which no
 * pool can go below: under emulation on a loaded host it is far above 2.
 */
static int run_floor(struct stream *st, struct series *s)
{
	static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
	double next = ionctl_now_ns();
	int fd = memfd_create("ionctl-floor", MFD_CLOEXEC), r = 0;

	if (fd < 0)
		return -errno;
	for (unsigned int i = 0; r == 0 && i < st->seconds * st->rate; i++) {
		double t0;
		int dup_fd;

		pace(&next, 1e9 / st->rate);
		t0 = ionctl_now_ns();
		pthread_mutex_lock(&lock);
		dup_fd = fcntl(fd, F_DUPFD_CLOEXEC, 3);
		pthread_mutex_unlock(&lock);
		r = dup_fd < 0 ? -errno : series_add(s, ionctl_now_ns() - t0);
		if (dup_fd >= 0)
			close(dup_fd);
	}
	close(fd);
	return r;
}

/* n rounds of register work: no memory, no call, nothing the compiler
 * may fold away. */
static void spin(unsigned long n)
{
	unsigned long x = n;

	while (n--) {
		x = x * 6364136223846793005ul + 1442695040888963407ul;
		__asm__ volatile("" : "+r"(x));
	}
}

/* A line of data on a page of its own for each of four streams at
 * once, for spin_far() to change. */
static _Alignas(4096) _Atomic unsigned long far_state[4][4096 / sizeof(unsigned long)];

/*
 * spin() in a function that begins a page of code (page-aligned, in a
 * section of its own: what follows it there is code the window does not
 * run), called through a pointer the compiler cannot see through, which
 * first changes a line of data on another page of its own: what a call
 * into a library is at the least, code on a page the caller's is not
 * and the state it keeps (a pool's slot) on another.
 */
__attribute__((noinline, aligned(4096), section(".text.ionctl_far"))) static void
spin_far(_Atomic unsigned long *line, unsigned long n)
{
	atomic_fetch_add_explicit(line, 1, memory_order_acq_rel);
	spin(n);
}

static void (*volatile spin_far_call)(_Atomic unsigned long *, unsigned long) = spin_far;

/* What a round of spin() takes here, in ns: the fastest of five timings
 * of 2^16 rounds back to back. */
static double spin_round_ns(void)
{
	double best = 0;

	for (int k = 0; k < 5; k++) {
		double t0 = ionctl_now_ns(), dt;

		spin(1ul << 16);
		dt = ionctl_now_ns() - t0;
		if (k == 0 || dt < best)
			best = dt;
	}
	return best > 0 ? best / (1 << 16) : 1;
}

/* A window of n rounds of spin() (none: nothing at all), inline or on
 * its own page (far), timed as a get is, paced the same way. */
static int run_window(struct stream *st, struct series *s, unsigned long rounds, bool far)
{
	double next = ionctl_now_ns();
	int r = 0;

	for (unsigned int i = 0; r == 0 && i < st->seconds * st->rate; i++) {
		double t0;

		pace(&next, 1e9 / st->rate);
		t0 = ionctl_now_ns();
		if (far)
			spin_far_call(st->far_line, rounds);
		else
			spin(rounds);
		r = series_add(s, ionctl_now_ns() - t0);
	}
	return r;
}

/*
 * Nothing at all: what the timing itself and waking from each sleep
 * cost here.  A get whose p99 is no more above its p50 than nothing's
 * is adds no tail of its own: the rest is the machine's (under
 * emulation, a vCPU the host deschedules), and no pool removes it.
 */
static int run_nothing(struct stream *st, struct series *s)
{
	return run_window(st, s, 0, false);
}

/* The rounds of spin() that take the pooled get's median less `less`
 * ns here: one at the least. */
static unsigned long spin_rounds(const struct stream *st, double less)
{
	unsigned long rounds = st->p50 > less ? (unsigned long)((st->p50 - less) / st->spin_round_ns) : 0;

	return rounds ? rounds : 1;
}

/*
 * A window as long as the pooled get's median, of register work that
 * touches no memory.  What its p99 has above its p50 is the machine's
 * own at that rate and length (an SMT sibling's work, a clock that
 * slowed while the core idled, time the hypervisor takes), and no code
 * in that window could go below it.
 */
static int run_spin(struct stream *st, struct series *s)
{
	return run_window(st, s, spin_rounds(st, 0), false);
}

/*
 * A call through a pointer to a page of code of its own that changes a
 * line of data on a page of its own, and nothing else.  A get is a call
 * into the library, whose pages of code and data a sleep may have let go
 * cold (their TLB entries, their lines): this is what that costs here at
 * the least.
 */
static int run_call(struct stream *st, struct series *s)
{
	return run_window(st, s, 0, true);
}

/*
 * The same call with as much spin in it as makes the window as long as
 * the pooled get's median (one round, where the call alone is longer).
 * What its p99 has above twice its p50 is what reaching a library's
 * pages after a sleep costs here in a window of a get's length.
 */
static int run_far(struct stream *st, struct series *s)
{
	return run_window(st, s, spin_rounds(st, st->call50), true);
}

/* The woken thread: blocked in poll() on an eventfd, as the pools'
 * refill worker is (SCHED_BATCH too), doing nothing with a wake-up but
 * reading the count. */
struct sleeper {
	int fd;
	atomic_bool stop;
};

static void *sleep_on(void *arg)
{
	struct sleeper *z = arg;
	struct sched_param batch = { 0 };

	pthread_setschedparam(pthread_self(), SCHED_BATCH, &batch);
	while (!atomic_load(&z->stop)) {
		struct pollfd p = { .fd = z->fd, .events = POLLIN };
		uint64_t count;

		if (poll(&p, 1, 100) > 0)
			(void)!read(z->fd, &count, sizeof(count));
	}
	return NULL;
}

/* A wake-up's cost to the waker, paced at rate for seconds: p50, p99. */
static int run_wake(unsigned int rate, unsigned int seconds, double pct[2])
{
	struct sleeper z = { .fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK) };
	struct series s = { 0 };
	double next;
	pthread_t thread;
	uint64_t one = 1;
	int r = 0;

	if (z.fd < 0)
		return -errno;
	atomic_init(&z.stop, false);
	if ((r = -pthread_create(&thread, NULL, sleep_on, &z)) < 0) {
		close(z.fd);
		return r;
	}
	next = ionctl_now_ns();
	for (unsigned int i = 0; r == 0 && i < seconds * rate; i++) {
		double t0;

		pace(&next, 1e9 / rate);
		t0 = ionctl_now_ns();
		r = write(z.fd, &one, sizeof(one)) < 0 ? -errno : series_add(&s, ionctl_now_ns() - t0);
	}
	atomic_store(&z.stop, true);
	(void)!write(z.fd, &one, sizeof(one));
	pthread_join(thread, NULL);
	close(z.fd);
	if (r == 0) {
		pct[0] = series_pct(&s, 50);
		pct[1] = series_pct(&s, 99);
	}
	series_free(&s);
	return r;
}

static void print_wakes(unsigned int seconds, int json, unsigned int *failed)
{
	static const unsigned int rates[] = { 60, 240 };

	if (json)
		printf(",\n \"wakes\": [");
	for (int k = 0; k < 2; k++) {
		double pct[2] = { 0, 0 };
		int r;

		ionctl_progress("bench", "--pool, a thread woken %u times a second...", rates[k]);
		r = run_wake(rates[k], seconds, pct);
		ionctl_progress_done();
		if (r < 0) {
			(*failed)++;
			if (json)
				printf("%s{\"rate\": %u, \"error\": \"%s\"}", k ? ", " : "", rates[k],
				       strerror(-r));
			else
				printf("wake-up at %u/s: failed: %s\n", rates[k], strerror(-r));
		} else if (json) {
			printf("%s{\"rate\": %u, \"p50_ns\": %.0f, \"p99_ns\": %.0f}", k ? ", " : "",
			       rates[k], pct[0], pct[1]);
		} else {
			printf("wake-up of a thread at %u/s (a get no longer pays it): p50 %.0f p99 %.0f ns\n",
			       rates[k], pct[0], pct[1]);
		}
	}
	if (json)
		printf("]");
}

/* The three slowest of s, in the order taken (before a sort). */
static void note_slowest(struct stream *st, const struct series *s)
{
	for (int k = 0; k < 3; k++)
		st->slow_ns[k] = -1;
	for (unsigned int i = 0; i < s->n; i++)
		for (int k = 0; k < 3; k++)
			if (s->ns[i] > st->slow_ns[k]) {
				memmove(&st->slow_ns[k + 1], &st->slow_ns[k], (size_t)(2 - k) * sizeof(double));
				memmove(&st->slow_at[k + 1], &st->slow_at[k], (size_t)(2 - k) * sizeof(unsigned int));
				st->slow_ns[k] = s->ns[i];
				st->slow_at[k] = i;
				break;
			}
}

static void *run(void *arg)
{
	struct stream *st = arg;
	struct series s = { 0 };
	static int (*const runs[])(struct stream *, struct series *) = {
		[RUN_POOL] = run_pooled, [RUN_RAW] = run_paced,
		[RUN_FLOOR] = run_floor, [RUN_NOTHING] = run_nothing, [RUN_SPIN] = run_spin,
		[RUN_CALL] = run_call, [RUN_FAR] = run_far,
	};
	double *const p50s[] = {
		[RUN_POOL] = &st->p50, [RUN_RAW] = &st->paced50, [RUN_FLOOR] = &st->floor50,
		[RUN_NOTHING] = &st->nothing50, [RUN_SPIN] = &st->spin50, [RUN_CALL] = &st->call50,
		[RUN_FAR] = &st->far50,
	};
	double *const p99s[] = {
		[RUN_POOL] = &st->p99, [RUN_RAW] = &st->paced99, [RUN_FLOOR] = &st->floor99,
		[RUN_NOTHING] = &st->nothing99, [RUN_SPIN] = &st->spin99, [RUN_CALL] = &st->call99,
		[RUN_FAR] = &st->far99,
	};
	int r = runs[st->mode](st, &s);
	double *p50 = p50s[st->mode], *p99 = p99s[st->mode];

	if (r == 0 && st->mode == RUN_POOL) {
		struct series steady = { .ns = s.ns + st->rate, .n = s.n - st->rate };

		note_slowest(st, &s);
		if (s.n > st->rate)
			st->steady99 = series_pct(&steady, 99); /* sorts that part alone */
	}
	if (r == 0) {
		*p50 = series_pct(&s, 50);
		*p99 = series_pct(&s, 99);
		if (st->mode == RUN_SPIN)
			st->spin_max = series_pct(&s, 100);
	}
	if (r < 0 && !st->error)
		st->error = r;
	series_free(&s);
	return NULL;
}

/* The raw call's median over 31 calls back to back. */
static double raw_p50(const struct ion_heap *h, size_t size)
{
	struct series s = { 0 };
	struct raw_alloc raw;
	double p50;

	if (raw_alloc_init(&raw, h, 1) < 0 && raw_alloc_init(&raw, h, 0) < 0)
		return 0;
	for (unsigned int k = 0; k < 31; k++) {
		double t0 = ionctl_now_ns();

		if (raw.alloc_close(&raw, size) == 0)
			series_add(&s, ionctl_now_ns() - t0);
	}
	raw_alloc_fini(&raw);
	p50 = series_pct(&s, 50);
	series_free(&s);
	return p50;
}

/* n streams at once (one alone: n = 1): the pools, then the raw calls. */
static void run_streams(struct ion_ctx *ctx, struct stream *st, size_t n)
{
	pthread_t threads[4];
	bool started[4] = { false };

	for (size_t k = 0; k < n; k++) {
		st[k].far_line = far_state[k];
		st[k].spin_round_ns = spin_round_ns();
		st[k].error = bench_solve_heap(ctx, st[k].heap, st[k].size, &st[k].sol);
		if (st[k].error == 0)
			st[k].raw50 = raw_p50(st[k].heap, st[k].size);
	}
	for (int mode = RUN_POOL; mode <= RUN_FAR; mode++) {
		/* Nothing of the last stream's stays held. */
		ion_ctx_trim_pools(ctx);
		ionctl_progress("bench", "--pool, %zu stream%s on %s, %s...", n, n == 1 ? "" : "s",
				ion_heap_get_name(st[0].heap), run_names[mode]);
		for (size_t k = 0; k < n; k++) {
			st[k].mode = mode;
			started[k] = st[k].error == 0 &&
				     (n == 1 || pthread_create(&threads[k], NULL, run, &st[k]) == 0);
			if (started[k] && n == 1)
				run(&st[k]);
		}
		for (size_t k = 0; n > 1 && k < n; k++)
			if (started[k])
				pthread_join(threads[k], NULL);
	}
	ionctl_progress_done();
	for (size_t k = 0; k < n; k++) {
		ion_solution_unref(st[k].sol);
		st[k].sol = NULL;
	}
}

/* A window's p99 over its p50; 0 where it has no p50. */
static double tail_ratio(double p50, double p99)
{
	return p50 > 0 ? p99 / p50 : 0;
}

/* Whether a window's p99 is within twice its p50, as JSON. */
static const char *within_2x(double p50, double p99)
{
	return p99 <= 2 * p50 ? "true" : "false";
}

static void print_stream(const struct stream *st, int json, int *first)
{
	const char *heap = ion_heap_get_name(st->heap);
	char steady[32] = "n/a"; /* a stream of one second */

	if (json) {
		printf("%s\n  {\"heap\": ", *first ? "" : ",");
		ionctl_json_string(heap);
		printf(", \"size\": %zu, \"rate\": %u, \"together\": %s", st->size, st->rate,
		       st->together ? "true" : "false");
		if (st->error) {
			printf(", \"error\": ");
			ionctl_json_string(strerror(-st->error));
			printf(", \"exhausted\": %s}", st->error == -ENOMEM ? "true" : "false");
		} else {
			printf(", \"p50_ns\": %.0f, \"p99_ns\": %.0f, \"p99_over_p50\": %.2f, "
			       "\"hits\": %llu, \"misses\": %llu, \"raw_p50_ns\": %.0f, "
			       "\"raw_paced_p50_ns\": %.0f, \"raw_paced_p99_ns\": %.0f, "
			       "\"p99_within_2x_p50\": %s, \"p99_below_raw_paced_p50\": %s, "
			       "\"floor_paced_p50_ns\": %.0f, \"floor_paced_p99_ns\": %.0f, "
			       "\"floor_p99_over_p50\": %.2f, \"nothing_paced_p50_ns\": %.0f, "
			       "\"nothing_paced_p99_ns\": %.0f, \"spin_paced_p50_ns\": %.0f, "
			       "\"spin_paced_p99_ns\": %.0f, \"spin_paced_max_ns\": %.0f, "
			       "\"spin_p99_within_2x_p50\": %s, \"call_paced_p50_ns\": %.0f, "
			       "\"call_paced_p99_ns\": %.0f, \"far_paced_p50_ns\": %.0f, "
			       "\"far_paced_p99_ns\": %.0f, \"far_p99_within_2x_p50\": %s, "
			       "\"p99_after_1s_ns\": ",
			       st->p50, st->p99, st->p99 / st->p50, st->hits, st->misses, st->raw50,
			       st->paced50, st->paced99, within_2x(st->p50, st->p99),
			       st->p99 < st->paced50 ? "true" : "false", st->floor50, st->floor99,
			       tail_ratio(st->floor50, st->floor99), st->nothing50,
			       st->nothing99, st->spin50, st->spin99, st->spin_max,
			       within_2x(st->spin50, st->spin99), st->call50, st->call99,
			       st->far50, st->far99,
			       within_2x(st->far50, st->far99));
			if (st->steady99 > 0)
				printf("%.0f", st->steady99);
			else
				printf("null"); /* a stream of one second */
			printf(", \"slowest_gets\": [");
			for (int k = 0; k < 3 && st->slow_ns[k] >= 0; k++)
				printf("%s{\"at\": %u, \"ns\": %.0f}", k ? ", " : "", st->slow_at[k],
				       st->slow_ns[k]);
			printf("]}");
		}
		*first = 0;
		return;
	}
	if (st->error) {
		printf("stream %-12s %8zu x %3u/s%s: %s: %s\n", heap, st->size, st->rate,
		       st->together ? " (4 at once)" : "",
		       st->error == -ENOMEM ? "exhausted" : "failed", strerror(-st->error));
		return;
	}
	if (st->steady99 > 0)
		snprintf(steady, sizeof(steady), "%.0f", st->steady99);
	printf("stream %-12s %8zu x %3u/s%s: p50 %.0f p99 %.0f ns (p99/p50 %.2f%s; after 1 s "
	       "p99 %s), %llu hits, "
	       "%llu misses; raw p50 %.0f, paced p50 %.0f p99 %.0f ns (p99 %s raw paced p50); "
	       "floor paced p50 %.0f p99 %.0f ns (%.2f); nothing paced p50 %.0f p99 %.0f ns; "
	       "a spin as long paced p50 %.0f p99 %.0f ns (%.2f), slowest %.0f ns; "
	       "a call to a page of its own paced p50 %.0f p99 %.0f ns, "
	       "as long as a get p50 %.0f p99 %.0f ns (%.2f)\n",
	       heap, st->size, st->rate, st->together ? " (4 at once)" : "", st->p50, st->p99,
	       st->p99 / st->p50, st->p99 <= 2 * st->p50 ? ", met" : ", missed", steady, st->hits,
	       st->misses, st->raw50, st->paced50, st->paced99,
	       st->p99 < st->paced50 ? "below" : "NOT below", st->floor50, st->floor99,
	       tail_ratio(st->floor50, st->floor99), st->nothing50, st->nothing99,
	       st->spin50, st->spin99, tail_ratio(st->spin50, st->spin99), st->spin_max,
	       st->call50, st->call99, st->far50, st->far99,
	       tail_ratio(st->far50, st->far99));
}

/* The first available heap that is contiguous (want_contig) or not and
 * no memfd; NULL if none. */
static const struct ion_heap *kernel_heap(struct ion_ctx *ctx, bool want_contig)
{
	int n = ion_ctx_get_heap_count(ctx);

	for (int i = 0; i < n; i++) {
		const struct ion_heap *h;
		bool contig;

		if (ion_ctx_get_heap(ctx, (unsigned int)i, &h) < 0 || ion_heap_get_error(h) ||
		    strcmp(ion_heap_get_backend(h), "memfd") == 0 ||
		    strncmp(ion_heap_get_backend(h), "gem", 3) == 0)
			continue;
		contig = ion_heap_get_properties(h) & ION_HEAP_PROP_CONTIGUOUS;
		if (contig == want_contig)
			return h;
	}
	return NULL;
}

/* The single streams' heap: the one named, else the first kernel heap
 * (no memfd), else memfd. */
static const struct ion_heap *stream_heap(struct ion_ctx *ctx, const char *only)
{
	const struct ion_heap *pick = NULL;
	int n = ion_ctx_get_heap_count(ctx);

	for (int i = 0; i < n; i++) {
		const struct ion_heap *h;

		if (ion_ctx_get_heap(ctx, (unsigned int)i, &h) < 0 || ion_heap_get_error(h))
			continue;
		if (only ? strcmp(only, ion_heap_get_name(h)) == 0
			 : strcmp(ion_heap_get_backend(h), "memfd") != 0)
			return h;
		if (!only && !pick)
			pick = h;
	}
	return only ? NULL : pick;
}

static void count_failed(const struct stream *st, unsigned int *failed)
{
	if (st->error && st->error != -ENOMEM)
		(*failed)++;
}

/* The first single stream (8 MiB at 60/s) as the one stream earlier
 * versions printed. */
static void print_classic(const struct stream *st)
{
	printf(",\n \"stream\": {\"heap\": ");
	ionctl_json_string(ion_heap_get_name(st->heap));
	if (st->error)
		printf(", \"size\": %zu, \"error\": \"%s\"}", st->size, strerror(-st->error));
	else
		printf(", \"size\": %zu, \"stream_p50_ns\": %.0f, \"stream_p99_ns\": %.0f, "
		       "\"stream_hits\": %llu, \"stream_misses\": %llu, \"raw_p50_ns\": %.0f, "
		       "\"raw_paced_p50_ns\": %.0f, \"raw_paced_p99_ns\": %.0f}",
		       st->size, st->p50, st->p99, st->hits, st->misses, st->raw50, st->paced50,
		       st->paced99);
}

void bench_streams(struct ion_ctx *ctx, const char *only, unsigned int seconds, int json,
		   unsigned int *failed)
{
	static const size_t sizes[] = { 8u << 20, NV12_1080P, 4096 };
	static const unsigned int rates[] = { 60, 240 };
	const struct ion_heap *h = stream_heap(ctx, only);
	/* Four at once on two heaps whatever --heap names: that is the
	 * point of them. */
	const struct ion_heap *cam = kernel_heap(ctx, true);
	const struct ion_heap *comp = kernel_heap(ctx, false);
	struct stream single[6], multi[4];
	int first = 1;

	if (!h) {
		(*failed)++;
		if (json)
			printf(",\n \"streams\": []");
		else
			printf("streams: no heap\n");
		print_wakes(seconds, json, failed);
		return;
	}
	cam = cam ? cam : h;
	comp = comp ? comp : h;
	for (size_t k = 0; k < 6; k++) {
		single[k] = (struct stream){ .heap = h, .size = sizes[k / 2], .rate = rates[k % 2],
					     .seconds = seconds };
		run_streams(ctx, &single[k], 1);
		count_failed(&single[k], failed);
		if (k == 0 && json)
			print_classic(&single[0]);
		if (k == 0 && json)
			printf(",\n \"streams\": [");
		print_stream(&single[k], json, &first);
		fflush(stdout);
	}
	/* A camera's two streams on the contiguous heap (NV12 frames: two
	 * pools of 8 MiB ones do not fit a 64 MiB CMA area), a compositor's
	 * 8 MiB at 60/s and a cursor's 4 KiB at 240/s on the other. */
	multi[0] = (struct stream){ .heap = cam, .size = NV12_1080P, .rate = 60 };
	multi[1] = (struct stream){ .heap = cam, .size = NV12_1080P, .rate = 60 };
	multi[2] = (struct stream){ .heap = comp, .size = 8u << 20, .rate = 60 };
	multi[3] = (struct stream){ .heap = comp, .size = 4096, .rate = 240 };
	for (size_t k = 0; k < 4; k++) {
		multi[k].seconds = seconds;
		multi[k].together = true;
	}
	run_streams(ctx, multi, 4);
	for (size_t k = 0; k < 4; k++) {
		count_failed(&multi[k], failed);
		print_stream(&multi[k], json, &first);
	}
	if (json)
		printf("]");
	print_wakes(seconds, json, failed);
}
