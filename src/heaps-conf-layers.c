// SPDX-License-Identifier: MIT
/*
 * heaps.d's layered folders, as kmod's: the folders highest priority
 * first (an entry may name one file), *.conf only and no hidden files, a
 * same-named file of a higher folder masking every lower one (an empty
 * file or /dev/null masks without replacing), and what is left read in
 * version order of the basenames, whichever folder each came from.
 */
#include <dirent.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>

#include "heaps-conf-internal.h"
#include "util.h"

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
		conf_report(rep, path, 0, "%s", "skipped: not a folder or a regular file");
		return 0;
	}
	/* A single file takes part in masking by its basename. */
	base = strrchr(path, '/');
	return listing_add(l, base ? base + 1 : path, path);
fail:
	if (conf_is_transient(r))
		return r;
	conf_report(rep, path, 0, "skipped: %s", strerror(-r));
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
	struct reporter rep = { error_fn, userdata, NULL, NULL };
	int r = 0;

	if ((!paths && n_paths) || !ret_conf)
		return -EINVAL;
	conf = conf_new();
	if (!conf)
		return -ENOMEM;
	rep.count = conf_error_counter(conf);
	rep.kept = conf_problems_of(conf);
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
			if (conf_is_transient(r))
				break;
			conf_report_file(&rep, list.v[i].path, r);
			r = 0;
			continue;
		}
		r = conf_load_text(conf, list.v[i].path, text, len, board, &rep);
	}
	listing_clear(&list);
	return conf_finish(conf, r, ret_conf);
}

