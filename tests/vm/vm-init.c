// SPDX-License-Identifier: MIT
//
// /init of the test VM's initramfs (see run-vm.sh).  It mounts the pseudo
// file systems, runs every command of /tests/list (one a line: program
// path, then arguments, separated by blanks) with a per-test timeout
// (/tests/timeout, seconds, default 300), and reports on the console:
//
//   @@VM-TEST-BEGIN <name>
//   @@VM-KMSG <message>               the kernel's, at warning level or worse
//   @@VM-STUCK <task> <file>: <text>   a test SIGKILL could not end
//   @@VM-TEST-END <name> <status>     status: exit code, signal-N, timeout
//                                     or stuck
//   @@VM-SUITE-DONE <passed> <failed>
//
// where <name> is the list line with the program's directory left out.
// A test still there 30 s after its timeout's SIGKILL sleeps in the
// kernel: its tasks' state, wait channel and kernel stack are printed as
// STUCK lines, sysrq w puts every blocked task's stack on the console,
// and the suite ends there (what holds it may hold the next test too).
// The kernel's warnings and worse (levels 0-4: WARN(), Oops, a bad page
// state, refcount_t's reports) are read from /dev/kmsg before the first
// test and after each, and repeated on the console as KMSG lines, so
// that run-vm.sh can fail a boot whose kernel found itself broken.  They
// are not put on the console by the kernel itself (the command line says
// "quiet"): printed there synchronously, from the contexts they come
// from, they would slow the guest down (6.1's vkms warns of an overrun
// from its vblank timer, under TCG, dozens of times a test).
// Then it powers the machine off.  /tests/env may hold KEY=VALUE lines to
// add to the tests' environment.
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/reboot.h>
#include <sys/stat.h>
#include <sys/utsname.h>
#include <sys/wait.h>
#include <unistd.h>

#define MAX_ARGS 64

static void mount_fs(const char *type, const char *dir)
{
	mkdir(dir, 0755);
	if (mount(type, dir, type, 0, NULL) != 0)
		fprintf(stderr, "vm-init: mount %s on %s: %s\n", type, dir,
			strerror(errno));
}

static void console_stdio(void)
{
	int fd = open("/dev/console", O_RDWR);

	if (fd < 0)
		return;
	for (int i = 0; i < 3; i++)
		dup2(fd, i);
	if (fd > 2)
		close(fd);
}

static void load_env(const char *path)
{
	FILE *f = fopen(path, "r");
	char *line = NULL;
	size_t cap = 0;

	if (!f)
		return;
	while (getline(&line, &cap, f) > 0) {
		line[strcspn(line, "\r\n")] = '\0';
		char *eq = strchr(line, '=');
		if (line[0] == '#' || !eq || eq == line)
			continue;
		*eq = '\0';
		setenv(line, eq + 1, 1);
	}
	free(line);
	fclose(f);
}

static unsigned read_timeout(void)
{
	FILE *f = fopen("/tests/timeout", "r");
	unsigned t = 0;

	if (f) {
		if (fscanf(f, "%u", &t) != 1)
			t = 0;
		fclose(f);
	}
	return t ? t : 300;
}

