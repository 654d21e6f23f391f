/* SPDX-License-Identifier: MIT */
/*
 * The raw kernel call of each backend, for ionctl bench to time beside
 * libion: what a program would write with no library at all.
 */
#ifndef IONCTL_BENCH_RAW_H
#define IONCTL_BENCH_RAW_H

#include <stddef.h>
#include <stdint.h>

#include <ion/ion.h>

struct raw_alloc {
	int dev_fd;
	uint32_t ion_heap_id;
	/* Allocates len bytes and closes the buffer again; 0 or -errno. */
	int (*alloc_close)(struct raw_alloc *raw, size_t len);
};

/* Sets up the raw call for a heap of libion's; -ENOTSUP when there is none. */
int raw_alloc_init(struct raw_alloc *raw, const struct ion_heap *heap);
void raw_alloc_fini(struct raw_alloc *raw);

#endif
