// SPDX-License-Identifier: MIT
/* Android 11's <ion/ion.h> declares ion_is_using_modular_heaps(): code
 * that calls it must compile against ours (issue 9, item 4). */
#include <ion/ion.h>

int main(void)
{
	return ion_is_using_modular_heaps(-1) == 0 ? 0 : 1;
}
