#!/bin/sh
# SPDX-License-Identifier: MIT
#
# One version, said everywhere it is said: meson.build's project(), the
# header's LIBION_VERSION_* (also checked when meson configures), the
# top entry of NEWS, debian/changelog's top entry, and, given a build,
# libion.pc's Version and the library's file name.
#
# Usage: check-version.sh SOURCE_ROOT [BUILD_DIR] [--release]
# --release adds what a tag needs (README, "Releasing"): NEWS's top entry
# dated (YYYY-MM-DD), not "unreleased"; debian/changelog's entry not
# UNRELEASED; a clean git tree; no tag vVERSION yet.
set -eu
src=$1
shift
build=
release=0
for arg in "$@"; do
	case $arg in
	--release) release=1 ;;
	*) build=$arg ;;
	esac
done
fail() { echo "check-version: $*" >&2; exit 1; }

version=$(meson introspect --projectinfo "$src/meson.build" |
	python3 -c 'import json, sys; print(json.load(sys.stdin)["version"])')
echo "project(): $version"
major=${version%%.*}
rest=${version#*.}
minor=${rest%%.*}
micro=${rest#*.}
for part in "MAJOR $major" "MINOR $minor" "MICRO $micro"; do
	set -- $part
	got=$(sed -n "s/^#define LIBION_VERSION_$1 \([0-9]*\)\$/\1/p" "$src/include/ion/libion.h")
	[ "$got" = "$2" ] || fail "include/ion/libion.h: LIBION_VERSION_$1 is '$got', project() says $2"
done

top=$(grep -m 1 '^libion ' "$src/NEWS") || fail "NEWS has no 'libion X.Y.Z' entry"
news_version=$(echo "$top" | cut -d' ' -f2)
[ "$news_version" = "$version" ] ||
	fail "NEWS's top entry is '$top', not libion $version"
echo "NEWS: $top"

# debian/changelog: a native package, its version the project's; while
# NEWS says "unreleased", the distribution is UNRELEASED.
deb=$(sed -n '1s/^libion (\([^)]*\)) \([^;]*\);.*/\1 \2/p' "$src/debian/changelog")
deb_version=${deb%% *}
deb_dist=${deb#* }
[ "$deb_version" = "$version" ] ||
	fail "debian/changelog's top entry is '$deb_version', not $version (dch -v $version)"
case $top in
*unreleased*) [ "$deb_dist" = UNRELEASED ] ||
	fail "NEWS says unreleased, debian/changelog says $deb_dist" ;;
esac
echo "debian/changelog: $deb_version $deb_dist"

if [ -n "$build" ]; then
	pc=$build/meson-private/libion.pc
	pc_version=$(sed -n 's/^Version: //p' "$pc")
	[ "$pc_version" = "$version" ] || fail "$pc: Version $pc_version, not $version"
	if [ -e "$build/src/libion.so.$version" ]; then
		echo "library: libion.so.$version"
	elif ls "$build"/src/libion.so* >/dev/null 2>&1; then
		fail "$build/src has no libion.so.$version"
	fi
fi

if [ "$release" = 1 ]; then
	echo "$top" | grep -Eq "^libion $version \([0-9]{4}-[0-9]{2}-[0-9]{2}\)\$" ||
		fail "NEWS: '$top' is not dated as 'libion $version (YYYY-MM-DD)'"
	[ -z "$(git -C "$src" status --porcelain)" ] || fail "the git tree has uncommitted changes"
	[ "$deb_dist" != UNRELEASED ] ||
		fail "debian/changelog: UNRELEASED (dch -r, or set the distribution)"
	! git -C "$src" rev-parse -q --verify "refs/tags/v$version" >/dev/null ||
		fail "tag v$version exists already"
	echo "ready to tag v$version"
fi
echo "ok: version $version agrees"
