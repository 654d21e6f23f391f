// SPDX-License-Identifier: MIT
/*
 * Constraints across processes, through the public API only: a config's
 * constraints serialized (ion_alloc_config_serialize) and taken back by
 * another config (ion_alloc_config_add_constraints), on a fake tree of the
 * test VM (tests/boards/qemu-q35.tree) with the source heaps.d folder and
 * a board file of the test's own, whose [Device] sections have no Match
 * keys and so are reached by their names.
 *
 * The format, as src/constraint.c documents it:
 *
 *   ionc1 CONSTRAINT[;CONSTRAINT...]
 *   CONSTRAINT = dev=NAME[,own=HEAP][,uncached=SOURCE][,KEY=VALUE@LINE@SOURCE...]
 *
 * with every byte but [A-Za-z0-9._/+-] of NAME, HEAP, VALUE and SOURCE
 * written %XX.  The test reads the text with a decoder of its own (below),
 * so that "the serializer wrote what the parser reads" is not the only
 * thing checked: each value must be what the board file says, at the line
 * it says it.  Expected heaps follow from the tree's facts: reserved is
 * the only contiguous heap, udmabuf and memfd cannot be mapped in the
 * kernel, memfd is no dma-buf.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
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

/* The test's own board file: devices by name, one with every key.  Its
 * file name has the characters the format must escape. */
#define ODD_NAME "odd;1,=@%#\xc3\xa9\""
static const char *const conf_lines[] = {
	"# libion's test-constraint: devices reached by their heaps.d names",
	"[Device cam]",
	"Heaps = reserved system",
	"Contiguous = yes",
	"AddressBits = 32",
	"Cache = cached",
	"Alignment = 64K",
	"KernelMap = yes",
	"OwnBuffersOnly = no",
	"Pool = 4x1M 2x8M",
	"",
	"[Device " ODD_NAME "]",
	"KernelMap = yes",
	"",
	"[Device scattered]",
	"Heaps = system udmabuf",
	"",
	"[Device listed]",
	"Heaps = reserved system",
	NULL,
};

/* The fake root and the board file, made once for every test. */
static char root[64];
static char conf_dir[64];
static char conf_path[256];
static char heaps_path[1024];

/* LOG_ERR messages of the contexts: a board file the library complains
 * about fails the test. */
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

/* How many lines after line from (from 1) of conf_lines is exactly text. */
static unsigned int line_of_from(unsigned int from, const char *text)
{
	for (unsigned int i = from; conf_lines[i]; i++)
		if (strcmp(conf_lines[i], text) == 0)
			return i + 1 - from;
	fail_msg("no line '%s' in the test's board file", text);
	return 0;
}

/* The first line (from 1) of conf_lines that is exactly text. */
static unsigned int line_of(const char *text)
{
	return line_of_from(0, text);
}

/* The line (from 1) of text in conf_lines after the line header. */
static unsigned int line_after(const char *header, const char *text)
{
	return line_of(header) + line_of_from(line_of(header), text);
}

/* The line of "key" in [section] of a shipped board file, by a plain scan. */
static unsigned int shipped_line(const char *conf, const char *section, const char *key)
{
	char path[512], header[128], *line = NULL;
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

		n++;
		s[strcspn(s, "\r\n")] = '\0';
		if (*s == '[')
			inside = strcmp(s, header) == 0;
		else if (inside && strncmp(s, key, strlen(key)) == 0 &&
			 strchr(" \t=", s[strlen(key)]))
			found = n;
	}
	free(line);
	fclose(f);
	if (!found)
		fail_msg("%s has no %s in %s", conf, key, header);
	return found;
}

static int group_setup(void **state)
{
	char err[512], tree[512];
	FILE *f;

	(void)state;
	strcpy(root, "/tmp/libion-constraint-XXXXXX");
	strcpy(conf_dir, "/tmp/libion-constraint-conf-XXXXXX");
	if (!mkdtemp(root) || !mkdtemp(conf_dir))
		return -1;
	snprintf(tree, sizeof(tree), "%s/qemu-q35.tree", TEST_BOARDS_DIR);
	if (faketree_build(tree, root, err, sizeof(err)) < 0) {
		fprintf(stderr, "%s\n", err);
		return -1;
	}
	/* Blanks and every separator of the format in the source's name. */
	snprintf(conf_path, sizeof(conf_path), "%s/odd ;,=@%%#\t\xc3\xa9.conf", conf_dir);
	f = fopen(conf_path, "we");
	if (!f)
		return -1;
	for (unsigned int i = 0; conf_lines[i]; i++)
		fprintf(f, "%s\n", conf_lines[i]);
	if (fclose(f) != 0)
		return -1;
	snprintf(heaps_path, sizeof(heaps_path), "%s:%s", conf_path, TEST_HEAPS_D_DIR);
	return 0;
}

static int group_teardown(void **state)
{
	(void)state;
	unlink(conf_path);
	rmdir(conf_dir);
	return test_remove_tree(root);
}

/* ---- each test's state ---- */

#define MAX_HELD 32

struct fixture {
	struct fd_table fds;
	struct ion_ctx *ctx;
	/* What a test holds while it may fail, freed by the teardown. */
	struct ion_alloc_config *configs[MAX_HELD];
	struct ion_solution *sols[MAX_HELD];
	char *texts[MAX_HELD * 2];
	struct ion_device *devs[MAX_HELD];
};

static struct fixture *fx;

static int setup(void **state)
{
	struct fixture *f = calloc(1, sizeof(*f));

	assert_non_null(f);
	errors[0] = '\0';
	/* Before the context: it must leave no fd behind either. */
	fd_table_read(&f->fds);
	assert_int_equal(ion_ctx_new(root, &f->ctx), 0);
	ion_ctx_set_log_fn(f->ctx, log_errors);
	assert_int_equal(ion_ctx_set_heaps_path(f->ctx, heaps_path), 0);
	assert_int_equal(ion_ctx_get_heap_count(f->ctx), 4);
	assert_int_equal(ion_ctx_get_config_error_count(f->ctx), 0);
	fx = f;
	*state = f;
	return 0;
}

static int teardown(void **state)
{
	struct fixture *f = *state;

	for (unsigned int i = 0; i < MAX_HELD; i++) {
		ion_alloc_config_free(f->configs[i]);
		ion_solution_unref(f->sols[i]);
		ion_device_unref(f->devs[i]);
	}
	for (unsigned int i = 0; i < MAX_HELD * 2; i++)
		free(f->texts[i]);
	ion_ctx_unref(f->ctx);
	fd_table_assert_same(&f->fds);
	free(f);
	fx = NULL;
	if (errors[0])
		fail_msg("the library logged errors:\n%s", errors);
	return 0;
}

static void *hold(void **slots, unsigned int n, void *p)
{
	for (unsigned int i = 0; i < n; i++)
		if (!slots[i])
			return slots[i] = p;
	fail_msg("the test holds too much");
	return NULL;
}

