// SPDX-License-Identifier: MIT
/*
 * The shipped board files on fake trees of their boards: for each board,
 * its tree (tests/boards/<board>.tree) is built into a temporary sysroot
 * and solved against the source heaps.d folder, through the public API
 * only.  Every expected answer below follows from the board's facts (the
 * comment by each says which); none was read off the code's output.
 *
 * The solver's documented order, which the candidate lists rely on: a
 * board's Preference first (none of these boards sets one), then, for a
 * device that is not DMA-coherent, uncached heaps (none of these trees
 * has one), then scattered memory before contiguous, then discovery's
 * order.
 *
 * Line numbers are looked up in the board files by section and key, so
 * that "the rejection names 50-rpi4.conf:65" stays true as files change.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <syslog.h>
#include <unistd.h>

#include <cmocka.h>

#include "faketree.h"
#include "testlib.h"

#ifndef TEST_BOARDS_DIR
#error "TEST_BOARDS_DIR: the folder of the .tree files"
#endif
#ifndef TEST_HEAPS_D_DIR
#error "TEST_HEAPS_D_DIR: the source heaps.d folder"
#endif

/* The driver files, read on every board before its own. */
#define GPU_MMU "20-gpu-mmu.conf"
#define MEDIA_MMU "20-media-mmu.conf"

/* ---- helpers ---- */

struct board {
	char root[64];
	const char *conf;	/* "50-rpi4.conf" */
	struct ion_ctx *ctx;
	struct fd_table fds;
	/* What a check holds while it may fail, dropped by the next check of
	 * its kind or by the teardown, so that a failing test leaks no fd. */
	struct ion_solution *sol;
	struct ion_device *dev;
	struct ion_ctx *bare;
};

/* LOG_ERR messages of the contexts: a board file or tree that the library
 * complains about fails the test. */
static char errors[4096];

__attribute__((format(printf, 6, 0)))
static void log_errors(struct ion_ctx *ctx, int priority, const char *file, int line,
		       const char *fn, const char *format, va_list args)
{
	size_t used = strlen(errors);

	(void)ctx;
	(void)file;
	(void)line;
	(void)fn;
	if (priority > LOG_ERR || used + 2 >= sizeof(errors))
		return;
	vsnprintf(errors + used, sizeof(errors) - used - 1, format, args);
	strcat(errors, "\n");
}

static struct ion_ctx *ctx_on(const char *root, const char *heaps_path)
{
	struct ion_ctx *ctx;

	assert_int_equal(ion_ctx_new(root, &ctx), 0);
	ion_ctx_set_log_fn(ctx, log_errors);
	assert_int_equal(ion_ctx_set_heaps_path(ctx, heaps_path), 0);
	return ctx;
}

/*
 * The line of key in section "[kind name]" of a shipped board file (the
 * section's own line when key is NULL), read here by a plain scan so that
 * the test does not take the library's parser's word for it.
 */
static unsigned int conf_line(const char *conf, const char *section, const char *key)
{
	char path[512], header[256], *line = NULL;
	unsigned int n = 0, found = 0;
	bool inside = false;
	size_t size = 0;
	FILE *f;

	snprintf(path, sizeof(path), "%s/%s", TEST_HEAPS_D_DIR, conf);
	snprintf(header, sizeof(header), "[%s]", section);
	f = fopen(path, "re");
	assert_non_null(f);
	while (!found && getline(&line, &size, f) >= 0) {
		char *s = line;
		size_t klen;

		n++;
		s[strcspn(s, "\r\n")] = '\0';
		while (*s == ' ' || *s == '\t')
			s++;
		if (*s == '[') {
			inside = strcmp(s, header) == 0;
			if (inside && !key)
				found = n;
			continue;
		}
		if (!inside || !key)
			continue;
		klen = strlen(key);
		if (strncmp(s, key, klen) == 0 && strchr(" \t=+", s[klen]))
			found = n;
	}
	free(line);
	fclose(f);
	if (!found)
		fail_msg("%s has no %s in %s", conf, key ? key : "section", header);
	return found;
}

/* "/50-rpi4.conf:65": how a source or reason ends or quotes that line. */
static const char *where(const char *conf, const char *section, const char *key)
{
	static char buf[8][128];
	static unsigned int next;
	char *s = buf[next++ % 8];

	snprintf(s, sizeof(buf[0]), "/%s:%u", conf, conf_line(conf, section, key));
	return s;
}

static bool ends_with(const char *s, const char *suffix)
{
	size_t n = strlen(s), k = strlen(suffix);

	return n >= k && strcmp(s + n - k, suffix) == 0;
}

/* Builds the tree and a context that reads the shipped board files. */
static void board_open(struct board *b, const char *tree, const char *conf,
		       const char *board_name)
{
	char file[512], err[512];
	const char *name, *source;

	errors[0] = '\0';
	strcpy(b->root, "/tmp/libion-board-XXXXXX");
	assert_non_null(mkdtemp(b->root));
	snprintf(file, sizeof(file), "%s/%s.tree", TEST_BOARDS_DIR, tree);
	if (faketree_build(file, b->root, err, sizeof(err)) < 0)
		fail_msg("%s", err);
	b->conf = conf;
	b->ctx = ctx_on(b->root, TEST_HEAPS_D_DIR);
	/* Every shipped file is read, none has a problem, and only this
	 * board's [Board] section matches (by compatible or DMI). */
	assert_true(ion_ctx_get_config_file_count(b->ctx) >= 6);
	assert_int_equal(ion_ctx_get_config_error_count(b->ctx), 0);
	assert_int_equal(ion_ctx_get_board_count(b->ctx), 1);
	assert_int_equal(ion_ctx_get_board(b->ctx, 0, &name, &source), 0);
	assert_string_equal(name, board_name);
	snprintf(file, sizeof(file), "Board %s", board_name);
	assert_true(ends_with(source, where(conf, file, NULL)));
}

