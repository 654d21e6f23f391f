#!/bin/sh
# SPDX-License-Identifier: MIT
# Android code builds unchanged against the installed libion-dmabufheap:
# installs the build into a scratch DESTDIR, then builds a C program and,
# where there is a C++ compiler, a C++ one with nothing but
# `pkg-config --cflags --libs libion-dmabufheap`, and runs them.  Where
# the build made the .a files too, the C program is linked once more
# against libion-dmabufheap.a and libion.a (`pkg-config --static`).
# Usage: check-dmabufheap-install.sh BUILD_DIR C_SOURCE CXX_SOURCE
set -eu
build=$1
c_src=$2
cxx_src=$3
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
meson install -C "$build" --destdir "$tmp" --no-rebuild --quiet >/dev/null
pc=$(dirname "$(find "$tmp" -name libion-dmabufheap.pc | head -n 1)")
export PKG_CONFIG_PATH="$pc" PKG_CONFIG_SYSROOT_DIR="$tmp"
libdir=$(dirname "$(find "$tmp" -name 'libion-dmabufheap.so*' -o -name 'libion-dmabufheap.a' | head -n 1)")
export LD_LIBRARY_PATH="$libdir"
flags=$(pkg-config --cflags --libs libion-dmabufheap)
echo "pkg-config --cflags --libs libion-dmabufheap: $flags"

if [ -e "$libdir/libion-dmabufheap.so.1" ]; then
	# shellcheck disable=SC2086
	cc -std=c99 -Wall -Wextra -Werror -o "$tmp/consumer" "$c_src" $flags
	"$tmp/consumer"
	if command -v c++ >/dev/null 2>&1; then
		# shellcheck disable=SC2086
		c++ -std=c++17 -Wall -Wextra -Werror -o "$tmp/consumer-cxx" "$cxx_src" $flags
		"$tmp/consumer-cxx"
	else
		echo "no C++ compiler: the C++ consumer is not checked"
	fi
else
	echo "no libion-dmabufheap.so.1 (default_library=static): dynamic link not checked"
fi

[ -e "$libdir/libion-dmabufheap.a" ] || exit 0
with_archives=
for word in $(pkg-config --static --libs libion-dmabufheap); do
	case $word in
	-lion-dmabufheap) with_archives="$with_archives $libdir/libion-dmabufheap.a" ;;
	-lion) with_archives="$with_archives $libdir/libion.a" ;;
	*) with_archives="$with_archives $word" ;;
	esac
done
# shellcheck disable=SC2046,SC2086
cc -std=c99 -Wall -Wextra -Werror -o "$tmp/consumer-a" "$c_src" \
	$(pkg-config --cflags libion-dmabufheap) $with_archives
"$tmp/consumer-a"
! ldd "$tmp/consumer-a" | grep -q 'libion' || {
	echo "consumer-a loads a shared libion: not linked against the archives" >&2
	exit 1
}
