// SPDX-License-Identifier: MIT
/*
 * A pool's hints: how many buffers of which sizes to keep ready, and
 * what they may ask for of the machine.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

#include <ion/ion.h>

#include "pool-internal.h"
#include "registry.h"

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
 * pool's life (its spare fd, if the worker makes one, comes out of the
 * same share) and a get adds the caller's, so a pool of N costs up to 2N
 * fds; three quarters of the limit stay the program's. */
#define HINT_NOFILE_SHARE 4

struct hint_limits {
	uint64_t max_len;	/* one buffer: the largest its heaps give */
	uint64_t bytes;		/* all the hinted buffers together */
	const char *bytes_why;
	uint64_t buffers;	/* their number: each holds an fd */
	uint64_t nofile;	/* the soft limit that came from, 0: none */
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
		atomic_load_explicit(ion_ctx_registry_slot(pool->ctx), memory_order_acquire);
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
 * dropped.  Counts at the size the pool allocates (pool_class_of()).  *n
 * becomes the number kept; returns whether anything was cut.
 */
static bool hints_cap(const struct ion_pool *pool, const struct hint_limits *lim,
		      struct ion_pool_hint *v, size_t *n)
{
	uint64_t bytes = 0, buffers = 0;
	bool cut = false;
	size_t kept = 0;

	for (size_t i = 0; i < *n; i++) {
		uint64_t size = v[i].size <= SIZE_MAX ? pool_class_of(pool, (size_t)v[i].size) : 0;
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
	/* A field owns its hints: it is given a copy of them. */
	_cleanup_free_ struct ion_pool_hint *copy = n ? malloc(n * sizeof(*copy)) : NULL;
	struct ion_conf_field f = { .set = true, .v.pool = { .v = copy, .n = n } };

	if (!n)
		return strdup("nothing");
	if (!copy)
		return NULL;
	memcpy(copy, v, n * sizeof(*copy));
	return ion_conf_field_format(ION_KEY_POOL, &f);
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

int pool_set_hints(struct ion_pool *pool, const struct ion_pool_hint *hints, size_t n,
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
	pool_lock(pool);
	free(pool->hints);
	pool->hints = copy;
	pool->n_hints = kept;
	pool->fd_share = lim.buffers;
	pthread_mutex_unlock(pool->lock);
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
	r = pool_set_hints(pool, field.v.pool.v, field.v.pool.n, HINTS_CALLER);
	free(field.v.pool.v);
	return r;
}

/* The number of buffers of class size the pool holds ready or dirty:
 * what it holds of the class, for a heap pool's hinted count. */
size_t pool_ready(const struct ion_pool *pool, size_t size)
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
size_t pool_clean(const struct ion_pool *pool, size_t size)
{
	size_t n = 0;

	for (size_t i = 0; i < pool->n_bufs; i++)
		if (pool->bufs[i].size == size && pool->bufs[i].state == BUF_FREE)
			n++;
	return n;
}

/* Called with the lock held: whether a heap pool's class has as many
 * buffers ready as its hint asks, so that one more back is one too many. */
bool pool_hint_full(const struct ion_pool *pool, size_t size)
{
	/* Only a heap's pool, which no caller can trim: a caller's pool
	 * keeps what comes back, up to its limits. */
	if (!pool->heap_pool)
		return false;
	for (size_t h = 0; h < pool->n_hints; h++)
		if (pool_class_of(pool, pool->hints[h].size) == size)
			return pool_ready(pool, size) >= pool->hints[h].count;
	return false;
}

size_t pool_want(const struct ion_pool *pool, size_t h)
{
	size_t ahead = pool->ahead < pool->hints[h].count ? pool->ahead : pool->hints[h].count;

	return pool->hints[h].count + ahead;
}

/* Called with the lock held: whether a hinted class fell to half. */
bool pool_below_watermark(const struct ion_pool *pool, size_t size)
{
	for (size_t h = 0; h < pool->n_hints; h++)
		if (pool_class_of(pool, pool->hints[h].size) == size)
			return pool_clean(pool, size) <= pool_want(pool, h) / 2;
	return false;
}
