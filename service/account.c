// SPDX-License-Identifier: MIT
/*
 * Users, their buffers, and the release of a buffer once the service
 * holds its last reference (the pools' method, done again here: iond
 * links only the public API).  /proc/self/fdinfo's "count" is the file's
 * reference count: every fd of every process, every mapping, every device
 * import and every SCM_RIGHTS message in flight holds one (Linux 5.3 and
 * later).
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "account.h"

/* /proc/self/fdinfo, opened once at start: a path lookup less per read. */
static int fdinfo_dir = -1;

int iond_fdinfo_open(void)
{
	if (fdinfo_dir < 0)
		fdinfo_dir = open("/proc/self/fdinfo", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	return fdinfo_dir < 0 ? -errno : 0;
}

int iond_fd_refs(int fd)
{
	char name[16], text[1024], *p;
	ssize_t n;
	long v;
	int f, r = iond_fdinfo_open();

	if (r < 0)
		return r;
	snprintf(name, sizeof(name), "%d", fd);
	f = openat(fdinfo_dir, name, O_RDONLY | O_CLOEXEC);
	if (f < 0)
		return -errno;
	n = read(f, text, sizeof(text) - 1);
	close(f);
	if (n <= 0)
		return -EIO;
	text[n] = '\0';
	p = strstr(text, "\ncount:");
	if (!p)
		return -ENOENT; /* before Linux 5.3, or not a dma-buf */
	v = strtol(p + 7, NULL, 10);
	return v >= 1 && v < INT32_MAX ? (int)v - 1 : -EIO;
}

struct iond_user *iond_account_user(struct iond_account *acct, uid_t uid)
{
	struct iond_user **grown, *user;

	for (size_t i = 0; i < acct->n_users; i++)
		if (acct->users[i]->uid == uid)
			return acct->users[i];
	user = calloc(1, sizeof(*user));
	grown = user ? realloc(acct->users, (acct->n_users + 1) * sizeof(*grown)) : NULL;
	if (!grown) {
		free(user);
		return NULL;
	}
	user->uid = uid;
	acct->users = grown;
	acct->users[acct->n_users++] = user;
	return user;
}

static const char *class_word(enum iond_class cls)
{
	return cls == IOND_CONTIGUOUS ? "contiguous" : "scattered";
}

/* One limit against what the request would make of it. */
static int over(const struct iond_user *user, enum iond_limit k, uint64_t used,
		uint64_t asked, const char *unit, char *reason, size_t size)
{
	uint64_t max = user->limits.max[k];

	if (max == IOND_UNLIMITED || (used <= max && asked <= max - used))
		return 0;
	snprintf(reason, size,
		 "over quota: uid %u has %" PRIu64 " %s, asks %" PRIu64 " more, and %s = %" PRIu64
		 " (%s)", (unsigned int)user->uid, used, unit, asked, iond_limit_name(k), max,
		 user->limits.source[k]);
	return -EDQUOT;
}

int iond_account_check_total(const struct iond_user *user, uint64_t size, char *reason,
			     size_t reason_size)
{
	uint64_t bytes = user->bytes[0] + user->bytes[1];
	uint64_t buffers = user->buffers[0] + user->buffers[1];
	int r = over(user, IOND_MAX_BYTES, bytes, size, "bytes", reason, reason_size);

	return r ? r : over(user, IOND_MAX_BUFFERS, buffers, 1, "buffers", reason, reason_size);
}

int iond_account_check(const struct iond_user *user, uint64_t size, enum iond_class cls,
		       char *reason, size_t reason_size)
{
	enum iond_limit cb = cls == IOND_CONTIGUOUS ? IOND_MAX_CONTIGUOUS_BYTES
						    : IOND_MAX_SCATTERED_BYTES;
	enum iond_limit cn = cls == IOND_CONTIGUOUS ? IOND_MAX_CONTIGUOUS_BUFFERS
						    : IOND_MAX_SCATTERED_BUFFERS;
	char unit[32];
	int r;

	snprintf(unit, sizeof(unit), "%s bytes", class_word(cls));
	r = over(user, cb, user->bytes[cls], size, unit, reason, reason_size);
	if (r == 0) {
		snprintf(unit, sizeof(unit), "%s buffers", class_word(cls));
		r = over(user, cn, user->buffers[cls], 1, unit, reason, reason_size);
	}
	return r ? r : iond_account_check_total(user, size, reason, reason_size);
}

int iond_account_add(struct iond_account *acct, struct iond_user *user, int fd,
		     uint64_t size, enum iond_class cls, const char *heap, pid_t pid,
		     const void *owner, bool tracked, uint64_t *ret_id)
{
	struct iond_buffer *b;

	if (acct->n_buffers == acct->cap_buffers) {
		size_t cap = acct->cap_buffers ? acct->cap_buffers * 2 : 64;
		struct iond_buffer *grown = realloc(acct->buffers, cap * sizeof(*grown));

		if (!grown) {
			close(fd);
			return -ENOMEM;
		}
		acct->buffers = grown;
		acct->cap_buffers = cap;
	}
	b = &acct->buffers[acct->n_buffers++];
	memset(b, 0, sizeof(*b));
	b->id = ++acct->next_id;
	b->fd = fd;
	b->size = size;
	b->cls = cls;
	snprintf(b->heap, sizeof(b->heap), "%s", heap);
	b->pid = pid;
	b->uid = user->uid;
	b->owner = owner;
	b->tracked = tracked;
	user->bytes[cls] += size;
	user->buffers[cls]++;
	*ret_id = b->id;
	return 0;
}

/* Uncharges buffer i and drops it (the last one takes its place). */
static void release(struct iond_account *acct, size_t i)
{
	struct iond_buffer *b = &acct->buffers[i];
	struct iond_user *user = iond_account_user(acct, b->uid);

	if (user) {
		user->bytes[b->cls] -= b->size;
		user->buffers[b->cls]--;
	}
	close(b->fd);
	acct->buffers[i] = acct->buffers[--acct->n_buffers];
}

int iond_account_sweep(struct iond_account *acct, uid_t uid)
{
	int released = 0;

	for (size_t i = 0; i < acct->n_buffers; ) {
		if ((uid == (uid_t)-1 || acct->buffers[i].uid == uid) && acct->buffers[i].tracked &&
		    iond_fd_refs(acct->buffers[i].fd) == 0) {
			release(acct, i);
			released++;
		} else {
			i++;
		}
	}
	return released;
}

int iond_account_sweep_some(struct iond_account *acct, size_t n)
{
	int released = 0;

	for (; n > 0 && acct->n_buffers > 0; n--) {
		if (acct->cursor >= acct->n_buffers)
			acct->cursor = 0;
		if (acct->buffers[acct->cursor].tracked &&
		    iond_fd_refs(acct->buffers[acct->cursor].fd) == 0) {
			release(acct, acct->cursor); /* the last one moved here: look at it next */
			released++;
		} else {
			acct->cursor++;
		}
	}
	return released;
}

int iond_account_free(struct iond_account *acct, uid_t uid, uint64_t id,
		      char *reason, size_t reason_size)
{
	for (size_t i = 0; i < acct->n_buffers; i++) {
		struct iond_buffer *b = &acct->buffers[i];
		int refs;

		if (b->id != id || b->uid != uid)
			continue;
		if (!b->tracked) {
			snprintf(reason, reason_size,
				 "buffer %" PRIu64 " is a %s buffer, whose references the kernel does "
				 "not count: it stays charged until the connection that asked for it "
				 "closes", id, b->heap);
			return -EBUSY;
		}
		refs = iond_fd_refs(b->fd);
		if (refs == 0) {
			release(acct, i);
			return 0;
		}
		snprintf(reason, reason_size,
			 "buffer %" PRIu64 " is still referenced %d time(s) outside the service "
			 "(an fd, a mapping or an import): it stays charged until they are gone",
			 id, refs);
		return -EBUSY;
	}
	snprintf(reason, reason_size, "no buffer %" PRIu64 " is charged to uid %u", id,
		 (unsigned int)uid);
	return -ENOENT;
}

void iond_account_drop_owner(struct iond_account *acct, const void *owner)
{
	for (size_t i = 0; i < acct->n_buffers; ) {
		if (acct->buffers[i].owner != owner) {
			i++;
		} else if (!acct->buffers[i].tracked) {
			release(acct, i);
		} else {
			acct->buffers[i].owner = NULL;
			i++;
		}
	}
}

void iond_account_fini(struct iond_account *acct)
{
	for (size_t i = 0; i < acct->n_buffers; i++)
		close(acct->buffers[i].fd);
	for (size_t i = 0; i < acct->n_users; i++)
		free(acct->users[i]);
	free(acct->users);
	free(acct->buffers);
	memset(acct, 0, sizeof(*acct));
}
