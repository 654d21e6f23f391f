/* SPDX-License-Identifier: MIT */
/* What test-service's files share: the service under test and its helpers. */
#ifndef LIBION_SERVICE_TEST_H
#define LIBION_SERVICE_TEST_H

#include <errno.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <sys/types.h>
#include <unistd.h>

#include <cmocka.h>
#include <ion/libion.h>

#include "service/client.h"
#include "testlib.h"

struct svc {
	char dir[64];          /* socket and policy */
	char socket[96];
	char policy[96];
	char quota_rule[256];  /* "DIR/pol/20-test.conf:LINE" of [User 65534]'s MaxBytes */
	char heaps_rule[256];  /* ... of [User 65533]'s Heaps */
	const char *iond;
	const char *heap;      /* the heap the tests allocate from */
	pid_t pid;
	bool root;
	uid_t run_uid;         /* iond's uid (the VM test's service user), 0: ours */
	gid_t run_gid;
};

extern struct svc svc;

/* A failed check in a forked client: says where, exits 1. */
#define CHECK(cond)                                                                      \
	do {                                                                             \
		if (!(cond)) {                                                           \
			fprintf(stderr, "%s:%d: check failed: %s\n", __FILE__, __LINE__, #cond); \
			_exit(1);                                                        \
		}                                                                        \
	} while (0)

/* Writes the policy, picks a heap, starts iond; -1 (and why) when it
 * cannot run here (the test then exits 77). */
int svc_init(struct svc *s, const char *iond);
/* Stops the service (SIGTERM): 0, or -1 when it did not end cleanly
 * (a crash, or a leak LeakSanitizer found in a sanitized build). */
int svc_fini(struct svc *s);
/* 0 once it listens, -1 when it could not run at all (an exec that fails
 * under qemu-user); aborts when it runs and does not listen. */
int svc_start(struct svc *s);
/* iond forked and exec'd as svc_start() does, on another socket (as
 * s->run_uid if set): its pid (-1: no fork), not waited for. */
pid_t svc_spawn(const struct svc *s, const char *socket);
int svc_stop(struct svc *s);
/* The policy with extra lines after the test's 10 (NULL: none), read
 * again by the service (SIGHUP). */
void svc_reload(const struct svc *s, const char *extra);
/* A connection to the service (fails the test or the child without one). */
int svc_connect(const struct svc *s);
/* fn(arg) in a child as uid/gid (no supplementary groups): its exit
 * status, or 128 + the signal that ended it. */
int svc_run_as(uid_t uid, gid_t gid, int (*fn)(void *), void *arg);
/* The service's open fds, and its resident memory in KiB. */
int svc_fd_count(const struct svc *s);
long svc_rss_kb(const struct svc *s);
/* The same count once the service has caught up with closed clients and
 * swept the buffers closed (unchanged for 1.5 s). */
int svc_fd_count_settled(const struct svc *s);
/* A request answered: the reply's error, or the call's. */
int svc_ask(int sock, struct iond_request *req, struct iond_reply *reply, int *fd);
/* The caller's charged bytes (USAGE), or -1. */
long long svc_charged(int sock);
/* Sends len raw bytes and reads the reply: its error, or -ECONNRESET. */
int svc_raw(int sock, const void *msg, size_t len, struct iond_reply *reply);

void test_hostile_garbage(void **state);
void test_hostile_fds(void **state);
void test_hostile_oversized(void **state);
void test_hostile_never_reads(void **state);
void test_hostile_connections(void **state);
void test_no_growth(void **state);

#endif
