/* SPDX-License-Identifier: MIT */
/* Reading sysfs, procfs and device-tree files without ever blocking. */
#ifndef LIBION_SYSFS_H
#define LIBION_SYSFS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* The most an attribute read takes; longer files are -EFBIG. */
#define ION_SYSFS_MAX 65536

/*
 * Reads a whole small file: regular files only (a FIFO or device in its
 * place is -EINVAL, and never blocks), at most ION_SYSFS_MAX bytes.  The
 * text is NUL-terminated with one trailing newline stripped; *ret_len
 * (may be NULL) is its length before stripping.  0, or a negative errno
 * (-ENOENT when there is no such file).
 */
int ion_sysfs_read(const char *path, char **ret, size_t *ret_len);
/* The same for dir/name. */
int ion_sysfs_read_at(const char *dir, const char *name, char **ret);
/* A decimal attribute (dma_mask_bits). */
int ion_sysfs_read_u64(const char *dir, const char *name, uint64_t *ret);
/* The last component of a symlink's target ("vivid" for a driver link);
 * -ENOENT when there is no link, -ENOMEM. */
int ion_sysfs_link_name(const char *dir, const char *name, char **ret);
/* Splits a NUL-separated list (device-tree compatible) into a
 * NULL-terminated array; NULL on ENOMEM. */
char **ion_split_nul_list(const char *text, size_t len);
void ion_strv_free(char **strv);
/* Whether dir/name exists (a file, a directory or a link). */
bool ion_sysfs_exists(const char *dir, const char *name);

#endif
