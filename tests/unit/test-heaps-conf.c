// SPDX-License-Identifier: MIT
/*
 * The heaps.d parser (src/heaps-conf.c) and the board's identity
 * (src/board.c): every key and value, every message with its file:line,
 * skipping only what is broken, board scopes, layered folders, folding,
 * device matching, cookies, formatting, and files that are not files.
 */
#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "src/heaps-conf.h"
#include "testlib.h"

#define MAX_ERRORS 32

struct state {
	char dir[64];
	struct fd_table fds;
	unsigned int n_errors;
	char errors[MAX_ERRORS][640];
};

static void on_error(void *userdata, const char *file, unsigned int line,
		     const char *message)
{
	struct state *st = userdata;

	if (st->n_errors < MAX_ERRORS)
		snprintf(st->errors[st->n_errors], sizeof(st->errors[0]), "%s:%u: %s",
			 file, line, message);
	st->n_errors++;
}

static int setup(void **state)
{
	struct state *st = calloc(1, sizeof(*st));

	strcpy(st->dir, "/tmp/libion-conf-XXXXXX");
	assert_non_null(mkdtemp(st->dir));
	fd_table_read(&st->fds);
	*state = st;
	return 0;
}

static int teardown(void **state)
{
	struct state *st = *state;

	fd_table_assert_same(&st->fds);
	test_remove_tree(st->dir);
	free(st);
	return 0;
}

/* The errors reported since the last call, exactly and in order. */
static void expect_errors(struct state *st, const char *const *expected)
{
	unsigned int n = 0;

	for (; expected[n]; n++) {
		if (n >= st->n_errors)
			fail_msg("missing error: %s", expected[n]);
		assert_string_equal(st->errors[n], expected[n]);
	}
	for (unsigned int i = n; i < st->n_errors && i < MAX_ERRORS; i++)
		print_error("unexpected error: %s\n", st->errors[i]);
	assert_int_equal(st->n_errors, n);
	st->n_errors = 0;
}

#define EXPECT_ERRORS(st, ...) expect_errors(st, (const char *const[]){ __VA_ARGS__, NULL })
#define EXPECT_NO_ERRORS(st) expect_errors(st, (const char *const[]){ NULL })

static char *rpi4_compatible[] = { "raspberrypi,4-model-b", "brcm,bcm2711", NULL };
static const struct ion_board_facts rpi4 = {
	.compatible = rpi4_compatible,
	.model = "Raspberry Pi 4 Model B Rev 1.4",
};
static char *no_compatible[] = { NULL };
static const struct ion_board_facts q35 = {
	.compatible = no_compatible,
	.dmi_vendor = "QEMU",
	.dmi_product = "Standard PC (Q35 + ICH9, 2009)",
	.dmi_board = "Q35 board",
};

static struct ion_conf *load_len(struct state *st, const char *text, size_t len,
				 const struct ion_board_facts *board)
{
	struct ion_conf *conf = NULL;

	/* Every error of an earlier load was checked. */
	assert_int_equal(st->n_errors, 0);
	assert_int_equal(ion_conf_load_string("test.conf", text, len, board, on_error,
					      st, &conf), 0);
	assert_non_null(conf);
	assert_int_equal(ion_conf_error_count(conf), st->n_errors);
	return conf;
}

static struct ion_conf *load(struct state *st, const char *text,
			     const struct ion_board_facts *board)
{
	return load_len(st, text, strlen(text), board);
}

/* The formatted value of key after folding heap name, or NULL. */
static char *heap_value(const struct ion_conf *conf, const char *heap,
			enum ion_conf_key key, unsigned int *ret_line)
{
	struct ion_conf_props props = { 0 };
	char *s;

	assert_true(ion_conf_apply_heap(conf, heap, &props) >= 0);
	s = ion_conf_field_format(key, &props.f[key]);
	if (ret_line)
		*ret_line = props.f[key].src.line;
	ion_conf_props_clear(&props);
	return s;
}

static void assert_heap_value(const struct ion_conf *conf, const char *heap,
			      enum ion_conf_key key, const char *expected,
			      unsigned int line)
{
	unsigned int got_line = 0;
	char *s = heap_value(conf, heap, key, &got_line);

	if (!expected) {
		assert_null(s);
		return;
	}
	assert_non_null(s);
	assert_string_equal(s, expected);
	assert_int_equal(got_line, line);
	free(s);
}

/* The [Heap] names that apply, blank-joined. */
static void assert_heaps(const struct ion_conf *conf, const char *expected)
{
	char got[512] = "";

	for (size_t i = 0; i < ion_conf_heap_count(conf); i++) {
		if (i)
			strcat(got, " ");
		strcat(got, ion_conf_heap_name(conf, i));
	}
	assert_string_equal(got, expected);
	assert_null(ion_conf_heap_name(conf, ion_conf_heap_count(conf)));
}

static void write_file(const char *dir, const char *name, const char *text)
{
	char path[256];
	FILE *f;

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	f = fopen(path, "we");
	assert_non_null(f);
	assert_int_equal(fwrite(text, 1, strlen(text), f), strlen(text));
	assert_int_equal(fclose(f), 0);
}

static void make_dir(const char *dir, const char *name)
{
	char path[256];

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	assert_int_equal(mkdir(path, 0755), 0);
}

static void in_dir(char *buf, size_t size, const char *dir, const char *name)
{
	snprintf(buf, size, "%s/%s", dir, name);
}

/* ---- keys and values ---- */

static void test_heap_keys(void **state)
{
	struct state *st = *state;
	struct ion_conf_props props = { 0 };
	struct ion_conf *conf;
	const struct ion_conf_field *f = props.f;

	conf = load(st,
		    "[Heap linux,cma]\n"
		    "Aliases = cma vidbuf_cached\n"
		    "Memory = cma-0\n"
		    "Contiguous = yes\n"
		    "Cache = uncached\n"
		    "AddressBits = 32\n"
		    "Alignment = 64K\n"
		    "CPUAccess = no\n"
		    "KernelMap = on\n"
		    "Preference = -5\n"
		    "AndroidId = 4\n"
		    "MaxSize = 256M\n"
		    "Pool = 8x1M 4x8M\n", NULL);
	EXPECT_NO_ERRORS(st);
	assert_heaps(conf, "linux,cma");
	assert_int_equal(ion_conf_apply_heap(conf, "linux,cma", &props), 1);
	assert_true(f[ION_KEY_ALIASES].set);
	assert_int_equal(f[ION_KEY_ALIASES].v.list.n, 2);
	assert_string_equal(f[ION_KEY_ALIASES].v.list.v[0], "cma");
	assert_string_equal(f[ION_KEY_ALIASES].v.list.v[1], "vidbuf_cached");
	assert_null(f[ION_KEY_ALIASES].v.list.v[2]);
	assert_string_equal(f[ION_KEY_ALIASES].src.file, "test.conf");
	assert_int_equal(f[ION_KEY_ALIASES].src.line, 2);
	assert_string_equal(f[ION_KEY_MEMORY].v.s, "cma-0");
	assert_true(f[ION_KEY_CONTIGUOUS].v.b);
	assert_int_equal(f[ION_KEY_CACHE].v.u, ION_CACHE_UNCACHED);
	assert_int_equal(f[ION_KEY_ADDRESS_BITS].v.u, 32);
	assert_int_equal(f[ION_KEY_ALIGNMENT].v.u, 64 * 1024);
	assert_true(f[ION_KEY_CPU_ACCESS].set);
	assert_false(f[ION_KEY_CPU_ACCESS].v.b);
	assert_true(f[ION_KEY_KERNEL_MAP].v.b);
	assert_int_equal(f[ION_KEY_PREFERENCE].v.i, -5);
	assert_int_equal(f[ION_KEY_ANDROID_ID].v.u, 4);
	assert_int_equal(f[ION_KEY_MAX_SIZE].v.u, 256 << 20);
	assert_int_equal(f[ION_KEY_POOL].v.pool.n, 2);
	assert_int_equal(f[ION_KEY_POOL].v.pool.v[0].count, 8);
	assert_int_equal(f[ION_KEY_POOL].v.pool.v[0].size, 1 << 20);
	assert_int_equal(f[ION_KEY_POOL].v.pool.v[1].count, 4);
	assert_int_equal(f[ION_KEY_POOL].v.pool.v[1].size, 8 << 20);
	assert_int_equal(f[ION_KEY_POOL].src.line, 13);
	/* Keys no section set stay unset; device keys are not heap keys. */
	assert_false(f[ION_KEY_HEAPS].set);
	assert_false(f[ION_KEY_OWN_BUFFERS_ONLY].set);
	ion_conf_props_clear(&props);
	assert_false(props.f[ION_KEY_ALIASES].set);
	assert_null(props.f[ION_KEY_ALIASES].v.list.v);
	/* An exact name: no alias, no other heap. */
	assert_int_equal(ion_conf_apply_heap(conf, "cma", &props), 0);
	assert_int_equal(ion_conf_apply_heap(conf, "linux", &props), 0);
	ion_conf_free(conf);
}

