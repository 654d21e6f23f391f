/* SPDX-License-Identifier: MIT */
/* The Android layer's hooks for fork.c: its client table's lock. */
#ifndef LIBION_COMPAT_H
#define LIBION_COMPAT_H

void ion_compat_fork_prepare(void);
void ion_compat_fork_done(void);

#endif
