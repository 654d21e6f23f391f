// SPDX-License-Identifier: MIT
/*
 * ionctl bench: allocate and close in a loop, as Android's
 * dmabuf-heap-bench does, for each heap and size, twice in the same run:
 * the raw kernel call, libion's ion_alloc_fd() (Android's API) and
 * ion_ctx_alloc() (the context API, by heap name).  Blocks of the three
 * alternate so that drift (frequency, other load) hits all alike; the
 * figure is the median block's ns per call, and the ratios to raw.
 */
#include <errno.h>
#include <getopt.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "bench-raw.h"
#include "ionctl.h"

#ifndef IOND_SOCKET_PATH
#define IOND_SOCKET_PATH "/run/libion/iond.sock"
#endif

struct bench {
	struct ion_ctx *ctx;	/* the context API's */
	const char *heap;	/* the heap's name, for ion_ctx_alloc() */
	int client;		/* the compat API's client fd */
	unsigned int mask;	/* the heap's id bit */
	struct raw_alloc raw;
	unsigned int rounds;
	double target_ns;	/* how long one block should take */
	int json;
	unsigned int rows;	/* printed, for JSON's commas */
	unsigned int measured, failed;
};

/* A row's start in JSON: the heap, its backend, and the raw call. */
static void json_row(struct bench *b, const struct ion_heap *h, const char *raw_call)
{
	printf("%s\n  {\"heap\": ", b->rows++ ? "," : "");
	ionctl_json_string(ion_heap_get_name(h));
	printf(", \"backend\": ");
	ionctl_json_string(ion_heap_get_backend(h));
	printf(", \"raw_call\": ");
	ionctl_json_string(raw_call);
}

enum { RAW, COMPAT, CTX, N_PATHS };

static int lib_alloc_close(struct bench *b, int path, size_t len)
{
	int fd, r = path == COMPAT ? ion_alloc_fd(b->client, len, 0, b->mask, ION_FLAG_CACHED, &fd)
				   : ion_ctx_alloc(b->ctx, b->heap, len, ION_FLAG_CACHED, &fd);

	if (r < 0)
		return r;
	close(fd);
	return 0;
}

/* ns for n calls, or a negative errno. */
static double run(struct bench *b, int path, size_t len, unsigned long n)
{
	double start = ionctl_now_ns();

	for (unsigned long i = 0; i < n; i++) {
		int r = path != RAW ? lib_alloc_close(b, path, len)
				    : b->raw.alloc_close(&b->raw, len);

		if (r < 0)
			return r;
	}
	return ionctl_now_ns() - start;
}

#define RUN_CALLS 8

/* One round: n runs of each path, interleaved; ns per call of each. */
static int round_ns(struct bench *b, size_t len, unsigned long n, double ns[N_PATHS])
{
	double t;

	for (int p = 0; p < N_PATHS; p++)
		ns[p] = 0;
	for (unsigned long i = 0; i < n; i++)
		for (int p = 0; p < N_PATHS; p++) {
			if ((t = run(b, p, len, RUN_CALLS)) < 0)
				return (int)t;
			ns[p] += t;
		}
	for (int p = 0; p < N_PATHS; p++)
		ns[p] /= (double)(n * RUN_CALLS);
	return 0;
}

/* The median round's ns per call of each path. */
static int measure(struct bench *b, size_t len, double ret[N_PATHS])
{
	double *rounds[N_PATHS] = { 0 }, probe[N_PATHS];
	unsigned long n;
	int r;

	/* Warm every path (page cache, CMA, the lazily discovered context). */
	r = round_ns(b, len, 1, probe);
	for (int p = 0; r == 0 && p < N_PATHS; p++)
		if (!(rounds[p] = calloc(b->rounds, sizeof(double))))
			r = -ENOMEM;
	/* Runs per round, so that a round takes about target_ns. */
	n = (unsigned long)(b->target_ns / (N_PATHS * RUN_CALLS * (probe[RAW] > 1 ? probe[RAW] : 1)));
	n = n < 1 ? 1 : n > 20000 ? 20000 : n;
	for (unsigned int i = 0; r == 0 && i < b->rounds; i++) {
		double ns[N_PATHS];

		r = round_ns(b, len, n, ns);
		for (int p = 0; r == 0 && p < N_PATHS; p++)
			rounds[p][i] = ns[p];
	}
	for (int p = 0; p < N_PATHS; p++) {
		if (r == 0)
			ret[p] = ionctl_median(rounds[p], b->rounds);
		free(rounds[p]);
	}
	return r;
}

