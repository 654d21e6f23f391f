#!/bin/sh
# SPDX-License-Identifier: MIT
#
# The Debian packages (debian/) build and pass lintian: a copy of the
# tree (git's files, committed or not; no build folders) is built with
# `dpkg-buildpackage -us -uc` in a temporary folder, so the source tree
# stays clean, and lintian checks the source and binary packages,
# failing on any error or warning (pedantic and experimental tags are
# shown too).  Before that, debian/*.symbols must be what
# debian/symbols.sh makes of the version scripts: every exported symbol
# with the release it appeared in.  After it, the packaged ionctl, run on
# the packaged library (unpacked, not installed), checks the packaged
# board files.
#
# Usage: check-deb.sh SOURCE_ROOT
#        check-deb.sh --symbols SOURCE_ROOT   (the symbols files alone: the
#                                              build suite, no Debian tools)
# Skips (77) where dpkg-buildpackage, debhelper or lintian is missing.
set -eu
symbols_only=0
if [ "$1" = --symbols ]; then
	symbols_only=1
	shift
fi
src=$(cd "$1" && pwd)
fail() { echo "check-deb: $*" >&2; exit 1; }

cd "$src"
for lib in libion:libion1:libion-dev libion-dmabufheap:libion-dmabufheap1:libion-dmabufheap-dev; do
	IFS=: read -r name pkg dev <<-END
	$lib
	END
	if ! debian/symbols.sh "$name.so.1" "$pkg" "$dev" "src/$name.sym" |
		diff -u "debian/$pkg.symbols" -; then
		fail "debian/$pkg.symbols is not src/$name.sym's symbols: run
  debian/symbols.sh $name.so.1 $pkg $dev src/$name.sym > debian/$pkg.symbols"
	fi
	echo "debian/$pkg.symbols: src/$name.sym's symbols"
done
[ "$symbols_only" = 0 ] || exit 0
for tool in dpkg-buildpackage dh lintian; do
	command -v "$tool" >/dev/null || { echo "$tool not found (tests/deps.sh installs it): skipped"; exit 77; }
done

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
mkdir "$tmp/libion"
# The top of a git work tree (not a tarball unpacked inside one, as
# meson dist does in an ignored build folder).
if [ "$(git -C "$src" rev-parse --show-toplevel 2>/dev/null)" = "$src" ]; then
	# Tracked and new files, as they are in the work tree (a file deleted
	# but not yet committed is left out).
	git -C "$src" ls-files -co --exclude-standard |
		while IFS= read -r f; do [ -e "$f" ] && printf '%s\n' "$f"; done |
		tar -c -T - | tar -x -C "$tmp/libion"
else
	# Not a git tree (a meson dist tarball): everything but build folders.
	tar -c --exclude-tag-all=build.ninja . | tar -x -C "$tmp/libion"
fi

start=$(date +%s)
cd "$tmp/libion"
DEB_BUILD_OPTIONS="${DEB_BUILD_OPTIONS:-} parallel=$(nproc)"
export DEB_BUILD_OPTIONS
if ! dpkg-buildpackage -us -uc >"$tmp/build.log" 2>&1; then
	tail -n 40 "$tmp/build.log"
	fail "dpkg-buildpackage failed (log above)"
fi
built=$(date +%s)
echo "built in $((built - start)) s:"
for f in "$tmp"/*.deb "$tmp"/*.dsc "$tmp"/*.changes; do
	[ ! -e "$f" ] || echo "  ${f##*/}"
done

changes=$(ls "$tmp"/*.changes)
status=0
lintian -i -E --pedantic --fail-on error,warning "$changes" >"$tmp/lintian.log" 2>&1 || status=$?
grep -v '^running with root privileges' "$tmp/lintian.log" || true
echo "lintian in $(($(date +%s) - built)) s: $(grep -c '^[EWIPX]: ' "$tmp/lintian.log" || true) tags"
[ "$status" = 0 ] || fail "lintian reports errors or warnings (exit $status)"

# The packaged ionctl runs on the packaged library, unpacked (not
# installed: the machine stays as it was), and reads the packaged board
# files.
root=$tmp/root
for deb in "$tmp"/libion1_*.deb "$tmp"/libion-common_*.deb "$tmp"/ionctl_*.deb; do
	dpkg-deb -x "$deb" "$root"
done
libdir=$(dirname "$(find "$root" -name 'libion.so.1' | head -n 1)")
LD_LIBRARY_PATH=$libdir ldd "$root/usr/bin/ionctl" | grep -q "libion.so.1 => $libdir/" ||
	fail "the packaged ionctl does not load the packaged libion.so.1"
LD_LIBRARY_PATH=$libdir "$root/usr/bin/ionctl" check "$root/usr/share/libion/heaps.d" ||
	fail "the packaged ionctl refuses the packaged board files"
