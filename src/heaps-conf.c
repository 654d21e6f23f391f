// SPDX-License-Identifier: MIT
/*
 * heaps.d: board files read into sections, each setting with its file and
 * line.  Loading keeps only the sections that apply to this board (board
 * scopes, broken sections skipped alone); the apply calls fold them into
 * one value per key when discovery asks.  The format is specified in
 * heaps.d/README.md, and these files follow it: the lexer
 * (heaps-conf-lexer.c), the sections (here), matching and folding
 * (heaps-conf-match.c), the folders (heaps-conf-layers.c), and every key
 * and value through the vocabulary (vocabulary.c).
 *
 * Every problem a file can cause is reported and skips only what it
 * breaks; what the files cannot cause (ENOMEM, fd exhaustion, EINTR) is
 * returned instead, so that a transient failure never looks like a
 * broken board file and nothing half-loaded is handed out.
 */
#include <stdio.h>
#include <string.h>

#include "heaps-conf-internal.h"
#include "util.h"

static const char *const kind_names[] = {
	[ION_CONF_BOARD] = "Board",
	[ION_CONF_HEAP] = "Heap",
	[ION_CONF_DEVICE] = "Device",
};

/* ---- sections ---- */

void conf_section_free(struct conf_section *sec)
{
	if (!sec)
		return;
	for (size_t i = 0; i < sec->n_entries; i++)
		ion_conf_field_clear(sec->entries[i].key, &sec->entries[i].value);
	free(sec->entries);
	free(sec->name);
	free(sec);
}

static void section_freep(struct conf_section **sec)
{
	conf_section_free(*sec);
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
	struct conf_problems problems;	/* what the reporter kept of them */
};

void ion_conf_free(struct ion_conf *conf)
{
	if (!conf)
		return;
	for (size_t i = 0; i < conf->n_boards; i++)
		conf_section_free(conf->boards[i]);
	for (size_t i = 0; i < conf->n_sections; i++)
		conf_section_free(conf->sections[i]);
	for (size_t i = 0; i < conf->n_files; i++)
		free(conf->files[i]);
	free(conf->boards);
	free(conf->sections);
	free(conf->files);
	free(conf->heap_names);
	ion_conf_field_clear(ION_KEY_COOKIE_ATTRIBUTE, &conf->cookie);
	conf_problems_clear(&conf->problems);
	free(conf);
}

struct ion_conf *conf_new(void)
{
	return calloc(1, sizeof(struct ion_conf));
}

unsigned int *conf_error_counter(struct ion_conf *conf)
{
	return &conf->n_errors;
}

struct conf_problems *conf_problems_of(struct ion_conf *conf)
{
	return &conf->problems;
}

/* ---- parsing ---- */

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