/* Each board test's state: the fd table before it, and what to clean up
 * however the test ended. */
static int board_setup(void **state)
{
	struct board *b = calloc(1, sizeof(*b));

	assert_non_null(b);
	fd_table_read(&b->fds);
	*state = b;
	return 0;
}

static int board_teardown(void **state)
{
	struct board *b = *state;

	ion_solution_unref(b->sol);
	ion_device_unref(b->dev);
	ion_ctx_unref(b->bare);
	ion_ctx_unref(b->ctx);
	if (b->root[0])
		assert_int_equal(test_remove_tree(b->root), 0);
	if (errors[0])
		fail_msg("the library logged errors:\n%s", errors);
	fd_table_assert_same(&b->fds);
	free(b);
	return 0;
}

static struct ion_device *device(struct ion_ctx *ctx, const char *spec)
{
	struct ion_device *dev = NULL;
	int r = ion_ctx_get_device(ctx, spec, &dev);

	if (r < 0)
		fail_msg("no device %s: %s", spec, strerror(-r));
	return dev;
}

/* A device held by the board until its next check. */
static struct ion_device *held_device(struct board *b, struct ion_ctx *ctx, const char *spec)
{
	b->dev = ion_device_unref(b->dev);
	b->dev = device(ctx, spec);
	return b->dev;
}

/*
 * Solves a 1 MiB request for the devices (a NULL-terminated list of
 * specs), from the heap named only when heap is not NULL.
 */
static struct ion_solution *solve(struct board *b, const char *const *specs, const char *heap)
{
	struct ion_ctx *ctx = b->ctx;
	struct ion_alloc_config *config;
	struct ion_solution *sol;

	assert_int_equal(ion_alloc_config_new(&config), 0);
	assert_int_equal(ion_alloc_config_set_size(config, 1 << 20), 0);
	if (heap)
		assert_int_equal(ion_alloc_config_set_heap(config, heap), 0);
	for (const char *const *s = specs; *s; s++) {
		struct ion_device *dev = device(ctx, *s);

		assert_int_equal(ion_alloc_config_add_device(config, dev), 0);
		ion_device_unref(dev);
	}
	b->sol = ion_solution_unref(b->sol);
	assert_int_equal(ion_ctx_solve(ctx, config, &sol), 0);
	ion_alloc_config_free(config);
	b->sol = sol;
	return sol;
}

/* The candidates, best first, blank-separated ("" for none). */
static void candidates_of(const struct ion_solution *sol, char *buf, size_t size)
{
	buf[0] = '\0';
	for (int i = 0; i < ion_solution_get_heap_count(sol); i++) {
		size_t used = strlen(buf);

		snprintf(buf + used, size - used, "%s%s", used ? " " : "",
			 ion_heap_get_name(ion_solution_get_heap(sol, (unsigned int)i)));
	}
}

/* The devices solved together give exactly these candidates, best first;
 * the chosen heap is the first. */
#define solves_to(b, want, ...) \
	solves_to_((b), (const char *const[]){ __VA_ARGS__, NULL }, (want))
static void solves_to_(struct board *b, const char *const *specs, const char *want)
{
	struct ion_solution *sol = solve(b, specs, NULL);
	char got[256];

	candidates_of(sol, got, sizeof(got));
	if (strcmp(got, want) != 0)
		fail_msg("%s: %s%s%s: candidates \"%s\", expected \"%s\"", b->conf, specs[0],
			 specs[1] ? " + " : "", specs[1] ? specs[1] : "", got, want);
}

/* The reason why device excluded heap (NULL device: the request did). */
static const char *rejection(const struct ion_solution *sol, const char *heap,
			     const char *dev_name)
{
	for (int i = 0; i < ion_solution_get_rejection_count(sol); i++) {
		const struct ion_heap *h;
		const struct ion_device *d;
		const char *reason;

		assert_int_equal(ion_solution_get_rejection(sol, (unsigned int)i, &h, &d, &reason), 0);
		if (strcmp(ion_heap_get_name(h), heap) != 0)
			continue;
		if (dev_name ? d && strcmp(ion_device_get_name(d), dev_name) == 0 : !d)
			return reason;
	}
	return NULL;
}

/* device excluded heap for the reason at that board-file line. */
static void assert_rejected(const struct ion_solution *sol, const char *heap,
			    const char *dev_name, const char *line)
{
	const char *reason = rejection(sol, heap, dev_name);
	char quoted[160];

	if (!reason)
		fail_msg("%s was not rejected by %s", heap, dev_name ? dev_name : "the request");
	snprintf(quoted, sizeof(quoted), "%s)", line);
	if (!strstr(reason, quoted))
		fail_msg("%s rejected by %s: \"%s\" does not cite %s", heap, dev_name, reason, line);
}

/* The constraint key of the device: its value, and its source's end. */
static void assert_constraint(struct board *b, const char *spec, const char *key,
			      const char *value, const char *source_end)
{
	struct ion_device *dev = held_device(b, b->ctx, spec);
	int n = ion_device_get_constraint_count(dev);

	for (int i = 0; i < n; i++) {
		const char *k, *v, *s;

		assert_int_equal(ion_device_get_constraint(dev, (unsigned int)i, &k, &v, &s), 0);
		if (strcmp(k, key) != 0)
			continue;
		if (strcmp(v, value) != 0 || !ends_with(s, source_end))
			fail_msg("%s: %s = %s [%s], expected %s [...%s]", spec, k, v, s, value,
				 source_end);
		return;
	}
	fail_msg("%s has no %s", spec, key);
}