static void bench_raw(struct bench *b, const struct ion_heap *h,
		      const size_t *sizes, size_t n_sizes)
{
	for (size_t i = 0; i < n_sizes; i++) {
		double ns[N_PATHS] = { 0 }, raw_ns, lib_ns, ctx_ns;
		char size[16];
		int r;

		snprintf(size, sizeof(size), sizes[i] >= (1 << 20) ? "%zuM" : "%zuK",
			 sizes[i] >= (1 << 20) ? sizes[i] >> 20 : sizes[i] >> 10);
		ionctl_progress("bench", "%s, %s...", ion_heap_get_name(h), size);
		r = measure(b, sizes[i], ns);
		ionctl_progress_done();
		raw_ns = ns[RAW];
		lib_ns = ns[COMPAT];
		ctx_ns = ns[CTX];
		if (r < 0)
			b->failed++;
		else
			b->measured++;
		if (b->json) {
			json_row(b, h, b->raw.name);
			printf(", \"size\": %zu", sizes[i]);
			if (r < 0) {
				printf(", \"error\": ");
				ionctl_json_string(strerror(-r));
				putchar('}');
			} else {
				printf(", \"raw_ns\": %.0f, \"lib_ns\": %.0f, \"ratio\": %.3f, "
				       "\"ctx_ns\": %.0f, \"ctx_ratio\": %.3f}",
				       raw_ns, lib_ns, lib_ns / raw_ns, ctx_ns, ctx_ns / raw_ns);
			}
		} else if (r < 0) {
			printf("%-22s %-9s %-23s %5s  failed: %s\n", ion_heap_get_name(h),
			       ion_heap_get_backend(h), b->raw.name, size, strerror(-r));
		} else {
			printf("%-22s %-9s %-23s %5s %14.0f %14.0f %7.3f %14.0f %7.3f\n",
			       ion_heap_get_name(h), ion_heap_get_backend(h),
			       b->raw.name, size, raw_ns, lib_ns, lib_ns / raw_ns, ctx_ns,
			       ctx_ns / raw_ns);
		}
		fflush(stdout);
	}
}

static void bench_heap(struct bench *b, const struct ion_heap *h,
		       const size_t *sizes, size_t n_sizes)
{
	int r;

	if (ion_heap_get_error(h))
		return;
	if (ion_heap_get_id(h) < 0) {
		/* libion's side is ion_alloc_fd(), which reaches heaps by id. */
		if (b->json) {
			json_row(b, h, NULL);
			printf(", \"skipped\": \"no Android heap id\"}");
		} else {
			printf("%-22s %-9s (not measured: no Android heap id)\n",
			       ion_heap_get_name(h), ion_heap_get_backend(h));
		}
		return;
	}
	b->mask = 1U << ion_heap_get_id(h);
	b->heap = ion_heap_get_name(h);
	for (unsigned int variant = 0;; variant++) {
		r = raw_alloc_init(&b->raw, h, variant);
		if (r < 0) {
			if (variant > 0)
				return;
			if (b->json) {
				json_row(b, h, NULL);
				printf(", \"skipped\": ");
				ionctl_json_string(strerror(-r));
				printf("}");
			} else {
				printf("%-22s %-9s (no raw call to compare with: %s)\n",
				       ion_heap_get_name(h), ion_heap_get_backend(h),
				       strerror(-r));
			}
			return;
		}
		bench_raw(b, h, sizes, n_sizes);
		raw_alloc_fini(&b->raw);
	}
}

/* "4K,64K,1M": at most 16 sizes, none empty; an error said once. */
static int parse_sizes(const char *arg, size_t *sizes, size_t *n)
{
	const char *p = arg;

	*n = 0;
	for (;;) {
		size_t len = strcspn(p, ",");
		char item[32];

		if (len == 0 || len >= sizeof(item) || *n == 16) {
			ionctl_usage_error("bench", "--sizes %s: %s", arg,
					   *n == 16 ? "at most 16 sizes" :
					   len ? "a size too long" : "an empty size");
			return -EINVAL;
		}
		memcpy(item, p, len);
		item[len] = '\0';
		if (ionctl_parse_size("bench", item, &sizes[(*n)++]) < 0)
			return -EINVAL;
		if (!p[len])
			return 0;
		p += len + 1;
	}
}

