// SPDX-License-Identifier: MIT
/*
 * What <ion/ion.h> shares with the kernel and with Android, checked at
 * compile time: a changed layout or constant fails the build, even where
 * the API reaches a struct only through a pointer (ion_query_get_heaps()
 * fills an array of struct ion_heap_data the caller sized), which
 * abidiff cannot see.  Each struct is compared field by field with the
 * kernel's own (uapi/ion.h, the 4.12+ ABI), and with the numbers the
 * kernel and Android publish, in case both copies drifted together.
 *
 * The same holds for what the library itself hands the kernel: its copies
 * of the ION structures and request numbers (uapi/ion.h, both ABIs, both
 * word sizes) against the kernel's published layouts.  (ion_custom_data
 * and ION_IOC_CUSTOM are neither in <ion/ion.h> nor used: not here.)
 *
 * Built also beside stand-ins for Android's kernel headers
 * (tests/build/android-*), where <ion/ion.h> takes Android's definitions:
 * the last section then checks those against the kernel's too.
 */
#include <stddef.h>

#include <linux/ioctl.h>

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

/* The published layout: 32 bytes of name, five 32-bit words; callers
 * pass arrays of it, so its alignment (the stride) is the kernel's too. */
_Static_assert(sizeof(struct ion_heap_data) == 52, "struct ion_heap_data is 52 bytes");
_Static_assert(_Alignof(struct ion_heap_data) == _Alignof(struct ion_new_heap_data),
	       "struct ion_heap_data's alignment differs from the kernel's");
_Static_assert(offsetof(struct ion_heap_data, name) == 0, "name at 0");
_Static_assert(offsetof(struct ion_heap_data, type) == 32, "type at 32");
_Static_assert(offsetof(struct ion_heap_data, heap_id) == 36, "heap_id at 36");
_Static_assert(offsetof(struct ion_heap_data, reserved0) == 40, "reserved0 at 40");
_Static_assert(offsetof(struct ion_heap_data, reserved1) == 44, "reserved1 at 44");
_Static_assert(offsetof(struct ion_heap_data, reserved2) == 48, "reserved2 at 48");
_Static_assert(MAX_HEAP_NAME == 32, "MAX_HEAP_NAME is 32");
_Static_assert(MAX_HEAP_NAME == sizeof(((struct ion_new_heap_data *)0)->name),
	       "MAX_HEAP_NAME is the kernel's name length");

/* Heap types and masks: ids by ION's type convention, as Android's. */
_Static_assert(ION_HEAP_TYPE_SYSTEM == 0 && ION_HEAP_TYPE_SYSTEM_CONTIG == 1 &&
		       ION_HEAP_TYPE_CARVEOUT == 2 && ION_HEAP_TYPE_CHUNK == 3 &&
		       ION_HEAP_TYPE_DMA == 4 && ION_HEAP_TYPE_CUSTOM == 5,
	       "enum ion_heap_type is the kernel's");
/* The 4.12+ kernel's header, and so Android's, has no ION_NUM_HEAPS. */
#if !defined(_UAPI_LINUX_ION_H) || defined(ION_IOC_FREE)
_Static_assert(ION_NUM_HEAPS == 16, "ION_NUM_HEAPS is 16");
#endif
_Static_assert(ION_HEAP_SYSTEM_MASK == 1 && ION_HEAP_SYSTEM_CONTIG_MASK == 2 &&
		       ION_HEAP_CARVEOUT_MASK == 4 && ION_HEAP_TYPE_DMA_MASK == 16,
	       "the heap masks are 1 << type");
_Static_assert(ION_NUM_HEAP_IDS == 32, "32 heap ids");
_Static_assert(ION_FLAG_CACHED == 1 && ION_FLAG_CACHED_NEEDS_SYNC == 2,
	       "the cache flags are the kernel's");
_Static_assert(sizeof(ion_user_handle_t) == 4, "a handle is a 32-bit int");

/* The calls' arguments as the kernel's fields take them: a handle is the
 * handle ABI's signed 32-bit one; a heap mask and the flags are 32 bits,
 * one bit per heap id. */
_Static_assert(sizeof(ion_user_handle_t) == sizeof(((struct ion_legacy_handle_data *)0)->handle) &&
		       (ion_user_handle_t)-1 < 0,
	       "ion_user_handle_t is the kernel's __s32 handle");
_Static_assert(sizeof(unsigned int) == sizeof(((struct ion_new_allocation_data *)0)->heap_id_mask) &&
		       sizeof(unsigned int) == sizeof(((struct ion_new_allocation_data *)0)->flags),
	       "ion_alloc()'s heap_mask and flags are the kernel's __u32 fields");
_Static_assert(ION_NUM_HEAP_IDS == 8 * sizeof(((struct ion_new_allocation_data *)0)->heap_id_mask),
	       "one heap id per bit of the kernel's heap_id_mask");
_Static_assert(ION_HEAP_SYSTEM_CONTIG_MASK == 2, "ION_HEAP_SYSTEM_CONTIG_MASK is 1 << 1");