/*
 * Where derived facts and the board disagree: without any board file the
 * device's Contiguous is derived (value derived_value, its source starting
 * with "derived: " and ending in derived_end), with the board's files it
 * is the board's (board_value at board_line).
 */
static void assert_board_wins(struct board *b, const char *spec, const char *derived_value,
			      const char *derived_end, const char *board_value,
			      const char *board_line)
{
	struct ion_device *dev;
	bool seen = false;

	b->bare = ion_ctx_unref(b->bare);
	b->bare = ctx_on(b->root, "");
	dev = held_device(b, b->bare, spec);

	for (int i = 0; i < ion_device_get_constraint_count(dev); i++) {
		const char *k, *v, *s;

		assert_int_equal(ion_device_get_constraint(dev, (unsigned int)i, &k, &v, &s), 0);
		if (strcmp(k, "Contiguous") != 0)
			continue;
		seen = true;
		if (strcmp(v, derived_value) != 0 || strncmp(s, "derived: ", 9) != 0 ||
		    !strstr(s, derived_end))
			fail_msg("%s without board files: Contiguous = %s [%s], expected %s [derived ...%s]",
				 spec, v, s, derived_value, derived_end);
	}
	if (!seen)
		fail_msg("%s without board files: no derived Contiguous", spec);
	b->dev = ion_device_unref(b->dev);
	b->bare = ion_ctx_unref(b->bare);
	assert_constraint(b, spec, "Contiguous", board_value, board_line);
}

static const struct ion_heap *heap_named(struct ion_ctx *ctx, const char *name)
{
	const struct ion_heap *h = NULL;

	if (ion_ctx_find_heap(ctx, name, &h) < 0)
		fail_msg("no heap %s", name);
	return h;
}

/* The heaps discovery listed, in order, blank-separated. */
static void assert_heaps(struct ion_ctx *ctx, const char *want)
{
	char got[256] = "";
	int n = ion_ctx_get_heap_count(ctx);

	for (int i = 0; i < n; i++) {
		const struct ion_heap *h;
		size_t used = strlen(got);

		assert_int_equal(ion_ctx_get_heap(ctx, (unsigned int)i, &h), 0);
		snprintf(got + used, sizeof(got) - used, "%s%s", used ? " " : "", ion_heap_get_name(h));
	}
	assert_string_equal(got, want);
}

/* A request no heap can serve, because of one device: every heap but
 * the one the request names is out by the request, and that one by the
 * device for the reason at line. */
static void expect_impossible(struct board *b, const char *spec, const char *dev_name,
			      const char *heap, const char *line)
{
	struct ion_solution *sol = solve(b, (const char *const[]){ spec, NULL }, heap);
	int n = ion_ctx_get_heap_count(b->ctx);

	assert_int_equal(ion_solution_get_heap_count(sol), 0);
	assert_null(ion_solution_get_heap(sol, 0));
	assert_rejected(sol, heap, dev_name, line);
	for (int i = 0; i < n; i++) {
		const struct ion_heap *h;
		const char *name, *reason;

		assert_int_equal(ion_ctx_get_heap(b->ctx, (unsigned int)i, &h), 0);
		name = ion_heap_get_name(h);
		if (strcmp(name, heap) == 0)
			continue;
		reason = rejection(sol, name, NULL);
		if (!reason || !strstr(reason, "not the heap asked for"))
			fail_msg("%s: %s is not out by the request", spec, name);
	}
}

/* ---- the fake trees themselves ---- */

static void write_text(const char *path, const char *text)
{
	FILE *f = fopen(path, "we");

	assert_non_null(f);
	fputs(text, f);
	fclose(f);
}

/* A tree file's mistakes stop the build, saying where. */
static void test_faketree_errors(void **state)
{
	static const struct {
		const char *text;
		const char *message;
	} cases[] = {
		{ "dir /a\nfile /a/b x\\q\n", ":2: unknown escape \\q" },
		{ "file /a x\nfile /a y\n", ":2: /a: File exists" },
		{ "# ok\nlink /a/l /a/missing\n", ":2: link target /a/missing is not in the tree" },
		{ "dir /a/../b\n", ":1: bad path" },
		{ "dir relative\n", ":1: bad path" },
		{ "fil /a x\n", ":1: unknown entry 'fil'" },
		{ "file /a \\x4\n", ":1: \\x needs two hex digits" },
	};
	char top[] = "/tmp/libion-faketree-XXXXXX", file[128], root[128], err[256];
	struct fd_table fds;

	(void)state;
	fd_table_read(&fds);
	assert_non_null(mkdtemp(top));
	snprintf(file, sizeof(file), "%s/t.tree", top);
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		snprintf(root, sizeof(root), "%s/root%zu", top, i);
		assert_int_equal(mkdir(root, 0755), 0);
		write_text(file, cases[i].text);
		assert_true(faketree_build(file, root, err, sizeof(err)) < 0);
		if (!strstr(err, cases[i].message))
			fail_msg("case %zu: \"%s\" lacks \"%s\"", i, err, cases[i].message);
	}
	assert_int_equal(test_remove_tree(top), 0);
	fd_table_assert_same(&fds);
}

/* What each entry makes: bytes as escaped, links relative like sysfs's,
 * the null entry the host's /dev/null. */
