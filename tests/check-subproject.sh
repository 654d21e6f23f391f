#!/bin/sh
# SPDX-License-Identifier: MIT
#
# libion as a meson subproject must not impose itself on its parent.
# Lays out tests/subproject/ (a tiny parent) with this tree linked in as
# subprojects/libion, then builds it with gcc (default_library=static)
# and with clang (default_library=shared), both -Dwerror=true, and checks:
#  - the parent's default_library decides libion's library type;
#  - cmocka is not even looked up, and QEMU neither;
#  - the parent's `meson test` lists its own test alone (no unit, host,
#    build or VM suite of libion), and it passes;
#  - neither ionctl nor the samples are built, and the parent's install
#    has no ionctl, man page or udev rule of libion's.
# Usage: check-subproject.sh SOURCE_ROOT
set -eu
src=$(cd "$1" && pwd)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail() { echo "check-subproject: $*" >&2; exit 1; }

run() {
	cc=$1 kind=$2
	dir=$tmp/$cc
	mkdir -p "$dir/subprojects"
	cp "$src/tests/subproject/meson.build" "$src/tests/subproject/main.c" "$dir/"
	ln -s "$src" "$dir/subprojects/libion"
	echo "== $cc, default_library=$kind, werror"
	if ! CC=$cc meson setup "$dir/build" "$dir" -Dwerror=true \
		-Ddefault_library="$kind" >"$dir/setup.log" 2>&1; then
		cat "$dir/setup.log" >&2
		fail "$cc: meson setup failed"
	fi
	log=$dir/build/meson-logs/meson-log.txt
	# (meson logs "Dependency cmocka skipped: feature tests disabled")
	! grep -i 'cmocka' "$log" | grep -vq 'skipped: feature tests disabled' ||
		fail "$cc: the subproject looked for cmocka"
	! grep -qi 'qemu-system' "$log" || fail "$cc: the subproject looked for QEMU"
	if ! meson compile -C "$dir/build" >"$dir/compile.log" 2>&1; then
		cat "$dir/compile.log" >&2
		fail "$cc: the build failed with -Dwerror=true"
	fi
	lib=$dir/build/subprojects/libion/src
	case $kind in
	static)
		[ -e "$lib/libion.a" ] || fail "$cc: no libion.a with default_library=static"
		! ls "$lib"/libion.so* >/dev/null 2>&1 || fail "$cc: libion.so built with default_library=static"
		;;
	shared)
		[ -e "$lib/libion.so" ] || fail "$cc: no libion.so with default_library=shared"
		[ ! -e "$lib/libion.a" ] || fail "$cc: libion.a built with default_library=shared"
		;;
	esac
	tests=$(meson introspect --tests "$dir/build" |
		python3 -c 'import json, sys; print(" ".join(t["name"] for t in json.load(sys.stdin)))')
	[ "$tests" = parent ] || fail "$cc: the parent's meson test lists '$tests', not just 'parent'"
	targets=$(meson introspect --targets "$dir/build" |
		python3 -c 'import json, sys; print(" ".join(t["name"] for t in json.load(sys.stdin)))')
	for t in $targets; do
		case $t in
		ionctl|share-buffer|share-constraints|gralloc|devices|pool-stream|test-*)
			fail "$cc: the subproject built $t" ;;
		esac
	done
	installed=$(meson introspect --installed "$dir/build" |
		python3 -c 'import json, sys; print(" ".join(json.load(sys.stdin).values()))')
	for f in $installed; do
		case $f in
		*/bin/ionctl|*/man/*|*.rules)
			fail "$cc: the parent would install $f" ;;
		esac
	done
	if ! meson test -C "$dir/build" >"$dir/test.log" 2>&1; then
		cat "$dir/test.log" "$dir/build/meson-logs/testlog.txt" >&2
		fail "$cc: the parent's test failed"
	fi
	echo "ok: $cc ($kind): built with -Dwerror=true; tests: $tests"
}

run gcc static
if command -v clang >/dev/null 2>&1; then
	run clang shared
else
	echo "clang not installed: only gcc checked"
fi