static struct ion_device *device(const char *spec)
{
	struct ion_device *dev = NULL;
	int r = ion_ctx_get_device(fx->ctx, spec, &dev);

	if (r < 0)
		fail_msg("no device %s: %s", spec, strerror(-r));
	return hold((void **)fx->devs, MAX_HELD, dev);
}

/* A config of these devices (a NULL-terminated list of specs), held by
 * the fixture. */
static struct ion_alloc_config *config_of(const char *const *specs)
{
	struct ion_alloc_config *config;

	assert_int_equal(ion_alloc_config_new(&config), 0);
	hold((void **)fx->configs, MAX_HELD, config);
	assert_int_equal(ion_alloc_config_set_size(config, 1 << 20), 0);
	for (const char *const *s = specs; s && *s; s++)
		assert_int_equal(ion_alloc_config_add_device(config, device(*s)), 0);
	return config;
}

static char *serialize(const struct ion_alloc_config *config)
{
	char *text = NULL;

	assert_int_equal(ion_alloc_config_serialize(config, &text), 0);
	assert_non_null(text);
	return hold((void **)fx->texts, MAX_HELD * 2, text);
}

static struct ion_solution *solve(const struct ion_alloc_config *config)
{
	struct ion_solution *sol;

	assert_int_equal(ion_ctx_solve(fx->ctx, config, &sol), 0);
	return hold((void **)fx->sols, MAX_HELD, sol);
}

/* The candidates, best first, blank-separated ("" for none). */
static const char *candidates(const struct ion_solution *sol)
{
	static char buf[256];

	buf[0] = '\0';
	for (int i = 0; i < ion_solution_get_heap_count(sol); i++) {
		size_t used = strlen(buf);

		snprintf(buf + used, sizeof(buf) - used, "%s%s", used ? " " : "",
			 ion_heap_get_name(ion_solution_get_heap(sol, (unsigned int)i)));
	}
	return buf;
}

/* The reason that heap was rejected with whose words start with "dev "
 * (the device named first, as every device verdict is worded), and the
 * device given with it; fails when there is none. */
static const char *rejection(const struct ion_solution *sol, const char *heap, const char *dev,
			     const struct ion_device **ret_dev)
{
	int n = ion_solution_get_rejection_count(sol);
	size_t len = strlen(dev);

	assert_true(n >= 0);
	for (int i = 0; i < n; i++) {
		const struct ion_heap *h;
		const struct ion_device *d;
		const char *reason;

		assert_int_equal(ion_solution_get_rejection(sol, (unsigned int)i, &h, &d, &reason), 0);
		if (strcmp(ion_heap_get_name(h), heap) == 0 && strncmp(reason, dev, len) == 0 &&
		    reason[len] == ' ') {
			*ret_dev = d;
			return reason;
		}
	}
	fail_msg("no rejection of %s by %s", heap, dev);
	return NULL;
}

static bool contains(const char *s, const char *part)
{
	return strstr(s, part) != NULL;
}

/* ---- the test's own reading of the format ---- */

struct item {
	char key[32];
	char *value;		/* decoded */
	long line;		/* -1: none (dev, own, uncached) */
	char *source;		/* decoded, or NULL */
};

struct parsed {
	char *dev;
	char *own;
	char *uncached;
	struct item items[16];
	unsigned int n_items;
};

static bool allowed_raw(unsigned char c)
{
	return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') ||
	       c == '.' || c == '_' || c == '/' || c == '+' || c == '-';
}

static int hex(char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	return -1;
}

/* Decodes s[0..n), failing the test on anything the format forbids. */
static char *percent_decode(const char *s, size_t n)
{
	char *out = malloc(n + 1), *p = out;

	assert_non_null(out);
	for (size_t i = 0; i < n; i++) {
		if (s[i] == '%') {
			assert_true(i + 2 < n);
			assert_true(hex(s[i + 1]) >= 0 && hex(s[i + 2]) >= 0);
			*p++ = (char)(hex(s[i + 1]) << 4 | hex(s[i + 2]));
			assert_true(p[-1] != '\0');
			i += 2;
		} else {
			if (!allowed_raw((unsigned char)s[i]))
				fail_msg("raw '%c' (%#x) in a field of the text", s[i], (unsigned char)s[i]);
			*p++ = s[i];
		}
	}
	*p = '\0';
	return out;
}

static void parsed_free(struct parsed *v, unsigned int n)
{
	for (unsigned int i = 0; i < n; i++) {
		free(v[i].dev);
		free(v[i].own);
		free(v[i].uncached);
		for (unsigned int k = 0; k < v[i].n_items; k++) {
			free(v[i].items[k].value);
			free(v[i].items[k].source);
		}
	}
	memset(v, 0, n * sizeof(*v));
}

/* Reads one constraint s[0..n) into p. */
static void read_constraint(const char *s, size_t n, struct parsed *p)
{
	size_t pos = 0;
	bool first = true;

	while (pos <= n) {
		const char *item = s + pos, *comma = memchr(item, ',', n - pos);
		size_t len = comma ? (size_t)(comma - item) : n - pos;
		const char *eq = memchr(item, '=', len);

		assert_non_null(eq);
		if (first) {
			assert_true(len > 4 && strncmp(item, "dev=", 4) == 0);
			p->dev = percent_decode(item + 4, len - 4);
		} else if (eq - item == 3 && strncmp(item, "own", 3) == 0) {
			assert_null(p->own);
			p->own = percent_decode(eq + 1, len - 4);
		} else if (eq - item == 8 && strncmp(item, "uncached", 8) == 0) {
			assert_null(p->uncached);
			p->uncached = percent_decode(eq + 1, len - 9);
		} else {
			struct item *it = &p->items[p->n_items++];
			const char *at1 = memchr(eq, '@', len - (size_t)(eq - item));
			const char *at2 = at1 ? memchr(at1 + 1, '@', len - (size_t)(at1 + 1 - item)) : NULL;
			char digits[16];

			assert_true(p->n_items <= 16);
			assert_true((size_t)(eq - item) < sizeof(it->key));
			memcpy(it->key, item, (size_t)(eq - item));
			assert_non_null(at2);
			assert_true(at2 - at1 - 1 > 0 && at2 - at1 - 1 < (long)sizeof(digits));
			memcpy(digits, at1 + 1, (size_t)(at2 - at1 - 1));
			digits[at2 - at1 - 1] = '\0';
			for (char *d = digits; *d; d++)
				assert_true(*d >= '0' && *d <= '9');
			it->value = percent_decode(eq + 1, (size_t)(at1 - eq - 1));
			it->line = atol(digits);
			it->source = percent_decode(at2 + 1, len - (size_t)(at2 + 1 - item));
		}
		first = false;
		pos += len + 1;
	}
}

