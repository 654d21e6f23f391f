/* SPDX-License-Identifier: MIT */
#ifndef IONCTL_FDPASS_H
#define IONCTL_FDPASS_H

/* Sends/receives one fd over a Unix socket; 0 or a negative errno. The
 * received fd is close-on-exec. */
int fdpass_send(int sock, int fd);
int fdpass_recv(int sock, int *ret_fd);

#endif
