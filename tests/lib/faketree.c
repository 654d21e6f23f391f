// SPDX-License-Identifier: MIT
/* Builds a fake machine's /sys, /proc and /dev from a tree file (faketree.h). */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "faketree.h"

struct builder {
	const char *file;	/* the tree file, for messages */
	const char *root;
	unsigned int line;
	char *err;
	size_t err_size;
	/* Absolute link targets, checked once everything is built: a link may
	 * come before the folder it points to. */
	struct pending {
		unsigned int line;
		char *target;
	} *pending;
	size_t n_pending;
};

__attribute__((format(printf, 3, 4)))
static int fail(struct builder *b, int error, const char *format, ...)
{
	va_list args;
	int n = 0;

	if (b->err_size) {
		n = snprintf(b->err, b->err_size, "%s:%u: ", b->file, b->line);
		if (n < 0 || (size_t)n >= b->err_size)
			n = 0;
		va_start(args, format);
		vsnprintf(b->err + n, b->err_size - (size_t)n, format, args);
		va_end(args);
	}
	return error;
}

/* Absolute, no blanks, no empty, "." or ".." component, no trailing '/'. */
static bool valid_path(const char *p)
{
	if (p[0] != '/' || !p[1])
		return false;
	for (const char *c = p; *c; c++) {
		const char *next = strchr(c + 1, '/');
		size_t len = next ? (size_t)(next - c - 1) : strlen(c + 1);

		if (*c != '/')
			continue;
		if (len == 0 || (len == 1 && c[1] == '.') ||
		    (len == 2 && c[1] == '.' && c[2] == '.'))
			return false;
	}
	return strcspn(p, " \t") == strlen(p);
}

static int full_path(struct builder *b, const char *path, char *buf, size_t size)
{
	int n = snprintf(buf, size, "%s%s", b->root, path);

	if (n < 0 || (size_t)n >= size)
		return fail(b, -ENAMETOOLONG, "path too long: %s", path);
	return 0;
}

/* mkdir -p: the folders above full, and full itself unless parent_only. */
static int make_dirs(struct builder *b, const char *full, bool parent_only)
{
	const char *shown = full + strlen(b->root);
	char buf[PATH_MAX];
	struct stat st;

	snprintf(buf, sizeof(buf), "%s", full);
	for (char *s = strchr(buf + strlen(b->root) + 1, '/'); s; s = strchr(s + 1, '/')) {
		*s = '\0';
		if (mkdir(buf, 0755) < 0 && errno != EEXIST)
			return fail(b, -errno, "mkdir %s: %s", shown, strerror(errno));
		*s = '/';
	}
	if (parent_only)
		return 0;
	if (mkdir(buf, 0755) < 0 && (errno != EEXIST || stat(buf, &st) < 0 || !S_ISDIR(st.st_mode)))
		return fail(b, -EEXIST, "%s exists and is no folder", shown);
	return 0;
}