static void test_faketree_entries(void **state)
{
	char top[] = "/tmp/libion-faketree-XXXXXX", file[128], path[256], buf[64];
	struct stat st;
	ssize_t n;
	FILE *f;

	(void)state;
	assert_non_null(mkdtemp(top));
	snprintf(file, sizeof(file), "%s/t.tree", top);
	write_text(file, "# c\n\n  # indented comment\n"
			 "file /sys/x/compatible a,b\\0c\\0\n"
			 "file /sys/x/dev 1:3\\n\n"
			 "file /sys/x/bin \\x00\\xff\\t\\\\\n"
			 "file /sys/x/empty\n"
			 "link /sys/x/driver /sys/bus/platform/drivers/d\n"
			 "dir /sys/bus/platform/drivers/d\n"
			 "dir /sys/bus/platform/drivers/d\n"
			 "link /sys/x/rel ../y\n"
			 "null /dev/dma_heap/system\n");
	snprintf(path, sizeof(path), "%s/root", top);
	assert_int_equal(mkdir(path, 0755), 0);
	assert_int_equal(faketree_build(file, path, buf, sizeof(buf)), 0);

	snprintf(path, sizeof(path), "%s/root/sys/x/compatible", top);
	f = fopen(path, "re");
	assert_non_null(f);
	assert_int_equal(fread(buf, 1, sizeof(buf), f), 6);
	fclose(f);
	assert_memory_equal(buf, "a,b\0c\0", 6);
	snprintf(path, sizeof(path), "%s/root/sys/x/bin", top);
	f = fopen(path, "re");
	assert_non_null(f);
	assert_int_equal(fread(buf, 1, sizeof(buf), f), 4);
	fclose(f);
	assert_memory_equal(buf, "\0\xff\t\\", 4);
	snprintf(path, sizeof(path), "%s/root/sys/x/empty", top);
	assert_int_equal(stat(path, &st), 0);
	assert_int_equal(st.st_size, 0);
	snprintf(path, sizeof(path), "%s/root/sys/x/driver", top);
	n = readlink(path, buf, sizeof(buf) - 1);
	assert_true(n > 0);
	buf[n] = '\0';
	assert_string_equal(buf, "../bus/platform/drivers/d");
	snprintf(path, sizeof(path), "%s/root/sys/x/rel", top);
	n = readlink(path, buf, sizeof(buf) - 1);
	assert_true(n > 0);
	buf[n] = '\0';
	assert_string_equal(buf, "../y");
	snprintf(path, sizeof(path), "%s/root/dev/dma_heap/system", top);
	assert_int_equal(stat(path, &st), 0);
	assert_true(S_ISCHR(st.st_mode));
	assert_int_equal(test_remove_tree(top), 0);
}

/*
 * The trees let every dma-heap node vouch for itself through
 * /sys/dev/char/1:3, which holds only if the host's /dev/null is 1:3
 * (devices.txt's number, the same on every Linux).
 */
static void test_dev_null_is_1_3(void **state)
{
	struct stat st;

	(void)state;
	assert_int_equal(stat("/dev/null", &st), 0);
	assert_true(S_ISCHR(st.st_mode));
	assert_int_equal(major(st.st_rdev), 1);
	assert_int_equal(minor(st.st_rdev), 3);
}

/* ---- Raspberry Pi 4 ---- */

/*
 * Pi OS on an 8 GB Pi 4: linux,cma (contiguous, the first GiB) and system
 * (scattered, anywhere in 8 GiB); vc4 takes only CMA; V3D anything;
 * Unicam, the VideoCore's ISP and codec, and the HEVC decoder contiguous
 * memory, all but HEVC within the first GiB.
 */
static void test_rpi4(void **state)
{
	const char *c = "50-rpi4.conf";
	struct board *b = *state;
	struct ion_solution *sol;
	const struct ion_heap *cma;

	board_open(b, "rpi4", c, "rpi4");
	/* udev's vidbuf_cached link is the CMA heap again, not a third heap. */
	assert_heaps(b->ctx, "linux,cma system memfd");
	cma = heap_named(b->ctx, "linux,cma");
	assert_ptr_equal(heap_named(b->ctx, "vidbuf_cached"), cma);
	assert_ptr_equal(heap_named(b->ctx, "cma"), cma);
	/* CMA lies in the first GiB (alloc-ranges); the system heap may hand
	 * out any of 8 GiB, beyond 2^32. */
	assert_int_equal(ion_heap_get_address_bits(cma), 30);
	assert_true(ion_heap_get_address_bits(heap_named(b->ctx, "system")) > 32);

	/* The display (vc4, card1): only CMA, as the board says. */
	solves_to(b, "linux,cma", "card1");
	/* The GPU (V3D, card0): its MMU takes anything; scattered first. */
	solves_to(b, "system linux,cma", "/dev/dri/card0");
	/* Unicam: contiguous within the first GiB. */
	solves_to(b, "linux,cma", "video0");
	solves_to(b, "linux,cma", "/sys/class/video4linux/video1");
	/* The VideoCore's codec and ISP, the HEVC decoder: contiguous. */
	solves_to(b, "linux,cma", "video10");
	solves_to(b, "linux,cma", "video13");
	solves_to(b, "linux,cma", "video19");
	/* Typical sets: each includes a device that needs CMA. */
	solves_to(b, "linux,cma", "card1", "video0");	/* display + camera */
	solves_to(b, "linux,cma", "video0", "video13");	/* camera + ISP */
	solves_to(b, "linux,cma", "video13", "video10");	/* ISP + codec */
	solves_to(b, "linux,cma", "card1", "card0");	/* display + GPU */
	solves_to(b, "linux,cma", "video19", "card1");	/* decoder + display */

	/* Why system is out, each time with the board file's line. */
	sol = solve(b, (const char *const[]){ "card1", "video0", "card0", NULL }, NULL);
	assert_rejected(sol, "system", "card1", where(c, "Device vc4", "Heaps"));
	assert_rejected(sol, "system", "video0", where(c, "Device unicam", "Contiguous"));
	assert_null(rejection(sol, "system", "card0"));
	assert_null(rejection(sol, "linux,cma", "card1"));
	/* The VideoCore's children have no device-tree node: matched by driver. */
	assert_constraint(b, "video10", "AddressBits", "30",
			  where(c, "Device bcm2835-codec", "AddressBits"));

	/* Impossible: a display buffer from the system heap. */
	expect_impossible(b, "card1", "card1", "system", where(c, "Device vc4", "Heaps"));

	/* V3D has no IOMMU, so derived facts call it contiguous; the driver
	 * file knows its MMU. */
	assert_board_wins(b, "card0", "yes", "/sys/devices/platform/v3dbus/fec00000.v3d/of_node",
			  "no", where(GPU_MMU, "Device v3d", "Contiguous"));
}

