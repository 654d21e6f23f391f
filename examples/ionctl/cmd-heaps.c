// SPDX-License-Identifier: MIT
/* ionctl heaps: every heap this machine has, and why any is unavailable. */
#include <getopt.h>
#include <stdio.h>

#include "ionctl.h"

static void print_json(const struct ion_heap *h, int index)
{
	unsigned int props = ion_heap_get_properties(h);

	printf("%s\n  {\"name\": ", index ? "," : "");
	ionctl_json_string(ion_heap_get_name(h));
	printf(", \"kernel_name\": ");
	ionctl_json_string(ion_heap_get_kernel_name(h));
	printf(", \"id\": %d, \"type\": %u, \"backend\": ", ion_heap_get_id(h),
	       ion_heap_get_type(h));
	ionctl_json_string(ion_heap_get_backend(h));
	printf(", \"node\": ");
	ionctl_json_string(ion_heap_get_node(h));
	printf(", \"contiguous\": %s, \"cached\": %s, \"uncached\": %s, \"cpu_only\": %s",
	       props & ION_HEAP_PROP_CONTIGUOUS ? "true" : "false",
	       props & ION_HEAP_PROP_CACHED ? "true" : "false",
	       props & ION_HEAP_PROP_UNCACHED ? "true" : "false",
	       props & ION_HEAP_PROP_CPU_ONLY ? "true" : "false");
	printf(", \"address_bits\": %u, \"available\": %s, \"reason\": ",
	       ion_heap_get_address_bits(h), ion_heap_get_error(h) ? "false" : "true");
	ionctl_json_string(ion_heap_get_reason(h));
	printf(", \"attributes\": [");
	for (int i = 0, n = ion_heap_get_attribute_count(h); i < n; i++) {
		const char *key, *value, *source;

		if (ion_heap_get_attribute(h, (unsigned int)i, &key, &value, &source) == 0)
			ionctl_json_triple(i, key, value, source);
	}
	printf("]}");
}

static void print_row(const struct ion_heap *h)
{
	char props[64], id[8] = "-";

	if (ion_heap_get_id(h) >= 0)
		snprintf(id, sizeof(id), "%d", ion_heap_get_id(h));
	printf("%-22s %3s  %-9s %-24s %-22s %s\n", ion_heap_get_name(h), id,
	       ion_heap_get_backend(h),
	       ion_heap_get_node(h) ? ion_heap_get_node(h) : "-",
	       ionctl_props(ion_heap_get_properties(h), props, sizeof(props)),
	       ion_heap_get_error(h) ? ion_heap_get_reason(h) : "available");
}

int ionctl_heaps(int argc, char **argv)
{
	static const struct option options[] = {
		{ "json", no_argument, NULL, 'j' },
		{ "help", no_argument, NULL, 'h' },
		{ 0 },
	};
	struct ion_ctx *ctx;
	int json = 0, c, n;

	while ((c = getopt_long(argc, argv, "jh", options, NULL)) != -1) {
		switch (c) {
		case 'j':
			json = 1;
			break;
		case 'h':
			printf("usage: ionctl heaps [--json]\n\n"
			       "Lists every heap found: its name, Android-convention id\n"
			       "(what ION_HEAP_*_MASK bits reach), backend, device node,\n"
			       "properties, and the reason it is unavailable, if it is.\n");
			return 0;
		default:
			return ionctl_usage_error("heaps", "see ionctl heaps --help");
		}
	}
	if (optind < argc)
		return ionctl_usage_error("heaps", "unexpected argument '%s'", argv[optind]);
	ctx = ionctl_ctx_new("heaps");
	if (!ctx)
		return 1;
	n = ion_ctx_get_heap_count(ctx);
	if (n < 0) {
		ion_ctx_unref(ctx);
		return ionctl_fail("heaps", n, "discovery failed");
	}
	if (json) {
		ionctl_json_begin("heaps");
		printf(", \"heaps\": [");
	} else
		printf("%-22s %3s  %-9s %-24s %-22s %s\n", "HEAP", "ID", "BACKEND",
		       "NODE", "PROPERTIES", "STATUS");
	for (int i = 0; i < n; i++) {
		const struct ion_heap *h;

		if (ion_ctx_get_heap(ctx, (unsigned int)i, &h) < 0)
			continue;
		if (json)
			print_json(h, i);
		else
			print_row(h);
	}
	if (json) {
		printf("\n]");
		ionctl_json_end();
	}
	ion_ctx_unref(ctx);
	return 0;
}
