/* SPDX-License-Identifier: MIT */
/*
 * The solver: (frozen registry, request) -> the heaps that can serve the
 * request, best first, and why every other heap cannot.  A pure function:
 * no I/O, no lock, nothing written but its output.
 */
#ifndef LIBION_SOLVER_H
#define LIBION_SOLVER_H

#include <stdbool.h>
#include <stddef.h>

#include "heaps-conf.h"
#include "registry.h"

/* What every entry point turns its arguments into. */
struct ion_request {
	size_t len;		/* page-rounded, nonzero */
	unsigned int flags;	/* ION_FLAG_CACHED, ION_FLAG_CACHED_NEEDS_SYNC */
	unsigned int heap_mask;	/* compat ids; 0: any */
	const char *heap_name;	/* name or alias ("cma" too); NULL: any */
	bool fallback;		/* -ENOMEM passes to the next candidate */
	bool no_cpu_access;	/* the CPU never maps it: protected heaps fit */
	const struct ion_constraint *const *constraints; /* AND-ed */
	size_t n_constraints;
};

struct ion_rejection {
	const struct ion_heap *heap;
	const struct ion_constraint *by; /* the device that excluded it, or NULL */
	char *reason;		/* malloc'ed */
};

/* Reasons are collected only when someone will read them. */
struct ion_rejections {
	struct ion_rejection *v;
	unsigned int n;
};

/*
 * Writes the candidates, best first, to heaps (room for reg->n_heaps) and
 * returns how many; with none, *ret_error is what allocating would answer
 * (-ENODEV, or the named heap's own error).  rej (may be NULL) receives
 * every heap left out with its reason.  0 candidates is no failure;
 * the only failure is -ENOMEM while collecting reasons.
 */
int ion_solve(const struct ion_registry *reg, const struct ion_request *req,
	      const struct ion_heap **heaps, int *ret_error,
	      struct ion_rejections *rej);
void ion_rejections_clear(struct ion_rejections *rej);

/* Rounds len up to whole pages; -EINVAL for 0 or overflow. */
int ion_round_len(size_t len, size_t *ret_len);

#endif
