/* SPDX-License-Identifier: MIT */
/*
 * The vocabulary's table, shared by its two files: vocabulary.c (the
 * table, storage, parsing, writing back, getters) and vocabulary-rules.c
 * (how two values AND, how a heap meets a value).  Nobody else includes
 * this.
 */
#ifndef LIBION_VOCABULARY_INTERNAL_H
#define LIBION_VOCABULARY_INTERNAL_H

#include "vocabulary.h"

/*
 * Whether heap h meets the requirement f (set) of the device who names:
 * 0, or 1 with *ret_reason (when ret_reason is not NULL, malloc'ed) in
 * words without the key, or -ENOMEM.
 */
typedef int (*ion_fit_fn)(const struct ion_conf_field *f, const struct ion_heap_view *h,
			  const struct ion_fit_who *who, char **ret_reason);

enum value_type {
	V_GLOB,		/* a Match key: one fnmatch() pattern */
	V_UDEV_GLOB,	/* KEY=GLOB */
	V_TOKEN,	/* one word */
	V_ATTRIBUTE,	/* one word naming a sysfs attribute */
	V_LIST,		/* blank-separated words */
	V_BOOL,
	V_PREFERENCE,
	V_ADDRESS_BITS,
	V_ANDROID_ID,
	V_SIZE,
	V_ALIGNMENT,
	V_CACHE,
	V_POOL,
};

/* How a key's values combine across the devices of one buffer. */
enum and_rule {
	AND_NONE,	/* not combined: each device's own (Pool hints) */
	AND_MAX,	/* the larger: Alignment */
	AND_MIN,	/* the smaller: AddressBits */
	AND_YES,	/* yes if either says yes: Contiguous, KernelMap */
	AND_CACHE,	/* any gives way; cached and uncached conflict */
	AND_BOTH,	/* the items both lists hold: Heaps */
};

#define K_BOARD (1u << ION_CONF_BOARD)
#define K_HEAP (1u << ION_CONF_HEAP)
#define K_DEVICE (1u << ION_CONF_DEVICE)

struct ion_key_info {
	const char *name;
	const char *udev;	/* device requirement keys: udev and cookies */
	unsigned int kinds;
	enum value_type type;
	enum and_rule and;
	/* Device requirements: their place in what is shown and written
	 * (1 first); 0 for the others. */
	unsigned int rank;
	bool local;		/* a requirement no other process may send */
	/* Requirements a heap must meet: their place among the solver's
	 * checks (1 first; the first a heap fails is the one it is told),
	 * and the check (vocabulary-rules.c).  0 and NULL: no check. */
	unsigned int check;
	ion_fit_fn fit;
};

extern const struct ion_key_info ion_keys[ION_KEY_COUNT];

int ion_fit_heaps(const struct ion_conf_field *f, const struct ion_heap_view *h,
		  const struct ion_fit_who *who, char **ret_reason);
int ion_fit_own_buffers(const struct ion_conf_field *f, const struct ion_heap_view *h,
			const struct ion_fit_who *who, char **ret_reason);
int ion_fit_contiguous(const struct ion_conf_field *f, const struct ion_heap_view *h,
		       const struct ion_fit_who *who, char **ret_reason);
int ion_fit_address_bits(const struct ion_conf_field *f, const struct ion_heap_view *h,
			 const struct ion_fit_who *who, char **ret_reason);
int ion_fit_cache(const struct ion_conf_field *f, const struct ion_heap_view *h,
		  const struct ion_fit_who *who, char **ret_reason);
int ion_fit_alignment(const struct ion_conf_field *f, const struct ion_heap_view *h,
		      const struct ion_fit_who *who, char **ret_reason);
int ion_fit_kernel_map(const struct ion_conf_field *f, const struct ion_heap_view *h,
		       const struct ion_fit_who *who, char **ret_reason);

#endif