/* ---- Raspberry Pi 5 ---- */

/*
 * Pi OS on an 8 GB Pi 5: every media master takes scattered memory (the
 * display, HEVC, PiSP and RP1's camera front end behind IOMMUs, V3D with
 * its own MMU), so the system heap comes first everywhere and the small
 * CMA area is the fallback.
 */
static void test_rpi5(void **state)
{
	const char *c = "50-rpi5.conf";
	struct board *b = *state;
	struct ion_solution *sol;

	board_open(b, "rpi5", c, "rpi5");
	/* vidbuf_cached is the system heap here. */
	assert_heaps(b->ctx, "linux,cma system memfd");
	assert_ptr_equal(heap_named(b->ctx, "vidbuf_cached"), heap_named(b->ctx, "system"));
	assert_int_equal(ion_heap_get_address_bits(heap_named(b->ctx, "linux,cma")), 30);

	solves_to(b, "system linux,cma", "card1");	/* vc4, behind iommu4 */
	solves_to(b, "system linux,cma", "card0");	/* V3D */
	solves_to(b, "system linux,cma", "video0");	/* RP1 CFE, iommu5 */
	solves_to(b, "system linux,cma", "video19");	/* HEVC, iommu2 */
	solves_to(b, "system linux,cma", "video20");	/* PiSP BE, iommu2 */
	solves_to(b, "system linux,cma", "card1", "video0");	/* display + camera */
	solves_to(b, "system linux,cma", "video0", "video20");	/* camera + ISP */
	solves_to(b, "system linux,cma", "video19", "card1");	/* codec + display */
	solves_to(b, "system linux,cma", "card1", "card0");	/* display + GPU */

	sol = solve(b, (const char *const[]){ "card1", "card0", "video0", NULL }, NULL);
	assert_int_equal(ion_solution_get_rejection_count(sol), 3); /* memfd, by each */

	/* The camera front end has no group of its own; RP1's PCI function,
	 * its parent, has iommu5's: derived facts find it, the board agrees. */
	assert_board_wins(b, "video0", "no",
			  "/1000120000.pcie/pci0002:00/0002:00:00.0/0002:01:00.0/iommu_group",
			  "no", where(c, "Device rp1-cfe", "Contiguous"));
	/* V3D: derived contiguous (no IOMMU), the driver file knows better. */
	assert_board_wins(b, "card0", "yes", "/sys/devices/platform/axi/1002000000.v3d/of_node",
			  "no", where(GPU_MMU, "Device v3d", "Contiguous"));
}

/* ---- Radxa ROCK 5B ---- */

/*
 * Mainline on a 16 GB ROCK 5B: reserved (CMA, below 4 GiB) and system
 * (scattered, up to 16 GiB).  VOP2, the Mali GPU and VPU121 take
 * scattered memory; RGA2 scattered memory below 4 GiB; the AV1 decoder,
 * without an IOMMU here and without a board section, what the kernel
 * shows: contiguous.
 */
static void test_rock5b(void **state)
{
	const char *c = "50-rock5b.conf";
	struct board *b = *state;
	struct ion_solution *sol;

	board_open(b, "rock5b", c, "rock5b");
	assert_heaps(b->ctx, "reserved system memfd");
	assert_int_equal(ion_heap_get_address_bits(heap_named(b->ctx, "reserved")), 32);
	assert_true(ion_heap_get_address_bits(heap_named(b->ctx, "system")) > 32);

	solves_to(b, "system reserved", "card0");		/* rockchip-drm, vop_mmu */
	solves_to(b, "system reserved", "card1");		/* Mali, own MMU */
	solves_to(b, "system reserved", "video0");	/* VPU121, vpu121_mmu */
	solves_to(b, "reserved", "video1");		/* RGA2: below 4 GiB */
	solves_to(b, "reserved", "video2");		/* AV1: contiguous */
	solves_to(b, "reserved", "card0", "video1");	/* display + 2D engine */
	solves_to(b, "system reserved", "video0", "card0");	/* decoder + display */
	solves_to(b, "system reserved", "card0", "card1");	/* display + GPU */
	solves_to(b, "reserved", "video2", "card0");	/* AV1 + display */
	solves_to(b, "reserved", "video1", "video0");	/* 2D + decoder */

	sol = solve(b, (const char *const[]){ "card0", "video1", "video2", NULL }, NULL);
	assert_rejected(sol, "system", "video1", where(MEDIA_MMU, "Device rockchip-rga", "AddressBits"));
	assert_null(rejection(sol, "system", "card0"));
	/* The AV1 decoder's verdict comes from sysfs: no IOMMU, of_node. */
	assert_non_null(rejection(sol, "system", "video2"));
	assert_non_null(strstr(rejection(sol, "system", "video2"),
			       "derived: /sys/devices/platform/fdc70000.video-codec/of_node"));

	/* Impossible: an RGA2 buffer from the system heap (librga #49). */
	expect_impossible(b, "video1", "video1", "system",
			  where(MEDIA_MMU, "Device rockchip-rga", "AddressBits"));

	/* The DRM device has no IOMMU group of its own: derivation follows
	 * its node's ports to VOP2, behind vop_mmu, and names it. */
	assert_constraint(b, "card0", "Contiguous", "no",
			  "/sys/devices/platform/display-subsystem/of_node names its DMA masters in ports: fdd90000.vop (IOMMU): all behind an IOMMU");
	/* RGA2 has none either: derived contiguous; the driver file knows
	 * its own MMU. */
	assert_board_wins(b, "/dev/video1", "yes", "/sys/devices/platform/fdb80000.rga/of_node",
			  "no", where(MEDIA_MMU, "Device rockchip-rga", "Contiguous"));
}