/* Reads a whole text: one line of printable ASCII, "ionc1 " and the
 * constraints; returns how many (up to max). */
static unsigned int read_text(const char *text, struct parsed *v, unsigned int max)
{
	size_t len = strlen(text), pos = 6;
	unsigned int n = 0;

	for (const char *c = text; *c; c++)
		if (*c < 0x20 || *c > 0x7e)
			fail_msg("byte %#x in the text: not one line of printable ASCII",
				 (unsigned char)*c);
	assert_true(strncmp(text, "ionc1 ", 6) == 0);
	/* The only blank is the one after the version. */
	assert_null(strchr(text + 6, ' '));
	while (pos < len) {
		const char *s = text + pos, *semi = strchr(s, ';');
		size_t l = semi ? (size_t)(semi - s) : len - pos;

		assert_true(n < max);
		read_constraint(s, l, &v[n++]);
		pos += l + 1;
		assert_true(!semi || pos < len); /* no trailing ';' */
	}
	return n;
}

static const struct item *item_of(const struct parsed *p, const char *key)
{
	for (unsigned int i = 0; i < p->n_items; i++)
		if (strcmp(p->items[i].key, key) == 0)
			return &p->items[i];
	fail_msg("%s has no %s", p->dev, key);
	return NULL;
}

static void assert_item(const struct parsed *p, const char *key, const char *value,
			long line, const char *source)
{
	const struct item *it = item_of(p, key);

	assert_string_equal(it->value, value);
	assert_int_equal(it->line, line);
	assert_string_equal(it->source, source);
}

/* A text as a receiver writes it again: what the sender wrote, but for
 * the tab in the name of the test's board file, which the receiver holds
 * escaped (%09 comes back as "\x09", written %5Cx09). */
static const char *received(const char *text)
{
	size_t n = 0;
	char *out, *w;

	for (const char *t = strstr(text, "%09"); t; t = strstr(t + 3, "%09"))
		n++;
	w = out = malloc(strlen(text) + 3 * n + 1);
	assert_non_null(out);
	for (const char *t = text; *t;) {
		if (strncmp(t, "%09", 3) == 0) {
			w += sprintf(w, "%%5Cx09");
			t += 3;
		} else {
			*w++ = *t++;
		}
	}
	*w = '\0';
	return hold((void **)fx->texts, MAX_HELD * 2, out);
}

/* ---- round trips ---- */

/* A config without devices is a set too: the version and nothing else. */
static void test_empty_set(void **state)
{
	struct ion_alloc_config *empty = config_of(NULL), *cam;
	const char *before;

	(void)state;
	assert_string_equal(serialize(empty), "ionc1 ");
	assert_int_equal(ion_alloc_config_add_constraints(empty, "ionc1 "), 0);
	assert_string_equal(serialize(empty), "ionc1 ");
	/* ... and AND-ing it changes nothing. */
	cam = config_of((const char *const[]){ "cam", NULL });
	before = serialize(cam);
	assert_int_equal(ion_alloc_config_add_constraints(cam, "ionc1 "), 0);
	assert_string_equal(serialize(cam), before);
	/* Solving it: every heap a request without devices may have. */
	assert_string_equal(candidates(solve(empty)), "system udmabuf memfd reserved");
}

/* Every key a device can carry, with its value as the file writes it, its
 * line and its source; the remote copy serializes as the original did. */
static void test_every_key(void **state)
{
	struct ion_alloc_config *local = config_of((const char *const[]){ "cam", NULL });
	struct ion_alloc_config *remote = config_of(NULL);
	struct parsed p[2] = { 0 };
	const char *text = serialize(local);

	(void)state;
	assert_int_equal(read_text(text, p, 2), 1);
	assert_string_equal(p[0].dev, "cam");
	assert_null(p[0].own);
	assert_null(p[0].uncached);
	/* Every key but Pool: the board's hint is no constraint. */
	assert_int_equal(p[0].n_items, 7);
	assert_item(&p[0], "Heaps", "reserved system", line_of("Heaps = reserved system"), conf_path);
	assert_item(&p[0], "Contiguous", "yes", line_of("Contiguous = yes"), conf_path);
	assert_item(&p[0], "AddressBits", "32", line_of("AddressBits = 32"), conf_path);
	assert_item(&p[0], "Cache", "cached", line_of("Cache = cached"), conf_path);
	assert_item(&p[0], "Alignment", "64K", line_of("Alignment = 64K"), conf_path);
	assert_item(&p[0], "KernelMap", "yes", line_of("KernelMap = yes"), conf_path);
	assert_item(&p[0], "OwnBuffersOnly", "no", line_of("OwnBuffersOnly = no"), conf_path);
	assert_null(strstr(text, "Pool="));
	parsed_free(p, 1);

	assert_int_equal(ion_alloc_config_add_constraints(remote, text), 0);
	assert_string_equal(serialize(remote), received(text));
	/* The remote copy is the same constraint: the same verdicts. */
	assert_string_equal(candidates(solve(remote)), candidates(solve(local)));
	assert_int_equal(ion_solution_get_rejection_count(solve(remote)),
			 ion_solution_get_rejection_count(solve(local)));
}

/* Names and sources with the format's separators, blanks, '%' and UTF-8
 * come back byte for byte; control bytes and what is no UTF-8 come back
 * escaped, once. */
static void test_odd_characters(void **state)
{
	struct ion_alloc_config *local = config_of((const char *const[]){ ODD_NAME, NULL });
	struct ion_alloc_config *remote = config_of(NULL), *again = config_of(NULL);
	struct parsed p[1] = { 0 };
	const char *text = serialize(local);
	char crafted[2048], *w, *back;
	char all[1024];

	(void)state;
	assert_int_equal(read_text(text, p, 1), 1);
	assert_string_equal(p[0].dev, ODD_NAME);
	assert_int_equal(p[0].n_items, 1);
	assert_item(&p[0], "KernelMap", "yes", line_after("[Device " ODD_NAME "]", "KernelMap = yes"), conf_path);
	parsed_free(p, 1);
	assert_int_equal(ion_alloc_config_add_constraints(remote, text), 0);
	assert_string_equal(serialize(remote), received(text));

	/* Every byte but NUL, escaped (lower-case hex too), in a name, an own
	 * heap, an uncached source and a key's source: printable ASCII comes
	 * back as it was, every other byte as \xhh (one after the other,
	 * the bytes above 0x7f are no UTF-8). */
	w = all;
	for (int c = 1; c < 256; c++)
		w += sprintf(w, c >= 0x20 && c < 0x7f ? "%c" : "\\x%02x", c);
	w = crafted;
	w += sprintf(w, "ionc1 dev=");
	for (int c = 1; c < 256; c++)
		w += sprintf(w, c & 1 ? "%%%02X" : "%%%02x", c);
	w += sprintf(w, ",own=%%20gem,uncached=a%%2Cb,KernelMap=yes@7@");
	for (int c = 1; c < 256; c++)
		w += sprintf(w, "%%%02x", c);
	assert_int_equal(ion_alloc_config_add_constraints(again, crafted), 0);
	back = serialize(again);
	assert_int_equal(read_text(back, p, 1), 1);
	assert_string_equal(p[0].dev, all);
	assert_string_equal(p[0].own, " gem");
	assert_string_equal(p[0].uncached, "a,b");
	assert_item(&p[0], "KernelMap", "yes", 7, all);
	parsed_free(p, 1);
	/* Stable from there on. */
	remote = config_of(NULL);
	assert_int_equal(ion_alloc_config_add_constraints(remote, back), 0);
	assert_string_equal(serialize(remote), back);
}

