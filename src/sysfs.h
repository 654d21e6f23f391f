/* SPDX-License-Identifier: MIT */
/*
 * Reading sysfs, procfs and device-tree files without ever blocking.
 * The _at calls take a directory fd (ion_sysfs_open_dir(), or AT_FDCWD
 * with an absolute path): a device's attributes are then found without
 * walking its whole path again for each.
 */
#ifndef LIBION_SYSFS_H
#define LIBION_SYSFS_H

#include <fcntl.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "util.h"

/* The most an attribute read takes; longer files are -EFBIG. */
#define ION_SYSFS_MAX 65536

/* An O_PATH directory fd for the _at calls; the fd or a negative errno. */
int ion_sysfs_open_dir(int dirfd, const char *path);
/*
 * Reads a whole small file: regular files only (a FIFO or device in its
 * place is -EINVAL, and never blocks), at most ION_SYSFS_MAX bytes.  The
 * text is NUL-terminated with one trailing newline stripped; *ret_len
 * (may be NULL) is its length before stripping.  0, or a negative errno
 * (-ENOENT when there is no such file).
 */
int ion_sysfs_read_at(int dirfd, const char *name, char **ret, size_t *ret_len);
static inline int ion_sysfs_read(const char *path, char **ret, size_t *ret_len)
{
	return ion_sysfs_read_at(AT_FDCWD, path, ret, ret_len);
}
/* A decimal attribute (dma_mask_bits). */
int ion_sysfs_read_u64_at(int dirfd, const char *name, uint64_t *ret);
/* The last component of a symlink's target ("vivid" for a driver link);
 * -ENOENT when there is no link, -ENOMEM. */
int ion_sysfs_link_name_at(int dirfd, const char *name, char **ret);
/* Whether name exists under dirfd (a file, a directory or a link). */
bool ion_sysfs_exists_at(int dirfd, const char *name);
/*
 * Opens a device node: never blocking (O_NONBLOCK: a FIFO in its place
 * cannot hang us), only a character device, and, where subsystem is
 * given, only one that sysfs (under sysroot, "" for "/") places in that
 * class, and where name is given too, only the device of that name:
 * /sys/dev/char/M:m names the device, like libgpiod's chip check.  With
 * no sysfs to ask (a chroot), a character device is trusted.
 * Returns the fd (flags | O_CLOEXEC | O_NONBLOCK | O_NOCTTY) or a negative
 * errno: open()'s, or -ENOTTY with *ret_why ("is not a character
 * device", "is not a dma_heap device", ...) for the wrong kind of node.
 */
int ion_open_device_node(const char *sysroot, const char *path, int flags,
			 const char *subsystem, const char *name,
			 const char **ret_why);
/*
 * For a node open() refused with EACCES or EPERM: one line saying whose
 * it is, its mode, and what is really wrong: libion's udev rule not
 * applied (root's node, or no group access), a group (video or a
 * vendor's) the user is not in, one the user joined but this session has
 * not yet, or, this process being in the group, something else (an ACL,
 * a security module).  malloc'ed, or NULL.
 */
char *ion_access_hint(const char *path);
/* Splits a NUL-separated list (device-tree compatible) into a
 * NULL-terminated array; NULL on ENOMEM. */
char **ion_split_nul_list(const char *text, size_t len);

#endif
