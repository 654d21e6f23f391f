// SPDX-License-Identifier: MIT
/* The parent's program: both of libion's APIs, through the subproject. */
#include <stdio.h>
#include <unistd.h>

#include <ion/ion.h>

#if !LIBION_CHECK_VERSION(1, 0, 0)
#error "libion 1.0.0 or later is needed"
#endif

int main(void)
{
	struct ion_ctx *ctx;
	const struct ion_heap *heap = NULL;
	int client, fd = -1, r;

	r = ion_ctx_new(NULL, &ctx);
	if (r < 0)
		return 1;
	r = ion_ctx_alloc_mask(ctx, ION_HEAP_SYSTEM_MASK, 4096, ION_FLAG_CACHED, &fd, &heap);
	if (r == 0) {
		printf("libion %d.%d.%d as a subproject: 4096 bytes from %s\n",
		       LIBION_VERSION_MAJOR, LIBION_VERSION_MINOR, LIBION_VERSION_MICRO,
		       ion_heap_get_name(heap));
		close(fd);
	}
	ion_ctx_unref(ctx);
	if (r < 0)
		return 1;
	client = ion_open();
	if (client < 0)
		return 1;
	r = ion_alloc_fd(client, 4096, 0, ION_HEAP_SYSTEM_MASK, 0, &fd);
	if (r == 0)
		close(fd);
	ion_close(client);
	return r == 0 ? 0 : 1;
}
