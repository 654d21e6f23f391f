/* SPDX-License-Identifier: MIT */
/* The shared core of ionctl's subcommands. */
#ifndef IONCTL_H
#define IONCTL_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include <ion/ion.h>

struct ionctl_cmd {
	const char *name;
	const char *summary;
	int (*run)(int argc, char **argv);
};

int ionctl_heaps(int argc, char **argv);
int ionctl_alloc(int argc, char **argv);
int ionctl_bench(int argc, char **argv);
int ionctl_devices(int argc, char **argv);
int ionctl_solve(int argc, char **argv);
int ionctl_explain(int argc, char **argv);
int ionctl_check(int argc, char **argv);
int ionctl_pool(int argc, char **argv);
int ionctl_record(int argc, char **argv);
int ionctl_service(int argc, char **argv);

/* Exit statuses: a "no" answer and runtime failures are 1, usage errors 2. */
#define IONCTL_NO 1
#define IONCTL_USAGE 2

/* Prints "ionctl CMD: MESSAGE[: strerror(-err)]" on stderr; returns 1. */
int ionctl_fail(const char *cmd, int err, const char *format, ...)
	__attribute__((format(printf, 3, 4)));
/* The same for a usage error; returns 2. */
int ionctl_usage_error(const char *cmd, const char *format, ...)
	__attribute__((format(printf, 2, 3)));
/* A new context on --sysroot (default: the real root) with --config-dir
 * (default: heaps.d's own folders), or an error printed and NULL. */
struct ion_ctx *ionctl_ctx_new(const char *cmd);
/* The global options, for subcommands that make contexts of their own. */
extern const char *ionctl_sysroot;
extern const char *ionctl_config_dir;
/*
 * Every --json output is one object, described by ionctl.schema.json:
 * {"version": IONCTL_JSON_VERSION, "command": "heaps", ...}.
 * ionctl_json_begin() prints it up to the command's name, the command
 * adds its keys (each after ", "), ionctl_json_end() closes it.
 */
#define IONCTL_JSON_VERSION 1
void ionctl_json_begin(const char *cmd);
void ionctl_json_end(void);
/*
 * Progress on stderr, "ionctl CMD: what...", once a command has run for
 * 2 s (IONCTL_PROGRESS_AFTER seconds), and only when stderr is a terminal
 * (one line, rewritten in place);
 * ionctl_progress_done() clears it before the command's last words.
 */
void ionctl_progress(const char *cmd, const char *format, ...)
	__attribute__((format(printf, 2, 3)));
void ionctl_progress_done(void);
/* A JSON string (or null), escaped. */
void ionctl_json_string(const char *s);
/* {"key": ..., "value": ..., "source": ...}, after ", " unless index is 0. */
void ionctl_json_triple(int index, const char *key, const char *value,
			const char *source);
/*
 * Each DEVICE argument as a device (references, *ret_devices malloc'ed);
 * 0, or an error printed and the negative errno.
 */
int ionctl_get_devices(const char *cmd, struct ion_ctx *ctx, int argc,
		       char **argv, struct ion_device ***ret_devices);
void ionctl_put_devices(struct ion_device **devices, int n);
/* CLOCK_MONOTONIC in ns; the median of n values (sorts them). */
double ionctl_now_ns(void);
double ionctl_median(double *values, size_t n);
/* ionctl record: the tree (cmd-record.c), the draft board file
 * (cmd-record-draft.c); 0, a negative errno, or 1 when the draft has
 * said why it failed. */
int ionctl_record_tree(FILE *out, const char *sysroot);
int ionctl_record_draft(FILE *out);
/* ionctl bench --pool (bench-pool.c). */
int ionctl_bench_pool(const char *only, const size_t *sizes, size_t n_sizes,
		      unsigned int rounds, unsigned int stream_s, int json);
/* ionctl bench --service (bench-service.c): through iond at socket_path,
 * or one it starts from the binary iond (NULL: none), beside the direct
 * call. */
int ionctl_bench_service(const char *socket_path, const char *iond, const char *only,
			 const size_t *sizes, size_t n_sizes, unsigned int rounds,
			 unsigned int n_clients, int json);
/* ionctl bench --solve (bench-solve.c). */
int ionctl_bench_solve(unsigned int n_devices, unsigned int rounds, int json,
		       char **specs, int n_specs);
/* A device and its constraint, as JSON or as indented text. */
void ionctl_print_device_json(const struct ion_device *dev);
void ionctl_print_device_text(const struct ion_device *dev, const char *indent);
/* Solves for the devices and another process's constraints (text, or
 * NULL); 0, or an error printed and the negative errno. */
int ionctl_solve_for(const char *cmd, struct ion_ctx *ctx,
		     struct ion_device **devices, int n, const char *constraints, size_t size,
		     unsigned int flags, struct ion_solution **ret);
/* "contiguous,cached" and so on, into buf. */
const char *ionctl_props(unsigned int props, char *buf, size_t size);
/* A decimal number, strictly; 0 or -EINVAL. */
int ionctl_parse_u64(const char *arg, uint64_t *ret);
/* A size with K/M/G suffix; 0 or an error printed and -EINVAL. */
int ionctl_parse_size(const char *cmd, const char *arg, size_t *ret);
/*
 * The heap --heap NAME names, available: 0, or an error printed (no heap
 * of that name, with the names there are; or why it is unavailable) and
 * the negative errno.
 */
int ionctl_find_heap(const char *cmd, struct ion_ctx *ctx, const char *name,
		     const struct ion_heap **ret);
/* The heap the samples use when none is named: the one serving
 * ION_HEAP_SYSTEM_MASK (the best system heap of this machine). */
int ionctl_default_heap(struct ion_ctx *ctx, const struct ion_heap **ret);

#endif
