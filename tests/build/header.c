// SPDX-License-Identifier: MIT
/* Built with -std=c99 -pedantic -Werror: the public header stands alone. */
#include <ion/ion.h>

int header_c99_uses(void);
int header_c99_uses(void)
{
	struct ion_heap_data d;

	d.heap_id = ION_HEAP_SYSTEM_MASK | ION_HEAP_TYPE_DMA_MASK;
	return ion_sync(-1, ION_SYNC_START | ION_SYNC_RW) + (int)d.heap_id;
}
