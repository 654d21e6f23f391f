#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Installs what building and testing libion needs on Debian 12.
#   tests/deps.sh          build + host tests (umockdev too) + VM suites +
#                          the aarch64 and armhf cross builds
#   tests/deps.sh --build  only what building and running ionctl needs
# LIBION_SKIP_CROSS=1 leaves the cross toolchains and foreign architectures out.
set -euo pipefail

build=(gcc g++ meson ninja-build pkg-config libdrm-dev libudev-dev)
# libcmocka-dev: the test suites (only they need it)
# umockdev: unit-udev, fake udev devices under umockdev-wrapper
# clang: the subproject test builds a parent with gcc and clang, -Dwerror;
#   with libclang-rt-14-dev (libFuzzer), the fuzzers
# groff-base, man-db: the man page test renders each page with warnings on
# udev: udev.pc, which says where the udev rule is installed (its daemon
#   is not started where invoke-rc.d's policy forbids it, as in containers)
# python3: the tests read ionctl's and meson's JSON, and validate ionctl's
# against its schema (python3-jsonschema)
# GStreamer: the plugin (gst/) builds against the -dev packages; the
#   tests run it with gst-launch-1.0/gst-inspect-1.0 (tools), videotestsrc
#   (plugins-base), and in the 6.1 VM with v4l2src (plugins-good) and
#   kmssink (plugins-bad)
gst=(libgstreamer1.0-dev libgstreamer-plugins-base1.0-dev gstreamer1.0-tools
     gstreamer1.0-plugins-base gstreamer1.0-plugins-good gstreamer1.0-plugins-bad)
# libwayland-dev (wayland-scanner with it), wayland-protocols: the Wayland
#   sample (examples/wayland-dmabuf.c), its generated protocol code
# weston, libegl-mesa0, libgl1-mesa-dri: the compositor the 6.1 VM runs
#   that sample against (vm-6.1-wayland: the DRM backend on vkms, the GL
#   renderer on Mesa's kms_swrast)
wayland=(libwayland-dev wayland-protocols weston libegl-mesa0 libgl1-mesa-dri)
# systemd: systemd-analyze, which verifies iond's units (nothing is started)
# abigail-tools: the ABI baseline check (abidw, abidiff)
# debhelper (dpkg-dev with it), lintian: the Debian packages' check
test=(libcmocka-dev umockdev libumockdev-dev clang libclang-rt-14-dev groff-base man-db udev python3
      python3-jsonschema "${gst[@]}" "${wayland[@]}" systemd abigail-tools debhelper lintian)
vm=(valgrind qemu-system-x86 busybox-static cpio bc flex bison libelf-dev
    libssl-dev xz-utils make linux-source-6.1 ca-certificates clang)
# Cross builds run under qemu-user; the arm64 VM's kernel is cross-built
# and boots under qemu-system-aarch64 (package qemu-system-arm).  The
# :arm64/:armhf -dev packages are Debian multiarch: they need the foreign
# architectures, and pull in libc6:arm64/armhf, whose loader qemu-user runs.
cross=(gcc-aarch64-linux-gnu libc6-dev-arm64-cross gcc-arm-linux-gnueabihf
       libc6-dev-armhf-cross qemu-user qemu-system-arm)
# zlib1g:$a by name: libpciaccess0:$a needs it, and apt's resolver, left
# to find it, gives up ("held broken packages") when the host's zlib1g
# has a newer candidate than the foreign index holds.
for a in arm64 armhf; do
	cross+=("libcmocka-dev:$a" "libdrm-dev:$a" "libudev-dev:$a" "zlib1g:$a")
done

pkgs=("${build[@]}")
with_cross=0
if [ "${1:-}" != --build ]; then
	pkgs+=("${test[@]}" "${vm[@]}")
	[ "${LIBION_SKIP_CROSS:-0}" = 1 ] || { pkgs+=("${cross[@]}"); with_cross=1; }
fi

missing=()
for p in "${pkgs[@]}"; do
	dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'ok installed' || missing+=("$p")
done
[ ${#missing[@]} -eq 0 ] && exit 0

sudo=
[ "$(id -u)" = 0 ] || sudo=sudo
if [ "$with_cross" = 1 ]; then
	for a in arm64 armhf; do
		dpkg --print-foreign-architectures | grep -qx "$a" ||
			$sudo dpkg --add-architecture "$a"
	done
fi
echo "deps: installing ${missing[*]}" >&2
# A mirror caught mid-sync fails one index ("File has unexpected size"):
# try again, and install from what the lists hold if it still fails.
for try in 1 2 3; do
	$sudo apt-get update -q >&2 && break
	echo "deps: apt-get update failed (try $try of 3)" >&2
	sleep $((try * 10))
done
# --no-remove: a foreign -dev package whose host twin is of another
# version must never cost the machine a package; apt upgrades the host
# library (same source, M-A: same) or stops here.
DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -q --no-install-recommends \
	--no-remove "${missing[@]}" >&2
