/* SPDX-License-Identifier: MIT */
/* The part of the kernel's <linux/videodev2.h> the library uses: the
 * device's card name, to match board files against. */
#ifndef LIBION_UAPI_VIDEODEV2_H
#define LIBION_UAPI_VIDEODEV2_H

#include <linux/ioctl.h>
#include <linux/types.h>

struct v4l2_capability {
	__u8 driver[16];
	__u8 card[32];
	__u8 bus_info[32];
	__u32 version;
	__u32 capabilities;
	__u32 device_caps;
	__u32 reserved[3];
};

#define VIDIOC_QUERYCAP _IOR('V', 0, struct v4l2_capability)

#endif