/* A rejection by a remote constraint names the remote device and the
 * constraint with its source, and gives no struct ion_device. */
static void test_remote_rejection(void **state)
{
	struct ion_alloc_config *local = config_of((const char *const[]){ "video0", NULL });
	struct ion_alloc_config *remote = config_of(NULL);
	struct ion_solution *ls, *rs;
	const struct ion_device *d;
	const char *reason;
	char where[512];
	int n;

	(void)state;
	assert_int_equal(ion_alloc_config_add_constraints(remote, serialize(local)), 0);
	ls = solve(local);
	rs = solve(remote);
	/* video0 needs contiguous memory below 4 GiB that the kernel can map:
	 * of the tree's heaps only reserved. */
	assert_string_equal(candidates(ls), "reserved");
	assert_string_equal(candidates(rs), "reserved");
	snprintf(where, sizeof(where), "(Contiguous, %s/50-qemu-q35.conf:%u)", TEST_HEAPS_D_DIR,
		 shipped_line("50-qemu-q35.conf", "Device vivid-contig", "Contiguous"));
	reason = rejection(ls, "system", "video0", &d);
	assert_non_null(d);
	assert_string_equal(ion_device_get_name(d), "video0");
	assert_true(contains(reason, where));
	reason = rejection(rs, "system", "video0", &d);
	assert_null(d);
	assert_true(contains(reason, "physically contiguous"));
	assert_true(contains(reason, where));
	reason = rejection(rs, "udmabuf", "video0", &d);
	assert_null(d);
	assert_true(contains(reason, where));
	reason = rejection(rs, "memfd", "video0", &d);
	assert_null(d);
	/* Word for word what the device itself would have said, for every
	 * heap, and never a device pointer. */
	n = ion_solution_get_rejection_count(rs);
	assert_int_equal(n, ion_solution_get_rejection_count(ls));
	for (int i = 0; i < n; i++) {
		const struct ion_heap *lh, *rh;
		const struct ion_device *ld, *rd;
		const char *lr, *rr;

		assert_int_equal(ion_solution_get_rejection(ls, (unsigned int)i, &lh, &ld, &lr), 0);
		assert_int_equal(ion_solution_get_rejection(rs, (unsigned int)i, &rh, &rd, &rr), 0);
		assert_ptr_equal(lh, rh);
		assert_string_equal(lr, rr);
		assert_non_null(ld);
		assert_null(rd);
	}
}

/* Local and remote constraints are AND-ed: each side excludes what it
 * excludes, and the rejection says which side. */
static void test_and_local_remote(void **state)
{
	struct ion_alloc_config *cam = config_of((const char *const[]){ "video0", NULL });
	struct ion_alloc_config *listed = config_of((const char *const[]){ "listed", NULL });
	struct ion_alloc_config *scattered = config_of((const char *const[]){ "scattered", NULL });
	const char *text = serialize(cam);
	struct ion_solution *sol;
	const struct ion_device *d;
	const char *reason;
	char where[512];

	(void)state;
	/* Alone, "listed" takes reserved and system, in the solver's order
	 * (scattered first). */
	assert_string_equal(candidates(solve(listed)), "system reserved");
	assert_int_equal(ion_alloc_config_add_constraints(listed, text), 0);
	sol = solve(listed);
	assert_string_equal(candidates(sol), "reserved");
	reason = rejection(sol, "system", "video0", &d);
	assert_null(d);
	reason = rejection(sol, "udmabuf", "listed", &d);
	assert_non_null(d);
	assert_string_equal(ion_device_get_name(d), "listed");
	snprintf(where, sizeof(where), "(Heaps, %s:%u)", conf_path,
		 line_after("[Device listed]", "Heaps = reserved system"));
	assert_true(contains(reason, where));
	reason = rejection(sol, "udmabuf", "video0", &d);
	assert_null(d);

	/* "scattered" takes only what video0 refuses: nothing fits both. */
	assert_string_equal(candidates(solve(scattered)), "system udmabuf");
	assert_int_equal(ion_alloc_config_add_constraints(scattered, text), 0);
	sol = solve(scattered);
	assert_string_equal(candidates(sol), "");
	reason = rejection(sol, "reserved", "scattered", &d);
	assert_non_null(d);
	assert_true(contains(reason, "Heaps"));
	reason = rejection(sol, "system", "video0", &d);
	assert_null(d);
	assert_true(contains(reason, "Contiguous"));
	reason = rejection(sol, "udmabuf", "video0", &d);
	assert_null(d);
	/* ... and the text of the AND carries both, local first. */
	text = serialize(scattered);
	{
		struct parsed p[2] = { 0 };

		assert_int_equal(read_text(text, p, 2), 2);
		assert_string_equal(p[0].dev, "scattered");
		assert_string_equal(p[1].dev, "video0");
		parsed_free(p, 2);
	}
}

/* serialize(add(serialize(x))) == serialize(x), for local devices of
 * every kind the tree has (but for what the receiver escapes), remote
 * ones, and both mixed. */
static void test_stable(void **state)
{
	const char *const specs[] = { "cam", ODD_NAME, "video0", "video1", "card0", "card1",
				      "card2", "listed", NULL };
	struct ion_alloc_config *x = config_of(specs), *y = config_of(NULL), *z;
	struct parsed p[16] = { 0 };
	const char *text = serialize(x), *once;

	(void)state;
	assert_int_equal(read_text(text, p, 16), 8);
	for (unsigned int i = 0; i < 8; i++)
		assert_string_equal(p[i].dev, specs[i]);
	/* card2's constraint is derived from sysfs: a source without line. */
	assert_item(&p[6], "Contiguous", "no", 0, "derived: /sys/devices/pci0000:00/0000:00:01.0/iommu_group: behind an IOMMU, scattered memory is fine");
	parsed_free(p, 16);
	assert_int_equal(ion_alloc_config_add_constraints(y, text), 0);
	once = serialize(y);
	assert_string_equal(once, received(text));
	/* Mixed: a local device, then the remote ones. */
	z = config_of((const char *const[]){ "scattered", NULL });
	assert_int_equal(ion_alloc_config_add_constraints(z, once), 0);
	text = serialize(z);
	y = config_of(NULL);
	assert_int_equal(ion_alloc_config_add_constraints(y, text), 0);
	assert_string_equal(serialize(y), received(text));
	assert_true(strncmp(text, "ionc1 dev=scattered,", 20) == 0);
	assert_string_equal(strchr(text, ';') + 1, once + 6);
}

