/* SPDX-License-Identifier: MIT */
/*
 * iond's policy: quotas and the heaps each client may have, read from
 * layered iond.d folders (man iond(8), "POLICY"), and resolved for one
 * client (its uid, gid and supplementary groups) into limits that each
 * name the file:line they came from.
 */
#ifndef IOND_POLICY_H
#define IOND_POLICY_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

enum iond_limit {
	IOND_MAX_BYTES,
	IOND_MAX_BUFFERS,
	IOND_MAX_CONTIGUOUS_BYTES,
	IOND_MAX_CONTIGUOUS_BUFFERS,
	IOND_MAX_SCATTERED_BYTES,
	IOND_MAX_SCATTERED_BUFFERS,
	IOND_MAX_CONNECTIONS,
	IOND_LIMIT_COUNT
};
#define IOND_UNLIMITED UINT64_MAX

/* A client's resolved policy.  Strings point into the policy, which
 * outlives it. */
struct iond_limits {
	uint64_t max[IOND_LIMIT_COUNT];
	const char *source[IOND_LIMIT_COUNT];  /* "file:line" or "built-in" */
	const char *heaps;        /* space-separated names, or "*" */
	const char *heaps_source;
};

struct iond_policy;

/*
 * Reads the *.conf files of the folders in paths (':'-separated, highest
 * priority first; a file of the same name in a higher folder masks the
 * lower one, as heaps.d), in version order of their names.  A broken
 * line or section is reported as "file:line: message" through the
 * policy's error count (and stderr) and skipped; the rest stands.
 * 0, or -ENOMEM.
 */
int iond_policy_load(const char *paths, struct iond_policy **ret_policy);
/* The same from text (the fuzzer's and the unit tests' door), printing
 * nothing (iond_policy_error_count() says how many problems it had), and
 * users and groups by number only: no name service is asked. */
int iond_policy_load_text(const char *text, const char *name, struct iond_policy **ret_policy);
void iond_policy_free(struct iond_policy *policy);
int iond_policy_error_count(const struct iond_policy *policy);
/* The limits of a client: its [User] over its [Group]s (first in file
 * order) over [Default] over the built-in defaults, key by key. */
void iond_policy_resolve(const struct iond_policy *policy, uid_t uid, gid_t gid,
			 const gid_t *groups, int n_groups, struct iond_limits *ret);
/* Whether limits allow heap (its name); names a key's word. */
bool iond_limits_allow_heap(const struct iond_limits *limits, const char *heap);
const char *iond_limit_name(enum iond_limit limit);

#endif
