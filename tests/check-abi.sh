#!/bin/sh
# SPDX-License-Identifier: MIT
#
# The ABI baseline: each shared library's ABI (abidw) compared with the
# one committed in abi/ (abidiff); any change fails, with abidiff's
# report.  Two comparisons, both on abixml read by the same reader:
#  1. the exported functions and every type they reach, changes to types
#     of src/ and the system's headers left out (abi/public.suppr): a
#     field added to struct ion_ctx, opaque to callers, is no ABI change;
#  2. the public headers' named types (their structs, enums and typedefs,
#     read from the headers here), reached by a function or not
#     (--non-reachable-types): struct ion_heap_data, which
#     ion_query_get_heaps() takes as a void *, above all.  (Not every
#     unreachable type: which declarations of system and internal types
#     the debug info holds changes with the code and the compiler.)
# tests/build/abi.c checks ion_heap_data's layout against the kernel's at
# compile time as well.
#
# The baselines are x86_64 builds with debug info (meson's default
# buildtype): without debug info there is nothing to compare (exit 77).
#
# Usage: check-abi.sh ABI_DIR LIBRARY.so.N...
#        check-abi.sh --update ABI_DIR LIBRARY.so.N...   (README, "Releasing")
set -eu
update=0
if [ "$1" = --update ]; then
	update=1
	shift
fi
abi=$1
shift
if ! command -v abidiff >/dev/null || ! command -v abidw >/dev/null; then
	echo "abidw or abidiff not found (Debian: abigail-tools): skipped"
	exit 77
fi
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# The public headers' named types, as a libabigail suppression of every
# other type.
names=$(sed -nE -e 's/^[[:space:]]*(struct|enum|union)[[:space:]]+([A-Za-z_][A-Za-z0-9_]*)[[:space:]]*\{.*/\2/p' \
	-e 's/^typedef[^;(]*[[:space:]*]([A-Za-z_][A-Za-z0-9_]*);.*/\1/p' \
	-e 's/^typedef[^(]*\(\*([A-Za-z_][A-Za-z0-9_]*)\).*/\1/p' \
	-e 's/^\}[[:space:]]*([A-Za-z_][A-Za-z0-9_]*);.*/\1/p' \
	"$abi"/../include/ion/*.h "$abi"/../include/BufferAllocator/*.h | sort -u)
[ -n "$names" ] || { echo "no public types found under $abi/../include" >&2; exit 1; }
printf '[suppress_type]\n  name_not_regexp = ^(%s)$\n' "$(echo "$names" | paste -s -d '|')" >"$tmp/public-types.suppr"

status=0
for lib in "$@"; do
	name=$(basename "$lib")
	name=${name%%.so*}
	if ! readelf -S "$lib" | grep -q '\.debug_info'; then
		echo "$lib has no debug info: skipped"
		exit 77
	fi
	# No paths that depend on where the tree or the build is.  Without
	# --drop-undefined-syms, libabigail 2.2 takes the declaration of a
	# function that other files of the library call for its definition,
	# and 15 of libion's 113 functions lost their types.
	abidw --load-all-types --drop-undefined-syms --no-corpus-path \
		--no-comp-dir-path --type-id-style hash \
		--out-file "$tmp/$name.abi" "$lib"
	if [ "$update" = 1 ]; then
		cp "$tmp/$name.abi" "$abi/$name.abi"
		echo "wrote $abi/$name.abi: $(grep -c '<elf-symbol ' "$abi/$name.abi") symbols"
		continue
	fi
	rc=0
	abidiff --suppressions "$abi/public.suppr" \
		"$abi/$name.abi" "$tmp/$name.abi" >"$tmp/report" || rc=$?
	[ "$rc" != 0 ] || abidiff --suppressions "$tmp/public-types.suppr" --non-reachable-types \
		"$abi/$name.abi" "$tmp/$name.abi" >"$tmp/report" || rc=$?
	if [ "$rc" = 0 ]; then
		echo "$name: the ABI of $abi/$name.abi"
	else
		cat "$tmp/report"
		echo "$name: the ABI differs from $abi/$name.abi (abidiff status $rc)." >&2
		echo "If that is meant (new symbols in a new version node), record it:" >&2
		echo "tests/check-abi.sh --update abi BUILD/src/libion.so.1 BUILD/libion-dmabufheap.so.1" >&2
		echo "(and the symbols files: tests/check-deb.sh --symbols . says how)" >&2
		status=1
	fi
done
exit $status
