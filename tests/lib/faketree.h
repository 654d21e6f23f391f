/* SPDX-License-Identifier: MIT */
/*
 * Fake machines for the tests: the parts of /sys, /proc and /dev that
 * libion reads, described in a text file (tests/boards/<board>.tree) and
 * built into a directory that then serves as a context's sysroot.
 *
 * The format, one entry a line:
 *
 *   # comment           a line whose first non-blank character is '#';
 *                       blank lines are ignored too
 *   dir PATH            a directory
 *   file PATH [TEXT]    a regular file holding TEXT, the rest of the line
 *                       after one blank, with these escapes: \n newline,
 *                       \t tab, \0 NUL, \\ backslash, \xHH any byte.
 *                       Nothing is added: a sysfs attribute ends in a
 *                       newline, so write its \n; a device-tree string
 *                       list is NUL-separated and NUL-terminated
 *                       ("raspberrypi,4-model-b\0brcm,bcm2711\0")
 *   link PATH TARGET    a symbolic link.  An absolute TARGET names a path
 *                       of the tree and is written relative to PATH's
 *                       folder (as sysfs writes its links), so that the
 *                       tree resolves inside its root wherever it is
 *                       built; it must exist once the whole file is
 *                       built.  A relative TARGET is written as given.
 *   null PATH           a symbolic link to the host's /dev/null: a
 *                       character device (1:3) that any process can open,
 *                       standing in for a device node such as a DMA-BUF
 *                       heap.  Every such node shares 1:3, so one
 *                       /sys/dev/char/1:3 entry speaks for all of them.
 *   dev PATH HOSTNODE   a symbolic link to another of the host's
 *                       character devices (/dev/zero is 1:5), for a
 *                       node that sysfs must describe apart from the
 *                       /dev/null ones: /dev/udmabuf, which the library
 *                       accepts only as the misc device "udmabuf".
 *
 * PATH is absolute within the tree ("/sys/devices/platform/gpu"), without
 * blanks, empty, "." or ".." components; missing parent folders are made.
 * Naming one path twice is an error (a copy-paste slip in a tree file),
 * except for dir, which may name a folder that exists.
 */
#ifndef LIBION_FAKETREE_H
#define LIBION_FAKETREE_H

#include <stddef.h>

/*
 * Builds the tree that the file at path describes under root, an existing
 * directory.  0, or a negative errno with "FILE:LINE: what went wrong" in
 * err (err_size bytes, may be 0).  On failure the partial tree is left
 * for the caller to remove (test_remove_tree()).
 */
int faketree_build(const char *path, const char *root, char *err, size_t err_size);

#endif
