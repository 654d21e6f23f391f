// SPDX-License-Identifier: MIT
/*
 * Context and registry: discovery under a fake root (the same code path
 * production runs, with a sysroot prefix), ids, the cma alias, reasons
 * for unavailable heaps, logging and ION_LOG.
 */
#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "src/backends/backend.h"
#include "src/solver.h"
#include "testlib.h"

struct fake_root {
	char path[64];
	struct fd_table fds;
};

static void touch(const char *root, const char *rel)
{
	char path[256];
	int fd;

	snprintf(path, sizeof(path), "%s/%s", root, rel);
	fd = open(path, O_CREAT | O_WRONLY | O_CLOEXEC, 0600);
	assert_true(fd >= 0);
	close(fd);
}

static void mkdir_in(const char *root, const char *rel)
{
	char path[256];

	snprintf(path, sizeof(path), "%s/%s", root, rel);
	assert_int_equal(mkdir(path, 0755), 0);
}

static int setup(void **state)
{
	struct fake_root *r = calloc(1, sizeof(*r));

	strcpy(r->path, "/tmp/libion-root-XXXXXX");
	assert_non_null(mkdtemp(r->path));
	fd_table_read(&r->fds);
	*state = r;
	return 0;
}

static int teardown(void **state)
{
	struct fake_root *r = *state;

	fd_table_assert_same(&r->fds);
	test_remove_tree(r->path);
	free(r);
	return 0;
}

static const struct ion_heap *heap_named(struct ion_ctx *ctx, const char *name)
{
	const struct ion_heap *h = NULL;

	assert_int_equal(ion_ctx_find_heap(ctx, name, &h), 0);
	return h;
}

/* With no kernel allocator at all, memfd is the system heap. */
static void test_empty_root_has_memfd(void **state)
{
	struct fake_root *r = *state;
	struct ion_ctx *ctx;
	const struct ion_heap *h, *missing = (void *)1;
	int fd = -1;

	assert_int_equal(ion_ctx_new(r->path, &ctx), 0);
	assert_int_equal(ion_ctx_get_heap_count(ctx), 1);
	h = heap_named(ctx, "memfd");
	assert_string_equal(ion_heap_get_backend(h), "memfd");
	assert_null(ion_heap_get_node(h));
	assert_int_equal(ion_heap_get_id(h), ION_HEAP_TYPE_SYSTEM);
	assert_int_equal(ion_heap_get_type(h), ION_HEAP_TYPE_SYSTEM);
	assert_true(ion_heap_get_properties(h) & ION_HEAP_PROP_CPU_ONLY);
	assert_int_equal(ion_heap_get_error(h), 0);
	assert_null(ion_heap_get_reason(h));
	assert_int_equal(ion_ctx_find_heap(ctx, "cma", &missing), -ENOENT);
	assert_ptr_equal(missing, (void *)1);
	assert_int_equal(ion_ctx_alloc_mask(ctx, ION_HEAP_SYSTEM_MASK, 4096, 0, &fd, &h), 0);
	assert_string_equal(ion_heap_get_name(h), "memfd");
	close(fd);
	assert_null(ion_ctx_unref(ctx));
}

/*
 * Nodes that are not dma-heap devices, or cannot be opened, are listed
 * unavailable with the reason; they take no id, so memfd stays the
 * system heap.
 */
static void test_unusable_dma_heap_nodes(void **state)
{
	struct fake_root *r = *state;
	struct ion_ctx *ctx;
	const struct ion_heap *h;
	char link[256];
	int fd = -5;

	mkdir_in(r->path, "dev");
	mkdir_in(r->path, "dev/dma_heap");
	touch(r->path, "dev/dma_heap/system");
	touch(r->path, "dev/dma_heap/reserved");
	snprintf(link, sizeof(link), "%s/dev/dma_heap/loop", r->path);
	assert_int_equal(symlink(link, link), 0);

	assert_int_equal(ion_ctx_new(r->path, &ctx), 0);
	assert_int_equal(ion_ctx_get_heap_count(ctx), 4);

	h = heap_named(ctx, "system");
	assert_int_equal(ion_heap_get_error(h), -ENOTTY);
	assert_non_null(strstr(ion_heap_get_reason(h), "is not a character device (wanted: dma_heap)"));
	assert_int_equal(ion_heap_get_id(h), -1);

	h = heap_named(ctx, "cma");
	assert_string_equal(ion_heap_get_name(h), "reserved");
	assert_int_equal(ion_heap_get_type(h), ION_HEAP_TYPE_DMA);
	assert_true(ion_heap_get_properties(h) & ION_HEAP_PROP_CONTIGUOUS);

	h = heap_named(ctx, "loop");
	assert_int_equal(ion_heap_get_error(h), -ELOOP);
	assert_non_null(strstr(ion_heap_get_reason(h), "open "));
	assert_non_null(strstr(ion_heap_get_reason(h), "symbolic links"));

	assert_int_equal(ion_ctx_alloc(ctx, "reserved", 4096, 0, &fd), -ENOTTY);
	assert_int_equal(ion_ctx_alloc_mask(ctx, ION_HEAP_TYPE_DMA_MASK, 4096, 0, &fd, NULL), -ENODEV);
	assert_int_equal(fd, -5);
	assert_int_equal(ion_heap_get_id(heap_named(ctx, "memfd")), ION_HEAP_TYPE_SYSTEM);
	ion_ctx_unref(ctx);
}

