/* SPDX-License-Identifier: MIT */
/* Small shared helpers: cleanup attributes, fd helpers, strict parsing. */
#ifndef LIBION_UTIL_H
#define LIBION_UTIL_H

#include <errno.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <unistd.h>

static inline void freep(void *p)
{
	free(*(void **)p);
}

/* Closes *fd if open and leaves it -1, errno untouched. */
static inline void closep(int *fd)
{
	if (*fd >= 0) {
		int saved = errno;
		close(*fd);
		errno = saved;
		*fd = -1;
	}
}

/* On a pool get's hit path, which is one function (ion_pool_get(),
 * aligned to stay on one page of code): the linker groups .text.hot,
 * since a get after a stream's sleep pays for each page and line of
 * code it touches anew. */
#define ION_HOT __attribute__((hot))

#define _cleanup_free_ __attribute__((cleanup(freep)))
#define _cleanup_close_ __attribute__((cleanup(closep)))

/* Hands over ownership: returns *p and leaves *p empty. */
#define steal_fd(p)                                                            \
	({                                                                     \
		int _fd = *(p);                                                \
		*(p) = -1;                                                     \
		_fd;                                                           \
	})
#define steal_ptr(p)                                                           \
	({                                                                     \
		__typeof__(*(p)) _ptr = *(p);                                  \
		*(p) = NULL;                                                   \
		_ptr;                                                          \
	})

/* errno as a negative return value, never 0 even if errno was clobbered. */
static inline int neg_errno(void)
{
	return errno > 0 ? -errno : -EIO;
}

/*
 * Errors that say nothing lasting about what was probed: out of memory or
 * file descriptors, an interrupted call.  Discovery fails on them and
 * runs again next time rather than remember a heap as unavailable.
 */
static inline bool ion_errno_transient(int r)
{
	return r == -ENOMEM || r == -EMFILE || r == -ENFILE || r == -EINTR ||
	       r == -EAGAIN;
}

/* ioctl() retried on EINTR and EAGAIN; 0 or a negative errno. */
int ion_ioctl_retry(int fd, unsigned long request, void *arg);

/* Strict parsers: the whole string, no sign tricks, no overflow. */
int ion_parse_u64(const char *s, int base, uint64_t *ret);
/* A size with an optional K, M or G suffix (powers of 1024). */
int ion_parse_size(const char *s, uint64_t *ret);

#define ION_BLANKS " \t\r\v\f"
/* s without its leading and trailing blanks (cut in place). */
char *ion_trim(char *s);
bool ion_has_blank(const char *s);

/*
 * A close-on-exec memfd of len bytes with the given F_SEAL_* seals; 0 or a
 * negative errno, and no fd left behind on failure.
 */
int ion_memfd_create_sealed(const char *name, size_t len, unsigned int seals,
			    int *ret_fd);

/*
 * What a buffer fd is: a dma-buf (any exporter), a memfd (a file
 * memfd_create() made: its /proc/self/fd link reads "/memfd:...", or,
 * where /proc is not mounted, any shmem file that takes seals), or
 * anything else.  The kind, or a negative errno (-EBADF).
 */
enum ion_fd_kind { ION_FD_OTHER, ION_FD_DMABUF, ION_FD_MEMFD };
int ion_fd_kind(int fd);

size_t ion_page_size(void);

/* NULL-terminated arrays of malloc'ed strings.  ion_strv_split: text cut
 * at each sep, empty parts left out; NULL on ENOMEM. */
char **ion_strv_split(const char *text, char sep);
char **ion_strv_copy(const char *const *strv);
size_t ion_strv_len(const char *const *strv);
void ion_strv_free(char **strv);
/* Appends copies of n strings to the list *list of *len entries (NULL
 * allowed when empty); 0, or -ENOMEM with the list as it was. */
int ion_strv_append(char ***list, size_t *len, char *const *add, size_t n);
/* The strings joined by sep, malloc'ed ("" for none); NULL on ENOMEM. */
char *ion_strv_join(char *const *strv, const char *sep);
static inline void ion_strv_freep(char ***strv)
{
	ion_strv_free(*strv);
}
#define _cleanup_strv_ __attribute__((cleanup(ion_strv_freep)))

/*
 * Copies len bytes to a caller's buffer the way the kernel's copy_to_user()
 * would: a bad or partly unmapped destination is -EFAULT, never a crash,
 * and the bytes go one by one (no misaligned store).  0 or a negative errno.
 */
int ion_copy_out(void *dst, const void *src, size_t len);

/*
 * Reads a whole file of at most max bytes without ever blocking: a FIFO
 * or device in its place is -EBADFD (-EISDIR for a folder), never a hang;
 * /dev/null reads as empty (a masking symlink).  The text is
 * NUL-terminated; 0, or a negative errno (-EFBIG past max).
 */
int ion_read_file(const char *path, size_t max, char **ret_text, size_t *ret_len);
/* The same relative to a directory fd (AT_FDCWD for none). */
int ion_read_file_at(int dirfd, const char *path, size_t max, char **ret_text,
		     size_t *ret_len);

#endif
