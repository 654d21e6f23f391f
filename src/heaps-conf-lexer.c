// SPDX-License-Identifier: MIT
/*
 * heaps.d's lexer: a text cut into lines (1-based, as every message says
 * them), blank lines and comments passed over, the lines no section may
 * hold (longer than 4 KiB, a NUL byte) handed back as such; and the one
 * way a problem is reported, "file:line: message".
 */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "heaps-conf-internal.h"
#include "util.h"

/* Keeps a problem where the reporter keeps them; without memory it is
 * only counted. */
static void keep(struct conf_problems *kept, const char *file, unsigned int line,
		 const char *message)
{
	struct conf_problem p = { strdup(file), line, strdup(message) };
	struct conf_problem *grown;

	if (!p.file || !p.message ||
	    !(grown = realloc(kept->v, (kept->n + 1) * sizeof(*grown)))) {
		free(p.file);
		free(p.message);
		return;
	}
	kept->v = grown;
	kept->v[kept->n++] = p;
}

void conf_report(const struct reporter *rep, const char *file, unsigned int line,
		 const char *format, ...)
{
	/* A fixed buffer: reporting must not fail for want of memory. */
	char message[1024];
	va_list args;

	(*rep->count)++;
	if (!rep->fn && !rep->kept)
		return;
	va_start(args, format);
	vsnprintf(message, sizeof(message), format, args);
	va_end(args);
	if (rep->kept)
		keep(rep->kept, file, line, message);
	if (rep->fn)
		rep->fn(rep->userdata, file, line, message);
}

void conf_problems_clear(struct conf_problems *problems)
{
	for (size_t i = 0; i < problems->n; i++) {
		free(problems->v[i].file);
		free(problems->v[i].message);
	}
	free(problems->v);
	*problems = (struct conf_problems){ 0 };
}

bool conf_is_transient(int r)
{
	return r == -ENOMEM || r == -EMFILE || r == -ENFILE || r == -EINTR;
}

void conf_report_file(const struct reporter *rep, const char *path, int r)
{
	if (r == -EFBIG)
		conf_report(rep, path, 0, "%s", "file skipped: larger than 1 MiB");
	else if (r == -EBADFD || r == -EISDIR)
		conf_report(rep, path, 0, "%s", "file skipped: not a regular file");
	else
		conf_report(rep, path, 0, "file skipped: %s", strerror(-r));
}

int conf_lex(const char *text, size_t len, const struct conf_lexer *lexer)
{
	char buf[CONF_LINE_MAX + 1];
	unsigned int n = 0;
	size_t pos = 0;
	int r;

	while (pos < len) {
		const char *start = text + pos, *nl = memchr(start, '\n', len - pos);
		size_t line_len = nl ? (size_t)(nl - start) : len - pos;
		char *line;

		pos += line_len + 1;
		n++;
		if (line_len > CONF_LINE_MAX) {
			lexer->bad_line(lexer->userdata, n, "line longer than 4096 bytes");
			continue;
		}
		if (memchr(start, '\0', line_len)) {
			lexer->bad_line(lexer->userdata, n, "NUL byte in the line");
			continue;
		}
		memcpy(buf, start, line_len);
		buf[line_len] = '\0';
		line = ion_trim(buf);
		if (!*line || *line == '#')
			continue;
		r = lexer->line(lexer->userdata, line, n);
		if (r < 0)
			return r;
	}
	return 0;
}
