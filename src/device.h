/* SPDX-License-Identifier: MIT */
/*
 * Devices: immutable descriptions of what a device needs of a buffer's
 * memory, read from sysfs (and the udev database) once, when the device
 * object is made, never on the allocation path.
 */
#ifndef LIBION_DEVICE_H
#define LIBION_DEVICE_H

#include <stdatomic.h>
#include <stdbool.h>
#include <sys/types.h>

#include "attrs.h"
#include "context.h"
#include "heaps-conf.h"

struct ion_registry;

struct ion_device {
	atomic_int refcount;	/* users' references, plus one if the registry lists it */
	struct ion_ctx *ctx;	/* each user reference also holds one on it */
	/* The registry it was read against, whose heaps.d parse its sources
	 * point into: each user reference holds one on it too. */
	struct ion_registry *reg;
	char *name;		/* "card1", "video0", or a heaps.d section name */
	char *devnode;		/* "/dev/dri/card1", or NULL */
	char *syspath;		/* the class device, without the sysroot, or NULL */
	char *parent;		/* the bus device that does the DMA, or NULL */
	char *subsystem;	/* the class: "drm", "video4linux" */
	char *bus;		/* the parent's: "platform", "pci" */
	char *driver;		/* the parent's driver */
	char *label;		/* the class device's "name" attribute */
	char *drm_driver;
	char *v4l2_card;
	char **of_compatible;
	char **udev_properties;	/* "KEY=VALUE" */
	char **sections;	/* the heaps.d [Device] sections that applied */
	dev_t devnum;
	bool has_devnum;
	struct ion_constraint constraint;
	struct ion_attrs facts;	/* what discovery read and derived, with where */
	/* The constraint as key, value, source: worded when first asked, so
	 * that reading a hundred devices at discovery stays cheap; published
	 * once, without a lock, in storage of its own (the device is const
	 * to its readers). */
	_Atomic(struct ion_attrs *) *view;
	char **strings;		/* sources the constraint points into */
};

/*
 * Reads the device whose class directory is syspath (without the
 * sysroot): 0 with *ret (refcount 1, no context reference), or a
 * negative errno.  The registry must be complete but for its devices.
 */
int ion_device_read(struct ion_ctx *ctx, struct ion_registry *reg,
		    const char *syspath, struct ion_device **ret);
/* A device that only its heaps.d sections describe; -ENOENT without one. */
int ion_device_from_name(struct ion_ctx *ctx, struct ion_registry *reg,
			 const char *name, struct ion_device **ret);
/* Every device of the classes libion knows (drm cards, video4linux,
 * accel) into reg->devices; 0 or a negative errno. */
int ion_devices_enumerate(struct ion_ctx *ctx, struct ion_registry *reg);
/* A device called name with nothing read yet (refcount 1); NULL on ENOMEM. */
struct ion_device *ion_device_new(const char *name);
/* The real path of sysroot + path, without the sysroot: malloc'ed, or
 * NULL with *ret_error (-ENODEV: there is none; a transient errno). */
char *ion_device_canonical(struct ion_ctx *ctx, const struct ion_registry *reg,
			   const char *path, int *ret_error);
/* Fills view with the device's constraint, key by key, with sources. */
int ion_device_build_view(const struct ion_device *dev, struct ion_attrs *view);
/* Drops the registry's reference. */
void ion_device_release(struct ion_device *dev);

#endif
