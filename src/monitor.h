/* SPDX-License-Identifier: MIT */
/* The context's hotplug monitor (monitor.c). */
#ifndef LIBION_MONITOR_H
#define LIBION_MONITOR_H

struct ion_monitor;

void ion_monitor_free(struct ion_monitor *monitor);

#endif
