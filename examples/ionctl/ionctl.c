// SPDX-License-Identifier: MIT
/*
 * ionctl: look at the heaps of this machine, allocate and share buffers,
 * and measure libion against the raw kernel calls.
 */
#include <ctype.h>
#include <errno.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "ionctl.h"

static const struct ionctl_cmd commands[] = {
	{ "heaps", "list every heap, its id, backend, node, properties and status", ionctl_heaps },
	{ "devices", "list devices with their constraints and where each came from", ionctl_devices },
	{ "solve", "the heap for a set of devices, the candidates, what each excluded", ionctl_solve },
	{ "explain", "every decision of a solve, step by step, with file:line", ionctl_explain },
	{ "check", "validate heaps.d files", ionctl_check },
	{ "record", "write what libion reads of this machine as a tree, or a draft board file", ionctl_record },
	{ "alloc", "allocate, write, sync and share buffers with a child process", ionctl_alloc },
	{ "pool", "make a pool, fill it, run buffers through it, show its statistics", ionctl_pool },
	{ "bench", "time allocations: raw kernel call beside libion", ionctl_bench },
	{ "service", "ask iond: usage and quota, its heaps, an allocation", ionctl_service },
};

const char *ionctl_sysroot;
const char *ionctl_config_dir;

#define N_COMMANDS (sizeof(commands) / sizeof(commands[0]))

static void usage(FILE *out)
{
	fprintf(out, "usage: ionctl [--sysroot DIR] [--config-dir DIR[:DIR...]] COMMAND [OPTIONS]\n"
		     "       ionctl help [COMMAND]   (or ionctl COMMAND --help)\n"
		     "       ionctl --version\n\n");
	for (size_t i = 0; i < N_COMMANDS; i++)
		fprintf(out, "  %-8s %s\n", commands[i].name, commands[i].summary);
	fprintf(out, "\n--sysroot reads /dev, /sys and /proc under DIR; --config-dir reads\n"
		     "heaps.d files from DIR instead of the installed folders.\n"
		     "DEVICE is a /dev node, a /sys path, a device name (card1) or a heaps.d\n"
		     "[Device] name.  Exit status: 0 success (yes), 1 a failure (or no),\n"
		     "2 a usage error.  ION_LOG=debug shows the library's discovery.\n"
		     "man ionctl has the details.\n");
}

static const struct ionctl_cmd *find_command(const char *name)
{
	for (size_t i = 0; i < N_COMMANDS; i++)
		if (strcmp(name, commands[i].name) == 0)
			return &commands[i];
	return NULL;
}

/* ionctl help [TOPIC]: the overview, or the topic's own --help. */
static int help(int argc, char **argv)
{
	const struct ionctl_cmd *cmd;
	char help_arg[] = "--help";
	char *args[3];

	if (argc < 2) {
		usage(stdout);
		return 0;
	}
	if (argc > 2)
		return ionctl_usage_error("help", "one topic at a time");
	cmd = find_command(argv[1]);
	if (!cmd)
		return ionctl_usage_error("help", "no topic '%s' (ionctl help lists the commands)",
					  argv[1]);
	args[0] = argv[1];
	args[1] = help_arg;
	args[2] = NULL;
	return cmd->run(2, args);
}

int ionctl_usage_error(const char *cmd, const char *format, ...)
{
	va_list args;

	fprintf(stderr, "ionctl %s: ", cmd);
	va_start(args, format);
	vfprintf(stderr, format, args);
	va_end(args);
	fputc('\n', stderr);
	return IONCTL_USAGE;
}

/* The length of the UTF-8 sequence at s, or 0 when it is none (a stray
 * continuation byte, a truncated or overlong sequence, a surrogate). */
static size_t utf8_len(const unsigned char *s)
{
	size_t n = s[0] >= 0xf0 && s[0] <= 0xf4 ? 4 : s[0] >= 0xe0 ? 3 : s[0] >= 0xc2 ? 2 : 0;

	if (s[0] >= 0xf8 || (s[0] == 0xe0 && s[1] < 0xa0) || (s[0] == 0xed && s[1] >= 0xa0) ||
	    (s[0] == 0xf0 && s[1] < 0x90) || (s[0] == 0xf4 && s[1] >= 0x90))
		return 0;
	for (size_t i = 1; i < n; i++)
		if ((s[i] & 0xc0) != 0x80)
			return 0;
	return n;
}

