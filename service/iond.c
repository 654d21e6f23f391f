// SPDX-License-Identifier: MIT
/*
 * iond: hands out DMA-BUF buffers by policy, so that a program without
 * access to the heaps' nodes gets the buffer its devices need, charged to
 * its uid (man iond(8), service/PROTOCOL.md).  One thread, one epoll
 * loop: one request per message, one message read from each ready client
 * in turn, replies never waited on (a client that does not read loses its
 * connection, not the service's time).
 */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/resource.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <ion/libion.h>

#include "iond-config.h"
#include "client.h"
#include "listen.h"
#include "serve.h"

#define LISTEN_MAX 8
#define SWEEP_MS 1000
#define SWEEP_PER_REQUEST 2 /* buffers looked at after each request */

struct iond {
	struct iond_server srv;
	int epoll, sigfd;
	int listen[LISTEN_MAX];
	int n_listen;
	struct iond_conn *conns;
	unsigned int n_conns, max_conns;
	const char *policy_path;
	int verbose;
};

static char tag_listen, tag_signal; /* epoll data of the non-client fds */

static void conn_close(struct iond *d, struct iond_conn *conn)
{
	epoll_ctl(d->epoll, EPOLL_CTL_DEL, conn->fd, NULL);
	close(conn->fd);
	iond_account_drop_owner(&d->srv.acct, conn);
	conn->user->connections--;
	d->n_conns--;
	if (conn->prev)
		conn->prev->next = conn->next;
	else
		d->conns = conn->next;
	if (conn->next)
		conn->next->prev = conn->prev;
	free(conn);
}

static void read_comm(struct iond_conn *conn)
{
	char path[40];
	ssize_t n;
	int fd;

	snprintf(conn->comm, sizeof(conn->comm), "?");
	snprintf(path, sizeof(path), "/proc/%d/comm", (int)conn->pid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return;
	n = read(fd, conn->comm, sizeof(conn->comm) - 1);
	close(fd);
	conn->comm[n > 0 ? n : 0] = '\0';
	conn->comm[strcspn(conn->comm, "\n")] = '\0';
	for (char *p = conn->comm; *p; p++)
		if (*p < 0x21 || *p > 0x7e || *p == ':')
			*p = '_';
}

/* Who is at the other end, from the kernel alone. */
static int peer(int fd, struct iond_conn *conn)
{
	struct ucred cred;
	socklen_t len = sizeof(cred);

	if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &len) < 0)
		return -errno;
	conn->pid = cred.pid;
	conn->uid = cred.uid;
	conn->gid = cred.gid;
	len = sizeof(conn->groups);
	conn->n_groups = getsockopt(fd, SOL_SOCKET, SO_PEERGROUPS, conn->groups, &len) == 0
				 ? (int)(len / sizeof(gid_t)) : 0;
	read_comm(conn);
	return 0;
}

/* Sends an answer without waiting; -EAGAIN means the client reads no more. */
static int answer(int fd, struct iond_answer *ans)
{
	static unsigned char buf[IOND_REPLY_MAX];
	union {
		struct cmsghdr align;
		char space[CMSG_SPACE(sizeof(int))];
	} ctl;
	struct iovec iov = { .iov_base = buf };
	struct msghdr msg = { .msg_iov = &iov, .msg_iovlen = 1 };
	int len = iond_reply_encode(&ans->reply, buf, sizeof(buf));

	if (len < 0)
		return len;
	iov.iov_len = (size_t)len;
	if (ans->fd >= 0) {
		struct cmsghdr *c;

		memset(&ctl, 0, sizeof(ctl));
		msg.msg_control = ctl.space;
		msg.msg_controllen = sizeof(ctl.space);
		c = CMSG_FIRSTHDR(&msg);
		c->cmsg_level = SOL_SOCKET;
		c->cmsg_type = SCM_RIGHTS;
		c->cmsg_len = CMSG_LEN(sizeof(int));
		memcpy(CMSG_DATA(c), &ans->fd, sizeof(int));
	}
	return sendmsg(fd, &msg, MSG_DONTWAIT | MSG_NOSIGNAL) < 0 ? -errno : 0;
}

