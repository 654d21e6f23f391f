// SPDX-License-Identifier: MIT
/*
 * The vocabulary's rules: how two devices' values of a key AND, and how
 * a heap meets a device's value, worded for the rejection the solver
 * records.  The table in vocabulary.c says which rule each key follows.
 */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "vocabulary-internal.h"
#include "util.h"

/* ---- AND ---- */

static bool strv_has(char *const *v, const char *s)
{
	for (; v && *v; v++)
		if (strcmp(*v, s) == 0)
			return true;
	return false;
}

/* The items of acc that add lists too, in acc's order, into *ret. */
static int list_both(const struct ion_conf_field *acc, const struct ion_conf_field *add,
		     struct ion_conf_field *ret)
{
	struct ion_conf_field c = { .set = true, .src = add->src };

	for (size_t i = 0; i < acc->v.list.n; i++)
		if (strv_has(add->v.list.v, acc->v.list.v[i]) &&
		    ion_strv_append(&c.v.list.v, &c.v.list.n, &acc->v.list.v[i], 1) < 0) {
			ion_conf_field_clear(ION_KEY_HEAPS, &c);
			return -ENOMEM;
		}
	if (!c.v.list.v && !(c.v.list.v = calloc(1, sizeof(char *))))
		return -ENOMEM;
	*ret = c;
	return 0;
}

int ion_conf_field_and(enum ion_conf_key key, struct ion_conf_field *acc,
		       const struct ion_conf_field *add)
{
	struct ion_conf_field c;
	bool take;
	int r;

	if ((unsigned int)key >= ION_KEY_COUNT || ion_keys[key].and == AND_NONE)
		return -EOPNOTSUPP;
	if (!add->set)
		return 0;
	if (!acc->set)
		return ion_conf_field_copy(key, acc, add);
	switch (ion_keys[key].and) {
	case AND_MAX:
		take = add->v.u > acc->v.u;
		break;
	case AND_MIN:
		take = add->v.u < acc->v.u;
		break;
	case AND_YES:
		take = add->v.b && !acc->v.b;
		break;
	case AND_CACHE:
		if (acc->v.u != ION_CACHE_ANY && add->v.u != ION_CACHE_ANY &&
		    acc->v.u != add->v.u)
			return -EINVAL;
		take = acc->v.u == ION_CACHE_ANY && add->v.u != ION_CACHE_ANY;
		break;
	case AND_BOTH:
		r = list_both(acc, add, &c);
		if (r < 0)
			return r;
		ion_conf_field_clear(key, acc);
		*acc = c;
		return 0;
	default:
		return -EOPNOTSUPP;
	}
	if (take)
		*acc = *add;	/* scalars: nothing to copy deeply */
	return 0;
}

/* ---- how a heap meets a value ---- */

/* 1 with the words in *ret_reason (when asked for), or -ENOMEM. */
__attribute__((format(printf, 2, 3)))
static int unfit(char **ret_reason, const char *format, ...)
{
	va_list args;
	int r;

	if (!ret_reason)
		return 1;
	va_start(args, format);
	r = vasprintf(ret_reason, format, args);
	va_end(args);
	return r < 0 ? -ENOMEM : 1;
}

static bool heap_is_named(const struct ion_heap_view *h, const char *name)
{
	if (strcmp(h->name, name) == 0 || strcmp(h->kernel_name, name) == 0 ||
	    strv_has(h->aliases, name))
		return true;
	return strcmp(name, "cma") == 0 && h->default_cma;
}

int ion_fit_heaps(const struct ion_conf_field *f, const struct ion_heap_view *h,
		  const struct ion_fit_who *who, char **ret_reason)
{
	_cleanup_free_ char *text = NULL;

	for (size_t i = 0; i < f->v.list.n; i++)
		if (heap_is_named(h, f->v.list.v[i]))
			return 0;
	if (ret_reason && !(text = ion_strv_join(f->v.list.v, " ")))
		return -ENOMEM;
	return unfit(ret_reason, "%s takes only the heaps %s", who->device,
		     text && *text ? text : "(none)");
}

int ion_fit_own_buffers(const struct ion_conf_field *f, const struct ion_heap_view *h,
			const struct ion_fit_who *who, char **ret_reason)
{
	(void)h;
	if (!f->v.b)
		return 0;
	return unfit(ret_reason, "%s takes only buffers of its own DRM device%s%s", who->device,
		     who->own_heap ? ", heap " : "", who->own_heap ? who->own_heap : "");
}

int ion_fit_contiguous(const struct ion_conf_field *f, const struct ion_heap_view *h,
		       const struct ion_fit_who *who, char **ret_reason)
{
	if (!f->v.b || h->contiguous)
		return 0;
	return unfit(ret_reason, "%s needs physically contiguous memory, and %s is scattered",
		     who->device, h->name);
}

int ion_fit_address_bits(const struct ion_conf_field *f, const struct ion_heap_view *h,
			 const struct ion_fit_who *who, char **ret_reason)
{
	if (h->address_bits <= f->v.u)
		return 0;
	return unfit(ret_reason, "%s reaches only addresses below 2^%u, and %s may hand out memory up to 2^%u",
		     who->device, (unsigned int)f->v.u, h->name, h->address_bits);
}

int ion_fit_cache(const struct ion_conf_field *f, const struct ion_heap_view *h,
		  const struct ion_fit_who *who, char **ret_reason)
{
	if (f->v.u == ION_CACHE_UNCACHED && !h->uncached)
		return unfit(ret_reason, "%s needs uncached CPU mappings, and %s maps cached",
			     who->device, h->name);
	if (f->v.u == ION_CACHE_CACHED && !h->cached)
		return unfit(ret_reason, "%s needs cached CPU mappings, and %s maps uncached",
			     who->device, h->name);
	return 0;
}

int ion_fit_alignment(const struct ion_conf_field *f, const struct ion_heap_view *h,
		      const struct ion_fit_who *who, char **ret_reason)
{
	if (h->alignment >= f->v.u)
		return 0;
	return unfit(ret_reason, "%s needs buffers aligned to %llu bytes, and %s aligns to %zu",
		     who->device, (unsigned long long)f->v.u, h->name, h->alignment);
}

int ion_fit_kernel_map(const struct ion_conf_field *f, const struct ion_heap_view *h,
		       const struct ion_fit_who *who, char **ret_reason)
{
	if (!f->v.b || h->kernel_map)
		return 0;
	return unfit(ret_reason, "%s maps buffers in the kernel, and %s buffers cannot be",
		     who->device, h->name);
}

int ion_props_fit(const struct ion_conf_props *props, const struct ion_heap_view *heap,
		  const struct ion_fit_who *who, enum ion_conf_key *ret_key,
		  char **ret_reason)
{
	int first = -1;

	/* The table's order decides which failure the heap is told, and the
	 * words are made for that one only. */
	for (int k = 0; k < ION_KEY_COUNT; k++) {
		int r;

		if (!ion_keys[k].fit || !props->f[k].set ||
		    (first >= 0 && ion_keys[k].check > ion_keys[first].check))
			continue;
		r = ion_keys[k].fit(&props->f[k], heap, who, NULL);
		if (r < 0)
			return r;
		if (r > 0)
			first = k;
	}
	if (first < 0)
		return 0;
	if (ret_reason) {
		int r = ion_keys[first].fit(&props->f[first], heap, who, ret_reason);

		if (r < 0)
			return r;
	}
	*ret_key = (enum ion_conf_key)first;
	return 1;
}