#define perr(p, line, format, ...) conf_report(&(p)->rep, (p)->file, line, format, __VA_ARGS__)

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
		if (!conf_board_matches(sec, p->board)) {
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

	word += strspn(word, ION_BLANKS);
	word_len = strcspn(word, ION_BLANKS "]");
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
	name = ion_trim(word + word_len);
	snprintf(p->label, sizeof(p->label), "[%s%s%.100s]", kind_names[kind],
		 *name ? " " : "", name);
	if (p->sec_broken)
		;
	else if (!*name)
		problem = "needs a name";
	else if (ion_has_blank(name))
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
		return ion_conf_key_is_requirement(k);
	return ion_conf_key_in(k, p->sec->kind);
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
	key = ion_trim(line);
	value = ion_trim(eq + 1);
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
	if (ion_conf_key_is_match(k) && e.op == OP_APPEND) {
		perr(p, n, "'%s +=': Match keys take no '+=', in %s", key, p->label);
		goto broken;
	}
	if (e.op == OP_APPEND && !ion_conf_key_is_list(k)) {
		perr(p, n, "'%s +=': '%s' is not a list, in %s", key, key, p->label);
		goto broken;
	}
	if (!*value) {
		if (ion_conf_key_is_match(k)) {
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
	if (e.op != OP_APPEND && !ion_conf_key_is_match(k)) {
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
		ion_conf_field_clear(k, &e.value);
		return 0;
	}
	if (ion_conf_key_is_match(k))
		p->sec->has_match = true;
	r = section_add_entry(p->sec, &e);
	if (r < 0)
		ion_conf_field_clear(k, &e.value);
	return r;
broken:
	p->sec_broken = true;
	return 0;
}

static int parse_line(void *userdata, char *line, unsigned int n)
{
	struct parser *p = userdata;

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

static void bad_line(void *userdata, unsigned int n, const char *why)
{
	struct parser *p = userdata;

	if (p->conf) {
		drop_scope(p, n, why);
		return;
	}
	perr(p, n, "%s", why);
	p->sec_broken = true;
}

static int parse_text(struct parser *p, const char *text, size_t len)
{
	const struct conf_lexer lexer = { parse_line, bad_line, p };

	return conf_lex(text, len, &lexer);
}

int conf_load_text(struct ion_conf *conf, const char *path, const char *text,
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
	conf_section_free(p.sec);
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
static int derive_once(struct ion_conf *conf)
{
	for (size_t i = 0; i < conf->n_boards; i++) {
		const struct conf_section *b = conf->boards[i];

		for (size_t j = 0; j < b->n_entries; j++) {
			const struct conf_entry *e = &b->entries[j];

			if (e->key == ION_KEY_COOKIE_ATTRIBUTE &&
			    conf_field_apply(&conf->cookie, e) < 0)
				return -ENOMEM;
		}
	}
	return list_heap_names(conf);
}

int conf_finish(struct ion_conf *conf, int r, struct ion_conf **ret_conf)
{
	if (r == 0)
		r = derive_once(conf);
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
	struct reporter rep = { error_fn, userdata, NULL, NULL };
	int r = 0;

	if (!name || (!text && len) || !ret_conf)
		return -EINVAL;
	conf = conf_new();
	if (!conf)
		return -ENOMEM;
	rep.count = &conf->n_errors;
	rep.kept = &conf->problems;
	if (len > CONF_FILE_MAX)
		conf_report_file(&rep, name, -EFBIG);
	else
		r = conf_load_text(conf, name, text ? text : "", len, board, &rep);
	return conf_finish(conf, r, ret_conf);
}

/* ---- questions ---- */

unsigned int ion_conf_error_count(const struct ion_conf *conf)
{
	return conf ? conf->n_errors : 0;
}

int ion_conf_error(const struct ion_conf *conf, size_t i, const char **ret_file,
		   unsigned int *ret_line, const char **ret_message)
{
	if (!conf || i >= conf->n_errors)
		return -ENOENT;
	if (i >= conf->problems.n)
		return -ENOMEM;
	*ret_file = conf->problems.v[i].file;
	*ret_line = conf->problems.v[i].line;
	*ret_message = conf->problems.v[i].message;
	return 0;
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
	       conf_device_matches(sec, facts);
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
	return conf_fold((const struct conf_section *const *)conf->sections, conf->n_sections,
		    pick_heap, name, props, NULL);
}

int ion_conf_apply_device(const struct ion_conf *conf,
			  const struct ion_device_facts *facts,
			  struct ion_conf_props *props, char ***ret_names)
{
	if (!conf || !facts || !props)
		return -EINVAL;
	return conf_fold((const struct conf_section *const *)conf->sections, conf->n_sections,
		    pick_device_facts, facts, props, ret_names);
}

int ion_conf_apply_device_name(const struct ion_conf *conf, const char *name,
			       struct ion_conf_props *props)
{
	int r;

	if (!conf || !name || !props)
		return -EINVAL;
	r = conf_fold((const struct conf_section *const *)conf->sections, conf->n_sections,
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
		.rep = { error_fn, userdata, &n_errors, NULL },
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
		conf_report_file(&p.rep, path, -EFBIG);
		return -EINVAL;
	}
	r = parse_text(&p, text, len);
	if (r < 0)
		return r;
	if (n_errors)
		return -EINVAL;
	r = conf_fold((const struct conf_section *const *)&sec, 1, pick_all, NULL, props, NULL);
	return r < 0 ? r : 0;
}
