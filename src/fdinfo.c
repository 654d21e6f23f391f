// SPDX-License-Identifier: MIT
/*
 * Reading /proc/self/fdinfo: the safety rule of every pool, that a buffer
 * still referenced anywhere (an fd in any process, a mapping, a device
 * import) is never handed out again, rests on the counts read here.
 */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>

#include <ion/ion.h>

#include "fdinfo.h"
#include "util.h"

/* A number in fdinfo's text after key ("\ncount:"), or -ENOENT. */
static int fdinfo_value(const char *text, const char *key, uint64_t *ret)
{
	const char *p = strstr(text, key);
	char value[24];
	size_t n;

	if (!p)
		return -ENOENT;
	p += strlen(key);
	p += strspn(p, " \t");
	n = strcspn(p, "\n");
	if (n == 0 || n >= sizeof(value))
		return -EIO;
	memcpy(value, p, n);
	value[n] = '\0';
	return ion_parse_u64(value, 10, ret) < 0 ? -EIO : 0;
}

int ion_fdinfo_refs(int fd, ino_t *ret_ino)
{
	_cleanup_free_ char *text = NULL;
	char path[40];
	uint64_t v, ino;
	size_t len;
	int r;

	snprintf(path, sizeof(path), "/proc/self/fdinfo/%d", fd);
	r = ion_read_file(path, 4096, &text, &len);
	if (r < 0)
		return r;
	r = fdinfo_value(text, "\ncount:", &v);
	if (r < 0)
		return r;
	if (v > INT32_MAX)
		return -EIO;
	if (ret_ino)
		*ret_ino = fdinfo_value(text, "\nino:", &ino) == 0 ? (ino_t)ino : 0;
	return (int)v;
}

/*
 * Whether a mapping adds one to the count, which the safety rests on:
 * found out once per heap, on its first pooled buffer.
 */
static int maps_counted(int fd)
{
	int before, after;
	void *p;

	before = ion_fdinfo_refs(fd, NULL);
	p = mmap(NULL, ion_page_size(), PROT_READ, MAP_SHARED, fd, 0);
	if (p == MAP_FAILED)
		return 1; /* not mappable (a protected heap): nothing to miss */
	after = ion_fdinfo_refs(fd, NULL);
	munmap(p, ion_page_size());
	return before > 0 && after == before + 1 ? 1 : -1;
}

enum ion_fdinfo_track ion_fdinfo_trackable(int fd, atomic_int *maps_known)
{
	int v;

	if (ion_fd_kind(fd) != ION_FD_DMABUF || ion_fdinfo_refs(fd, NULL) <= 0)
		return ION_FDINFO_UNTRACKED;
	v = maps_known ? atomic_load_explicit(maps_known, memory_order_relaxed) : 0;
	if (v)
		return v > 0 ? ION_FDINFO_TRACKED : ION_FDINFO_UNTRACKED;
	v = maps_counted(fd);
	if (maps_known)
		atomic_store_explicit(maps_known, v, memory_order_relaxed);
	return v > 0 ? ION_FDINFO_TRACKED : ION_FDINFO_MAPS_UNSEEN;
}
