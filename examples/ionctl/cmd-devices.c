// SPDX-License-Identifier: MIT
/* ionctl devices: what each device needs of a buffer's memory, and why. */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ionctl.h"

typedef int (*triple_fn)(const struct ion_device *, unsigned int, const char **,
			 const char **, const char **);

static void print_triples_json(const struct ion_device *dev, int n, triple_fn get)
{
	putchar('[');
	for (int i = 0; i < n; i++) {
		const char *key, *value, *source;

		if (get(dev, (unsigned int)i, &key, &value, &source) == 0)
			ionctl_json_triple(i, key, value, source);
	}
	putchar(']');
}

void ionctl_print_device_json(const struct ion_device *dev)
{
	printf("{\"device\": ");
	ionctl_json_string(ion_device_get_name(dev));
	printf(", \"devnode\": ");
	ionctl_json_string(ion_device_get_devnode(dev));
	printf(", \"syspath\": ");
	ionctl_json_string(ion_device_get_syspath(dev));
	printf(", \"subsystem\": ");
	ionctl_json_string(ion_device_get_subsystem(dev));
	printf(", \"driver\": ");
	ionctl_json_string(ion_device_get_driver(dev));
	printf(", \"constraints\": ");
	print_triples_json(dev, ion_device_get_constraint_count(dev), ion_device_get_constraint);
	printf(", \"facts\": ");
	print_triples_json(dev, ion_device_get_fact_count(dev), ion_device_get_fact);
	putchar('}');
}

void ionctl_print_device_text(const struct ion_device *dev, const char *indent)
{
	int n = ion_device_get_constraint_count(dev);
	int nf = ion_device_get_fact_count(dev);

	printf("%s%s", indent, ion_device_get_name(dev));
	if (ion_device_get_devnode(dev))
		printf("  %s", ion_device_get_devnode(dev));
	if (ion_device_get_syspath(dev))
		printf("  %s", ion_device_get_syspath(dev));
	if (ion_device_get_subsystem(dev) || ion_device_get_driver(dev))
		printf("  (%s%s%s)", ion_device_get_subsystem(dev) ? ion_device_get_subsystem(dev) : "",
		       ion_device_get_driver(dev) ? ", driver " : "",
		       ion_device_get_driver(dev) ? ion_device_get_driver(dev) : "");
	putchar('\n');
	for (int i = 0; i < nf; i++) {
		const char *key, *value, *source;

		if (ion_device_get_fact(dev, (unsigned int)i, &key, &value, &source) == 0)
			printf("%s  read     %s: %s  [%s]\n", indent, key, value, source);
	}
	if (n == 0)
		printf("%s  needs    nothing known: any heap a device can import\n", indent);
	for (int i = 0; i < n; i++) {
		const char *key, *value, *source;

		if (ion_device_get_constraint(dev, (unsigned int)i, &key, &value, &source) == 0)
			printf("%s  needs    %s = %s  [%s]\n", indent, key, value, source);
	}
}

int ionctl_devices(int argc, char **argv)
{
	static const struct option options[] = {
		{ "json", no_argument, NULL, 'j' },
		{ "help", no_argument, NULL, 'h' },
		{ 0 },
	};
	struct ion_device **devices = NULL;
	struct ion_ctx *ctx;
	int json = 0, c, n, r;

	while ((c = getopt_long(argc, argv, "jh", options, NULL)) != -1) {
		switch (c) {
		case 'j':
			json = 1;
			break;
		case 'h':
			printf("usage: ionctl devices [--json] [DEVICE...]\n\n"
			       "Lists the devices discovery found (DRM cards, video4linux, accel),\n"
			       "or the DEVICEs named, with what each needs of a buffer's memory\n"
			       "(its constraint) and where each part of it came from: a sysfs\n"
			       "cookie, a udev property, a heaps.d file and line, or a fact\n"
			       "derived from sysfs.\n");
			return 0;
		default:
			return ionctl_usage_error("devices", "see ionctl devices --help");
		}
	}
	ctx = ionctl_ctx_new("devices");
	if (!ctx)
		return IONCTL_NO;
	if (optind < argc) {
		n = argc - optind;
		r = ionctl_get_devices("devices", ctx, n, argv + optind, &devices);
	} else {
		n = ion_ctx_get_device_count(ctx);
		r = n < 0 ? n : 0;
		if (r == 0 && !(devices = calloc(n ? (size_t)n : 1, sizeof(*devices))))
			r = -ENOMEM;
		for (int i = 0; r == 0 && i < n; i++)
			r = ion_ctx_get_device_at(ctx, (unsigned int)i, &devices[i]);
		if (r < 0)
			ionctl_fail("devices", r, "cannot list devices");
	}
	if (r < 0) {
		ion_ctx_unref(ctx);
		return IONCTL_NO;
	}
	if (json) {
		ionctl_json_begin("devices");
		printf(", \"devices\": [");
	}
	for (int i = 0; i < n; i++) {
		if (json) {
			printf("%s\n  ", i ? "," : "");
			ionctl_print_device_json(devices[i]);
		} else {
			ionctl_print_device_text(devices[i], "");
		}
	}
	if (json) {
		printf("\n]");
		ionctl_json_end();
	} else if (n == 0)
		printf("no devices found\n");
	ionctl_put_devices(devices, n);
	ion_ctx_unref(ctx);
	return 0;
}