/* Valid JSON whatever the bytes: controls, DEL and bytes of no UTF-8
 * sequence become \u00XX (the byte's value as a code point). */
void ionctl_json_string(const char *s)
{
	const unsigned char *p = (const unsigned char *)s;

	if (!s) {
		fputs("null", stdout);
		return;
	}
	putchar('"');
	while (*p) {
		size_t n = *p >= 0x80 ? utf8_len(p) : 1;

		if (*p == '"' || *p == '\\')
			printf("\\%c", *p);
		else if (*p < 0x20 || *p == 0x7f || n == 0)
			printf("\\u%04x", *p);
		else
			fwrite(p, 1, n, stdout);
		p += n ? n : 1;
	}
	putchar('"');
}

void ionctl_json_triple(int index, const char *key, const char *value,
			const char *source)
{
	printf("%s{\"key\": ", index ? ", " : "");
	ionctl_json_string(key);
	printf(", \"value\": ");
	ionctl_json_string(value);
	printf(", \"source\": ");
	ionctl_json_string(source);
	putchar('}');
}

double ionctl_now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec * 1e9 + (double)ts.tv_nsec;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return (x > y) - (x < y);
}

double ionctl_median(double *values, size_t n)
{
	qsort(values, n, sizeof(*values), cmp_double);
	return values[n / 2];
}

/* "no device X", and the devices there are, so that a typo is seen. */
static void say_no_device(const char *cmd, struct ion_ctx *ctx, const char *spec, int err)
{
	int n = ion_ctx_get_device_count(ctx);

	ionctl_fail(cmd, err, "no device %s", spec);
	if (err != -ENODEV || n < 0)
		return;
	fprintf(stderr, "ionctl %s: the devices here:%s", cmd, n ? "" : " none");
	for (int i = 0; i < n; i++) {
		struct ion_device *dev = NULL;

		if (ion_ctx_get_device_at(ctx, (unsigned int)i, &dev) == 0)
			fprintf(stderr, " %s%s%s%s", ion_device_get_name(dev),
				ion_device_get_devnode(dev) ? " (" : "",
				ion_device_get_devnode(dev) ? ion_device_get_devnode(dev) : "",
				ion_device_get_devnode(dev) ? ")" : "");
		ion_device_unref(dev);
	}
	fputc('\n', stderr);
}

int ionctl_get_devices(const char *cmd, struct ion_ctx *ctx, int argc,
		       char **argv, struct ion_device ***ret_devices)
{
	struct ion_device **devices = calloc(argc > 0 ? (size_t)argc : 1, sizeof(*devices));
	int r = 0;

	if (!devices)
		return ionctl_fail(cmd, -ENOMEM, "devices"), -ENOMEM;
	for (int i = 0; i < argc && r == 0; i++) {
		r = ion_ctx_get_device(ctx, argv[i], &devices[i]);
		if (r < 0)
			say_no_device(cmd, ctx, argv[i], r);
	}
	if (r < 0) {
		ionctl_put_devices(devices, argc);
		return r;
	}
	*ret_devices = devices;
	return 0;
}

void ionctl_put_devices(struct ion_device **devices, int n)
{
	for (int i = 0; devices && i < n; i++)
		ion_device_unref(devices[i]);
	free(devices);
}

int ionctl_solve_for(const char *cmd, struct ion_ctx *ctx,
		     struct ion_device **devices, int n, const char *constraints, size_t size,
		     unsigned int flags, struct ion_solution **ret)
{
	const char *what = "cannot solve";
	struct ion_alloc_config *config;
	int r = ion_alloc_config_new(&config);

	if (r == 0)
		r = ion_alloc_config_set_size(config, size);
	if (r == 0)
		r = ion_alloc_config_set_flags(config, flags);
	for (int i = 0; r == 0 && i < n; i++)
		r = ion_alloc_config_add_device(config, devices[i]);
	if (r == 0 && constraints && (r = ion_alloc_config_add_constraints(config, constraints)) < 0)
		what = "the constraints are refused";
	if (r == 0)
		r = ion_ctx_solve(ctx, config, ret);
	ion_alloc_config_free(config);
	if (r < 0)
		ionctl_fail(cmd, r, "%s", what);
	return r;
}

