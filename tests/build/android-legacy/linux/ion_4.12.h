/* SPDX-License-Identifier: MIT */
/* Stands in for AOSP's <linux/ion_4.12.h>: the 4.12 query beside the
 * handle ABI's header. */
#ifndef _UAPI_LINUX_ION_NEW_H
#define _UAPI_LINUX_ION_NEW_H
#include <linux/ioctl.h>
#include <linux/types.h>
#define MAX_HEAP_NAME 32
struct ion_heap_data {
	char name[MAX_HEAP_NAME];
	__u32 type;
	__u32 heap_id;
	__u32 reserved0;
	__u32 reserved1;
	__u32 reserved2;
};
#endif
