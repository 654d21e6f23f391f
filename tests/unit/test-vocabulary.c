// SPDX-License-Identifier: MIT
/*
 * The constraint vocabulary on its own: the table's answers, values
 * parsed and written back, the typed getters (which refuse a key of
 * another type), and how two devices' values AND.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "src/vocabulary.h"

static const struct ion_conf_src here = { "test.conf", 7 };

static void set(struct ion_conf_props *p, enum ion_conf_key key, const char *value)
{
	const char *message = NULL;

	assert_int_equal(ion_conf_field_parse(key, value, here, &p->f[key], &message), 0);
}

static void test_table(void **state)
{
	size_t n = 0;
	int k;

	(void)state;
	assert_int_equal(ion_conf_key_from_name("Contiguous"), ION_KEY_CONTIGUOUS);
	assert_int_equal(ion_conf_key_from_name("contiguous"), -1);
	assert_int_equal(ion_conf_key_from_udev("ION_KERNEL_MAP"), ION_KEY_KERNEL_MAP);
	assert_int_equal(ion_conf_key_from_udev("ION_MEMORY"), -1);
	assert_true(ion_conf_key_in(ION_KEY_CONTIGUOUS, ION_CONF_HEAP));
	assert_true(ion_conf_key_in(ION_KEY_CONTIGUOUS, ION_CONF_DEVICE));
	assert_false(ion_conf_key_in(ION_KEY_HEAPS, ION_CONF_HEAP));
	assert_true(ion_conf_key_is_match(ION_KEY_MATCH_UDEV_PROPERTY));
	assert_true(ion_conf_key_is_list(ION_KEY_POOL));
	assert_false(ion_conf_key_is_list(ION_KEY_MEMORY));
	/* The requirements, in the order the tools show and ionc1 writes
	 * them: all but Pool travel to another process. */
	assert_int_equal(ion_conf_requirement(0), ION_KEY_HEAPS);
	assert_int_equal(ion_conf_requirement(1), ION_KEY_CONTIGUOUS);
	assert_int_equal(ion_conf_requirement(2), ION_KEY_ADDRESS_BITS);
	assert_int_equal(ion_conf_requirement(3), ION_KEY_CACHE);
	while ((k = ion_conf_requirement(n)) >= 0) {
		assert_true(ion_conf_key_is_requirement((enum ion_conf_key)k));
		assert_int_equal(ion_conf_key_is_remote((enum ion_conf_key)k),
				 k != ION_KEY_POOL && k != ION_KEY_PITCH_ALIGNMENT &&
				 k != ION_KEY_PREFERRED_PITCH_ALIGNMENT);
		n++;
	}
	assert_true(n >= 10);
	assert_false(ion_conf_key_is_requirement(ION_KEY_MEMORY));
	/* A layout key: read from udev and cookies, never from a peer. */
	assert_int_equal(ion_conf_key_from_udev("ION_PITCH_ALIGNMENT"), ION_KEY_PITCH_ALIGNMENT);
	assert_true(ion_conf_key_is_requirement(ION_KEY_PREFERRED_PITCH_ALIGNMENT));
	assert_false(ion_conf_key_is_remote(ION_KEY_PITCH_ALIGNMENT));
	assert_false(ion_conf_key_in(ION_KEY_PITCH_ALIGNMENT, ION_CONF_HEAP));
	assert_false(ion_conf_key_is_remote(ION_KEY_POOL));
}

static void test_getters(void **state)
{
	struct ion_conf_props p = { 0 };
	const struct ion_pool_hint *hints;
	struct ion_conf_src src;
	enum ion_cache_mode cache;
	char *const *list;
	const char *s;
	uint64_t u = 0;
	int64_t i;
	size_t n;
	bool b;

	(void)state;
	assert_false(ion_props_get_bool(&p, ION_KEY_CONTIGUOUS, &b));
	assert_false(ion_props_get_src(&p, ION_KEY_CONTIGUOUS, &src));
	set(&p, ION_KEY_CONTIGUOUS, "On");
	set(&p, ION_KEY_ALIGNMENT, "64K");
	set(&p, ION_KEY_CACHE, "uncached");
	set(&p, ION_KEY_PREFERENCE, "-3");
	set(&p, ION_KEY_MEMORY, "cma0");
	set(&p, ION_KEY_HEAPS, "linux,cma  system");
	set(&p, ION_KEY_POOL, "8x1M 2x4K");
	assert_true(ion_props_get_bool(&p, ION_KEY_CONTIGUOUS, &b) && b);
	assert_true(ion_props_get_uint(&p, ION_KEY_ALIGNMENT, &u));
	assert_int_equal(u, 65536);
	assert_true(ion_props_get_cache(&p, ION_KEY_CACHE, &cache));
	assert_int_equal(cache, ION_CACHE_UNCACHED);
	assert_true(ion_props_get_int(&p, ION_KEY_PREFERENCE, &i));
	assert_int_equal(i, -3);
	assert_true(ion_props_get_string(&p, ION_KEY_MEMORY, &s));
	assert_string_equal(s, "cma0");
	assert_true(ion_props_get_list(&p, ION_KEY_HEAPS, &list, &n));
	assert_int_equal(n, 2);
	assert_string_equal(list[1], "system");
	assert_null(list[2]);
	assert_true(ion_props_get_pool(&p, ION_KEY_POOL, &hints, &n));
	assert_int_equal(n, 2);
	assert_int_equal(hints[1].size, 4096);
	assert_true(ion_props_get_src(&p, ION_KEY_HEAPS, &src));
	assert_string_equal(src.file, "test.conf");
	assert_int_equal(src.line, 7);
	/* A key asked for as another type is no answer, and *ret stays. */
	u = 42;
	assert_false(ion_props_get_uint(&p, ION_KEY_CONTIGUOUS, &u));
	assert_false(ion_props_get_uint(&p, ION_KEY_CACHE, &u));
	assert_false(ion_props_get_bool(&p, ION_KEY_ALIGNMENT, &b));
	assert_int_equal(u, 42);
	ion_conf_props_clear(&p);
	assert_false(ion_props_is_set(&p, ION_KEY_HEAPS));
}