static void test_device_keys(void **state)
{
	struct state *st = *state;
	struct ion_conf_props props = { 0 };
	struct ion_conf *conf;
	const struct ion_conf_field *f = props.f;

	conf = load(st,
		    "[Device vivid-contig]\n"
		    "MatchSysfsPath = /sys/devices/platform/vivid.0*\n"
		    "MatchSubsystem = video4linux\n"
		    "MatchDriver = vivid\n"
		    "MatchOFCompatible = vendor,*\n"
		    "MatchUdevProperty = ID_PATH=platform-vivid.0\n"
		    "MatchDRMDriver = vc4\n"
		    "MatchV4L2Card = vivid\n"
		    "Heaps = linux,cma reserved\n"
		    "Contiguous = true\n"
		    "Cache = any\n"
		    "AddressBits = 32\n"
		    "Alignment = 4K\n"
		    "KernelMap = 0\n"
		    "OwnBuffersOnly = YES\n"
		    "Pool = 4x1M\n", NULL);
	EXPECT_NO_ERRORS(st);
	assert_heaps(conf, "");
	assert_int_equal(ion_conf_apply_device_name(conf, "vivid-contig", &props), 1);
	assert_int_equal(f[ION_KEY_HEAPS].v.list.n, 2);
	assert_string_equal(f[ION_KEY_HEAPS].v.list.v[0], "linux,cma");
	assert_string_equal(f[ION_KEY_HEAPS].v.list.v[1], "reserved");
	assert_true(f[ION_KEY_CONTIGUOUS].v.b);
	assert_true(f[ION_KEY_CACHE].set);
	assert_int_equal(f[ION_KEY_CACHE].v.u, ION_CACHE_ANY);
	assert_int_equal(f[ION_KEY_ADDRESS_BITS].v.u, 32);
	assert_int_equal(f[ION_KEY_ALIGNMENT].v.u, 4096);
	assert_true(f[ION_KEY_KERNEL_MAP].set);
	assert_false(f[ION_KEY_KERNEL_MAP].v.b);
	assert_true(f[ION_KEY_OWN_BUFFERS_ONLY].v.b);
	assert_int_equal(f[ION_KEY_OWN_BUFFERS_ONLY].src.line, 15);
	assert_int_equal(f[ION_KEY_POOL].v.pool.n, 1);
	/* Match keys pick devices; they are not properties. */
	for (int k = ION_KEY_MATCH_SYSFS_PATH; k <= ION_KEY_MATCH_NAME; k++)
		assert_false(f[k].set);
	ion_conf_props_clear(&props);
	ion_conf_free(conf);
}

static void test_board_keys(void **state)
{
	struct state *st = *state;
	struct ion_conf_src src = { 0 };
	struct ion_conf *conf;

	conf = load(st,
		    "[Board rpi4]\n"
		    "MatchCompatible = brcm,bcm2711\n"
		    "MatchModel = Raspberry Pi 4*\n"
		    "CookieAttribute = ion_requirements\n"
		    "[Board qemu]\n"
		    "MatchDMIVendor = QEMU\n"
		    "MatchDMIProduct = Standard PC*\n"
		    "MatchDMIBoard = Q35 board\n"
		    "CookieAttribute = qemu_cookie\n", &rpi4);
	EXPECT_NO_ERRORS(st);
	assert_int_equal(ion_conf_board_count(conf), 1);
	assert_string_equal(ion_conf_board(conf, 0, &src), "rpi4");
	assert_string_equal(src.file, "test.conf");
	assert_int_equal(src.line, 1);
	assert_null(ion_conf_board(conf, 1, &src));
	/* Only the matched board's attribute counts. */
	src.line = 0;
	assert_string_equal(ion_conf_cookie_attribute(conf, &src), "ion_requirements");
	assert_int_equal(src.line, 4);
	ion_conf_free(conf);

	/* Of two matched boards the later wins; "Key =" clears it. */
	conf = load(st,
		    "[Board a]\nMatchModel = *\nCookieAttribute = first\n"
		    "[Board b]\nMatchModel = Raspberry*\nCookieAttribute = second\n", &rpi4);
	assert_string_equal(ion_conf_cookie_attribute(conf, &src), "second");
	assert_int_equal(src.line, 6);
	ion_conf_free(conf);
	conf = load(st,
		    "[Board a]\nMatchModel = *\nCookieAttribute = first\n"
		    "[Board b]\nMatchModel = *\nCookieAttribute =\n", &rpi4);
	EXPECT_NO_ERRORS(st);
	assert_int_equal(ion_conf_board_count(conf), 2);
	assert_null(ion_conf_cookie_attribute(conf, &src));
	ion_conf_free(conf);
}

struct bad_value {
	const char *section;
	const char *key;
	const char *value;
	const char *why;
};

static const char why_bool[] = "expected yes/no, true/false, on/off or 1/0";
static const char why_pool[] =
	"expected COUNTxSIZE items (COUNT 1 to 1024, SIZE above 0), such as 8x1M";

static const struct bad_value bad_values[] = {
	{ "Heap h", "Contiguous", "maybe", why_bool },
	{ "Heap h", "Contiguous", "yes please", why_bool },
	{ "Heap h", "Contiguous", "2", why_bool },
	{ "Heap h", "CPUAccess", "nope", why_bool },
	{ "Heap h", "KernelMap", "y", why_bool },
	{ "Device d", "OwnBuffersOnly", "perhaps", why_bool },
	{ "Heap h", "Cache", "write-combine", "expected cached, uncached or any" },
	{ "Device d", "Cache", "uncached cached", "expected cached, uncached or any" },
	{ "Heap h", "AddressBits", "0", "expected a number of bits from 1 to 64" },
	{ "Heap h", "AddressBits", "65", "expected a number of bits from 1 to 64" },
	{ "Device d", "AddressBits", "32bit", "expected a number of bits from 1 to 64" },
	{ "Device d", "AddressBits", "-1", "expected a number of bits from 1 to 64" },
	{ "Device d", "AddressBits", "0x20", "expected a number of bits from 1 to 64" },
	{ "Heap h", "Alignment", "0", "expected a power of two, with an optional K, M or G suffix" },
	{ "Heap h", "Alignment", "3", "expected a power of two, with an optional K, M or G suffix" },
	{ "Device d", "Alignment", "6K", "expected a power of two, with an optional K, M or G suffix" },
	{ "Device d", "Alignment", "4KB", "expected a power of two, with an optional K, M or G suffix" },
	{ "Heap h", "Preference", "1001", "expected an integer from -1000 to 1000" },
	{ "Heap h", "Preference", "-1001", "expected an integer from -1000 to 1000" },
	{ "Heap h", "Preference", "+5", "expected an integer from -1000 to 1000" },
	{ "Heap h", "Preference", "--5", "expected an integer from -1000 to 1000" },
	{ "Heap h", "Preference", "- 5", "expected an integer from -1000 to 1000" },
	{ "Heap h", "Preference", "5.0", "expected an integer from -1000 to 1000" },
	{ "Heap h", "AndroidId", "32", "expected an ION heap id from 0 to 31" },
	{ "Heap h", "AndroidId", "-1", "expected an ION heap id from 0 to 31" },
	{ "Heap h", "MaxSize", "0", "expected a size above 0, with an optional K, M or G suffix" },
	{ "Heap h", "MaxSize", "1T", "expected a size above 0, with an optional K, M or G suffix" },
	{ "Heap h", "MaxSize", "12abc", "expected a size above 0, with an optional K, M or G suffix" },
	{ "Heap h", "MaxSize", "99999999999G", "expected a size above 0, with an optional K, M or G suffix" },
	{ "Heap h", "Pool", "0x1M", why_pool },
	{ "Heap h", "Pool", "1025x1M", why_pool },
	{ "Heap h", "Pool", "8x0", why_pool },
	{ "Heap h", "Pool", "8X1M", why_pool },
	{ "Heap h", "Pool", "x1M", why_pool },
	{ "Heap h", "Pool", "8x", why_pool },
	{ "Device d", "Pool", "8x1M,4x8M", why_pool },
	{ "Device d", "Pool", "4x8M 8*1M", why_pool },
	{ "Heap h", "Memory", "two words", "expected one word, without blanks" },
	{ "Board b", "CookieAttribute", "a/b", "expected a sysfs attribute name, without '/'" },
	{ "Board b", "CookieAttribute", "..", "expected a sysfs attribute name, without '/'" },
	{ "Board b", "CookieAttribute", "two words", "expected one word, without blanks" },
	{ "Device d", "MatchUdevProperty", "NOEQUALS", "expected PROPERTY=GLOB" },
	{ "Device d", "MatchUdevProperty", "=x", "expected PROPERTY=GLOB" },
	{ "Device d", "MatchUdevProperty", "ID BUS=x", "the property name before '=' has blanks" },
};

/* A bad value is reported at its line and skips its section, nothing more. */
static void test_bad_values(void **state)
{
	struct state *st = *state;

	for (size_t i = 0; i < sizeof(bad_values) / sizeof(bad_values[0]); i++) {
		const struct bad_value *b = &bad_values[i];
		struct ion_conf_props props = { 0 };
		struct ion_conf *conf;
		char text[256], expected[512];
		bool board = strncmp(b->section, "Board", 5) == 0;

		snprintf(text, sizeof(text), "[Heap ok]\n[%s]\n%s%s = %s\n[Heap ok2]\n",
			 b->section, board ? "MatchModel = *\n" : "", b->key, b->value);
		snprintf(expected, sizeof(expected),
			 "test.conf:%d: invalid value '%s' for '%s' in [%s]: %s",
			 board ? 4 : 3, b->value, b->key, b->section, b->why);
		conf = load(st, text, &rpi4);
		if (board)
			EXPECT_ERRORS(st, expected,
				      "test.conf:2: [Board b] has errors: skipping it and the sections up to the next [Board]");
		else
			EXPECT_ERRORS(st, expected);
		assert_heaps(conf, board ? "ok" : "ok ok2");
		assert_int_equal(ion_conf_apply_heap(conf, "h", &props), 0);
		assert_int_equal(ion_conf_apply_device_name(conf, "d", &props), -ENOENT);
		assert_int_equal(ion_conf_board_count(conf), 0);
		ion_conf_free(conf);
	}
}