/* ---- What the library hands the kernel (uapi/ion.h) ---- */
#define AT(type, field, offset)                                                \
	_Static_assert(offsetof(struct type, field) == (offset),               \
		       "struct " #type "." #field " at " #offset)
#define REQUEST(req, nr, type)                                                 \
	_Static_assert(_IOC_TYPE(req) == 'I' && _IOC_NR(req) == (nr) &&        \
			       _IOC_DIR(req) == (_IOC_READ | _IOC_WRITE) &&     \
			       _IOC_SIZE(req) == sizeof(struct type),           \
		       #req " is _IOWR('I', " #nr ", struct " #type ")")

/* 4.12 to 5.10: struct ion_allocation_data, struct ion_heap_query. */
AT(ion_new_allocation_data, len, 0);
AT(ion_new_allocation_data, heap_id_mask, 8);
AT(ion_new_allocation_data, flags, 12);
AT(ion_new_allocation_data, fd, 16);
AT(ion_new_allocation_data, unused, 20);
_Static_assert(sizeof(struct ion_new_allocation_data) == 24, "ion_allocation_data: 24 bytes");
AT(ion_new_heap_query, cnt, 0);
AT(ion_new_heap_query, reserved0, 4);
AT(ion_new_heap_query, heaps, 8);
AT(ion_new_heap_query, reserved1, 16);
AT(ion_new_heap_query, reserved2, 20);
_Static_assert(sizeof(struct ion_new_heap_query) == 24, "ion_heap_query: 24 bytes");
REQUEST(ION_NEW_IOC_ALLOC, 0, ion_new_allocation_data);
REQUEST(ION_NEW_IOC_HEAP_QUERY, 8, ion_new_heap_query);

/* Before 4.12: struct ion_allocation_data holds size_t, so a 64-bit and
 * a 32-bit process send different layouts (and request numbers). */
AT(ion_legacy_allocation_data64, len, 0);
AT(ion_legacy_allocation_data64, align, 8);
AT(ion_legacy_allocation_data64, heap_id_mask, 16);
AT(ion_legacy_allocation_data64, flags, 20);
AT(ion_legacy_allocation_data64, handle, 24);
_Static_assert(sizeof(struct ion_legacy_allocation_data64) == 32,
	       "64-bit ion_allocation_data: 32 bytes with its tail padding");
AT(ion_legacy_allocation_data32, len, 0);
AT(ion_legacy_allocation_data32, align, 4);
AT(ion_legacy_allocation_data32, heap_id_mask, 8);
AT(ion_legacy_allocation_data32, flags, 12);
AT(ion_legacy_allocation_data32, handle, 16);
_Static_assert(sizeof(struct ion_legacy_allocation_data32) == 20, "32-bit ion_allocation_data: 20 bytes");
AT(ion_legacy_fd_data, handle, 0);
AT(ion_legacy_fd_data, fd, 4);
_Static_assert(sizeof(struct ion_legacy_fd_data) == 8, "ion_fd_data: 8 bytes");
AT(ion_legacy_handle_data, handle, 0);
_Static_assert(sizeof(struct ion_legacy_handle_data) == 4, "ion_handle_data: 4 bytes");
REQUEST(ION_LEGACY_IOC_ALLOC64, 0, ion_legacy_allocation_data64);
REQUEST(ION_LEGACY_IOC_ALLOC32, 0, ion_legacy_allocation_data32);
REQUEST(ION_LEGACY_IOC_FREE, 1, ion_legacy_handle_data);
REQUEST(ION_LEGACY_IOC_MAP, 2, ion_legacy_fd_data);
REQUEST(ION_LEGACY_IOC_SHARE, 4, ion_legacy_fd_data);
REQUEST(ION_LEGACY_IOC_IMPORT, 5, ion_legacy_fd_data);
REQUEST(ION_LEGACY_IOC_SYNC, 7, ion_legacy_fd_data);

/* ---- Android's kernel headers, where <ion/ion.h> took theirs ---- */
#ifdef ION_IOC_HEAP_QUERY
_Static_assert(sizeof(struct ion_heap_query) == sizeof(struct ion_new_heap_query) &&
		       offsetof(struct ion_heap_query, heaps) ==
			       offsetof(struct ion_new_heap_query, heaps),
	       "Android's struct ion_heap_query is the kernel's");
_Static_assert(ION_IOC_HEAP_QUERY == ION_NEW_IOC_HEAP_QUERY, "ION_IOC_HEAP_QUERY is the kernel's");
#endif
#ifdef ION_IOC_FREE
_Static_assert(sizeof(struct ion_handle_data) == sizeof(struct ion_legacy_handle_data),
	       "Android's struct ion_handle_data is the kernel's");
_Static_assert(ION_IOC_FREE == ION_LEGACY_IOC_FREE, "ION_IOC_FREE is the kernel's");
#endif

/* A translation unit may not be empty. */
int libion_abi_checked(void);
int libion_abi_checked(void)
{
	return 1;
}
