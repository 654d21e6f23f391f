// SPDX-License-Identifier: MIT
/*
 * heaps.d: board files read into sections, each setting with its file and
 * line.  Loading keeps only the sections that apply to this board; the
 * apply calls fold them into one value per key when discovery asks.  The
 * format is specified in heaps.d/README.md, and this file follows it.
 *
 * Every problem a file can cause is reported and skips only what it
 * breaks; what the files cannot cause (ENOMEM, fd exhaustion, EINTR) is
 * returned instead, so that a transient failure never looks like a
 * broken board file and nothing half-loaded is handed out.
 */
#include <ctype.h>
#include <dirent.h>
#include <fcntl.h>
#include <fnmatch.h>
#include <inttypes.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>

#include "heaps-conf.h"
#include "util.h"

#define CONF_FILE_MAX (1024 * 1024)
#define CONF_LINE_MAX 4096
#define BLANKS " \t\r\v\f"

#define POOL_COUNT_MAX 1024
#define PREFERENCE_MAX 1000

/* ---- keys ---- */

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

#define K_BOARD (1u << ION_CONF_BOARD)
#define K_HEAP (1u << ION_CONF_HEAP)
#define K_DEVICE (1u << ION_CONF_DEVICE)

struct key_info {
	const char *name;
	const char *udev;	/* device requirement keys: udev and cookies */
	unsigned int kinds;
	enum value_type type;
};

static const struct key_info keys[ION_KEY_COUNT] = {
	[ION_KEY_MATCH_COMPATIBLE] = { "MatchCompatible", NULL, K_BOARD, V_GLOB },
	[ION_KEY_MATCH_MODEL] = { "MatchModel", NULL, K_BOARD, V_GLOB },
	[ION_KEY_MATCH_DMI_VENDOR] = { "MatchDMIVendor", NULL, K_BOARD, V_GLOB },
	[ION_KEY_MATCH_DMI_PRODUCT] = { "MatchDMIProduct", NULL, K_BOARD, V_GLOB },
	[ION_KEY_MATCH_DMI_BOARD] = { "MatchDMIBoard", NULL, K_BOARD, V_GLOB },
	[ION_KEY_COOKIE_ATTRIBUTE] = { "CookieAttribute", NULL, K_BOARD, V_ATTRIBUTE },

	[ION_KEY_MATCH_SYSFS_PATH] = { "MatchSysfsPath", NULL, K_DEVICE, V_GLOB },
	[ION_KEY_MATCH_SUBSYSTEM] = { "MatchSubsystem", NULL, K_DEVICE, V_GLOB },
	[ION_KEY_MATCH_DRIVER] = { "MatchDriver", NULL, K_DEVICE, V_GLOB },
	[ION_KEY_MATCH_OF_COMPATIBLE] = { "MatchOFCompatible", NULL, K_DEVICE, V_GLOB },
	[ION_KEY_MATCH_UDEV_PROPERTY] = { "MatchUdevProperty", NULL, K_DEVICE, V_UDEV_GLOB },
	[ION_KEY_MATCH_DRM_DRIVER] = { "MatchDRMDriver", NULL, K_DEVICE, V_GLOB },
	[ION_KEY_MATCH_V4L2_CARD] = { "MatchV4L2Card", NULL, K_DEVICE, V_GLOB },
	[ION_KEY_MATCH_NAME] = { "MatchName", NULL, K_DEVICE, V_GLOB },

	[ION_KEY_ALIASES] = { "Aliases", NULL, K_HEAP, V_LIST },
	[ION_KEY_MEMORY] = { "Memory", NULL, K_HEAP, V_TOKEN },
	[ION_KEY_CPU_ACCESS] = { "CPUAccess", NULL, K_HEAP, V_BOOL },
	[ION_KEY_PREFERENCE] = { "Preference", NULL, K_HEAP, V_PREFERENCE },
	[ION_KEY_ANDROID_ID] = { "AndroidId", NULL, K_HEAP, V_ANDROID_ID },
	[ION_KEY_MAX_SIZE] = { "MaxSize", NULL, K_HEAP, V_SIZE },

	[ION_KEY_HEAPS] = { "Heaps", "ION_HEAPS", K_DEVICE, V_LIST },
	[ION_KEY_OWN_BUFFERS_ONLY] = { "OwnBuffersOnly", "ION_OWN_BUFFERS_ONLY", K_DEVICE, V_BOOL },

	[ION_KEY_CONTIGUOUS] = { "Contiguous", "ION_CONTIGUOUS", K_HEAP | K_DEVICE, V_BOOL },
	[ION_KEY_CACHE] = { "Cache", "ION_CACHE", K_HEAP | K_DEVICE, V_CACHE },
	[ION_KEY_ADDRESS_BITS] = { "AddressBits", "ION_ADDRESS_BITS", K_HEAP | K_DEVICE, V_ADDRESS_BITS },
	[ION_KEY_ALIGNMENT] = { "Alignment", "ION_ALIGNMENT", K_HEAP | K_DEVICE, V_ALIGNMENT },
	[ION_KEY_KERNEL_MAP] = { "KernelMap", "ION_KERNEL_MAP", K_HEAP | K_DEVICE, V_BOOL },
	[ION_KEY_POOL] = { "Pool", "ION_POOL", K_HEAP | K_DEVICE, V_POOL },
};

static const char *const kind_names[] = {
	[ION_CONF_BOARD] = "Board",
	[ION_CONF_HEAP] = "Heap",
	[ION_CONF_DEVICE] = "Device",
};

