// SPDX-License-Identifier: MIT
/*
 * <ion/ion.h> beside Android's kernel headers, in either order, as
 * Gralloc and camera code include them (built against stand-ins under
 * tests/build/android-*), with vendor code's own re-definitions.
 */
#ifdef ANDROID_HEADERS_FIRST
#include <linux/ion.h>
#endif
#include <ion/ion.h>
#include <linux/ion.h>
#if defined(__has_include) && __has_include(<linux/ion_4.12.h>)
#include <linux/ion_4.12.h>
#endif

/* Vendor headers re-#define the flag; the spelling must match. */
#define ION_FLAG_CACHED 1

int header_android_uses(int fd);
int header_android_uses(int fd)
{
	struct ion_heap_data heaps[2];
	ion_user_handle_t handle = 0;

	return ion_query_get_heaps(fd, 2, heaps) +
	       ion_alloc(fd, 4096, 0, ION_HEAP_SYSTEM_MASK, ION_FLAG_CACHED, &handle) +
	       (int)heaps[0].heap_id;
}
