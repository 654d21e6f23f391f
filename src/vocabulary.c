// SPDX-License-Identifier: MIT
/*
 * The constraint vocabulary: one table entry per key (its name, the
 * sections that take it, its udev name, its value type, how two devices'
 * values AND, where it stands among a device's requirements), and the
 * one place that parses, writes back, copies, ANDs and reads values.
 * The heaps.d parser, the udev and cookie readers and the ionc1 text
 * store through it; the solver and discovery read through its getters.
 */
#include <ctype.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

#include "vocabulary-internal.h"
#include "sysfs.h"
#include "util.h"

#define POOL_COUNT_MAX 1024
#define PREFERENCE_MAX 1000

/* ---- keys ---- */

const struct ion_key_info ion_keys[ION_KEY_COUNT] = {
	[ION_KEY_MATCH_COMPATIBLE] = { "MatchCompatible", NULL, K_BOARD, V_GLOB, AND_NONE, 0, false, 0, NULL },
	[ION_KEY_MATCH_MODEL] = { "MatchModel", NULL, K_BOARD, V_GLOB, AND_NONE, 0, false, 0, NULL },
	[ION_KEY_MATCH_DMI_VENDOR] = { "MatchDMIVendor", NULL, K_BOARD, V_GLOB, AND_NONE, 0, false, 0, NULL },
	[ION_KEY_MATCH_DMI_PRODUCT] = { "MatchDMIProduct", NULL, K_BOARD, V_GLOB, AND_NONE, 0, false, 0, NULL },
	[ION_KEY_MATCH_DMI_BOARD] = { "MatchDMIBoard", NULL, K_BOARD, V_GLOB, AND_NONE, 0, false, 0, NULL },
	[ION_KEY_COOKIE_ATTRIBUTE] = { "CookieAttribute", NULL, K_BOARD, V_ATTRIBUTE, AND_NONE, 0, false, 0, NULL },

	[ION_KEY_MATCH_SYSFS_PATH] = { "MatchSysfsPath", NULL, K_DEVICE, V_GLOB, AND_NONE, 0, false, 0, NULL },
	[ION_KEY_MATCH_SUBSYSTEM] = { "MatchSubsystem", NULL, K_DEVICE, V_GLOB, AND_NONE, 0, false, 0, NULL },
	[ION_KEY_MATCH_DRIVER] = { "MatchDriver", NULL, K_DEVICE, V_GLOB, AND_NONE, 0, false, 0, NULL },
	[ION_KEY_MATCH_OF_COMPATIBLE] = { "MatchOFCompatible", NULL, K_DEVICE, V_GLOB, AND_NONE, 0, false, 0, NULL },
	[ION_KEY_MATCH_UDEV_PROPERTY] = { "MatchUdevProperty", NULL, K_DEVICE, V_UDEV_GLOB, AND_NONE, 0, false, 0, NULL },
	[ION_KEY_MATCH_DRM_DRIVER] = { "MatchDRMDriver", NULL, K_DEVICE, V_GLOB, AND_NONE, 0, false, 0, NULL },
	[ION_KEY_MATCH_V4L2_CARD] = { "MatchV4L2Card", NULL, K_DEVICE, V_GLOB, AND_NONE, 0, false, 0, NULL },
	[ION_KEY_MATCH_NAME] = { "MatchName", NULL, K_DEVICE, V_GLOB, AND_NONE, 0, false, 0, NULL },

	[ION_KEY_ALIASES] = { "Aliases", NULL, K_HEAP, V_LIST, AND_NONE, 0, false, 0, NULL },
	[ION_KEY_MEMORY] = { "Memory", NULL, K_HEAP, V_TOKEN, AND_NONE, 0, false, 0, NULL },
	[ION_KEY_CPU_ACCESS] = { "CPUAccess", NULL, K_HEAP, V_BOOL, AND_NONE, 0, false, 0, NULL },
	[ION_KEY_PREFERENCE] = { "Preference", NULL, K_HEAP, V_PREFERENCE, AND_NONE, 0, false, 0, NULL },
	[ION_KEY_ANDROID_ID] = { "AndroidId", NULL, K_HEAP, V_ANDROID_ID, AND_NONE, 0, false, 0, NULL },
	[ION_KEY_MAX_SIZE] = { "MaxSize", NULL, K_HEAP, V_SIZE, AND_NONE, 0, false, 0, NULL },

	[ION_KEY_HEAPS] = { "Heaps", "ION_HEAPS", K_DEVICE, V_LIST, AND_BOTH, 1, false, 1, ion_fit_heaps },
	[ION_KEY_OWN_BUFFERS_ONLY] = { "OwnBuffersOnly", "ION_OWN_BUFFERS_ONLY", K_DEVICE, V_BOOL, AND_YES, 7, false, 2, ion_fit_own_buffers },
	[ION_KEY_PITCH_ALIGNMENT] = { "PitchAlignment", "ION_PITCH_ALIGNMENT", K_DEVICE, V_ALIGNMENT, AND_MAX, 9, true, 0, NULL },
	[ION_KEY_PREFERRED_PITCH_ALIGNMENT] = { "PreferredPitchAlignment", "ION_PREFERRED_PITCH_ALIGNMENT", K_DEVICE, V_ALIGNMENT, AND_MAX, 10, true, 0, NULL },

	[ION_KEY_CONTIGUOUS] = { "Contiguous", "ION_CONTIGUOUS", K_HEAP | K_DEVICE, V_BOOL, AND_YES, 2, false, 3, ion_fit_contiguous },
	[ION_KEY_CACHE] = { "Cache", "ION_CACHE", K_HEAP | K_DEVICE, V_CACHE, AND_CACHE, 4, false, 5, ion_fit_cache },
	[ION_KEY_ADDRESS_BITS] = { "AddressBits", "ION_ADDRESS_BITS", K_HEAP | K_DEVICE, V_ADDRESS_BITS, AND_MIN, 3, false, 4, ion_fit_address_bits },
	[ION_KEY_ALIGNMENT] = { "Alignment", "ION_ALIGNMENT", K_HEAP | K_DEVICE, V_ALIGNMENT, AND_MAX, 5, false, 6, ion_fit_alignment },
	[ION_KEY_KERNEL_MAP] = { "KernelMap", "ION_KERNEL_MAP", K_HEAP | K_DEVICE, V_BOOL, AND_YES, 6, false, 7, ion_fit_kernel_map },
	[ION_KEY_POOL] = { "Pool", "ION_POOL", K_HEAP | K_DEVICE, V_POOL, AND_NONE, 8, true, 0, NULL },
};

