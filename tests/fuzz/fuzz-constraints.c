// SPDX-License-Identifier: MIT
/*
 * libFuzzer target for constraints across processes: any bytes (as a C
 * string: a NUL-terminated copy) to ion_alloc_config_add_constraints().
 * Malformed input must be -EINVAL with the config unchanged; a text it
 * takes must serialize to a text that parses again to the very same
 * serialization, AND-s with itself as the two texts joined, and solves
 * (every rejection worded, none with a struct ion_device: the constraints
 * are all remote).  Any other outcome aborts.  Built with -DFUZZ_REPLAY
 * it is a plain program that runs the files (or folders of files) it is
 * given, so every build replays the seed corpus as a test.
 */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <ion/libion.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* One context for every input: the real root, no board file, no log. */
static struct ion_ctx *the_ctx(void)
{
	static struct ion_ctx *ctx;

	if (!ctx) {
		if (ion_ctx_new(NULL, &ctx) < 0 || ion_ctx_set_heaps_path(ctx, "") < 0)
			abort();
		ion_ctx_set_log_priority(ctx, 0);
		if (ion_ctx_get_heap_count(ctx) < 1)
			abort();
	}
	return ctx;
}

/* The config's text, or NULL where it would pass the 64 KiB or 64
 * constraints a text may carry (-E2BIG, and nothing returned). */
static char *serialized(const struct ion_alloc_config *config)
{
	char *text = NULL;
	int r = ion_alloc_config_serialize(config, &text);

	if (r == -E2BIG && !text)
		return NULL;
	if (r != 0 || !text || strlen(text) > 64 * 1024)
		abort();
	return text;
}

static size_t count_constraints(const char *text)
{
	size_t n = 0;

	text += strlen("ionc1 ");
	if (*text)
		for (n = 1; *text; text++)
			n += *text == ';';
	return n;
}

/* Every rejection of a solution of config: worded, and never by a device
 * of this process. */
static void solve(const struct ion_alloc_config *config)
{
	struct ion_solution *sol;
	int n;

	if (ion_ctx_solve(the_ctx(), config, &sol) != 0)
		abort();
	n = ion_solution_get_rejection_count(sol);
	if (n < 0)
		abort();
	for (int i = 0; i < n; i++) {
		const struct ion_heap *heap;
		const struct ion_device *dev = (const struct ion_device *)1;
		const char *reason;

		if (ion_solution_get_rejection(sol, (unsigned int)i, &heap, &dev, &reason) != 0 ||
		    !heap || dev || !reason || strlen(reason) == SIZE_MAX)
			abort();
	}
	ion_solution_unref(sol);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct ion_alloc_config *config, *again;
	char *text = malloc(size + 1), *first, *second, *both, *empty;
	const char *body;
	int r;

	if (!text)
		return 0;
	memcpy(text, data, size);
	text[size] = '\0';
	if (ion_alloc_config_new(&config) != 0)
		abort();
	r = ion_alloc_config_add_constraints(config, text);
	if (r != 0) {
		/* Refused: -EINVAL, and nothing taken. */
		empty = serialized(config);
		if (r != -EINVAL || !empty || strcmp(empty, "ionc1 ") != 0)
			abort();
		free(empty);
		ion_alloc_config_free(config);
		free(text);
		return 0;
	}

	/* Taken: the serialization parses back to itself (where it is no
	 * longer than the limit: "1" comes back as "yes"). */
	first = serialized(config);
	if (!first) {
		if (strlen(text) < 64 * 1024 - 2 * 64)
			abort();
		goto solve;
	}
	if (ion_alloc_config_new(&again) != 0 || ion_alloc_config_add_constraints(again, first) != 0)
		abort();
	second = serialized(again);
	if (!second || strcmp(first, second) != 0)
		abort();

	/* AND-ed with itself: the constraints twice, in order, or refused
	 * whole past 64 constraints. */
	r = ion_alloc_config_add_constraints(again, first);
	if (2 * count_constraints(first) > 64) {
		both = serialized(again);
		if (r != -E2BIG || !both || strcmp(both, first) != 0)
			abort();
	} else {
		if (r != 0)
			abort();
		both = serialized(again);
		body = first + strlen("ionc1 ");
		if (!both ? 2 * strlen(first) <= 64 * 1024
			  : !*body ? strcmp(both, first) != 0
				   : strncmp(both, first, strlen(first)) != 0 ||
					     both[strlen(first)] != ';' ||
					     strcmp(both + strlen(first) + 1, body) != 0)
			abort();
	}
	free(both);
	ion_alloc_config_free(again);
	free(second);
	free(first);

solve:
	if (ion_alloc_config_set_size(config, 4096) != 0)
		abort();
	solve(config);

	ion_alloc_config_free(config);
	free(text);
	return 0;
}

#ifdef FUZZ_REPLAY
#include <dirent.h>

static int replay_file(const char *path)
{
	static uint8_t buf[256 * 1024];
	FILE *f = fopen(path, "rbe");
	size_t n;

	if (!f) {
		perror(path);
		return 1;
	}
	n = fread(buf, 1, sizeof(buf), f);
	fclose(f);
	LLVMFuzzerTestOneInput(buf, n);
	return 0;
}

int main(int argc, char **argv)
{
	int failed = 0, count = 0;

	for (int i = 1; i < argc; i++) {
		DIR *dir = opendir(argv[i]);
		struct dirent *de;

		if (!dir) {
			failed |= replay_file(argv[i]);
			count++;
			continue;
		}
		while ((de = readdir(dir))) {
			char path[4096];

			if (de->d_name[0] == '.')
				continue;
			snprintf(path, sizeof(path), "%s/%s", argv[i], de->d_name);
			failed |= replay_file(path);
			count++;
		}
		closedir(dir);
	}
	ion_ctx_unref(the_ctx());
	printf("%d inputs replayed\n", count);
	return failed || count == 0;
}
#endif
