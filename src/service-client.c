// SPDX-License-Identifier: MIT
/*
 * The library as a client of iond: when an allocation finds no heap it
 * may use and this process was refused a heap's node (EACCES, EPERM),
 * the request goes to the allocation service, if one listens, and the
 * caller gets the service's buffer, or its refusal (-EDQUOT, -EACCES
 * with the rule).  The wire format is service/'s own (proto.c,
 * client.c), compiled in here under names of the library's, so that a
 * program linking both the static library and those files links.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define iond_request_parse ion_svc_request_parse
#define iond_request_encode ion_svc_request_encode
#define iond_reply_parse ion_svc_reply_parse
#define iond_reply_encode ion_svc_reply_encode
#define iond_client_connect ion_svc_connect
#define iond_client_call ion_svc_call
#define iond_msg_take_fds ion_svc_msg_take_fds
#include "../service/proto.c"
#include "../service/client.c"

#include "constraint.h"
#include "context.h"
#include "registry.h"
#include "service.h"
#include "solver.h"

#ifndef LIBION_SERVICE_SOCKET
#define LIBION_SERVICE_SOCKET "/run/libion/iond.sock"
#endif

/* The socket to try, or NULL: the service is off. */
static const char *service_path(const struct ion_ctx *ctx)
{
	const char *path = ion_ctx_service_path(ctx);

	if (!path)
		path = secure_getenv("ION_SERVICE");
	if (!path)
		return LIBION_SERVICE_SOCKET;
	return *path && strcmp(path, "0") != 0 ? path : NULL;
}

/* A heap this process was refused (its node's permissions), or NULL. */
static const struct ion_heap *refused_heap(const struct ion_registry *reg)
{
	for (unsigned int i = 0; i < reg->n_heaps; i++)
		if (reg->heaps[i]->error == -EACCES || reg->heaps[i]->error == -EPERM)
			return reg->heaps[i];
	return NULL;
}

/* One request to the service, by heap name (or none). */
static int ask(struct ion_ctx *ctx, const char *path, const struct ion_request *req,
	       const char *heap, const char *text, int *ret_fd, char *heap_out, size_t heap_size)
{
	struct iond_request wire = { .op = IOND_OP_ALLOC, .seq = 1, .size = req->len,
				     .flags = req->flags, .heap = heap, .constraints = text };
	struct iond_reply reply;
	char *store = malloc(IOND_REPLY_MAX + 2);
	int sock, r;

	if (!store)
		return -ENOMEM;
	sock = iond_client_connect(path);
	r = sock < 0 ? sock : iond_client_call(sock, &wire, store, IOND_REPLY_MAX + 2, &reply, ret_fd);
	if (sock >= 0)
		close(sock);
	if (r == 0 && reply.error) {
		ion_info(ctx, "iond at %s refused: %s", path, reply.reason);
		r = reply.error;
	} else if (r == 0) {
		const char *h = strstr(reply.data, "heap=");

		snprintf(heap_out, heap_size, "%.*s", h ? (int)strcspn(h + 5, " \n") : 0,
			 h ? h + 5 : "");
		ion_dbg(ctx, "iond at %s gave buffer %llu from %s", path,
			(unsigned long long)reply.id, heap_out);
	}
	free(store);
	return r;
}

int ion_service_alloc(struct ion_ctx *ctx, const struct ion_registry *reg,
		      const struct ion_request *req, int error, int *ret_fd,
		      const struct ion_heap **ret_heap)
{
	const struct ion_heap *refused = refused_heap(reg), *found;
	const char *path = service_path(ctx);
	char *text = NULL, heap[64] = "";
	int r = -ENODEV, fd = -1;

	if (error == -ENOMEM || !refused || !path || access(path, F_OK) != 0)
		return error;
	if (req->n_constraints &&
	    ion_constraints_format(req->constraints, req->n_constraints, &text) < 0)
		return error;
	if (req->heap_mask) {
		/* Android's ids: the heaps of the mask, highest id first */
		for (int id = ION_MAX_IDS - 1; id >= 0 && r == -ENODEV; id--)
			if ((req->heap_mask & (1U << id)) && reg->by_id[id])
				r = ask(ctx, path, req, reg->by_id[id]->name, text, &fd, heap,
					sizeof(heap));
	} else {
		r = ask(ctx, path, req, req->heap_name, text, &fd, heap, sizeof(heap));
	}
	free(text);
	if (r == -ENOENT || r == -ECONNREFUSED)
		return error; /* no service after all: the library's own answer */
	if (r < 0)
		return r;
	found = ion_registry_find_named(reg, heap);
	*ret_fd = fd;
	if (ret_heap)
		*ret_heap = found ? found : refused;
	return 0;
}
