/* SPDX-License-Identifier: MIT */
/*
 * fork() and the library's locks (fork.c).  fork.c alone registers the
 * pthread_atfork handlers and orders every layer's locks in them: the
 * compat layer's client table, the contexts' fork lock, the pools'.  A
 * layer offers its hooks (ion_compat_fork_*, ion_pools_fork_*, ...) and
 * never calls another layer's.
 */
#ifndef LIBION_FORK_H
#define LIBION_FORK_H

/* The handlers, registered once by whichever entry point comes first. */
void ion_fork_handlers_register(void);

/* Around compat.c's lock: waits while a fork() is pending, unless this
 * thread is inside the library already. */
void ion_fork_gate_enter(void);
void ion_fork_gate_leave(void);

/* Around a context's lock: a reader's share of the fork lock, which a
 * fork() waits to see returned (ion_ctx_lock()). */
void ion_fork_share_take(void);
void ion_fork_share_give(void);

#endif
