// SPDX-License-Identifier: MIT
/*
 * iond as it is meant to run, in the VM: the heap nodes belong to the
 * service's own user (uid and gid 990, mode 0600), iond runs as that user,
 * and a client of another unprivileged uid (1000), which cannot open any
 * heap, gets a CMA buffer solved for {video0, card1} through the service,
 * named after it, and is refused past its quota with -EDQUOT and the
 * numbers; a buffer it passed on stays charged to it until the other
 * process closes it; 100 buffers of a client killed holding them are
 * released once its fds are gone; the library's own calls go through the
 * service unchanged (ion_ctx_set_service()); and, given the sample, the
 * user runs examples/camera-display unchanged (ION_SERVICE names the
 * socket): vivid captures into a buffer only the service could give it
 * (dma-contig takes nothing but contiguous memory, and no heap node is
 * the user's) and vkms shows it.  Exit 77 without a CMA heap (the host).
 *
 * Usage: test-service-vm IOND [CAMERA_DISPLAY]
 */
#include <dirent.h>
#include <fcntl.h>
#include <glob.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>

#include "service-test.h"

#define SERVICE_ID 990
#define CLIENT_ID 1000
#define CMA_NODE "/dev/dma_heap/reserved"

struct svc svc;

struct node {
	char path[64];
	struct stat st;
};
static struct node nodes[32];
static int n_nodes;

/* Every allocator node, the service user's alone (and back at the end). */
static void nodes_take(void)
{
	static const char *const patterns[] = { "/dev/dma_heap/*", "/dev/udmabuf", "/dev/ion",
						"/dev/dri/card*" };
	glob_t g;

	for (size_t p = 0; p < sizeof(patterns) / sizeof(patterns[0]); p++) {
		if (glob(patterns[p], 0, NULL, &g) != 0)
			continue;
		for (size_t i = 0; i < g.gl_pathc && n_nodes < 32; i++) {
			struct node *n = &nodes[n_nodes];

			if (stat(g.gl_pathv[i], &n->st) < 0)
				continue;
			snprintf(n->path, sizeof(n->path), "%s", g.gl_pathv[i]);
			if (chown(n->path, SERVICE_ID, SERVICE_ID) == 0 && chmod(n->path, 0600) == 0)
				n_nodes++;
		}
		globfree(&g);
	}
}

static void nodes_give_back(void)
{
	for (int i = 0; i < n_nodes; i++) {
		chown(nodes[i].path, nodes[i].st.st_uid, nodes[i].st.st_gid);
		chmod(nodes[i].path, nodes[i].st.st_mode & 07777);
	}
}

/* A config for {video0, card1}, the devices of ctx. */
static struct ion_alloc_config *for_camera_display(struct ion_ctx *ctx)
{
	static const char *const names[] = { "video0", "card1" };
	struct ion_alloc_config *config;
	struct ion_device *dev;

	CHECK(ion_alloc_config_new(&config) == 0 && ion_alloc_config_set_size(config, 1 << 20) == 0);
	for (int i = 0; i < 2; i++) {
		CHECK(ion_ctx_get_device(ctx, names[i], &dev) == 0);
		CHECK(ion_alloc_config_add_device(config, dev) == 0);
		ion_device_unref(dev);
	}
	return config;
}

/* The ionc1 text of {video0, card1}, as the client's own library says. */
static char *constraints(void)
{
	struct ion_ctx *ctx;
	struct ion_alloc_config *config;
	char *text = NULL;

	CHECK(ion_ctx_new(NULL, &ctx) == 0);
	config = for_camera_display(ctx);
	CHECK(ion_alloc_config_serialize(config, &text) == 0);
	ion_alloc_config_free(config);
	ion_ctx_unref(ctx);
	return text;
}