bool ion_conf_key_is_match(enum ion_conf_key key)
{
	return ion_keys[key].type == V_GLOB || ion_keys[key].type == V_UDEV_GLOB;
}

bool ion_conf_key_is_list(enum ion_conf_key key)
{
	return ion_keys[key].type == V_LIST || ion_keys[key].type == V_POOL;
}

bool ion_conf_key_in(enum ion_conf_key key, enum ion_conf_kind kind)
{
	return ion_keys[key].kinds & (1u << kind);
}

bool ion_conf_key_is_requirement(enum ion_conf_key key)
{
	return (unsigned int)key < ION_KEY_COUNT && ion_keys[key].rank;
}

bool ion_conf_key_is_remote(enum ion_conf_key key)
{
	return ion_conf_key_is_requirement(key) && !ion_keys[key].local;
}

int ion_conf_requirement(size_t i)
{
	for (int k = 0; k < ION_KEY_COUNT; k++)
		if (ion_keys[k].rank == i + 1)
			return k;
	return -1;
}

/* How a field of the key stores its value. */
enum storage { ST_BOOL, ST_INT, ST_UINT, ST_STRING, ST_LIST, ST_POOL };
#define ST_CACHE ((int)ST_POOL + 1)	/* for getters: Cache is no number */

static enum storage key_storage(enum ion_conf_key key)
{
	switch (ion_keys[key].type) {
	case V_BOOL:
		return ST_BOOL;
	case V_PREFERENCE:
		return ST_INT;
	case V_ADDRESS_BITS: case V_ANDROID_ID: case V_SIZE: case V_ALIGNMENT:
	case V_CACHE:
		return ST_UINT;
	case V_LIST:
		return ST_LIST;
	case V_POOL:
		return ST_POOL;
	default:
		return ST_STRING;
	}
}

