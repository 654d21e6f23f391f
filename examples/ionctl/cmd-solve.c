// SPDX-License-Identifier: MIT
/*
 * ionctl solve and ionctl explain: which heap serves a set of devices,
 * and every step of the decision.
 */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include "ionctl.h"

struct solve_args {
	size_t size;
	unsigned int flags;
	int json;
	const char *expect;	/* --expect: the answer must be this heap */
	const char *constraints; /* --constraints: another process's, as text */
	int n;			/* devices */
	char **specs;
};

static int parse(const char *cmd, int argc, char **argv, struct solve_args *a,
		 int allow_json)
{
	static const struct option options[] = {
		{ "size", required_argument, NULL, 's' },
		{ "cached", no_argument, NULL, 'c' },
		{ "json", no_argument, NULL, 'j' },
		{ "expect", required_argument, NULL, 'e' },
		{ "constraints", required_argument, NULL, 'C' },
		{ "help", no_argument, NULL, 'h' },
		{ 0 },
	};
	int c;

	a->size = 1 << 20;
	while ((c = getopt_long(argc, argv, "s:cje:h", options, NULL)) != -1) {
		switch (c) {
		case 's':
			if (ionctl_parse_size(cmd, optarg, &a->size) < 0)
				return IONCTL_USAGE;
			break;
		case 'c':
			a->flags |= ION_FLAG_CACHED;
			break;
		case 'j':
			if (!allow_json)
				return ionctl_usage_error(cmd, "no --json here");
			a->json = 1;
			break;
		case 'e':
			a->expect = optarg;
			break;
		case 'C':
			a->constraints = optarg;
			break;
		case 'h':
			printf("usage: ionctl %s DEVICE... [--size SIZE] [--cached]%s\n"
			       "       %*s [--expect HEAP] [--constraints TEXT]\n\n", cmd,
			       allow_json ? " [--json]" : "", (int)strlen(cmd) + 7, "");
			if (allow_json)
				printf("Solves for the DEVICEs together: the heap a buffer of SIZE\n"
				       "(default 1M) would come from, every heap that could serve it\n"
				       "best first, and each heap a device excluded, with the reason.\n"
				       "Exit status 1 when no heap fits them all, or when the answer\n"
				       "is not HEAP (--expect, for scripts and tests).  --constraints\n"
				       "adds another process's (ion_alloc_config_serialize()'s text);\n"
				       "then DEVICEs may be left out.\n");
			else
				printf("Every step of a solve for the DEVICEs: the board files that\n"
				       "matched, the heaps and what the files said of them, what each\n"
				       "device needs and where each part of it came from, and each\n"
				       "heap's verdict.  Exit status 1 when no heap fits them all, or\n"
				       "when the answer is not HEAP (--expect).  --constraints adds\n"
				       "another process's, as for solve.\n");
			return -1;
		default:
			return ionctl_usage_error(cmd, "see ionctl %s --help", cmd);
		}
	}
	a->n = argc - optind;
	a->specs = argv + optind;
	if (a->n < 1 && !a->constraints)
		return ionctl_usage_error(cmd, "name at least one DEVICE, or --constraints");
	return 0;
}

/* The heaps this device alone would take, as a JSON array. */
static void print_device_heaps_json(struct ion_ctx *ctx, struct ion_device *dev,
				    const struct solve_args *a)
{
	struct ion_solution *sol;

	putchar('[');
	if (ionctl_solve_for("solve", ctx, &dev, 1, NULL, a->size, a->flags, &sol) == 0) {
		for (int i = 0; i < ion_solution_get_heap_count(sol); i++) {
			printf("%s", i ? ", " : "");
			ionctl_json_string(ion_heap_get_name(ion_solution_get_heap(sol, (unsigned int)i)));
		}
		ion_solution_unref(sol);
	}
	putchar(']');
}

/* Where the device's constraint came from, sources joined by "; ". */
static void print_device_source_json(const struct ion_device *dev)
{
	int n = ion_device_get_constraint_count(dev);
	size_t len = 1;
	char *joined;

	for (int i = 0; i < n; i++) {
		const char *key, *value, *source;

		if (ion_device_get_constraint(dev, (unsigned int)i, &key, &value, &source) == 0)
			len += strlen(source) + 2;
	}
	joined = calloc(1, len);
	for (int i = 0; joined && i < n; i++) {
		const char *key, *value, *source;

		if (ion_device_get_constraint(dev, (unsigned int)i, &key, &value, &source) == 0 &&
		    !strstr(joined, source))
			sprintf(joined + strlen(joined), "%s%s", *joined ? "; " : "", source);
	}
	ionctl_json_string(joined && *joined ? joined : "none");
	free(joined);
}

static void print_json(struct ion_ctx *ctx, const struct solve_args *a,
		       struct ion_device **devices, const struct ion_solution *sol)
{
	int n = ion_solution_get_heap_count(sol);
	int nr = ion_solution_get_rejection_count(sol);

