/* SPDX-License-Identifier: MIT */
/* The part of the kernel's <drm/drm.h> the device reader uses, so that it
 * learns a DRM driver's name without libdrm. */
#ifndef LIBION_UAPI_DRM_H
#define LIBION_UAPI_DRM_H

#include <linux/ioctl.h>
#include <stddef.h>

struct drm_version {
	int version_major;
	int version_minor;
	int version_patchlevel;
	size_t name_len;
	char *name;
	size_t date_len;
	char *date;
	size_t desc_len;
	char *desc;
};

#define DRM_IOCTL_VERSION _IOWR('d', 0x00, struct drm_version)

#endif
