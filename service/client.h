/* SPDX-License-Identifier: MIT */
/*
 * A client of iond, in a few calls: what ionctl, the tests and the
 * library's own client (src/service-client.c) share.  No state: a
 * connection is an fd.
 */
#ifndef IOND_CLIENT_H
#define IOND_CLIENT_H

#include <stddef.h>

#include "proto.h"

/* How long a client waits for the service to take or answer a request. */
#define IOND_CLIENT_TIMEOUT_S 30
/* A close-on-exec SOCK_SEQPACKET connection to path, whose sends and
 * receives give up after IOND_CLIENT_TIMEOUT_S: the fd, or a negative
 * errno (-ENOENT: no service there). */
int iond_client_connect(const char *path);
/*
 * Sends req and reads its reply, parsed into ret_reply (strings in store,
 * at least IOND_REPLY_MAX + 2 bytes).  ret_fd (may be NULL) gets the
 * buffer an ALLOC reply carried, close-on-exec, else -1; any other fd a
 * reply brought is closed.  0 when a reply came (its error is the
 * service's answer), or a negative errno: -ECONNRESET when the service
 * went away, -ETIMEDOUT when it did not answer in time, -EPROTO for a
 * reply that is not one.
 */
int iond_client_call(int sock, const struct iond_request *req, char *store, size_t store_size,
		     struct iond_reply *ret_reply, int *ret_fd);

struct msghdr;
/* The fds a received message brought: the first into *ret_fd (when it is
 * -1), every other closed (all of them with a NULL ret_fd); how many. */
int iond_msg_take_fds(struct msghdr *msg, int *ret_fd);

#endif
