// SPDX-License-Identifier: MIT
/*
 * iond, the real binary, on a socket and a policy folder of the test's
 * own: allocation, quotas refused with their numbers, heaps the policy
 * forbids refused with the rule's file:line, accounting released when a
 * client dies (never before), other users' buffers out of reach, the
 * service restarted under a client, and hostile clients (garbage,
 * truncated and oversized messages, 250 fds, a size of 2^63, a constraint
 * text of 64 KiB + 1, a client that never reads, 1,000 connections from
 * one uid), after which the service's fd table and memory have not grown
 * over 100,000 requests.  As root, clients run as other uids (65534,
 * 65533) in forked children.  In the VM (test-service-vm.c) the heap
 * nodes are made the service user's alone.
 *
 * Usage: test-service [IOND]   (default: the build's iond)
 */
#include <fcntl.h>
#include <time.h>

#include "service-test.h"

struct svc svc;

static int alloc_on(int sock, uint64_t size, const char *heap, int *fd,
		    struct iond_reply *reply)
{
	struct iond_request req = { .op = IOND_OP_ALLOC, .seq = 7, .size = size,
				    .heap = heap };

	return svc_ask(sock, &req, reply, fd);
}

/* Charged bytes of the caller, polled for up to 3 s until they are want. */
static long long charged_becomes(int sock, long long want)
{
	long long got = -1;

	for (int i = 0; i < 60 && (got = svc_charged(sock)) != want; i++)
		usleep(50000);
	return got;
}

static void test_alloc(void **state)
{
	struct iond_reply reply;
	struct fd_table before;
	size_t size;
	int sock, fd = -1;

	fd_table_read(&before);
	sock = svc_connect(&svc);
	assert_int_equal(alloc_on(sock, 1 << 20, svc.heap, &fd, &reply), 0);
	assert_true(fd >= 0 && fd_is_cloexec(fd));
	assert_int_equal(ion_fd_get_size(fd, &size), 0);
	assert_int_equal(size, 1 << 20);
	assert_int_equal(reply.size, 1 << 20);
	assert_non_null(strstr(reply.data, svc.heap));
	assert_int_equal(svc_charged(sock), 1 << 20);
	close(fd);
	close(sock);
	sock = svc_connect(&svc);
	/* closed and its connection gone: nothing is charged any more */
	assert_int_equal(charged_becomes(sock, 0), 0);
	close(sock);
	fd_table_assert_same(&before);
}

/* In a child as uid: the quota is refused past 2 MiB with the numbers and
 * the rule's file:line. */
static int child_quota(void *arg)
{
	struct iond_reply reply;
	int sock = svc_connect(&svc), fd[3] = { -1, -1, -1 };

	(void)arg;
	CHECK(alloc_on(sock, 1 << 20, svc.heap, &fd[0], &reply) == 0);
	CHECK(alloc_on(sock, 1 << 20, svc.heap, &fd[1], &reply) == 0);
	CHECK(alloc_on(sock, 1 << 20, svc.heap, &fd[2], &reply) == -EDQUOT);
	CHECK(fd[2] == -1);
	CHECK(strstr(reply.reason, "uid 65534 has 2097152 bytes, asks 1048576 more"));
	CHECK(strstr(reply.reason, svc.quota_rule));
	/* 2^63: refused by the quota, with the numbers, not attempted */
	CHECK(alloc_on(sock, 1ULL << 63, svc.heap, &fd[2], &reply) == -EDQUOT);
	CHECK(strstr(reply.reason, "asks 9223372036854775808 more"));
	return 0;
}

static void test_quota(void **state)
{
	if (!svc.root)
		skip();
	assert_int_equal(svc_run_as(65534, 65534, child_quota, NULL), 0);
}

static int child_forbidden(void *arg)
{
	struct iond_reply reply;
	int sock = svc_connect(&svc), fd = -1;

	(void)arg;
	CHECK(alloc_on(sock, 4096, svc.heap, &fd, &reply) == -EACCES);
	CHECK(fd == -1);
	CHECK(strstr(reply.reason, svc.heaps_rule));
	return 0;
}

static void test_forbidden_heap(void **state)
{
	if (!svc.root)
		skip();
	assert_int_equal(svc_run_as(65533, 65533, child_forbidden, NULL), 0);
}

