/* SPDX-License-Identifier: MIT */
/*
 * (key, value, source) triples: what the tools show of a heap's or a
 * device's description, each fact with where it came from.
 */
#ifndef LIBION_ATTRS_H
#define LIBION_ATTRS_H

struct ion_attr {
	char *key;
	char *value;
	char *source;
};

struct ion_attrs {
	struct ion_attr *v;
	unsigned int n;
};

/* Appends a triple (value and source copied, source formatted); 0 or -ENOMEM. */
int ion_attrs_add(struct ion_attrs *attrs, const char *key, const char *value,
		  const char *source_format, ...)
	__attribute__((format(printf, 4, 5)));
void ion_attrs_clear(struct ion_attrs *attrs);
/* The index-th triple, for the public getters: 0, -EINVAL, -ENOENT. */
int ion_attrs_get(const struct ion_attrs *attrs, unsigned int index,
		  const char **ret_key, const char **ret_value,
		  const char **ret_source);

#endif
