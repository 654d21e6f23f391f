// SPDX-License-Identifier: MIT
/*
 * ionctl record --draft: a heaps.d board file to start from, written from
 * what discovery found on this machine: the board's match, each heap with
 * what it is, each device with what it needs and where that came from.
 * Each device gets a section that matches it, with what discovery
 * already knows of it as comments (derived or from a file, with where):
 * a board file is for what discovery cannot know or gets wrong.  A
 * person finishes it: every fact wants a public source.
 */
#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "ionctl.h"

/* The first string of a file (a device-tree property: NUL-separated; a
 * sysfs attribute: up to its newline) under the sysroot, or "". */
static void first_string(const char *rel, char *buf, size_t size)
{
	char path[512];
	FILE *f;
	size_t n = 0;

	snprintf(path, sizeof(path), "%s%s",
		 ionctl_sysroot && strcmp(ionctl_sysroot, "/") ? ionctl_sysroot : "", rel);
	buf[0] = '\0';
	f = fopen(path, "re");
	if (f) {
		n = fread(buf, 1, size - 1, f);
		fclose(f);
	}
	buf[n] = '\0';
	buf[strcspn(buf, "\n")] = '\0';
}

/* A word for the [Board] header: the model's, lower case, '-' for blanks. */
static void board_name(const char *model, char *buf, size_t size)
{
	size_t n = 0;

	for (const char *p = model; *p && n + 1 < size; p++)
		if (isalnum((unsigned char)*p))
			buf[n++] = (char)tolower((unsigned char)*p);
		else if (n && buf[n - 1] != '-')
			buf[n++] = '-';
	while (n && buf[n - 1] == '-')
		n--;
	buf[n] = '\0';
	if (!n)
		snprintf(buf, size, "this-board");
}

static void draft_board(FILE *out, struct ion_ctx *ctx)
{
	char compatible[256], model[256], vendor[256], product[256], name[128];
	const char *board, *source;

	first_string("/proc/device-tree/compatible", compatible, sizeof(compatible));
	first_string("/proc/device-tree/model", model, sizeof(model));
	first_string("/sys/class/dmi/id/sys_vendor", vendor, sizeof(vendor));
	first_string("/sys/class/dmi/id/product_name", product, sizeof(product));
	board_name(model[0] ? model : compatible[0] ? compatible : product, name, sizeof(name));
	for (int i = 0; ion_ctx_get_board(ctx, (unsigned int)i, &board, &source) == 0; i++)
		fprintf(out, "# board files match this machine already: [Board %s] at %s\n", board,
			source);
	fprintf(out, "[Board %s]\n", name);
	if (compatible[0])
		fprintf(out, "MatchCompatible = %s\n", compatible);
	else
		fprintf(out, "MatchDMIVendor = %s\nMatchDMIProduct = %s\n", vendor[0] ? vendor : "?",
			product[0] ? product : "?");
	fputc('\n', out);
}

static void draft_heap(FILE *out, const struct ion_heap *heap)
{
	unsigned int props = ion_heap_get_properties(heap);
	const char *node = ion_heap_get_node(heap);
	size_t root = ionctl_sysroot && strcmp(ionctl_sysroot, "/") ? strlen(ionctl_sysroot) : 0;
	char text[128];

	if (node && strncmp(node, ionctl_sysroot ? ionctl_sysroot : "", root) != 0)
		root = 0;
	fprintf(out, "# %s: %s (%s%s%s), memory below 2^%u%s%s\n", ion_heap_get_name(heap),
		ionctl_props(props, text, sizeof(text)), ion_heap_get_backend(heap),
		node ? ", " : "", node ? node + root : "",
		ion_heap_get_address_bits(heap), ion_heap_get_error(heap) ? "; unavailable: " : "",
		ion_heap_get_error(heap) ? ion_heap_get_reason(heap) : "");
	if (strcmp(ion_heap_get_backend(heap), "dma-heap") != 0)
		return;
	fprintf(out, "[Heap %s]\n", ion_heap_get_kernel_name(heap));
	for (int i = 0; i < ion_heap_get_attribute_count(heap); i++) {
		const char *key, *value, *source;

		if (ion_heap_get_attribute(heap, (unsigned int)i, &key, &value, &source) == 0)
			fprintf(out, "# %s = %s  (%s)\n", key, value, source);
	}
	if (props & ION_HEAP_PROP_CONTIGUOUS)
		fprintf(out, "# the CMA area's size and place (cma= on the command line, or the\n"
			     "# device tree's reserved-memory): MaxSize = ?\n");
	fputc('\n', out);
}

/* The device's sysfs path as a glob that survives renumbering: the
 * class device's trailing number ("card1") becomes "*". */
static void path_glob(const char *syspath, char *buf, size_t size)
{
	size_t n = strlen(syspath);

	while (n && isdigit((unsigned char)syspath[n - 1]))
		n--;
	snprintf(buf, size, "%.*s%s", (int)n, syspath, n < strlen(syspath) ? "*" : "");
}

static void draft_device(FILE *out, const struct ion_device *dev)
{
	const char *subsystem = ion_device_get_subsystem(dev), *driver = ion_device_get_driver(dev);
	const char *syspath = ion_device_get_syspath(dev);
	int n = ion_device_get_constraint_count(dev);
	char glob[512];

	fprintf(out, "# %s: %s, driver %s\n", ion_device_get_name(dev), subsystem ? subsystem : "?",
		driver ? driver : "unknown");
	fprintf(out, "[Device %s%s%s]\n", driver ? driver : "", driver ? "-" : "",
		ion_device_get_name(dev));
	if (syspath) {
		path_glob(syspath, glob, sizeof(glob));
		fprintf(out, "MatchSysfsPath = %s\n", glob);
	}
	if (driver)
		fprintf(out, "# or, for every board with this driver: %s = %s\n",
			subsystem && !strcmp(subsystem, "drm") ? "MatchDRMDriver" : "MatchDriver", driver);
	/* What discovery knows already needs no file; the file is for what
	 * it cannot know, or gets wrong. */
	for (int i = 0; i < n; i++) {
		const char *key, *value, *source;

		if (ion_device_get_constraint(dev, (unsigned int)i, &key, &value, &source) == 0 &&
		    strcmp(key, "OwnHeap"))
			fprintf(out, "# %s = %s  (%s)\n", key, value, source);
	}
	if (!n)
		fprintf(out, "# needs nothing discovery could tell: Contiguous? AddressBits?\n");
	fputc('\n', out);
}

int ionctl_record_draft(FILE *out)
{
	struct ion_ctx *ctx = ionctl_ctx_new("record");
	const struct ion_heap *heap;
	struct ion_device *dev;

	if (!ctx)
		return 1; /* said why */
	fprintf(out, "# A draft board file from ionctl record --draft (libion %d.%d.%d):\n"
		     "# what discovery found here.  Check every line against the board's\n"
		     "# documents, cite a public source for each fact, and keep only what\n"
		     "# belongs to the board (see the README's \"Contributing a board\").\n\n",
		LIBION_VERSION_MAJOR, LIBION_VERSION_MINOR, LIBION_VERSION_MICRO);
	draft_board(out, ctx);
	for (int i = 0; ion_ctx_get_heap(ctx, (unsigned int)i, &heap) == 0; i++)
		draft_heap(out, heap);
	for (int i = 0; ion_ctx_get_device_at(ctx, (unsigned int)i, &dev) == 0; i++) {
		draft_device(out, dev);
		ion_device_unref(dev);
	}
	ion_ctx_unref(ctx);
	return ferror(out) ? -EIO : 0;
}
