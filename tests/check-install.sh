#!/bin/sh
# SPDX-License-Identifier: MIT
# Installs the build into a scratch DESTDIR and builds a consumer the way
# users do, with `pkg-config --cflags --libs libion`, then runs it: the
# header, libion.pc and libion.so.1 must work together once installed.
set -eu
build=$1
src=$2
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
meson install -C "$build" --destdir "$tmp" --no-rebuild --quiet >/dev/null
pc=$(dirname "$(find "$tmp" -name libion.pc | head -n 1)")
export PKG_CONFIG_PATH="$pc" PKG_CONFIG_SYSROOT_DIR="$tmp"
# shellcheck disable=SC2046
cc -std=c99 -Wall -Werror -o "$tmp/consumer" "$src" $(pkg-config --cflags --libs libion)
libdir=$(dirname "$(find "$tmp" -name 'libion.so.1' | head -n 1)")
LD_LIBRARY_PATH="$libdir" "$tmp/consumer"
