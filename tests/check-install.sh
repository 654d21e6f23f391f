#!/bin/sh
# SPDX-License-Identifier: MIT
# Installs the build into a scratch DESTDIR and builds a consumer the way
# users do, with `pkg-config --cflags --libs libion`, then runs it: the
# header, libion.pc and libion.so.1 must work together once installed.
#
# Where the build made libion.a too, the same consumer is linked against
# it with `pkg-config --static --libs libion`: once with libion.a and the
# dependencies' shared libraries (Requires.private and Libs.private must
# name everything libion.a needs), and once fully static (-static) where
# every library that pkg-config names ships a .a here.  On Debian 12,
# libdrm-dev and libc6-dev ship static libraries but libudev-dev does
# not, so the fully static link is made only in a build without libudev.
set -eu
build=$1
src=$2
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
meson install -C "$build" --destdir "$tmp" --no-rebuild --quiet >/dev/null
pc=$(dirname "$(find "$tmp" -name libion.pc | head -n 1)")
export PKG_CONFIG_PATH="$pc" PKG_CONFIG_SYSROOT_DIR="$tmp"
libdir=$(dirname "$(find "$tmp" -name 'libion.so*' -o -name 'libion.a' | head -n 1)")

# pkg-config must answer without the private dependencies' .pc files
# mattering for a dynamic link: --cflags and --libs alone.
pkg-config --cflags libion >/dev/null
if [ -e "$libdir/libion.so.1" ]; then
	# shellcheck disable=SC2046
	cc -std=c99 -Wall -Werror -o "$tmp/consumer" "$src" $(pkg-config --cflags --libs libion)
	LD_LIBRARY_PATH="$libdir" "$tmp/consumer"
else
	echo "no libion.so.1 (default_library=static): dynamic link not checked"
fi

if [ ! -e "$libdir/libion.a" ]; then
	echo "no libion.a (default_library=shared): static link not checked"
	exit 0
fi
static_libs=$(pkg-config --static --libs libion)
echo "pkg-config --static --libs libion: $static_libs"
# libion.a itself, the dependencies as the system has them.
with_archive=
for word in $static_libs; do
	case $word in
	-lion) with_archive="$with_archive $libdir/libion.a" ;;
	*) with_archive="$with_archive $word" ;;
	esac
done
# shellcheck disable=SC2046,SC2086
cc -std=c99 -Wall -Werror -o "$tmp/consumer-a" "$src" $(pkg-config --cflags libion) $with_archive
"$tmp/consumer-a"
! ldd "$tmp/consumer-a" | grep -q 'libion\.so' || {
	echo "consumer-a loads libion.so: not linked against libion.a" >&2
	exit 1
}

# Fully static, where every -l has its .a.
missing=
for word in $static_libs; do
	case $word in
	-lion) ;;
	-l*)
		a=$(cc -print-file-name="lib${word#-l}.a")
		[ -e "$a" ] || missing="$missing lib${word#-l}.a"
		;;
	esac
done
if [ -n "$missing" ]; then
	echo "fully static link not checked: no$missing here"
	exit 0
fi
# (glibc warns that getpwuid_r in a static program needs its NSS modules
# at run time: the library calls it only to word a permission hint.)
# shellcheck disable=SC2046
cc -std=c99 -Wall -Werror -static -o "$tmp/consumer-static" "$src" \
	$(pkg-config --cflags libion) $(pkg-config --static --libs libion) 2>"$tmp/static.log" || {
	cat "$tmp/static.log" >&2
	exit 1
}
grep -v "getpwuid_r\|getgrgid_r\|in function\|: warning: Using" "$tmp/static.log" >&2 || true
"$tmp/consumer-static"
echo "fully static consumer links and runs"