/* Edge values that are valid, through the parser called directly. */
static void test_field_parse(void **state)
{
	static const struct {
		enum ion_conf_key key;
		const char *value;
		uint64_t u;
	} good[] = {
		{ ION_KEY_ADDRESS_BITS, "1", 1 },
		{ ION_KEY_ADDRESS_BITS, "64", 64 },
		{ ION_KEY_ADDRESS_BITS, " 40\t", 40 },
		{ ION_KEY_ANDROID_ID, "0", 0 },
		{ ION_KEY_ANDROID_ID, "31", 31 },
		{ ION_KEY_ALIGNMENT, "1", 1 },
		{ ION_KEY_ALIGNMENT, "4096", 4096 },
		{ ION_KEY_ALIGNMENT, "1G", 1 << 30 },
		{ ION_KEY_MAX_SIZE, "1", 1 },
		{ ION_KEY_MAX_SIZE, "3g", UINT64_C(3) << 30 },
		{ ION_KEY_CACHE, "CACHED", ION_CACHE_CACHED },
		{ ION_KEY_CACHE, "Uncached", ION_CACHE_UNCACHED },
		{ ION_KEY_CACHE, "any", ION_CACHE_ANY },
	};
	static const char *const yes[] = { "yes", "YES", "True", "on", "1" };
	static const char *const no[] = { "no", "No", "FALSE", "Off", "0" };
	struct ion_conf_src src = { "x.conf", 7 };
	struct ion_conf_field f = { 0 };
	const char *why = NULL;

	(void)state;
	for (size_t i = 0; i < sizeof(good) / sizeof(good[0]); i++) {
		assert_int_equal(ion_conf_field_parse(good[i].key, good[i].value, src, &f, &why), 0);
		assert_true(f.set);
		assert_true(f.v.u == good[i].u);
		assert_int_equal(f.src.line, 7);
	}
	for (size_t i = 0; i < 5; i++) {
		assert_int_equal(ion_conf_field_parse(ION_KEY_CONTIGUOUS, yes[i], src, &f, &why), 0);
		assert_true(f.v.b);
		assert_int_equal(ion_conf_field_parse(ION_KEY_CONTIGUOUS, no[i], src, &f, &why), 0);
		assert_false(f.v.b);
	}
	assert_int_equal(ion_conf_field_parse(ION_KEY_PREFERENCE, "-1000", src, &f, &why), 0);
	assert_true(f.v.i == -1000);
	assert_int_equal(ion_conf_field_parse(ION_KEY_PREFERENCE, "1000", src, &f, &why), 0);
	assert_true(f.v.i == 1000);
	assert_int_equal(ion_conf_field_parse(ION_KEY_PREFERENCE, "-0", src, &f, &why), 0);
	assert_true(f.v.i == 0);
	assert_int_equal(ion_conf_field_parse(ION_KEY_POOL, "1x1 1024x1G", src, &f, &why), 0);
	assert_int_equal(f.v.pool.n, 2);
	assert_int_equal(f.v.pool.v[1].count, 1024);
	assert_true(f.v.pool.v[1].size == 1 << 30);
	/* A field is freed by its own key's rules: reused here, it is emptied. */
	free(f.v.pool.v);
	memset(&f, 0, sizeof(f));

	/* A value with '#' and '=' in it is the value: no trailing comments. */
	assert_int_equal(ion_conf_field_parse(ION_KEY_MATCH_UDEV_PROPERTY, "ID_X=a=b#c", src, &f, &why), 0);
	assert_string_equal(f.v.s, "ID_X=a=b#c");
	/* The field is replaced (the old string freed: valgrind says). */
	assert_int_equal(ion_conf_field_parse(ION_KEY_MATCH_UDEV_PROPERTY, "ID_Y=", src, &f, &why), 0);
	assert_string_equal(f.v.s, "ID_Y=");

	/* A failure leaves the field and says why. */
	why = NULL;
	assert_int_equal(ion_conf_field_parse(ION_KEY_MATCH_UDEV_PROPERTY, "  ", src, &f, &why), -EINVAL);
	assert_string_equal(why, "a value is needed");
	assert_string_equal(f.v.s, "ID_Y=");
	assert_int_equal(ion_conf_field_parse(ION_KEY_COUNT, "1", src, &f, &why), -EINVAL);
	assert_string_equal(f.v.s, "ID_Y=");
	free(f.v.s);
}

/* ---- messages ---- */

static void test_error_messages(void **state)
{
	struct state *st = *state;
	struct ion_conf_props props = { 0 };
	struct ion_conf *conf;

	conf = load(st,
		    "Contiguous = yes\n"		/* 1 */
		    "[Heap a]\n"
		    "Contigous = yes\n"
		    "[Heap b]\n"
		    "Heaps = x\n"			/* 5 */
		    "[Heap c]\n"
		    "Contiguous = yes\n"
		    "Contiguous = no\n"
		    "[Heap d]\n"
		    "Contiguous += yes\n"		/* 10 */
		    "[Device e]\n"
		    "MatchDriver += x\n"
		    "MatchDriver =\n"
		    "Heaps +=\n"
		    "just words\n"			/* 15 */
		    "= value\n"
		    "[Heap]\n"
		    "[Heap a b]\n"
		    "[Heap a]b]\n"
		    "[Heap x\n"				/* 20 */
		    "[Device ok]\n"
		    "Heaps = system\n"
		    "[Heap f]\n"
		    "Cache =\n"
		    "Cache = cached\n"			/* 25 */
		    "[Heap g]\n"
		    "MatchModel = *\n"
		    "[Board z]\n"
		    "MatchModel = *\n"
		    "Preference = 1\n", &rpi4);	/* 30 */
	EXPECT_ERRORS(st,
		"test.conf:1: line before any section header",
		"test.conf:3: unknown key 'Contigous' in [Heap a]",
		"test.conf:5: key 'Heaps' does not belong in [Heap b]",
		"test.conf:8: 'Contiguous' is set twice in [Heap c] (first on line 7)",
		"test.conf:10: 'Contiguous +=': 'Contiguous' is not a list, in [Heap d]",
		"test.conf:12: 'MatchDriver +=': Match keys take no '+=', in [Device e]",
		"test.conf:13: 'MatchDriver' needs a value in [Device e]",
		"test.conf:14: 'Heaps +=' needs a value in [Device e]",
		"test.conf:15: expected 'Key = value' in [Device e]",
		"test.conf:16: no key before '=' in [Device e]",
		"test.conf:17: [Heap] needs a name",
		"test.conf:18: [Heap a b] has blanks in its name",
		"test.conf:19: [Heap a]b] has ']' in its name",
		"test.conf:20: section header '[Heap x' does not end with ']'",
		"test.conf:25: 'Cache' is set twice in [Heap f] (first on line 24)",
		"test.conf:27: key 'MatchModel' does not belong in [Heap g]",
		"test.conf:30: key 'Preference' does not belong in [Board z]",
		"test.conf:28: [Board z] has errors: skipping it and the sections up to the next [Board]");
	/* Only the one good section stands. */
	assert_heaps(conf, "");
	assert_int_equal(ion_conf_apply_device_name(conf, "ok", &props), 1);
	assert_string_equal(props.f[ION_KEY_HEAPS].v.list.v[0], "system");
	assert_int_equal(ion_conf_apply_device_name(conf, "e", &props), -ENOENT);
	ion_conf_props_clear(&props);
	assert_int_equal(ion_conf_board_count(conf), 0);
	ion_conf_free(conf);
}

/* A broken section goes whole; the sections around it, of the same name
 * too, stand. */
static void test_section_skipped_alone(void **state)
{
	struct state *st = *state;
	struct ion_conf *conf;

	conf = load(st,
		    "# comment\n"
		    "   # indented comment\n"
		    "\n"
		    "[Heap a]\n"
		    "Preference = 1\n"			/* 5 */
		    "MaxSize = 1M\n"
		    "[Heap a]\n"
		    "Preference = 2\n"
		    "MaxSize = 2M\n"
		    "Contiguous = sometimes\n"		/* 10 */
		    "AddressBits = 32\n"
		    "[Heap b]\n"
		    "Preference = 3\n"
		    "[Heap a]\n"
		    "  AddressBits   =   30  \n", NULL);	/* 15 */
	EXPECT_ERRORS(st, "test.conf:10: invalid value 'sometimes' for 'Contiguous' in [Heap a]: "
			  "expected yes/no, true/false, on/off or 1/0");
	assert_heaps(conf, "a b");
	assert_heap_value(conf, "a", ION_KEY_PREFERENCE, "1", 5);
	assert_heap_value(conf, "a", ION_KEY_MAX_SIZE, "1M", 6);
	assert_heap_value(conf, "a", ION_KEY_ADDRESS_BITS, "30", 15);
	assert_heap_value(conf, "a", ION_KEY_CONTIGUOUS, NULL, 0);
	assert_heap_value(conf, "b", ION_KEY_PREFERENCE, "3", 13);
	assert_int_equal(ion_conf_file_count(conf), 1);
	assert_string_equal(ion_conf_file(conf, 0), "test.conf");
	assert_null(ion_conf_file(conf, 1));
	ion_conf_free(conf);
}

