// SPDX-License-Identifier: MIT
/*
 * Heaps and devices that come and go: heaps become modules, TEE heaps
 * appear when their driver loads, cameras are unbound and bound again.
 * The context offers one fd to poll, readable when the set may have
 * changed, and a rescan that builds a new registry beside the old one,
 * which stays alive for whatever still points into it.
 *
 * The fd is an epoll set of an inotify watch on /dev, /dev/dma_heap and
 * /dev/dri (devtmpfs makes and removes the nodes, udev sets their modes:
 * both show) and, where libion has libudev, the root is the real one and
 * udevd runs, a udev monitor of the subsystems libion reads.
 */
#include <stdio.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/inotify.h>
#include <unistd.h>

#include "config.h"

#if HAVE_LIBUDEV
#include <libudev.h>
#endif

#include <ion/ion.h>

#include "context.h"
#include "monitor.h"
#include "registry.h"

#define WATCH_MASK (IN_CREATE | IN_DELETE | IN_MOVED_FROM | IN_MOVED_TO | IN_ATTRIB | \
		    IN_DELETE_SELF)

struct ion_monitor {
	/* The fork generation it was made in: a forked child shares the
	 * parent's inotify queue and udev socket, and reading them would
	 * take the parent's events.  The child makes its own instead. */
	unsigned int generation;
	int epoll_fd;
	int inotify_fd;
#if HAVE_LIBUDEV
	struct udev *udev;
	struct udev_monitor *udev_monitor;
#endif
};

/* (Re)adds the watches: a folder made since the last time gets one too. */
static int watch(struct ion_ctx *ctx, struct ion_monitor *m)
{
	static const char *const dirs[] = { "/dev", "/dev/dma_heap", "/dev/dri" };

	for (size_t i = 0; i < sizeof(dirs) / sizeof(dirs[0]); i++) {
		_cleanup_free_ char *path = ion_ctx_path(ctx, dirs[i]);

		if (!path)
			return -ENOMEM;
		if (inotify_add_watch(m->inotify_fd, path, WATCH_MASK | IN_ONLYDIR) < 0 &&
		    (errno == ENOMEM || errno == ENOSPC))
			return -errno;
	}
	return 0;
}

#if HAVE_LIBUDEV
static int add_udev(struct ion_ctx *ctx, struct ion_monitor *m)
{
	static const char *const subsystems[] = { "dma_heap", "drm", "video4linux", "misc",
						  "accel" };
	struct epoll_event ev = { .events = EPOLLIN };

	if (ion_ctx_sysroot(ctx)[0] || access("/run/udev/control", F_OK) < 0)
		return 0; /* no udev to ask: inotify alone */
	m->udev = udev_new();
	if (!m->udev)
		return errno == ENOMEM ? -ENOMEM : 0;
	m->udev_monitor = udev_monitor_new_from_netlink(m->udev, "udev");
	if (!m->udev_monitor)
		return 0;
	for (size_t i = 0; i < sizeof(subsystems) / sizeof(subsystems[0]); i++)
		udev_monitor_filter_add_match_subsystem_devtype(m->udev_monitor, subsystems[i],
								NULL);
	if (udev_monitor_enable_receiving(m->udev_monitor) < 0 ||
	    epoll_ctl(m->epoll_fd, EPOLL_CTL_ADD, udev_monitor_get_fd(m->udev_monitor), &ev) < 0) {
		m->udev_monitor = udev_monitor_unref(m->udev_monitor);
		return 0;
	}
	return 0;
}

static void drain_udev(struct ion_monitor *m)
{
	struct udev_device *d;

	while (m->udev_monitor && (d = udev_monitor_receive_device(m->udev_monitor)))
		udev_device_unref(d);
}

static void free_udev(struct ion_monitor *m)
{
	udev_monitor_unref(m->udev_monitor);
	udev_unref(m->udev);
}
#else
static int add_udev(struct ion_ctx *ctx, struct ion_monitor *m)
{
	(void)ctx;
	(void)m;
	return 0;
}

