// SPDX-License-Identifier: MIT
/*
 * The devices a registry knows: the ones discovery enumerates (every DRM
 * card, V4L2 and accel node), and the public calls that find a device by
 * node, sysfs path or name, count them, and read what each device says
 * (device.c reads a device).
 */
#include <dirent.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>

#include <ion/ion.h>

#include "device.h"
#include "registry.h"
#include "sysfs.h"

/* ---- a device that heaps.d names ---- */

int ion_device_from_name(struct ion_ctx *ctx, struct ion_registry *reg,
			 const char *name, struct ion_device **ret)
{
	struct ion_device *dev;
	int r;

	if (!reg->conf)
		return -ENOENT;
	dev = ion_device_new(name);
	if (!dev)
		return -ENOMEM;
	dev->ctx = ctx;
	dev->reg = reg;
	r = ion_conf_apply_device_name(reg->conf, name, &dev->constraint.props);
	if (r >= 0) {
		dev->sections = calloc(2, sizeof(char *));
		if (!dev->sections || !(dev->sections[0] = strdup(name)))
			r = -ENOMEM;
	}
	if (r < 0) {
		ion_device_release(dev);
		return r;
	}
	*ret = dev;
	return 0;
}

/* ---- enumeration at discovery ---- */

static int is_card(const struct dirent *d)
{
	const char *n = d->d_name;

	if (strncmp(n, "card", 4) != 0 || !n[4])
		return 0;
	for (n += 4; *n; n++)
		if (*n < '0' || *n > '9')
			return 0; /* card1-Virtual-1: a connector */
	return 1;
}

static int is_entry(const struct dirent *d)
{
	return d->d_name[0] != '.';
}

static int add_device(struct ion_registry *reg, struct ion_device *dev)
{
	struct ion_device **grown = realloc(reg->devices, (reg->n_devices + 1) * sizeof(*grown));

	if (!grown)
		return -ENOMEM;
	reg->devices = grown;
	reg->devices[reg->n_devices++] = dev;
	return 0;
}

int ion_devices_enumerate(struct ion_ctx *ctx, struct ion_registry *reg)
{
	static const struct {
		const char *class;
		int (*filter)(const struct dirent *);
	} classes[] = {
		{ "drm", is_card },
		{ "video4linux", is_entry },
		{ "accel", is_entry },
	};
	int r = 0;

	for (size_t c = 0; c < sizeof(classes) / sizeof(classes[0]) && r == 0; c++) {
		_cleanup_free_ char *rel = NULL, *dir = NULL;
		struct dirent **names;
		int n;

		if (asprintf(&rel, "/sys/class/%s", classes[c].class) < 0)
			return -ENOMEM;
		dir = ion_ctx_path(ctx, rel);
		if (!dir)
			return -ENOMEM;
		n = scandir(dir, &names, classes[c].filter, versionsort);
		if (n < 0) {
			if (ion_errno_transient(-errno))
				return -errno;
			continue;
		}
		for (int i = 0; i < n; i++) {
			_cleanup_free_ char *path = NULL;
			struct ion_device *dev;

			if (r == 0 && asprintf(&path, "%s/%s", rel, names[i]->d_name) < 0) {
				path = NULL;
				r = -ENOMEM;
			}
			if (r == 0) {
				int k = ion_device_read(ctx, reg, path, &dev);

				if (k == 0 && (k = add_device(reg, dev)) < 0)
					ion_device_release(dev);
				/* A device not read for want of memory or fds is no
				 * device gone: discovery fails, and runs again. */
				if (ion_errno_transient(k))
					r = k;
				else if (k < 0)
					ion_dbg(ctx, "%s: not read: %s", path, strerror(-k));
			}
			free(names[i]);
		}
		free(names);
	}
	return r;
}

/* ---- the public calls ---- */

static struct ion_device *user_ref(struct ion_device *dev)
{
	atomic_fetch_add_explicit(&dev->refcount, 1, memory_order_relaxed);
	ion_ctx_ref(dev->ctx);
	ion_registry_ref(dev->reg);
	return dev;
}