/* A broken [Board] never lets its scope apply everywhere. */
static void test_broken_board_scope(void **state)
{
	struct state *st = *state;
	struct ion_conf *conf;

	conf = load(st,
		    "[Heap global]\n"
		    "Preference = 1\n"
		    "[Board broken]\n"
		    "MatchCompatible = brcm,*\n"
		    "Contigous = yes\n"			/* 5 */
		    "[Heap dropped1]\n"
		    "[Board no-match-key]\n"
		    "CookieAttribute = x\n"
		    "[Heap dropped2]\n"
		    "[Board rpi]\n"			/* 10 */
		    "MatchCompatible = brcm,bcm2711\n"
		    "[Heap kept]\n"
		    "[Bord x]\n"
		    "Preference = 4\n"
		    "[Heap dropped3]\n"			/* 15 */
		    "Prefrence = 3\n"
		    "[Board rpi-again]\n"
		    "MatchModel = Raspberry*\n"
		    "[Heap kept2]\n"
		    "[Board]\n"				/* 20 */
		    "MatchModel = *\n"
		    "[Heap dropped4]\n"
		    "[Board other]\n"
		    "MatchModel = Other*\n"
		    "[Heap dropped5]\n", &rpi4);	/* 25 */
	EXPECT_ERRORS(st,
		"test.conf:5: unknown key 'Contigous' in [Board broken]",
		"test.conf:3: [Board broken] has errors: skipping it and the sections up to the next [Board]",
		"test.conf:7: [Board no-match-key] has no Match key: skipping it and the sections up to the next [Board]",
		"test.conf:13: unknown section '[Bord x]' (expected [Board NAME], [Heap NAME] or [Device NAME]): "
		"skipping the sections up to the next [Board]",
		/* Dropped sections are still checked. */
		"test.conf:16: unknown key 'Prefrence' in [Heap dropped3]",
		"test.conf:20: [Board] needs a name",
		"test.conf:20: [Board] has errors: skipping it and the sections up to the next [Board]");
	assert_heaps(conf, "global kept kept2");
	assert_int_equal(ion_conf_board_count(conf), 2);
	assert_string_equal(ion_conf_board(conf, 0, NULL), "rpi");
	assert_string_equal(ion_conf_board(conf, 1, NULL), "rpi-again");
	ion_conf_free(conf);

	/* A scope ends with its file: the next file starts global again. */
	conf = load(st, "[Board x]\nMatchModel = nothing\n[Heap a]\n", &rpi4);
	EXPECT_NO_ERRORS(st);
	assert_heaps(conf, "");
	ion_conf_free(conf);
}

static void test_line_limits(void **state)
{
	struct state *st = *state;
	char *text = malloc(3 * 4096 + 256), *p = text;
	struct ion_conf *conf;
	static const char nul_text[] = "[Heap a]\nPreference = 1\0\n[Heap b]\n"
				       "[Board x]\nMatchModel = *\n[Heap c]\n";

	/* 4096 bytes is the longest line, newline not counted. */
	p += sprintf(p, "[Heap a]\n#");
	memset(p, 'x', 4095);
	p += 4095;
	p += sprintf(p, "\n[Heap b]\nPreference = 1\n#");
	memset(p, 'x', 4096);
	p += 4096;
	strcpy(p, "\n[Heap c]\n[Board rpi]\nMatchModel = *\n[Heap d]\n");
	conf = load(st, text, &rpi4);
	EXPECT_ERRORS(st, "test.conf:5: line longer than 4096 bytes: skipping the sections up to the next [Board]");
	assert_heaps(conf, "a d");
	ion_conf_free(conf);
	free(text);

	conf = load_len(st, nul_text, sizeof(nul_text) - 1, &rpi4);
	EXPECT_ERRORS(st, "test.conf:2: NUL byte in the line: skipping the sections up to the next [Board]");
	assert_heaps(conf, "c");
	ion_conf_free(conf);

	/* CRLF line ends and a last line without a newline. */
	conf = load(st, "[Heap a]\r\nPreference = 7\r\n[Heap b]\nMaxSize = 1K", NULL);
	EXPECT_NO_ERRORS(st);
	assert_heap_value(conf, "a", ION_KEY_PREFERENCE, "7", 2);
	assert_heap_value(conf, "b", ION_KEY_MAX_SIZE, "1K", 4);
	ion_conf_free(conf);
}

static void test_size_cap(void **state)
{
	struct state *st = *state;
	size_t cap = 1024 * 1024;
	char *text = malloc(cap + 2), path[128];
	struct ion_conf *conf;
	const char *paths[] = { st->dir };
	FILE *f;

	/* Exactly 1 MiB is read: comment lines, then a section. */
	memset(text, '#', cap);
	for (size_t i = 100; i < cap; i += 100)
		text[i] = '\n';
	memcpy(text + cap - 10, "\n[Heap a]\n", 10);
	text[cap] = '#';
	conf = load_len(st, text, cap, NULL);
	EXPECT_NO_ERRORS(st);
	assert_heaps(conf, "a");
	ion_conf_free(conf);
	conf = load_len(st, text, cap + 1, NULL);
	EXPECT_ERRORS(st, "test.conf:0: file skipped: larger than 1 MiB");
	assert_heaps(conf, "");
	assert_int_equal(ion_conf_file_count(conf), 0);
	ion_conf_free(conf);

	in_dir(path, sizeof(path), st->dir, "50-big.conf");
	f = fopen(path, "we");
	assert_non_null(f);
	assert_int_equal(fwrite(text, 1, cap + 1, f), cap + 1);
	fclose(f);
	write_file(st->dir, "60-ok.conf", "[Heap ok]\n");
	assert_int_equal(ion_conf_load(paths, 1, NULL, on_error, st, &conf), 0);
	{
		char expected[256];

		snprintf(expected, sizeof(expected), "%s:0: file skipped: larger than 1 MiB", path);
		EXPECT_ERRORS(st, expected);
	}
	assert_heaps(conf, "ok");
	ion_conf_free(conf);
	free(text);
}

/* ---- folders ---- */

static void test_masking_and_order(void **state)
{
	struct state *st = *state;
	char hi[128], lo[128], link[160], single[160], missing[160];
	const char *paths[4];
	struct ion_conf *conf;

	in_dir(hi, sizeof(hi), st->dir, "etc");
	in_dir(lo, sizeof(lo), st->dir, "usr");
	make_dir(st->dir, "etc");
	make_dir(st->dir, "usr");
	make_dir(st->dir, "single");
	write_file(lo, "2-foo.conf", "[Heap foo]\n[Heap order]\nPreference = 1\n");
	write_file(lo, "10-bar.conf", "[Heap bar-lo]\n");
	write_file(hi, "10-bar.conf", "[Heap bar-hi]\n[Heap order]\nPreference = 2\n");
	write_file(hi, "3-only-hi.conf", "[Heap only-hi]\n");
	write_file(lo, "60-empty.conf", "[Heap empty-lo]\n");
	write_file(hi, "60-empty.conf", "");
	write_file(lo, "70-null.conf", "[Heap null-lo]\n");
	in_dir(link, sizeof(link), hi, "70-null.conf");
	assert_int_equal(symlink("/dev/null", link), 0);
	write_file(lo, "readme.txt", "[Heap txt]\n");
	write_file(lo, ".hidden.conf", "[Heap hidden]\n");
	write_file(lo, "conf", "[Heap bare]\n");
	/* A single file by path, of any name, masks like a folder's file. */
	in_dir(single, sizeof(single), st->dir, "single/80-one.cfg");
	write_file(st->dir, "single/80-one.cfg", "[Heap single]\n[Heap order]\nPreference = 3\n");
	write_file(lo, "80-one.cfg.conf", "[Heap not-masked]\n");
	in_dir(missing, sizeof(missing), st->dir, "no-such-folder");

	paths[0] = missing;
	paths[1] = hi;
	paths[2] = lo;
	paths[3] = single;
	assert_int_equal(ion_conf_load(paths, 4, NULL, on_error, st, &conf), 0);
	EXPECT_NO_ERRORS(st);
	/* Version order of basenames, across folders: 2 < 3 < 10 < 60 < 70 < 80. */
	assert_int_equal(ion_conf_file_count(conf), 7);
	{
		const char *const names[] = {
			"usr/2-foo.conf", "etc/3-only-hi.conf", "etc/10-bar.conf",
			"etc/60-empty.conf", "etc/70-null.conf", "single/80-one.cfg",
			"usr/80-one.cfg.conf",
		};

		for (size_t i = 0; i < 7; i++) {
			char expected[192];

			in_dir(expected, sizeof(expected), st->dir, names[i]);
			assert_string_equal(ion_conf_file(conf, i), expected);
		}
	}
	assert_heaps(conf, "foo order only-hi bar-hi single not-masked");
	/* In strcmp order 2-foo.conf would come after 10-bar.conf and win
	 * over it; in version order 10-bar overrides 2-foo, 80-one both. */
	assert_heap_value(conf, "order", ION_KEY_PREFERENCE, "3", 3);
	{
		struct ion_conf_props props = { 0 };
		const char *file;

		assert_int_equal(ion_conf_apply_heap(conf, "order", &props), 3);
		file = props.f[ION_KEY_PREFERENCE].src.file;
		assert_string_equal(file, single);
		/* The source points into the conf's own list of files. */
		assert_ptr_equal(file, ion_conf_file(conf, 5));
		ion_conf_props_clear(&props);
	}
	ion_conf_free(conf);

	/* No folders at all is an empty configuration. */
	assert_int_equal(ion_conf_load(NULL, 0, NULL, on_error, st, &conf), 0);
	assert_int_equal(ion_conf_file_count(conf), 0);
	assert_heaps(conf, "");
	ion_conf_free(conf);
}

