// SPDX-License-Identifier: MIT
/*
 * Hostile clients of iond: each gets a clear error or a closed
 * connection, the service keeps serving the others, and holds no fd or
 * memory more afterwards.
 */
#include <fcntl.h>
#include <sys/resource.h>
#include <sys/socket.h>

#include "service-test.h"

/* The service still answers a well-formed request. */
static void assert_serving(void)
{
	struct iond_request req = { .op = IOND_OP_HEAPS, .seq = 5 };
	static char store[IOND_REPLY_MAX + 2];
	struct iond_reply reply;
	int sock = svc_connect(&svc);

	assert_int_equal(iond_client_call(sock, &req, store, sizeof(store), &reply, NULL), 0);
	assert_int_equal(reply.error, 0);
	assert_non_null(strstr(reply.data, svc.heap));
	close(sock);
}

/* A header for len bytes. */
static void header(unsigned char *p, uint16_t version, uint16_t op, uint32_t len)
{
	uint32_t magic = IOND_MAGIC, seq = 42;

	memcpy(p, &magic, 4);
	memcpy(p + 4, &version, 2);
	memcpy(p + 6, &op, 2);
	memcpy(p + 8, &seq, 4);
	memcpy(p + 12, &len, 4);
}

void test_hostile_garbage(void **state)
{
	unsigned char msg[256];
	struct iond_reply reply;
	int fds = svc_fd_count_settled(&svc), sock = svc_connect(&svc);
	uint64_t zero = 0;

	for (size_t i = 0; i < sizeof(msg); i++)
		msg[i] = (unsigned char)(i * 131 + 7);
	assert_int_equal(svc_raw(sock, msg, sizeof(msg), &reply), -EPROTO);
	assert_int_equal(svc_raw(sock, msg, 3, &reply), -EPROTO);
	header(msg, IOND_VERSION, IOND_OP_HEAPS, 15); /* truncated: says 15, is 16 */
	assert_int_equal(svc_raw(sock, msg, 16, &reply), -EPROTO);
	header(msg, 2, IOND_OP_HEAPS, 16);
	assert_int_equal(svc_raw(sock, msg, 16, &reply), -EPROTONOSUPPORT);
	assert_int_equal(reply.seq, 42);
	header(msg, IOND_VERSION, 77, 16);
	assert_int_equal(svc_raw(sock, msg, 16, &reply), -EOPNOTSUPP);
	/* an allocation cut short of its fixed fields, then one with a name
	 * of control bytes */
	header(msg, IOND_VERSION, IOND_OP_ALLOC, 20);
	assert_int_equal(svc_raw(sock, msg, 20, &reply), -EPROTO);
	header(msg, IOND_VERSION, IOND_OP_ALLOC, IOND_HDR_SIZE + IOND_ALLOC_FIXED + 2);
	memset(msg + IOND_HDR_SIZE, 0, IOND_ALLOC_FIXED);
	msg[IOND_HDR_SIZE] = 1;
	msg[IOND_HDR_SIZE + 14] = 2; /* name_len */
	msg[IOND_HDR_SIZE + IOND_ALLOC_FIXED] = '\033';
	msg[IOND_HDR_SIZE + IOND_ALLOC_FIXED + 1] = '[';
	assert_int_equal(svc_raw(sock, msg, IOND_HDR_SIZE + IOND_ALLOC_FIXED + 2, &reply), -EINVAL);
	/* a FREE of an id nobody has */
	header(msg, IOND_VERSION, IOND_OP_FREE, IOND_HDR_SIZE + 8);
	memcpy(msg + IOND_HDR_SIZE, &zero, 8);
	assert_int_equal(svc_raw(sock, msg, IOND_HDR_SIZE + 8, &reply), -ENOENT);
	/* the connection still works */
	header(msg, IOND_VERSION, IOND_OP_HEAPS, 16);
	assert_int_equal(svc_raw(sock, msg, 16, &reply), 0);
	close(sock);
	assert_serving();
	assert_int_equal(svc_fd_count_settled(&svc), fds);
}