ION_EXPORT struct ion_device *ion_device_ref(struct ion_device *dev)
{
	return dev ? user_ref(dev) : NULL;
}

ION_EXPORT struct ion_device *ion_device_unref(struct ion_device *dev)
{
	struct ion_registry *reg;
	struct ion_ctx *ctx;

	if (!dev)
		return NULL;
	/* The registry's own reference, if it lists the device, outlives
	 * this one: dropping the registry then drops the device. */
	ctx = dev->ctx;
	reg = dev->reg;
	ion_device_release(dev);
	ion_registry_unref(reg);
	ion_ctx_unref(ctx);
	return NULL;
}

static struct ion_device *find_listed(const struct ion_registry *reg,
				      bool (*same)(const struct ion_device *, const void *),
				      const void *key)
{
	for (unsigned int i = 0; i < reg->n_devices; i++)
		if (same(reg->devices[i], key))
			return reg->devices[i];
	return NULL;
}

static bool same_devnum(const struct ion_device *d, const void *key)
{
	return d->has_devnum && d->devnum == *(const dev_t *)key;
}

static bool same_devnode(const struct ion_device *d, const void *key)
{
	return d->devnode && strcmp(d->devnode, key) == 0;
}

static bool same_syspath(const struct ion_device *d, const void *key)
{
	return d->syspath && strcmp(d->syspath, key) == 0;
}

static bool same_name(const struct ion_device *d, const void *key)
{
	if (strcmp(d->name, key) == 0)
		return true;
	for (char **s = d->sections; s && *s; s++)
		if (strcmp(*s, key) == 0)
			return true;
	return false;
}

/* A device made for this call, not listed: the caller's reference
 * holds the context and the registry. */
static struct ion_device *fresh(struct ion_ctx *ctx, struct ion_device *dev)
{
	dev->ctx = ion_ctx_ref(ctx);
	ion_registry_ref(dev->reg);
	return dev;
}

/* A /dev node: its char device's sysfs entry. */
static int get_by_node(struct ion_ctx *ctx, struct ion_registry *reg,
		       const char *node, struct ion_device **ret)
{
	_cleanup_free_ char *path = ion_ctx_path(ctx, node);
	struct ion_device *dev;
	struct stat st;
	char link[64];
	int r;

	if (!path)
		return -ENOMEM;
	if (stat(path, &st) == 0 && S_ISCHR(st.st_mode)) {
		dev = find_listed(reg, same_devnum, &st.st_rdev);
		if (dev) {
			*ret = user_ref(dev);
			return 0;
		}
		snprintf(link, sizeof(link), "/sys/dev/char/%u:%u", major(st.st_rdev),
			 minor(st.st_rdev));
		r = ion_device_read(ctx, reg, link, &dev);
		if (r == 0)
			*ret = fresh(ctx, dev);
		return r;
	}
	/* No char device there (a sysroot, a container): the device sysfs
	 * says udev would name so. */
	dev = find_listed(reg, same_devnode, node);
	if (!dev)
		return -ENODEV;
	*ret = user_ref(dev);
	return 0;
}

ION_EXPORT int ion_ctx_get_device(struct ion_ctx *ctx, const char *spec,
				  struct ion_device **ret_device)
{
	_cleanup_registry_ struct ion_registry *reg = NULL;
	struct ion_device *dev = NULL;
	int r;

	if (!ctx || !spec || !*spec || !ret_device)
		return -EINVAL;
	r = ion_ctx_registry(ctx, &reg);
	if (r < 0)
		return r;
	if (strncmp(spec, "/dev/", 5) == 0) {
		r = get_by_node(ctx, reg, spec, &dev);
	} else if (spec[0] == '/') {
		_cleanup_free_ char *path = ion_device_canonical(ctx, reg, spec, &r);

		if (path && (dev = find_listed(reg, same_syspath, path)))
			dev = user_ref(dev);
		else if (path && (r = ion_device_read(ctx, reg, path, &dev)) == 0)
			dev = fresh(ctx, dev);
	} else {
		dev = find_listed(reg, same_name, spec);
		if (dev)
			dev = user_ref(dev);
		else if ((r = ion_device_from_name(ctx, reg, spec, &dev)) == 0)
			dev = fresh(ctx, dev);
		else if (r == -ENOENT)
			r = -ENODEV;
	}
	if (!dev) {
		ion_dbg(ctx, "no device %s: %s", spec, strerror(-r));
		return r;
	}
	*ret_device = dev;
	return 0;
}