static void test_set_append_clear_across_files(void **state)
{
	struct state *st = *state;
	char hi[128], lo[128], base[192];
	const char *paths[2];
	struct ion_conf *conf;
	unsigned int line;
	char *s;

	in_dir(hi, sizeof(hi), st->dir, "etc");
	in_dir(lo, sizeof(lo), st->dir, "usr");
	make_dir(st->dir, "etc");
	make_dir(st->dir, "usr");
	write_file(lo, "10-a.conf",
		   "[Heap h]\nAliases = a b\nMaxSize = 1M\nPool = 1x4K\nPreference = 5\n"
		   "[Device d]\nHeaps = x\n");
	write_file(hi, "20-b.conf",
		   "[Heap h]\nAliases += c\nMaxSize =\nPool += 2x8K\n"
		   "[Device d]\nHeaps =\nHeaps += y\nHeaps += z\n");
	write_file(lo, "30-c.conf",
		   "[Heap h]\nPool = 3x1M\n[Heap h]\nPool += 1x2M\nAliases += d\n");
	paths[0] = hi;
	paths[1] = lo;
	assert_int_equal(ion_conf_load(paths, 2, NULL, on_error, st, &conf), 0);
	EXPECT_NO_ERRORS(st);
	assert_heap_value(conf, "h", ION_KEY_ALIASES, "a b c d", 5);
	assert_heap_value(conf, "h", ION_KEY_POOL, "3x1M 1x2M", 4);
	assert_heap_value(conf, "h", ION_KEY_PREFERENCE, "5", 5);
	/* Cleared: unset, and the source says who cleared it. */
	s = heap_value(conf, "h", ION_KEY_MAX_SIZE, &line);
	assert_null(s);
	assert_int_equal(line, 3);
	{
		struct ion_conf_props props = { 0 };

		assert_int_equal(ion_conf_apply_heap(conf, "h", &props), 4);
		in_dir(base, sizeof(base), hi, "20-b.conf");
		assert_false(props.f[ION_KEY_MAX_SIZE].set);
		assert_string_equal(props.f[ION_KEY_MAX_SIZE].src.file, base);
		ion_conf_props_clear(&props);
		assert_int_equal(ion_conf_apply_device_name(conf, "d", &props), 2);
		s = ion_conf_field_format(ION_KEY_HEAPS, &props.f[ION_KEY_HEAPS]);
		assert_string_equal(s, "y z");
		assert_int_equal(props.f[ION_KEY_HEAPS].src.line, 8);
		free(s);
		ion_conf_props_clear(&props);

		/* Folding adds to what the caller's props already hold. */
		assert_int_equal(ion_conf_field_parse(ION_KEY_ALIASES, "pre", (struct ion_conf_src){ "caller", 1 },
						      &props.f[ION_KEY_ALIASES], NULL), 0);
		assert_int_equal(ion_conf_field_parse(ION_KEY_ADDRESS_BITS, "32", (struct ion_conf_src){ "caller", 2 },
						      &props.f[ION_KEY_ADDRESS_BITS], NULL), 0);
		assert_int_equal(ion_conf_apply_heap(conf, "h", &props), 4);
		s = ion_conf_field_format(ION_KEY_ALIASES, &props.f[ION_KEY_ALIASES]);
		assert_string_equal(s, "a b c d");
		free(s);
		assert_int_equal(props.f[ION_KEY_ADDRESS_BITS].v.u, 32);
		assert_string_equal(props.f[ION_KEY_ADDRESS_BITS].src.file, "caller");
		ion_conf_props_clear(&props);
	}
	ion_conf_free(conf);
}

static void test_special_files(void **state)
{
	struct state *st = *state;
	char fifo[160], path[160], dangling[160], expected[2][256];
	const char *paths[2];
	struct ion_conf *conf;

	/* O_NONBLOCK or not, a hang here must fail the test, not CI. */
	alarm(20);
	in_dir(fifo, sizeof(fifo), st->dir, "50-fifo.conf");
	assert_int_equal(mkfifo(fifo, 0644), 0);
	in_dir(path, sizeof(path), st->dir, "55-dir.conf");
	assert_int_equal(mkdir(path, 0755), 0);
	in_dir(dangling, sizeof(dangling), st->dir, "57-dangling.conf");
	assert_int_equal(symlink("/nonexistent/x.conf", dangling), 0);
	write_file(st->dir, "60-ok.conf", "[Heap ok]\n");
	paths[0] = st->dir;
	assert_int_equal(ion_conf_load(paths, 1, NULL, on_error, st, &conf), 0);
	snprintf(expected[0], sizeof(expected[0]), "%s:0: file skipped: not a regular file", fifo);
	snprintf(expected[1], sizeof(expected[1]), "%s:0: file skipped: not a regular file", path);
	{
		char gone[256];

		snprintf(gone, sizeof(gone), "%s:0: file skipped: No such file or directory", dangling);
		EXPECT_ERRORS(st, expected[0], expected[1], gone);
	}
	assert_heaps(conf, "ok");
	assert_int_equal(ion_conf_file_count(conf), 1);
	ion_conf_free(conf);

	/* A FIFO given as a path entry. */
	paths[0] = fifo;
	paths[1] = st->dir;
	assert_int_equal(ion_conf_load(paths, 2, NULL, on_error, st, &conf), 0);
	snprintf(expected[1], sizeof(expected[1]), "%s:0: skipped: not a folder or a regular file", fifo);
	assert_true(st->n_errors >= 1);
	assert_string_equal(st->errors[0], expected[1]);
	st->n_errors = 0;
	assert_heaps(conf, "ok");
	ion_conf_free(conf);
	alarm(0);
}

static void test_unreadable(void **state)
{
	struct state *st = *state;
	char file[160], dir[160], expected[2][256];
	const char *paths[2];
	struct ion_conf *conf;

	make_dir(st->dir, "a");
	make_dir(st->dir, "locked");
	in_dir(dir, sizeof(dir), st->dir, "locked");
	write_file(dir, "10-x.conf", "[Heap locked]\n");
	in_dir(file, sizeof(file), st->dir, "a/20-secret.conf");
	write_file(st->dir, "a/20-secret.conf", "[Heap secret]\n");
	write_file(st->dir, "a/30-open.conf", "[Heap open]\n");
	assert_int_equal(chmod(file, 0), 0);
	assert_int_equal(chmod(dir, 0), 0);
	in_dir(expected[0], sizeof(expected[0]), st->dir, "a");
	paths[0] = expected[0];
	paths[1] = dir;
	assert_int_equal(ion_conf_load(paths, 2, NULL, on_error, st, &conf), 0);
	if (geteuid() == 0) {
		/* root reads it anyway: nothing to assert about EACCES. */
		st->n_errors = 0;
	} else {
		snprintf(expected[0], sizeof(expected[0]), "%s:0: skipped: Permission denied", dir);
		snprintf(expected[1], sizeof(expected[1]), "%s:0: file skipped: Permission denied", file);
		EXPECT_ERRORS(st, expected[0], expected[1]);
		assert_heaps(conf, "open");
	}
	ion_conf_free(conf);
	chmod(dir, 0755);
}

/* Running out of fds is no file's fault: returned, not reported. */
static void test_transient_errors(void **state)
{
	struct state *st = *state;
	struct ion_conf *conf = (void *)1;
	const char *paths[] = { st->dir };
	struct rlimit old, low;
	int fds[64], n = 0;

	write_file(st->dir, "10-a.conf", "[Heap a]\n");
	assert_int_equal(getrlimit(RLIMIT_NOFILE, &old), 0);
	low = old;
	low.rlim_cur = 64;
	if (setrlimit(RLIMIT_NOFILE, &low) < 0)
		skip();
	while (n < 64) {
		int fd = dup(0);

		if (fd < 0)
			break;
		fds[n++] = fd;
	}
	if (n == 64) {
		/* valgrind keeps its own fds apart: no EMFILE to be had. */
		while (n)
			close(fds[--n]);
		setrlimit(RLIMIT_NOFILE, &old);
		skip();
	}
	assert_int_equal(ion_conf_load(paths, 1, NULL, on_error, st, &conf), -EMFILE);
	assert_ptr_equal(conf, (void *)1);
	assert_int_equal(st->n_errors, 0);
	/* Loading holds one fd at a time: one free fd is enough. */
	close(fds[--n]);
	assert_int_equal(ion_conf_load(paths, 1, NULL, on_error, st, &conf), 0);
	assert_heaps(conf, "a");
	ion_conf_free(conf);
	while (n)
		close(fds[--n]);
	assert_int_equal(setrlimit(RLIMIT_NOFILE, &old), 0);
	assert_int_equal(ion_conf_load(paths, 1, NULL, on_error, st, &conf), 0);
	assert_heaps(conf, "a");
	ion_conf_free(conf);
}

/* ---- boards ---- */

