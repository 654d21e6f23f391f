// SPDX-License-Identifier: MIT
/*
 * make-faketree FILE DIR: builds the fake machine that a tree file
 * describes (tests/lib/faketree.h) into DIR, for scripts that run ionctl
 * with --sysroot DIR.  DIR is made if missing; it must not hold a tree
 * already.  Exit status 0, 1 when the file is wrong or the tree cannot be
 * built (the message says where), 2 on a usage error.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

#include "faketree.h"

int main(int argc, char **argv)
{
	char err[512];
	int r;

	if (argc != 3) {
		fprintf(stderr, "usage: make-faketree FILE DIR\n");
		return 2;
	}
	if (mkdir(argv[2], 0755) < 0 && errno != EEXIST) {
		fprintf(stderr, "make-faketree: mkdir %s: %s\n", argv[2], strerror(errno));
		return 1;
	}
	r = faketree_build(argv[1], argv[2], err, sizeof(err));
	if (r < 0) {
		fprintf(stderr, "make-faketree: %s\n", err);
		return 1;
	}
	return 0;
}
