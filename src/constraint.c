// SPDX-License-Identifier: MIT
/*
 * Constraints across processes: a constraint set as one line of text that
 * another process parses and AND-s with its own.
 *
 *   ionc1 CONSTRAINT[;CONSTRAINT...]
 *   CONSTRAINT = dev=NAME[,own=HEAP][,uncached=SOURCE][,KEY=VALUE@LINE@SOURCE...]
 *
 * NAME, HEAP, VALUE and SOURCE are percent-encoded: every byte but
 * [A-Za-z0-9._/+-] is %XX (so ';', ',', '=', '@' and blanks never appear
 * raw).  KEY is a heaps.d device key (below), VALUE as a heaps.d file
 * writes it, LINE the source's line (0: none), SOURCE where the value
 * came from ("heaps.d/50-qemu-q35.conf", "udev property ...").
 * Unknown versions, unknown keys, a key twice, bad values, more than 64
 * constraints or 64 KiB: -EINVAL, and nothing is taken.
 *
 * The text comes from another process, which may restrict the
 * receiver's allocation but never make it spend: each key only narrows
 * the heaps that may serve, or orders those that are left, and the
 * receiver allocates what it asked for, once.  Key by key:
 *
 *   Heaps, Contiguous, AddressBits, Cache, KernelMap, OwnBuffersOnly:
 *     leave heaps out (the solver's check_constraint()): carried.  That
 *     may leave only scarce memory (Contiguous=yes: CMA), as the same
 *     device of the receiver's own would.
 *   Alignment: leaves out the heaps that align less (the solver); an
 *     image's layout takes it from attached devices only, never from a
 *     text (buffer.c has no remote constraint): carried.
 *   own=: the peer's own verdict on its own heap, no other device's (the
 *     constraints are AND-ed): carried.
 *   uncached=: puts uncached heaps first among those left (the solver's
 *     better()), as for a device of the receiver's own that is not
 *     DMA-coherent; the same one buffer of the same size: carried.
 *   Pool: would have the receiver keep COUNT buffers of SIZE ready, up to
 *     1024 of each size (a peer asked 7 TiB that way): not the format's.
 *     The serializer leaves it out and the parser refuses it as any
 *     unknown key, rather than drop it unseen: a sender that means to
 *     fill another process's pool learns that it cannot.
 *
 * What the receiver shows of the text (device names, own heaps, values,
 * sources: in rejection reasons, log lines, ionctl) is held escaped from
 * the moment it is parsed: a control byte (below 0x20, DEL, the C1
 * controls) or a byte of no UTF-8 is kept as the four characters \xhh,
 * so that a peer's ESC, CR or LF never reaches a log or a terminal raw.
 * UTF-8 stays as it is, and so does the backslash: an escaped string
 * escapes to itself, and a receiver that serializes the constraints
 * again writes the escapes as text (%5Cx1b), which the next process
 * takes to the very same.  The price: such a name no longer matches a
 * heap's (own=, Heaps), which can only leave more heaps out.
 */
#include <stdio.h>
#include <string.h>

#include "constraint.h"
#include "util.h"

#define MAGIC "ionc1 "
#define MAX_TEXT ION_CONSTRAINTS_MAX_TEXT
#define MAX_CONSTRAINTS ION_CONSTRAINTS_MAX

/* The keys a constraint carries are the vocabulary's remote requirements,
 * in its order: what the serializer writes and the parser takes both
 * come from the one table, so that neither passes what the other would
 * not (no Pool: see above). */

struct ion_remote {
	atomic_int refcount;
	struct ion_constraint c;
	char **strings;		/* the name, the own heap, the sources */
	size_t n_strings;
};

/* ---- writing ---- */

struct out {
	char *buf;
	size_t len, cap;
};

static int put_raw(struct out *o, const char *s, size_t n)
{
	if (o->len + n + 1 > o->cap) {
		size_t cap = o->cap ? o->cap : 256;
		char *grown;

		while (o->len + n + 1 > cap)
			cap *= 2;
		grown = realloc(o->buf, cap);
		if (!grown)
			return -ENOMEM;
		o->buf = grown;
		o->cap = cap;
	}
	memcpy(o->buf + o->len, s, n);
	o->len += n;
	o->buf[o->len] = '\0';
	return 0;
}

