// SPDX-License-Identifier: MIT
/*
 * ionctl: look at the heaps of this machine, allocate and share buffers,
 * and measure libion against the raw kernel calls.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "ionctl.h"
#include "src/util.h"

static const struct ionctl_cmd commands[] = {
	{ "heaps", "list every heap, its id, backend, node, properties and status", ionctl_heaps },
	{ "alloc", "allocate, write, sync and share buffers with a child process", ionctl_alloc },
	{ "bench", "time allocations: raw kernel call beside libion", ionctl_bench },
};

static void usage(FILE *out)
{
	fprintf(out, "usage: ionctl COMMAND [OPTIONS]   (ionctl COMMAND --help)\n\n");
	for (size_t i = 0; i < sizeof(commands) / sizeof(commands[0]); i++)
		fprintf(out, "  %-6s %s\n", commands[i].name, commands[i].summary);
	fprintf(out, "\nION_LOG=debug shows the library's discovery.\n");
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

struct ion_ctx *ionctl_ctx_new(const char *cmd)
{
	struct ion_ctx *ctx;
	int r = ion_ctx_new(NULL, &ctx);

	if (r < 0) {
		ionctl_fail(cmd, r, "cannot create a context");
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
	};
	size_t used = 0;

	buf[0] = '\0';
	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++)
		if (props & names[i].bit)
			used += (size_t)snprintf(buf + used, used < size ? size - used : 0,
						 "%s%s", used ? "," : "", names[i].name);
	return buf;
}

int ionctl_parse_size(const char *cmd, const char *arg, size_t *ret)
{
	uint64_t v;
	int r = ion_parse_size(arg, &v);

	if (r < 0 || v == 0 || v > SIZE_MAX) {
		ionctl_fail(cmd, 0, "invalid size '%s' (a number of bytes, K, M or G)", arg);
		return -EINVAL;
	}
	*ret = (size_t)v;
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
	if (argc < 2) {
		usage(stderr);
		return 1;
	}
	if (strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0 ||
	    strcmp(argv[1], "help") == 0) {
		usage(stdout);
		return 0;
	}
	for (size_t i = 0; i < sizeof(commands) / sizeof(commands[0]); i++)
		if (strcmp(argv[1], commands[i].name) == 0)
			return commands[i].run(argc - 1, argv + 1);
	ionctl_fail(argv[1], 0, "unknown command (ionctl --help lists them)");
	return 1;
}