/* Allocates 1 MiB and dies holding it. */
static int child_die_holding(void *arg)
{
	struct iond_reply reply;
	int sock = svc_connect(&svc), fd = -1;

	(void)arg;
	CHECK(alloc_on(sock, 1 << 20, svc.heap, &fd, &reply) == 0);
	kill(getpid(), SIGKILL);
	return 1;
}

static int child_charged_zero(void *arg)
{
	int sock = svc_connect(&svc);

	(void)arg;
	CHECK(charged_becomes(sock, 0) == 0);
	return 0;
}

static void test_death_releases(void **state)
{
	if (!svc.root)
		skip();
	assert_int_not_equal(svc_run_as(65534, 65534, child_die_holding, NULL), 0);
	assert_int_equal(svc_run_as(65534, 65534, child_charged_zero, NULL), 0);
}

/* Another uid's buffer id: never freed, never seen. */
static int child_steal(void *arg)
{
	struct iond_request req = { .op = IOND_OP_FREE, .seq = 9, .id = *(uint64_t *)arg };
	struct iond_reply reply;
	int sock = svc_connect(&svc);

	CHECK(svc_ask(sock, &req, &reply, NULL) == -ENOENT);
	req.op = IOND_OP_USAGE;
	req.flags = IOND_USAGE_ALL;
	CHECK(svc_ask(sock, &req, &reply, NULL) == -EPERM);
	return 0;
}

static void test_other_users_buffer(void **state)
{
	struct iond_reply reply;
	int sock, fd = -1;
	uint64_t id;

	if (!svc.root)
		skip();
	sock = svc_connect(&svc);
	assert_int_equal(alloc_on(sock, 1 << 20, svc.heap, &fd, &reply), 0);
	id = reply.id;
	assert_int_equal(svc_run_as(65534, 65534, child_steal, &id), 0);
	assert_int_equal(svc_charged(sock), 1 << 20);
	close(fd);
	close(sock);
}

/* Socket activation, as systemd does it: the listening socket as fd 3,
 * LISTEN_PID and LISTEN_FDS; iond takes it and makes no socket of its own. */
static void test_socket_activation(void **state)
{
	struct sockaddr_un addr = { .sun_family = AF_UNIX };
	struct iond_request req = { .op = IOND_OP_HEAPS, .seq = 8 };
	struct iond_reply reply;
	int lfd, sock = -1, status;
	pid_t pid;

	snprintf(addr.sun_path, sizeof(addr.sun_path), "%s/activated.sock", svc.dir);
	lfd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
	assert_true(lfd >= 0);
	assert_int_equal(bind(lfd, (struct sockaddr *)&addr, sizeof(addr)), 0);
	assert_int_equal(listen(lfd, 8), 0);
	pid = fork();
	if (pid == 0) {
		char n[16];

		/* fd 3, inherited (dup2 onto itself keeps close-on-exec) */
		if ((lfd != 3 && dup2(lfd, 3) != 3) || fcntl(3, F_SETFD, 0) < 0)
			_exit(126);
		snprintf(n, sizeof(n), "%d", (int)getpid());
		setenv("LISTEN_PID", n, 1);
		setenv("LISTEN_FDS", "1", 1);
		execl(svc.iond, "iond", "--policy", svc.policy, "--foreground", (char *)NULL);
		_exit(127);
	}
	close(lfd);
	for (int i = 0; i < 200 && sock < 0; i++) {
		sock = iond_client_connect(addr.sun_path);
		if (sock >= 0 && svc_ask(sock, &req, &reply, NULL) != 0) {
			close(sock);
			sock = -1;
		}
		if (sock < 0)
			usleep(25000);
	}
	assert_true(sock >= 0);
	assert_non_null(strstr(reply.data, svc.heap));
	close(sock);
	kill(pid, SIGTERM);
	assert_int_equal(waitpid(pid, &status, 0), pid);
	assert_true(WIFEXITED(status) && WEXITSTATUS(status) == 0);
}

/* SIGTERM the moment the service listens, as a stop right after a start
 * sends it: the service ends cleanly (exit 0) every time.  Connecting in
 * a tight loop reaches it between its listen() and its signal setup,
 * where a default SIGTERM would kill it (status 0xf). */