static void test_ctx_arguments(void **state)
{
	struct ion_ctx *ctx = (void *)1;

	(void)state;
	assert_int_equal(ion_ctx_new("relative/path", &ctx), -EINVAL);
	assert_int_equal(ion_ctx_new(NULL, NULL), -EINVAL);
	assert_ptr_equal(ctx, (void *)1);
	assert_null(ion_ctx_unref(NULL));
	assert_int_equal(ion_ctx_get_heap_count(NULL), -EINVAL);
	assert_int_equal(ion_ctx_get_heap(NULL, 0, NULL), -EINVAL);
	assert_int_equal(ion_ctx_find_heap(NULL, "memfd", NULL), -EINVAL);

	assert_int_equal(ion_ctx_new("/", &ctx), 0);
	assert_ptr_equal(ion_ctx_ref(ctx), ctx);
	assert_null(ion_ctx_unref(ctx));
	/* still alive: one reference left */
	assert_true(ion_ctx_get_heap_count(ctx) >= 1);
	assert_null(ion_ctx_unref(ctx));
}

/* Writes text to root/rel (folders made first). */
static void write_in(const char *root, const char *rel, const char *text)
{
	char path[256];
	FILE *f;

	snprintf(path, sizeof(path), "%s/%s", root, rel);
	f = fopen(path, "we");
	assert_non_null(f);
	fputs(text, f);
	fclose(f);
}

/* Whether memfd answers to name. */
static bool memfd_aliased(struct ion_ctx *ctx, const char *name)
{
	const struct ion_heap *h = NULL;

	return ion_ctx_find_heap(ctx, name, &h) == 0 && strcmp(ion_heap_get_name(h), "memfd") == 0;
}

/*
 * ion_ctx_set_heaps_paths(): the folders as an array, highest priority
 * first (a same-named file in the first masks the second's), an empty
 * array reads nothing, NULL the defaults; bad arrays change nothing.
 */
