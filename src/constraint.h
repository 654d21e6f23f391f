/* SPDX-License-Identifier: MIT */
/* Constraint sets as text, for another process to AND with its own. */
#ifndef LIBION_CONSTRAINT_H
#define LIBION_CONSTRAINT_H

#include <stddef.h>

#include "solver.h"

/* A constraint that came from another process: refcounted plain data. */
struct ion_remote;

/* The parser's limits, which the formatter keeps too. */
#define ION_CONSTRAINTS_MAX 64
#define ION_CONSTRAINTS_MAX_TEXT (64 * 1024)

/* The constraints as one line of text (malloc'ed); 0, -ENOMEM, or
 * -E2BIG where the text would pass either limit. */

int ion_constraints_format(const struct ion_constraint *const *constraints, size_t n,
			   char **ret_text);
/* The text's constraints (each with a reference); 0, -EINVAL or -ENOMEM,
 * nothing taken on failure. */
int ion_constraints_parse(const char *text, struct ion_remote ***ret, size_t *ret_n);
const struct ion_constraint *ion_remote_constraint(const struct ion_remote *remote);
struct ion_remote *ion_remote_ref(struct ion_remote *remote);
void ion_remote_unref(struct ion_remote *remote);

#endif