static void test_board_matching(void **state)
{
	static const struct {
		const char *match;
		bool rpi4, q35;
	} cases[] = {
		{ "MatchCompatible = brcm,bcm2711\n", true, false },
		{ "MatchCompatible = raspberrypi,4-model-b\n", true, false },
		{ "MatchCompatible = brcm,bcm27*\n", true, false },
		{ "MatchCompatible = brcm,bcm2712\n", false, false },
		{ "MatchCompatible = brcm\n", false, false },
		/* one key twice: either; two keys: both */
		{ "MatchCompatible = brcm,bcm2712\nMatchCompatible = brcm,bcm2711\n", true, false },
		{ "MatchCompatible = brcm,*\nMatchModel = *Pi 5*\n", false, false },
		{ "MatchCompatible = brcm,*\nMatchModel = *Pi 4*\n", true, false },
		{ "MatchModel = Raspberry Pi 4 Model B Rev 1.4\n", true, false },
		{ "MatchModel = Raspberry Pi 4 Model B\n", false, false },
		{ "MatchModel = Raspberry Pi [45] *\n", true, false },
		{ "MatchDMIVendor = QEMU\n", false, true },
		{ "MatchDMIVendor = qemu\n", false, false },
		{ "MatchDMIProduct = Standard PC (Q35 + ICH9, 2009)\n", false, true },
		{ "MatchDMIProduct = Standard PC (Q35*\n", false, true },
		{ "MatchDMIProduct = Standard PC (i440FX + PIIX, 1996)\n", false, false },
		{ "MatchDMIBoard = Q35 board\n", false, true },
		{ "MatchDMIVendor = QEMU\nMatchDMIBoard = other\n", false, false },
		{ "MatchDMIVendor = QEMU\nMatchDMIVendor = Dell Inc.\nMatchDMIProduct = Standard*\n", false, true },
		{ "MatchModel = *\n", true, false },
		{ "MatchDMIVendor = *\n", false, true },
	};
	struct state *st = *state;

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		const struct ion_board_facts *boards[] = { &rpi4, &q35, NULL };
		const bool expect[] = { cases[i].rpi4, cases[i].q35, false };

		for (int b = 0; b < 3; b++) {
			struct ion_conf_props props = { 0 };
			char text[512];
			struct ion_conf *conf;

			snprintf(text, sizeof(text),
				 "[Heap global]\n[Board b]\n%s[Heap scoped]\n[Device d]\nHeaps = x\n",
				 cases[i].match);
			conf = load(st, text, boards[b]);
			EXPECT_NO_ERRORS(st);
			if (ion_conf_board_count(conf) != expect[b])
				fail_msg("case %zu on board %d: %s", i, b, cases[i].match);
			assert_heaps(conf, expect[b] ? "global scoped" : "global");
			assert_int_equal(ion_conf_apply_device_name(conf, "d", &props) == 1, expect[b]);
			ion_conf_props_clear(&props);
			ion_conf_free(conf);
		}
	}
}

static void write_bytes(const char *root, const char *rel, const char *data, size_t len)
{
	char path[256];
	FILE *f;

	snprintf(path, sizeof(path), "%s/%s", root, rel);
	f = fopen(path, "we");
	assert_non_null(f);
	assert_int_equal(fwrite(data, 1, len, f), len);
	assert_int_equal(fclose(f), 0);
}

static void make_dirs(const char *root, const char *const *rels)
{
	for (; *rels; rels++)
		make_dir(root, *rels);
}

static void test_board_read(void **state)
{
	static const char compatible[] = "raspberrypi,4-model-b\0brcm,bcm2711\0";
	static const char model[] = "Raspberry Pi 4 Model B Rev 1.4\0";
	struct state *st = *state;
	struct ion_board_facts f = { 0 };
	char root[128], path[192];

	in_dir(root, sizeof(root), st->dir, "root");
	make_dirs(st->dir, (const char *const[]){ "root", "root/proc", "root/proc/device-tree",
		  "root/sys", "root/sys/class", "root/sys/class/dmi", "root/sys/class/dmi/id", NULL });
	write_bytes(root, "proc/device-tree/compatible", compatible, sizeof(compatible) - 1);
	write_bytes(root, "proc/device-tree/model", model, sizeof(model) - 1);
	write_bytes(root, "sys/class/dmi/id/sys_vendor", "QEMU\n", 5);
	write_bytes(root, "sys/class/dmi/id/product_name", "Standard PC (Q35 + ICH9, 2009)\n", 31);
	assert_int_equal(ion_board_read(root, &f), 0);
	assert_non_null(f.compatible);
	assert_string_equal(f.compatible[0], "raspberrypi,4-model-b");
	assert_string_equal(f.compatible[1], "brcm,bcm2711");
	assert_null(f.compatible[2]);
	assert_string_equal(f.model, "Raspberry Pi 4 Model B Rev 1.4");
	assert_string_equal(f.dmi_vendor, "QEMU");
	assert_string_equal(f.dmi_product, "Standard PC (Q35 + ICH9, 2009)");
	assert_null(f.dmi_board);
	{
		/* What it read is what [Board] sections match. */
		struct ion_conf *conf;

		conf = load(st, "[Board b]\nMatchCompatible = brcm,bcm2711\n"
				"MatchDMIProduct = Standard PC (Q35 + ICH9, 2009)\n[Heap h]\n", &f);
		assert_heaps(conf, "h");
		ion_conf_free(conf);
	}
	ion_board_facts_clear(&f);
	assert_null(f.compatible);
	assert_null(f.model);

	/* Without /proc: the sysfs copy of the device tree. */
	make_dirs(st->dir, (const char *const[]){ "root2", "root2/sys", "root2/sys/firmware",
		  "root2/sys/firmware/devicetree", "root2/sys/firmware/devicetree/base", NULL });
	in_dir(root, sizeof(root), st->dir, "root2");
	write_bytes(root, "sys/firmware/devicetree/base/compatible", "a,b\0\0c,d", 8);
	assert_int_equal(ion_board_read(root, &f), 0);
	assert_string_equal(f.compatible[0], "a,b");
	assert_string_equal(f.compatible[1], "c,d");
	assert_null(f.compatible[2]);
	assert_null(f.model);
	assert_null(f.dmi_vendor);
	ion_board_facts_clear(&f);

	/* Nothing at all: nothing known, and no error. */
	make_dir(st->dir, "empty");
	in_dir(root, sizeof(root), st->dir, "empty");
	assert_int_equal(ion_board_read(root, &f), 0);
	assert_non_null(f.compatible);
	assert_null(f.compatible[0]);
	assert_null(f.model);
	assert_null(f.dmi_product);
	ion_board_facts_clear(&f);

	/* A FIFO in place of a DT or DMI file must not hang: not known. */
	alarm(20);
	make_dirs(st->dir, (const char *const[]){ "root3", "root3/proc", "root3/proc/device-tree",
		  "root3/sys", "root3/sys/class", "root3/sys/class/dmi", "root3/sys/class/dmi/id", NULL });
	in_dir(root, sizeof(root), st->dir, "root3");
	snprintf(path, sizeof(path), "%s/proc/device-tree/compatible", root);
	assert_int_equal(mkfifo(path, 0644), 0);
	snprintf(path, sizeof(path), "%s/sys/class/dmi/id/sys_vendor", root);
	assert_int_equal(mkfifo(path, 0644), 0);
	write_bytes(root, "proc/device-tree/model", "M\n", 2);
	write_bytes(root, "sys/class/dmi/id/board_name", "\n", 1);
	assert_int_equal(ion_board_read(root, &f), 0);
	alarm(0);
	assert_null(f.compatible[0]);
	assert_null(f.dmi_vendor);
	assert_string_equal(f.model, "M");
	assert_null(f.dmi_board);	/* empty is not known */
	ion_board_facts_clear(&f);

	assert_int_equal(ion_board_read(root, NULL), -EINVAL);
	ion_board_facts_clear(NULL);
}

/* ---- devices ---- */

static const char *const vivid_of[] = { "vendor,foo-v2", "vendor,foo", NULL };
static const char *const vivid_udev[] = { "ID_PATH=platform-vivid.0", "DEVNAME=/dev/video0", NULL };
static const struct ion_device_facts vivid = {
	.syspath = "/sys/devices/platform/vivid.0/video4linux/video0",
	.parent_syspath = "/sys/devices/platform/vivid.0",
	.subsystem = "video4linux",
	.bus = "platform",
	.driver = "vivid",
	.of_compatible = vivid_of,
	.v4l2_card = "vivid",
	.name = "vivid-000-vid-cap",
	.udev_properties = vivid_udev,
};
static const struct ion_device_facts vc4 = {
	.syspath = "/sys/devices/platform/gpu/drm/card0",
	.subsystem = "drm",
	.drm_driver = "vc4",
};

static const char device_conf[] =
	"[Device path]\nMatchSysfsPath = /sys/devices/platform/vivid.0/video4linux/*\nHeaps += path\n"
	"[Device parent-path]\nMatchSysfsPath = /sys/devices/platform/vivid.0\nHeaps += parent-path\n"
	"[Device subsystem]\nMatchSubsystem = video4linux\nHeaps += subsystem\n"
	"[Device bus]\nMatchSubsystem = platform\nHeaps += bus\n"
	"[Device driver]\nMatchDriver = viv*\nHeaps += driver\n"
	"[Device of]\nMatchOFCompatible = vendor,foo\nHeaps += of\n"
	"[Device udev]\nMatchUdevProperty = ID_PATH=platform-*\nHeaps += udev\n"
	"[Device drm]\nMatchDRMDriver = vc4\nHeaps += drm\n"
	"[Device card]\nMatchV4L2Card = vivid\nHeaps += card\n"
	"[Device label]\nMatchName = vivid-000-*\nHeaps += label\n"
	"[Device other-label]\nMatchName = vivid-001-*\nHeaps += other-label\n"
	"[Device and-fails]\nMatchDriver = vivid\nMatchSubsystem = drm\nHeaps += and-fails\n"
	"[Device or]\nMatchDriver = nope\nMatchDriver = vivid\nHeaps += or\n"
	"[Device udev-key-exact]\nMatchUdevProperty = ID_PAT=platform-*\nHeaps += udev-key-exact\n"
	"[Device udev-whole-value]\nMatchUdevProperty = ID_PATH=platform\nHeaps += udev-whole-value\n"
	"[Device no-parent]\nMatchDriver = *\nMatchSubsystem = drm\nHeaps += no-parent\n"
	"[Device by-name]\nHeaps += by-name\nContiguous = yes\n"
	"[Device card]\nMatchV4L2Card = viv?d\nContiguous = no\n";

