/* SPDX-License-Identifier: MIT */
/*
 * What the heaps.d parser's files share, and nobody else sees: the lexer
 * (heaps-conf-lexer.c), the sections and their parse (heaps-conf.c), the
 * matching and folding (heaps-conf-match.c) and the layered folders
 * (heaps-conf-layers.c).
 */
#ifndef LIBION_HEAPS_CONF_INTERNAL_H
#define LIBION_HEAPS_CONF_INTERNAL_H

#include "heaps-conf.h"

#define CONF_FILE_MAX (1024 * 1024)
#define CONF_LINE_MAX 4096

/* ---- reporting problems as file:line (heaps-conf-lexer.c) ---- */

/* The problems a conf keeps for ion_conf_error(): as many as memory
 * allows (count goes on regardless). */
struct conf_problem {
	char *file;
	unsigned int line;
	char *message;
};

struct conf_problems {
	struct conf_problem *v;
	size_t n;
};

struct reporter {
	ion_conf_error_fn fn;
	void *userdata;
	unsigned int *count;
	struct conf_problems *kept;	/* or NULL */
};

void conf_problems_clear(struct conf_problems *problems);
/* The conf's problem list, for its reporter. */
struct conf_problems *conf_problems_of(struct ion_conf *conf);

__attribute__((format(printf, 4, 5)))
void conf_report(const struct reporter *rep, const char *file, unsigned int line,
		 const char *format, ...);
/* A file skipped whole (line 0), for the errno it could not be read with. */
void conf_report_file(const struct reporter *rep, const char *path, int r);
/* What no file can cause: loading fails rather than reports it. */
bool conf_is_transient(int r);

/* ---- lines (heaps-conf-lexer.c) ---- */

struct conf_lexer {
	/* A line with something on it, trimmed, 1-based; < 0 stops. */
	int (*line)(void *userdata, char *line, unsigned int n);
	/* A line that cannot be read (too long, a NUL byte). */
	void (*bad_line)(void *userdata, unsigned int n, const char *why);
	void *userdata;
};

/* Splits text into lines, skipping blanks and comments; 0, or what the
 * line callback returned. */
int conf_lex(const char *text, size_t len, const struct conf_lexer *lexer);

/* ---- sections (heaps-conf.c builds them) ---- */

enum entry_op { OP_SET, OP_APPEND, OP_CLEAR };

struct conf_entry {
	enum ion_conf_key key;
	enum entry_op op;
	struct ion_conf_field value;	/* unset for OP_CLEAR; src always */
};

struct conf_section {
	enum ion_conf_kind kind;
	char *name;
	struct ion_conf_src src;	/* the header line */
	bool has_match;
	struct conf_entry *entries;
	size_t n_entries;
};

void conf_section_free(struct conf_section *sec);

/* A new, empty parse, and what heaps-conf-layers.c feeds it. */
struct ion_conf *conf_new(void);
unsigned int *conf_error_counter(struct ion_conf *conf);
/* One file's text: its sections that apply join conf. */
int conf_load_text(struct ion_conf *conf, const char *path, const char *text,
		   size_t len, const struct ion_board_facts *board,
		   const struct reporter *rep);
/* After the last file (r: how reading went): what loading derives once,
 * then *ret_conf = conf; on any failure conf is freed.  0 or r. */
int conf_finish(struct ion_conf *conf, int r, struct ion_conf **ret_conf);

/* ---- matching and folding (heaps-conf-match.c) ---- */

/* One entry folded into a field: set, append or clear. */
int conf_field_apply(struct ion_conf_field *f, const struct conf_entry *e);
bool conf_board_matches(const struct conf_section *sec,
			const struct ion_board_facts *board);
bool conf_device_matches(const struct conf_section *sec,
			 const struct ion_device_facts *facts);

typedef bool (*section_pick_fn)(const struct conf_section *sec, const void *arg);

/*
 * Folds the picked sections, in read order, into *props; returns how
 * many applied, or -ENOMEM with *props as it was.  ret_names (may be
 * NULL): the names of those sections, in one malloc'ed block.
 */
int conf_fold(const struct conf_section *const *sections, size_t n_sections,
	      section_pick_fn pick, const void *arg, struct ion_conf_props *props,
	      char ***ret_names);

#endif