static void refuse(int fd, uint16_t op, uint32_t seq, int err, const char *why)
{
	struct iond_answer *ans = calloc(1, sizeof(*ans));

	if (!ans)
		return;
	ans->fd = -1;
	ans->reply = (struct iond_reply){ .op = op, .seq = seq, .error = err, .reason = why,
					  .data = "" };
	answer(fd, ans);
	free(ans);
}

static void accept_one(struct iond *d, int lfd)
{
	struct iond_conn *conn;
	struct epoll_event ev = { .events = EPOLLIN };
	int fd = accept4(lfd, NULL, NULL, SOCK_CLOEXEC | SOCK_NONBLOCK);

	if (fd < 0)
		return;
	conn = calloc(1, sizeof(*conn));
	if (!conn || peer(fd, conn) < 0 || !(conn->user = iond_account_user(&d->srv.acct, conn->uid))) {
		free(conn);
		close(fd);
		return;
	}
	conn->fd = fd;
	iond_serve_resolve(&d->srv, conn);
	if (d->n_conns >= d->max_conns ||
	    conn->user->connections >= conn->user->limits.max[IOND_MAX_CONNECTIONS]) {
		char why[256];

		snprintf(why, sizeof(why), "too many connections: uid %u has %u, MaxConnections = %llu (%s)",
			 (unsigned int)conn->uid, conn->user->connections,
			 (unsigned long long)conn->user->limits.max[IOND_MAX_CONNECTIONS],
			 conn->user->limits.source[IOND_MAX_CONNECTIONS]);
		refuse(fd, 0, 0, -EUSERS, why);
		free(conn);
		close(fd);
		return;
	}
	ev.data.ptr = conn;
	if (epoll_ctl(d->epoll, EPOLL_CTL_ADD, fd, &ev) < 0) {
		free(conn);
		close(fd);
		return;
	}
	conn->user->connections++;
	d->n_conns++;
	conn->next = d->conns;
	if (d->conns)
		d->conns->prev = conn;
	d->conns = conn;
}

/* One message from conn, answered; false when the connection is done. */
static bool serve_one(struct iond *d, struct iond_conn *conn)
{
	static unsigned char buf[IOND_REQUEST_MAX + 1];
	static char store[IOND_REQUEST_MAX + 4];
	static struct iond_answer ans;
	union {
		struct cmsghdr align;
		char space[CMSG_SPACE(4 * sizeof(int))];
	} ctl;
	struct iovec iov = { .iov_base = buf, .iov_len = sizeof(buf) };
	struct msghdr msg = { .msg_iov = &iov, .msg_iovlen = 1, .msg_control = ctl.space,
			      .msg_controllen = sizeof(ctl.space) };
	struct iond_request req;
	uint32_t seq = 0;
	ssize_t n = recvmsg(conn->fd, &msg, MSG_DONTWAIT | MSG_CMSG_CLOEXEC);
	int r;

	if (n < 0)
		return errno == EAGAIN || errno == EINTR;
	if (n == 0)
		return false;
	if (iond_msg_take_fds(&msg, NULL) > 0 || (msg.msg_flags & MSG_CTRUNC)) {
		refuse(conn->fd, 0, 0, -EBADMSG, "a request carries no fds");
		return true;
	}
	if ((msg.msg_flags & MSG_TRUNC) || (size_t)n > IOND_REQUEST_MAX) {
		refuse(conn->fd, 0, 0, -EMSGSIZE, "message longer than the protocol's largest");
		return true;
	}
	r = iond_request_parse(buf, (size_t)n, store, sizeof(store), &req, &seq);
	if (r < 0) {
		refuse(conn->fd, 0, seq, r, r == -EPROTONOSUPPORT ? "protocol version not spoken"
					    : r == -EOPNOTSUPP ? "unknown request"
					    : r == -EMSGSIZE ? "a field is longer than its maximum"
					    : "malformed request");
		return true;
	}
	iond_serve(&d->srv, conn, &req, &ans);
	r = answer(conn->fd, &ans);
	iond_account_sweep_some(&d->srv.acct, SWEEP_PER_REQUEST);
	return r != -EAGAIN;
}

