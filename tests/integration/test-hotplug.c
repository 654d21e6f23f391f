// SPDX-License-Identifier: MIT
/*
 * Heaps and devices that come and go, seen by a running context: a fake
 * root where a DMA-BUF heap node appears and goes (host and VM), and in
 * the VM a real camera unbound from its driver through sysfs and bound
 * again (vivid), which the kernel's devtmpfs reflects in /dev.
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "testlib.h"

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

/*
 * A fake root: /dev/dma_heap/system arrives after the context first
 * looked, then goes again.  Each change polls the monitor readable, a
 * rescan answers 1 and the heap list follows, while a heap got before
 * stays valid; a rescan without a change answers 0.
 */
static void test_heap_comes_and_goes(void **state)
{
	char root[] = "/tmp/libion-hotplug-XXXXXX", path[256];
	const struct ion_heap *memfd, *system = NULL;
	struct fd_table fds;
	struct ion_ctx *ctx;
	int fd;

	(void)state;
	fd_table_read(&fds);
	assert_non_null(mkdtemp(root));
	make_path(root, "/dev", path, sizeof(path));
	assert_int_equal(mkdir(path, 0755), 0);
	make_path(root, "/dev/dma_heap", path, sizeof(path));
	assert_int_equal(mkdir(path, 0755), 0);
	assert_int_equal(ion_ctx_new(root, &ctx), 0);
	assert_int_equal(ion_ctx_set_heaps_path(ctx, ""), 0);
	assert_int_equal(ion_ctx_get_heap_count(ctx), 1);
	assert_int_equal(ion_ctx_find_heap(ctx, "memfd", &memfd), 0);
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
	/* What was got before the rescan is still good. */
	assert_string_equal(ion_heap_get_name(memfd), "memfd");

	/* ... and goes. */
	assert_int_equal(unlink(path), 0);
	assert_true(readable(fd, 2000));
	assert_int_equal(ion_ctx_rescan(ctx), 1);
	assert_int_equal(ion_ctx_get_heap_count(ctx), 1);
	assert_int_equal(ion_ctx_find_heap(ctx, "system", &system), -ENOENT);
	assert_string_equal(ion_heap_get_name(memfd), "memfd");
	assert_int_equal(ion_ctx_rescan(ctx), 0);

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
		cmocka_unit_test(test_camera_unbound_and_bound),
	};

	return cmocka_run_group_tests_name("hotplug", tests, NULL, NULL);
}
