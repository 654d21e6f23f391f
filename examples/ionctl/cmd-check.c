// SPDX-License-Identifier: MIT
/* ionctl check: validates heaps.d files, the way discovery reads them. */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <syslog.h>

#include "ionctl.h"

/* What discovery says of the folders themselves (more than it reads);
 * the files' own problems come from print_problems(). */
static void print_warning(struct ion_ctx *ctx, int priority, const char *file,
			  int line, const char *fn, const char *format, va_list args)
	__attribute__((format(printf, 6, 0)));
static void print_warning(struct ion_ctx *ctx, int priority, const char *file,
			  int line, const char *fn, const char *format, va_list args)
{
	(void)ctx;
	(void)file;
	(void)line;
	if (priority > LOG_WARNING || strcmp(fn, ION_LOG_CONF_FN) == 0)
		return;
	vfprintf(stderr, format, args);
	fputc('\n', stderr);
}

/* The problems the files had, as "file:line: message", from the parser
 * itself (other errors discovery logs are no file's). */
static int print_problems(struct ion_ctx *ctx, int errors)
{
	for (int i = 0; i < errors; i++) {
		const char *file, *message;
		unsigned int line;
		int r = ion_ctx_get_config_error(ctx, (unsigned int)i, &file, &line, &message);

		if (r == -ENOMEM) {
			fprintf(stderr, "(a problem not kept: out of memory)\n");
			continue;
		}
		if (r < 0)
			return r;
		if (line)
			fprintf(stderr, "%s:%u: %s\n", file, line, message);
		else
			fprintf(stderr, "%s: %s\n", file, message);
	}
	return 0;
}

int ionctl_check(int argc, char **argv)
{
	static const struct option options[] = {
		{ "help", no_argument, NULL, 'h' },
		{ 0 },
	};
	struct ion_ctx *ctx;
	char *path = NULL;
	size_t len = 1;
	int c, files, errors;

	while ((c = getopt_long(argc, argv, "h", options, NULL)) != -1) {
		switch (c) {
		case 'h':
			printf("usage: ionctl check [PATH...]\n\n"
			       "Reads heaps.d files (the PATHs, files or folders; else the\n"
			       "installed folders or --config-dir) as discovery would, every\n"
			       "section whichever board it is for, and prints each problem as\n"
			       "file:line: message.  Exit status 1 when there is any, or when\n"
			       "PATHs were given and not one .conf file was read from them.\n");
			return 0;
		default:
			return ionctl_usage_error("check", "see ionctl check --help");
		}
	}
	for (int i = optind; i < argc; i++)
		len += strlen(argv[i]) + 1;
	if (optind < argc && !(path = calloc(1, len)))
		return ionctl_fail("check", -ENOMEM, "paths");
	for (int i = optind; i < argc; i++)
		sprintf(path + strlen(path), "%s%s", i > optind ? ":" : "", argv[i]);
	ctx = ionctl_ctx_new("check");
	if (!ctx) {
		free(path);
		return IONCTL_NO;
	}
	ion_ctx_set_log_fn(ctx, print_warning);
	ion_ctx_set_log_priority(ctx, LOG_WARNING);
	if (path && ion_ctx_set_heaps_path(ctx, path) < 0) {
		free(path);
		ion_ctx_unref(ctx);
		return ionctl_fail("check", -ENOMEM, "paths");
	}
	free(path);
	files = ion_ctx_get_config_file_count(ctx);
	errors = ion_ctx_get_config_error_count(ctx);
	if (files >= 0 && errors > 0)
		errors = print_problems(ctx, errors) < 0 ? -EIO : errors;
	ion_ctx_unref(ctx);
	if (files < 0 || errors < 0)
		return ionctl_fail("check", files < 0 ? files : errors, "cannot read the files");
	printf("%d file%s read, %d problem%s\n", files, files == 1 ? "" : "s", errors,
	       errors == 1 ? "" : "s");
	/* Discovery takes a path that does not exist for a layer this system
	 * lacks; named here, it is more likely a typo, and "0 problems"
	 * would pass it. */
	if (optind < argc && files == 0) {
		fprintf(stderr, "ionctl check: no file read: no PATH is a file, or a folder "
				"holding .conf files\n");
		return IONCTL_NO;
	}
	return errors ? IONCTL_NO : 0;
}