static void assert_device(struct state *st, const struct ion_conf *conf,
			  const struct ion_device_facts *facts, const char *expected_heaps,
			  const char *expected_names)
{
	struct ion_conf_props props = { 0 };
	char **names = NULL, got[512] = "";
	int n;
	char *s;

	n = ion_conf_apply_device(conf, facts, &props, &names);
	assert_true(n >= 0);
	assert_non_null(names);
	for (int i = 0; i < n; i++) {
		if (i)
			strcat(got, " ");
		strcat(got, names[i]);
	}
	assert_null(names[n]);
	assert_string_equal(got, expected_names);
	free(names);
	s = ion_conf_field_format(ION_KEY_HEAPS, &props.f[ION_KEY_HEAPS]);
	assert_string_equal(s ? s : "", expected_heaps);
	free(s);
	ion_conf_props_clear(&props);
	(void)st;
}

static void test_device_matching(void **state)
{
	struct state *st = *state;
	struct ion_conf_props props = { 0 };
	struct ion_conf *conf;

	conf = load(st, device_conf, NULL);
	EXPECT_NO_ERRORS(st);
	assert_device(st, conf, &vivid,
		      "path parent-path subsystem bus driver of udev card label or",
		      "path parent-path subsystem bus driver of udev card label or card");
	assert_device(st, conf, &vc4, "drm", "drm");
	assert_device(st, conf, &(struct ion_device_facts){ 0 }, "", "");
	assert_int_equal(ion_conf_apply_device(conf, &vivid, &props, NULL), 11);
	/* The two [Device card] sections fold in order. */
	assert_true(props.f[ION_KEY_CONTIGUOUS].set);
	assert_false(props.f[ION_KEY_CONTIGUOUS].v.b);
	ion_conf_props_clear(&props);

	/* By name: sections without Match keys too, with them too. */
	assert_int_equal(ion_conf_apply_device_name(conf, "by-name", &props), 1);
	assert_true(props.f[ION_KEY_CONTIGUOUS].v.b);
	ion_conf_props_clear(&props);
	assert_int_equal(ion_conf_apply_device_name(conf, "card", &props), 2);
	assert_false(props.f[ION_KEY_CONTIGUOUS].v.b);
	assert_int_equal(props.f[ION_KEY_CONTIGUOUS].src.line, 57);
	/* No such name: -ENOENT, props as they were. */
	assert_int_equal(ion_conf_apply_device_name(conf, "missing", &props), -ENOENT);
	assert_true(props.f[ION_KEY_CONTIGUOUS].set);
	assert_int_equal(props.f[ION_KEY_CONTIGUOUS].src.line, 57);
	ion_conf_props_clear(&props);
	assert_int_equal(ion_conf_apply_device(conf, NULL, &props, NULL), -EINVAL);
	ion_conf_free(conf);

	/* Device sections of a board that does not match are gone. */
	conf = load(st, "[Board x]\nMatchDMIVendor = QEMU\n[Device d]\nMatchDriver = vivid\n", &rpi4);
	assert_device(st, conf, &vivid, "", "");
	ion_conf_free(conf);
}

/* ---- cookies, udev, formatting ---- */

static void test_cookie(void **state)
{
	struct state *st = *state;
	struct ion_conf_props props = { 0 };
	const char *path = "/sys/devices/platform/x/ion_cookie";
	char *s;

	assert_int_equal(ion_conf_parse_cookie(path,
		"# from the driver\n"
		"Heaps = linux,cma system\n"
		"\n"
		"Contiguous = yes\n"
		"AddressBits = 32\n"
		"Cache = uncached\n"
		"Alignment = 64K\n"
		"KernelMap = no\n"
		"OwnBuffersOnly = no\n"
		"Pool = 2x1M\n"
		"Heaps += reserved", on_error, st, &props), 0);
	EXPECT_NO_ERRORS(st);
	s = ion_conf_field_format(ION_KEY_HEAPS, &props.f[ION_KEY_HEAPS]);
	assert_string_equal(s, "linux,cma system reserved");
	free(s);
	assert_ptr_equal(props.f[ION_KEY_HEAPS].src.file, path);
	assert_int_equal(props.f[ION_KEY_HEAPS].src.line, 11);
	assert_true(props.f[ION_KEY_CONTIGUOUS].v.b);
	assert_int_equal(props.f[ION_KEY_ADDRESS_BITS].v.u, 32);
	assert_int_equal(props.f[ION_KEY_CACHE].v.u, ION_CACHE_UNCACHED);
	assert_int_equal(props.f[ION_KEY_ALIGNMENT].v.u, 65536);
	assert_true(props.f[ION_KEY_KERNEL_MAP].set);
	assert_true(props.f[ION_KEY_OWN_BUFFERS_ONLY].set);
	assert_int_equal(props.f[ION_KEY_POOL].v.pool.n, 1);

	/* Any error: -EINVAL, every line reported, props untouched. */
	assert_int_equal(ion_conf_parse_cookie(path,
		"Heaps = other\n"
		"Contigous = yes\n"
		"MatchDriver = x\n"
		"[Device x]\n"
		"Preference = 1\n"
		"AddressBits = 99\n"
		"Heaps = again\n", on_error, st, &props), -EINVAL);
	EXPECT_ERRORS(st,
		"/sys/devices/platform/x/ion_cookie:2: unknown key 'Contigous' in the cookie",
		"/sys/devices/platform/x/ion_cookie:3: key 'MatchDriver' does not belong in the cookie",
		"/sys/devices/platform/x/ion_cookie:4: a cookie has no section headers",
		"/sys/devices/platform/x/ion_cookie:5: key 'Preference' does not belong in the cookie",
		"/sys/devices/platform/x/ion_cookie:6: invalid value '99' for 'AddressBits' in the cookie: "
		"expected a number of bits from 1 to 64",
		"/sys/devices/platform/x/ion_cookie:7: 'Heaps' is set twice in the cookie (first on line 1)");
	s = ion_conf_field_format(ION_KEY_HEAPS, &props.f[ION_KEY_HEAPS]);
	assert_string_equal(s, "linux,cma system reserved");
	free(s);
	assert_int_equal(props.f[ION_KEY_ADDRESS_BITS].v.u, 32);
	assert_int_equal(ion_conf_parse_cookie(path, "Contiguous = maybe\n", NULL, NULL, &props), -EINVAL);
	assert_true(props.f[ION_KEY_CONTIGUOUS].v.b);

	/* An empty cookie says nothing; it is no error. */
	assert_int_equal(ion_conf_parse_cookie(path, "", on_error, st, &props), 0);
	assert_true(props.f[ION_KEY_CONTIGUOUS].v.b);
	assert_int_equal(ion_conf_parse_cookie(path, NULL, on_error, st, &props), -EINVAL);
	ion_conf_props_clear(&props);
	EXPECT_NO_ERRORS(st);
}

static void test_key_names(void **state)
{
	static const struct {
		const char *udev;
		enum ion_conf_key key;
	} udev[] = {
		{ "ION_HEAPS", ION_KEY_HEAPS },
		{ "ION_CONTIGUOUS", ION_KEY_CONTIGUOUS },
		{ "ION_ADDRESS_BITS", ION_KEY_ADDRESS_BITS },
		{ "ION_CACHE", ION_KEY_CACHE },
		{ "ION_ALIGNMENT", ION_KEY_ALIGNMENT },
		{ "ION_KERNEL_MAP", ION_KEY_KERNEL_MAP },
		{ "ION_OWN_BUFFERS_ONLY", ION_KEY_OWN_BUFFERS_ONLY },
		{ "ION_POOL", ION_KEY_POOL },
	};
	int n_udev = 0;

	(void)state;
	for (size_t i = 0; i < sizeof(udev) / sizeof(udev[0]); i++)
		assert_int_equal(ion_conf_key_from_udev(udev[i].udev), udev[i].key);
	for (const char *const *p = (const char *const[]){ "ION_PREFERENCE", "ION_ALIASES",
			"ION_MATCH_DRIVER", "ion_heaps", "Heaps", "ION_HEAPS ", "", NULL }; *p; p++)
		assert_int_equal(ion_conf_key_from_udev(*p), -1);
	assert_int_equal(ion_conf_key_from_udev(NULL), -1);
	for (int k = 0; k < ION_KEY_COUNT; k++) {
		const char *name = ion_conf_key_name(k);
		assert_non_null(name);
		assert_int_equal(ion_conf_key_from_name(name), k);
		/* Only the requirement keys have a udev name. */
		for (size_t i = 0; i < sizeof(udev) / sizeof(udev[0]); i++)
			if (udev[i].key == (enum ion_conf_key)k)
				n_udev++;
	}
	assert_int_equal(n_udev, 8);
	assert_null(ion_conf_key_name(ION_KEY_COUNT));
	assert_int_equal(ion_conf_key_from_name("contiguous"), -1);
	assert_int_equal(ion_conf_key_from_name("Contiguous "), -1);
	assert_int_equal(ion_conf_key_from_name("MatchDMIProduct"), ION_KEY_MATCH_DMI_PRODUCT);
	assert_int_equal(ion_conf_key_from_name(NULL), -1);
}