/* Whether fd's dma-buf is named "PID:..." after this process. */
static bool named_after_me(int fd)
{
	char path[64], text[1024], want[32];
	ssize_t n;
	int f;

	snprintf(path, sizeof(path), "/proc/self/fdinfo/%d", fd);
	f = open(path, O_RDONLY | O_CLOEXEC);
	if (f < 0) {
		fprintf(stderr, "%s: %s\n", path, strerror(errno));
		return false;
	}
	n = read(f, text, sizeof(text) - 1);
	close(f);
	text[n > 0 ? n : 0] = '\0';
	snprintf(want, sizeof(want), "name:\t%d:", (int)getpid());
	if (strstr(text, want))
		return true;
	fprintf(stderr, "fd %d is not named \"%s...\": its fdinfo:\n%s", fd, want + 6, text);
	return false;
}

static int client_cma(void *arg)
{
	struct iond_request req = { .op = IOND_OP_ALLOC, .seq = 1, .size = 1 << 20 };
	struct iond_reply reply;
	int sock, fds[5] = { -1, -1, -1, -1, -1 };
	uint64_t first;
	size_t size;
	char *p;

	(void)arg;
	CHECK(open(CMA_NODE, O_RDWR | O_CLOEXEC) < 0 && errno == EACCES);
	req.constraints = constraints();
	sock = svc_connect(&svc);
	CHECK(svc_ask(sock, &req, &reply, &fds[0]) == 0);
	fprintf(stderr, "uid %u, {video0, card1}: buffer %llu, %s", (unsigned int)getuid(),
		(unsigned long long)reply.id, reply.data);
	CHECK(strstr(reply.data, "heap=reserved class=contiguous"));
	first = reply.id;
	CHECK(ion_fd_get_size(fds[0], &size) == 0 && size == 1 << 20);
	CHECK(named_after_me(fds[0]));
	p = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED, fds[0], 0);
	CHECK(p != MAP_FAILED);
	memset(p, 0x5a, size);
	munmap(p, size);
	for (int i = 1; i < 4; i++)
		CHECK(svc_ask(sock, &req, &reply, &fds[i]) == 0);
	CHECK(svc_ask(sock, &req, &reply, &fds[4]) == -EDQUOT && fds[4] == -1);
	fprintf(stderr, "the fifth: %s\n", reply.reason);
	CHECK(strstr(reply.reason, "uid 1000 has 4194304 contiguous bytes, asks 1048576 more"));
	CHECK(strstr(reply.reason, "MaxContiguousBytes = 4194304 ("));
	CHECK(strstr(reply.reason, "20-test.conf:10)"));
	/* closed and freed: room again */
	close(fds[0]);
	req.op = IOND_OP_FREE;
	req.id = first;
	CHECK(svc_ask(sock, &req, &reply, NULL) == 0);
	req.op = IOND_OP_ALLOC;
	CHECK(svc_ask(sock, &req, &reply, &fds[0]) == 0);
	CHECK(svc_charged(sock) == 4 << 20);
	return 0;
}

/* Allocates 1 MiB, sends it to the parent over arg's socket, exits. */
static int client_pass_on(void *arg)
{
	struct iond_request req = { .op = IOND_OP_ALLOC, .seq = 1, .size = 1 << 20,
				    .heap = "system" };
	struct iond_reply reply;
	int sock = svc_connect(&svc), fd = -1, peer = *(int *)arg;
	union {
		struct cmsghdr align;
		char space[CMSG_SPACE(sizeof(int))];
	} ctl;
	char byte = 'b';
	struct iovec iov = { .iov_base = &byte, .iov_len = 1 };
	struct msghdr mh = { .msg_iov = &iov, .msg_iovlen = 1, .msg_control = ctl.space,
			     .msg_controllen = sizeof(ctl.space) };
	struct cmsghdr *c = CMSG_FIRSTHDR(&mh);

	CHECK(svc_ask(sock, &req, &reply, &fd) == 0);
	c->cmsg_level = SOL_SOCKET;
	c->cmsg_type = SCM_RIGHTS;
	c->cmsg_len = CMSG_LEN(sizeof(int));
	memcpy(CMSG_DATA(c), &fd, sizeof(int));
	CHECK(sendmsg(peer, &mh, 0) == 1);
	return 0;
}