/* 250 fds with a request: refused, and none stays in the service. */
void test_hostile_fds(void **state)
{
	enum { N = 250 };
	union {
		struct cmsghdr align;
		char space[CMSG_SPACE(N * sizeof(int))];
	} ctl;
	unsigned char msg[16];
	struct iovec iov = { .iov_base = msg, .iov_len = sizeof(msg) };
	struct msghdr mh = { .msg_iov = &iov, .msg_iovlen = 1, .msg_control = ctl.space,
			     .msg_controllen = sizeof(ctl.space) };
	struct cmsghdr *c;
	struct iond_reply reply;
	static char store[IOND_REPLY_MAX + 2];
	static unsigned char buf[IOND_REPLY_MAX];
	int fds[N], sock = svc_connect(&svc), before;
	ssize_t n;

	for (int i = 0; i < N; i++) {
		fds[i] = open("/dev/null", O_RDONLY | O_CLOEXEC);
		assert_true(fds[i] >= 0);
	}
	assert_serving();
	before = svc_fd_count_settled(&svc);
	header(msg, IOND_VERSION, IOND_OP_HEAPS, 16);
	memset(&ctl, 0, sizeof(ctl));
	c = CMSG_FIRSTHDR(&mh);
	c->cmsg_level = SOL_SOCKET;
	c->cmsg_type = SCM_RIGHTS;
	c->cmsg_len = CMSG_LEN(N * sizeof(int));
	memcpy(CMSG_DATA(c), fds, sizeof(fds));
	assert_true(sendmsg(sock, &mh, MSG_NOSIGNAL) == sizeof(msg));
	for (int i = 0; i < N; i++)
		close(fds[i]);
	n = recv(sock, buf, sizeof(buf), 0);
	assert_true(n > 0);
	assert_int_equal(iond_reply_parse(buf, (size_t)n, store, sizeof(store), &reply), 0);
	assert_int_equal(reply.error, -EBADMSG);
	assert_non_null(strstr(reply.reason, "no fds"));
	assert_int_equal(svc_fd_count_settled(&svc), before);
	close(sock);
	assert_serving();
}

void test_hostile_oversized(void **state)
{
	size_t len = IOND_REQUEST_MAX + 1, cons = IOND_CONSTRAINTS_MAX + 1;
	unsigned char *msg = calloc(1, len + 64);
	struct iond_reply reply;
	uint32_t c32 = (uint32_t)cons;
	uint64_t one = 1;
	int sock = svc_connect(&svc);

	assert_non_null(msg);
	memset(msg, 'a', len);
	header(msg, IOND_VERSION, IOND_OP_ALLOC, (uint32_t)len);
	assert_int_equal(svc_raw(sock, msg, len, &reply), -EMSGSIZE);
	/* a constraint text of 64 KiB + 1 in a message of the right length */
	len = IOND_HDR_SIZE + IOND_ALLOC_FIXED + cons;
	memset(msg + IOND_HDR_SIZE, 0, IOND_ALLOC_FIXED);
	memcpy(msg + IOND_HDR_SIZE, &one, 8);
	memcpy(msg + IOND_HDR_SIZE + 16, &c32, 4);
	header(msg, IOND_VERSION, IOND_OP_ALLOC, (uint32_t)len);
	assert_int_equal(svc_raw(sock, msg, len, &reply), -EMSGSIZE);
	/* 64 KiB exactly, but no ionc1 text: the library's refusal */
	len--;
	c32--;
	memcpy(msg + IOND_HDR_SIZE + 16, &c32, 4);
	header(msg, IOND_VERSION, IOND_OP_ALLOC, (uint32_t)len);
	assert_int_equal(svc_raw(sock, msg, len, &reply), -EINVAL);
	assert_non_null(strstr(reply.reason, "ionc1"));
	free(msg);
	close(sock);
	assert_serving();
}

/* A client that sends and never reads loses its connection; the others
 * are served all along. */
void test_hostile_never_reads(void **state)
{
	struct iond_request req = { .op = IOND_OP_HEAPS, .seq = 1 };
	unsigned char msg[64];
	int sock = svc_connect(&svc), len = iond_request_encode(&req, msg, sizeof(msg));
	int sent = 0, closed = 0;

	for (int i = 0; i < 100000 && !closed; i++) {
		if (send(sock, msg, (size_t)len, MSG_NOSIGNAL | MSG_DONTWAIT) == len) {
			sent++;
			continue;
		}
		if (errno == EPIPE || errno == ECONNRESET)
			closed = 1;
		else
			usleep(1000);
		if (i % 64 == 0)
			assert_serving();
	}
	assert_true(closed);
	assert_true(sent > 1);
	close(sock);
	assert_serving();
}

/* 1,000 connections from one uid: MaxConnections (16) are served, the
 * rest refused with -EUSERS and the rule, and the service goes on. */
static int child_connections(void *arg)
{
	enum { N = 1000 };
	struct iond_request req = { .op = IOND_OP_USAGE, .seq = 1 };
	static char store[IOND_REPLY_MAX + 2];
	struct iond_reply reply;
	int *socks = calloc(N, sizeof(int)), served = 0, refused = 0;

	(void)arg;
	CHECK(socks);
	for (int i = 0; i < N; i++)
		CHECK((socks[i] = iond_client_connect(svc.socket)) >= 0);
	for (int i = 0; i < N; i++) {
		int r = iond_client_call(socks[i], &req, store, sizeof(store), &reply, NULL);

		if (r == 0 && reply.error == 0)
			served++;
		else if ((r == 0 && reply.error == -EUSERS && strstr(reply.reason, "MaxConnections")) ||
			 r == -ECONNRESET)
			refused++;
	}
	for (int i = 0; i < N; i++)
		close(socks[i]);
	free(socks);
	fprintf(stderr, "connections: %d served, %d refused\n", served, refused);
	CHECK(served == 16 && refused == N - 16);
	return 0;
}

