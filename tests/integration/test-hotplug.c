// SPDX-License-Identifier: MIT
/*
 * Heaps and devices that come and go, seen by a running context: a fake
 * root where a DMA-BUF heap node appears and goes (host and VM), and in
 * the VM a real camera unbound from its driver through sysfs and bound
 * again (vivid), which the kernel's devtmpfs reflects in /dev.
 */
#include <errno.h>
#include <fcntl.h>
#include <malloc.h>
#include <poll.h>
#include <pthread.h>
#include <stdatomic.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "testlib.h"
#include "watch.h"

#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
#define LIBION_SANITIZED 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer)
#define LIBION_SANITIZED 1
#endif
#endif
#ifdef LIBION_SANITIZED
/* The sanitizers' allocator interface (gcc ships no header for it). */
size_t __sanitizer_get_current_allocated_bytes(void);
#else
#define LIBION_SANITIZED 0
#endif

/* Whether the monitor fd becomes readable within ms. */
static bool readable(int fd, int ms)
{
	struct pollfd p = { .fd = fd, .events = POLLIN };

	return poll(&p, 1, ms) == 1 && (p.revents & POLLIN);
}

static void write_file(const char *path, const char *text)
{
	int fd = open(path, O_WRONLY | O_CLOEXEC);

	assert_true(fd >= 0);
	assert_int_equal(write(fd, text, strlen(text)), (ssize_t)strlen(text));
	close(fd);
}

static void make_path(const char *root, const char *rel, char *out, size_t size)
{
	snprintf(out, size, "%s%s", root, rel);
}

static void make_root(char *root)
{
	char path[256];

	assert_non_null(mkdtemp(root));
	make_path(root, "/dev", path, sizeof(path));
	assert_int_equal(mkdir(path, 0755), 0);
	make_path(root, "/dev/dma_heap", path, sizeof(path));
	assert_int_equal(mkdir(path, 0755), 0);
}

static struct ion_solution *solve_for(struct ion_ctx *ctx, const char *heap)
{
	struct ion_alloc_config *config;
	struct ion_solution *sol;

	assert_int_equal(ion_alloc_config_new(&config), 0);
	assert_int_equal(ion_alloc_config_set_size(config, 4096), 0);
	assert_int_equal(ion_alloc_config_set_heap(config, heap), 0);
	assert_int_equal(ion_ctx_solve(ctx, config, &sol), 0);
	ion_alloc_config_free(config);
	return sol;
}

/*
 * A fake root: /dev/dma_heap/system arrives after the context first
 * looked, then goes again.  Each change polls the monitor readable, a
 * rescan answers 1 and the heap list follows, while what a solution holds
 * stays valid; a rescan without a change answers 0.
 */
static void test_heap_comes_and_goes(void **state)
{
	char root[] = "/tmp/libion-hotplug-XXXXXX", path[256];
	const struct ion_heap *memfd, *system = NULL;
	struct ion_solution *sol;
	struct fd_table fds;
	struct ion_ctx *ctx;
	int fd, buf;

	(void)state;
	fd_table_read(&fds);
	make_root(root);
	assert_int_equal(ion_ctx_new(root, &ctx), 0);
	assert_int_equal(ion_ctx_set_heaps_path(ctx, ""), 0);
	assert_int_equal(ion_ctx_get_heap_count(ctx), 1);
	sol = solve_for(ctx, "memfd");
	memfd = ion_solution_get_heap(sol, 0);
	fd = ion_ctx_get_monitor_fd(ctx);
	assert_true(fd >= 0);
	assert_true(fd_is_cloexec(fd));
	assert_int_equal(ion_ctx_get_monitor_fd(ctx), fd); /* one, the context's */
	assert_false(readable(fd, 0));
	assert_int_equal(ion_ctx_rescan(ctx), 0);

	/* A node arrives (a symlink to a char device: it need not work). */
	make_path(root, "/dev/dma_heap/system", path, sizeof(path));
	assert_int_equal(symlink("/dev/null", path), 0);
	assert_true(readable(fd, 2000));
	assert_int_equal(ion_ctx_rescan(ctx), 1);
	assert_false(readable(fd, 0)); /* drained */
	assert_int_equal(ion_ctx_get_heap_count(ctx), 2);
	assert_int_equal(ion_ctx_find_heap(ctx, "system", &system), 0);
	/* The solution got before the rescan still holds its heaps, and
	 * still allocates from them. */
	assert_string_equal(ion_heap_get_name(memfd), "memfd");
	assert_int_equal(ion_solution_alloc(sol, &buf, NULL), 0);
	close(buf);

	/* ... and goes. */
	assert_int_equal(unlink(path), 0);
	assert_true(readable(fd, 2000));
	assert_int_equal(ion_ctx_rescan(ctx), 1);
	assert_int_equal(ion_ctx_get_heap_count(ctx), 1);
	assert_int_equal(ion_ctx_find_heap(ctx, "system", &system), -ENOENT);
	assert_string_equal(ion_heap_get_name(memfd), "memfd");
	assert_int_equal(ion_ctx_rescan(ctx), 0);

	ion_solution_unref(sol);
	ion_ctx_unref(ctx);
	test_remove_tree(root);
	fd_table_assert_same(&fds);
}