int ionctl_bench(int argc, char **argv)
{
	static const struct option options[] = {
		{ "heap", required_argument, NULL, 'H' },
		{ "sizes", required_argument, NULL, 's' },
		{ "rounds", required_argument, NULL, 'r' },
		{ "round-ms", required_argument, NULL, 'b' },
		{ "solve", no_argument, NULL, 'S' },
		{ "pool", no_argument, NULL, 'P' },
		{ "stream-seconds", required_argument, NULL, 't' },
		{ "devices", required_argument, NULL, 'd' },
		{ "for", required_argument, NULL, 'f' },
		{ "json", no_argument, NULL, 'j' },
		{ "service", no_argument, NULL, 'V' },
		{ "socket", required_argument, NULL, 'k' },
		{ "iond", required_argument, NULL, 'i' },
		{ "clients", required_argument, NULL, 'C' },
		{ "help", no_argument, NULL, 'h' },
		{ 0 },
	};
	size_t sizes[16] = { 4 << 10, 1 << 20, 8 << 20, 32 << 20 }, n_sizes = 4;
	struct bench b = { .rounds = 7, .target_ns = 100e6 };
	const char *only = NULL;
	char only_name[256];
	struct ion_ctx *ctx;
	unsigned int n_devices = 100;
	char *specs[16];
	int solve = 0, pool = 0, json = 0, n_specs = 0, service = 0;
	const char *socket_path = secure_getenv("ION_SERVICE"), *iond = NULL;
	unsigned int n_clients = 0;
	unsigned int stream_s = 10;
	uint64_t v;
	int c, n;

	while ((c = getopt_long(argc, argv, "H:s:r:b:SPt:d:f:jh", options, NULL)) != -1) {
		switch (c) {
		case 'H':
			only = optarg;
			break;
		case 's':
			if (parse_sizes(optarg, sizes, &n_sizes) < 0)
				return IONCTL_USAGE; /* said why */
			break;
		case 'r':
			if (ionctl_parse_u64(optarg, &v) < 0 || v == 0 || v > 100000)
				return ionctl_usage_error("bench", "--rounds takes 1 to 100000");
			b.rounds = (unsigned int)v;
			break;
		case 'b':
			if (ionctl_parse_u64(optarg, &v) < 0 || v == 0 || v > 60000)
				return ionctl_usage_error("bench", "--round-ms takes 1 to 60000");
			b.target_ns = (double)v * 1e6;
			break;
		case 'S':
			solve = 1;
			break;
		case 'P':
			pool = 1;
			break;
		case 't':
			if (ionctl_parse_u64(optarg, &v) < 0 || v > 600)
				return ionctl_usage_error("bench", "--stream-seconds takes 0 to 600");
			stream_s = (unsigned int)v;
			break;
		case 'd':
			if (ionctl_parse_u64(optarg, &v) < 0 || v < 16 || v > 10000)
				return ionctl_usage_error("bench", "--devices takes 16 to 10000");
			n_devices = (unsigned int)v;
			break;
		case 'f':
			if (n_specs == 16)
				return ionctl_usage_error("bench", "at most 16 --for devices");
			specs[n_specs++] = optarg;
			break;
		case 'j':
			json = 1;
			break;
		case 'V':
			service = 1;
			break;
		case 'k':
			socket_path = optarg;
			break;
		case 'i':
			iond = optarg;
			break;
		case 'C':
			if (ionctl_parse_u64(optarg, &v) < 0 || v > 1024)
				return ionctl_usage_error("bench", "--clients takes 0 to 1024");
			n_clients = (unsigned int)v;
			break;
		case 'h':
			printf("usage: ionctl bench [--heap NAME] [--sizes 4K,1M,8M,32M]\n"
			       "                    [--rounds 7] [--round-ms 100] [--json]\n"
			       "       ionctl bench --solve [--devices 100] [--for DEVICE...] [--rounds 7]\n"
			       "                    [--json]\n\n"
			       "Allocates and closes buffers in a loop on every available heap\n"
			       "(or NAME): the raw kernel call, libion's ion_alloc_fd() (Android's\n"
			       "API) and ion_ctx_alloc() (by heap name), in alternating runs of 8\n"
			       "calls, for rounds of about round-ms. Prints the median round's ns\n"
			       "per call of each and its ratio to raw.\n"
			       "--json: {\"rows\": [...]}, each row {\"heap\", \"backend\", \"raw_call\",\n"
			       "\"size\", \"raw_ns\", \"lib_ns\", \"ratio\", \"ctx_ns\", \"ctx_ratio\"}\n"
			       "(or \"error\", or \"skipped\").\n"
			       "Exit status 1 when NAME is no heap here, when nothing was measured,\n"
			       "or when any measurement failed (its row says why).\n\n"
			       "       ionctl bench --pool [--heap NAME] [--sizes ...] [--rounds 7]\n"
			       "                    [--stream-seconds 10] [--json]\n\n"
			       "--pool: per heap and size, p50 and p99 of the raw call, a pool hit,\n"
			       "a recycle with zeroing, and allocate-map-touch with and without the\n"
			       "pool (--rounds calls of each, 7 by default: use hundreds), and the\n"
			       "floor of a hit (a lock and an fcntl dup) beside it; then streams, 4\n"
			       "held, background refill, beside the raw call paced alike: 8M, an NV12\n"
			       "1080p frame and 4K at 60 and 240 a second for --stream-seconds each,\n"
			       "then 4 streams at once on two heaps (--json: \"streams\").\n\n"
			       "--solve: context creation on a fake tree of --devices devices, a\n"
			       "warm solve for 1, 4 and 16 of them, and 1M allocations for a device\n"
			       "set (--for, else the first device here a heap can serve) beside\n"
			       "allocations by the heap's name; then, call by call (32 per round),\n"
			       "p50 and p99 of a late buffer's first fd beside allocation by name,\n"
			       "and of that first fd with the heap given a Pool hint of 16x1M.\n\n"
			       "       ionctl bench --service [--socket PATH | --iond IOND] [--heap NAME]\n"
			       "                    [--sizes ...] [--rounds 7] [--clients N] [--json]\n\n"
			       "--service: per heap and size, ion_ctx_alloc() beside an allocation\n"
			       "through iond (at PATH, ION_SERVICE or the default socket; or one\n"
			       "started from the binary IOND with no limits, whose resident memory\n"
			       "is printed idle and after), in alternating runs of 8 calls: the\n"
			       "median round's ns per call of each and their ratio.  --clients N:\n"
			       "then N processes at once, 32 allocations each through the service\n"
			       "(the first heap, the first size): p50, p99 and each one's rate.\n");
			return 0;
		default:
			return ionctl_usage_error("bench", "see ionctl bench --help");
		}
	}
	if (optind < argc)
		return ionctl_usage_error("bench", "unexpected argument '%s'", argv[optind]);
	if (solve + pool + service > 1)
		return ionctl_usage_error("bench", "one of --solve, --pool, --service");
	if ((iond || n_clients) && !service)
		return ionctl_usage_error("bench", "--iond and --clients go with --service");
	if (n_specs && !solve)
		return ionctl_usage_error("bench", "--for goes with --solve");
	/* All but --pool keep a round's figures on the stack. */
	if (!pool && b.rounds > 63)
		return ionctl_usage_error("bench", "--rounds takes 1 to 63 without --pool");
	if (solve)
		return ionctl_bench_solve(n_devices, b.rounds, json, specs, n_specs);
	if (only) {
		/* A heap that is not there fails at once, naming those that are. */
		const struct ion_heap *h;

		ctx = ionctl_ctx_new("bench");
		if (!ctx)
			return IONCTL_NO;
		n = ionctl_find_heap("bench", ctx, only, &h);
		/* An alias ("cma") becomes the heap's name, which outlives ctx. */
		if (n == 0)
			snprintf(only_name, sizeof(only_name), "%s", ion_heap_get_name(h));
		only = only_name;
		ion_ctx_unref(ctx);
		if (n < 0)
			return IONCTL_NO;
	}
	if (pool)
		return ionctl_bench_pool(only, sizes, n_sizes, b.rounds, stream_s, json);
	if (service)
		return ionctl_bench_service(socket_path && *socket_path ? socket_path : IOND_SOCKET_PATH,
					    iond, only, sizes, n_sizes, b.rounds, n_clients, json);
	b.json = json;
	ctx = ionctl_ctx_new("bench");
	if (!ctx)
		return IONCTL_NO;
	b.ctx = ctx;
	b.client = ion_open();
	if (b.client < 0) {
		ion_ctx_unref(ctx);
		return ionctl_fail("bench", b.client, "ion_open");
	}
	if (json) {
		ionctl_json_begin("bench");
		printf(", \"mode\": \"raw\", \"rows\": [");
	} else
		printf("%-22s %-9s %-23s %5s %14s %14s %7s %14s %7s\n", "HEAP", "BACKEND",
		       "RAW CALL", "SIZE", "raw ns/call", "ion_alloc_fd", "ratio", "ion_ctx_alloc",
		       "ratio");
	n = ion_ctx_get_heap_count(ctx);
	for (int i = 0; i < n; i++) {
		const struct ion_heap *h;

		if (ion_ctx_get_heap(ctx, (unsigned int)i, &h) == 0 &&
		    (!only || strcmp(only, ion_heap_get_name(h)) == 0))
			bench_heap(&b, h, sizes, n_sizes);
	}
	if (json)
		printf("\n]}\n");
	ion_close(b.client);
	ion_ctx_unref(ctx);
	if (b.measured == 0 && b.failed == 0)
		return ionctl_fail("bench", 0, "nothing measured: no available heap%s%s has a raw call "
				   "to compare with", only ? " " : "", only ? only : "");
	if (b.failed)
		return ionctl_fail("bench", 0, "%u of %u measurements failed", b.failed,
				   b.failed + b.measured);
	return 0;
}