/* ---- malformed input: -EINVAL, and the config as it was ---- */

static void assert_refused(struct ion_alloc_config *config, const char *text)
{
	char *before = NULL, *after = NULL;
	int r;

	assert_int_equal(ion_alloc_config_serialize(config, &before), 0);
	r = ion_alloc_config_add_constraints(config, text);
	assert_int_equal(ion_alloc_config_serialize(config, &after), 0);
	if (r != -EINVAL || strcmp(before, after) != 0) {
		char shown[160];

		snprintf(shown, sizeof(shown), "%s", text);
		free(before);
		free(after);
		fail_msg("'%s%s': %d (%s), config %s", shown, strlen(text) >= sizeof(shown) ? "..." : "",
			 r, r ? strerror(-r) : "taken", r == -EINVAL ? "changed" : "");
	}
	free(before);
	free(after);
}

static void test_malformed(void **state)
{
	static const char *const bad[] = {
		/* the version */
		"", "ionc1", "ionc1dev=a", "ionc2 dev=a", "IONC1 dev=a", "ionc0 dev=a",
		" ionc1 dev=a", "ionc1  dev=a", "ionc11 dev=a",
		/* no dev= first */
		"ionc1 a", "ionc1 Contiguous=yes@1@f", "ionc1 own=x", "ionc1 uncached=x",
		"ionc1 dev", "ionc1 DEV=a", "ionc1 device=a", "ionc1 Contiguous=yes@1@f,dev=a",
		/* empty name */
		"ionc1 dev=", "ionc1 dev=,KernelMap=yes@0@f", "ionc1 dev=a;dev=",
		/* unknown keys, or keys that are no device's */
		"ionc1 dev=a,Foo=1@0@f", "ionc1 dev=a,MaxSize=1M@0@f", "ionc1 dev=a,MatchName=x@0@f",
		"ionc1 dev=a,Aliases=x@0@f", "ionc1 dev=a,contiguous=yes@0@f", "ionc1 dev=a,=yes@0@f",
		"ionc1 dev=a,Contiguous", "ionc1 dev=a,dev=b", "ionc1 dev=a,OwnHeap=x@0@f",
		"ionc1 dev=a,PreferUncached=yes@0@f",
		/* a key twice */
		"ionc1 dev=a,Contiguous=yes@1@f,Contiguous=yes@1@f",
		"ionc1 dev=a,Contiguous=yes@1@f,Contiguous=no@2@f",
		"ionc1 dev=a,own=x,own=x", "ionc1 dev=a,uncached=x,uncached=y",
		/* bad values, lines and sources */
		"ionc1 dev=a,own=", "ionc1 dev=a,Contiguous=maybe@1@f", "ionc1 dev=a,Contiguous=@1@f",
		"ionc1 dev=a,AddressBits=0@1@f", "ionc1 dev=a,AddressBits=65@1@f",
		"ionc1 dev=a,AddressBits=x@1@f", "ionc1 dev=a,Alignment=3@1@f",
		"ionc1 dev=a,Alignment=0@1@f", "ionc1 dev=a,Cache=sometimes@1@f",
		"ionc1 dev=a,KernelMap=2@1@f", "ionc1 dev=a,Pool=0x1M@1@f", "ionc1 dev=a,Pool=4X1M@1@f",
		"ionc1 dev=a,Pool=4x0@1@f", "ionc1 dev=a,Contiguous=yes", "ionc1 dev=a,Contiguous=yes@1",
		"ionc1 dev=a,Contiguous=yes@@f", "ionc1 dev=a,Contiguous=yes@x@f",
		"ionc1 dev=a,Contiguous=yes@-1@f", "ionc1 dev=a,Contiguous=yes@+1@f",
		"ionc1 dev=a,Contiguous=yes@4294967296@f", "ionc1 dev=a,Contiguous=yes@0x1@f",
		"ionc1 dev=a,Contiguous=yes@1@f@g",
		/* bad escapes */
		"ionc1 dev=%0", "ionc1 dev=%", "ionc1 dev=a%", "ionc1 dev=%GG", "ionc1 dev=%g0",
		"ionc1 dev=%00", "ionc1 dev=a%00b", "ionc1 dev=%0G", "ionc1 dev=a,own=%0",
		"ionc1 dev=a,Contiguous=yes@1@%00", "ionc1 dev=a,Contiguous=yes@1@f%",
		"ionc1 dev=a,Contiguous=y%GGs@1@f", "ionc1 dev=a,uncached=%zz",
		/* raw characters the format escapes */
		"ionc1 dev=a b", "ionc1 dev=a\tb", "ionc1 dev=a\nb", "ionc1 dev=a\n", "ionc1 dev=a=b",
		"ionc1 dev=a@b", "ionc1 dev=a#", "ionc1 dev=a\"", "ionc1 dev=\xc3\xa9",
		"ionc1 dev=a%b", "ionc1 dev=a,Contiguous=yes@1@f g", "ionc1 dev=a,Contiguous=yes@1@f=g",
		"ionc1 dev=a,Contiguous=yes @1@f", "ionc1 dev=a,Contiguous=yes@ 1@f",
		"ionc1 dev=a,own=a=b", "ionc1 dev=a,uncached=a b", "ionc1 dev=a\x7f",
		/* empty constraints and items, trailing separators */
		"ionc1 ;", "ionc1 dev=a;", "ionc1 dev=a;;dev=b", "ionc1 ;dev=a", "ionc1 dev=a,",
		"ionc1 dev=a,,KernelMap=yes@1@f", "ionc1 dev=a,KernelMap=yes@1@f,",
		"ionc1 dev=a,KernelMap=yes@1@f;", "ionc1 dev=a;dev=b,", "ionc1 dev=a;dev=b;",
		"ionc1 ,", "ionc1 dev=a,;",
		/* a good constraint before a bad one: nothing is taken */
		"ionc1 dev=a;dev=b,Foo=1@0@f", "ionc1 dev=a,KernelMap=yes@1@f;dev=%00",
	};
	struct ion_alloc_config *config = config_of((const char *const[]){ "video0", NULL });
	struct ion_alloc_config *empty = config_of(NULL);
	char *text = NULL;

	(void)state;
	/* A config with a local device and a remote one, and an empty one. */
	assert_int_equal(ion_alloc_config_add_constraints(
				 config, "ionc1 dev=cam2,KernelMap=yes@3@f.conf"), 0);
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		assert_refused(config, bad[i]);
		assert_refused(empty, bad[i]);
	}
	assert_string_equal(serialize(empty), "ionc1 ");

	/* The arguments. */
	assert_int_equal(ion_alloc_config_add_constraints(NULL, "ionc1 "), -EINVAL);
	assert_int_equal(ion_alloc_config_add_constraints(config, NULL), -EINVAL);
	assert_int_equal(ion_alloc_config_serialize(NULL, &text), -EINVAL);
	assert_null(text);
	assert_int_equal(ion_alloc_config_serialize(config, NULL), -EINVAL);
}