int ion_conf_key_from_name(const char *name)
{
	for (int k = 0; name && k < ION_KEY_COUNT; k++)
		if (strcmp(ion_keys[k].name, name) == 0)
			return k;
	return -1;
}

const char *ion_conf_key_name(enum ion_conf_key key)
{
	return (unsigned int)key < ION_KEY_COUNT ? ion_keys[key].name : NULL;
}

int ion_conf_key_from_udev(const char *property)
{
	for (int k = 0; property && k < ION_KEY_COUNT; k++)
		if (ion_keys[k].udev && strcmp(ion_keys[k].udev, property) == 0)
			return k;
	return -1;
}

/* ---- fields ---- */

void ion_conf_field_clear(enum ion_conf_key key, struct ion_conf_field *f)
{
	switch (key_storage(key)) {
	case ST_STRING:
		free(f->v.s);
		break;
	case ST_LIST:
		ion_strv_free(f->v.list.v);
		break;
	case ST_POOL:
		free(f->v.pool.v);
		break;
	default:
		break;
	}
	memset(f, 0, sizeof(*f));
}

void ion_conf_props_clear(struct ion_conf_props *props)
{
	if (!props)
		return;
	for (int k = 0; k < ION_KEY_COUNT; k++)
		ion_conf_field_clear(k, &props->f[k]);
}

static int pool_append(struct ion_conf_field *f, const struct ion_pool_hint *add,
		       size_t n)
{
	struct ion_pool_hint *v;

	if (n > SIZE_MAX / sizeof(*v) - f->v.pool.n)
		return -ENOMEM;
	v = realloc(f->v.pool.v, (f->v.pool.n + n) * sizeof(*v));
	if (!v)
		return -ENOMEM;
	memcpy(v + f->v.pool.n, add, n * sizeof(*v));
	f->v.pool.v = v;
	f->v.pool.n += n;
	return 0;
}

int ion_conf_field_append(enum ion_conf_key key, struct ion_conf_field *f,
			  const struct ion_conf_field *add)
{
	if (key_storage(key) == ST_POOL)
		return pool_append(f, add->v.pool.v, add->v.pool.n);
	return ion_strv_append(&f->v.list.v, &f->v.list.n, add->v.list.v, add->v.list.n);
}

int ion_conf_field_copy(enum ion_conf_key key, struct ion_conf_field *dst,
			const struct ion_conf_field *src)
{
	struct ion_conf_field c = { .set = src->set, .src = src->src };
	int r = 0;

	if (!src->set) {
		*dst = c;
		return 0;
	}
	switch (key_storage(key)) {
	case ST_STRING:
		c.v.s = strdup(src->v.s);
		if (!c.v.s)
			return -ENOMEM;
		break;
	case ST_LIST:
		r = ion_strv_append(&c.v.list.v, &c.v.list.n, src->v.list.v, src->v.list.n);
		break;
	case ST_POOL:
		r = pool_append(&c, src->v.pool.v, src->v.pool.n);
		break;
	default:
		c.v = src->v;
		break;
	}
	if (r < 0) {
		ion_conf_field_clear(key, &c);
		return r;
	}
	*dst = c;
	return 0;
}

int ion_conf_props_copy(struct ion_conf_props *dst, const struct ion_conf_props *src)
{
	struct ion_conf_props c = { 0 };

	for (int k = 0; k < ION_KEY_COUNT; k++)
		if (ion_conf_field_copy(k, &c.f[k], &src->f[k]) < 0) {
			ion_conf_props_clear(&c);
			return -ENOMEM;
		}
	*dst = c;
	return 0;
}

/* ---- values ---- */

/* The words of s (blank-separated), as a NULL-terminated list. */
static int split_words(const char *s, char ***ret, size_t *ret_n)
{
	char **v = NULL;
	size_t n = 0;

	for (;;) {
		size_t len;
		char *w, **nv;

		s += strspn(s, ION_BLANKS);
		if (!*s)
			break;
		len = strcspn(s, ION_BLANKS);
		w = strndup(s, len);
		nv = w ? realloc(v, (n + 2) * sizeof(*v)) : NULL;
		if (!nv) {
			free(w);
			if (v)
				v[n] = NULL;
			ion_strv_free(v);
			return -ENOMEM;
		}
		v = nv;
		v[n++] = w;
		v[n] = NULL;
		s += len;
	}
	*ret = v;
	*ret_n = n;
	return 0;
}

