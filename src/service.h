/* SPDX-License-Identifier: MIT */
/* The allocation path's one door to iond (service-client.c). */
#ifndef LIBION_SERVICE_H
#define LIBION_SERVICE_H

struct ion_ctx;
struct ion_heap;
struct ion_registry;
struct ion_request;

/*
 * After the library's own allocation failed with error: where a heap of
 * reg was refused to this process (EACCES, EPERM) and the service is on
 * and listens, the request through iond: 0 with the buffer, or the
 * service's refusal; else error, unchanged.
 */
int ion_service_alloc(struct ion_ctx *ctx, const struct ion_registry *reg,
		      const struct ion_request *req, int error, int *ret_fd,
		      const struct ion_heap **ret_heap);

#endif