/* ---- what a peer may send: restrictions, never spending ---- */

/* A config of one peer's constraint, text, held by the fixture; NULL
 * (and nothing taken) where the text is refused. */
static struct ion_alloc_config *peer(const char *text)
{
	struct ion_alloc_config *config = config_of(NULL);

	return ion_alloc_config_add_constraints(config, text) == 0 ? config : NULL;
}

/* The candidates of a peer's one constraint, text, which must be taken. */
static const char *peer_candidates(const char *text)
{
	struct ion_alloc_config *config = peer(text);

	if (!config)
		fail_msg("'%s' refused", text);
	return candidates(solve(config));
}

/*
 * Each key a peer may send is taken and only narrows the heaps: never one
 * more than a request without it has ("system udmabuf memfd reserved";
 * memfd is out for any device).  Pool, a key that would make the
 * receiver keep buffers ready, is refused whole, and the serializer never
 * writes it.
 */
static void test_peer_keys(void **state)
{
	static const char *const pools[] = {
		"ionc1 dev=p,Pool=1024x1G%201024x2G%201024x4G@1@f",
		"ionc1 dev=p,Pool=4x1M@1@f",
		"ionc1 dev=p,KernelMap=yes@1@f,Pool=1x4K@2@f",
		"ionc1 dev=q;dev=p,Pool=1x4K@2@f",
	};
	struct ion_alloc_config *cam = config_of((const char *const[]){ "cam", NULL });
	struct ion_alloc_config *mixed = config_of((const char *const[]){ "video0", NULL });

	(void)state;
	assert_string_equal(peer_candidates("ionc1 dev=p"), "system udmabuf reserved");
	assert_string_equal(peer_candidates("ionc1 dev=p,Heaps=reserved%20nosuch@1@f"), "reserved");
	assert_string_equal(peer_candidates("ionc1 dev=p,Contiguous=yes@1@f"), "reserved");
	assert_string_equal(peer_candidates("ionc1 dev=p,Contiguous=no@1@f"), "system udmabuf reserved");
	assert_string_equal(peer_candidates("ionc1 dev=p,AddressBits=12@1@f"), "");
	assert_string_equal(peer_candidates("ionc1 dev=p,Cache=uncached@1@f"), "");
	assert_string_equal(peer_candidates("ionc1 dev=p,Cache=cached@1@f"), "system udmabuf reserved");
	assert_string_equal(peer_candidates("ionc1 dev=p,Alignment=1G@1@f"), "");
	assert_string_equal(peer_candidates("ionc1 dev=p,KernelMap=yes@1@f"), "system reserved");
	assert_string_equal(peer_candidates("ionc1 dev=p,OwnBuffersOnly=yes@1@f"), "");
	/* own= lifts the peer's own verdict on its own heap, no other's. */
	assert_string_equal(peer_candidates("ionc1 dev=p,own=reserved,OwnBuffersOnly=yes@1@f"),
			    "reserved");
	assert_string_equal(peer_candidates("ionc1 dev=p,own=memfd"), "system udmabuf memfd reserved");
	/* uncached= orders what the constraints leave, and adds nothing. */
	assert_string_equal(peer_candidates("ionc1 dev=p,uncached=f"), "system udmabuf reserved");
	/* ... and AND-ed with a device of this process, a peer's key never
	 * lets in what the device keeps out. */
	assert_int_equal(ion_alloc_config_add_constraints(mixed, "ionc1 dev=p,own=system"), 0);
	assert_string_equal(candidates(solve(mixed)), "reserved");

	/* Pool: refused, nothing taken, at any place in the text. */
	for (size_t i = 0; i < sizeof(pools) / sizeof(pools[0]); i++) {
		assert_refused(cam, pools[i]);
		assert_null(peer(pools[i]));
	}
	/* The board's hint stays this process's: its text carries none, and
	 * the text is taken. */
	assert_null(strstr(serialize(cam), "Pool"));
	assert_non_null(peer(serialize(cam)));
}

/* A pool made from a solution with a peer's constraint keeps no buffer
 * ready on the peer's word: it has only the hints its own caller sets. */
static void test_peer_pool_hints(void **state)
{
	struct ion_alloc_config *config = config_of(NULL);
	unsigned long long refills, held;
	struct ion_pool *pool;
	int r;

	(void)state;
	/* own=memfd: the one heap that allocates on a fake tree fits it. */
	assert_int_equal(ion_alloc_config_set_heap(config, "memfd"), 0);
	assert_int_equal(ion_alloc_config_add_constraints(config, "ionc1 dev=p,own=memfd"), 0);
	r = ion_alloc_config_add_constraints(config, "ionc1 dev=q,own=memfd,Pool=4x1M@1@f");
	assert_int_equal(ion_pool_new(solve(config), &pool), 0);
	r = ion_pool_prefill(pool) < 0 ? -EIO : r;
	refills = ion_pool_get_stat(pool, ION_POOL_STAT_REFILLS);
	held = ion_pool_get_stat(pool, ION_POOL_STAT_BYTES_HELD);
	ion_pool_unref(pool);
	assert_int_equal(refills, 0);
	assert_int_equal(held, 0);
	assert_int_equal(r, -EINVAL);
}

/* ---- a peer's bytes, wherever they are shown ---- */

/* The first byte of s that no log line or terminal should get raw (a
 * control byte: below 0x20, or DEL), or NULL. */
static const char *control_byte(const char *s)
{
	for (; *s; s++)
		if ((unsigned char)*s < 0x20 || *s == 0x7f)
			return s;
	return NULL;
}

/* Every log message, at LOG_DEBUG, checked for control bytes; errors
 * still fail the test as in every other. */
static unsigned int n_logged;
static char log_control[128];

__attribute__((format(printf, 6, 0)))
static void log_checked(struct ion_ctx *ctx, int priority, const char *file, int line,
			const char *fn, const char *format, va_list args)
{
	char *message;
	va_list copy;

	va_copy(copy, args);
	if (vasprintf(&message, format, copy) >= 0) {
		n_logged++;
		if (control_byte(message) && !log_control[0])
			snprintf(log_control, sizeof(log_control), "%s", message);
		free(message);
	}
	va_end(copy);
	log_errors(ctx, priority, file, line, fn, format, args);
}

