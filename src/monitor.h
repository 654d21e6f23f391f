/* SPDX-License-Identifier: MIT */
/* The context's hotplug monitor (monitor.c). */
#ifndef LIBION_MONITOR_H
#define LIBION_MONITOR_H

struct ion_monitor;

void ion_monitor_free(struct ion_monitor *monitor);
/* In a forked child (fork.c's atfork handler): monitors made before
 * are the parent's, and each context makes its own on next use. */
void ion_monitor_fork_child(void);

#endif
