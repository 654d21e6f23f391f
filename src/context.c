// SPDX-License-Identifier: MIT
/* Context lifetime, refcount, configuration paths and logging. */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

#include "context.h"
#include "fork.h"
#include "monitor.h"
#include "pool.h"
#include "registry.h"

/* The context's body, which no other file sees (context.h's getters). */
struct ion_ctx {
	atomic_int refcount;
	char *sysroot;		/* "" for "/" */
	ion_log_fn log_fn;
	int log_priority;
	void *userdata;

	/* The heaps.d folders, NULL-terminated (empty: none), or NULL: the
	 * defaults.  From ion_ctx_set_heaps_path() it may hold more than
	 * ION_HEAPS_PATHS_MAX, which discovery logs and leaves out. */
	char **heaps_paths;

	pthread_mutex_t discover_lock;
	/* NULL until discovery succeeds; immutable once set. */
	_Atomic(struct ion_registry *) registry;

	struct ion_pools pools;	/* mutable, with locks of their own */
	struct ion_monitor *monitor; /* made on first ion_ctx_get_monitor_fd() */
	char *service_path;	/* ion_ctx_set_service(): NULL default, "" off */
};

__attribute__((format(printf, 6, 0)))
static void log_stderr(struct ion_ctx *ctx, int priority, const char *file,
		       int line, const char *fn, const char *format,
		       va_list args)
{
	(void)ctx;
	(void)priority;
	(void)file;
	(void)line;
	fprintf(stderr, "libion: %s: ", fn);
	vfprintf(stderr, format, args);
	fputc('\n', stderr);
}

void ion_log(struct ion_ctx *ctx, int priority, const char *file, int line,
	     const char *fn, const char *format, ...)
{
	va_list args;
	int saved = errno;

	va_start(args, format);
	ctx->log_fn(ctx, priority, file, line, fn, format, args);
	va_end(args);
	errno = saved;
}

/* ION_LOG: a syslog priority as a number or a name ("err", "info", "debug"). */
static int log_priority_from_env(void)
{
	static const struct {
		const char *name;
		int priority;
	} names[] = {
		{ "err", LOG_ERR },
		{ "warning", LOG_WARNING },
		{ "info", LOG_INFO },
		{ "debug", LOG_DEBUG },
	};
	const char *env = secure_getenv("ION_LOG");
	uint64_t v;

	if (!env)
		return LOG_ERR;
	if (ion_parse_u64(env, 10, &v) == 0)
		return v > LOG_DEBUG ? LOG_DEBUG : (int)v;
	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++)
		if (strcasecmp(env, names[i].name) == 0)
			return names[i].priority;
	return LOG_ERR;
}

void ion_ctx_lock(struct ion_ctx *ctx, int *state)
{
	pthread_setcancelstate(PTHREAD_CANCEL_DISABLE, state);
	ion_fork_share_take();
	pthread_mutex_lock(&ctx->discover_lock);
}

void ion_ctx_unlock(struct ion_ctx *ctx, int state)
{
	pthread_mutex_unlock(&ctx->discover_lock);
	ion_fork_share_give();
	pthread_setcancelstate(state, NULL);
}

ION_EXPORT int ion_ctx_new(const char *sysroot, struct ion_ctx **ret_ctx)
{
	struct ion_ctx *ctx;

	if (!ret_ctx)
		return -EINVAL;
	if (sysroot && sysroot[0] != '/')
		return -EINVAL;
	ion_fork_handlers_register();
	ctx = calloc(1, sizeof(*ctx));
	if (!ctx)
		return -ENOMEM;
	/* "/" and NULL both mean the real root: keep paths free of "//". */
	ctx->sysroot = strdup(sysroot && strcmp(sysroot, "/") ? sysroot : "");
	if (!ctx->sysroot) {
		free(ctx);
		return -ENOMEM;
	}
	atomic_init(&ctx->refcount, 1);
	atomic_init(&ctx->registry, NULL);
	pthread_mutex_init(&ctx->discover_lock, NULL);
	ion_pools_init(&ctx->pools);
	ctx->log_fn = log_stderr;
	ctx->log_priority = log_priority_from_env();
	*ret_ctx = ctx;
	return 0;
}

ION_EXPORT struct ion_ctx *ion_ctx_ref(struct ion_ctx *ctx)
{
	if (ctx)
		atomic_fetch_add_explicit(&ctx->refcount, 1,
					  memory_order_relaxed);
	return ctx;
}

ION_EXPORT struct ion_ctx *ion_ctx_unref(struct ion_ctx *ctx)
{
	if (!ctx)
		return NULL;
	if (atomic_fetch_sub_explicit(&ctx->refcount, 1,
				      memory_order_acq_rel) != 1)
		return NULL;
	/* The refill thread first: it works on the registry's heap pools.
	 * Nothing else holds the registry now (holders hold the context). */
	ion_pools_stop(&ctx->pools);
	ion_monitor_free(ctx->monitor);
	ion_registry_unref(atomic_load_explicit(&ctx->registry, memory_order_acquire));
	ion_pools_fini(&ctx->pools);
	pthread_mutex_destroy(&ctx->discover_lock);
	ion_strv_free(ctx->heaps_paths);
	free(ctx->service_path);
	free(ctx->sysroot);
	free(ctx);
	return NULL;
}