static int hex_digit(char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	if (c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	return -1;
}

/* Unescapes text into out (at least strlen(text) bytes); the length, or
 * a negative errno after fail(). */
static ssize_t unescape(struct builder *b, const char *text, char *out)
{
	size_t n = 0;

	for (const char *s = text; *s; s++) {
		if (*s != '\\') {
			out[n++] = *s;
			continue;
		}
		switch (*++s) {
		case 'n':
			out[n++] = '\n';
			break;
		case 't':
			out[n++] = '\t';
			break;
		case '0':
			out[n++] = '\0';
			break;
		case '\\':
			out[n++] = '\\';
			break;
		case 'x': {
			int hi = hex_digit(s[1]), lo = hi < 0 ? -1 : hex_digit(s[2]);

			if (lo < 0)
				return fail(b, -EINVAL, "\\x needs two hex digits");
			out[n++] = (char)(hi << 4 | lo);
			s += 2;
			break;
		}
		default:
			return fail(b, -EINVAL, "unknown escape \\%c (\\n \\t \\0 \\\\ \\xHH)",
				    *s ? *s : ' ');
		}
	}
	return (ssize_t)n;
}

static int write_file(struct builder *b, const char *full, const char *text)
{
	char *data = malloc(strlen(text) + 1);
	ssize_t len, done = 0;
	int fd, r = 0;

	if (!data)
		return fail(b, -ENOMEM, "out of memory");
	len = unescape(b, text, data);
	if (len < 0) {
		free(data);
		return (int)len;
	}
	fd = open(full, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
	if (fd < 0)
		r = fail(b, -errno, "%s: %s", full + strlen(b->root), strerror(errno));
	while (r == 0 && done < len) {
		ssize_t w = write(fd, data + done, (size_t)(len - done));

		if (w < 0 && errno == EINTR)
			continue;
		if (w < 0)
			r = fail(b, -errno, "write: %s", strerror(errno));
		else
			done += w;
	}
	if (fd >= 0 && close(fd) < 0 && r == 0)
		r = fail(b, -errno, "close: %s", strerror(errno));
	free(data);
	return r;
}

/*
 * target (absolute in the tree) relative to the folder of path: the
 * shared leading folders dropped, one ".." for each folder of path's that
 * is left, as the kernel writes sysfs links.
 */
static int relative_target(const char *path, const char *target, char *buf, size_t size)
{
	const char *p = path, *t = target;
	size_t used = 0;
	int n;

	/* Walk the common folders: a component of path's folder counts only
	 * if a further '/' follows it in path. */
	for (;;) {
		const char *pe = strchr(p + 1, '/'), *te = strchr(t + 1, '/');
		size_t plen = pe ? (size_t)(pe - p) : 0;

		if (!pe || !te || plen != (size_t)(te - t) || strncmp(p, t, plen) != 0)
			break;
		p = pe;
		t = te;
	}
	for (const char *s = strchr(p + 1, '/'); s; s = strchr(s + 1, '/')) {
		n = snprintf(buf + used, size - used, "../");
		if (n < 0 || (size_t)n >= size - used)
			return -ENAMETOOLONG;
		used += (size_t)n;
	}
	n = snprintf(buf + used, size - used, "%s", t + 1);
	return n < 0 || (size_t)n >= size - used ? -ENAMETOOLONG : 0;
}

static int make_link(struct builder *b, const char *path, const char *full,
		     const char *target)
{
	char rel[PATH_MAX];
	struct pending *grown;

	if (target[0] == '/') {
		if (!valid_path(target))
			return fail(b, -EINVAL, "bad link target %s", target);
		if (relative_target(path, target, rel, sizeof(rel)) < 0)
			return fail(b, -ENAMETOOLONG, "link target too long");
		grown = realloc(b->pending, (b->n_pending + 1) * sizeof(*grown));
		if (!grown)
			return fail(b, -ENOMEM, "out of memory");
		b->pending = grown;
		grown[b->n_pending].line = b->line;
		grown[b->n_pending].target = strdup(target);
		if (!grown[b->n_pending++].target)
			return fail(b, -ENOMEM, "out of memory");
		target = rel;
	}
	if (symlink(target, full) < 0)
		return fail(b, -errno, "symlink %s: %s", path, strerror(errno));
	return 0;
}

/* One line, its newline gone. */
static int build_line(struct builder *b, char *line)
{
	char full[PATH_MAX], *verb, *path, *rest;
	int r;

	while (*line == ' ' || *line == '\t')
		line++;
	if (!*line || *line == '#')
		return 0;
	verb = line;
	path = strchr(verb, ' ');
	if (!path)
		return fail(b, -EINVAL, "'%s' needs a path", verb);
	*path++ = '\0';
	rest = strchr(path, ' ');
	if (rest)
		*rest++ = '\0';
	if (!valid_path(path))
		return fail(b, -EINVAL, "bad path '%s' (absolute, no blanks, no empty, . or .. parts)",
			    path);
	r = full_path(b, path, full, sizeof(full));
	if (r < 0)
		return r;
	if (strcmp(verb, "dir") == 0) {
		if (rest)
			return fail(b, -EINVAL, "dir takes only a path");
		return make_dirs(b, full, false);
	}
	r = make_dirs(b, full, true);
	if (r < 0)
		return r;
	if (strcmp(verb, "file") == 0)
		return write_file(b, full, rest ? rest : "");
	if (strcmp(verb, "link") == 0) {
		if (!rest || !*rest || strchr(rest, ' '))
			return fail(b, -EINVAL, "link takes a path and one target");
		return make_link(b, path, full, rest);
	}
	if (strcmp(verb, "null") == 0) {
		if (rest)
			return fail(b, -EINVAL, "null takes only a path");
		/* Outside the tree on purpose: the host's own device node. */
		if (symlink("/dev/null", full) < 0)
			return fail(b, -errno, "symlink %s: %s", path, strerror(errno));
		return 0;
	}
	if (strcmp(verb, "dev") == 0) {
		struct stat st;

		/* Another host character device, for a node whose sysfs
		 * entry must differ from /dev/null's (1:3). */
		if (!rest || strncmp(rest, "/dev/", 5) != 0 || stat(rest, &st) < 0 ||
		    !S_ISCHR(st.st_mode))
			return fail(b, -EINVAL, "dev takes a path and a host char device");
		if (symlink(rest, full) < 0)
			return fail(b, -errno, "symlink %s: %s", path, strerror(errno));
		return 0;
	}
	return fail(b, -EINVAL, "unknown entry '%s' (dir, file, link, null, dev)", verb);
}

int faketree_build(const char *path, const char *root, char *err, size_t err_size)
{
	struct builder b = { .file = path, .root = root, .err = err, .err_size = err_size };
	char *line = NULL;
	size_t size = 0;
	ssize_t len;
	FILE *f;
	int r = 0;

	if (err_size)
		err[0] = '\0';
	f = fopen(path, "re");
	if (!f)
		return fail(&b, -errno, "%s", strerror(errno));
	while (r == 0 && (len = getline(&line, &size, f)) >= 0) {
		b.line++;
		if (len && line[len - 1] == '\n')
			line[--len] = '\0';
		if (memchr(line, '\0', (size_t)len))
			r = fail(&b, -EINVAL, "a NUL byte in the line (write \\0)");
		else
			r = build_line(&b, line);
	}
	if (r == 0 && ferror(f))
		r = fail(&b, -EIO, "read error");
	fclose(f);
	free(line);
	for (size_t i = 0; i < b.n_pending; i++) {
		char full[PATH_MAX];
		struct stat st;

		b.line = b.pending[i].line;
		if (r == 0 && (r = full_path(&b, b.pending[i].target, full, sizeof(full))) == 0 &&
		    lstat(full, &st) < 0)
			r = fail(&b, -ENOENT, "link target %s is not in the tree",
				 b.pending[i].target);
		free(b.pending[i].target);
	}
	free(b.pending);
	return r;
}