static void test_term_once_listening(void **state)
{
	int rounds = getenv("LIBION_IN_VM") ? 20 : 200, status, fd;
	char path[sizeof(svc.socket)];
	struct timespec start, now;
	pid_t pid;

	snprintf(path, sizeof(path), "%s/term.sock", svc.dir);
	for (int i = 0; i < rounds; i++) {
		pid = svc_spawn(&svc, path);
		assert_true(pid >= 0);
		clock_gettime(CLOCK_MONOTONIC, &start);
		while ((fd = iond_client_connect(path)) < 0) {
			assert_int_equal(waitpid(pid, &status, WNOHANG), 0);
			clock_gettime(CLOCK_MONOTONIC, &now);
			assert_true(now.tv_sec - start.tv_sec < 60);
		}
		kill(pid, SIGTERM);
		close(fd);
		assert_int_equal(waitpid(pid, &status, 0), pid);
		if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
			fail_msg("round %d: iond ended with status 0x%x, not exit 0", i, status);
	}
}

/* SIGHUP: a new policy, for a client connected before it too. */
static void test_reload(void **state)
{
	struct iond_request req = { .op = IOND_OP_USAGE, .seq = 3 };
	struct iond_reply reply;
	char want[300], extra[64];
	int sock = svc_connect(&svc);

	assert_int_equal(svc_ask(sock, &req, &reply, NULL), 0);
	assert_non_null(strstr(reply.data, "key=MaxBytes max=67108864 source="));
	snprintf(extra, sizeof(extra), "[User %u]\nMaxBytes = 3M\n", (unsigned int)getuid());
	svc_reload(&svc, extra);
	assert_int_equal(svc_ask(sock, &req, &reply, NULL), 0);
	snprintf(want, sizeof(want), "key=MaxBytes max=3145728 source=%s/20-test.conf:12",
		 svc.policy);
	assert_non_null(strstr(reply.data, want));
	svc_reload(&svc, NULL);
	assert_int_equal(svc_ask(sock, &req, &reply, NULL), 0);
	assert_non_null(strstr(reply.data, "key=MaxBytes max=67108864 source="));
	close(sock);
}

/* Kills the service under a connected client: the next call fails with
 * -ECONNRESET (no hang), and the buffer handed out stays good. */
static void test_restart(void **state)
{
	struct iond_reply reply;
	int sock = svc_connect(&svc), fd = -1;
	size_t size;
	char *p;

	assert_int_equal(alloc_on(sock, 1 << 20, svc.heap, &fd, &reply), 0);
	assert_int_equal(svc_stop(&svc), 0);
	assert_int_equal(svc_charged(sock), -1);
	assert_int_equal(alloc_on(sock, 4096, svc.heap, NULL, &reply), -ECONNRESET);
	assert_int_equal(ion_fd_get_size(fd, &size), 0);
	p = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	assert_true(p != MAP_FAILED);
	p[size - 1] = 1;
	munmap(p, size);
	close(fd);
	close(sock);
	assert_int_equal(svc_start(&svc), 0);
}

int main(int argc, char **argv)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_alloc),
		cmocka_unit_test(test_quota),
		cmocka_unit_test(test_forbidden_heap),
		cmocka_unit_test(test_death_releases),
		cmocka_unit_test(test_other_users_buffer),
		cmocka_unit_test(test_hostile_garbage),
		cmocka_unit_test(test_hostile_fds),
		cmocka_unit_test(test_hostile_oversized),
		cmocka_unit_test(test_hostile_never_reads),
		cmocka_unit_test(test_hostile_connections),
		cmocka_unit_test(test_no_growth),
		cmocka_unit_test(test_reload),
		cmocka_unit_test(test_socket_activation),
		cmocka_unit_test(test_term_once_listening),
		cmocka_unit_test(test_restart),
	};
	int r;

	if (svc_init(&svc, argc > 1 ? argv[1] : TEST_IOND_PATH) < 0)
		return 77;
	r = cmocka_run_group_tests(tests, NULL, NULL);
	if (svc_fini(&svc) < 0)
		r = r ? r : 1;
	return r;
}