/* Takes paths (NULL: the defaults) unless discovery has run. */
static int set_heaps_paths(struct ion_ctx *ctx, char **paths)
{
	int r = 0, state;

	ion_ctx_lock(ctx, &state);
	if (atomic_load_explicit(&ctx->registry, memory_order_relaxed)) {
		r = -EBUSY;
	} else {
		ion_strv_free(ctx->heaps_paths);
		ctx->heaps_paths = steal_ptr(&paths);
	}
	ion_ctx_unlock(ctx, state);
	ion_strv_free(paths);
	return r;
}

ION_EXPORT int ion_ctx_set_heaps_path(struct ion_ctx *ctx, const char *path)
{
	char **paths = NULL;

	if (!ctx)
		return -EINVAL;
	if (path && !(paths = ion_strv_split(path, ':')))
		return -ENOMEM;
	return set_heaps_paths(ctx, paths);
}

ION_EXPORT int ion_ctx_set_heaps_paths(struct ion_ctx *ctx, const char *const *paths)
{
	char **copy = NULL;
	size_t n = ion_strv_len(paths);

	if (!ctx)
		return -EINVAL;
	if (n > ION_HEAPS_PATHS_MAX)
		return -E2BIG;
	for (size_t i = 0; i < n; i++)
		if (!paths[i][0])
			return -EINVAL;
	if (paths && !(copy = ion_strv_copy(paths)))
		return -ENOMEM;
	return set_heaps_paths(ctx, copy);
}

ION_EXPORT void ion_ctx_set_log_fn(struct ion_ctx *ctx, ion_log_fn log_fn)
{
	if (ctx)
		ctx->log_fn = log_fn ? log_fn : log_stderr;
}

ION_EXPORT void ion_ctx_set_log_priority(struct ion_ctx *ctx, int priority)
{
	if (ctx)
		ctx->log_priority = priority;
}

ION_EXPORT int ion_ctx_get_log_priority(const struct ion_ctx *ctx)
{
	return ctx ? ctx->log_priority : -EINVAL;
}

ION_EXPORT void ion_ctx_set_userdata(struct ion_ctx *ctx, void *userdata)
{
	if (ctx)
		ctx->userdata = userdata;
}

ION_EXPORT void *ion_ctx_get_userdata(const struct ion_ctx *ctx)
{
	return ctx ? ctx->userdata : NULL;
}

char *ion_ctx_path(const struct ion_ctx *ctx, const char *path)
{
	char *p;

	if (asprintf(&p, "%s%s", ctx->sysroot, path) < 0)
		return NULL;
	return p;
}

char *ion_ctx_unroot(const struct ion_ctx *ctx, const char *root, const char *real)
{
	_cleanup_free_ char *own = NULL;
	size_t len;

	if (!ctx->sysroot[0])
		return strdup(real);
	if (!root && !(root = own = realpath(ctx->sysroot, NULL)))
		return NULL;
	len = strlen(root);
	if (strncmp(real, root, len) != 0 || (real[len] != '/' && real[len])) {
		errno = ENODEV;
		return NULL;
	}
	return strdup(real[len] ? real + len : "/");
}

ION_EXPORT int ion_ctx_set_service(struct ion_ctx *ctx, const char *path)
{
	char *copy = NULL;

	if (!ctx)
		return -EINVAL;
	if (path && !(copy = strdup(path)))
		return -ENOMEM;
	free(ctx->service_path);
	ctx->service_path = copy;
	return 0;
}

const char *ion_ctx_service_path(const struct ion_ctx *ctx)
{
	return ctx->service_path;
}

const char *ion_ctx_sysroot(const struct ion_ctx *ctx)
{
	return ctx->sysroot;
}

char *const *ion_ctx_heaps_paths(const struct ion_ctx *ctx)
{
	return ctx->heaps_paths;
}

_Atomic(struct ion_registry *) *ion_ctx_registry_slot(struct ion_ctx *ctx)
{
	return &ctx->registry;
}

struct ion_monitor **ion_ctx_monitor_slot(struct ion_ctx *ctx)
{
	return &ctx->monitor;
}

struct ion_pools *ion_ctx_pools(struct ion_ctx *ctx)
{
	return &ctx->pools;
}

int ion_ctx_get_refcount(struct ion_ctx *ctx)
{
	return atomic_load(&ctx->refcount);
}

void ion_ctx_log_conf_error(void *userdata, const char *file, unsigned int line,
			    const char *message)
{
	struct ion_ctx *ctx = userdata;

	if (ion_ctx_get_log_priority(ctx) < LOG_ERR)
		return;
	/* The file's name and line where the handler expects the source's,
	 * and "heaps.d" as the function (libion.h says so). */
	if (line)
		ion_log(ctx, LOG_ERR, file, (int)line, ION_LOG_CONF_FN, "%s:%u: %s", file, line, message);
	else
		ion_log(ctx, LOG_ERR, file, 0, ION_LOG_CONF_FN, "%s: %s", file, message);
}