// Repeats the kernel's messages of level 4 (warning) or worse that
// /dev/kmsg holds past what was read before; kmsg is -1 where there is
// none.  A record is "priority,sequence,time,flags;message\n" with
// " KEY=value" continuation lines, which are left out.  A message the
// kernel repeats (6.1's vkms on a vblank overrun) is printed once, with
// how many times it came in a row.
static void drain_kmsg(int kmsg)
{
	char rec[8192], last[1024] = "";
	unsigned int repeats = 0;
	ssize_t n;

	while (kmsg >= 0 && (n = read(kmsg, rec, sizeof(rec) - 1)) != 0) {
		unsigned int pri;
		char *msg;

		if (n < 0) {
			if (errno == EPIPE || errno == EINTR) // EPIPE: overwritten unread
				continue;
			break; // EAGAIN: nothing more
		}
		rec[n] = '\0';
		msg = strchr(rec, ';');
		if (!msg || sscanf(rec, "%u,", &pri) != 1 || (pri & 7) > 4)
			continue;
		msg++;
		msg[strcspn(msg, "\n")] = '\0';
		if (strncmp(msg, last, sizeof(last) - 1) == 0) {
			repeats++;
			continue;
		}
		if (repeats)
			printf("@@VM-KMSG (the line above %u more times)\n", repeats);
		repeats = 0;
		printf("@@VM-KMSG %s\n", msg);
		snprintf(last, sizeof(last), "%s", msg);
	}
	if (repeats)
		printf("@@VM-KMSG (the line above %u more times)\n", repeats);
}

static volatile pid_t current_test;
static volatile sig_atomic_t timed_out, stuck;

// Seconds a killed test has to be gone before it counts as stuck in the
// kernel (a task SIGKILL cannot end sleeps uninterruptibly there).
#define KILL_GRACE 30

static void on_alarm(int sig)
{
	(void)sig;
	if (!timed_out) {
		timed_out = 1;
		kill(-current_test, SIGKILL);
		alarm(KILL_GRACE);
	} else {
		stuck = 1;
	}
}

// Prints what the kernel says each task of process group pgid is doing:
// its state, where it sleeps, and its kernel stack, where the kernel
// shows them (/proc/PID/stack needs CONFIG_STACKTRACE), and asks the
// kernel for every blocked task's (sysrq w, with CONFIG_MAGIC_SYSRQ).
static void show_stuck(pid_t pgid)
{
	char path[320], buf[4096];
	struct dirent *e;
	DIR *proc = opendir("/proc");

	while (proc && (e = readdir(proc))) {
		const char *files[] = { "stat", "wchan", "stack" };
		pid_t pid = (pid_t)atoi(e->d_name);

		if (pid <= 1 || getpgid(pid) != pgid)
			continue;
		DIR *tasks;
		snprintf(path, sizeof(path), "/proc/%d/task", (int)pid);
		tasks = opendir(path);
		for (struct dirent *t; tasks && (t = readdir(tasks));) {
			if (t->d_name[0] == '.')
				continue;
			for (size_t i = 0; i < sizeof(files) / sizeof(files[0]); i++) {
				snprintf(path, sizeof(path), "/proc/%d/task/%s/%s", (int)pid,
					 t->d_name, files[i]);
				int fd = open(path, O_RDONLY | O_CLOEXEC);
				ssize_t n = fd >= 0 ? read(fd, buf, sizeof(buf) - 1) : -1;
				if (fd >= 0)
					close(fd);
				if (n <= 0)
					continue;
				buf[n] = '\0';
				char *state = strrchr(buf, ')'); // "pid (comm) S ...": to S
				if (i == 0 && state && state[1] && state[2]) {
					state[3] = '\0';
					n = state + 3 - buf;
				}
				printf("@@VM-STUCK task %s %s: %s%s", t->d_name, files[i], buf,
				       buf[n - 1] == '\n' ? "" : "\n");
			}
		}
		if (tasks)
			closedir(tasks);
	}
	if (proc)
		closedir(proc);
	int fd = open("/proc/sysrq-trigger", O_WRONLY | O_CLOEXEC);
	if (fd >= 0) {
		if (write(fd, "w", 1) != 1)
			perror("vm-init: sysrq w");
		close(fd);
	}
}