static int parse_bool(const char *s, bool *ret)
{
	static const char *const yes[] = { "yes", "true", "on", "1" };
	static const char *const no[] = { "no", "false", "off", "0" };

	for (size_t i = 0; i < sizeof(yes) / sizeof(yes[0]); i++) {
		if (strcasecmp(s, yes[i]) == 0) {
			*ret = true;
			return 0;
		}
		if (strcasecmp(s, no[i]) == 0) {
			*ret = false;
			return 0;
		}
	}
	return -EINVAL;
}

static int parse_uint_range(const char *s, uint64_t min, uint64_t max, uint64_t *ret)
{
	uint64_t v;

	/* Decimal only: a board file has no use for 0x20 address bits. */
	if (!isdigit((unsigned char)s[0]) || ion_parse_u64(s, 10, &v) < 0 ||
	    v < min || v > max)
		return -EINVAL;
	*ret = v;
	return 0;
}

static int parse_pool_item(const char *s, struct ion_pool_hint *ret)
{
	const char *x = strchr(s, 'x');
	_cleanup_free_ char *count = NULL;
	uint64_t n, size;

	if (!x)
		return -EINVAL;
	count = strndup(s, (size_t)(x - s));
	if (!count)
		return -ENOMEM;
	if (parse_uint_range(count, 1, POOL_COUNT_MAX, &n) < 0 ||
	    ion_parse_size(x + 1, &size) < 0 || size == 0)
		return -EINVAL;
	ret->count = (uint32_t)n;
	ret->size = size;
	return 0;
}

/* Parses trimmed, non-empty s into *f (f->set and f->src already set). */
static int parse_value(enum ion_conf_key key, char *s, struct ion_conf_field *f,
		       const char **ret_message)
{
	_cleanup_free_ char **words = NULL;
	size_t n_words = 0;
	const char *eq;
	uint64_t u;
	int r;

	switch (ion_keys[key].type) {
	case V_UDEV_GLOB:
		eq = strchr(s, '=');
		if (!eq || eq == s) {
			*ret_message = "expected PROPERTY=GLOB";
			return -EINVAL;
		}
		if (strcspn(s, ION_BLANKS) < (size_t)(eq - s)) {
			*ret_message = "the property name before '=' has blanks";
			return -EINVAL;
		}
		break;
	case V_ATTRIBUTE:
		if (strchr(s, '/') || strcmp(s, ".") == 0 || strcmp(s, "..") == 0) {
			*ret_message = "expected a sysfs attribute name, without '/'";
			return -EINVAL;
		}
		/* fall through */
	case V_TOKEN:
		if (ion_has_blank(s)) {
			*ret_message = "expected one word, without blanks";
			return -EINVAL;
		}
		break;
	case V_GLOB:
		break;
	case V_LIST:
		return split_words(s, &f->v.list.v, &f->v.list.n);
	case V_BOOL:
		if (parse_bool(s, &f->v.b) < 0) {
			*ret_message = "expected yes/no, true/false, on/off or 1/0";
			return -EINVAL;
		}
		return 0;
	case V_PREFERENCE:
		if (parse_uint_range(s + (s[0] == '-'), 0, PREFERENCE_MAX, &u) < 0) {
			*ret_message = "expected an integer from -1000 to 1000";
			return -EINVAL;
		}
		f->v.i = s[0] == '-' ? -(int64_t)u : (int64_t)u;
		return 0;
	case V_ADDRESS_BITS:
		if (parse_uint_range(s, 1, 64, &f->v.u) < 0) {
			*ret_message = "expected a number of bits from 1 to 64";
			return -EINVAL;
		}
		return 0;
	case V_ANDROID_ID:
		if (parse_uint_range(s, 0, 31, &f->v.u) < 0) {
			*ret_message = "expected an ION heap id from 0 to 31";
			return -EINVAL;
		}
		return 0;
	case V_SIZE:
		if (ion_parse_size(s, &f->v.u) < 0 || f->v.u == 0) {
			*ret_message = "expected a size above 0, with an optional K, M or G suffix";
			return -EINVAL;
		}
		return 0;
	case V_ALIGNMENT:
		if (ion_parse_size(s, &u) < 0 || u == 0 || (u & (u - 1))) {
			*ret_message = "expected a power of two, with an optional K, M or G suffix";
			return -EINVAL;
		}
		f->v.u = u;
		return 0;
	case V_CACHE:
		if (strcasecmp(s, "cached") == 0)
			f->v.u = ION_CACHE_CACHED;
		else if (strcasecmp(s, "uncached") == 0)
			f->v.u = ION_CACHE_UNCACHED;
		else if (strcasecmp(s, "any") == 0)
			f->v.u = ION_CACHE_ANY;
		else {
			*ret_message = "expected cached, uncached or any";
			return -EINVAL;
		}
		return 0;
	case V_POOL:
		r = split_words(s, &words, &n_words);
		if (r < 0)
			return r;
		f->v.pool.v = calloc(n_words, sizeof(*f->v.pool.v));
		if (!f->v.pool.v) {
			ion_strv_free(steal_ptr(&words));
			return -ENOMEM;
		}
		f->v.pool.n = n_words;
		for (size_t i = 0; i < n_words && r == 0; i++)
			r = parse_pool_item(words[i], &f->v.pool.v[i]);
		ion_strv_free(steal_ptr(&words));
		if (r < 0) {
			ion_conf_field_clear(key, f);
			if (r == -EINVAL)
				*ret_message = "expected COUNTxSIZE items (COUNT 1 to 1024, SIZE above 0), such as 8x1M";
			return r;
		}
		return 0;
	}
	/* The string kinds keep the text itself. */
	f->v.s = strdup(s);
	return f->v.s ? 0 : -ENOMEM;
}

