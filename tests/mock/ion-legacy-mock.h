/* SPDX-License-Identifier: MIT */
/*
 * A pre-4.12 ("legacy", handle-based) ION kernel for tests: no kernel that
 * can be built here has that ABI.  Linked into a test executable, it
 * interposes ioctl(): calls on any fd open on the configured file (a
 * regular file standing for <sysroot>/dev/ion) reach the mock, all others
 * the real ioctl.  Like the kernel it answers:
 *
 *   ALLOC (64- and 32-bit layouts)  a handle; EINVAL for len 0, ENODEV when
 *                                   no heap's id is in the mask
 *   FREE                            EINVAL for an unknown handle (also 0)
 *   SHARE, MAP                      a new fd on the buffer (O_CLOEXEC)
 *   IMPORT                          the handle of a buffer fd (the same
 *                                   handle, one more reference, when the
 *                                   buffer has one); EINVAL for other fds
 *   SYNC                            EINVAL for an fd that is no buffer
 *   HEAP_QUERY                      ENOTTY, unless enabled (the 4.10, 4.11
 *                                   and Android 4.9 kernels had it)
 *   anything else                   ENOTTY
 *
 * Buffers are memfds of the page-rounded length.  One client (the kernel
 * has one per open file): handles are process-wide here.
 */
#ifndef LIBION_TESTS_ION_LEGACY_MOCK_H
#define LIBION_TESTS_ION_LEGACY_MOCK_H

#include <stdbool.h>
#include <stdint.h>

struct ion_mock_heap {
	unsigned int id;	/* bit in heap_id_mask, 0..31 */
	unsigned int type;	/* enum ion_heap_type */
	const char *name;	/* for HEAP_QUERY */
};

struct ion_mock_alloc {
	unsigned int user_bits;	/* 64 or 32: the layout the caller used */
	uint64_t len;
	uint32_t heap_id_mask;
	uint32_t flags;
};

/*
 * Serves the file at path (it must exist) with these heaps (copied), after
 * dropping all state: handles, counters, faults, heap query.  0 or -errno.
 */
int ion_mock_setup(const char *path, const struct ion_mock_heap *heaps,
		   unsigned int n_heaps);
/* Drops handles (closing the mock's own buffer fds) and stops serving. */
void ion_mock_teardown(void);

void ion_mock_enable_heap_query(bool enable);
/* The next call of request fails with error (positive errno), doing nothing. */
void ion_mock_fail_once(unsigned long request, int error);

unsigned int ion_mock_live_handles(void);
/* Calls of request so far, failed ones included. */
unsigned int ion_mock_calls(unsigned long request);
/* FREE calls on a handle that did not exist: the ABI probe's signature. */
unsigned int ion_mock_invalid_frees(void);
/* The last ALLOC call, successful or not. */
struct ion_mock_alloc ion_mock_last_alloc(void);

#endif