static bool plain(unsigned char c)
{
	return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') ||
	       c == '.' || c == '_' || c == '/' || c == '+' || c == '-';
}

static int put_encoded(struct out *o, const char *s)
{
	for (; *s; s++) {
		char hex[4];
		int r;

		if (plain((unsigned char)*s)) {
			r = put_raw(o, s, 1);
		} else {
			snprintf(hex, sizeof(hex), "%%%02X", (unsigned char)*s);
			r = put_raw(o, hex, 3);
		}
		if (r < 0)
			return r;
	}
	return 0;
}

static int put_constraint(struct out *o, const struct ion_constraint *c)
{
	int r = put_raw(o, "dev=", 4);

	if (r == 0)
		r = put_encoded(o, c->device ? c->device : "");
	if (r == 0 && c->own_heap && (r = put_raw(o, ",own=", 5)) == 0)
		r = put_encoded(o, c->own_heap);
	if (r == 0 && c->prefer_uncached && (r = put_raw(o, ",uncached=", 10)) == 0)
		r = put_encoded(o, c->prefer_uncached_src.file ? c->prefer_uncached_src.file : "");
	for (int i = 0, k; r == 0 && (k = ion_conf_requirement((size_t)i)) >= 0; i++) {
		const char *name = ion_conf_key_name((enum ion_conf_key)k);
		_cleanup_free_ char *value = NULL;
		struct ion_conf_src src;
		char line[16];

		if (!ion_conf_key_is_remote((enum ion_conf_key)k) ||
		    !ion_props_get_src(&c->props, (enum ion_conf_key)k, &src))
			continue;
		value = ion_conf_field_format((enum ion_conf_key)k, &c->props.f[k]);
		if (!value)
			return -ENOMEM;
		snprintf(line, sizeof(line), "@%u@", src.line);
		r = put_raw(o, ",", 1);
		if (r == 0)
			r = put_raw(o, name, strlen(name));
		if (r == 0)
			r = put_raw(o, "=", 1);
		if (r == 0)
			r = put_encoded(o, value);
		if (r == 0)
			r = put_raw(o, line, strlen(line));
		if (r == 0)
			r = put_encoded(o, src.file ? src.file : "");
	}
	return r;
}

int ion_constraints_format(const struct ion_constraint *const *c, size_t n, char **ret)
{
	struct out o = { 0 };
	int r = n > MAX_CONSTRAINTS ? -E2BIG : put_raw(&o, MAGIC, strlen(MAGIC));

	for (size_t i = 0; r == 0 && i < n; i++) {
		if (i)
			r = put_raw(&o, ";", 1);
		if (r == 0)
			r = put_constraint(&o, c[i]);
	}
	/* Never a text the parser would refuse. */
	if (r == 0 && o.len > MAX_TEXT)
		r = -E2BIG;
	if (r < 0) {
		free(o.buf);
		return r;
	}
	*ret = o.buf;
	return 0;
}

/* ---- reading ---- */

static int hexval(char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	return -1;
}

/*
 * The length of the printable character s starts with, or 0: ASCII from
 * ' ' to '~', or UTF-8 in its shortest form of a code point from U+00A0
 * (past the C1 controls: 0xc2 0x9b is CSI to a terminal), no surrogate,
 * none past U+10FFFF.  Stops at a NUL, which is no continuation byte.
 */
static size_t printable_len(const unsigned char *s)
{
	static const uint32_t least[] = { 0, 0, 0xa0, 0x800, 0x10000 };
	size_t n = *s < 0x80 ? 1 : *s < 0xc2 ? 0 : *s < 0xe0 ? 2 : *s < 0xf0 ? 3 : *s < 0xf5 ? 4 : 0;
	uint32_t cp;

	if (n <= 1)
		return n && *s >= 0x20 && *s != 0x7f;
	cp = *s & (0x7f >> n);
	for (size_t i = 1; i < n; i++) {
		if ((s[i] & 0xc0) != 0x80)
			return 0;
		cp = cp << 6 | (s[i] & 0x3f);
	}
	if (cp < least[n] || cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff))
		return 0;
	return n;
}