static long now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000L + ts.tv_nsec / 1000000L;
}

/* SIGHUP: the policy again, for every user and client at once.
 * SIGTERM and SIGINT end the loop. */
static bool on_signal(struct iond *d)
{
	struct signalfd_siginfo si;
	struct iond_policy *policy;

	if (read(d->sigfd, &si, sizeof(si)) != sizeof(si))
		return true;
	if (si.ssi_signo != SIGHUP)
		return false;
	if (iond_policy_load(d->policy_path, &policy) < 0)
		return true;
	/* every user's limits point into the old policy: resolve them all
	 * again (by uid alone, then each client with its groups) first */
	for (size_t i = 0; i < d->srv.acct.n_users; i++) {
		struct iond_user *u = d->srv.acct.users[i];

		iond_policy_resolve(policy, u->uid, (gid_t)-1, NULL, 0, &u->limits);
	}
	iond_policy_free(d->srv.policy);
	d->srv.policy = policy;
	for (struct iond_conn *c = d->conns; c; c = c->next)
		iond_serve_resolve(&d->srv, c);
	return true;
}

static int loop(struct iond *d)
{
	struct epoll_event evs[32];
	long last_sweep = now_ms();

	for (;;) {
		int n = epoll_wait(d->epoll, evs, 32, SWEEP_MS);

		if (n < 0 && errno != EINTR)
			return -errno;
		for (int i = 0; i < n; i++) {
			void *p = evs[i].data.ptr;

			if (p == &tag_signal) {
				if (!on_signal(d))
					return 0;
			} else if ((char *)p >= &tag_listen && (char *)p < &tag_listen + 1) {
				for (int l = 0; l < d->n_listen; l++)
					accept_one(d, d->listen[l]);
			} else if (!serve_one(d, p) || (evs[i].events & (EPOLLHUP | EPOLLERR) &&
							 !(evs[i].events & EPOLLIN))) {
				conn_close(d, p);
			}
		}
		if (now_ms() - last_sweep >= SWEEP_MS) {
			iond_account_sweep(&d->srv.acct, (uid_t)-1);
			last_sweep = now_ms();
		}
	}
}

static void usage(FILE *f)
{
	fprintf(f, "Usage: iond [--socket PATH] [--policy DIRS] [--foreground] [--max-connections N]\n"
		   "Hands out DMA-BUF buffers by policy over %s (man iond(8)).\n"
		   "  --socket PATH         listen there (default: systemd's socket, else the above)\n"
		   "  --policy DIRS         iond.d folders, ':'-separated, highest first\n"
		   "                        (default: %s)\n"
		   "  --foreground          do not detach (systemd and tests)\n"
		   "  --max-connections N   clients at once, all users together (default 1024)\n"
		   "  --check-policy        report the policy's problems and exit (1 if any)\n",
		IOND_SOCKET_PATH, IOND_POLICY_PATH);
}

