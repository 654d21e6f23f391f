// SPDX-License-Identifier: MIT
/* The service under test: its folder and policy, started and stopped;
 * clients as other uids; what it holds. */
#include <dirent.h>
#include <fcntl.h>
#include <grp.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>

#include "service-test.h"

/* Line numbers matter: the tests look for them in refusals. */
static const char policy_text[] =
	"# test-service's policy\n"                 /* 1 */
	"[Default]\n"                               /* 2 */
	"MaxBytes = 64M\n"                          /* 3 */
	"MaxConnections = 16\n"                     /* 4 */
	"[User 65534]\n"                            /* 5 */
	"MaxBytes = 2M\n"                           /* 6 */
	"[User 65533]\n"                            /* 7 */
	"Heaps = no-such-heap\n"                    /* 8 */
	"[User 1000]\n"                             /* 9: test-service-vm's client */
	"MaxContiguousBytes = 4M\n";                /* 10 */

/* The policy file, with extra lines after the test's own. */
static int policy_put(const struct svc *s, const char *extra)
{
	char path[160];
	FILE *f;

	snprintf(path, sizeof(path), "%s/20-test.conf", s->policy);
	f = fopen(path, "we");
	if (!f)
		return -1;
	fputs(policy_text, f);
	fputs(extra ? extra : "", f);
	fclose(f);
	return 0;
}

void svc_reload(const struct svc *s, const char *extra)
{
	if (policy_put(s, extra) < 0 || kill(s->pid, SIGHUP) < 0)
		abort();
	usleep(200000);
}

static int write_policy(struct svc *s)
{
	char path[160];

	snprintf(s->policy, sizeof(s->policy), "%s/pol", s->dir);
	if (mkdir(s->policy, 0755) < 0 || policy_put(s, NULL) < 0)
		return -1;
	snprintf(path, sizeof(path), "%s/20-test.conf", s->policy);
	snprintf(s->quota_rule, sizeof(s->quota_rule), "MaxBytes = 2097152 (%s:6)", path);
	snprintf(s->heaps_rule, sizeof(s->heaps_rule), "Heaps = no-such-heap (%s:8)", path);
	return 0;
}

int svc_init(struct svc *s, const char *iond)
{
	char **names = test_heap_names();

	s->iond = iond;
	s->root = geteuid() == 0;
	if (!names || !names[0]) {
		fprintf(stderr, "test-service: no heap here\n");
		test_heap_names_free(names);
		return -1;
	}
	s->heap = strdup(names[0]);
	test_heap_names_free(names);
	snprintf(s->dir, sizeof(s->dir), "/tmp/iond-test-XXXXXX");
	if (!mkdtemp(s->dir) || chmod(s->dir, 0755) < 0 || write_policy(s) < 0) {
		perror("test-service: the test's folder");
		return -1;
	}
	if (s->run_uid)
		chown(s->dir, s->run_uid, s->run_gid);
	snprintf(s->socket, sizeof(s->socket), "%s/iond.sock", s->dir);
	if (svc_start(s) < 0) {
		test_remove_tree(s->dir);
		return -1;
	}
	return 0;
}

int svc_fini(struct svc *s)
{
	int r = svc_stop(s);

	test_remove_tree(s->dir);
	return r;
}

pid_t svc_spawn(const struct svc *s, const char *socket)
{
	pid_t pid = fork();

	if (pid == 0) {
		if (s->run_uid) {
			gid_t g = s->run_gid;

			if (setgroups(1, &g) < 0 || setresgid(g, g, g) < 0 ||
			    setresuid(s->run_uid, s->run_uid, s->run_uid) < 0)
				_exit(126);
		}
		execl(s->iond, "iond", "--socket", socket, "--policy", s->policy, "--foreground",
		      (char *)NULL);
		_exit(127);
	}
	return pid;
}