/* a AND b for key, as text ("" when unset); the return of the AND. */
static int and_text(enum ion_conf_key key, const char *a, const char *b, char *out)
{
	struct ion_conf_props x = { 0 }, y = { 0 };
	char *text;
	int r;

	if (*a)
		set(&x, key, a);
	if (*b)
		set(&y, key, b);
	r = ion_conf_field_and(key, &x.f[key], &y.f[key]);
	text = ion_conf_field_format(key, &x.f[key]);
	strcpy(out, text ? text : "");
	free(text);
	ion_conf_props_clear(&x);
	ion_conf_props_clear(&y);
	return r;
}

static void test_and(void **state)
{
	char out[256];

	(void)state;
	assert_int_equal(and_text(ION_KEY_ALIGNMENT, "4K", "64K", out), 0);
	assert_string_equal(out, "64K");
	assert_int_equal(and_text(ION_KEY_ALIGNMENT, "", "256", out), 0);
	assert_string_equal(out, "256");
	assert_int_equal(and_text(ION_KEY_PITCH_ALIGNMENT, "256", "64", out), 0);
	assert_string_equal(out, "256");
	assert_int_equal(and_text(ION_KEY_ADDRESS_BITS, "40", "32", out), 0);
	assert_string_equal(out, "32");
	assert_int_equal(and_text(ION_KEY_CONTIGUOUS, "no", "yes", out), 0);
	assert_string_equal(out, "yes");
	assert_int_equal(and_text(ION_KEY_CACHE, "any", "cached", out), 0);
	assert_string_equal(out, "cached");
	assert_int_equal(and_text(ION_KEY_CACHE, "cached", "uncached", out), -EINVAL);
	assert_string_equal(out, "cached");
	assert_int_equal(and_text(ION_KEY_HEAPS, "a b c", "c x a", out), 0);
	assert_string_equal(out, "a c");
	assert_int_equal(and_text(ION_KEY_HEAPS, "a", "b", out), 0);
	assert_string_equal(out, "");
	assert_int_equal(and_text(ION_KEY_POOL, "1x4K", "2x4K", out), -EOPNOTSUPP);
}

/* How a heap meets requirements: the table's order picks the one a heap
 * is told, and each key's words. */
static void test_fit(void **state)
{
	struct ion_conf_props p = { 0 };
	struct ion_heap_view scattered = {
		.name = "system", .kernel_name = "system", .cached = true,
		.address_bits = 64, .alignment = 4096,
	};
	struct ion_heap_view cma = {
		.name = "reserved", .kernel_name = "reserved", .contiguous = true,
		.cached = true, .default_cma = true, .address_bits = 32, .alignment = 4096,
	};
	const struct ion_fit_who who = { "video0", NULL };
	enum ion_conf_key key = ION_KEY_COUNT;
	char *reason = NULL;

	(void)state;
	assert_int_equal(ion_props_fit(&p, &scattered, &who, &key, &reason), 0);
	set(&p, ION_KEY_ALIGNMENT, "64K");
	set(&p, ION_KEY_ADDRESS_BITS, "32");
	set(&p, ION_KEY_CONTIGUOUS, "yes");
	/* Three failures: Contiguous comes first in the table's order. */
	assert_int_equal(ion_props_fit(&p, &scattered, &who, &key, NULL), 1);
	assert_int_equal(key, ION_KEY_CONTIGUOUS);
	assert_int_equal(ion_props_fit(&p, &scattered, &who, &key, &reason), 1);
	assert_string_equal(reason, "video0 needs physically contiguous memory, and system is scattered");
	free(reason);
	/* The CMA heap fails only the alignment. */
	assert_int_equal(ion_props_fit(&p, &cma, &who, &key, &reason), 1);
	assert_int_equal(key, ION_KEY_ALIGNMENT);
	assert_string_equal(reason, "video0 needs buffers aligned to 65536 bytes, and reserved aligns to 4096");
	free(reason);
	cma.alignment = 65536;
	reason = NULL;
	assert_int_equal(ion_props_fit(&p, &cma, &who, &key, &reason), 0);
	assert_null(reason);
	/* Heaps: by name, alias or "cma" for the kernel's default area. */
	set(&p, ION_KEY_HEAPS, "cma");
	assert_int_equal(ion_props_fit(&p, &cma, &who, &key, &reason), 0);
	cma.default_cma = false;
	assert_int_equal(ion_props_fit(&p, &cma, &who, &key, &reason), 1);
	assert_int_equal(key, ION_KEY_HEAPS);
	assert_string_equal(reason, "video0 takes only the heaps cma");
	free(reason);
	ion_conf_props_clear(&p);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_table),
		cmocka_unit_test(test_getters),
		cmocka_unit_test(test_and),
		cmocka_unit_test(test_fit),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
