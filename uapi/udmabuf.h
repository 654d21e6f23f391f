/* SPDX-License-Identifier: MIT */
/* The kernel's <linux/udmabuf.h> (Linux 4.20+), as the library uses it. */
#ifndef LIBION_UAPI_UDMABUF_H
#define LIBION_UAPI_UDMABUF_H

#include <linux/ioctl.h>
#include <linux/types.h>

#define UDMABUF_FLAGS_CLOEXEC 0x01

struct udmabuf_create {
	__u32 memfd;
	__u32 flags;
	__u64 offset;
	__u64 size;
};

#define UDMABUF_CREATE _IOW('u', 0x42, struct udmabuf_create)

#endif
