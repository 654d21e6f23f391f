/* SPDX-License-Identifier: MIT */
/* Helpers every test program shares: the fd-table check, heap selection. */
#ifndef LIBION_TESTLIB_H
#define LIBION_TESTLIB_H

#include <stdbool.h>
#include <stddef.h>

#include <ion/ion.h>

#define FD_TABLE_MAX 512

struct fd_table {
	int n;
	int fds[FD_TABLE_MAX];
};

/* The process's open fds, from /proc/self/fd (the directory's own fd left out). */
void fd_table_read(struct fd_table *t);
/* Fails the current cmocka test, naming each fd that appeared or vanished. */
void fd_table_assert_same(const struct fd_table *before);

bool fd_is_cloexec(int fd);
/* Fails the current test unless every fd opened since before is close-on-exec. */
void fd_table_assert_new_cloexec(const struct fd_table *before);

/* Removes a directory tree (a test's fake root); 0 or -1. */
int test_remove_tree(const char *path);

/*
 * The heaps a suite runs on: every available heap of a fresh context, or
 * the comma-separated names in LIBION_TEST_HEAPS.  Returns a malloc'ed
 * NULL-terminated array of malloc'ed names.
 */
char **test_heap_names(void);
void test_heap_names_free(char **names);

struct CMUnitTest;
/*
 * Runs the cmocka group once per heap of test_heap_names() (group "heap
 * NAME"), with *current_heap naming the heap for the group's setup, and
 * NULL afterwards.  Returns the number of failed tests, or -1 (said on
 * stderr) when there is no heap to test.
 */
int test_run_per_heap(const struct CMUnitTest *tests, size_t n, const char **current_heap);

#endif
