/* SPDX-License-Identifier: MIT */
/*
 * The watched child: runs a check in a forked process and waits for it with
 * a timeout, so that a hang or a crash in the library is a failed check with
 * a message, not a stuck or dead test runner.
 */
#ifndef LIBION_WATCH_H
#define LIBION_WATCH_H

#include <stdbool.h>

/*
 * Runs fn(arg) in a child process (its own process group, killed with the
 * parent) and waits up to timeout_ms for it.  Returns 0 when the child exited
 * with 0.  Otherwise prints "what: ..." to stderr (its exit status, the
 * signal that killed it, or that it timed out, after which its whole process
 * group is killed) and returns -1.  A child that outlives its time leaves no
 * process behind either way.
 */
int watch_run(const char *what, unsigned int timeout_ms, int (*fn)(void *arg),
	      void *arg);

/*
 * The same, for a caller that reads the child's end itself: returns 0 with
 * *wstatus (waitpid()'s) once the child ended, or -1 when it timed out
 * (reported, and killed with its group) or could not be started.
 */
int watch_wait(const char *what, unsigned int timeout_ms, int (*fn)(void *arg),
	       void *arg, int *wstatus);

/*
 * How much slower than natively this process runs: 10 under valgrind or
 * qemu-user (a cross build's tests), 3 under a sanitizer or in the test
 * VM (TCG), else 1.  Timeouts and iteration counts are scaled by it.
 */
unsigned int watch_slowdown(void);

bool watch_under_valgrind(void);
/* Built with AddressSanitizer or ThreadSanitizer (they own malloc). */
bool watch_under_sanitizer(void);
bool watch_in_vm(void);
/* A cross build's test, run by its exe_wrapper (qemu-user): the cross
 * builds' default test setup says so with LIBION_TEST_EMULATED=1. */
bool watch_emulated(void);

#endif