int ionctl_fail(const char *cmd, int err, const char *format, ...)
{
	va_list args;

	fprintf(stderr, "ionctl %s: ", cmd);
	va_start(args, format);
	vfprintf(stderr, format, args);
	va_end(args);
	if (err)
		fprintf(stderr, ": %s", strerror(err < 0 ? -err : err));
	fputc('\n', stderr);
	return 1;
}

static double started_ns, progress_after_ns = 2e9;
static bool progress_shown;

void ionctl_progress(const char *cmd, const char *format, ...)
{
	va_list args;

	if (!isatty(STDERR_FILENO) || ionctl_now_ns() - started_ns < progress_after_ns)
		return;
	fprintf(stderr, "\r\033[Kionctl %s: ", cmd);
	va_start(args, format);
	vfprintf(stderr, format, args);
	va_end(args);
	fflush(stderr);
	progress_shown = true;
}

void ionctl_progress_done(void)
{
	if (progress_shown)
		fputs("\r\033[K", stderr);
	progress_shown = false;
}

void ionctl_json_begin(const char *cmd)
{
	printf("{\"version\": %d, \"command\": ", IONCTL_JSON_VERSION);
	ionctl_json_string(cmd);
}

void ionctl_json_end(void)
{
	printf("}\n");
}

struct ion_ctx *ionctl_ctx_new(const char *cmd)
{
	struct ion_ctx *ctx;
	int r = ion_ctx_new(ionctl_sysroot, &ctx);

	if (r < 0) {
		ionctl_fail(cmd, r, "cannot create a context%s%s",
			    ionctl_sysroot ? " on " : "", ionctl_sysroot ? ionctl_sysroot : "");
		return NULL;
	}
	if (ionctl_config_dir && (r = ion_ctx_set_heaps_path(ctx, ionctl_config_dir)) < 0) {
		ion_ctx_unref(ctx);
		ionctl_fail(cmd, r, "--config-dir %s", ionctl_config_dir);
		return NULL;
	}
	return ctx;
}

const char *ionctl_props(unsigned int props, char *buf, size_t size)
{
	static const struct {
		unsigned int bit;
		const char *name;
	} names[] = {
		{ ION_HEAP_PROP_CONTIGUOUS, "contiguous" },
		{ ION_HEAP_PROP_CACHED, "cached" },
		{ ION_HEAP_PROP_UNCACHED, "uncached" },
		{ ION_HEAP_PROP_CPU_ONLY, "cpu-only" },
		{ ION_HEAP_PROP_KERNEL_MAP, "kernel-map" },
		{ ION_HEAP_PROP_PROTECTED, "protected" },
		{ ION_HEAP_PROP_ION_LEGACY, "ion-legacy" },
	};
	size_t used = 0;

	buf[0] = '\0';
	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++)
		if (props & names[i].bit)
			used += (size_t)snprintf(buf + used, used < size ? size - used : 0,
						 "%s%s", used ? "," : "", names[i].name);
	return buf;
}

int ionctl_parse_u64(const char *arg, uint64_t *ret)
{
	unsigned long long v;
	char *end;

	/* strtoull() would take blanks, a sign and an empty string. */
	if (!arg || !isdigit((unsigned char)arg[0]))
		return -EINVAL;
	errno = 0;
	v = strtoull(arg, &end, 10);
	if (errno || *end)
		return -EINVAL;
	*ret = v;
	return 0;
}

/* A number with an optional K, M or G suffix (powers of 1024). */
static int parse_size(const char *arg, uint64_t *ret)
{
	unsigned long long v;
	unsigned int shift = 0;
	char *end;

	if (!arg || !isdigit((unsigned char)arg[0]))
		return -EINVAL;
	errno = 0;
	v = strtoull(arg, &end, 10);
	if (errno)
		return -EINVAL;
	switch (*end) {
	case 'k': case 'K': shift = 10; end++; break;
	case 'm': case 'M': shift = 20; end++; break;
	case 'g': case 'G': shift = 30; end++; break;
	default: break;
	}
	if (*end || (shift && v > (UINT64_MAX >> shift)))
		return -EINVAL;
	*ret = (uint64_t)v << shift;
	return 0;
}

