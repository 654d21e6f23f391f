// SPDX-License-Identifier: MIT
//
// ion_map's two ABIs on a 32-bit machine (issue 9, item 7).  Built twice
// by tests/meson.build for 32-bit targets: without _FILE_OFFSET_BITS
// (off_t is a 4-byte long; the call goes to the symbol ion_map) and with
// _FILE_OFFSET_BITS=64 (off_t is 8 bytes; <ion/ion.h> sends the call to
// ion_map64).  Had a caller's offset the wrong width for the symbol it
// reaches, the library would read ptr and map_fd from the wrong stack
// slots and the offset from the wrong words: so each variant maps one
// page of a three-page buffer at a page offset and checks that ptr and
// map_fd come back set, and that the page is the one asked for.
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include <ion/ion.h>

#if defined(MAP_ABI_OFF64) != (defined(_FILE_OFFSET_BITS) && _FILE_OFFSET_BITS == 64)
#error "built with the wrong _FILE_OFFSET_BITS for its variant"
#endif
#ifdef MAP_ABI_OFF64
_Static_assert(sizeof(off_t) == 8, "a 64-bit off_t");
#define VARIANT "off64"
#else
_Static_assert(sizeof(off_t) == sizeof(long), "off_t is long");
#define VARIANT "off32"
#endif

static int failures;

#define CHECK(cond, ...)                                                         \
	do {                                                                     \
		if (!(cond)) {                                                   \
			fprintf(stderr, "map-abi-" VARIANT ": %s:%d: %s: ", __FILE__, \
				__LINE__, #cond);                                \
			fprintf(stderr, __VA_ARGS__);                            \
			fputc('\n', stderr);                                     \
			failures++;                                              \
		}                                                                \
	} while (0)

int main(void)
{
	const size_t page = (size_t)sysconf(_SC_PAGESIZE);
	unsigned char *whole, *ptr;
	ion_user_handle_t handle;
	int client, share_fd, map_fd, r;

	printf("map-abi-" VARIANT ": sizeof(off_t) %zu, sizeof(long) %zu\n",
	       sizeof(off_t), sizeof(long));
	client = ion_open();
	if (client < 0) {
		fprintf(stderr, "ion_open: %s\n", strerror(-client));
		return 1;
	}
	r = ion_alloc(client, 3 * page, 0, ION_HEAP_SYSTEM_MASK, ION_FLAG_CACHED, &handle);
	if (r < 0) {
		fprintf(stderr, "ion_alloc: %s\n", strerror(-r));
		return 1;
	}
	/* Fill page i with byte 0xa0 + i through a mapping of the whole buffer. */
	r = ion_share(client, handle, &share_fd);
	CHECK(r == 0, "ion_share: %d", r);
	if (r < 0)
		return 1;
	whole = mmap(NULL, 3 * page, PROT_READ | PROT_WRITE, MAP_SHARED, share_fd, 0);
	CHECK(whole != MAP_FAILED, "mmap: %s", strerror(errno));
	if (whole == MAP_FAILED)
		return 1;
	for (size_t i = 0; i < 3; i++)
		memset(whole + i * page, 0xa0 + (int)i, page);

	/* Page 1 and page 2 at their offsets: the right pages, ptr and map_fd set. */
	for (size_t i = 1; i < 3; i++) {
		ptr = NULL;
		map_fd = -1;
		r = ion_map(client, handle, page, PROT_READ | PROT_WRITE, MAP_SHARED,
			    (off_t)(i * page), &ptr, &map_fd);
		CHECK(r == 0, "ion_map at page %zu: %d", i, r);
		if (r < 0)
			continue;
		CHECK(ptr != NULL && ptr != MAP_FAILED, "ptr %p", (void *)ptr);
		CHECK(map_fd >= 0, "map_fd %d", map_fd);
		CHECK(map_fd != share_fd && map_fd != client, "map_fd %d", map_fd);
		if (ptr && ptr != MAP_FAILED) {
			CHECK(ptr[0] == 0xa0 + i && ptr[page - 1] == 0xa0 + i,
			      "page %zu reads 0x%02x..0x%02x", i, ptr[0], ptr[page - 1]);
			/* A write through it lands in the same page of the buffer. */
			ptr[1] = 0x5a;
			CHECK(whole[i * page + 1] == 0x5a, "write went elsewhere");
			munmap(ptr, page);
		}
		if (map_fd >= 0)
			close(map_fd);
	}

	/* A negative offset is refused, and nothing is stored. */
	ptr = NULL;
	map_fd = -1;
	r = ion_map(client, handle, page, PROT_READ, MAP_SHARED, -(off_t)page, &ptr, &map_fd);
	CHECK(r == -EINVAL, "negative offset: %d", r);
	CHECK(ptr == NULL && map_fd == -1, "out-parameters touched on failure");

#ifdef MAP_ABI_OFF64
	/* The high word arrives: 4 GiB plus a page is past the end (a library
	 * reading 32 bits of it would map page 1). */
	ptr = NULL;
	map_fd = -1;
	r = ion_map(client, handle, page, PROT_READ, MAP_SHARED,
		    ((off_t)1 << 32) + (off_t)page, &ptr, &map_fd);
	CHECK(r == -EINVAL, "offset 4 GiB + page: %d", r);
	CHECK(ptr == NULL && map_fd == -1, "out-parameters touched on failure");
	/* ion_map64 by name, as a caller of either kind may call it. */
	r = ion_map64(client, handle, page, PROT_READ, MAP_SHARED, (long long)(2 * page),
		      &ptr, &map_fd);
	CHECK(r == 0 && ptr && ptr[0] == 0xa2, "ion_map64 at page 2: %d", r);
	if (r == 0) {
		munmap(ptr, page);
		close(map_fd);
	}
#endif

	munmap(whole, 3 * page);
	close(share_fd);
	CHECK(ion_free(client, handle) == 0, "ion_free");
	ion_close(client);
	if (failures)
		return 1;
	printf("map-abi-" VARIANT ": ok\n");
	return 0;
}
