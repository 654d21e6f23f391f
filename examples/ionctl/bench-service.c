// SPDX-License-Identifier: MIT
/*
 * ionctl bench --service: allocation through iond beside the direct call,
 * on every heap this process can use itself, in the same run: blocks of
 * ion_ctx_alloc() + close() and of an ALLOC over one connection + close()
 * alternate (drift hits both alike); the figure is the median round's ns
 * per call of each, and their ratio.  With --iond PATH it starts its own
 * service (a scratch socket, a policy without limits) and says its
 * resident memory idle and after the run.
 */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "bench-solve.h"
#include "ionctl.h"
#include "service/client.h"

#define CALLS_PER_RUN 8

struct service_bench {
	struct ion_ctx *ctx;
	int sock;
	char *store;
	const char *heap;
	unsigned int rounds;
	int json, rows, failed;
};

static int via_service(struct service_bench *b, size_t len)
{
	struct iond_request req = { .op = IOND_OP_ALLOC, .seq = 1, .size = len, .heap = b->heap };
	struct iond_reply reply;
	int fd = -1, r = iond_client_call(b->sock, &req, b->store, IOND_REPLY_MAX + 2, &reply, &fd);

	if (r == 0 && reply.error)
		r = reply.error;
	if (r == 0)
		close(fd);
	return r;
}

static int direct(struct service_bench *b, size_t len)
{
	int fd, r = ion_ctx_alloc(b->ctx, b->heap, len, 0, &fd);

	if (r == 0)
		close(fd);
	return r;
}

/* Median ns per call of each path over the rounds; 0 or an errno. */
static int measure(struct service_bench *b, size_t len, double *ret_direct, double *ret_service)
{
	double d[64], s[64];
	int r = direct(b, len) < 0 ? -1 : via_service(b, len); /* warm both */

	for (unsigned int i = 0; r == 0 && i < b->rounds; i++) {
		double t0 = ionctl_now_ns(), t1, t2;

		for (int k = 0; r == 0 && k < CALLS_PER_RUN; k++)
			r = direct(b, len);
		t1 = ionctl_now_ns();
		for (int k = 0; r == 0 && k < CALLS_PER_RUN; k++)
			r = via_service(b, len);
		t2 = ionctl_now_ns();
		d[i] = (t1 - t0) / CALLS_PER_RUN;
		s[i] = (t2 - t1) / CALLS_PER_RUN;
	}
	if (r < 0)
		return r;
	*ret_direct = ionctl_median(d, b->rounds);
	*ret_service = ionctl_median(s, b->rounds);
	return 0;
}

static void row(struct service_bench *b, const struct ion_heap *h, size_t len)
{
	double dns = 0, sns = 0;
	int r = measure(b, len, &dns, &sns);

	if (r < 0)
		b->failed++;
	if (b->json) {
		printf("%s\n  {\"heap\": ", b->rows++ ? "," : "");
		ionctl_json_string(ion_heap_get_name(h));
		printf(", \"size\": %zu", len);
		if (r < 0) {
			printf(", \"error\": ");
			ionctl_json_string(strerror(-r));
			printf("}");
		} else {
			printf(", \"direct_ns\": %.0f, \"service_ns\": %.0f, \"ratio\": %.3f}", dns,
			       sns, sns / dns);
		}
	} else if (r < 0) {
		printf("%-22s %10zu  failed: %s\n", ion_heap_get_name(h), len, strerror(-r));
	} else {
		printf("%-22s %10zu %14.0f %14.0f %7.3f\n", ion_heap_get_name(h), len, dns, sns,
		       sns / dns);
	}
	fflush(stdout);
}

/* --clients: n processes, each its own connection, allocating and closing
 * CLIENT_CALLS buffers at once from one start: every call's latency and
 * each client's rate. */
#define CLIENT_CALLS 32

struct clients_result {
	double lat[CLIENT_CALLS];
	double elapsed;
	int error;
};

static void client_run(const char *path, const char *heap, size_t len, int start,
		       struct clients_result *out)
{
	struct service_bench b = { .heap = heap, .store = malloc(IOND_REPLY_MAX + 2) };
	char go;
	double t0;

