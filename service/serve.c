// SPDX-License-Identifier: MIT
/*
 * The four requests.  An allocation is solved by the library (a heap
 * name, or another process's ionc1 constraints), then the policy picks
 * the best heap the client may have, the quota is checked against that
 * heap's class (after releasing what the client no longer holds), and
 * the buffer is named after the client and charged to its uid.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include <ion/libion.h>

#include "serve.h"

#define REFUSE(ans, err, ...)                                                   \
	do {                                                                    \
		snprintf((ans)->reason, sizeof((ans)->reason), __VA_ARGS__);    \
		(ans)->reply.error = (err);                                     \
	} while (0)

static void data_add(struct iond_answer *ans, const char *format, ...)
	__attribute__((format(printf, 2, 3)));

static void data_add(struct iond_answer *ans, const char *format, ...)
{
	size_t room = sizeof(ans->data) - ans->data_len;
	va_list args;
	int n;

	va_start(args, format);
	n = vsnprintf(ans->data + ans->data_len, room, format, args);
	va_end(args);
	if (n > 0)
		ans->data_len += (size_t)n < room ? (size_t)n : room - 1;
}

void iond_serve_resolve(struct iond_server *srv, struct iond_conn *conn)
{
	iond_policy_resolve(srv->policy, conn->uid, conn->gid, conn->groups, conn->n_groups,
			    &conn->user->limits);
}

static enum iond_class heap_class(const struct ion_heap *heap)
{
	return ion_heap_get_properties(heap) & ION_HEAP_PROP_CONTIGUOUS ? IOND_CONTIGUOUS
									: IOND_SCATTERED;
}

/* The solver's words for a solution with no heap: its first rejections. */
static void why_none(const struct ion_solution *sol, struct iond_answer *ans)
{
	int n = ion_solution_get_rejection_count(sol);
	size_t len;

	len = (size_t)snprintf(ans->reason, sizeof(ans->reason), "no heap fits%s",
			       n > 0 ? ":" : " (no heap has that name)");
	for (int i = 0; i < n && len < sizeof(ans->reason); i++) {
		const struct ion_heap *heap;
		const char *why;

		if (ion_solution_get_rejection(sol, (unsigned int)i, &heap, NULL, &why) == 0)
			len += (size_t)snprintf(ans->reason + len, sizeof(ans->reason) - len,
						"%s %s: %s", i ? ";" : "", ion_heap_get_name(heap), why);
	}
	ans->reply.error = -ENODEV;
}

/* The request as a library config: 0, or the refusal in ans. */
static int make_config(struct iond_server *srv, const struct iond_request *req,
		       struct iond_answer *ans, struct ion_alloc_config **ret)
{
	struct ion_alloc_config *config;
	int r;

	if (req->size > SIZE_MAX) {
		REFUSE(ans, -EINVAL, "size %" PRIu64 " does not fit this machine", req->size);
		return -1;
	}
	if (ion_alloc_config_new(&config) < 0) {
		REFUSE(ans, -ENOMEM, "out of memory");
		return -1;
	}
	r = ion_alloc_config_set_size(config, (size_t)req->size);
	if (r == 0 && (r = ion_alloc_config_set_flags(config, req->flags)) < 0)
		REFUSE(ans, r, "flags 0x%x: only ION_FLAG_CACHED (1) and "
		       "ION_FLAG_CACHED_NEEDS_SYNC (2) are known", req->flags);
	else if (r == 0 && req->heap[0] && (r = ion_alloc_config_set_heap(config, req->heap)) < 0)
		REFUSE(ans, r, "heap name refused");
	else if (r == 0 && req->constraints[0] &&
		 (r = ion_alloc_config_add_constraints(config, req->constraints)) < 0)
		REFUSE(ans, r, "the constraint text is not an ionc1 set the library takes "
		       "(README, Constraints across processes)");
	else if (r < 0)
		REFUSE(ans, r, "size refused");
	if (r < 0) {
		ion_alloc_config_free(config);
		return -1;
	}
	(void)srv;
	*ret = config;
	return 0;
}

/* Allocates from heap alone (the client's request, narrowed to it). */
static int alloc_from(struct iond_server *srv, struct ion_alloc_config *config,
		      const struct ion_heap *heap, int *ret_fd)
{
	int r = ion_alloc_config_set_heap(config, ion_heap_get_name(heap));

	if (r == 0)
		r = ion_alloc_config_set_fallback(config, 0);
	return r < 0 ? r : ion_ctx_allocate(srv->ctx, config, ret_fd, NULL);
}