static bool key_is_match(enum ion_conf_key key)
{
	return keys[key].type == V_GLOB || keys[key].type == V_UDEV_GLOB;
}

static bool key_is_list(enum ion_conf_key key)
{
	return keys[key].type == V_LIST || keys[key].type == V_POOL;
}

/* How a field of the key stores its value. */
enum storage { ST_BOOL, ST_INT, ST_UINT, ST_STRING, ST_LIST, ST_POOL };

static enum storage key_storage(enum ion_conf_key key)
{
	switch (keys[key].type) {
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
		if (strcmp(keys[k].name, name) == 0)
			return k;
	return -1;
}

const char *ion_conf_key_name(enum ion_conf_key key)
{
	return (unsigned int)key < ION_KEY_COUNT ? keys[key].name : NULL;
}

int ion_conf_key_from_udev(const char *property)
{
	for (int k = 0; property && k < ION_KEY_COUNT; k++)
		if (keys[k].udev && strcmp(keys[k].udev, property) == 0)
			return k;
	return -1;
}

/* ---- fields ---- */

static void strv_free(char **v)
{
	for (size_t i = 0; v && v[i]; i++)
		free(v[i]);
	free(v);
}

static void field_clear(enum ion_conf_key key, struct ion_conf_field *f)
{
	switch (key_storage(key)) {
	case ST_STRING:
		free(f->v.s);
		break;
	case ST_LIST:
		strv_free(f->v.list.v);
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
		field_clear(k, &props->f[k]);
}

/*
 * Appends n strings (copies) to a NULL-terminated list of *len entries.
 * On failure the list holds what it held, so callers stay consistent.
 */
static int strv_append(char ***list, size_t *len, char *const *add, size_t n)
{
	char **v;
	size_t i;

	if (n > SIZE_MAX / sizeof(char *) - *len - 1)
		return -ENOMEM;
	v = realloc(*list, (*len + n + 1) * sizeof(char *));
	if (!v)
		return -ENOMEM;
	*list = v;
	for (i = 0; i < n; i++) {
		v[*len + i] = strdup(add[i]);
		if (!v[*len + i]) {
			while (i--)
				free(v[*len + i]);
			v[*len] = NULL;
			return -ENOMEM;
		}
	}
	*len += n;
	v[*len] = NULL;
	return 0;
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

static int field_copy(enum ion_conf_key key, struct ion_conf_field *dst,
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
		r = strv_append(&c.v.list.v, &c.v.list.n, src->v.list.v, src->v.list.n);
		break;
	case ST_POOL:
		r = pool_append(&c, src->v.pool.v, src->v.pool.n);
		break;
	default:
		c.v = src->v;
		break;
	}
	if (r < 0) {
		field_clear(key, &c);
		return r;
	}
	*dst = c;
	return 0;
}

static int props_copy(struct ion_conf_props *dst, const struct ion_conf_props *src)
{
	struct ion_conf_props c = { 0 };

	for (int k = 0; k < ION_KEY_COUNT; k++)
		if (field_copy(k, &c.f[k], &src->f[k]) < 0) {
			ion_conf_props_clear(&c);
			return -ENOMEM;
		}
	*dst = c;
	return 0;
}

/* ---- values ---- */

static char *trim(char *s)
{
	char *end;

	s += strspn(s, BLANKS);
	end = s + strlen(s);
	while (end > s && strchr(BLANKS, end[-1]))
		end--;
	*end = '\0';
	return s;
}

static bool has_blank(const char *s)
{
	return strpbrk(s, BLANKS) != NULL;
}

/* The words of s (blank-separated), as a NULL-terminated list. */
static int split_words(const char *s, char ***ret, size_t *ret_n)
{
	char **v = NULL;
	size_t n = 0;

	for (;;) {
		size_t len;
		char *w, **nv;

		s += strspn(s, BLANKS);
		if (!*s)
			break;
		len = strcspn(s, BLANKS);
		w = strndup(s, len);
		nv = w ? realloc(v, (n + 2) * sizeof(*v)) : NULL;
		if (!nv) {
			free(w);
			if (v)
				v[n] = NULL;
			strv_free(v);
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

	switch (keys[key].type) {
	case V_UDEV_GLOB:
		eq = strchr(s, '=');
		if (!eq || eq == s) {
			*ret_message = "expected PROPERTY=GLOB";
			return -EINVAL;
		}
		if (strcspn(s, BLANKS) < (size_t)(eq - s)) {
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
		if (has_blank(s)) {
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
			strv_free(steal_ptr(&words));
			return -ENOMEM;
		}
		f->v.pool.n = n_words;
		for (size_t i = 0; i < n_words && r == 0; i++)
			r = parse_pool_item(words[i], &f->v.pool.v[i]);
		strv_free(steal_ptr(&words));
		if (r < 0) {
			field_clear(key, f);
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
	s = trim(copy);
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
	field_clear(key, field);
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
		if (keys[key].type == V_CACHE)
			fputs(field->v.u < 3 ? cache_names[field->v.u] : "any", out);
		else if (keys[key].type == V_SIZE || keys[key].type == V_ALIGNMENT)
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

/* ---- sections ---- */

enum entry_op { OP_SET, OP_APPEND, OP_CLEAR };

struct conf_entry {
	enum ion_conf_key key;
	enum entry_op op;
	struct ion_conf_field value;	/* unset for OP_CLEAR; src always */
};

static int field_apply(struct ion_conf_field *f, const struct conf_entry *e)
{
	struct ion_conf_field c;
	int r;

	if (e->op == OP_CLEAR) {
		field_clear(e->key, f);
		f->src = e->value.src;	/* explain says who cleared it */
		return 0;
	}
	if (e->op == OP_APPEND && f->set) {
		if (key_storage(e->key) == ST_POOL)
			r = pool_append(f, e->value.v.pool.v, e->value.v.pool.n);
		else
			r = strv_append(&f->v.list.v, &f->v.list.n, e->value.v.list.v,
					e->value.v.list.n);
		if (r < 0)
			return r;
		f->src = e->value.src;
		return 0;
	}
	r = field_copy(e->key, &c, &e->value);
	if (r < 0)
		return r;
	field_clear(e->key, f);
	*f = c;
	return 0;
}

struct conf_section {
	enum ion_conf_kind kind;
	char *name;
	struct ion_conf_src src;	/* the header line */
	bool has_match;
	struct conf_entry *entries;
	size_t n_entries;
};

static void section_free(struct conf_section *sec)
{
	if (!sec)
		return;
	for (size_t i = 0; i < sec->n_entries; i++)
		field_clear(sec->entries[i].key, &sec->entries[i].value);
	free(sec->entries);
	free(sec->name);
	free(sec);
}

static void section_freep(struct conf_section **sec)
{
	section_free(*sec);
}

#define _cleanup_section_ __attribute__((cleanup(section_freep)))

static int section_add_entry(struct conf_section *sec, struct conf_entry *e)
{
	struct conf_entry *v;

	/* Growth by doubling: a section may have thousands of += lines. */
	if ((sec->n_entries & (sec->n_entries - 1)) == 0) {
		size_t cap = sec->n_entries ? 2 * sec->n_entries : 4;

		v = realloc(sec->entries, cap * sizeof(*v));
		if (!v)
			return -ENOMEM;
		sec->entries = v;
	}
	sec->entries[sec->n_entries++] = *e;
	memset(e, 0, sizeof(*e));
	return 0;
}

static int ptr_append(void ***v, size_t *n, void *p)
{
	void **nv;

	if ((*n & (*n - 1)) == 0) {
		nv = realloc(*v, (*n ? 2 * *n : 4) * sizeof(*nv));
		if (!nv)
			return -ENOMEM;
		*v = nv;
	}
	(*v)[(*n)++] = p;
	return 0;
}

struct ion_conf {
	char **files;			/* read order; sources point into them */
	size_t n_files;
	struct conf_section **boards;	/* the matched [Board] sections */
	size_t n_boards;
	struct conf_section **sections;	/* applicable [Heap] and [Device] */
	size_t n_sections;
	const char **heap_names;	/* first-appearance order, into sections */
	size_t n_heap_names;
	struct ion_conf_field cookie;	/* CookieAttribute, folded */
	unsigned int n_errors;
};

void ion_conf_free(struct ion_conf *conf)
{
	if (!conf)
		return;
	for (size_t i = 0; i < conf->n_boards; i++)
		section_free(conf->boards[i]);
	for (size_t i = 0; i < conf->n_sections; i++)
		section_free(conf->sections[i]);
	for (size_t i = 0; i < conf->n_files; i++)
		free(conf->files[i]);
	free(conf->boards);
	free(conf->sections);
	free(conf->files);
	free(conf->heap_names);
	field_clear(ION_KEY_COOKIE_ATTRIBUTE, &conf->cookie);
	free(conf);
}

/* ---- matching ---- */

static bool glob_matches(const char *pattern, const char *s)
{
	return s && fnmatch(pattern, s, 0) == 0;
}

static bool glob_matches_any(const char *pattern, const char *const *v)
{
	for (size_t i = 0; v && v[i]; i++)
		if (glob_matches(pattern, v[i]))
			return true;
	return false;
}

static bool udev_property_matches(const char *match, const char *const *props)
{
	size_t key_len = strcspn(match, "=");

	for (size_t i = 0; props && props[i]; i++)
		if (strncmp(props[i], match, key_len) == 0 && props[i][key_len] == '=' &&
		    glob_matches(match + key_len + 1, props[i] + key_len + 1))
			return true;
	return false;
}

/* The entry_matches of section_matches() for [Board] sections. */
static bool board_entry_matches(const struct conf_entry *e, const void *facts)
{
	const struct ion_board_facts *b = facts;
	const char *glob = e->value.v.s;

	if (!b)
		return false;
	switch (e->key) {
	case ION_KEY_MATCH_COMPATIBLE:
		return glob_matches_any(glob, (const char *const *)b->compatible);
	case ION_KEY_MATCH_MODEL:
		return glob_matches(glob, b->model);
	case ION_KEY_MATCH_DMI_VENDOR:
		return glob_matches(glob, b->dmi_vendor);
	case ION_KEY_MATCH_DMI_PRODUCT:
		return glob_matches(glob, b->dmi_product);
	case ION_KEY_MATCH_DMI_BOARD:
		return glob_matches(glob, b->dmi_board);
	default:
		return false;
	}
}

/* ... and for [Device] sections. */
static bool device_entry_matches(const struct conf_entry *e, const void *facts)
{
	const struct ion_device_facts *d = facts;
	const char *glob = e->value.v.s;

	switch (e->key) {
	case ION_KEY_MATCH_SYSFS_PATH:
		return glob_matches(glob, d->syspath) || glob_matches(glob, d->parent_syspath);
	case ION_KEY_MATCH_SUBSYSTEM:
		return glob_matches(glob, d->subsystem) || glob_matches(glob, d->bus);
	case ION_KEY_MATCH_DRIVER:
		return glob_matches(glob, d->driver);
	case ION_KEY_MATCH_OF_COMPATIBLE:
		return glob_matches_any(glob, d->of_compatible);
	case ION_KEY_MATCH_UDEV_PROPERTY:
		return udev_property_matches(glob, d->udev_properties);
	case ION_KEY_MATCH_DRM_DRIVER:
		return glob_matches(glob, d->drm_driver);
	case ION_KEY_MATCH_V4L2_CARD:
		return glob_matches(glob, d->v4l2_card);
	case ION_KEY_MATCH_NAME:
		return glob_matches(glob, d->name);
	default:
		return false;
	}
}

/*
 * Different Match keys must all match; the values of one repeated key
 * are alternatives.  A section without Match keys matches nothing here.
 */
static bool section_matches(const struct conf_section *sec,
			    bool (*entry_matches)(const struct conf_entry *, const void *),
			    const void *facts)
{
	bool present[ION_KEY_COUNT] = { false }, matched[ION_KEY_COUNT] = { false };

	for (size_t i = 0; i < sec->n_entries; i++) {
		const struct conf_entry *e = &sec->entries[i];

		if (!key_is_match(e->key))
			continue;
		present[e->key] = true;
		if (!matched[e->key] && entry_matches(e, facts))
			matched[e->key] = true;
	}
	for (int k = 0; k < ION_KEY_COUNT; k++)
		if (present[k] && !matched[k])
			return false;
	return sec->has_match;
}

/* ---- parsing ---- */

struct reporter {
	ion_conf_error_fn fn;
	void *userdata;
	unsigned int *count;
};

__attribute__((format(printf, 4, 5)))
static void report(const struct reporter *rep, const char *file, unsigned int line,
		   const char *format, ...)
{
	/* A fixed buffer: reporting must not fail for want of memory. */
	char message[1024];
	va_list args;

	(*rep->count)++;
	if (!rep->fn)
		return;
	va_start(args, format);
	vsnprintf(message, sizeof(message), format, args);
	va_end(args);
	rep->fn(rep->userdata, file, line, message);
}

enum scope {
	SCOPE_ALL,	/* before any [Board]: every machine */
	SCOPE_MATCHED,	/* after a [Board] that matched */
	SCOPE_DROPPED,	/* after a [Board] that did not match, or was broken */
};

struct parser {
	struct reporter rep;
	const char *file;
	const struct ion_board_facts *board;
	struct ion_conf *conf;		/* NULL for a cookie */

	bool in_section;		/* a header was read, perhaps a broken one */
	struct conf_section *sec;	/* NULL when the header named no kind */
	bool sec_broken;
	char label[128];		/* "[Heap linux,cma]" for messages */
	unsigned int set_line[ION_KEY_COUNT];
	enum scope scope;
	bool scope_drop_reported;
};

#define perr(p, line, format, ...) report(&(p)->rep, (p)->file, line, format, __VA_ARGS__)

/* Ends the section being read: keeps it when it applies, else frees it. */
static int end_section(struct parser *p)
{
	_cleanup_section_ struct conf_section *sec = steal_ptr(&p->sec);
	bool broken = p->sec_broken;

	p->in_section = false;
	p->sec_broken = false;
	if (!sec)
		return 0;
	if (sec->kind == ION_CONF_BOARD) {
		if (!broken && !sec->has_match) {
			perr(p, sec->src.line,
			     "%s has no Match key: skipping it and the sections up to the next [Board]",
			     p->label);
			p->scope = SCOPE_DROPPED;
			return 0;
		}
		if (broken) {
			if (!p->scope_drop_reported)
				perr(p, sec->src.line,
				     "%s has errors: skipping it and the sections up to the next [Board]",
				     p->label);
			p->scope = SCOPE_DROPPED;
			return 0;
		}
		if (!section_matches(sec, board_entry_matches, p->board)) {
			p->scope = SCOPE_DROPPED;
			return 0;
		}
		p->scope = SCOPE_MATCHED;
		if (ptr_append((void ***)&p->conf->boards, &p->conf->n_boards, sec) < 0)
			return -ENOMEM;
		sec = NULL;
		return 0;
	}
	if (broken || p->scope == SCOPE_DROPPED)
		return 0;
	if (ptr_append((void ***)&p->conf->sections, &p->conf->n_sections, sec) < 0)
		return -ENOMEM;
	sec = NULL;
	return 0;
}

/*
 * A line that might have been a [Board] header but cannot be read as one
 * must not let the sections after it apply on every machine: they are
 * dropped up to the next [Board], like the scope of a broken board.
 */
static void drop_scope(struct parser *p, unsigned int line, const char *why)
{
	perr(p, line, "%s: skipping the sections up to the next [Board]", why);
	p->sec_broken = true;
	p->scope = SCOPE_DROPPED;
	p->scope_drop_reported = true;
}

static int start_section(struct parser *p, char *line, unsigned int n)
{
	_cleanup_section_ struct conf_section *sec = NULL;
	char *word = line + 1, *name, *end;
	size_t word_len, len = strlen(line);
	int kind = -1, r;
	const char *problem = NULL;

	r = end_section(p);
	if (r < 0)
		return r;
	p->in_section = true;
	memset(p->set_line, 0, sizeof(p->set_line));

	word += strspn(word, BLANKS);
	word_len = strcspn(word, BLANKS "]");
	for (int k = 0; k < 3; k++)
		if (word_len == strlen(kind_names[k]) && strncmp(word, kind_names[k], word_len) == 0)
			kind = k;
	if (kind < 0) {
		char why[192];

		snprintf(why, sizeof(why),
			 "unknown section '%.64s' (expected [Board NAME], [Heap NAME] or [Device NAME])",
			 line);
		drop_scope(p, n, why);
		return 0;
	}
	if (kind == ION_CONF_BOARD)
		p->scope_drop_reported = false;

	end = line + len;
	if (end[-1] != ']') {
		perr(p, n, "section header '%.64s' does not end with ']'", line);
		p->sec_broken = true;
	} else {
		end[-1] = '\0';
	}
	name = trim(word + word_len);
	snprintf(p->label, sizeof(p->label), "[%s%s%.100s]", kind_names[kind],
		 *name ? " " : "", name);
	if (p->sec_broken)
		;
	else if (!*name)
		problem = "needs a name";
	else if (has_blank(name))
		problem = "has blanks in its name";
	else if (strchr(name, ']'))
		problem = "has ']' in its name";
	if (problem) {
		perr(p, n, "%s %s", p->label, problem);
		p->sec_broken = true;
	}

	sec = calloc(1, sizeof(*sec));
	if (!sec)
		return -ENOMEM;
	sec->kind = kind;
	sec->src.file = p->file;
	sec->src.line = n;
	sec->name = strdup(name);
	if (!sec->name)
		return -ENOMEM;
	p->sec = steal_ptr(&sec);
	return 0;
}

static bool key_allowed(const struct parser *p, enum ion_conf_key k)
{
	if (!p->conf)
		return keys[k].udev != NULL;
	return keys[k].kinds & (1u << p->sec->kind);
}

static int parse_entry(struct parser *p, char *line, unsigned int n)
{
	struct conf_entry e = { .op = OP_SET };
	const char *message = NULL;
	char *eq, *key, *value;
	int k, r;

	if (!p->in_section) {
		perr(p, n, "%s", "line before any section header");
		return 0;
	}
	if (!p->sec)
		return 0;	/* under a header already reported */
	eq = strchr(line, '=');
	if (!eq) {
		perr(p, n, "expected 'Key = value' in %s", p->label);
		goto broken;
	}
	if (eq > line && eq[-1] == '+') {
		e.op = OP_APPEND;
		eq[-1] = '\0';
	}
	*eq = '\0';
	key = trim(line);
	value = trim(eq + 1);
	if (!*key) {
		perr(p, n, "no key before '=' in %s", p->label);
		goto broken;
	}
	k = ion_conf_key_from_name(key);
	if (k < 0) {
		perr(p, n, "unknown key '%.64s' in %s", key, p->label);
		goto broken;
	}
	if (!key_allowed(p, k)) {
		perr(p, n, "key '%s' does not belong in %s", key, p->label);
		goto broken;
	}
	if (key_is_match(k) && e.op == OP_APPEND) {
		perr(p, n, "'%s +=': Match keys take no '+=', in %s", key, p->label);
		goto broken;
	}
	if (e.op == OP_APPEND && !key_is_list(k)) {
		perr(p, n, "'%s +=': '%s' is not a list, in %s", key, key, p->label);
		goto broken;
	}
	if (!*value) {
		if (key_is_match(k)) {
			perr(p, n, "'%s' needs a value in %s", key, p->label);
			goto broken;
		}
		if (e.op == OP_APPEND) {
			perr(p, n, "'%s +=' needs a value in %s", key, p->label);
			goto broken;
		}
		e.op = OP_CLEAR;
	}
	/* Match keys repeat as alternatives; anything else set twice in one
	 * section is most likely a typo in one of the two lines. */
	if (e.op != OP_APPEND && !key_is_match(k)) {
		if (p->set_line[k]) {
			perr(p, n, "'%s' is set twice in %s (first on line %u)", key,
			     p->label, p->set_line[k]);
			goto broken;
		}
		p->set_line[k] = n;
	}
	e.key = k;
	e.value.src.file = p->file;
	e.value.src.line = n;
	if (e.op != OP_CLEAR) {
		r = ion_conf_field_parse(k, value, e.value.src, &e.value, &message);
		if (r == -EINVAL) {
			perr(p, n, "invalid value '%.80s' for '%s' in %s: %s", value, key,
			     p->label, message);
			goto broken;
		}
		if (r < 0)
			return r;
	}
	if (p->sec_broken) {
		/* Checked for more errors; kept nowhere. */
		field_clear(k, &e.value);
		return 0;
	}
	if (key_is_match(k))
		p->sec->has_match = true;
	r = section_add_entry(p->sec, &e);
	if (r < 0)
		field_clear(k, &e.value);
	return r;
broken:
	p->sec_broken = true;
	return 0;
}

static int parse_line(struct parser *p, char *line, unsigned int n)
{
	line = trim(line);
	if (!*line || *line == '#')
		return 0;
	if (*line == '[') {
		if (!p->conf) {
			perr(p, n, "%s", "a cookie has no section headers");
			p->sec_broken = true;
			return 0;
		}
		return start_section(p, line, n);
	}
	return parse_entry(p, line, n);
}

static int parse_text(struct parser *p, const char *text, size_t len)
{
	char buf[CONF_LINE_MAX + 1];
	unsigned int n = 0;
	size_t pos = 0;
	int r;

	while (pos < len) {
		const char *start = text + pos, *nl = memchr(start, '\n', len - pos);
		size_t line_len = nl ? (size_t)(nl - start) : len - pos;

		pos += line_len + 1;
		n++;
		if (line_len > CONF_LINE_MAX) {
			if (p->conf)
				drop_scope(p, n, "line longer than 4096 bytes");
			else {
				perr(p, n, "%s", "line longer than 4096 bytes");
				p->sec_broken = true;
			}
			continue;
		}
		if (memchr(start, '\0', line_len)) {
			if (p->conf)
				drop_scope(p, n, "NUL byte in the line");
			else {
				perr(p, n, "%s", "NUL byte in the line");
				p->sec_broken = true;
			}
			continue;
		}
		memcpy(buf, start, line_len);
		buf[line_len] = '\0';
		r = parse_line(p, buf, n);
		if (r < 0)
			return r;
	}
	return 0;
}

/* One file's text: its sections that apply join conf. */
static int load_text(struct ion_conf *conf, const char *path, const char *text,
		     size_t len, const struct ion_board_facts *board,
		     const struct reporter *rep)
{
	struct parser p = {
		.rep = *rep,
		.board = board,
		.conf = conf,
		.scope = SCOPE_ALL,
	};
	char *file = strdup(path);
	int r;

	if (!file || ptr_append((void ***)&conf->files, &conf->n_files, file) < 0) {
		free(file);
		return -ENOMEM;
	}
	p.file = file;
	r = parse_text(&p, text, len);
	if (r == 0)
		r = end_section(&p);
	section_free(p.sec);
	return r;
}

struct heap_ref {
	const char *name;
	size_t order;
	bool first;
};

static int compare_heap_refs(const void *a, const void *b)
{
	const struct heap_ref *x = a, *y = b;
	int c = strcmp(x->name, y->name);

	return c ? c : (x->order > y->order) - (x->order < y->order);
}

static int compare_heap_order(const void *a, const void *b)
{
	const struct heap_ref *x = a, *y = b;

	return (x->order > y->order) - (x->order < y->order);
}

/* The [Heap] names in first-appearance order: sorting finds the repeats
 * in n log n, where a file of 100k sections would make n^2 crawl. */
static int list_heap_names(struct ion_conf *conf)
{
	_cleanup_free_ struct heap_ref *refs = NULL;
	const char **names;
	size_t n = 0, n_names = 0;

	refs = calloc(conf->n_sections + 1, sizeof(*refs));
	names = calloc(conf->n_sections + 1, sizeof(*names));
	if (!refs || !names) {
		free(names);
		return -ENOMEM;
	}
	for (size_t i = 0; i < conf->n_sections; i++)
		if (conf->sections[i]->kind == ION_CONF_HEAP)
			refs[n++] = (struct heap_ref){ conf->sections[i]->name, i, false };
	qsort(refs, n, sizeof(*refs), compare_heap_refs);
	for (size_t i = 0; i < n; i++)
		refs[i].first = i == 0 || strcmp(refs[i].name, refs[i - 1].name) != 0;
	qsort(refs, n, sizeof(*refs), compare_heap_order);
	for (size_t i = 0; i < n; i++)
		if (refs[i].first)
			names[n_names++] = refs[i].name;
	conf->heap_names = names;
	conf->n_heap_names = n_names;
	return 0;
}

/* What loading derives once: the CookieAttribute, the heap names. */
static int conf_finish(struct ion_conf *conf)
{
	for (size_t i = 0; i < conf->n_boards; i++) {
		const struct conf_section *b = conf->boards[i];

		for (size_t j = 0; j < b->n_entries; j++) {
			const struct conf_entry *e = &b->entries[j];

			if (e->key == ION_KEY_COOKIE_ATTRIBUTE &&
			    field_apply(&conf->cookie, e) < 0)
				return -ENOMEM;
		}
	}
	return list_heap_names(conf);
}

static bool is_transient(int r)
{
	return r == -ENOMEM || r == -EMFILE || r == -ENFILE || r == -EINTR;
}

static void report_file(const struct reporter *rep, const char *path, int r)
{
	if (r == -EFBIG)
		report(rep, path, 0, "%s", "file skipped: larger than 1 MiB");
	else if (r == -EBADFD || r == -EISDIR)
		report(rep, path, 0, "%s", "file skipped: not a regular file");
	else
		report(rep, path, 0, "file skipped: %s", strerror(-r));
}

/* ---- layered folders ---- */

struct conf_file {
	char *name;	/* the basename: what masks what */
	char *path;
};

struct conf_listing {
	struct conf_file *v;
	size_t n;
};

static void listing_clear(struct conf_listing *l)
{
	for (size_t i = 0; i < l->n; i++) {
		free(l->v[i].name);
		free(l->v[i].path);
	}
	free(l->v);
}

/* Adds a file unless a higher folder already gave one of that name. */
static int listing_add(struct conf_listing *l, const char *name, const char *path)
{
	struct conf_file f, *v;

	for (size_t i = 0; i < l->n; i++)
		if (strcmp(l->v[i].name, name) == 0)
			return 0;
	f.name = strdup(name);
	f.path = strdup(path);
	v = realloc(l->v, (l->n + 1) * sizeof(*v));
	if (v)
		l->v = v;
	if (!f.name || !f.path || !v) {
		free(f.name);
		free(f.path);
		return -ENOMEM;
	}
	l->v[l->n++] = f;
	return 0;
}

static bool is_conf_name(const char *name)
{
	size_t len = strlen(name);

	/* Hidden files are editors' and package managers' leftovers. */
	return name[0] != '.' && len > 5 && strcmp(name + len - 5, ".conf") == 0;
}

static int list_folder(struct conf_listing *l, const char *path, int fd)
{
	DIR *dir = fdopendir(fd);
	struct dirent *de;
	int r = 0;

	if (!dir) {
		r = neg_errno();
		close(fd);
		return r;
	}
	for (;;) {
		errno = 0;
		de = readdir(dir);
		if (!de) {
			r = errno ? neg_errno() : 0;
			break;
		}
		_cleanup_free_ char *file = NULL;

		if (!is_conf_name(de->d_name))
			continue;
		if (asprintf(&file, "%s%s%s", path, path[strlen(path) - 1] == '/' ? "" : "/",
			     de->d_name) < 0) {
			file = NULL;
			r = -ENOMEM;
			break;
		}
		r = listing_add(l, de->d_name, file);
		if (r < 0)
			break;
	}
	closedir(dir);
	return r;
}

static int list_path(struct conf_listing *l, const char *path, const struct reporter *rep)
{
	_cleanup_close_ int fd = -1;
	const char *base;
	struct stat st;
	int r;

	fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY);
	if (fd < 0) {
		r = neg_errno();
		if (r == -ENOENT || r == -ENOTDIR)
			return 0;	/* a layer this system does not have */
		goto fail;
	}
	if (fstat(fd, &st) < 0) {
		r = neg_errno();
		goto fail;
	}
	if (S_ISDIR(st.st_mode)) {
		r = list_folder(l, path, steal_fd(&fd));
		if (r < 0)
			goto fail;
		return 0;
	}
	if (!S_ISREG(st.st_mode) &&
	    !(S_ISCHR(st.st_mode) && st.st_rdev == makedev(1, 3))) {
		report(rep, path, 0, "%s", "skipped: not a folder or a regular file");
		return 0;
	}
	/* A single file takes part in masking by its basename. */
	base = strrchr(path, '/');
	return listing_add(l, base ? base + 1 : path, path);
fail:
	if (is_transient(r))
		return r;
	report(rep, path, 0, "skipped: %s", strerror(-r));
	return 0;
}

static int compare_files(const void *a, const void *b)
{
	const struct conf_file *x = a, *y = b;

	return strverscmp(x->name, y->name);
}

int ion_conf_load(const char *const *paths, size_t n_paths,
		  const struct ion_board_facts *board, ion_conf_error_fn error_fn,
		  void *userdata, struct ion_conf **ret_conf)
{
	struct ion_conf *conf;
	struct conf_listing list = { 0 };
	struct reporter rep = { error_fn, userdata, NULL };
	int r = 0;

	if ((!paths && n_paths) || !ret_conf)
		return -EINVAL;
	conf = calloc(1, sizeof(*conf));
	if (!conf)
		return -ENOMEM;
	rep.count = &conf->n_errors;
	for (size_t i = 0; i < n_paths && r == 0; i++)
		if (paths[i])
			r = list_path(&list, paths[i], &rep);
	if (r == 0 && list.n)
		qsort(list.v, list.n, sizeof(*list.v), compare_files);
	for (size_t i = 0; i < list.n && r == 0; i++) {
		_cleanup_free_ char *text = NULL;
		size_t len = 0;

		r = ion_read_file(list.v[i].path, CONF_FILE_MAX, &text, &len);
		if (r < 0) {
			if (is_transient(r))
				break;
			report_file(&rep, list.v[i].path, r);
			r = 0;
			continue;
		}
		r = load_text(conf, list.v[i].path, text, len, board, &rep);
	}
	listing_clear(&list);
	if (r == 0)
		r = conf_finish(conf);
	if (r < 0) {
		ion_conf_free(conf);
		return r;
	}
	*ret_conf = conf;
	return 0;
}

int ion_conf_load_string(const char *name, const char *text, size_t len,
			 const struct ion_board_facts *board,
			 ion_conf_error_fn error_fn, void *userdata,
			 struct ion_conf **ret_conf)
{
	struct ion_conf *conf;
	struct reporter rep = { error_fn, userdata, NULL };
	int r = 0;

	if (!name || (!text && len) || !ret_conf)
		return -EINVAL;
	conf = calloc(1, sizeof(*conf));
	if (!conf)
		return -ENOMEM;
	rep.count = &conf->n_errors;
	if (len > CONF_FILE_MAX)
		report_file(&rep, name, -EFBIG);
	else
		r = load_text(conf, name, text ? text : "", len, board, &rep);
	if (r == 0)
		r = conf_finish(conf);
	if (r < 0) {
		ion_conf_free(conf);
		return r;
	}
	*ret_conf = conf;
	return 0;
}

/* ---- questions ---- */

unsigned int ion_conf_error_count(const struct ion_conf *conf)
{
	return conf ? conf->n_errors : 0;
}

size_t ion_conf_board_count(const struct ion_conf *conf)
{
	return conf ? conf->n_boards : 0;
}

const char *ion_conf_board(const struct ion_conf *conf, size_t i,
			   struct ion_conf_src *ret_src)
{
	if (!conf || i >= conf->n_boards)
		return NULL;
	if (ret_src)
		*ret_src = conf->boards[i]->src;
	return conf->boards[i]->name;
}

size_t ion_conf_file_count(const struct ion_conf *conf)
{
	return conf ? conf->n_files : 0;
}

const char *ion_conf_file(const struct ion_conf *conf, size_t i)
{
	return conf && i < conf->n_files ? conf->files[i] : NULL;
}

size_t ion_conf_heap_count(const struct ion_conf *conf)
{
	return conf ? conf->n_heap_names : 0;
}

const char *ion_conf_heap_name(const struct ion_conf *conf, size_t i)
{
	return conf && i < conf->n_heap_names ? conf->heap_names[i] : NULL;
}

const char *ion_conf_cookie_attribute(const struct ion_conf *conf,
				      struct ion_conf_src *ret_src)
{
	if (!conf || !conf->cookie.set)
		return NULL;
	if (ret_src)
		*ret_src = conf->cookie.src;
	return conf->cookie.v.s;
}

/* ---- folding ---- */

typedef bool (*section_pick_fn)(const struct conf_section *sec, const void *arg);

/*
 * Folds the picked sections, in read order, into a copy of *props and
 * swaps it in at the end, so a failure leaves *props as it was.
 */
static int fold(const struct conf_section *const *sections, size_t n_sections,
		section_pick_fn pick, const void *arg, struct ion_conf_props *props,
		char ***ret_names)
{
	_cleanup_free_ const struct conf_section **picked = NULL;
	struct ion_conf_props c;
	size_t name_bytes = 0, count = 0;

	/* Who matched, once: a device's match runs fnmatch() per glob. */
	picked = malloc((n_sections ? n_sections : 1) * sizeof(*picked));
	if (!picked || props_copy(&c, props) < 0)
		return -ENOMEM;
	for (size_t i = 0; i < n_sections; i++) {
		const struct conf_section *sec = sections[i];

		if (!pick(sec, arg))
			continue;
		for (size_t j = 0; j < sec->n_entries; j++) {
			const struct conf_entry *e = &sec->entries[j];

			if (key_is_match(e->key))
				continue;
			if (field_apply(&c.f[e->key], e) < 0) {
				ion_conf_props_clear(&c);
				return -ENOMEM;
			}
		}
		if (ret_names)
			name_bytes += strlen(sec->name) + 1;
		picked[count++] = sec;
	}
	if (ret_names) {
		/* One block, the strings after the pointers: one free(). */
		char **names = malloc((count + 1) * sizeof(char *) + name_bytes);
		char *s;

		if (!names) {
			ion_conf_props_clear(&c);
			return -ENOMEM;
		}
		s = (char *)(names + count + 1);
		for (size_t k = 0; k < count; k++) {
			names[k] = s;
			s = stpcpy(s, picked[k]->name) + 1;
		}
		names[count] = NULL;
		*ret_names = names;
	}
	ion_conf_props_clear(props);
	*props = c;
	return count > INT_MAX ? INT_MAX : (int)count;
}

static bool pick_all(const struct conf_section *sec, const void *arg)
{
	return true;
}

static bool pick_heap(const struct conf_section *sec, const void *name)
{
	return sec->kind == ION_CONF_HEAP && strcmp(sec->name, name) == 0;
}

static bool pick_device_facts(const struct conf_section *sec, const void *facts)
{
	return sec->kind == ION_CONF_DEVICE && sec->has_match &&
	       section_matches(sec, device_entry_matches, facts);
}

static bool pick_device_name(const struct conf_section *sec, const void *name)
{
	return sec->kind == ION_CONF_DEVICE && strcmp(sec->name, name) == 0;
}

int ion_conf_apply_heap(const struct ion_conf *conf, const char *name,
			struct ion_conf_props *props)
{
	if (!conf || !name || !props)
		return -EINVAL;
	return fold((const struct conf_section *const *)conf->sections, conf->n_sections,
		    pick_heap, name, props, NULL);
}

int ion_conf_apply_device(const struct ion_conf *conf,
			  const struct ion_device_facts *facts,
			  struct ion_conf_props *props, char ***ret_names)
{
	if (!conf || !facts || !props)
		return -EINVAL;
	return fold((const struct conf_section *const *)conf->sections, conf->n_sections,
		    pick_device_facts, facts, props, ret_names);
}

int ion_conf_apply_device_name(const struct ion_conf *conf, const char *name,
			       struct ion_conf_props *props)
{
	int r;

	if (!conf || !name || !props)
		return -EINVAL;
	r = fold((const struct conf_section *const *)conf->sections, conf->n_sections,
		 pick_device_name, name, props, NULL);
	return r == 0 ? -ENOENT : r;
}

/* ---- cookies ---- */

int ion_conf_parse_cookie(const char *path, const char *text,
			  ion_conf_error_fn error_fn, void *userdata,
			  struct ion_conf_props *props)
{
	_cleanup_section_ struct conf_section *sec = NULL;
	unsigned int n_errors = 0;
	struct parser p = {
		.rep = { error_fn, userdata, &n_errors },
		.file = path,
		.in_section = true,
		.label = "the cookie",
	};
	size_t len;
	int r;

	if (!path || !text || !props)
		return -EINVAL;
	sec = calloc(1, sizeof(*sec));
	if (!sec)
		return -ENOMEM;
	sec->kind = ION_CONF_DEVICE;
	sec->src.file = path;
	p.sec = sec;
	len = strlen(text);
	if (len > CONF_FILE_MAX) {
		report_file(&p.rep, path, -EFBIG);
		return -EINVAL;
	}
	r = parse_text(&p, text, len);
	if (r < 0)
		return r;
	if (n_errors)
		return -EINVAL;
	r = fold((const struct conf_section *const *)&sec, 1, pick_all, NULL, props, NULL);
	return r < 0 ? r : 0;
}