int ion_conf_field_parse(enum ion_conf_key key, const char *value,
			 struct ion_conf_src src, struct ion_conf_field *field,
			 const char **ret_message)
{
	struct ion_conf_field f = { .set = true, .src = src };
	_cleanup_free_ char *copy = NULL;
	const char *message = NULL;
	char *s;
	int r;

	if ((unsigned int)key >= ION_KEY_COUNT || !value || !field) {
		if (ret_message)
			*ret_message = "no such key";
		return -EINVAL;
	}
	copy = strdup(value);
	if (!copy)
		return -ENOMEM;
	s = ion_trim(copy);
	if (!*s) {
		message = "a value is needed";
		r = -EINVAL;
	} else {
		r = parse_value(key, s, &f, &message);
	}
	if (r < 0) {
		if (r == -EINVAL && ret_message)
			*ret_message = message;
		return r;
	}
	ion_conf_field_clear(key, field);
	*field = f;
	return 0;
}

static int format_size(FILE *out, uint64_t v)
{
	static const char suffix[] = "GMK";

	for (unsigned int i = 0; v && i < 3; i++) {
		unsigned int shift = 30 - 10 * i;

		if ((v & ((UINT64_C(1) << shift) - 1)) == 0)
			return fprintf(out, "%" PRIu64 "%c", v >> shift, suffix[i]);
	}
	return fprintf(out, "%" PRIu64, v);
}

char *ion_conf_field_format(enum ion_conf_key key,
			    const struct ion_conf_field *field)
{
	static const char *const cache_names[] = {
		[ION_CACHE_ANY] = "any",
		[ION_CACHE_CACHED] = "cached",
		[ION_CACHE_UNCACHED] = "uncached",
	};
	char *text = NULL;
	size_t size = 0;
	FILE *out;
	bool ok;

	if ((unsigned int)key >= ION_KEY_COUNT || !field || !field->set)
		return NULL;
	out = open_memstream(&text, &size);
	if (!out)
		return NULL;
	switch (key_storage(key)) {
	case ST_BOOL:
		fputs(field->v.b ? "yes" : "no", out);
		break;
	case ST_INT:
		fprintf(out, "%" PRId64, field->v.i);
		break;
	case ST_UINT:
		if (ion_keys[key].type == V_CACHE)
			fputs(field->v.u < 3 ? cache_names[field->v.u] : "any", out);
		else if (ion_keys[key].type == V_SIZE || ion_keys[key].type == V_ALIGNMENT)
			format_size(out, field->v.u);
		else
			fprintf(out, "%" PRIu64, field->v.u);
		break;
	case ST_STRING:
		fputs(field->v.s, out);
		break;
	case ST_LIST:
		for (size_t i = 0; i < field->v.list.n; i++)
			fprintf(out, "%s%s", i ? " " : "", field->v.list.v[i]);
		break;
	case ST_POOL:
		for (size_t i = 0; i < field->v.pool.n; i++) {
			fprintf(out, "%s%" PRIu32 "x", i ? " " : "",
				field->v.pool.v[i].count);
			format_size(out, field->v.pool.v[i].size);
		}
		break;
	}
	ok = !ferror(out);
	if (fclose(out) != 0 || !ok) {
		free(text);
		return NULL;
	}
	return text;
}