/* Names the buffer after the client: "PID:COMM" (and ":NAME" it gave). */
static void name_buffer(const struct iond_conn *conn, const char *name, int fd)
{
	char full[32];

	snprintf(full, sizeof(full), "%d:%s%s%s", (int)conn->pid, conn->comm, name[0] ? ":" : "",
		 name);
	ion_fd_set_name(fd, full); /* memfd: fixed at creation, and that is fine */
}

/* Quota for heap's class, after releasing what the user no longer holds. */
static int quota(struct iond_server *srv, struct iond_conn *conn, uint64_t size,
		 enum iond_class cls, struct iond_answer *ans)
{
	int r = iond_account_check(conn->user, size, cls, ans->reason, sizeof(ans->reason));

	if (r == -EDQUOT && iond_account_sweep(&srv->acct, conn->uid) > 0)
		r = iond_account_check(conn->user, size, cls, ans->reason, sizeof(ans->reason));
	if (r < 0)
		ans->reply.error = r;
	return r;
}

static void serve_alloc_heaps(struct iond_server *srv, struct iond_conn *conn,
			      const struct iond_request *req, struct ion_alloc_config *config,
			      const struct ion_solution *sol, struct iond_answer *ans)
{
	const struct iond_limits *lim = &conn->user->limits;
	const struct ion_heap *heap, *denied = NULL;
	int fd = -1, r = -ENODEV;
	uint64_t id;

	for (unsigned int i = 0; (heap = ion_solution_get_heap(sol, i)); i++) {
		if (!iond_limits_allow_heap(lim, ion_heap_get_name(heap))) {
			denied = denied ? denied : heap;
			continue;
		}
		if (quota(srv, conn, ion_solution_get_size(sol), heap_class(heap), ans) < 0)
			return;
		r = alloc_from(srv, config, heap, &fd);
		if (r != -ENOMEM)
			break;
	}
	if (denied && r == -ENODEV) {
		REFUSE(ans, -EACCES, "heap %s is not one uid %u may have: Heaps = %s (%s)",
		       ion_heap_get_name(denied), (unsigned int)conn->uid, lim->heaps,
		       lim->heaps_source);
		return;
	}
	if (r < 0) {
		REFUSE(ans, r, "%s: %s", heap ? ion_heap_get_name(heap) : "the heaps",
		       strerror(-r));
		return;
	}
	name_buffer(conn, req->name, fd);
	r = iond_account_add(&srv->acct, conn->user, fd, ion_solution_get_size(sol),
			     heap_class(heap), ion_heap_get_name(heap), conn->pid, conn,
			     !(ion_heap_get_properties(heap) & ION_HEAP_PROP_CPU_ONLY), &id);
	if (r < 0) {
		REFUSE(ans, r, "out of memory");
		return;
	}
	ans->fd = fd;
	ans->reply.id = id;
	ans->reply.size = ion_solution_get_size(sol);
	data_add(ans, "heap=%s class=%s\n", ion_heap_get_name(heap),
		 heap_class(heap) == IOND_CONTIGUOUS ? "contiguous" : "scattered");
}

static void serve_alloc(struct iond_server *srv, struct iond_conn *conn,
			const struct iond_request *req, struct iond_answer *ans)
{
	struct ion_alloc_config *config;
	struct ion_solution *sol;
	int r;

	/* the totals first: a size no quota allows is not even solved */
	r = iond_account_check_total(conn->user, req->size, ans->reason, sizeof(ans->reason));
	if (r == -EDQUOT && iond_account_sweep(&srv->acct, conn->uid) > 0)
		r = iond_account_check_total(conn->user, req->size, ans->reason, sizeof(ans->reason));
	if (r < 0) {
		ans->reply.error = r;
		return;
	}
	if (make_config(srv, req, ans, &config) < 0)
		return;
	r = ion_ctx_solve(srv->ctx, config, &sol);
	if (r < 0)
		REFUSE(ans, r, "the request cannot be solved: %s", strerror(-r));
	else if (ion_solution_get_heap_count(sol) == 0)
		why_none(sol, ans);
	else
		serve_alloc_heaps(srv, conn, req, config, sol, ans);
	if (r == 0)
		ion_solution_unref(sol);
	ion_alloc_config_free(config);
}

static void serve_heaps(struct iond_server *srv, struct iond_conn *conn,
			struct iond_answer *ans)
{
	int n = ion_ctx_get_heap_count(srv->ctx);
	const struct ion_heap *heap;

