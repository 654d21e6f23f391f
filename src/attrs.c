// SPDX-License-Identifier: MIT
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "attrs.h"
#include "util.h"

int ion_attrs_add(struct ion_attrs *attrs, const char *key, const char *value,
		  const char *source_format, ...)
{
	struct ion_attr a = { .key = strdup(key), .value = strdup(value) };
	struct ion_attr *grown;
	va_list args;
	int r;

	va_start(args, source_format);
	r = vasprintf(&a.source, source_format, args);
	va_end(args);
	if (r < 0)
		a.source = NULL;
	grown = a.key && a.value && a.source
			? realloc(attrs->v, (attrs->n + 1) * sizeof(*grown))
			: NULL;
	if (!grown) {
		free(a.key);
		free(a.value);
		free(a.source);
		return -ENOMEM;
	}
	attrs->v = grown;
	attrs->v[attrs->n++] = a;
	return 0;
}

void ion_attrs_clear(struct ion_attrs *attrs)
{
	for (unsigned int i = 0; i < attrs->n; i++) {
		free(attrs->v[i].key);
		free(attrs->v[i].value);
		free(attrs->v[i].source);
	}
	free(attrs->v);
	attrs->v = NULL;
	attrs->n = 0;
}

int ion_attrs_get(const struct ion_attrs *attrs, unsigned int index,
		  const char **ret_key, const char **ret_value,
		  const char **ret_source)
{
	if (!attrs || !ret_key || !ret_value || !ret_source)
		return -EINVAL;
	if (index >= attrs->n)
		return -ENOENT;
	*ret_key = attrs->v[index].key;
	*ret_value = attrs->v[index].value;
	*ret_source = attrs->v[index].source;
	return 0;
}