static void drain_udev(struct ion_monitor *m)
{
	(void)m;
}

static void free_udev(struct ion_monitor *m)
{
	(void)m;
}
#endif

static atomic_uint generation;

void ion_monitor_fork_child(void)
{
	atomic_fetch_add_explicit(&generation, 1, memory_order_relaxed);
}

void ion_monitor_free(struct ion_monitor *m)
{
	if (!m)
		return;
	free_udev(m);
	closep(&m->inotify_fd);
	closep(&m->epoll_fd);
	free(m);
}

static int monitor_new(struct ion_ctx *ctx, struct ion_monitor **ret)
{
	struct ion_monitor *m = calloc(1, sizeof(*m));
	struct epoll_event ev = { .events = EPOLLIN };
	int r;

	if (!m)
		return -ENOMEM;
	m->generation = atomic_load_explicit(&generation, memory_order_relaxed);
	m->inotify_fd = -1;
	m->epoll_fd = epoll_create1(EPOLL_CLOEXEC);
	if (m->epoll_fd < 0) {
		r = neg_errno();
		goto fail;
	}
	m->inotify_fd = inotify_init1(IN_NONBLOCK | IN_CLOEXEC);
	if (m->inotify_fd < 0 || epoll_ctl(m->epoll_fd, EPOLL_CTL_ADD, m->inotify_fd, &ev) < 0) {
		r = neg_errno();
		goto fail;
	}
	r = watch(ctx, m);
	if (r == 0)
		r = add_udev(ctx, m);
	if (r < 0)
		goto fail;
	*ret = m;
	return 0;
fail:
	ion_monitor_free(m);
	return r;
}

/* With the context's lock held: in a forked child, the parent's monitor
 * goes (the child's copies of its fds closed, the parent's untouched). */
static void forget_inherited(struct ion_ctx *ctx)
{
	struct ion_monitor **m = ion_ctx_monitor_slot(ctx);

	if (*m && (*m)->generation != atomic_load_explicit(&generation, memory_order_relaxed)) {
		ion_monitor_free(*m);
		*m = NULL;
	}
}

ION_EXPORT int ion_ctx_get_monitor_fd(struct ion_ctx *ctx)
{
	struct ion_monitor **m;
	int r = 0, state;

	if (!ctx)
		return -EINVAL;
	m = ion_ctx_monitor_slot(ctx);
	ion_ctx_lock(ctx, &state);
	forget_inherited(ctx);
	if (!*m)
		r = monitor_new(ctx, m);
	if (r == 0)
		r = (*m)->epoll_fd;
	ion_ctx_unlock(ctx, state);
	return r;
}

/* Called with the context's lock held: empties the monitor. */
static void drain(struct ion_ctx *ctx)
{
	char buf[4096] __attribute__((aligned(__alignof__(struct inotify_event))));
	struct ion_monitor *m;

	forget_inherited(ctx);
	m = *ion_ctx_monitor_slot(ctx);
	if (!m)
		return;
	while (read(m->inotify_fd, buf, sizeof(buf)) > 0)
		;
	drain_udev(m);
	/* Folders that appeared meanwhile get their watches. */
	if (watch(ctx, m) < 0)
		ion_dbg(ctx, "monitor: watches not renewed: %m");
}

ION_EXPORT int ion_ctx_rescan(struct ion_ctx *ctx)
{
	struct ion_registry *old = NULL;
	int r, state;

	if (!ctx)
		return -EINVAL;
	ion_ctx_lock(ctx, &state);
	drain(ctx);
	r = ion_registry_rediscover(ctx, &old);
	ion_ctx_unlock(ctx, state);
	/* Outside the lock: the old registry's end may wait for the refill
	 * thread to let go of its heap pools. */
	if (r == 1)
		ion_registry_retire(old);
	return r;
}
