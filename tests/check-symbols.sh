#!/bin/sh
# SPDX-License-Identifier: MIT
# Fails when the symbols a library exports and those its version script
# lists differ: a new function needs a line in the .sym file, and a symbol
# listed there must exist.  Used for libion.so and libion-dmabufheap.so.
set -eu
lib=$1
sym=$2
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
nm -D --defined-only "$lib" | awk '$2 == "T" || $2 == "D" || $2 == "B" { sub(/@.*/, "", $3); print $3 }' |
	grep -v '^LIBION_' | sort -u >"$tmp/exported"
sed -n 's/^[[:space:]]*\([A-Za-z_][A-Za-z0-9_]*\);.*/\1/p' "$sym" | sort -u >"$tmp/listed"
if ! diff -u "$tmp/listed" "$tmp/exported"; then
	echo "exported symbols (+) and $(basename "$sym") (-) disagree" >&2
	exit 1
fi
echo "$(wc -l <"$tmp/exported") symbols exported, all in $(basename "$sym")"
