// SPDX-License-Identifier: MIT
/*
 * expect-output [--has TEXT]... -- PROGRAM [ARG...]
 *
 * Runs PROGRAM (looked up in PATH), copies its standard output to ours,
 * and exits 0 only if it exited 0 and its standard output holds every
 * TEXT; else 1 (2 for a usage error).  The VM runs programs with no shell
 * to grep their output (tests/vm/vm-init.c): this is the grep.  Its
 * arguments, like every VM test's, cannot hold blanks.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

static int usage(void)
{
	fprintf(stderr, "usage: expect-output [--has TEXT]... -- PROGRAM [ARG...]\n");
	return 2;
}

int main(int argc, char **argv)
{
	char *out = NULL, chunk[4096];
	size_t len = 0;
	int fds[2], status, i, failed = 0;
	ssize_t n;
	pid_t pid;

	for (i = 1; i < argc && strcmp(argv[i], "--") != 0; i += 2)
		if (strcmp(argv[i], "--has") != 0 || i + 1 >= argc)
			return usage();
	if (i + 1 >= argc)
		return usage();
	if (pipe(fds) < 0 || (pid = fork()) < 0) {
		perror("expect-output");
		return 1;
	}
	if (pid == 0) {
		dup2(fds[1], STDOUT_FILENO);
		close(fds[0]);
		close(fds[1]);
		execvp(argv[i + 1], argv + i + 1);
		fprintf(stderr, "expect-output: %s: %s\n", argv[i + 1], strerror(errno));
		_exit(127);
	}
	close(fds[1]);
	while ((n = read(fds[0], chunk, sizeof(chunk))) != 0) {
		char *grown;

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 || !(grown = realloc(out, len + (size_t)n + 1))) {
			perror("expect-output");
			return 1;
		}
		out = grown;
		memcpy(out + len, chunk, (size_t)n);
		len += (size_t)n;
		out[len] = '\0';
		fwrite(chunk, 1, (size_t)n, stdout);
	}
	fflush(stdout);
	while (waitpid(pid, &status, 0) < 0)
		if (errno != EINTR) {
			perror("expect-output");
			return 1;
		}
	if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
		fprintf(stderr, "expect-output: FAIL: %s exited with status %d\n", argv[i + 1],
			WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status));
		failed = 1;
	}
	for (int k = 1; k < i; k += 2)
		if (!out || !strstr(out, argv[k + 1])) {
			fprintf(stderr, "expect-output: FAIL: %s printed no '%s'\n", argv[i + 1],
				argv[k + 1]);
			failed = 1;
		}
	free(out);
	return failed;
}
