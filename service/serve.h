/* SPDX-License-Identifier: MIT */
/* iond's requests, answered: what each op does, apart from the I/O. */
#ifndef IOND_SERVE_H
#define IOND_SERVE_H

#include <stdint.h>
#include <sys/types.h>

#include "account.h"
#include "policy.h"
#include "proto.h"

struct ion_ctx;

#define IOND_GROUPS_MAX 64

/* A client, as the kernel names it (SO_PEERCRED, SO_PEERGROUPS). */
struct iond_conn {
	int fd;
	pid_t pid;
	uid_t uid;
	gid_t gid;
	gid_t groups[IOND_GROUPS_MAX];
	int n_groups;
	char comm[16];
	struct iond_user *user;
	struct iond_conn *prev, *next; /* the service's list of clients */
};

struct iond_server {
	struct ion_ctx *ctx;
	struct iond_policy *policy;
	struct iond_account acct;
	uid_t own_uid;
};

/* Where a reply's words go while it is built. */
struct iond_answer {
	struct iond_reply reply;
	int fd; /* the buffer to pass, or -1; the service keeps its own */
	char reason[IOND_REASON_MAX + 1];
	char data[IOND_DATA_MAX + 1];
	size_t data_len;
};

/* The client's limits, from the policy, into conn->user. */
void iond_serve_resolve(struct iond_server *srv, struct iond_conn *conn);
/* Answers one request. */
void iond_serve(struct iond_server *srv, struct iond_conn *conn,
		const struct iond_request *req, struct iond_answer *ans);

#endif