void test_hostile_connections(void **state)
{
	struct rlimit rl;
	int before = svc_fd_count_settled(&svc);

	if (!svc.root)
		skip();
	/* 1,000 sockets and then some (valgrind keeps the top of the table) */
	assert_int_equal(getrlimit(RLIMIT_NOFILE, &rl), 0);
	if (rl.rlim_max < 1100)
		skip();
	rl.rlim_cur = rl.rlim_max < 4096 ? rl.rlim_max : 4096;
	assert_int_equal(setrlimit(RLIMIT_NOFILE, &rl), 0);
	assert_int_equal(svc_run_as(65534, 65534, child_connections, NULL), 0);
	/* the service closes them as it reads their ends */
	assert_int_equal(svc_fd_count_settled(&svc), before);
	assert_serving();
}

/* Whether this build (and so the service's) runs under a sanitizer. */
static bool sanitized(void)
{
#if defined(__SANITIZE_ADDRESS__)
	return true;
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
	return true;
#endif
#endif
	return false;
}

/* 100,000 requests of every kind, good and bad (10,000 in the VMs): no fd
 * and no memory more. */
void test_no_growth(void **state)
{
	struct iond_request heaps = { .op = IOND_OP_HEAPS, .seq = 1 };
	struct iond_request free_req = { .op = IOND_OP_FREE, .seq = 2, .id = 12345 };
	struct iond_request free_id = { .op = IOND_OP_FREE, .seq = 4 };
	struct iond_request alloc = { .op = IOND_OP_ALLOC, .seq = 3, .size = 4096,
				      .heap = svc.heap, .name = "growth" };
	static char store[IOND_REPLY_MAX + 2];
	struct iond_reply reply;
	unsigned char bad[16] = { 1, 2, 3 };
	int sock = svc_connect(&svc), fds, fd, after;
	/* under TCG a round trip is a millisecond: the VMs run a tenth */
	int rounds = getenv("LIBION_IN_VM") ? 10000 : 100000;
	long rss;

	/* warm up, so that first-use allocations do not count */
	for (int i = 0; i < 1000; i++)
		assert_int_equal(iond_client_call(sock, &heaps, store, sizeof(store), &reply, NULL), 0);
	fds = svc_fd_count_settled(&svc);
	rss = svc_rss_kb(&svc);
	for (int i = 0; i < rounds; i++) {
		switch (i % 4) {
		case 0:
			assert_int_equal(iond_client_call(sock, &heaps, store, sizeof(store), &reply, NULL), 0);
			break;
		case 1:
			assert_int_equal(iond_client_call(sock, &free_req, store, sizeof(store), &reply, NULL), 0);
			assert_int_equal(reply.error, -ENOENT);
			break;
		case 2:
			assert_int_equal(svc_raw(sock, bad, sizeof(bad), &reply), -EPROTO);
			break;
		default:
			if (i % 400 != 3)
				break;
			assert_int_equal(iond_client_call(sock, &alloc, store, sizeof(store), &reply, &fd), 0);
			assert_int_equal(reply.error, 0);
			close(fd);
			/* a dma-buf is released at once (or was, by the sweep after the
			 * reply: -ENOENT); a memfd when the connection closes */
			free_id.id = reply.id;
			assert_int_equal(iond_client_call(sock, &free_id, store, sizeof(store), &reply, NULL), 0);
			if (reply.error && reply.error != -ENOENT)
				fprintf(stderr, "FREE %llu: %s\n", (unsigned long long)free_id.id, reply.reason);
			assert_true(reply.error == 0 || reply.error == -ENOENT ||
				    (reply.error == -EBUSY && !strcmp(svc.heap, "memfd")));
		}
	}
	close(sock);
	sock = svc_connect(&svc);
	assert_int_equal(iond_client_call(sock, &heaps, store, sizeof(store), &reply, NULL), 0);
	after = svc_fd_count_settled(&svc);
	fprintf(stderr, "after %d requests: fds %d -> %d, RSS %ld -> %ld KiB\n", rounds, fds,
		after, rss, svc_rss_kb(&svc));
	assert_int_equal(after, fds);
	/* A sanitizer's quarantine keeps what is freed: there, its leak check
	 * at the service's exit (svc_stop()) says instead. */
	if (!sanitized())
		assert_true(svc_rss_kb(&svc) - rss < 512);
	close(sock);
}
