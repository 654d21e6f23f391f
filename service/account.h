/* SPDX-License-Identifier: MIT */
/*
 * iond's accounting: each user (uid) the service serves, the buffers
 * charged to it, and when a buffer stops being charged: when the service's
 * own fd is the last reference to it anywhere (fdinfo's count is 1), so
 * that closing, dying or passing a buffer on is charged by what the
 * kernel says, never by what a client says.
 */
#ifndef IOND_ACCOUNT_H
#define IOND_ACCOUNT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "policy.h"

enum iond_class { IOND_SCATTERED, IOND_CONTIGUOUS, IOND_CLASS_COUNT };

struct iond_buffer {
	uint64_t id;
	int fd;              /* the service's reference */
	uint64_t size;
	enum iond_class cls;
	char heap[64];
	pid_t pid;           /* the connection that asked */
	uid_t uid;           /* charged to */
	/* The connection that asked, while it lasts.  A buffer the kernel
	 * keeps no count of (a memfd) is charged until it closes. */
	const void *owner;
	bool tracked;
};

struct iond_user {
	uid_t uid;
	uint64_t bytes[IOND_CLASS_COUNT];
	uint64_t buffers[IOND_CLASS_COUNT];
	unsigned int connections;
	struct iond_limits limits; /* as of its latest connection */
};

struct iond_account {
	struct iond_user **users; /* stable: connections hold them */
	size_t n_users;
	struct iond_buffer *buffers;
	size_t n_buffers, cap_buffers;
	uint64_t next_id;
	size_t cursor; /* where iond_account_sweep_some() goes on */
};

/* The user of uid (made on first use); NULL on -ENOMEM. */
struct iond_user *iond_account_user(struct iond_account *acct, uid_t uid);
/* 0, or -EDQUOT with the rule and the numbers in reason: the totals
 * (MaxBytes, MaxBuffers), and with a class, that class's too. */
int iond_account_check_total(const struct iond_user *user, uint64_t size, char *reason,
			     size_t reason_size);
int iond_account_check(const struct iond_user *user, uint64_t size, enum iond_class cls,
		       char *reason, size_t reason_size);
/* Charges a buffer to user; takes fd (closes it on failure).  tracked:
 * the kernel counts its references (a dma-buf, Linux 5.3 and later). */
int iond_account_add(struct iond_account *acct, struct iond_user *user, int fd,
		     uint64_t size, enum iond_class cls, const char *heap, pid_t pid,
		     const void *owner, bool tracked, uint64_t *ret_id);
/* A connection closed: its untracked buffers are released, the others
 * forget it. */
void iond_account_drop_owner(struct iond_account *acct, const void *owner);
/* Releases every buffer (of uid, or all with uid -1) that nothing outside
 * the service references; returns how many it released. */
int iond_account_sweep(struct iond_account *acct, uid_t uid);
/* The same for the next n buffers only, round the list: the service
 * calls it after each request, so that buffers closed are released at
 * the pace they are asked for, not a second later. */
int iond_account_sweep_some(struct iond_account *acct, size_t n);
/* FREE: 0 (released), -EBUSY (still referenced elsewhere: reason says how
 * often), -ENOENT (no buffer of that id charged to uid). */
int iond_account_free(struct iond_account *acct, uid_t uid, uint64_t id,
		      char *reason, size_t reason_size);
/* Opens /proc/self/fdinfo for iond_fd_refs(), once (at start, so that
 * the fd table does not change later); 0 or a negative errno. */
int iond_fdinfo_open(void);
/* The references to fd's file besides fd itself, or a negative errno. */
int iond_fd_refs(int fd);
void iond_account_fini(struct iond_account *acct);

#endif
