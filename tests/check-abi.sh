#!/bin/sh
# SPDX-License-Identifier: MIT
#
# The ABI baseline: each shared library's ABI (abidw) compared with the
# one committed in abi/ (abidiff); any change fails, with abidiff's
# report.  The ABI is what the public headers declare (abi/public.suppr):
# the exported functions and the types they reach, and also the public
# types no function reaches (--load-all-types, --non-reachable-types),
# such as struct ion_heap_data, which ion_query_get_heaps() takes as a
# void *.  tests/build/abi.c checks that struct's layout against the
# kernel's at compile time as well.
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

status=0
for lib in "$@"; do
	name=$(basename "$lib")
	name=${name%%.so*}
	if ! readelf -S "$lib" | grep -q '\.debug_info'; then
		echo "$lib has no debug info: skipped"
		exit 77
	fi
	# No paths that depend on where the tree or the build is.
	abidw --load-all-types --no-corpus-path --no-comp-dir-path \
		--type-id-style hash --out-file "$tmp/$name.abi" "$lib"
	if [ "$update" = 1 ]; then
		cp "$tmp/$name.abi" "$abi/$name.abi"
		echo "wrote $abi/$name.abi: $(grep -c '<elf-symbol ' "$abi/$name.abi") symbols"
		continue
	fi
	# Both sides abixml, read by the same reader.
	if abidiff --suppressions "$abi/public.suppr" --non-reachable-types \
		"$abi/$name.abi" "$tmp/$name.abi" >"$tmp/report"; then
		echo "$name: the ABI of $abi/$name.abi"
	else
		rc=$?
		cat "$tmp/report"
		echo "$name: the ABI differs from $abi/$name.abi (abidiff status $rc)." >&2
		echo "If that is meant (new symbols in a new version node), record it:" >&2
		echo "tests/check-abi.sh --update abi BUILD/src/libion.so.1 BUILD/libion-dmabufheap.so.1" >&2
		status=1
	fi
done
exit $status