	for (int i = 0; i < n; i++) {
		if (ion_ctx_get_heap(srv->ctx, (unsigned int)i, &heap) < 0)
			continue;
		data_add(ans, "heap name=%s backend=%s class=%s available=%s allowed=%s\n",
			 ion_heap_get_name(heap), ion_heap_get_backend(heap),
			 heap_class(heap) == IOND_CONTIGUOUS ? "contiguous" : "scattered",
			 ion_heap_get_error(heap) ? "no" : "yes",
			 iond_limits_allow_heap(&conn->user->limits, ion_heap_get_name(heap)) ? "yes"
											   : "no");
	}
	if (n < 0)
		REFUSE(ans, n, "discovery failed: %s", strerror(-n));
}

static void usage_of(struct iond_server *srv, const struct iond_user *u, struct iond_answer *ans)
{
	char heaps[256];

	data_add(ans, "user uid=%u connections=%u bytes=%" PRIu64 " buffers=%" PRIu64
		 " contiguous_bytes=%" PRIu64 " contiguous_buffers=%" PRIu64
		 " scattered_bytes=%" PRIu64 " scattered_buffers=%" PRIu64 "\n",
		 (unsigned int)u->uid, u->connections, u->bytes[0] + u->bytes[1],
		 u->buffers[0] + u->buffers[1], u->bytes[IOND_CONTIGUOUS],
		 u->buffers[IOND_CONTIGUOUS], u->bytes[IOND_SCATTERED], u->buffers[IOND_SCATTERED]);
	for (int k = 0; k < IOND_LIMIT_COUNT; k++) {
		char max[24] = "infinity";

		if (u->limits.max[k] != IOND_UNLIMITED)
			snprintf(max, sizeof(max), "%" PRIu64, u->limits.max[k]);
		data_add(ans, "limit uid=%u key=%s max=%s source=%s\n", (unsigned int)u->uid,
			 iond_limit_name(k), max, u->limits.source[k]);
	}
	snprintf(heaps, sizeof(heaps), "%s", u->limits.heaps);
	for (char *p = heaps; *p; p++)
		*p = *p == ' ' ? ',' : *p;
	data_add(ans, "heaps uid=%u allowed=%s source=%s\n", (unsigned int)u->uid, heaps,
		 u->limits.heaps_source);
	for (size_t i = 0; i < srv->acct.n_buffers; i++) {
		const struct iond_buffer *b = &srv->acct.buffers[i];

		if (b->uid == u->uid)
			data_add(ans, "buffer uid=%u id=%" PRIu64 " heap=%s class=%s size=%" PRIu64
				 " pid=%d refs=%d\n", (unsigned int)b->uid, b->id, b->heap,
				 b->cls == IOND_CONTIGUOUS ? "contiguous" : "scattered", b->size,
				 (int)b->pid, b->tracked ? iond_fd_refs(b->fd) : -1);
	}
}

static void serve_usage(struct iond_server *srv, struct iond_conn *conn,
			const struct iond_request *req, struct iond_answer *ans)
{
	bool all = req->flags & IOND_USAGE_ALL;

	if (all && conn->uid != 0 && conn->uid != srv->own_uid) {
		REFUSE(ans, -EPERM, "only root and the service's own uid see every client");
		return;
	}
	iond_account_sweep(&srv->acct, all ? (uid_t)-1 : conn->uid);
	for (size_t i = 0; i < srv->acct.n_users; i++)
		if (all || srv->acct.users[i]->uid == conn->uid)
			usage_of(srv, srv->acct.users[i], ans);
}

void iond_serve(struct iond_server *srv, struct iond_conn *conn,
		const struct iond_request *req, struct iond_answer *ans)
{
	ans->reply = (struct iond_reply){ .op = req->op, .seq = req->seq };
	ans->fd = -1;
	ans->reason[0] = '\0';
	ans->data[0] = '\0';
	ans->data_len = 0;
	switch (req->op) {
	case IOND_OP_ALLOC:
		serve_alloc(srv, conn, req, ans);
		break;
	case IOND_OP_FREE:
		ans->reply.error = iond_account_free(&srv->acct, conn->uid, req->id, ans->reason,
						     sizeof(ans->reason));
		break;
	case IOND_OP_HEAPS:
		serve_heaps(srv, conn, ans);
		break;
	case IOND_OP_USAGE:
		serve_usage(srv, conn, req, ans);
		break;
	}
	ans->reply.reason = ans->reason;
	ans->reply.data = ans->data;
}