/*
 * A copy of s that the receiver may show anywhere (a rejection's reason,
 * a log line, ionctl's output): every byte of what is no printable
 * character becomes \xhh.  Done once, as the text comes in, so that no
 * later reader has to remember it.  The backslash itself stays as it
 * is, so that an escaped string escapes to itself: a text passed on from
 * process to process grows at the first hop only.  NULL on ENOMEM.
 */
static char *escape_shown(const char *s)
{
	static const char hex[] = "0123456789abcdef";
	char *out = malloc(4 * strlen(s) + 1), *p = out;

	if (!out)
		return NULL;
	while (*s) {
		size_t n = printable_len((const unsigned char *)s);
		unsigned char c = (unsigned char)*s;

		if (n == 0) {
			*p++ = '\\';
			*p++ = 'x';
			*p++ = hex[c >> 4];
			*p++ = hex[c & 0xf];
			s++;
		}
		while (n--)
			*p++ = *s++;
	}
	*p = '\0';
	return out;
}

/* Decodes s[0..n) into a new string, escaped to be shown; NULL with *err
 * on bad input. */
static char *decode(const char *s, size_t n, int *err)
{
	char *out = malloc(n + 1), *p = out;

	*err = -ENOMEM;
	if (!out)
		return NULL;
	for (size_t i = 0; i < n; i++) {
		if (s[i] == '%') {
			int hi = n - i >= 3 ? hexval(s[i + 1]) : -1;
			int lo = n - i >= 3 ? hexval(s[i + 2]) : -1;

			/* Two hex digits, and never a NUL. */
			if (hi < 0 || lo < 0 || (hi == 0 && lo == 0)) {
				free(out);
				*err = -EINVAL;
				return NULL;
			}
			*p++ = (char)(hi << 4 | lo);
			i += 2;
		} else if (plain((unsigned char)s[i])) {
			*p++ = s[i];
		} else {
			free(out);
			*err = -EINVAL;
			return NULL;
		}
	}
	*p = '\0';
	p = escape_shown(out);
	free(out);
	return p;
}

static void remote_free(struct ion_remote *r)
{
	if (!r)
		return;
	ion_conf_props_clear(&r->c.props);
	for (size_t i = 0; i < r->n_strings; i++)
		free(r->strings[i]);
	free(r->strings);
	free(r);
}

/* Keeps s for the constraint to point at; s on success, NULL on ENOMEM
 * (and s freed). */
static char *keep(struct ion_remote *r, char *s)
{
	char **grown = realloc(r->strings, (r->n_strings + 1) * sizeof(*grown));

	if (!grown) {
		free(s);
		return NULL;
	}
	r->strings = grown;
	r->strings[r->n_strings++] = s;
	return s;
}

/* name=value: the value of a known item, decoded and kept. */
static int take(struct ion_remote *r, const char *item, size_t n, const char *name,
		char **ret)
{
	size_t len = strlen(name);
	char *v;
	int err;

	if (n < len + 1 || strncmp(item, name, len) != 0 || item[len] != '=')
		return 1; /* not this one */
	v = decode(item + len + 1, n - len - 1, &err);
	if (!v)
		return err;
	*ret = keep(r, v);
	return *ret ? 0 : -ENOMEM;
}

static int parse_key(struct ion_remote *r, const char *item, size_t n)
{
	const char *eq = memchr(item, '=', n), *at1, *at2;
	_cleanup_free_ char *name = NULL, *value = NULL;
	const char *message;
	char *source;
	uint64_t line;
	int key, err;

	if (!eq)
		return -EINVAL;
	name = strndup(item, (size_t)(eq - item));
	if (!name)
		return -ENOMEM;
	key = ion_conf_key_from_name(name);
	if (key < 0 || !ion_conf_key_is_remote((enum ion_conf_key)key))
		return -EINVAL;
	if (ion_props_is_set(&r->c.props, (enum ion_conf_key)key))
		return -EINVAL; /* a key twice */
	at1 = memchr(eq + 1, '@', n - (size_t)(eq + 1 - item));
	at2 = at1 ? memchr(at1 + 1, '@', n - (size_t)(at1 + 1 - item)) : NULL;
	if (!at2)
		return -EINVAL;
	value = decode(eq + 1, (size_t)(at1 - eq - 1), &err);
	if (!value)
		return err;
	{
		_cleanup_free_ char *digits = strndup(at1 + 1, (size_t)(at2 - at1 - 1));

		if (!digits)
			return -ENOMEM;
		if (ion_parse_u64(digits, 10, &line) < 0 || line > UINT32_MAX)
			return -EINVAL;
	}
	source = decode(at2 + 1, n - (size_t)(at2 + 1 - item), &err);
	if (!source || !keep(r, source))
		return source ? -ENOMEM : err;
	return ion_conf_field_parse((enum ion_conf_key)key, value,
				    (struct ion_conf_src){ source, (unsigned int)line },
				    &r->c.props.f[key], &message);
}