/* Bytes the allocator hands out now. */
static size_t heap_in_use(void)
{
#if LIBION_SANITIZED
	return __sanitizer_get_current_allocated_bytes();
#else
	struct mallinfo2 m = mallinfo2();

	return m.uordblks + m.hblkhd;
#endif
}

/* A board file of about 64 KiB, so that a registry kept too long shows. */
static void write_board(const char *dir)
{
	char path[256];
	FILE *f;

	snprintf(path, sizeof(path), "%s/50-big.conf", dir);
	f = fopen(path, "we");
	assert_non_null(f);
	for (int i = 0; i < 800; i++)
		fprintf(f, "# filler, so that each parse is large: line %d of the board\n"
			   "[Device cam%d]\nMatchOFCompatible = test,cam%d\nContiguous = yes\n\n", i, i, i);
	fclose(f);
}

/*
 * A camera plugged and unplugged as long as a compositor runs: each
 * rescan replaces the registry, and the old one goes with its heaps.d
 * parse and fds, so that neither the fd table nor the heap grows.
 * (Before, every replaced registry was kept for the context's life.)
 */
static void test_plug_unplug_is_flat(void **state)
{
	char root[] = "/tmp/libion-hotplug-XXXXXX", path[256], conf[300];
	int cycles = watch_under_valgrind() ? 200 : watch_slowdown() > 1 ? 2000 : 10000;
	size_t warm = 0, end;
	struct fd_table fds, fds_warm;
	struct ion_ctx *ctx;

	(void)state;
	fd_table_read(&fds);
	make_root(root);
	snprintf(conf, sizeof(conf), "%s/heaps.d", root);
	assert_int_equal(mkdir(conf, 0755), 0);
	write_board(conf);
	make_path(root, "/dev/dma_heap/system", path, sizeof(path));
	assert_int_equal(ion_ctx_new(root, &ctx), 0);
	assert_int_equal(ion_ctx_set_heaps_path(ctx, conf), 0);
	assert_true(ion_ctx_get_monitor_fd(ctx) >= 0);
	for (int i = 0; i < cycles; i++) {
		struct ion_solution *sol;

		if (i == cycles / 10) {
			fd_table_read(&fds_warm);
			warm = heap_in_use();
		}
		assert_int_equal(symlink("/dev/null", path), 0);
		assert_int_equal(ion_ctx_rescan(ctx), 1);
		/* Something held across the next change, let go after it. */
		sol = solve_for(ctx, "memfd");
		assert_int_equal(unlink(path), 0);
		assert_int_equal(ion_ctx_rescan(ctx), 1);
		assert_string_equal(ion_heap_get_name(ion_solution_get_heap(sol, 0)), "memfd");
		ion_solution_unref(sol);
	}
	end = heap_in_use();
	fd_table_assert_same(&fds_warm);
	printf("%d plugs and unplugs: %zu bytes in use after %d, %zu at the end\n", cycles,
	       warm, cycles / 10, end);
	/* A registry kept per change would be hundreds of KiB each; what
	 * grows up to 1 MiB is the allocator settling (its caches count as in
	 * use).  valgrind's allocator answers mallinfo2() with nothing useful. */
	if (!watch_under_valgrind())
		assert_true(end < warm + 1024 * 1024);
	ion_ctx_unref(ctx);
	test_remove_tree(root);
	fd_table_assert_same(&fds);
}

