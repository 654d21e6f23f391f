/* SPDX-License-Identifier: MIT */
/* The context: its lifetime, paths, logging, and the registry it holds. */
#ifndef LIBION_CONTEXT_H
#define LIBION_CONTEXT_H

#include <pthread.h>
#include <stdatomic.h>
#include <syslog.h>

#include <ion/libion.h>

#include "util.h"

/* Marks the definition of a public call (the build hides everything else). */
#define ION_EXPORT __attribute__((visibility("default")))

struct ion_registry;
struct ion_monitor;
struct ion_pools;

void ion_log(struct ion_ctx *ctx, int priority, const char *file, int line,
	     const char *fn, const char *format, ...)
	__attribute__((format(printf, 6, 7)));

#define ion_log_cond(ctx, prio, ...)                                           \
	do {                                                                   \
		if (ion_ctx_get_log_priority(ctx) >= (prio))                   \
			ion_log(ctx, prio, __FILE__, __LINE__, __func__,       \
				__VA_ARGS__);                                  \
	} while (0)

/* A heaps.d problem (the parser's error_fn, the context its userdata),
 * logged at error priority as "file:line: message". */
void ion_ctx_log_conf_error(void *userdata, const char *file, unsigned int line,
			    const char *message);

#define ion_dbg(ctx, ...) ion_log_cond(ctx, LOG_DEBUG, __VA_ARGS__)
#define ion_info(ctx, ...) ion_log_cond(ctx, LOG_INFO, __VA_ARGS__)
#define ion_err(ctx, ...) ion_log_cond(ctx, LOG_ERR, __VA_ARGS__)

/*
 * The context's lock, taken so that neither cancellation nor fork() can
 * leave it held: cancellation is off while it is held, and fork() waits
 * (a pthread_atfork handler) until no context's lock is held.  *state
 * keeps the caller's cancel state for the unlock.
 */
void ion_ctx_lock(struct ion_ctx *ctx, int *state);
void ion_ctx_unlock(struct ion_ctx *ctx, int state);

/*
 * The context's parts that other layers keep or read.  The struct's body
 * stays in context.c: these are the only ways in.
 */
/* ion_ctx_set_service()'s path: NULL (the default), "" (off), a socket. */
const char *ion_ctx_service_path(const struct ion_ctx *ctx);
/* The sysroot, "" for "/". */
const char *ion_ctx_sysroot(const struct ion_ctx *ctx);
/* The heaps.d folders set by ion_ctx_set_heaps_path[s](), NULL-terminated
 * (empty: none), or NULL: the defaults.  Stable while the context's lock
 * is held or once discovery has run (setting them then is -EBUSY). */
char *const *ion_ctx_heaps_paths(const struct ion_ctx *ctx);
/* The slot that publishes the frozen registry (discover.c and registry.c
 * own its memory order). */
_Atomic(struct ion_registry *) *ion_ctx_registry_slot(struct ion_ctx *ctx);
/* The hotplug monitor's slot, read and written under the context's lock
 * (monitor.c); the context frees what it holds. */
struct ion_monitor **ion_ctx_monitor_slot(struct ion_ctx *ctx);
/* The context's pools (their own locks). */
struct ion_pools *ion_ctx_pools(struct ion_ctx *ctx);
/* The references held, for the unit tests' checks of who holds one. */
int ion_ctx_get_refcount(struct ion_ctx *ctx);

/* sysroot + path, malloc'ed; NULL on ENOMEM. */
char *ion_ctx_path(const struct ion_ctx *ctx, const char *path);
/* A real path under the sysroot, without it; NULL with errno (ENODEV:
 * outside the sysroot, ENOMEM).  root is the sysroot's real path where
 * the caller has it (the registry keeps it), else NULL. */
char *ion_ctx_unroot(const struct ion_ctx *ctx, const char *root, const char *real);

#endif