/* ---- getters and setters ---- */

/* What a getter hands out: the storage, but Cache apart from numbers. */
static int getter_kind(enum ion_conf_key key)
{
	return ion_keys[key].type == V_CACHE ? ST_CACHE : (int)key_storage(key);
}

static const struct ion_conf_field *field_of(const struct ion_conf_props *props,
					     enum ion_conf_key key, int kind)
{
	if (!props || (unsigned int)key >= ION_KEY_COUNT || getter_kind(key) != kind ||
	    !props->f[key].set)
		return NULL;
	return &props->f[key];
}

#define GETTER(what, type, kind, value)                                              \
	bool ion_props_get_##what(const struct ion_conf_props *props,               \
				  enum ion_conf_key key, type *ret)                  \
	{                                                                            \
		const struct ion_conf_field *f = field_of(props, key, kind);         \
									             \
		if (f)                                                               \
			*ret = (type)(value);                                        \
		return f;                                                            \
	}

GETTER(bool, bool, ST_BOOL, f->v.b)
GETTER(uint, uint64_t, ST_UINT, f->v.u)
GETTER(int, int64_t, ST_INT, f->v.i)
GETTER(cache, enum ion_cache_mode, ST_CACHE, f->v.u)
GETTER(string, const char *, ST_STRING, f->v.s)

#define LIST_GETTER(what, type, kind, member)                                        \
	bool ion_props_get_##what(const struct ion_conf_props *props,               \
				  enum ion_conf_key key, type *ret, size_t *ret_n)   \
	{                                                                            \
		const struct ion_conf_field *f = field_of(props, key, kind);         \
									             \
		if (f) {                                                             \
			*ret = f->v.member.v;                                        \
			*ret_n = f->v.member.n;                                      \
		}                                                                    \
		return f;                                                            \
	}

LIST_GETTER(list, char *const *, ST_LIST, list)
LIST_GETTER(pool, const struct ion_pool_hint *, ST_POOL, pool)

bool ion_props_get_src(const struct ion_conf_props *props, enum ion_conf_key key,
		       struct ion_conf_src *ret)
{
	if (!ion_props_is_set(props, key))
		return false;
	*ret = props->f[key].src;
	return true;
}

bool ion_props_is_set(const struct ion_conf_props *props, enum ion_conf_key key)
{
	return props && (unsigned int)key < ION_KEY_COUNT && props->f[key].set;
}

static int set_scalar(struct ion_conf_props *props, enum ion_conf_key key,
		      enum storage storage, struct ion_conf_field f)
{
	if (!props || (unsigned int)key >= ION_KEY_COUNT || key_storage(key) != storage)
		return -EINVAL;
	f.set = true;
	props->f[key] = f;
	return 0;
}

int ion_props_set_bool(struct ion_conf_props *props, enum ion_conf_key key, bool v,
		       struct ion_conf_src src)
{
	return set_scalar(props, key, ST_BOOL, (struct ion_conf_field){ .src = src, .v.b = v });
}

int ion_props_set_uint(struct ion_conf_props *props, enum ion_conf_key key, uint64_t v,
		       struct ion_conf_src src)
{
	return set_scalar(props, key, ST_UINT, (struct ion_conf_field){ .src = src, .v.u = v });
}

void ion_props_fill_unset(struct ion_conf_props *to, struct ion_conf_props *from,
			  enum ion_conf_key key)
{
	if (!to->f[key].set && from->f[key].set) {
		to->f[key] = from->f[key];
		memset(&from->f[key], 0, sizeof(from->f[key]));
	}
}
