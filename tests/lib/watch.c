// SPDX-License-Identifier: MIT
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#if __has_include(<valgrind/valgrind.h>)
#include <valgrind/valgrind.h>
#endif

#include "watch.h"

#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
#define SANITIZED 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer)
#define SANITIZED 1
#endif
#endif

bool watch_under_sanitizer(void)
{
#ifdef SANITIZED
	return true;
#else
	return false;
#endif
}

bool watch_under_valgrind(void)
{
#ifdef RUNNING_ON_VALGRIND
	if (RUNNING_ON_VALGRIND)
		return true;
#endif
	/* Without valgrind.h: its preload library is in every process it runs. */
	const char *preload = getenv("LD_PRELOAD");

	return preload && strstr(preload, "vgpreload");
}

bool watch_in_vm(void)
{
	const char *vm = getenv("LIBION_IN_VM");

	return vm && strcmp(vm, "1") == 0;
}

bool watch_emulated(void)
{
	const char *emulated = getenv("LIBION_TEST_EMULATED");

	return emulated && strcmp(emulated, "1") == 0;
}

unsigned int watch_slowdown(void)
{
	if (watch_under_valgrind() || watch_emulated())
		return 10;
	if (watch_under_sanitizer() || watch_in_vm())
		return 3;
	return 1;
}

static long long now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

int watch_wait(const char *what, unsigned int timeout_ms, int (*fn)(void *arg),
	       void *arg, int *wstatus)
{
	long long deadline;
	useconds_t nap = 1000;
	int status;
	pid_t pid, r;

	/* What is buffered would otherwise be printed twice. */
	fflush(stdout);
	fflush(stderr);
	pid = fork();
	if (pid < 0) {
		fprintf(stderr, "%s: fork: %s\n", what, strerror(errno));
		return -1;
	}
	if (pid == 0) {
		/* Its own group, so that a timeout kills what it forked too;
		 * and gone with the parent, should the runner be killed. */
		setpgid(0, 0);
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		_exit(fn(arg));
	}
	setpgid(pid, pid); /* either side may win the race: both set it */
	deadline = now_ms() + timeout_ms;
	for (;;) {
		r = waitpid(pid, &status, WNOHANG);
		if (r == pid)
			break;
		if (r < 0 && errno != EINTR) {
			fprintf(stderr, "%s: waitpid: %s\n", what, strerror(errno));
			kill(-pid, SIGKILL);
			return -1;
		}
		if (now_ms() >= deadline) {
			kill(-pid, SIGKILL);
			waitpid(pid, &status, 0);
			fprintf(stderr, "%s: TIMED OUT after %u ms (a hang): killed\n",
				what, timeout_ms);
			fflush(stderr);
			return -1;
		}
		usleep(nap);
		if (nap < 20000)
			nap *= 2;
	}
	/* Whatever the child forked and left running goes with it. */
	kill(-pid, SIGKILL);
	*wstatus = status;
	return 0;
}

int watch_run(const char *what, unsigned int timeout_ms, int (*fn)(void *arg),
	      void *arg)
{
	int status;

	if (watch_wait(what, timeout_ms, fn, arg, &status) < 0)
		return -1;
	if (WIFSIGNALED(status)) {
		int sig = WTERMSIG(status);

		fprintf(stderr, "%s: KILLED by signal %d (SIG%s: %s)%s\n", what, sig,
			sigabbrev_np(sig) ? sigabbrev_np(sig) : "?", strsignal(sig),
			WCOREDUMP(status) ? ", core dumped" : "");
		fflush(stderr);
		return -1;
	}
	if (WEXITSTATUS(status) != 0) {
		fprintf(stderr, "%s: failed (exit status %d)\n", what,
			WEXITSTATUS(status));
		fflush(stderr);
		return -1;
	}
	return 0;
}