	ionctl_json_begin("solve");
	printf(", \"heap\": ");
	ionctl_json_string(n > 0 ? ion_heap_get_name(ion_solution_get_heap(sol, 0)) : NULL);
	printf(", \"size\": %zu, \"candidates\": [", ion_solution_get_size(sol));
	for (int i = 0; i < n; i++) {
		printf("%s", i ? ", " : "");
		ionctl_json_string(ion_heap_get_name(ion_solution_get_heap(sol, (unsigned int)i)));
	}
	printf("],\n \"devices\": [");
	for (int i = 0; i < a->n; i++) {
		printf("%s\n  {\"device\": ", i ? "," : "");
		ionctl_json_string(ion_device_get_name(devices[i]));
		printf(", \"syspath\": ");
		ionctl_json_string(ion_device_get_syspath(devices[i]));
		printf(", \"heaps\": ");
		print_device_heaps_json(ctx, devices[i], a);
		printf(", \"source\": ");
		print_device_source_json(devices[i]);
		printf(", \"constraints\": ");
		ionctl_print_device_json(devices[i]);
		putchar('}');
	}
	printf("],\n \"rejected\": [");
	for (int i = 0; i < nr; i++) {
		const struct ion_heap *h;
		const struct ion_device *d;
		const char *reason;

		if (ion_solution_get_rejection(sol, (unsigned int)i, &h, &d, &reason) < 0)
			continue;
		printf("%s\n  {\"heap\": ", i ? "," : "");
		ionctl_json_string(ion_heap_get_name(h));
		printf(", \"device\": ");
		ionctl_json_string(d ? ion_device_get_name(d) : NULL);
		printf(", \"reason\": ");
		ionctl_json_string(reason);
		putchar('}');
	}
	putchar(']');
	ionctl_json_end();
}

static void print_text(const struct ion_solution *sol)
{
	int n = ion_solution_get_heap_count(sol);
	int nr = ion_solution_get_rejection_count(sol);

	printf("heap:       %s\n", n > 0 ? ion_heap_get_name(ion_solution_get_heap(sol, 0))
				      : "none fits every device");
	printf("candidates:");
	for (int i = 0; i < n; i++)
		printf(" %s", ion_heap_get_name(ion_solution_get_heap(sol, (unsigned int)i)));
	printf("%s\n", n ? "" : " none");
	if (nr)
		printf("rejected:\n");
	for (int i = 0; i < nr; i++) {
		const struct ion_heap *h;
		const struct ion_device *d;
		const char *reason;

		if (ion_solution_get_rejection(sol, (unsigned int)i, &h, &d, &reason) == 0)
			printf("  %-22s %s\n", ion_heap_get_name(h), reason);
	}
}

/* Sets up, runs one of the two printers, tears down; the exit status. */
static int run(const char *cmd, int argc, char **argv, int allow_json,
	       void (*print)(struct ion_ctx *, const struct solve_args *,
			     struct ion_device **, const struct ion_solution *))
{
	struct solve_args a = { 0 };
	struct ion_device **devices;
	struct ion_solution *sol;
	struct ion_ctx *ctx;
	int r = parse(cmd, argc, argv, &a, allow_json);

	if (r)
		return r < 0 ? 0 : r;
	ctx = ionctl_ctx_new(cmd);
	if (!ctx)
		return IONCTL_NO;
	r = ionctl_get_devices(cmd, ctx, a.n, a.specs, &devices);
	if (r == 0) {
		r = ionctl_solve_for(cmd, ctx, devices, a.n, a.constraints, a.size, a.flags, &sol);
		if (r == 0) {
			const struct ion_heap *answer = ion_solution_get_heap(sol, 0);

			print(ctx, &a, devices, sol);
			r = answer ? 0 : IONCTL_NO;
			/* The answer's own name: an alias would be a different
			 * answer printed. */
			if (a.expect && (!answer || strcmp(ion_heap_get_name(answer), a.expect) != 0)) {
				fprintf(stderr, "ionctl %s: the answer is %s, not %s (--expect)\n", cmd,
					answer ? ion_heap_get_name(answer) : "no heap", a.expect);
				r = IONCTL_NO;
			}
			ion_solution_unref(sol);
		}
		ionctl_put_devices(devices, a.n);
	}
	ion_ctx_unref(ctx);
	return r < 0 ? IONCTL_NO : r;
}

static void print_solve(struct ion_ctx *ctx, const struct solve_args *a,
			struct ion_device **devices, const struct ion_solution *sol)
{
	if (a->json)
		print_json(ctx, a, devices, sol);
	else
		print_text(sol);
}

int ionctl_solve(int argc, char **argv)
{
	return run("solve", argc, argv, 1, print_solve);
}

/* The terminal's width when stdout is one, else 0: do not wrap. */
static int columns(void)
{
	struct winsize ws;

	if (!isatty(STDOUT_FILENO) || ioctl(STDOUT_FILENO, TIOCGWINSZ, &ws) < 0 || ws.ws_col < 40)
		return 0;
	return ws.ws_col;
}

