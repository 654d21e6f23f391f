// SPDX-License-Identifier: MIT
/*
 * ionctl pool: a pool for a heap or a device set, as a program would make
 * it: set its hints and limits, prefill it, run buffers through it, and
 * show what it holds and did.
 */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "ionctl.h"

static const char *const stat_names[ION_POOL_STAT_COUNT] = {
	[ION_POOL_STAT_HITS] = "hits",
	[ION_POOL_STAT_MISSES] = "misses",
	[ION_POOL_STAT_BYTES_HELD] = "bytes_held",
	[ION_POOL_STAT_HIGH_WATER] = "high_water",
	[ION_POOL_STAT_BUFFERS_OUT] = "buffers_out",
	[ION_POOL_STAT_REFILLS] = "refills",
	[ION_POOL_STAT_RECLAIMS] = "reclaims",
	[ION_POOL_STAT_TRIMS] = "trims",
};

static int usage(void)
{
	printf("usage: ionctl pool [--heap NAME | --for DEVICE...] [--hints \"8x1M 4x8M\"]\n"
	       "                   [--cycle SIZE --count N] [--no-zero] [--max-bytes SIZE]\n"
	       "                   [--background] [--trim SIZE] [--json]\n\n"
	       "Makes a pool of the heap NAME, or of the best heaps for the DEVICEs\n"
	       "(default: the heap serving ION_HEAP_SYSTEM_MASK), with the hints\n"
	       "(else the devices' heaps.d Pool hint), prefills it, takes and gives\n"
	       "back N buffers of SIZE, and prints its statistics.  Lists the heaps\n"
	       "that board files give a Pool hint, which Android's calls and\n"
	       "ion_ctx_alloc() then serve from a pool of their own.\n");
	return 0;
}

static int cycle(struct ion_pool *pool, size_t size, unsigned long count)
{
	for (unsigned long i = 0; i < count; i++) {
		int fd, r = ion_pool_get(pool, size, &fd);

		if (r < 0)
			return r;
		/* ionctl alone holds it: vouch, for memfd's sake. */
		r = ion_pool_put(pool, fd, ION_POOL_VOUCH);
		if (r < 0)
			return r;
	}
	return 0;
}

static void print_stats(const struct ion_pool *pool, const char *what, int trimmed,
			int json)
{
	if (json) {
		ionctl_json_begin("pool");
		printf(", \"pool\": ");
		ionctl_json_string(what);
		for (int k = 0; k < ION_POOL_STAT_COUNT; k++)
			printf(", \"%s\": %llu", stat_names[k], ion_pool_get_stat(pool, k));
		if (trimmed >= 0)
			printf(", \"trimmed\": %d", trimmed);
		return;
	}
	printf("pool of %s:\n", what);
	for (int k = 0; k < ION_POOL_STAT_COUNT; k++)
		printf("  %-12s %llu\n", stat_names[k], ion_pool_get_stat(pool, k));
	if (trimmed >= 0)
		printf("  %-12s %d\n", "trimmed", trimmed);
}

/* The heaps a board file gives a Pool hint. */
static void print_board_pools(struct ion_ctx *ctx, int json)
{
	int n = ion_ctx_get_heap_count(ctx), shown = 0;

	if (json)
		printf(", \"board_pools\": [");
	for (int i = 0; i < n; i++) {
		const struct ion_heap *h;

		if (ion_ctx_get_heap(ctx, (unsigned int)i, &h) < 0)
			continue;
		for (int k = 0; k < ion_heap_get_attribute_count(h); k++) {
			const char *key, *value, *source;

			if (ion_heap_get_attribute(h, (unsigned int)k, &key, &value, &source) < 0 ||
			    strcmp(key, "Pool") != 0)
				continue;
			if (json) {
				printf("%s{\"heap\": ", shown ? ", " : "");
				ionctl_json_string(ion_heap_get_name(h));
				printf(", \"hints\": ");
				ionctl_json_string(value);
				printf(", \"source\": ");
				ionctl_json_string(source);
				putchar('}');
			} else {
				printf("board pool: heap %s keeps %s ready  [%s]\n",
				       ion_heap_get_name(h), value, source);
			}
			shown++;
		}
	}
	if (json) {
		putchar(']');
		ionctl_json_end();
	}
}

/* What the command line asked for. */
struct pool_args {
	const char *heap_name, *hints;
	size_t size, max_bytes, trim;
	unsigned long count;
	int json, zero, background, trimming, n_for;
	char *specs[64];
};