static void test_heaps_paths_array(void **state)
{
	struct fake_root *r = *state;
	char high[128], low[128], list[300], many[ION_HEAPS_PATHS_MAX + 2][8];
	const char *both[] = { high, low, NULL }, *none[] = { NULL };
	const char *empty[] = { high, "", NULL }, *too_many[ION_HEAPS_PATHS_MAX + 2];
	struct ion_ctx *ctx;

	snprintf(high, sizeof(high), "%s/high", r->path);
	snprintf(low, sizeof(low), "%s/low", r->path);
	mkdir_in(r->path, "high");
	mkdir_in(r->path, "low");
	write_in(r->path, "high/10-a.conf", "[Heap memfd]\nAliases = from-high\n");
	write_in(r->path, "low/10-a.conf", "[Heap memfd]\nAliases = masked\n");
	write_in(r->path, "low/20-b.conf", "[Heap memfd]\nAliases += from-low\n");
	for (size_t i = 0; i <= ION_HEAPS_PATHS_MAX; i++) {
		snprintf(many[i], sizeof(many[i]), "/d%zu", i);
		too_many[i] = many[i];
	}
	too_many[ION_HEAPS_PATHS_MAX + 1] = NULL;

	assert_int_equal(ion_ctx_new(r->path, &ctx), 0);
	assert_int_equal(ion_ctx_set_heaps_paths(NULL, both), -EINVAL);
	assert_int_equal(ion_ctx_set_heaps_paths(ctx, too_many), -E2BIG);
	assert_int_equal(ion_ctx_set_heaps_paths(ctx, empty), -EINVAL);
	assert_int_equal(ion_ctx_set_heaps_paths(ctx, both), 0);
	assert_true(memfd_aliased(ctx, "from-high"));
	assert_true(memfd_aliased(ctx, "from-low"));
	assert_false(memfd_aliased(ctx, "masked"));
	/* Discovery has run: the folders are fixed now. */
	assert_int_equal(ion_ctx_set_heaps_paths(ctx, none), -EBUSY);
	assert_null(ion_ctx_unref(ctx));

	/* The refused calls above left the defaults: nothing under the root. */
	assert_int_equal(ion_ctx_new(r->path, &ctx), 0);
	assert_int_equal(ion_ctx_set_heaps_paths(ctx, too_many), -E2BIG);
	assert_false(memfd_aliased(ctx, "from-high"));
	assert_null(ion_ctx_unref(ctx));

	/* An empty array reads no file; NULL restores the defaults. */
	assert_int_equal(ion_ctx_new(r->path, &ctx), 0);
	assert_int_equal(ion_ctx_set_heaps_paths(ctx, both), 0);
	assert_int_equal(ion_ctx_set_heaps_paths(ctx, none), 0);
	assert_false(memfd_aliased(ctx, "from-high"));
	assert_null(ion_ctx_unref(ctx));
	assert_int_equal(ion_ctx_new(r->path, &ctx), 0);
	assert_int_equal(ion_ctx_set_heaps_paths(ctx, both), 0);
	assert_int_equal(ion_ctx_set_heaps_paths(ctx, NULL), 0);
	assert_false(memfd_aliased(ctx, "from-low"));
	assert_null(ion_ctx_unref(ctx));

	/* The ':'-string says the same. */
	assert_int_equal(ion_ctx_new(r->path, &ctx), 0);
	snprintf(list, sizeof(list), "%s::%s", high, low);
	assert_int_equal(ion_ctx_set_heaps_path(ctx, list), 0);
	assert_true(memfd_aliased(ctx, "from-high"));
	assert_true(memfd_aliased(ctx, "from-low"));
	assert_false(memfd_aliased(ctx, "masked"));
	assert_null(ion_ctx_unref(ctx));
}

/* The heaps.d problems, as data: what ionctl check prints. */
static int conf_log_lines;
static void conf_log(struct ion_ctx *ctx, int priority, const char *file,
		     int line, const char *fn, const char *format, va_list args)
{
	(void)ctx;
	(void)format;
	(void)args;
	if (strcmp(fn, ION_LOG_CONF_FN) == 0) {
		assert_int_equal(priority, LOG_ERR);
		assert_non_null(strstr(file, "heaps/10-bad.conf"));
		assert_true(line == 2 || line == 3);
		conf_log_lines++;
	}
}

static void test_config_errors(void **state)
{
	struct fake_root *r = *state;
	const char *file = "untouched", *message = "untouched";
	unsigned int line = 99;
	struct ion_ctx *ctx;
	char dir[128];

	snprintf(dir, sizeof(dir), "%s/heaps", r->path);
	mkdir_in(r->path, "heaps");
	write_in(r->path, "heaps/10-bad.conf", "[Heap memfd]\nContigous = yes\nAliases\n");
	write_in(r->path, "heaps/20-good.conf", "[Heap memfd]\nAliases = fine\n");
	assert_int_equal(ion_ctx_new(r->path, &ctx), 0);
	ion_ctx_set_log_fn(ctx, conf_log);
	assert_int_equal(ion_ctx_set_heaps_path(ctx, dir), 0);
	assert_int_equal(ion_ctx_get_config_error(NULL, 0, &file, &line, &message), -EINVAL);
	assert_int_equal(ion_ctx_get_config_error(ctx, 0, NULL, &line, &message), -EINVAL);
	assert_int_equal(ion_ctx_get_config_error_count(ctx), 2);
	assert_int_equal(conf_log_lines, 2);
	assert_int_equal(ion_ctx_get_config_error(ctx, 0, &file, &line, &message), 0);
	assert_non_null(strstr(file, "heaps/10-bad.conf"));
	assert_int_equal(line, 2);
	assert_non_null(strstr(message, "Contigous"));
	assert_null(strstr(message, "10-bad.conf")); /* the words alone */
	assert_int_equal(ion_ctx_get_config_error(ctx, 1, &file, &line, &message), 0);
	assert_int_equal(line, 3);
	file = message = "untouched";
	line = 99;
	assert_int_equal(ion_ctx_get_config_error(ctx, 2, &file, &line, &message), -ENOENT);
	assert_string_equal(file, "untouched");
	assert_string_equal(message, "untouched");
	assert_int_equal(line, 99);
	assert_true(memfd_aliased(ctx, "fine"));
	assert_null(ion_ctx_unref(ctx));
}

