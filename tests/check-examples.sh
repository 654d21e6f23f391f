#!/bin/sh
# SPDX-License-Identifier: MIT
#
# The samples of examples/ build out of tree against the installed library
# through pkg-config alone, as their comments say, and run on this machine:
#  1. meson install into a scratch DESTDIR;
#  2. each sample: cc -std=c11 -Wall -Wextra -Werror FILE
#     $(pkg-config --cflags --libs libion), then run it (exit 0; 77 would
#     count as a skip);
#     camera-display.c with libdrm too, which must skip (77) here;
#     wayland-dmabuf.c as its comment says (wayland-scanner, then cc with
#     wayland-client and libdrm), which must skip (77) with no compositor;
#  3. ionctl too, from a copy of its sources, of the top-level uapi/
#     folder and of service/'s proto and client (the protocol it speaks)
#     alone (no src/, no config.h): it uses nothing but the
#     public API and the kernel's interfaces;
#  4. dmabufheap-gralloc.c with $(pkg-config --cflags --libs
#     libion-dmabufheap), as Android code builds.
# Usage: check-examples.sh BUILD_DIR SOURCE_ROOT
set -eu
build=$1
src=$(cd "$2" && pwd)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
meson install -C "$build" --destdir "$tmp/root" --no-rebuild --quiet >/dev/null
pc=$(dirname "$(find "$tmp/root" -name libion.pc | head -n 1)")
export PKG_CONFIG_PATH="$pc" PKG_CONFIG_SYSROOT_DIR="$tmp/root"
libdir=$(dirname "$(find "$tmp/root" -name 'libion.so*' -o -name 'libion.a' | head -n 1)")
export LD_LIBRARY_PATH="$libdir"
cd "$tmp"

failed=0 passed=0 skipped=0
for sample in share-buffer share-constraints gralloc devices pool-stream; do
	cp "$src/examples/$sample.c" .
	# shellcheck disable=SC2046
	if ! cc -std=c11 -Wall -Wextra -Werror -o "$sample" "$sample.c" \
		$(pkg-config --cflags --libs libion); then
		echo "FAIL: $sample does not build against the installed library" >&2
		failed=$((failed + 1))
		continue
	fi
	status=0
	"./$sample" >"$sample.out" 2>&1 || status=$?
	sed "s/^/  $sample: /" "$sample.out"
	case $status in
	0) passed=$((passed + 1)); echo "ok: $sample" ;;
	77) skipped=$((skipped + 1)); echo "skip: $sample" ;;
	*) failed=$((failed + 1)); echo "FAIL: $sample exited $status" >&2 ;;
	esac
done

# camera-display: libion and libdrm, as its comment says (libdrm is the
# system's, not in DESTDIR: no sysroot for it); no camera here, so it
# must skip (77) cleanly.
if PKG_CONFIG_SYSROOT_DIR= pkg-config --exists libdrm; then
	cp "$src/examples/camera-display.c" .
	# shellcheck disable=SC2046
	if cc -std=c11 -Wall -Wextra -Werror -o camera-display camera-display.c \
		$(pkg-config --cflags --libs libion) \
		$(PKG_CONFIG_SYSROOT_DIR= pkg-config --cflags --libs libdrm); then
		status=0
		./camera-display nosuch-camera nosuch-card >camera-display.out 2>&1 || status=$?
		sed 's/^/  camera-display: /' camera-display.out
		if [ "$status" = 77 ]; then
			passed=$((passed + 1))
			echo "ok: camera-display builds, and skips with no camera"
		else
			failed=$((failed + 1))
			echo "FAIL: camera-display exited $status with no camera, not 77" >&2
		fi
	else
		failed=$((failed + 1))
		echo "FAIL: camera-display does not build against the installed library" >&2
	fi
fi