/* prefix, then text in words, the lines after the first indented to
 * hang under the text, none past width (0: one line). */
static void print_wrapped(int width, const char *prefix, const char *text)
{
	int hang = (int)strlen(prefix), col = hang;

	fputs(prefix, stdout);
	while (*text) {
		int len = (int)strcspn(text, " ");

		if (col > hang && width && col + 1 + len > width) {
			printf("\n%*s", hang, "");
			col = hang;
		} else if (col > hang) {
			putchar(' ');
			col++;
		}
		fwrite(text, 1, (size_t)len, stdout);
		col += len;
		text += len;
		text += strspn(text, " ");
	}
	putchar('\n');
}

static void explain_heaps(struct ion_ctx *ctx)
{
	int n = ion_ctx_get_heap_count(ctx);

	printf("2. Heaps, in the order discovery found them:\n");
	for (int i = 0; i < n; i++) {
		const struct ion_heap *h;
		char props[128];

		if (ion_ctx_get_heap(ctx, (unsigned int)i, &h) < 0)
			continue;
		printf("   %s (%s%s%s): %s, below 2^%u%s%s\n", ion_heap_get_name(h),
		       ion_heap_get_backend(h), ion_heap_get_node(h) ? " " : "",
		       ion_heap_get_node(h) ? ion_heap_get_node(h) : "",
		       ionctl_props(ion_heap_get_properties(h), props, sizeof(props)),
		       ion_heap_get_address_bits(h),
		       ion_heap_get_error(h) ? "; unavailable: " : "",
		       ion_heap_get_error(h) ? ion_heap_get_reason(h) : "");
		for (int k = 0; k < ion_heap_get_attribute_count(h); k++) {
			const char *key, *value, *source;

			if (ion_heap_get_attribute(h, (unsigned int)k, &key, &value, &source) == 0)
				printf("      %s = %s  [%s]\n", key, value, source);
		}
	}
}

static void print_explain(struct ion_ctx *ctx, const struct solve_args *a,
			  struct ion_device **devices, const struct ion_solution *sol)
{
	int nb = ion_ctx_get_board_count(ctx);
	int nf = ion_ctx_get_config_file_count(ctx);
	int n = ion_solution_get_heap_count(sol);
	int nr = ion_solution_get_rejection_count(sol);
	int errors = ion_ctx_get_config_error_count(ctx);
	int width = columns();

	printf("1. Board files: %d read", nf);
	for (int i = 0; i < nf; i++)
		printf("%s %s", i ? "," : ":", ion_ctx_get_config_file(ctx, (unsigned int)i));
	printf("\n");
	if (errors > 0)
		printf("   %d problem%s in them (logged; broken sections skipped)\n", errors,
		       errors == 1 ? "" : "s");
	if (nb <= 0)
		printf("   no [Board] section matches this machine: only sections outside any\n"
		       "   [Board] apply\n");
	for (int i = 0; i < nb; i++) {
		const char *name, *source;

		if (ion_ctx_get_board(ctx, (unsigned int)i, &name, &source) == 0)
			printf("   board %s matches  [%s]\n", name, source);
	}
	explain_heaps(ctx);
	printf("3. Devices, and what each needs:\n");
	for (int i = 0; i < a->n; i++) {
		const char *name = ion_device_get_name(devices[i]);
		const char *node = ion_device_get_devnode(devices[i]);

		/* What was asked for, and what it is: "vc4 is card1". */
		if (strcmp(a->specs[i], name) != 0 && (!node || strcmp(a->specs[i], node) != 0))
			printf("   %s is %s\n", a->specs[i], name);
		ionctl_print_device_text(devices[i], "   ");
	}
	printf("4. Each heap's verdict, for %zu bytes%s:\n", ion_solution_get_size(sol),
	       a->flags & ION_FLAG_CACHED ? ", cached" : "");
	for (int i = 0; i < nr; i++) {
		const struct ion_heap *h;
		const struct ion_device *d;
		const char *reason;

		if (ion_solution_get_rejection(sol, (unsigned int)i, &h, &d, &reason) == 0) {
			char prefix[64];

			snprintf(prefix, sizeof(prefix), "   %-22s out: ", ion_heap_get_name(h));
			print_wrapped(width, prefix, reason);
		}
	}
	for (int i = 0; i < n; i++)
		printf("   %-22s fits every device (candidate %d)\n",
		       ion_heap_get_name(ion_solution_get_heap(sol, (unsigned int)i)), i + 1);
	printf("5. Answer: %s\n", n ? ion_heap_get_name(ion_solution_get_heap(sol, 0))
				   : "no heap fits every device");
	if (n > 1)
		printf("   (the board's Preference first, then scattered memory before\n"
		       "   contiguous, then discovery's order; out of memory, the next one)\n");
}

int ionctl_explain(int argc, char **argv)
{
	return run("explain", argc, argv, 0, print_explain);
}
