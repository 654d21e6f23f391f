// SPDX-License-Identifier: MIT
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "testlib.h"

void fd_table_read(struct fd_table *t)
{
	DIR *dir = opendir("/proc/self/fd");
	struct dirent *de;

	t->n = 0;
	assert_non_null(dir);
	while ((de = readdir(dir))) {
		int fd = atoi(de->d_name);

		if (de->d_name[0] == '.' || fd == dirfd(dir))
			continue;
		assert_true(t->n < FD_TABLE_MAX);
		t->fds[t->n++] = fd;
	}
	closedir(dir);
}

static bool has_fd(const struct fd_table *t, int fd)
{
	for (int i = 0; i < t->n; i++)
		if (t->fds[i] == fd)
			return true;
	return false;
}

static void print_fd(const char *what, int fd)
{
	char path[64], target[256];
	ssize_t n;

	snprintf(path, sizeof(path), "/proc/self/fd/%d", fd);
	n = readlink(path, target, sizeof(target) - 1);
	target[n < 0 ? 0 : n] = '\0';
	print_error("fd %d %s: %s\n", fd, what, target);
}

void fd_table_assert_same(const struct fd_table *before)
{
	struct fd_table now;
	bool same = true;

	fd_table_read(&now);
	for (int i = 0; i < now.n; i++)
		if (!has_fd(before, now.fds[i])) {
			print_fd("leaked", now.fds[i]);
			same = false;
		}
	for (int i = 0; i < before->n; i++)
		if (!has_fd(&now, before->fds[i])) {
			print_error("fd %d was closed behind the caller's back\n",
				    before->fds[i]);
			same = false;
		}
	assert_true(same);
}

bool fd_is_cloexec(int fd)
{
	int flags = fcntl(fd, F_GETFD);

	return flags >= 0 && (flags & FD_CLOEXEC);
}

void fd_table_assert_new_cloexec(const struct fd_table *before)
{
	struct fd_table now;
	bool ok = true;

	fd_table_read(&now);
	for (int i = 0; i < now.n; i++)
		if (!has_fd(before, now.fds[i]) && !fd_is_cloexec(now.fds[i])) {
			print_fd("is not close-on-exec", now.fds[i]);
			ok = false;
		}
	assert_true(ok);
}

static int remove_entry(const char *path, const struct stat *st, int flag,
			struct FTW *ftw)
{
	(void)st;
	(void)flag;
	(void)ftw;
	return remove(path);
}

int test_remove_tree(const char *path)
{
	return nftw(path, remove_entry, 16, FTW_DEPTH | FTW_PHYS);
}

static int add_name(char ***names, int *n, const char *name)
{
	char **grown = realloc(*names, (size_t)(*n + 2) * sizeof(**names));

	if (!grown)
		return -ENOMEM;
	*names = grown;
	grown[*n] = strdup(name);
	grown[++*n] = NULL;
	return 0;
}

char **test_heap_names(void)
{
	const char *env = getenv("LIBION_TEST_HEAPS");
	char **names = calloc(1, sizeof(*names));
	int n = 0;

	if (env && *env) {
		char *copy = strdup(env), *save = NULL;

		for (char *t = strtok_r(copy, ",", &save); t;
		     t = strtok_r(NULL, ",", &save))
			add_name(&names, &n, t);
		free(copy);
		return names;
	}

	struct ion_ctx *ctx;
	if (ion_ctx_new(NULL, &ctx) < 0)
		return names;
	int count = ion_ctx_get_heap_count(ctx);
	for (int i = 0; i < count; i++) {
		const struct ion_heap *h;

		if (ion_ctx_get_heap(ctx, (unsigned int)i, &h) == 0 &&
		    ion_heap_get_error(h) == 0)
			add_name(&names, &n, ion_heap_get_name(h));
	}
	ion_ctx_unref(ctx);
	return names;
}

void test_heap_names_free(char **names)
{
	for (char **p = names; p && *p; p++)
		free(*p);
	free(names);
}

int test_run_per_heap(const struct CMUnitTest *tests, size_t n, const char **current_heap)
{
	char **heaps = test_heap_names();
	int failed = 0, count = 0;

	for (char **h = heaps; *h; h++, count++) {
		char group[96];

		*current_heap = *h;
		snprintf(group, sizeof(group), "heap %s", *h);
		failed += _cmocka_run_group_tests(group, tests, n, NULL, NULL);
	}
	*current_heap = NULL;
	test_heap_names_free(heaps);
	if (count == 0) {
		fprintf(stderr, "no available heap to test\n");
		return -1;
	}
	return failed;
}