static bool fields_equal(enum ion_conf_key key, const struct ion_conf_field *a,
			 const struct ion_conf_field *b)
{
	if (a->set != b->set)
		return false;
	if (!a->set)
		return true;
	switch (key) {
	case ION_KEY_ALIASES: case ION_KEY_HEAPS:
		if (a->v.list.n != b->v.list.n)
			return false;
		for (size_t i = 0; i < a->v.list.n; i++)
			if (strcmp(a->v.list.v[i], b->v.list.v[i]))
				return false;
		return !a->v.list.v[a->v.list.n] && !b->v.list.v[b->v.list.n];
	case ION_KEY_POOL:
		return a->v.pool.n == b->v.pool.n &&
		       memcmp(a->v.pool.v, b->v.pool.v, a->v.pool.n * sizeof(*a->v.pool.v)) == 0;
	case ION_KEY_CONTIGUOUS: case ION_KEY_CPU_ACCESS: case ION_KEY_KERNEL_MAP:
	case ION_KEY_OWN_BUFFERS_ONLY:
		return a->v.b == b->v.b;
	case ION_KEY_PREFERENCE:
		return a->v.i == b->v.i;
	case ION_KEY_CACHE: case ION_KEY_ADDRESS_BITS: case ION_KEY_ALIGNMENT:
	case ION_KEY_ANDROID_ID: case ION_KEY_MAX_SIZE:
		return a->v.u == b->v.u;
	default:
		return strcmp(a->v.s, b->v.s) == 0;
	}
}

static void test_format_round_trip(void **state)
{
	static const struct {
		enum ion_conf_key key;
		const char *value, *formatted;
	} cases[] = {
		{ ION_KEY_CONTIGUOUS, "TRUE", "yes" },
		{ ION_KEY_CPU_ACCESS, "off", "no" },
		{ ION_KEY_KERNEL_MAP, "1", "yes" },
		{ ION_KEY_OWN_BUFFERS_ONLY, "No", "no" },
		{ ION_KEY_ALIGNMENT, "4096", "4K" },
		{ ION_KEY_ALIGNMENT, "1048576", "1M" },
		{ ION_KEY_ALIGNMENT, "2G", "2G" },
		{ ION_KEY_ALIGNMENT, "1", "1" },
		{ ION_KEY_MAX_SIZE, "1572864", "1536K" },
		{ ION_KEY_MAX_SIZE, "1024M", "1G" },
		{ ION_KEY_MAX_SIZE, "4097", "4097" },
		{ ION_KEY_MAX_SIZE, "3072G", "3072G" },
		{ ION_KEY_MAX_SIZE, "18446744073709551615", "18446744073709551615" },
		{ ION_KEY_POOL, "8x1048576   4x8M", "8x1M 4x8M" },
		{ ION_KEY_POOL, "1024x4097 1x1536K", "1024x4097 1x1536K" },
		{ ION_KEY_CACHE, "UNCACHED", "uncached" },
		{ ION_KEY_CACHE, "cached", "cached" },
		{ ION_KEY_CACHE, "Any", "any" },
		{ ION_KEY_PREFERENCE, "-0", "0" },
		{ ION_KEY_PREFERENCE, "-1000", "-1000" },
		{ ION_KEY_PREFERENCE, "0042", "42" },
		{ ION_KEY_ADDRESS_BITS, "32", "32" },
		{ ION_KEY_ANDROID_ID, "0", "0" },
		{ ION_KEY_ALIASES, "a  b\tc", "a b c" },
		{ ION_KEY_HEAPS, "linux,cma protected,secure-video", "linux,cma protected,secure-video" },
		{ ION_KEY_MEMORY, "cma-0", "cma-0" },
		{ ION_KEY_COOKIE_ATTRIBUTE, "ion_cookie", "ion_cookie" },
		{ ION_KEY_MATCH_DMI_PRODUCT, "Standard PC (Q35 + ICH9, 2009)", "Standard PC (Q35 + ICH9, 2009)" },
		{ ION_KEY_MATCH_UDEV_PROPERTY, "ID_PATH=platform-*", "ID_PATH=platform-*" },
		{ ION_KEY_MATCH_SYSFS_PATH, "/sys/devices/*", "/sys/devices/*" },
	};
	bool covered[ION_KEY_COUNT] = { false };
	struct ion_conf_src src = { "t", 1 };

	(void)state;
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct ion_conf_field a = { 0 }, b = { 0 };
		char *s, *t;

		assert_int_equal(ion_conf_field_parse(cases[i].key, cases[i].value, src, &a, NULL), 0);
		s = ion_conf_field_format(cases[i].key, &a);
		assert_non_null(s);
		assert_string_equal(s, cases[i].formatted);
		assert_int_equal(ion_conf_field_parse(cases[i].key, s, src, &b, NULL), 0);
		assert_true(fields_equal(cases[i].key, &a, &b));
		t = ion_conf_field_format(cases[i].key, &b);
		assert_string_equal(s, t);
		free(s);
		free(t);
		{
			struct ion_conf_props pa = { 0 }, pb = { 0 };

			pa.f[cases[i].key] = a;
			pb.f[cases[i].key] = b;
			ion_conf_props_clear(&pa);
			ion_conf_props_clear(&pb);
		}
		covered[cases[i].key] = true;
	}
	/* Every value kind is covered, and unset formats as nothing. */
	for (int k = 0; k < ION_KEY_COUNT; k++) {
		struct ion_conf_field unset = { 0 };

		assert_null(ion_conf_field_format(k, &unset));
	}
	assert_true(covered[ION_KEY_POOL] && covered[ION_KEY_PREFERENCE] && covered[ION_KEY_CACHE]);
	assert_null(ion_conf_field_format(ION_KEY_COUNT, &(struct ion_conf_field){ .set = true }));

	/* A whole section formatted key by key reads back the same. */
	{
		struct state *st = *state;
		struct ion_conf_props a = { 0 }, b = { 0 };
		struct ion_conf *conf;
		char text[2048] = "[Heap h]\n";

		conf = load(st, "[Heap h]\nAliases = x y\nPool = 2x2M\nPreference = -3\n"
				"MaxSize = 1536K\nCache = uncached\nCPUAccess = no\nMemory = m\n", NULL);
		assert_int_equal(ion_conf_apply_heap(conf, "h", &a), 1);
		ion_conf_free(conf);
		for (int k = 0; k < ION_KEY_COUNT; k++) {
			char *s = ion_conf_field_format(k, &a.f[k]);

			if (!s)
				continue;
			snprintf(text + strlen(text), sizeof(text) - strlen(text), "%s = %s\n",
				 ion_conf_key_name(k), s);
			free(s);
		}
		conf = load(st, text, NULL);
		EXPECT_NO_ERRORS(st);
		assert_int_equal(ion_conf_apply_heap(conf, "h", &b), 1);
		for (int k = 0; k < ION_KEY_COUNT; k++)
			assert_true(fields_equal(k, &a.f[k], &b.f[k]));
		ion_conf_props_clear(&a);
		ion_conf_props_clear(&b);
		ion_conf_free(conf);
	}
}

static void test_bad_arguments(void **state)
{
	struct ion_conf *conf = (void *)1;
	struct ion_conf_props props = { 0 };

	(void)state;
	assert_int_equal(ion_conf_load_string(NULL, "", 0, NULL, NULL, NULL, &conf), -EINVAL);
	assert_int_equal(ion_conf_load_string("x", NULL, 1, NULL, NULL, NULL, &conf), -EINVAL);
	assert_int_equal(ion_conf_load(NULL, 1, NULL, NULL, NULL, &conf), -EINVAL);
	assert_ptr_equal(conf, (void *)1);
	assert_int_equal(ion_conf_apply_heap(NULL, "x", &props), -EINVAL);
	assert_int_equal(ion_conf_heap_count(NULL), 0);
	assert_int_equal(ion_conf_error_count(NULL), 0);
	assert_null(ion_conf_cookie_attribute(NULL, NULL));
	ion_conf_free(NULL);
	ion_conf_props_clear(NULL);
	/* No error callback: errors are still counted. */
	assert_int_equal(ion_conf_load_string("x", "[Foo]\n", 6, NULL, NULL, NULL, &conf), 0);
	assert_int_equal(ion_conf_error_count(conf), 1);
	ion_conf_free(conf);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_heap_keys, setup, teardown),
		cmocka_unit_test_setup_teardown(test_device_keys, setup, teardown),
		cmocka_unit_test_setup_teardown(test_board_keys, setup, teardown),
		cmocka_unit_test_setup_teardown(test_bad_values, setup, teardown),
		cmocka_unit_test_setup_teardown(test_field_parse, setup, teardown),
		cmocka_unit_test_setup_teardown(test_error_messages, setup, teardown),
		cmocka_unit_test_setup_teardown(test_section_skipped_alone, setup, teardown),
		cmocka_unit_test_setup_teardown(test_broken_board_scope, setup, teardown),
		cmocka_unit_test_setup_teardown(test_line_limits, setup, teardown),
		cmocka_unit_test_setup_teardown(test_size_cap, setup, teardown),
		cmocka_unit_test_setup_teardown(test_masking_and_order, setup, teardown),
		cmocka_unit_test_setup_teardown(test_set_append_clear_across_files, setup, teardown),
		cmocka_unit_test_setup_teardown(test_special_files, setup, teardown),
		cmocka_unit_test_setup_teardown(test_unreadable, setup, teardown),
		cmocka_unit_test_setup_teardown(test_transient_errors, setup, teardown),
		cmocka_unit_test_setup_teardown(test_board_matching, setup, teardown),
		cmocka_unit_test_setup_teardown(test_board_read, setup, teardown),
		cmocka_unit_test_setup_teardown(test_device_matching, setup, teardown),
		cmocka_unit_test_setup_teardown(test_cookie, setup, teardown),
		cmocka_unit_test_setup_teardown(test_key_names, setup, teardown),
		cmocka_unit_test_setup_teardown(test_format_round_trip, setup, teardown),
		cmocka_unit_test_setup_teardown(test_bad_arguments, setup, teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
