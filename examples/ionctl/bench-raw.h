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
	const char *name;	/* the call sequence, for the table */
	int dev_fd;
	uint32_t ion_heap_id;
	/* Allocates len bytes and closes the buffer again; 0 or -errno. */
	int (*alloc_close)(struct raw_alloc *raw, size_t len);
};

/*
 * Sets up raw call number variant for a heap of libion's: 0 is the plain
 * kernel call; 1, where it differs, the same syscalls libion makes (the
 * memfd heap also seals); for memfd, 2 adds the RLIMIT_FSIZE check the
 * context API makes and 3 also Android's fstat() of the client, so that
 * the library's own code is what is left.  -ENOTSUP when there is no such
 * call.
 */
int raw_alloc_init(struct raw_alloc *raw, const struct ion_heap *heap,
		   unsigned int variant);
/* ION_IOC_ALLOC on the kernel's ION heap of this name, which libion may
 * leave out (its memory served by a DMA-BUF heap): its kernel pool. */
int raw_alloc_init_ion(const char *heap_name, struct raw_alloc *raw);
void raw_alloc_fini(struct raw_alloc *raw);

#endif