	b.sock = iond_client_connect(path);
	out->error = !b.store || b.sock < 0 ? -ENOMEM : 0;
	if (read(start, &go, 1) < 0 || out->error) /* the end of the pipe: go */
		_exit(1);
	t0 = ionctl_now_ns();
	for (int i = 0; i < CLIENT_CALLS && !out->error; i++) {
		double t = ionctl_now_ns();

		out->error = via_service(&b, len);
		out->lat[i] = ionctl_now_ns() - t;
	}
	out->elapsed = ionctl_now_ns() - t0;
	_exit(out->error ? 1 : 0);
}

static int clients(const char *path, const char *heap, size_t len, unsigned int n, int json)
{
	struct clients_result *res = mmap(NULL, n * sizeof(*res), PROT_READ | PROT_WRITE,
					  MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	double *all = calloc((size_t)n * CLIENT_CALLS, sizeof(double)), mean = 0, lo = 1e300,
	       hi = 0, p50, p99;
	int go[2], failed = 0;

	if (res == MAP_FAILED || !all || pipe2(go, O_CLOEXEC) < 0)
		return -ENOMEM;
	for (unsigned int i = 0; i < n; i++)
		if (fork() == 0) {
			close(go[1]);
			client_run(path, heap, len, go[0], &res[i]);
		}
	close(go[0]);
	usleep(200000); /* every client connected, waiting */
	close(go[1]);   /* ... and off: each read() sees the end at once */
	for (unsigned int i = 0; i < n; i++) {
		int status;

		if (wait(&status) < 0 || !WIFEXITED(status) || WEXITSTATUS(status))
			failed++;
	}
	for (unsigned int i = 0; i < n && !failed; i++) {
		double rate = CLIENT_CALLS / res[i].elapsed;

		memcpy(all + (size_t)i * CLIENT_CALLS, res[i].lat, sizeof(res[i].lat));
		mean += rate / n;
		lo = rate < lo ? rate : lo;
		hi = rate > hi ? rate : hi;
	}
	if (!failed) {
		p50 = ionctl_pct(all, n * CLIENT_CALLS, 50);
		p99 = ionctl_pct(all, n * CLIENT_CALLS, 99);
		if (json)
		{
			printf(", \"clients\": {\"n\": %u, \"heap\": ", n);
			ionctl_json_string(heap);
			printf(", \"size\": %zu, \"p50_ns\": %.0f, \"p99_ns\": %.0f, "
			       "\"p99_over_p50\": %.2f, \"slowest_rate_over_mean\": %.2f, "
			       "\"fastest_rate_over_mean\": %.2f}",
			       len, p50, p99, p99 / p50, lo / mean, hi / mean);
		}
		else
			printf("%u clients at once, %s %zu: p50 %.0f ns, p99 %.0f ns (%.2f x); "
			       "slowest client %.2f x the mean rate, fastest %.2f x\n", n, heap, len,
			       p50, p99, p99 / p50, lo / mean, hi / mean);
	}
	free(all);
	munmap(res, n * sizeof(*res));
	return failed ? -EIO : 0;
}

static long rss_kb(pid_t pid)
{
	char path[40], line[128];
	long kb = -1;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/status", (int)pid);
	f = fopen(path, "re");
	while (f && fgets(line, sizeof(line), f))
		if (strncmp(line, "VmRSS:", 6) == 0)
			kb = atol(line + 6);
	if (f)
		fclose(f);
	return kb;
}

/* Its own iond on a scratch socket, without limits; the socket's path. */
static pid_t start_iond(const char *iond, char *dir, char *sock, size_t size)
{
	char pol[96], file[128];
	FILE *f;
	pid_t pid;

	if (!mkdtemp(dir))
		return -1;
	snprintf(pol, sizeof(pol), "%s/pol", dir);
	snprintf(file, sizeof(file), "%s/50-bench.conf", pol);
	snprintf(sock, size, "%s/iond.sock", dir);
	if (mkdir(pol, 0755) < 0 || !(f = fopen(file, "we")))
		return -1;
	fputs("[Default]\nMaxBytes = infinity\nMaxBuffers = infinity\n"
	      "MaxContiguousBytes = infinity\nMaxContiguousBuffers = infinity\n"
	      "MaxConnections = infinity\n", f);
	fclose(f);
	pid = fork();
	if (pid == 0) {
		execl(iond, "iond", "--socket", sock, "--policy", pol, "--foreground", (char *)NULL);
		_exit(127);
	}
	for (int i = 0; pid > 0 && i < 200; i++) {
		int fd = iond_client_connect(sock);

		if (fd >= 0) {
			close(fd);
			return pid;
		}
		usleep(25000);
	}
	return -1;
}

static void stop_iond(pid_t pid, const char *dir)
{
	char path[160];

	kill(pid, SIGTERM);
	waitpid(pid, NULL, 0);
	snprintf(path, sizeof(path), "%s/pol/50-bench.conf", dir);
	unlink(path);
	snprintf(path, sizeof(path), "%s/pol", dir);
	rmdir(path);
	rmdir(dir);
}

int ionctl_bench_service(const char *socket_path, const char *iond, const char *only,
			 const size_t *sizes, size_t n_sizes, unsigned int rounds,
			 unsigned int n_clients, int json)
{
	const char *first = NULL;
	struct service_bench b = { .rounds = rounds, .json = json };
	char dir[] = "/tmp/ionctl-bench-XXXXXX", sock[96];
	long idle = -1;
	pid_t pid = 0;
	int n;

	if (iond) {
		pid = start_iond(iond, dir, sock, sizeof(sock));
		if (pid < 0)
			return ionctl_fail("bench", -EIO, "could not start %s", iond);
		socket_path = sock;
		idle = rss_kb(pid);
	}
	b.ctx = ionctl_ctx_new("bench");
	b.sock = iond_client_connect(socket_path);
	b.store = malloc(IOND_REPLY_MAX + 2);
	if (!b.ctx || b.sock < 0 || !b.store) {
		if (pid > 0)
			stop_iond(pid, dir);
		return ionctl_fail("bench", b.sock < 0 ? b.sock : -ENOMEM, "iond at %s", socket_path);
	}
	if (json) {
		ionctl_json_begin("bench");
		printf(", \"mode\": \"service\", \"rows\": [");
	} else {
		printf("%-22s %10s %14s %14s %7s\n", "HEAP", "SIZE", "direct ns", "iond ns", "ratio");
	}
	n = ion_ctx_get_heap_count(b.ctx);
	for (int i = 0; i < n; i++) {
		const struct ion_heap *h;

		if (ion_ctx_get_heap(b.ctx, (unsigned int)i, &h) < 0 || ion_heap_get_error(h) ||
		    (only && strcmp(only, ion_heap_get_name(h)) != 0))
			continue;
		/* a memfd needs no service, and has no count to be charged by:
		 * the service keeps it until the connection closes */
		if ((ion_heap_get_properties(h) & ION_HEAP_PROP_CPU_ONLY) && !only)
			continue;
		b.heap = ion_heap_get_name(h);
		first = first ? first : b.heap;
		for (size_t k = 0; k < n_sizes; k++)
			row(&b, h, sizes[k]);
	}
	if (json)
		printf("\n]");
	if (n_clients && first && clients(socket_path, first, sizes[0], n_clients, json) < 0)
		b.failed++;
	if (json) {
		printf(", \"iond_rss_kb_idle\": %ld, \"iond_rss_kb_after\": %ld", idle,
		       pid > 0 ? rss_kb(pid) : -1L);
		ionctl_json_end();
	} else if (pid > 0)
		printf("iond resident memory: %ld KiB idle, %ld KiB after the run\n", idle, rss_kb(pid));
	close(b.sock);
	free(b.store);
	ion_ctx_unref(b.ctx);
	if (pid > 0)
		stop_iond(pid, dir);
	return b.failed ? ionctl_fail("bench", 0, "%d measurements failed", b.failed) : 0;
}