static int setup(struct iond *d, const char *socket_path)
{
	struct epoll_event ev = { .events = EPOLLIN };
	struct rlimit rl;
	sigset_t mask;
	int r;

	/* The signals first: once it listens, a client may connect, and
	 * whoever started the service may stop it, at once.  A SIGTERM before
	 * this would kill it by the signal, not end it with exit 0. */
	sigemptyset(&mask);
	sigaddset(&mask, SIGTERM);
	sigaddset(&mask, SIGINT);
	sigaddset(&mask, SIGHUP);
	sigprocmask(SIG_BLOCK, &mask, NULL);
	signal(SIGPIPE, SIG_IGN);
	d->sigfd = signalfd(-1, &mask, SFD_CLOEXEC);
	if (d->sigfd < 0)
		return -errno;
	/* one fd per buffer handed out: as many as the hard limit allows */
	if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < rl.rlim_max) {
		rl.rlim_cur = rl.rlim_max;
		setrlimit(RLIMIT_NOFILE, &rl);
	}
	r = socket_path ? 0 : iond_listen_activated(d->listen, LISTEN_MAX);
	if (r < 0)
		return r;
	d->n_listen = r;
	if (d->n_listen == 0) {
		r = iond_listen_path(socket_path ? socket_path : IOND_SOCKET_PATH);
		if (r < 0)
			return r;
		d->listen[d->n_listen++] = r;
	}
	d->epoll = epoll_create1(EPOLL_CLOEXEC);
	if (d->epoll < 0)
		return -errno;
	ev.data.ptr = &tag_signal;
	epoll_ctl(d->epoll, EPOLL_CTL_ADD, d->sigfd, &ev);
	for (int i = 0; i < d->n_listen; i++) {
		fcntl(d->listen[i], F_SETFL, fcntl(d->listen[i], F_GETFL) | O_NONBLOCK);
		ev.data.ptr = &tag_listen;
		if (epoll_ctl(d->epoll, EPOLL_CTL_ADD, d->listen[i], &ev) < 0)
			return -errno;
	}
	return 0;
}

int main(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "socket", required_argument, NULL, 's' },
		{ "policy", required_argument, NULL, 'p' },
		{ "foreground", no_argument, NULL, 'f' },
		{ "max-connections", required_argument, NULL, 'm' },
		{ "check-policy", no_argument, NULL, 'c' },
		{ "help", no_argument, NULL, 'h' },
		{ 0 }
	};
	struct iond d = { .max_conns = 1024, .policy_path = IOND_POLICY_PATH, .sigfd = -1 };
	const char *socket_path = NULL;
	bool foreground = false, check = false;
	int c, r;

	while ((c = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
		switch (c) {
		case 's': socket_path = optarg; break;
		case 'p': d.policy_path = optarg; break;
		case 'f': foreground = true; break;
		case 'c': check = true; break;
		case 'm': d.max_conns = (unsigned int)strtoul(optarg, NULL, 10); break;
		case 'h': usage(stdout); return 0;
		default: usage(stderr); return 2;
		}
	}
	if (optind < argc || d.max_conns == 0) {
		usage(stderr);
		return 2;
	}
	if (iond_policy_load(d.policy_path, &d.srv.policy) < 0) {
		fprintf(stderr, "iond: out of memory reading the policy\n");
		return 1;
	}
	if (check) {
		r = iond_policy_error_count(d.srv.policy);
		iond_policy_free(d.srv.policy);
		return r ? 1 : 0;
	}
	d.srv.own_uid = geteuid();
	r = ion_ctx_new(NULL, &d.srv.ctx);
	if (r == 0) /* the service never asks itself */
		r = ion_ctx_set_service(d.srv.ctx, "");
	if (r == 0)
		r = ion_ctx_get_heap_count(d.srv.ctx); /* discovery now, not on the first client */
	if (r >= 0)
		r = iond_fdinfo_open();
	if (r >= 0)
		r = setup(&d, socket_path);
	if (r < 0) {
		fprintf(stderr, "iond: %s\n", strerror(-r));
		return 1;
	}
	if (!foreground && d.n_listen > 0 && !getenv("INVOCATION_ID") && daemon(0, 0) < 0) {
		fprintf(stderr, "iond: daemon: %s\n", strerror(errno));
		return 1;
	}
	r = loop(&d);
	while (d.conns)
		conn_close(&d, d.conns);
	iond_account_fini(&d.srv.acct);
	iond_policy_free(d.srv.policy);
	ion_ctx_unref(d.srv.ctx);
	return r < 0 ? 1 : 0;
}