/* Every rejection reason of sol: none with a control byte. */
static void assert_reasons_shown_safe(const struct ion_solution *sol)
{
	int n = ion_solution_get_rejection_count(sol);

	assert_true(n > 0);
	for (int i = 0; i < n; i++) {
		const struct ion_heap *h;
		const struct ion_device *d;
		const char *reason, *bad;

		assert_int_equal(ion_solution_get_rejection(sol, (unsigned int)i, &h, &d, &reason), 0);
		if ((bad = control_byte(reason)))
			fail_msg("byte %#x at %zu of the reason for %s", (unsigned char)*bad,
				 (size_t)(bad - reason), ion_heap_get_name(h));
	}
}

/* The reason that heap was rejected with that contains part. */
static bool has_reason(const struct ion_solution *sol, const char *heap, const char *part)
{
	for (int i = 0; i < ion_solution_get_rejection_count(sol); i++) {
		const struct ion_heap *h;
		const struct ion_device *d;
		const char *reason;

		if (ion_solution_get_rejection(sol, (unsigned int)i, &h, &d, &reason) == 0 &&
		    strcmp(ion_heap_get_name(h), heap) == 0 && contains(reason, part))
			return true;
	}
	return false;
}

/*
 * ESC, CR, LF and DEL from a peer, in device names, an own heap, a Heaps
 * value and sources, reach no reason and no log line raw: the receiver
 * keeps them as \xhh, as it does what is no UTF-8 and the C1 controls
 * (0xc2 0x9b is CSI); UTF-8 stays.  Written again, the escaped text is
 * taken to itself: relayed from process to process it never grows.
 */
static void test_peer_text_escaped(void **state)
{
	static const char text[] =
		"ionc1 dev=a%1B%5B31m%0D%0A%7F,own=g%1B%0A%7F,OwnBuffersOnly=yes@1@o%1B%0D%0A%7F"
		";dev=b%0A,Heaps=reserved%20x%1B%0A%7F@2@h%1B%0D"
		";dev=c,Contiguous=yes@3@%1B%5D0%3Btitle%07%0D%0A%7F"
		/* é, U+1F600; CSI, a lead byte without its continuation,
		 * an overlong '/', a surrogate, past U+10FFFF, a five-byte
		 * form, a truncated one */
		";dev=u%C3%A9%F0%9F%98%80%C2%9B%C3%28%C0%AF%ED%A0%80%F4%90%80%80%F8%90%80%80%E2%82"
		",KernelMap=yes@4@f";
	struct ion_alloc_config *config = config_of(NULL), *again = config_of(NULL);
	struct ion_solution *sol;
	const char *once;
	int fd = -1;

	(void)state;
	n_logged = 0;
	log_control[0] = '\0';
	ion_ctx_set_log_fn(fx->ctx, log_checked);
	ion_ctx_set_log_priority(fx->ctx, LOG_DEBUG);
	assert_int_equal(ion_ctx_rescan(fx->ctx), 0);
	assert_int_equal(ion_alloc_config_add_constraints(config, text), 0);
	sol = solve(config);
	assert_reasons_shown_safe(sol);
	/* Each of them, as the receiver shows it. */
	assert_true(has_reason(sol, "system",
			       "a\\x1b[31m\\x0d\\x0a\\x7f takes only buffers of its own DRM device, "
			       "heap g\\x1b\\x0a\\x7f (OwnBuffersOnly, o\\x1b\\x0d\\x0a\\x7f:1)"));
	assert_true(has_reason(sol, "system",
			       "b\\x0a takes only the heaps reserved x\\x1b\\x0a\\x7f (Heaps, h\\x1b\\x0d:2)"));
	assert_true(has_reason(sol, "system", "(Contiguous, \\x1b]0;title\\x07\\x0d\\x0a\\x7f:3)"));
	assert_true(has_reason(sol, "udmabuf",
			       "u\xc3\xa9\xf0\x9f\x98\x80\\xc2\\x9b\\xc3(\\xc0\\xaf\\xed\\xa0\\x80"
			       "\\xf4\\x90\\x80\\x80\\xf8\\x90\\x80\\x80\\xe2\\x82 maps buffers in the kernel"));
	/* Allocating and pooling for them logs nothing raw either. */
	assert_int_equal(ion_alloc_config_set_heap(again, "memfd"), 0);
	assert_int_equal(ion_alloc_config_add_constraints(again, "ionc1 dev=m%1B%0A,own=memfd"), 0);
	assert_int_equal(ion_solution_alloc(solve(again), &fd, NULL), 0);
	close(fd);
	assert_true(n_logged > 0);
	if (log_control[0])
		fail_msg("a log line with a control byte: %s", log_control);

	/* Written again: the escapes as text, and then the same for ever. */
	once = serialize(config);
	assert_null(control_byte(once));
	assert_true(contains(once, "dev=a%5Cx1b%5B31m%5Cx0d%5Cx0a%5Cx7f,"));
	again = config_of(NULL);
	assert_int_equal(ion_alloc_config_add_constraints(again, once), 0);
	assert_string_equal(serialize(again), once);
	assert_string_equal(candidates(solve(again)), candidates(sol));
	assert_int_equal(ion_solution_get_rejection_count(solve(again)),
			 ion_solution_get_rejection_count(sol));
}

/* A text of n constraints, each "dev=" and then name. */
static char *many_named(unsigned int n, const char *name)
{
	char *text = malloc(8 + n * (strlen(name) + 6)), *w = text;

	assert_non_null(text);
	w += sprintf(w, "ionc1 ");
	for (unsigned int i = 0; i < n; i++)
		w += sprintf(w, "%sdev=%s", i ? ";" : "", name);
	return text;
}

/* Hostile texts at the limits: NULL; 64 KiB of ESC in a device name
 * (taken, and shown escaped), one byte more (refused); 64 constraints of
 * control bytes (taken), 65 (refused). */
static void test_hostile_limits(void **state)
{
	struct ion_alloc_config *config = config_of(NULL), *held = config_of(NULL);
	const size_t limit = 64 * 1024, head = strlen("ionc1 dev=");
	char *text = hold((void **)fx->texts, MAX_HELD * 2, malloc(limit + 2)), *back = NULL;
	const char *before;

	(void)state;
	assert_int_equal(ion_alloc_config_add_constraints(held, "ionc1 dev=p,KernelMap=yes@1@f"), 0);
	before = serialize(held);
	assert_int_equal(ion_alloc_config_add_constraints(held, NULL), -EINVAL);
	assert_int_equal(ion_alloc_config_add_constraints(NULL, "ionc1 dev=%1B"), -EINVAL);
	assert_string_equal(serialize(held), before);

	/* "ionc1 dev=" and 21842 ESCs: exactly 64 KiB. */
	assert_non_null(text);
	assert_int_equal((limit - head) % 3, 0);
	strcpy(text, "ionc1 dev=");
	for (size_t i = head; i < limit; i += 3)
		memcpy(text + i, "%1B", 3);
	text[limit] = '\0';
	assert_int_equal(ion_alloc_config_add_constraints(config, text), 0);
	assert_reasons_shown_safe(solve(config));
	/* Written again it would be twice as long: the serializer refuses. */
	assert_int_equal(ion_alloc_config_serialize(config, &back), -E2BIG);
	assert_null(back);
	text[limit] = 'x';
	text[limit + 1] = '\0';
	assert_refused(held, text);

	text = hold((void **)fx->texts, MAX_HELD * 2, many_named(65, "%1B%0D%0A%7F"));
	assert_refused(held, text);
	*strrchr(text, ';') = '\0';
	config = config_of(NULL);
	assert_int_equal(ion_alloc_config_add_constraints(config, text), 0);
	assert_reasons_shown_safe(solve(config));
}