/* ---- NXP i.MX8M Plus EVK ---- */

/*
 * Mainline on the 6 GB EVK: reserved (CMA, below 4 GiB) and system
 * (scattered, up to 7 GiB).  No IOMMU anywhere: LCDIF, ISI, ISP, DW100
 * and the Hantro decoders need contiguous memory (DW100 and Hantro below
 * 4 GiB); only the Vivante cores, with their own MMUs, take scattered
 * memory.
 */
static void test_imx8mp_evk(void **state)
{
	const char *c = "50-imx8mp-evk.conf";
	struct board *b = *state;
	struct ion_solution *sol;

	board_open(b, "imx8mp-evk", c, "imx8mp-evk");
	assert_heaps(b->ctx, "reserved system memfd");
	assert_int_equal(ion_heap_get_address_bits(heap_named(b->ctx, "reserved")), 32);
	assert_true(ion_heap_get_address_bits(heap_named(b->ctx, "system")) > 32);

	solves_to(b, "reserved", "card0");		/* LCDIF3 (HDMI) */
	solves_to(b, "system reserved", "card1");		/* etnaviv */
	solves_to(b, "reserved", "video0");		/* ISI */
	solves_to(b, "reserved", "video1");		/* ISP */
	solves_to(b, "reserved", "video2");		/* DW100 */
	solves_to(b, "reserved", "video3");		/* Hantro G1 */
	solves_to(b, "reserved", "video4");		/* Hantro G2 */
	solves_to(b, "reserved", "card0", "video0");	/* display + camera */
	solves_to(b, "reserved", "video0", "video3");	/* camera + codec */
	solves_to(b, "reserved", "card0", "card1");	/* display + GPU/2D */
	solves_to(b, "reserved", "video1", "video2");	/* ISP + dewarper */

	sol = solve(b, (const char *const[]){ "card0", "card1", "video2", NULL }, NULL);
	assert_rejected(sol, "system", "card0", where(c, "Device lcdif", "Contiguous"));
	assert_rejected(sol, "system", "video2", where(c, "Device dw100", "Contiguous"));
	assert_null(rejection(sol, "system", "card1"));
	assert_constraint(b, "video3", "AddressBits", "32",
			  where(c, "Device hantro", "AddressBits"));
	assert_constraint(b, "video4", "AddressBits", "32",
			  where(c, "Device hantro", "AddressBits"));

	/* Impossible: a scanout buffer from the system heap. */
	expect_impossible(b, "card0", "card0", "system", where(c, "Device lcdif", "Contiguous"));

	/* The etnaviv DRM device has no device-tree node: matched by driver. */
	assert_constraint(b, "card1", "Contiguous", "no", where(GPU_MMU, "Device etnaviv", "Contiguous"));
	/* A GPU core by its path: derived contiguous, the driver file knows
	 * its MMU. */
	assert_board_wins(b, "/sys/devices/platform/soc@0/38000000.gpu", "yes",
			  "/sys/devices/platform/soc@0/38000000.gpu/of_node",
			  "no", where(GPU_MMU, "Device etnaviv", "Contiguous"));
}

/* ---- TI AM62x SK ---- */

/*
 * Mainline on the 2 GB SK: reserved (CMA) and system, all memory below
 * 4 GiB.  DSS and the CSI-2 path need contiguous memory; the PowerVR GPU
 * with its own MMU takes any.
 */
static void test_am62x_sk(void **state)
{
	const char *c = "50-am62x-sk.conf";
	struct board *b = *state;
	struct ion_solution *sol;

	board_open(b, "am62x-sk", c, "am62x-sk");
	assert_heaps(b->ctx, "reserved system memfd");
	/* RAM ends at 4 GiB: no heap reaches past 2^32. */
	assert_true(ion_heap_get_address_bits(heap_named(b->ctx, "system")) <= 32);

	solves_to(b, "reserved", "card0");		/* DSS */
	solves_to(b, "system reserved", "card1");		/* PowerVR */
	solves_to(b, "reserved", "video0");		/* CSI2RX */
	solves_to(b, "reserved", "card0", "card1");	/* display + GPU */
	solves_to(b, "reserved", "video0", "card0");	/* camera + display */
	solves_to(b, "reserved", "video0", "card1");	/* camera + GPU */

	sol = solve(b, (const char *const[]){ "video0", "card0", NULL }, NULL);
	assert_rejected(sol, "system", "video0", where(c, "Device csi2rx", "Contiguous"));
	assert_rejected(sol, "system", "card0", where(c, "Device tidss", "Contiguous"));

	expect_impossible(b, "card0", "card0", "system", where(c, "Device tidss", "Contiguous"));

	/* PowerVR: no iommus, derived contiguous; the driver file knows its
	 * MMU. */
	assert_board_wins(b, "card1", "yes", "/sys/devices/platform/bus@f0000/fd00000.gpu/of_node",
			  "no", where(GPU_MMU, "Device powervr", "Contiguous"));
}