# wayland-dmabuf: its comment's commands, wayland-scanner on
# wayland-protocols' files then cc (wayland-client, wayland-protocols and
# libdrm are the system's: no sysroot for them; a listener has every
# parameter of its event, used or not: -Wno-unused-parameter, as the
# project builds); no compositor here
# (WAYLAND_DISPLAY names none), so it must skip (77).
syspc() { PKG_CONFIG_SYSROOT_DIR='' pkg-config "$@"; }
if syspc --exists wayland-client wayland-protocols libdrm && command -v wayland-scanner >/dev/null; then
	mkdir wl && cp "$src/examples/wayland-dmabuf.c" wl/
	P=$(syspc --variable=pkgdatadir wayland-protocols)
	# shellcheck disable=SC2046
	if (cd wl && for x in unstable/linux-dmabuf/linux-dmabuf-unstable-v1 stable/xdg-shell/xdg-shell; do
		n=$(basename $x); wayland-scanner client-header "$P/$x.xml" "$n-client-protocol.h" &&
		wayland-scanner private-code "$P/$x.xml" "$n-protocol.c" || exit 1; done &&
		cc -std=c11 -Wall -Wextra -Wno-unused-parameter -Werror -I. -o wayland-dmabuf wayland-dmabuf.c ./*-protocol.c \
			$(pkg-config --cflags --libs libion) \
			$(syspc --cflags --libs wayland-client libdrm)); then
		status=0
		XDG_RUNTIME_DIR="$tmp" WAYLAND_DISPLAY=no-such-compositor ./wl/wayland-dmabuf \
			>wl/out 2>&1 || status=$?
		sed 's/^/  wayland-dmabuf: /' wl/out
		if [ "$status" = 77 ]; then
			passed=$((passed + 1))
			echo "ok: wayland-dmabuf builds as its comment says, and skips with no compositor"
		else
			failed=$((failed + 1))
			echo "FAIL: wayland-dmabuf exited $status with no compositor, not 77" >&2
		fi
	else
		failed=$((failed + 1))
		echo "FAIL: wayland-dmabuf does not build as its comment says" >&2
	fi
fi

# The libdmabufheap sample, through its own pkg-config module.
cp "$src/examples/dmabufheap-gralloc.c" .
# shellcheck disable=SC2046
if cc -std=c11 -Wall -Wextra -Werror -o dmabufheap-gralloc dmabufheap-gralloc.c \
	$(pkg-config --cflags --libs libion-dmabufheap) &&
	./dmabufheap-gralloc >dmabufheap-gralloc.out 2>&1; then
	passed=$((passed + 1))
	sed 's/^/  dmabufheap-gralloc: /' dmabufheap-gralloc.out
	echo "ok: dmabufheap-gralloc"
else
	failed=$((failed + 1))
	sed 's/^/  dmabufheap-gralloc: /' dmabufheap-gralloc.out 2>/dev/null || true
	echo "FAIL: dmabufheap-gralloc does not build or run out of tree" >&2
fi

# ionctl from its own sources, uapi/ and iond's protocol (service/'s
# proto and client, which `ionctl service` speaks), nothing else of the tree.
mkdir -p ionctl-src/ionctl ionctl-src/service
cp "$src"/examples/ionctl/*.c "$src"/examples/ionctl/*.h ionctl-src/ionctl/
cp "$src"/service/proto.[ch] "$src"/service/client.[ch] ionctl-src/service/
cp -r "$src/uapi" ionctl-src/
# (libdrm is the system's, not in DESTDIR: no sysroot for it)
drm="-DHAVE_LIBDRM=0"
if grep -q '^Requires.private:.*libdrm' "$pc/libion.pc" &&
	PKG_CONFIG_SYSROOT_DIR= pkg-config --exists libdrm; then
	drm="-DHAVE_LIBDRM=1 $(PKG_CONFIG_SYSROOT_DIR= pkg-config --cflags --libs libdrm)"
fi
# shellcheck disable=SC2046,SC2086
if cc -std=gnu11 -D_GNU_SOURCE -Wall -Werror -Iionctl-src -o ionctl-out-of-tree \
	ionctl-src/ionctl/*.c ionctl-src/service/*.c $(pkg-config --cflags --libs libion) $drm &&
	./ionctl-out-of-tree heaps >/dev/null; then
	passed=$((passed + 1))
	echo "ok: ionctl builds from its sources, uapi/, service/'s protocol and the installed library alone"
else
	failed=$((failed + 1))
	echo "FAIL: ionctl does not build (or run) out of tree" >&2
fi

echo "$passed passed, $failed failed, $skipped skipped"
[ "$failed" = 0 ]