/* The caller's charge is want, now and after the service's sweeps. */
static int client_charged(void *arg)
{
	long long want = *(long long *)arg, got = -1;
	int sock = svc_connect(&svc);

	for (int i = 0; i < 60 && (got = svc_charged(sock)) != want; i++)
		usleep(50000);
	if (got == want && want != 0) {
		usleep(1500000); /* past a sweep: still charged */
		got = svc_charged(sock);
	}
	if (got != want)
		fprintf(stderr, "charged %lld bytes, not %lld\n", got, want);
	return got == want ? 0 : 1;
}

/* 100 buffers held, then SIGKILL. */
static int client_hold_100(void *arg)
{
	struct iond_request req = { .op = IOND_OP_ALLOC, .seq = 1, .size = 4096,
				    .heap = "system" };
	struct iond_reply reply;
	int sock = svc_connect(&svc), fd;

	(void)arg;
	for (int i = 0; i < 100; i++)
		CHECK(svc_ask(sock, &req, &reply, &fd) == 0);
	CHECK(svc_charged(sock) == 100 * 4096);
	kill(getpid(), SIGKILL);
	return 1;
}

/* The library's own calls, unchanged, through the service: a heap by name,
 * and a request for {video0, card1}; off, the node's own refusal. */
static int client_library(void *arg)
{
	struct ion_ctx *ctx;
	struct ion_alloc_config *config;
	const struct ion_heap *heap = NULL;
	int fd = -1;

	(void)arg;
	CHECK(ion_ctx_new(NULL, &ctx) == 0);
	CHECK(ion_ctx_set_service(ctx, "") == 0);
	CHECK(ion_ctx_alloc(ctx, "reserved", 1 << 20, 0, &fd) == -EACCES && fd == -1);
	CHECK(ion_ctx_set_service(ctx, svc.socket) == 0);
	CHECK(ion_ctx_alloc(ctx, "reserved", 1 << 20, 0, &fd) == 0);
	CHECK(named_after_me(fd));
	close(fd);
	config = for_camera_display(ctx);
	CHECK(ion_ctx_allocate(ctx, config, &fd, &heap) == 0);
	CHECK(heap && strcmp(ion_heap_get_name(heap), "reserved") == 0);
	fprintf(stderr, "uid %u, ion_ctx_allocate({video0, card1}) through iond: %s\n",
		(unsigned int)getuid(), ion_heap_get_name(heap));
	close(fd);
	/* past the quota: the service's -EDQUOT, not the node's -EACCES */
	CHECK(ion_alloc_config_set_size(config, 5 << 20) == 0);
	CHECK(ion_ctx_allocate(ctx, config, &fd, &heap) == -EDQUOT);
	ion_alloc_config_free(config);
	ion_ctx_unref(ctx);
	return 0;
}

static const char *camera_display;

/* The sample as the user runs it, the camera's and display's nodes the
 * user's (as a logind seat gives them), the heaps the service's alone. */
static int client_camera_display(void *arg)
{
	(void)arg;
	CHECK(access(CMA_NODE, R_OK) != 0 && errno == EACCES);
	setenv("ION_SERVICE", svc.socket, 1);
	execl(camera_display, "camera-display", "video0", "card1", (char *)NULL);
	fprintf(stderr, "%s: %s\n", camera_display, strerror(errno));
	return 127;
}

