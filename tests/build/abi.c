// SPDX-License-Identifier: MIT
/*
 * What <ion/ion.h> shares with the kernel and with Android, checked at
 * compile time: a changed layout or constant fails the build, even where
 * the API reaches a struct only through a pointer (ion_query_get_heaps()
 * fills an array of struct ion_heap_data the caller sized), which
 * abidiff cannot see.  Each struct is compared field by field with the
 * kernel's own (uapi/ion.h, the 4.12+ ABI), and with the numbers the
 * kernel and Android publish, in case both copies drifted together.
 */
#include <stddef.h>

#include <ion/ion.h>

#include "uapi/ion.h"

#define SAME_FIELD(field)                                                      \
	_Static_assert(offsetof(struct ion_heap_data, field) ==                 \
			       offsetof(struct ion_new_heap_data, field) &&    \
		       sizeof(((struct ion_heap_data *)0)->field) ==            \
			       sizeof(((struct ion_new_heap_data *)0)->field), \
		       "struct ion_heap_data." #field " differs from the kernel's")

SAME_FIELD(name);
SAME_FIELD(type);
SAME_FIELD(heap_id);
SAME_FIELD(reserved0);
SAME_FIELD(reserved1);
SAME_FIELD(reserved2);
_Static_assert(sizeof(struct ion_heap_data) == sizeof(struct ion_new_heap_data),
	       "struct ion_heap_data's size differs from the kernel's");

/* The published layout: 32 bytes of name, five 32-bit words. */
_Static_assert(sizeof(struct ion_heap_data) == 52, "struct ion_heap_data is 52 bytes");
_Static_assert(offsetof(struct ion_heap_data, type) == 32, "type at 32");
_Static_assert(offsetof(struct ion_heap_data, heap_id) == 36, "heap_id at 36");
_Static_assert(offsetof(struct ion_heap_data, reserved2) == 48, "reserved2 at 48");
_Static_assert(MAX_HEAP_NAME == 32, "MAX_HEAP_NAME is 32");

/* Heap types and masks: ids by ION's type convention, as Android's. */
_Static_assert(ION_HEAP_TYPE_SYSTEM == 0 && ION_HEAP_TYPE_SYSTEM_CONTIG == 1 &&
		       ION_HEAP_TYPE_CARVEOUT == 2 && ION_HEAP_TYPE_CHUNK == 3 &&
		       ION_HEAP_TYPE_DMA == 4 && ION_HEAP_TYPE_CUSTOM == 5 &&
		       ION_NUM_HEAPS == 16,
	       "enum ion_heap_type is the kernel's");
_Static_assert(ION_HEAP_SYSTEM_MASK == 1 && ION_HEAP_SYSTEM_CONTIG_MASK == 2 &&
		       ION_HEAP_CARVEOUT_MASK == 4 && ION_HEAP_TYPE_DMA_MASK == 16,
	       "the heap masks are 1 << type");
_Static_assert(ION_NUM_HEAP_IDS == 32, "32 heap ids");
_Static_assert(ION_FLAG_CACHED == 1 && ION_FLAG_CACHED_NEEDS_SYNC == 2,
	       "the cache flags are the kernel's");
_Static_assert(sizeof(ion_user_handle_t) == 4, "a handle is a 32-bit int");

/* A translation unit may not be empty. */
int libion_abi_checked(void);
int libion_abi_checked(void)
{
	return 1;
}