/* Rescans in one thread while others solve, allocate and read devices:
 * a registry is freed only once no call is using it (ASan and TSan
 * watch this one). */
struct reader {
	struct ion_ctx *ctx;
	atomic_int *stop;
	int calls;
};

static void *read_while_rescanned(void *data)
{
	struct reader *r = data;

	while (!atomic_load(r->stop)) {
		struct ion_solution *sol = solve_for(r->ctx, "memfd");
		const struct ion_heap *h;
		int fd;

		assert_int_equal(ion_solution_alloc(sol, &fd, NULL), 0);
		close(fd);
		ion_solution_unref(sol);
		assert_int_equal(ion_ctx_alloc(r->ctx, "memfd", 4096, 0, &fd), 0);
		close(fd);
		assert_true(ion_ctx_get_heap_count(r->ctx) >= 1);
		if (ion_ctx_find_heap(r->ctx, "memfd", &h) == 0)
			r->calls++;
	}
	return NULL;
}

static void test_rescan_under_readers(void **state)
{
	char root[] = "/tmp/libion-hotplug-XXXXXX", path[256];
	int rounds = watch_slowdown() > 1 ? 100 : 1000;
	atomic_int stop = 0;
	struct reader readers[3];
	pthread_t threads[3];
	struct fd_table fds;
	struct ion_ctx *ctx;

	(void)state;
	fd_table_read(&fds);
	make_root(root);
	make_path(root, "/dev/dma_heap/system", path, sizeof(path));
	assert_int_equal(ion_ctx_new(root, &ctx), 0);
	assert_int_equal(ion_ctx_set_heaps_path(ctx, ""), 0);
	/* Discovered before the node comes: else a reader might see it first. */
	assert_int_equal(ion_ctx_get_heap_count(ctx), 1);
	for (int i = 0; i < 3; i++) {
		readers[i] = (struct reader){ ctx, &stop, 0 };
		assert_int_equal(pthread_create(&threads[i], NULL, read_while_rescanned, &readers[i]), 0);
	}
	for (int i = 0; i < rounds; i++) {
		assert_int_equal(symlink("/dev/null", path), 0);
		assert_int_equal(ion_ctx_rescan(ctx), 1);
		assert_int_equal(unlink(path), 0);
		assert_int_equal(ion_ctx_rescan(ctx), 1);
	}
	atomic_store(&stop, 1);
	for (int i = 0; i < 3; i++) {
		pthread_join(threads[i], NULL);
		assert_true(readers[i].calls > 0);
	}
	ion_ctx_unref(ctx);
	test_remove_tree(root);
	fd_table_assert_same(&fds);
}

/*
 * A forked child shares its parent's inotify queue: a rescan in the
 * child must not take the event the parent has yet to see.  The child
 * gets a monitor of its own.
 */
