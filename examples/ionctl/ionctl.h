/* SPDX-License-Identifier: MIT */
/* The shared core of ionctl's subcommands. */
#ifndef IONCTL_H
#define IONCTL_H

#include <stddef.h>

#include <ion/ion.h>

struct ionctl_cmd {
	const char *name;
	const char *summary;
	int (*run)(int argc, char **argv);
};

int ionctl_heaps(int argc, char **argv);
int ionctl_alloc(int argc, char **argv);
int ionctl_bench(int argc, char **argv);

/* Prints "ionctl CMD: MESSAGE[: strerror(-err)]" on stderr; returns 1. */
int ionctl_fail(const char *cmd, int err, const char *format, ...)
	__attribute__((format(printf, 3, 4)));
/* A new context on the real root, or an error printed and NULL. */
struct ion_ctx *ionctl_ctx_new(const char *cmd);
/* "contiguous,cached" and so on, into buf. */
const char *ionctl_props(unsigned int props, char *buf, size_t size);
/* A size with K/M/G suffix; 0 or an error printed and -EINVAL. */
int ionctl_parse_size(const char *cmd, const char *arg, size_t *ret);
/* The heap the samples use when none is named: the one serving
 * ION_HEAP_SYSTEM_MASK (the best system heap of this machine). */
int ionctl_default_heap(struct ion_ctx *ctx, const struct ion_heap **ret);

#endif
