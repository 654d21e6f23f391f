// SPDX-License-Identifier: MIT
/*
 * Does discovery find what this kernel has?  LIBION_EXPECT_HEAPS lists
 * heap names that must be available and, prefixed with '!', names that
 * must be listed but unavailable (with a reason).  The VM suite sets it
 * per kernel; on the host the list is "memfd".  A name prefixed with '-'
 * must not be listed at all (memory another provider already offers).  Also checks that the
 * Android-convention ids are what Android code assumes.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "testlib.h"

static void test_expected_heaps(void **state)
{
	const char *env = getenv("LIBION_EXPECT_HEAPS");
	char *list = strdup(env && *env ? env : "memfd"), *save = NULL;
	struct ion_ctx *ctx;

	(void)state;
	assert_int_equal(ion_ctx_new(NULL, &ctx), 0);
	for (char *name = strtok_r(list, ",", &save); name;
	     name = strtok_r(NULL, ",", &save)) {
		bool want_available = name[0] != '!';
		const struct ion_heap *h;

		if (name[0] == '-') {
			assert_int_equal(ion_ctx_find_heap(ctx, name + 1, &h), -ENOENT);
			continue;
		}
		name += !want_available;
		if (ion_ctx_find_heap(ctx, name, &h) < 0) {
			print_error("heap %s not found\n", name);
			fail();
		}
		print_message("%-24s %-9s id %2d  %s\n", name, ion_heap_get_backend(h),
			      ion_heap_get_id(h),
			      ion_heap_get_error(h) ? ion_heap_get_reason(h) : "available");
		if (want_available) {
			assert_int_equal(ion_heap_get_error(h), 0);
		} else {
			assert_true(ion_heap_get_error(h) < 0);
			assert_non_null(ion_heap_get_reason(h));
		}
	}
	free(list);
	ion_ctx_unref(ctx);
}

/* The best system heap answers ION_HEAP_SYSTEM_MASK; a CMA heap, when
 * there is one, ION_HEAP_TYPE_DMA_MASK; each heap appears once. */
static void test_type_convention_ids(void **state)
{
	struct ion_ctx *ctx;
	unsigned int ids = 0;
	int n;

	(void)state;
	assert_int_equal(ion_ctx_new(NULL, &ctx), 0);
	n = ion_ctx_get_heap_count(ctx);
	for (int i = 0; i < n; i++) {
		const struct ion_heap *h, *other;
		int id;

		assert_int_equal(ion_ctx_get_heap(ctx, (unsigned int)i, &h), 0);
		assert_int_equal(ion_ctx_find_heap(ctx, ion_heap_get_name(h), &other), 0);
		assert_ptr_equal(h, other);
		id = ion_heap_get_id(h);
		if (id < 0)
			continue;
		assert_false(ids & (1U << id));
		ids |= 1U << id;
		if (id < ION_HEAP_TYPE_CUSTOM)
			assert_int_equal(ion_heap_get_type(h), (unsigned int)id);
	}
	assert_true(ids & ION_HEAP_SYSTEM_MASK);
	ion_ctx_unref(ctx);
}

int main(void)
{
	static const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_expected_heaps),
		cmocka_unit_test(test_type_convention_ids),
	};

	return cmocka_run_group_tests_name("expected heaps", tests, NULL, NULL);
}
