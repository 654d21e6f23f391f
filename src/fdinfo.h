/* SPDX-License-Identifier: MIT */
/*
 * The kernel's word on whether a buffer may be handed out again: the
 * reference count of its file in /proc/self/fdinfo (Linux 5.3 and
 * later), which counts fds in every process, mappings and importers.
 * What a pool is handed as its reuse check (pool.h's ion_pool_ops).
 */
#ifndef LIBION_FDINFO_H
#define LIBION_FDINFO_H

#include <stdatomic.h>
#include <sys/types.h>

/*
 * How many references the kernel counts on fd's file, or -ENOENT when it
 * does not say (a memfd; before Linux 5.3).  *ret_ino, where given, is
 * the inode the same read saw (fdinfo's "ino", Linux 5.14 and later), or
 * 0.  A count of 1 is the pool's anchor alone: nothing else holds it.
 */
int ion_fdinfo_refs(int fd, ino_t *ret_ino);

/* What ion_fdinfo_trackable() found. */
enum ion_fdinfo_track {
	ION_FDINFO_UNTRACKED,	/* no count: only the caller can vouch */
	ION_FDINFO_TRACKED,	/* the count says when nothing else holds it */
	ION_FDINFO_MAPS_UNSEEN,	/* untracked, just found out: the heap's
				 * kernel counts no mapping of its buffers */
};

/*
 * Whether the kernel tells when nothing else holds fd's buffer: a dma-buf
 * whose count also sees a mapping.  *maps_known (NULL: none) caches per
 * heap what a mapping did to the count: 0 not known yet, 1 counted, -1
 * not (5.10's vgem moves a mapping onto its own shmem file).
 */
enum ion_fdinfo_track ion_fdinfo_trackable(int fd, atomic_int *maps_known);

#endif
