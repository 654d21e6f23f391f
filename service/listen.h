/* SPDX-License-Identifier: MIT */
/* iond's listening sockets: systemd's, or one of its own. */
#ifndef IOND_LISTEN_H
#define IOND_LISTEN_H

/*
 * The sockets systemd passed (socket activation: libsystemd's
 * sd_listen_fds() where iond was built with it, else the LISTEN_PID and
 * LISTEN_FDS variables read by hand), each checked to be a listening
 * AF_UNIX SOCK_SEQPACKET socket and made close-on-exec.  Returns how many
 * (0: not activated), or a negative errno.
 */
int iond_listen_activated(int *fds, int max);
/* A socket of its own at path: its folder made (0755) where missing, a
 * stale socket replaced, mode 0666 (the policy decides, not the mode).
 * The fd, or a negative errno. */
int iond_listen_path(const char *path);

#endif