static void test_camera_display_as_user(void **state)
{
	static const char *const nodes_of_user[] = { "/dev/video0", "/dev/dri/card1" };
	struct stat st[2];
	long long zero = 0;

	(void)state;
	if (!camera_display || access(camera_display, X_OK) != 0)
		skip(); /* 5.10: its vkms frees imported pages, the sample does not run */
	for (int i = 0; i < 2; i++) {
		assert_int_equal(stat(nodes_of_user[i], &st[i]), 0);
		assert_int_equal(chown(nodes_of_user[i], CLIENT_ID, CLIENT_ID), 0);
		assert_int_equal(chmod(nodes_of_user[i], 0600), 0);
	}
	assert_int_equal(svc_run_as(CLIENT_ID, CLIENT_ID, client_camera_display, NULL), 0);
	for (int i = 0; i < 2; i++) {
		assert_int_equal(chown(nodes_of_user[i], st[i].st_uid, st[i].st_gid), 0);
		assert_int_equal(chmod(nodes_of_user[i], st[i].st_mode & 07777), 0);
	}
	/* The frame was the user's, charged to it, and released with it. */
	assert_int_equal(svc_run_as(CLIENT_ID, CLIENT_ID, client_charged, &zero), 0);
}

static void test_library_through_service(void **state)
{
	assert_int_equal(svc_run_as(CLIENT_ID, CLIENT_ID, client_library, NULL), 0);
}

static void test_cma_for_devices(void **state)
{
	long long zero = 0;

	assert_int_equal(svc_run_as(CLIENT_ID, CLIENT_ID, client_cma, NULL), 0);
	/* its connection gone, its fds closed at exit: nothing charged */
	assert_int_equal(svc_run_as(CLIENT_ID, CLIENT_ID, client_charged, &zero), 0);
}

static void test_passed_on_stays_charged(void **state)
{
	long long one = 1 << 20, zero = 0;
	int sp[2], fd = -1;
	char byte;
	union {
		struct cmsghdr align;
		char space[CMSG_SPACE(sizeof(int))];
	} ctl;
	struct iovec iov = { .iov_base = &byte, .iov_len = 1 };
	struct msghdr mh = { .msg_iov = &iov, .msg_iovlen = 1, .msg_control = ctl.space,
			     .msg_controllen = sizeof(ctl.space) };

	assert_int_equal(socketpair(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0, sp), 0);
	assert_int_equal(svc_run_as(CLIENT_ID, CLIENT_ID, client_pass_on, &sp[1]), 0);
	assert_int_equal(recvmsg(sp[0], &mh, MSG_CMSG_CLOEXEC), 1);
	memcpy(&fd, CMSG_DATA(CMSG_FIRSTHDR(&mh)), sizeof(int));
	assert_true(fd >= 0);
	/* the client is gone; the buffer lives here, charged to the client */
	assert_int_equal(svc_run_as(CLIENT_ID, CLIENT_ID, client_charged, &one), 0);
	close(fd);
	assert_int_equal(svc_run_as(CLIENT_ID, CLIENT_ID, client_charged, &zero), 0);
	close(sp[0]);
	close(sp[1]);
}

static void test_killed_holding_100(void **state)
{
	long long zero = 0;

	assert_int_equal(svc_run_as(CLIENT_ID, CLIENT_ID, client_hold_100, NULL), 128 + SIGKILL);
	assert_int_equal(svc_run_as(CLIENT_ID, CLIENT_ID, client_charged, &zero), 0);
}

int main(int argc, char **argv)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_cma_for_devices),
		cmocka_unit_test(test_library_through_service),
		cmocka_unit_test(test_passed_on_stays_charged),
		cmocka_unit_test(test_killed_holding_100),
		cmocka_unit_test(test_camera_display_as_user),
	};
	int r;

	if (argc == 3)
		camera_display = argv[2];
	if (argc < 2 || argc > 3 || access(CMA_NODE, F_OK) != 0 || geteuid() != 0) {
		fprintf(stderr, "test-service-vm: needs root, %s and IOND (the VM)\n", CMA_NODE);
		return 77;
	}
	nodes_take();
	svc.run_uid = SERVICE_ID;
	svc.run_gid = SERVICE_ID;
	if (svc_init(&svc, argv[1]) < 0) {
		nodes_give_back();
		return 1;
	}
	r = cmocka_run_group_tests(tests, NULL, NULL);
	if (svc_fini(&svc) < 0)
		r = r ? r : 1;
	nodes_give_back();
	return r;
}