// Runs argv; writes its status, as printed in the END line, to status:
// its exit code, signal-N, timeout, or stuck when even SIGKILL could not
// end it.
static void run_test(char **argv, unsigned timeout, char *status, size_t len)
{
	pid_t pid = fork();

	if (pid < 0) {
		snprintf(status, len, "fork-failed");
		return;
	}
	if (pid == 0) {
		setpgid(0, 0);
		execv(argv[0], argv);
		fprintf(stderr, "vm-init: exec %s: %s\n", argv[0], strerror(errno));
		_exit(127);
	}
	setpgid(pid, pid);
	current_test = pid;
	timed_out = 0;
	stuck = 0;
	alarm(timeout);

	// As PID 1 we also reap the orphans a test leaves behind.  The alarm
	// interrupts the wait (no SA_RESTART) so that a stuck test is seen.
	int ws = 0;
	while (waitpid(-1, &ws, 0) != pid && !stuck)
		;
	alarm(0);
	if (stuck) {
		show_stuck(pid);
		snprintf(status, len, "stuck");
		return;
	}
	kill(-pid, SIGKILL); // whatever the test left running

	if (timed_out)
		snprintf(status, len, "timeout");
	else if (WIFEXITED(ws))
		snprintf(status, len, "%d", WEXITSTATUS(ws));
	else
		snprintf(status, len, "signal-%d", WTERMSIG(ws));
}

int main(void)
{
	mount_fs("devtmpfs", "/dev");
	console_stdio();
	setvbuf(stdout, NULL, _IONBF, 0);
	mount_fs("proc", "/proc");
	mount_fs("sysfs", "/sys");
	mount_fs("tmpfs", "/tmp");
	mount_fs("tmpfs", "/dev/shm");

	struct utsname uts;
	uname(&uts);
	setenv("PATH", "/tests/bin:/bin:/sbin:/usr/bin:/usr/sbin", 1);
	setenv("LD_LIBRARY_PATH", "/lib:/usr/lib", 1);
	setenv("LIBION_TEST_KERNEL", uts.release, 1);
	setenv("LIBION_IN_VM", "1", 1);
	load_env("/tests/env");

	struct sigaction sa = { .sa_handler = on_alarm };
	sigaction(SIGALRM, &sa, NULL);
	unsigned timeout = read_timeout();

	unsigned passed = 0, failed = 0;
	int kmsg = open("/dev/kmsg", O_RDONLY | O_NONBLOCK | O_CLOEXEC);
	if (kmsg < 0)
		fprintf(stderr, "vm-init: /dev/kmsg: %s\n", strerror(errno));
	drain_kmsg(kmsg); // the boot's
	FILE *list = fopen("/tests/list", "r");
	char *line = NULL;
	size_t cap = 0;
	if (!list)
		perror("vm-init: /tests/list");
	while (list && getline(&line, &cap, list) > 0) {
		char *argv[MAX_ARGS + 1];
		int argc = 0;
		for (char *tok = strtok(line, " \t\r\n"); tok && argc < MAX_ARGS;
		     tok = strtok(NULL, " \t\r\n"))
			argv[argc++] = tok;
		if (argc == 0)
			continue;
		argv[argc] = NULL;

		char name[1024];
		const char *slash = strrchr(argv[0], '/');
		size_t n = (size_t)snprintf(name, sizeof(name), "%s",
					    slash ? slash + 1 : argv[0]);
		for (int i = 1; i < argc && n < sizeof(name); i++)
			n += (size_t)snprintf(name + n, sizeof(name) - n, " %s", argv[i]);

		char status[32];
		printf("@@VM-TEST-BEGIN %s\n", name);
		run_test(argv, timeout, status, sizeof(status));
		drain_kmsg(kmsg);
		printf("@@VM-TEST-END %s %s\n", name, status);
		if (strcmp(status, "0") == 0)
			passed++;
		else
			failed++;
		if (strcmp(status, "stuck") == 0) {
			// Whatever holds it may hold the next test too: stop here.
			printf("vm-init: %s is stuck in the kernel; the tests after it "
			       "are not run\n", name);
			break;
		}
	}
	printf("@@VM-SUITE-DONE %u %u\n", passed, failed);
	sync();
	reboot(RB_POWER_OFF);
	return 1; // PID 1 exiting panics the kernel, which panic=-1 turns into a reset
}
