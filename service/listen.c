// SPDX-License-Identifier: MIT
/*
 * Where iond listens.  Under systemd, iond.socket owns the socket and
 * passes it (SD_LISTEN_FDS_START = 3); without systemd, iond binds one
 * itself (--socket PATH, for the VMs and the tests).
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include "iond-config.h"
#include "listen.h"

#if HAVE_LIBSYSTEMD
#include <systemd/sd-daemon.h>
#endif

#define LISTEN_FDS_START 3

static int listen_fd_count(void)
{
#if HAVE_LIBSYSTEMD
	return sd_listen_fds(1);
#else
	const char *pid = getenv("LISTEN_PID"), *fds = getenv("LISTEN_FDS");
	char *end;
	long n;

	if (!pid || !fds)
		return 0;
	errno = 0;
	if (strtol(pid, &end, 10) != (long)getpid() || *end || errno)
		return 0; /* meant for another process */
	n = strtol(fds, &end, 10);
	if (*end || errno || n < 0 || n > 64)
		return -EINVAL;
	unsetenv("LISTEN_PID");
	unsetenv("LISTEN_FDS");
	unsetenv("LISTEN_FDNAMES");
	return (int)n;
#endif
}

/* A listening AF_UNIX SOCK_SEQPACKET socket, or -ENOTSOCK. */
static int check_socket(int fd)
{
	struct sockaddr_un addr;
	socklen_t len = sizeof(addr);
	int type = 0, acc = 0;
	socklen_t olen = sizeof(int);

	if (getsockname(fd, (struct sockaddr *)&addr, &len) < 0 || addr.sun_family != AF_UNIX ||
	    getsockopt(fd, SOL_SOCKET, SO_TYPE, &type, &olen) < 0 || type != SOCK_SEQPACKET)
		return -ENOTSOCK;
	olen = sizeof(int);
	if (getsockopt(fd, SOL_SOCKET, SO_ACCEPTCONN, &acc, &olen) < 0 || !acc)
		return -ENOTSOCK;
	return 0;
}

int iond_listen_activated(int *fds, int max)
{
	int n = listen_fd_count();

	if (n <= 0)
		return n;
	if (n > max)
		return -E2BIG;
	for (int i = 0; i < n; i++) {
		int fd = LISTEN_FDS_START + i;
		int flags = fcntl(fd, F_GETFD);

		if (flags < 0 || check_socket(fd) < 0)
			return -ENOTSOCK;
		fcntl(fd, F_SETFD, flags | FD_CLOEXEC);
		fds[i] = fd;
	}
	return n;
}

static void make_parent(const char *path)
{
	char dir[sizeof(((struct sockaddr_un *)0)->sun_path)];
	char *slash;

	snprintf(dir, sizeof(dir), "%s", path);
	slash = strrchr(dir, '/');
	if (!slash || slash == dir)
		return;
	*slash = '\0';
	if (mkdir(dir, 0755) < 0 && errno == ENOENT) {
		make_parent(dir);
		mkdir(dir, 0755);
	}
}

int iond_listen_path(const char *path)
{
	struct sockaddr_un addr = { .sun_family = AF_UNIX };
	struct stat st;
	int fd, r;

	if (strlen(path) >= sizeof(addr.sun_path))
		return -ENAMETOOLONG;
	strcpy(addr.sun_path, path);
	make_parent(path);
	if (lstat(path, &st) == 0 && S_ISSOCK(st.st_mode))
		unlink(path);
	fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	if (fd < 0)
		return -errno;
	if (bind(fd, (struct sockaddr *)&addr, sizeof(addr)) < 0 || chmod(path, 0666) < 0 ||
	    listen(fd, 128) < 0) {
		r = -errno;
		close(fd);
		return r;
	}
	return fd;
}