/* ---- the test VM ---- */

/*
 * QEMU q35 with 1 GiB on Linux 6.1 (tests/vm): reserved (cma=64M), system,
 * udmabuf (no kernel mapping before 6.2).  vivid instance 0 needs
 * contiguous memory below 4 GiB and a kernel mapping; instance 1 a kernel
 * mapping; virtio-gpu only its own buffers, which a fake tree cannot
 * offer (no GEM heap).
 */
static void test_qemu_q35(void **state)
{
	const char *c = "50-qemu-q35.conf";
	struct board *b = *state;
	struct ion_solution *sol;

	board_open(b, "qemu-q35", c, "qemu-q35");
	assert_heaps(b->ctx, "reserved system udmabuf memfd");
	/* The firmware's map ends below 1 GiB. */
	assert_int_equal(ion_heap_get_address_bits(heap_named(b->ctx, "system")), 30);

	solves_to(b, "reserved", "video0");		/* vivid-000: dma-contig */
	solves_to(b, "system reserved", "video1");	/* vivid-001: vmalloc */
	solves_to(b, "reserved", "video0", "video1");
	/* vgem does no DMA and no board section speaks of it: any dma-buf. */
	solves_to(b, "system udmabuf reserved", "card0");
	/* vkms by its heaps.d name (a fake tree has no DRM driver names):
	 * it maps buffers in the kernel, which 6.1's udmabuf cannot. */
	solves_to(b, "system reserved", "vkms");

	sol = solve(b, (const char *const[]){ "video0", "video1", NULL }, NULL);
	assert_rejected(sol, "system", "video0", where(c, "Device vivid-contig", "Contiguous"));
	assert_rejected(sol, "udmabuf", "video0", where(c, "Device vivid-contig", "Contiguous"));
	assert_rejected(sol, "udmabuf", "video1", where(c, "Device vivid-vmalloc", "KernelMap"));

	/* virtio-gpu by name: no heap at all, each one refused by it. */
	sol = solve(b, (const char *const[]){ "virtio-gpu", NULL }, NULL);
	assert_int_equal(ion_solution_get_heap_count(sol), 0);
	for (int i = 0; i < 3; i++)
		assert_rejected(sol, (const char *[]){ "reserved", "system", "udmabuf" }[i],
				"virtio-gpu", where(c, "Device virtio-gpu", "OwnBuffersOnly"));
	/* By its path, the IOMMU group says scattered memory is fine. */
	assert_constraint(b, "/sys/class/drm/card2", "Contiguous", "no",
			  "/sys/devices/pci0000:00/0000:00:01.0/iommu_group: "
			  "behind an IOMMU, scattered memory is fine");
}

/* ---- the device tree's memory, when it says the impossible ---- */

/* The info lines of a context (what discovery says it ignored). */
static char infos[4096];

__attribute__((format(printf, 6, 0)))
static void log_infos(struct ion_ctx *ctx, int priority, const char *file, int line,
		      const char *fn, const char *format, va_list args)
{
	size_t used = strlen(infos);
	va_list copy;

	va_copy(copy, args);
	log_errors(ctx, priority, file, line, fn, format, copy);
	va_end(copy);
	if (priority != LOG_INFO || used + 2 >= sizeof(infos))
		return;
	vsnprintf(infos + used, sizeof(infos) - used - 1, format, args);
	strcat(infos, "\n");
}

/*
 * A tree of text (tests/lib/faketree.h) with a device tree whose root
 * has these cell counts, 1 GiB of MemTotal (which stands in for where
 * memory ends once the device tree says nothing usable), and no board
 * files; its memfd heap's address bits, which are the bits memory ends
 * below.
 */
static unsigned int dt_memory_bits(struct board *b, const char *cells, const char *nodes)
{
	char file[128], err[512];
	const struct ion_heap *h;
	FILE *f;

	errors[0] = infos[0] = '\0';
	strcpy(b->root, "/tmp/libion-board-XXXXXX");
	assert_non_null(mkdtemp(b->root));
	snprintf(file, sizeof(file), "%s.tree", b->root);
	f = fopen(file, "we");
	assert_non_null(f);
	fprintf(f, "link /proc/device-tree /sys/firmware/devicetree/base\n"
		   "file /proc/meminfo MemTotal:        1000000 kB\\n\n%s%s", cells, nodes);
	fclose(f);
	if (faketree_build(file, b->root, err, sizeof(err)) < 0)
		fail_msg("%s", err);
	assert_int_equal(unlink(file), 0);
	assert_int_equal(ion_ctx_new(b->root, &b->ctx), 0);
	ion_ctx_set_log_fn(b->ctx, log_infos);
	ion_ctx_set_log_priority(b->ctx, LOG_INFO);
	assert_int_equal(ion_ctx_set_heaps_path(b->ctx, ""), 0);
	assert_int_equal(ion_ctx_find_heap(b->ctx, "memfd", &h), 0);
	print_message("memory ends below 2^%u; %s", ion_heap_get_address_bits(h),
		      infos[0] ? infos : "nothing logged\n");
	return ion_heap_get_address_bits(h);
}

static void dt_memory_done(struct board *b)
{
	b->ctx = ion_ctx_unref(b->ctx);
	assert_int_equal(test_remove_tree(b->root), 0);
	b->root[0] = '\0';
}

#define DT_CELLS_2_2 "file /sys/firmware/devicetree/base/#address-cells \\x00\\x00\\x00\\x02\n" \
		     "file /sys/firmware/devicetree/base/#size-cells \\x00\\x00\\x00\\x02\n"