/* A text of n constraints "dev=dN", in a malloc'ed buffer. */
static char *many(unsigned int n)
{
	char *text = malloc(8 + n * 12), *w = text;

	assert_non_null(text);
	w += sprintf(w, "ionc1 ");
	for (unsigned int i = 0; i < n; i++)
		w += sprintf(w, "%sdev=d%u", i ? ";" : "", i);
	return text;
}

/* A text of exactly len bytes: one constraint whose source fills it. */
static char *sized(size_t len)
{
	const char *head = "ionc1 dev=big,KernelMap=yes@1@";
	char *text = malloc(len + 1);

	assert_non_null(text);
	assert_true(len > strlen(head));
	strcpy(text, head);
	memset(text + strlen(head), 's', len - strlen(head));
	text[len] = '\0';
	return text;
}

/* At most 64 constraints and 64 KiB of text; one more is -EINVAL. */
static void test_limits(void **state)
{
	struct ion_alloc_config *config = config_of((const char *const[]){ "video0", NULL });
	struct ion_alloc_config *taken = config_of(NULL);
	char *text;
	struct parsed p[64] = { 0 };

	(void)state;
	text = hold((void **)fx->texts, MAX_HELD * 2, many(65));
	assert_refused(config, text);
	assert_refused(taken, text);
	*strrchr(text, ';') = '\0';
	assert_int_equal(ion_alloc_config_add_constraints(taken, text), 0);
	assert_int_equal(read_text(serialize(taken), p, 64), 64);
	assert_string_equal(p[63].dev, "d63");
	parsed_free(p, 64);

	text = hold((void **)fx->texts, MAX_HELD * 2, sized(64 * 1024 + 1));
	assert_refused(config, text);
	taken = config_of(NULL);
	text[64 * 1024] = '\0';
	assert_int_equal(ion_alloc_config_add_constraints(taken, text), 0);
	assert_string_equal(serialize(taken), text);
}

/*
 * What serialize() gives, add_constraints() takes: the header promises
 * that the text is for another process to parse.  A config may hold more
 * constraints than one text may carry (two texts of 40 constraints, or of
 * 40 KiB each, AND-ed), or a text at the size limit may serialize longer
 * than it came; then either serializing must fail or the text must parse.
 */
/* Serializes config and gives the text to a new config: "" when it is
 * taken (or serializing refused), else what went wrong. */
static const char *reparse(struct ion_alloc_config *config, const char *what)
{
	static char msg[256];
	char *text = NULL;
	int r = ion_alloc_config_serialize(config, &text);

	if (r != 0)
		return "";
	hold((void **)fx->texts, MAX_HELD * 2, text);
	r = ion_alloc_config_add_constraints(config_of(NULL), text);
	if (r == 0)
		return "";
	snprintf(msg, sizeof(msg), "%s serialize to %zu bytes, and the text is refused: %s\n",
		 what, strlen(text), strerror(-r));
	return msg;
}

static void test_serialized_text_parses(void **state)
{
	struct ion_alloc_config *config = config_of(NULL);
	char *forty = hold((void **)fx->texts, MAX_HELD * 2, many(40));
	char *big = hold((void **)fx->texts, MAX_HELD * 2, sized(40 * 1024));
	char failures[1024] = "";
	char *text = NULL;

	(void)state;
	char *before = NULL, *after = NULL;

	/* A set never grows past what one text carries: the second 40 are
	 * refused whole, and the first stay as they were. */
	assert_int_equal(ion_alloc_config_add_constraints(config, forty), 0);
	assert_int_equal(ion_alloc_config_serialize(config, &before), 0);
	hold((void **)fx->texts, MAX_HELD * 2, before);
	assert_int_equal(ion_alloc_config_add_constraints(config, forty), -E2BIG);
	assert_int_equal(ion_alloc_config_serialize(config, &after), 0);
	hold((void **)fx->texts, MAX_HELD * 2, after);
	assert_string_equal(before, after);
	strcat(failures, reparse(config, "two texts of 40 constraints"));

	config = config_of(NULL);
	/* Two texts of 40 KiB are taken (few constraints), and the
	 * serializer then refuses rather than write 80 KiB. */
	assert_int_equal(ion_alloc_config_add_constraints(config, big), 0);
	assert_int_equal(ion_alloc_config_add_constraints(config, big), 0);
	assert_int_equal(ion_alloc_config_serialize(config, &text), -E2BIG);
	assert_null(text);
	strcat(failures, reparse(config, "two texts of 40 KiB"));

	/* One text of exactly 64 KiB, taken, whose value the serializer
	 * writes longer ("1" as "yes"). */
	config = config_of(NULL);
	big = hold((void **)fx->texts, MAX_HELD * 2, sized(64 * 1024));
	memcpy(big + strlen("ionc1 dev=big,"), "Contiguous=1@1@s", strlen("Contiguous=1@1@s"));
	assert_int_equal(ion_alloc_config_add_constraints(config, big), 0);
	strcat(failures, reparse(config, "a text of 64 KiB with Contiguous=1, taken, would"));
	if (failures[0])
		fail_msg("%s", failures);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_empty_set, setup, teardown),
		cmocka_unit_test_setup_teardown(test_every_key, setup, teardown),
		cmocka_unit_test_setup_teardown(test_odd_characters, setup, teardown),
		cmocka_unit_test_setup_teardown(test_remote_rejection, setup, teardown),
		cmocka_unit_test_setup_teardown(test_and_local_remote, setup, teardown),
		cmocka_unit_test_setup_teardown(test_stable, setup, teardown),
		cmocka_unit_test_setup_teardown(test_malformed, setup, teardown),
		cmocka_unit_test_setup_teardown(test_peer_keys, setup, teardown),
		cmocka_unit_test_setup_teardown(test_peer_pool_hints, setup, teardown),
		cmocka_unit_test_setup_teardown(test_peer_text_escaped, setup, teardown),
		cmocka_unit_test_setup_teardown(test_hostile_limits, setup, teardown),
		cmocka_unit_test_setup_teardown(test_limits, setup, teardown),
		cmocka_unit_test_setup_teardown(test_serialized_text_parses, setup, teardown),
	};

	return cmocka_run_group_tests(tests, group_setup, group_teardown);
}