int ionctl_parse_size(const char *cmd, const char *arg, size_t *ret)
{
	uint64_t v;
	int r = parse_size(arg, &v);

	if (r < 0 || v == 0 || v > SIZE_MAX) {
		ionctl_fail(cmd, 0, "invalid size '%s' (a number of bytes, K, M or G)", arg);
		return -EINVAL;
	}
	*ret = (size_t)v;
	return 0;
}

int ionctl_find_heap(const char *cmd, struct ion_ctx *ctx, const char *name,
		     const struct ion_heap **ret)
{
	const struct ion_heap *heap;
	int r = ion_ctx_find_heap(ctx, name, &heap), n;

	if (r == -ENOENT) {
		n = ion_ctx_get_heap_count(ctx);
		fprintf(stderr, "ionctl %s: no heap is named '%s'; the heaps here are:", cmd, name);
		for (int i = 0; i < n; i++) {
			const struct ion_heap *h;

			if (ion_ctx_get_heap(ctx, (unsigned int)i, &h) == 0)
				fprintf(stderr, "%s %s%s", i ? "," : "", ion_heap_get_name(h),
					ion_heap_get_error(h) ? " (unavailable)" : "");
		}
		fprintf(stderr, "%s\n", n > 0 ? "" : " none");
		return r;
	}
	if (r < 0)
		return ionctl_fail(cmd, r, "heap %s", name), r;
	if (ion_heap_get_error(heap)) {
		fprintf(stderr, "ionctl %s: heap %s is unavailable: %s\n", cmd,
			ion_heap_get_name(heap), ion_heap_get_reason(heap));
		return ion_heap_get_error(heap);
	}
	*ret = heap;
	return 0;
}

int ionctl_default_heap(struct ion_ctx *ctx, const struct ion_heap **ret)
{
	int n = ion_ctx_get_heap_count(ctx);

	for (int i = 0; i < n; i++) {
		const struct ion_heap *h;

		if (ion_ctx_get_heap(ctx, (unsigned int)i, &h) == 0 &&
		    ion_heap_get_id(h) == ION_HEAP_TYPE_SYSTEM) {
			*ret = h;
			return 0;
		}
	}
	return n < 0 ? n : -ENODEV;
}

int main(int argc, char **argv)
{
	started_ns = ionctl_now_ns();
	/* IONCTL_PROGRESS_AFTER: seconds before progress shows (the tests' 0). */
	if (secure_getenv("IONCTL_PROGRESS_AFTER"))
		progress_after_ns = atof(secure_getenv("IONCTL_PROGRESS_AFTER")) * 1e9;
	/* Global options come before the command. */
	while (argc > 1 && argv[1][0] == '-' && argv[1][1] == '-' && argv[1][2]) {
		const char **opt = strcmp(argv[1], "--sysroot") == 0 ? &ionctl_sysroot
				 : strcmp(argv[1], "--config-dir") == 0 ? &ionctl_config_dir
				 : NULL;

		if (!opt)
			break;
		if (argc < 3)
			return ionctl_usage_error(argv[1] + 2, "needs a directory");
		*opt = argv[2];
		argc -= 2;
		argv += 2;
	}
	if (argc < 2) {
		usage(stderr);
		return IONCTL_USAGE;
	}
	if (strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0) {
		usage(stdout);
		return 0;
	}
	if (strcmp(argv[1], "--version") == 0) {
		printf("ionctl %d.%d.%d\n", LIBION_VERSION_MAJOR, LIBION_VERSION_MINOR,
		       LIBION_VERSION_MICRO);
		return 0;
	}
	if (strcmp(argv[1], "help") == 0)
		return help(argc - 1, argv + 1);
	if (argv[1][0] == '-')
		return ionctl_usage_error(argv[1], "unknown option (ionctl --help lists them)");
	/* A --sysroot that is not there would read as a machine with nothing
	 * on it, and every answer would be wrong without a word. */
	if (ionctl_sysroot && access(ionctl_sysroot, F_OK) < 0)
		return ionctl_fail(argv[1], -errno, "--sysroot %s", ionctl_sysroot);
	if (find_command(argv[1])) {
		char name[64];

		/* getopt's own messages then say "ionctl heaps: ...". */
		snprintf(name, sizeof(name), "ionctl %s", argv[1]);
		argv[1] = name;
		return find_command(name + 7)->run(argc - 1, argv + 1);
	}
	return ionctl_usage_error(argv[1], "unknown command (ionctl --help lists them)");
}