static int log_calls;
static void count_log(struct ion_ctx *ctx, int priority, const char *file,
		      int line, const char *fn, const char *format, va_list args)
{
	(void)file;
	(void)line;
	(void)fn;
	(void)format;
	(void)args;
	assert_int_equal(priority, LOG_DEBUG);
	assert_ptr_equal(ion_ctx_get_userdata(ctx), &log_calls);
	log_calls++;
}

static void test_log_handler_and_env(void **state)
{
	struct fake_root *r = *state;
	struct ion_ctx *ctx;

	setenv("ION_LOG", "debug", 1);
	assert_int_equal(ion_ctx_new(r->path, &ctx), 0);
	assert_int_equal(ion_ctx_get_log_priority(ctx), LOG_DEBUG);
	ion_ctx_set_userdata(ctx, &log_calls);
	ion_ctx_set_log_fn(ctx, count_log);
	log_calls = 0;
	assert_int_equal(ion_ctx_get_heap_count(ctx), 1);
	/* One line per heap found, at least. */
	assert_true(log_calls >= 1);
	ion_ctx_unref(ctx);

	setenv("ION_LOG", "4", 1);
	assert_int_equal(ion_ctx_new(r->path, &ctx), 0);
	assert_int_equal(ion_ctx_get_log_priority(ctx), 4);
	ion_ctx_set_log_priority(ctx, LOG_ERR);
	ion_ctx_set_log_fn(ctx, count_log);
	log_calls = 0;
	assert_int_equal(ion_ctx_get_heap_count(ctx), 1);
	assert_int_equal(log_calls, 0);
	ion_ctx_unref(ctx);

	setenv("ION_LOG", "verbose-please", 1);
	assert_int_equal(ion_ctx_new(r->path, &ctx), 0);
	assert_int_equal(ion_ctx_get_log_priority(ctx), LOG_ERR);
	ion_ctx_unref(ctx);
	unsetenv("ION_LOG");
}

/*
 * A heap node this user may not open: the reason says whose it is, its
 * mode, and what would let the user in.  Needs root to make the node
 * (mknod) and to become nobody; skipped elsewhere.
 */
static void test_permission_hint(void **state)
{
	struct fake_root *r = *state;
	char path[256];
	pid_t pid;
	int status;

	mkdir_in(r->path, "dev");
	mkdir_in(r->path, "dev/dma_heap");
	snprintf(path, sizeof(path), "%s/dev/dma_heap/system", r->path);
	if (geteuid() != 0 || mknod(path, S_IFCHR | 0600, makedev(1, 3)) < 0)
		skip();
	assert_int_equal(chmod(r->path, 0755), 0);
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		struct ion_ctx *ctx;
		const struct ion_heap *h;
		const char *reason;

		/* As nobody, as a desktop user would be. */
		if (setgid(65534) < 0 || setuid(65534) < 0)
			_exit(2);
		if (ion_ctx_new(r->path, &ctx) < 0 || ion_ctx_find_heap(ctx, "system", &h) < 0)
			_exit(3);
		reason = ion_heap_get_reason(h);
		if (ion_heap_get_error(h) != -EACCES || !reason ||
		    !strstr(reason, "Permission denied") || !strstr(reason, "root:root 0600") ||
		    !strstr(reason, "70-libion.rules") || !strstr(reason, "group video")) {
			fprintf(stderr, "reason: %s\n", reason ? reason : "(none)");
			_exit(4);
		}
		ion_ctx_unref(ctx);
		_exit(0);
	}
	assert_int_equal(waitpid(pid, &status, 0), pid);
	assert_true(WIFEXITED(status));
	assert_int_equal(WEXITSTATUS(status), 0);
}

int main(void)
{
	static const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_empty_root_has_memfd, setup, teardown),
		cmocka_unit_test_setup_teardown(test_unusable_dma_heap_nodes, setup, teardown),
		cmocka_unit_test_setup_teardown(test_heaps_paths_array, setup, teardown),
		cmocka_unit_test_setup_teardown(test_config_errors, setup, teardown),
		cmocka_unit_test_setup_teardown(test_ctx_arguments, setup, teardown),
		cmocka_unit_test_setup_teardown(test_log_handler_and_env, setup, teardown),
		cmocka_unit_test_setup_teardown(test_permission_hint, setup, teardown),
	};

	return cmocka_run_group_tests_name("registry", tests, NULL, NULL);
}