static void test_fork_leaves_parent_events(void **state)
{
	char root[] = "/tmp/libion-hotplug-XXXXXX", path[256];
	struct fd_table fds;
	struct ion_ctx *ctx;
	int fd, status;
	pid_t pid;

	(void)state;
	fd_table_read(&fds);
	make_root(root);
	assert_int_equal(ion_ctx_new(root, &ctx), 0);
	assert_int_equal(ion_ctx_set_heaps_path(ctx, ""), 0);
	fd = ion_ctx_get_monitor_fd(ctx);
	assert_true(fd >= 0);
	make_path(root, "/dev/dma_heap/system", path, sizeof(path));
	assert_int_equal(symlink("/dev/null", path), 0);
	assert_true(readable(fd, 2000));
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		int own;

		/* No event of its own here: the parent's queue would see it. */
		if (ion_ctx_rescan(ctx) != 1)
			_exit(2);
		own = ion_ctx_get_monitor_fd(ctx);
		if (own < 0 || !fd_is_cloexec(own) || readable(own, 0))
			_exit(3);
		_exit(0);
	}
	assert_int_equal(waitpid(pid, &status, 0), pid);
	assert_true(WIFEXITED(status));
	assert_int_equal(WEXITSTATUS(status), 0);
	/* The parent's event is still there for it. */
	assert_true(readable(fd, 0));
	assert_int_equal(ion_ctx_rescan(ctx), 1);
	assert_int_equal(ion_ctx_get_heap_count(ctx), 2);
	ion_ctx_unref(ctx);
	test_remove_tree(root);
	fd_table_assert_same(&fds);
}

static int count_v4l2(struct ion_ctx *ctx)
{
	int n = ion_ctx_get_device_count(ctx), v = 0;

	for (int i = 0; i < n; i++) {
		struct ion_device *d;

		if (ion_ctx_get_device_at(ctx, (unsigned int)i, &d) < 0)
			continue;
		v += ion_device_get_subsystem(d) && strcmp(ion_device_get_subsystem(d), "video4linux") == 0;
		ion_device_unref(d);
	}
	return v;
}

/*
 * The VM: vivid's platform device unbound and bound again.  Its video
 * nodes go and come back; a running context sees both, and a device got
 * before the unbind stays valid.
 */
static void test_camera_unbound_and_bound(void **state)
{
	const char *unbind = "/sys/bus/platform/drivers/vivid/unbind";
	const char *bind = "/sys/bus/platform/drivers/vivid/bind";
	struct ion_device *video0;
	struct fd_table fds;
	struct ion_ctx *ctx;
	int fd, before;

	(void)state;
	if (!getenv("LIBION_IN_VM"))
		skip();
	/* Every VM boots vivid: without its unbind this test would prove
	 * nothing while it looked passed. */
	if (access(unbind, W_OK) < 0)
		fail_msg("%s: %s: the VM has no vivid to unbind", unbind, strerror(errno));
	fd_table_read(&fds);
	assert_int_equal(ion_ctx_new(NULL, &ctx), 0);
	before = count_v4l2(ctx);
	assert_true(before >= 1);
	assert_int_equal(ion_ctx_get_device(ctx, "/dev/video0", &video0), 0);
	fd = ion_ctx_get_monitor_fd(ctx);
	assert_true(fd >= 0);

	write_file(unbind, "vivid.0");
	assert_true(readable(fd, 5000));
	/* devtmpfs removes the nodes one by one: rescan until it settles. */
	assert_int_equal(ion_ctx_rescan(ctx), 1);
	while (readable(fd, 200))
		ion_ctx_rescan(ctx);
	assert_int_equal(count_v4l2(ctx), 0);
	assert_string_equal(ion_device_get_name(video0), "video0");

	write_file(bind, "vivid.0");
	assert_true(readable(fd, 5000));
	assert_int_equal(ion_ctx_rescan(ctx), 1);
	while (readable(fd, 200))
		ion_ctx_rescan(ctx);
	assert_int_equal(count_v4l2(ctx), before);

	ion_device_unref(video0);
	ion_ctx_unref(ctx);
	fd_table_assert_same(&fds);
}

int main(void)
{
	static const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_heap_comes_and_goes),
		cmocka_unit_test(test_plug_unplug_is_flat),
		cmocka_unit_test(test_rescan_under_readers),
		cmocka_unit_test(test_fork_leaves_parent_events),
		cmocka_unit_test(test_camera_unbound_and_bound),
	};

	return cmocka_run_group_tests_name("hotplug", tests, NULL, NULL);
}