#define DT_REG(node) "file /sys/firmware/devicetree/base/" node "/reg "

/*
 * A memory node's reg whose base + size passes 2^64 (firmware's mistake,
 * or a tree overwritten): taken as it was, base + size wrapped to 4 KiB,
 * and memory was said to end there, every heap below 2^12.  Such a
 * range, and one of size 0, is ignored and logged (info), naming the node
 * and the values: without another node MemTotal says where memory ends
 * (1 GiB: 2^30), and a valid node beside it still does (2 GiB: 2^31).
 */
static void test_dt_memory_wraps(void **state)
{
	static const char wraps[] = DT_REG("memory@fffffffffffff000")
		"\\xff\\xff\\xff\\xff\\xff\\xff\\xf0\\x00\\x00\\x00\\x00\\x00\\x00\\x00\\x20\\x00\n";
	static const char valid[] = DT_REG("memory@40000000")
		"\\x00\\x00\\x00\\x00\\x40\\x00\\x00\\x00\\x00\\x00\\x00\\x00\\x40\\x00\\x00\\x00\n";
	static const char empty[] = DT_REG("memory@0")
		"\\x00\\x00\\x00\\x00\\x00\\x00\\x00\\x00\\x00\\x00\\x00\\x00\\x00\\x00\\x00\\x00\n";
	struct board *b = *state;
	char nodes[1024];

	snprintf(nodes, sizeof(nodes), "%s%s", wraps, empty);
	assert_int_equal(dt_memory_bits(b, DT_CELLS_2_2, nodes), 30);
	assert_non_null(strstr(infos, "memory@fffffffffffff000/reg: base 0xfffffffffffff000 + size 0x2000 passes 2^64"));
	assert_non_null(strstr(infos, "memory@0/reg: base 0x0 + size 0x0"));
	dt_memory_done(b);

	snprintf(nodes, sizeof(nodes), "%s%s", valid, wraps);
	assert_int_equal(dt_memory_bits(b, DT_CELLS_2_2, nodes), 31);
	assert_non_null(strstr(infos, "memory@fffffffffffff000/reg: base 0xfffffffffffff000 + size 0x2000 passes 2^64"));
	dt_memory_done(b);
}

/*
 * Cell counts beyond two, which a 64-bit value does not need: read as
 * they are, with their upper cells 0 (2 GiB in three size cells: 2^31),
 * and a value wider than 64 bits ignored and logged.  They were replaced
 * by the defaults, so that each range was read at the wrong offsets (the
 * three-cell size read as base 0, size 1: memory ending below 2^1).  A
 * count no root can have (5 address cells) ignores the device tree's
 * memory, logged: MemTotal then says 2^30.
 */
static void test_dt_memory_cells(void **state)
{
	static const char cells_2_3[] =
		"file /sys/firmware/devicetree/base/#address-cells \\x00\\x00\\x00\\x02\n"
		"file /sys/firmware/devicetree/base/#size-cells \\x00\\x00\\x00\\x03\n";
	static const char nodes_2_3[] = DT_REG("memory@40000000")
		"\\x00\\x00\\x00\\x00\\x40\\x00\\x00\\x00"
		"\\x00\\x00\\x00\\x00\\x00\\x00\\x00\\x00\\x40\\x00\\x00\\x00\n"
		DT_REG("memory@0")
		"\\x00\\x00\\x00\\x00\\x00\\x00\\x00\\x00"
		"\\x00\\x00\\x00\\x01\\x00\\x00\\x00\\x00\\x00\\x00\\x00\\x00\n";
	static const char cells_5_1[] =
		"file /sys/firmware/devicetree/base/#address-cells \\x00\\x00\\x00\\x05\n"
		"file /sys/firmware/devicetree/base/#size-cells \\x00\\x00\\x00\\x01\n";
	static const char nodes_5_1[] = DT_REG("memory@1")
		"\\x00\\x00\\x00\\x00\\x00\\x00\\x00\\x00\\x00\\x00\\x00\\x00\\x00\\x00\\x00\\x00"
		"\\x00\\x00\\x00\\x01\\x00\\x00\\x10\\x00\n";
	struct board *b = *state;

	assert_int_equal(dt_memory_bits(b, cells_2_3, nodes_2_3), 31);
	assert_non_null(strstr(infos, "memory@0/reg: a value wider than 64 bits (2 address and 3 size cells: 00000000 00000000 00000001 00000000 00000000)"));
	dt_memory_done(b);

	assert_int_equal(dt_memory_bits(b, cells_5_1, nodes_5_1), 30);
	assert_non_null(strstr(infos, "/proc/device-tree/#address-cells: 5 (4 bytes)"));
	dt_memory_done(b);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_faketree_errors),
		cmocka_unit_test(test_faketree_entries),
		cmocka_unit_test(test_dev_null_is_1_3),
		cmocka_unit_test_setup_teardown(test_rpi4, board_setup, board_teardown),
		cmocka_unit_test_setup_teardown(test_rpi5, board_setup, board_teardown),
		cmocka_unit_test_setup_teardown(test_rock5b, board_setup, board_teardown),
		cmocka_unit_test_setup_teardown(test_imx8mp_evk, board_setup, board_teardown),
		cmocka_unit_test_setup_teardown(test_am62x_sk, board_setup, board_teardown),
		cmocka_unit_test_setup_teardown(test_qemu_q35, board_setup, board_teardown),
		cmocka_unit_test_setup_teardown(test_dt_memory_wraps, board_setup, board_teardown),
		cmocka_unit_test_setup_teardown(test_dt_memory_cells, board_setup, board_teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