ION_EXPORT int ion_ctx_get_device_count(struct ion_ctx *ctx)
{
	_cleanup_registry_ struct ion_registry *reg = NULL;
	int r;

	if (!ctx)
		return -EINVAL;
	r = ion_ctx_registry(ctx, &reg);
	return r < 0 ? r : (int)reg->n_devices;
}

ION_EXPORT int ion_ctx_get_device_at(struct ion_ctx *ctx, unsigned int index,
				     struct ion_device **ret_device)
{
	_cleanup_registry_ struct ion_registry *reg = NULL;
	int r;

	if (!ctx || !ret_device)
		return -EINVAL;
	r = ion_ctx_registry(ctx, &reg);
	if (r < 0)
		return r;
	if (index >= reg->n_devices)
		return -ENOENT;
	*ret_device = user_ref(reg->devices[index]);
	return 0;
}

ION_EXPORT const char *ion_device_get_name(const struct ion_device *dev)
{
	return dev ? dev->name : NULL;
}

ION_EXPORT const char *ion_device_get_devnode(const struct ion_device *dev)
{
	return dev ? dev->devnode : NULL;
}

ION_EXPORT const char *ion_device_get_syspath(const struct ion_device *dev)
{
	return dev ? dev->syspath : NULL;
}

ION_EXPORT const char *ion_device_get_subsystem(const struct ion_device *dev)
{
	return dev ? dev->subsystem : NULL;
}

ION_EXPORT const char *ion_device_get_driver(const struct ion_device *dev)
{
	return dev ? (dev->drm_driver ? dev->drm_driver : dev->driver) : NULL;
}

/* The constraint worded, on first use; NULL on ENOMEM (then again next
 * time).  Two threads may both word it: one result stays. */
static const struct ion_attrs *get_view(const struct ion_device *dev)
{
	struct ion_attrs *view = atomic_load_explicit(dev->view, memory_order_acquire);
	struct ion_attrs *expected = NULL;
	int r;

	if (view)
		return view;
	view = calloc(1, sizeof(*view));
	r = view ? ion_device_build_view(dev, view) : -ENOMEM;
	if (r < 0 || !atomic_compare_exchange_strong_explicit(dev->view, &expected, view,
							      memory_order_acq_rel,
							      memory_order_acquire)) {
		if (view)
			ion_attrs_clear(view);
		free(view);
		return r < 0 ? NULL : expected;
	}
	return view;
}

ION_EXPORT int ion_device_get_constraint_count(const struct ion_device *dev)
{
	const struct ion_attrs *view;

	if (!dev)
		return -EINVAL;
	view = get_view(dev);
	return view ? (int)view->n : -ENOMEM;
}

ION_EXPORT int ion_device_get_constraint(const struct ion_device *dev,
					 unsigned int index, const char **ret_key,
					 const char **ret_value,
					 const char **ret_source)
{
	const struct ion_attrs *view;

	if (!dev)
		return -EINVAL;
	view = get_view(dev);
	return view ? ion_attrs_get(view, index, ret_key, ret_value, ret_source) : -ENOMEM;
}

ION_EXPORT int ion_device_get_fact_count(const struct ion_device *dev)
{
	return dev ? (int)dev->facts.n : -EINVAL;
}

ION_EXPORT int ion_device_get_fact(const struct ion_device *dev, unsigned int index,
				   const char **ret_key, const char **ret_value,
				   const char **ret_source)
{
	return ion_attrs_get(dev ? &dev->facts : NULL, index, ret_key, ret_value, ret_source);
}