/* Parses argv into a; 0, or the exit status of a usage error or --help. */
static int parse_args(int argc, char **argv, struct pool_args *a)
{
	static const struct option options[] = {
		{ "heap", required_argument, NULL, 'H' },
		{ "for", required_argument, NULL, 'f' },
		{ "hints", required_argument, NULL, 'i' },
		{ "cycle", required_argument, NULL, 'c' },
		{ "count", required_argument, NULL, 'n' },
		{ "no-zero", no_argument, NULL, 'z' },
		{ "max-bytes", required_argument, NULL, 'm' },
		{ "background", no_argument, NULL, 'b' },
		{ "trim", required_argument, NULL, 't' },
		{ "json", no_argument, NULL, 'j' },
		{ "help", no_argument, NULL, 'h' },
		{ 0 },
	};
	uint64_t v;
	int c;

	while ((c = getopt_long(argc, argv, "H:f:i:c:n:zm:bt:jh", options, NULL)) != -1) {
		switch (c) {
		case 'H':
			a->heap_name = optarg;
			break;
		case 'f':
			if (a->n_for == 64)
				return ionctl_usage_error("pool", "at most 64 --for devices");
			a->specs[a->n_for++] = optarg;
			break;
		case 'i':
			a->hints = optarg;
			break;
		case 'c':
			if (ionctl_parse_size("pool", optarg, &a->size) < 0)
				return IONCTL_USAGE;
			break;
		case 'n':
			if (ionctl_parse_u64(optarg, &v) < 0 || v > 100000000)
				return ionctl_usage_error("pool", "invalid --count '%s'", optarg);
			a->count = (unsigned long)v;
			break;
		case 'z':
			a->zero = 0;
			break;
		case 'm':
			if (ionctl_parse_size("pool", optarg, &a->max_bytes) < 0)
				return IONCTL_USAGE;
			break;
		case 'b':
			a->background = 1;
			break;
		case 't':
			if (strcmp(optarg, "0") && ionctl_parse_size("pool", optarg, &a->trim) < 0)
				return IONCTL_USAGE;
			a->trimming = 1;
			break;
		case 'j':
			a->json = 1;
			break;
		case 'h':
			return usage();
		default:
			return ionctl_usage_error("pool", "see ionctl pool --help");
		}
	}
	if (optind < argc)
		return ionctl_usage_error("pool", "unexpected argument '%s'", argv[optind]);
	if (a->heap_name && a->n_for)
		return ionctl_usage_error("pool", "--heap or --for, not both");
	return 0;
}

/* The solution the pool is made from: for the --for devices, else the
 * named or the default heap.  -ENODEV once the failure is said. */
static int solve(struct ion_ctx *ctx, struct pool_args *a, struct ion_device ***devices,
		 struct ion_alloc_config *config, struct ion_solution **ret_sol)
{
	const struct ion_heap *heap;
	int r = ion_alloc_config_set_size(config, a->size);

	if (r == 0 && a->n_for &&
	    (r = ionctl_get_devices("pool", ctx, a->n_for, a->specs, devices)) == 0)
		for (int i = 0; r == 0 && i < a->n_for; i++)
			r = ion_alloc_config_add_device(config, (*devices)[i]);
	if (r == 0 && !a->n_for) {
		if (a->heap_name)
			r = ionctl_find_heap("pool", ctx, a->heap_name, &heap);
		else if ((r = ionctl_default_heap(ctx, &heap)) < 0)
			ionctl_fail("pool", r, "no heap serves ION_HEAP_SYSTEM_MASK");
		if (r == 0)
			r = ion_alloc_config_set_heap(config, ion_heap_get_name(heap));
		else
			r = -ENODEV; /* said */
	}
	if (r == 0)
		r = ion_ctx_solve(ctx, config, ret_sol);
	if (r == 0 && ion_solution_get_heap_count(*ret_sol) == 0) {
		ionctl_fail("pool", 0, "no heap fits (ionctl explain says why)");
		r = -ENODEV;
	}
	return r;
}

/* Sets the pool up as asked and exercises it; -EINVAL with *bad_hints
 * set when --hints was refused (said). */
static int run(struct ion_pool *pool, const struct pool_args *a, int *ret_trimmed,
	       int *bad_hints)
{
	int r = 0;

	if (a->hints && (r = ion_pool_set_hints(pool, a->hints)) < 0) {
		ionctl_fail("pool", r, "--hints '%s' (COUNTxSIZE words: 8x1M 4x8M)", a->hints);
		*bad_hints = 1;
	}
	if (r == 0)
		r = ion_pool_set_zeroing(pool, a->zero);
	if (r == 0 && a->max_bytes)
		r = ion_pool_set_max_bytes(pool, a->max_bytes);
	if (r == 0)
		r = ion_pool_prefill(pool);
	if (r == 0 && a->background)
		r = ion_pool_set_background(pool, 1);
	if (r == 0 && a->count)
		r = cycle(pool, a->size, a->count);
	if (r == 0 && a->trimming)
		*ret_trimmed = ion_pool_trim(pool, a->trim);
	return r;
}

int ionctl_pool(int argc, char **argv)
{
	struct pool_args a = { .size = 1 << 20, .zero = 1 };
	struct ion_device **devices = NULL;
	struct ion_alloc_config *config = NULL;
	struct ion_solution *sol = NULL;
	struct ion_pool *pool = NULL;
	int trimmed = -1, bad_hints = 0, r;
	struct ion_ctx *ctx;

	r = parse_args(argc, argv, &a);
	if (r)
		return r;
	ctx = ionctl_ctx_new("pool");
	if (!ctx)
		return IONCTL_NO;
	r = ion_alloc_config_new(&config);
	if (r == 0)
		r = solve(ctx, &a, &devices, config, &sol);
	if (r == 0)
		r = ion_pool_new(sol, &pool);
	if (r == 0)
		r = run(pool, &a, &trimmed, &bad_hints);
	if (r == 0) {
		print_stats(pool, a.n_for ? "the devices' heaps"
					  : ion_heap_get_name(ion_solution_get_heap(sol, 0)),
			    trimmed, a.json);
		if (!a.json)
			putchar('\n');
		print_board_pools(ctx, a.json);
	} else if (r != -ENODEV && r != -EINVAL) {
		ionctl_fail("pool", r, "pool");
	}
	ion_pool_unref(pool);
	ion_solution_unref(sol);
	ion_alloc_config_free(config);
	ionctl_put_devices(devices, a.n_for);
	ion_ctx_unref(ctx);
	if (r == -EINVAL && bad_hints)
		return IONCTL_USAGE;
	return r < 0 ? IONCTL_NO : 0;
}
