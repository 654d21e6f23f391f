// SPDX-License-Identifier: MIT
/* A program built against the installed libion, as its users build. */
#include <stdio.h>
#include <unistd.h>

#include <ion/ion.h>

int main(void)
{
	int client = ion_open(), fd = -1, r;

	if (client < 0)
		return 1;
	r = ion_alloc_fd(client, 4096, 0, ION_HEAP_SYSTEM_MASK, 0, &fd);
	if (r == 0)
		close(fd);
	ion_close(client);
	printf("installed libion: ion_alloc_fd %s\n", r == 0 ? "works" : "failed");
	return r == 0 ? 0 : 1;
}