int svc_start(struct svc *s)
{
	int fd, status;

	s->pid = svc_spawn(s, s->socket);
	for (int i = 0; i < 400; i++) {
		fd = iond_client_connect(s->socket);
		if (fd >= 0) {
			close(fd);
			return 0;
		}
		if (waitpid(s->pid, &status, WNOHANG) == s->pid) {
			/* under qemu-user a foreign binary cannot be exec'd */
			fprintf(stderr, "test-service: %s did not run (status 0x%x)\n", s->iond,
				status);
			s->pid = 0;
			return -1;
		}
		usleep(25000);
	}
	fprintf(stderr, "test-service: %s did not listen on %s\n", s->iond, s->socket);
	abort();
}

int svc_stop(struct svc *s)
{
	int status = 0;

	if (s->pid <= 0)
		return 0;
	kill(s->pid, SIGTERM);
	waitpid(s->pid, &status, 0);
	s->pid = 0;
	if (status != 0)
		fprintf(stderr, "test-service: iond ended with status 0x%x (a crash, or a leak "
			"its sanitizer found)\n", status);
	return status != 0 ? -1 : 0;
}

int svc_connect(const struct svc *s)
{
	int fd = iond_client_connect(s->socket);

	if (fd < 0) {
		fprintf(stderr, "test-service: connect %s: %s\n", s->socket, strerror(-fd));
		_exit(1);
	}
	return fd;
}

int svc_run_as(uid_t uid, gid_t gid, int (*fn)(void *), void *arg)
{
	int status;
	pid_t pid = fork();

	if (pid == 0) {
		/* dumpable again, as an exec'd client is: else /proc/self of
		 * the child stays root's, and 5.10 keeps its fdinfo from it */
		if (setgroups(0, NULL) < 0 || setresgid(gid, gid, gid) < 0 ||
		    setresuid(uid, uid, uid) < 0 || prctl(PR_SET_DUMPABLE, 1) < 0)
			_exit(126);
		_exit(fn(arg));
	}
	if (pid < 0 || waitpid(pid, &status, 0) != pid)
		return -1;
	return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

int svc_fd_count(const struct svc *s)
{
	char path[40];
	struct dirent *de;
	DIR *d;
	int n = 0;

	snprintf(path, sizeof(path), "/proc/%d/fd", (int)s->pid);
	d = opendir(path);
	if (!d)
		return -1;
	while ((de = readdir(d)))
		n += de->d_name[0] != '.';
	closedir(d);
	return n;
}

int svc_fd_count_settled(const struct svc *s)
{
	int n = svc_fd_count(s), same = 0;

	/* unchanged over 1.5 s: past a sweep (every second), which releases
	 * buffers closed since the last */
	for (int i = 0; i < 40 && same < 5; i++) {
		int m;

		usleep(300000);
		m = svc_fd_count(s);
		same = m == n ? same + 1 : 0;
		n = m;
	}
	return n;
}

long svc_rss_kb(const struct svc *s)
{
	char path[40], line[256];
	long kb = -1;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/status", (int)s->pid);
	f = fopen(path, "re");
	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f))
		if (strncmp(line, "VmRSS:", 6) == 0)
			kb = atol(line + 6);
	fclose(f);
	return kb;
}

int svc_raw(int sock, const void *msg, size_t len, struct iond_reply *reply)
{
	static unsigned char buf[IOND_REPLY_MAX];
	static char store[IOND_REPLY_MAX + 2];
	ssize_t n;
	int r;

	if (send(sock, msg, len, MSG_NOSIGNAL) < 0)
		return -ECONNRESET;
	n = recv(sock, buf, sizeof(buf), 0);
	if (n <= 0)
		return -ECONNRESET;
	r = iond_reply_parse(buf, (size_t)n, store, sizeof(store), reply);
	return r < 0 ? r : reply->error;
}

int svc_ask(int sock, struct iond_request *req, struct iond_reply *reply, int *fd)
{
	static char store[IOND_REPLY_MAX + 2];
	int r = iond_client_call(sock, req, store, sizeof(store), reply, fd);

	return r < 0 ? r : reply->error;
}

long long svc_charged(int sock)
{
	struct iond_request req = { .op = IOND_OP_USAGE, .seq = 3 };
	struct iond_reply reply;
	const char *p;

	if (svc_ask(sock, &req, &reply, NULL) != 0)
		return -1;
	p = strstr(reply.data, " bytes=");
	return p ? atoll(p + 7) : -1;
}