static int parse_constraint(const char *s, size_t n, struct ion_remote **ret)
{
	struct ion_remote *r = calloc(1, sizeof(*r));
	int err = 0;

	if (!r)
		return -ENOMEM;
	atomic_init(&r->refcount, 1);
	for (size_t pos = 0, i = 0; err == 0 && pos <= n; i++) {
		const char *item = s + pos;
		const char *comma = memchr(item, ',', n - pos);
		size_t len = comma ? (size_t)(comma - item) : n - pos;
		char *v = NULL;

		if (i == 0) {
			/* The device's name comes first, always. */
			err = take(r, item, len, "dev", &r->c.device);
			if (err > 0 || (err == 0 && !r->c.device[0]))
				err = -EINVAL;
		} else if ((err = take(r, item, len, "own", &v)) <= 0) {
			if (err == 0 && (r->c.own_heap || !v[0]))
				err = -EINVAL;
			r->c.own_heap = v;
		} else if ((err = take(r, item, len, "uncached", &v)) <= 0) {
			if (err == 0 && r->c.prefer_uncached)
				err = -EINVAL;
			r->c.prefer_uncached = true;
			r->c.prefer_uncached_src = (struct ion_conf_src){ v, 0 };
		} else {
			err = parse_key(r, item, len);
		}
		pos += len + 1;
	}
	if (err < 0) {
		remote_free(r);
		return err;
	}
	*ret = r;
	return 0;
}

int ion_constraints_parse(const char *text, struct ion_remote ***ret, size_t *ret_n)
{
	struct ion_remote **v = NULL;
	size_t n = 0, len;
	int r = 0;

	if (!text || strncmp(text, MAGIC, strlen(MAGIC)) != 0)
		return -EINVAL;
	len = strnlen(text, MAX_TEXT + 1);
	if (len > MAX_TEXT)
		return -EINVAL;
	/* No constraint at all (a config without devices) is a set too. */
	for (size_t pos = strlen(MAGIC); r == 0 && pos < len + (len > strlen(MAGIC));) {
		const char *s = text + pos, *semi = memchr(s, ';', len - pos);
		size_t l = semi ? (size_t)(semi - s) : len - pos;
		struct ion_remote **grown;

		if (n == MAX_CONSTRAINTS || l == 0) {
			r = -EINVAL;
			break;
		}
		grown = realloc(v, (n + 1) * sizeof(*grown));
		if (!grown) {
			r = -ENOMEM;
			break;
		}
		v = grown;
		r = parse_constraint(s, l, &v[n]);
		if (r == 0)
			n++;
		pos += l + 1;
	}
	if (r < 0) {
		for (size_t i = 0; i < n; i++)
			remote_free(v[i]);
		free(v);
		return r;
	}
	*ret = v;
	*ret_n = n;
	return 0;
}

const struct ion_constraint *ion_remote_constraint(const struct ion_remote *remote)
{
	return &remote->c;
}

struct ion_remote *ion_remote_ref(struct ion_remote *remote)
{
	atomic_fetch_add_explicit(&remote->refcount, 1, memory_order_relaxed);
	return remote;
}

void ion_remote_unref(struct ion_remote *remote)
{
	if (remote && atomic_fetch_sub_explicit(&remote->refcount, 1, memory_order_acq_rel) == 1)
		remote_free(remote);
}
