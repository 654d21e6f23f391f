#!/bin/sh
# SPDX-License-Identifier: MIT
# Fails when the symbols libion.so exports and those its version script
# lists differ: a new function needs a line in libion.sym, and a symbol
# in libion.sym must exist.
set -eu
lib=$1
sym=$2
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
nm -D --defined-only "$lib" | awk '$2 == "T" || $2 == "D" || $2 == "B" { sub(/@.*/, "", $3); print $3 }' |
	grep -v '^LIBION_' | sort -u >"$tmp/exported"
sed -n 's/^[[:space:]]*\(ion_[a-z0-9_]*\);.*/\1/p' "$sym" | sort -u >"$tmp/listed"
if ! diff -u "$tmp/listed" "$tmp/exported"; then
	echo "exported symbols (+) and libion.sym (-) disagree" >&2
	exit 1
fi
echo "$(wc -l <"$tmp/exported") symbols exported, all in libion.sym"
