// SPDX-License-Identifier: MIT
/*
 * memfd: the CPU-only heap that works on every Linux machine.  Buffers are
 * sealed against shrinking and growing, so a receiver that maps one can
 * trust its size, and against further seals, so that no receiver can take
 * write access away; they can be passed over sockets like any fd.  They
 * are not dma-bufs: no device can import them.
 */
#include <fcntl.h>
#include <sys/mman.h>

#include <ion/ion.h>

#include "backend.h"

static int memfd_probe(struct ion_ctx *ctx, struct ion_registry *reg)
{
	struct ion_heap *heap;
	int fd;

	(void)ctx;
	heap = ion_registry_add(reg, &ion_backend_memfd, "memfd", sizeof(*heap));
	if (!heap)
		return -ENOMEM;
	heap->type = ION_HEAP_TYPE_SYSTEM;
	heap->props = ION_HEAP_PROP_CACHED | ION_HEAP_PROP_CPU_ONLY;
	fd = memfd_create("libion-probe", MFD_CLOEXEC | MFD_ALLOW_SEALING);
	if (fd < 0 && ion_errno_transient(neg_errno()))
		return neg_errno(); /* a full fd table is no lack of memfd */
	if (fd < 0)
		ion_heap_set_unavailable(heap, neg_errno(), "memfd_create: %m");
	else
		close(fd);
	return 0;
}

static int memfd_alloc(const struct ion_heap *heap, size_t len,
		       unsigned int flags, int *ret_fd)
{
	(void)heap;
	(void)flags;
	/* F_SEAL_SEAL: a receiver cannot add F_SEAL_WRITE and take write
	 * access away from the producer. */
	return ion_memfd_create_sealed("libion", len,
				       F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_SEAL, ret_fd);
}

const struct ion_backend ion_backend_memfd = {
	.name = "memfd",
	.probe = memfd_probe,
	.alloc = memfd_alloc,
};
