#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Installs what building and testing libion needs on Debian 12.
#   tests/deps.sh          build + host tests (umockdev too) + VM suite
#   tests/deps.sh --build  only what building and running ionctl needs
set -euo pipefail

build=(gcc g++ meson ninja-build pkg-config libdrm-dev libudev-dev)
# libcmocka-dev: the test suites (only they need it)
# umockdev: unit-udev, fake udev devices under umockdev-wrapper
# clang: the subproject test builds a parent with gcc and clang, -Dwerror;
#   with libclang-rt-14-dev (libFuzzer), the fuzzers
# groff-base, man-db: the man page test renders each page with warnings on
# udev: udev.pc, which says where the udev rule is installed (its daemon
#   is not started where invoke-rc.d's policy forbids it, as in containers)
# python3: the tests read ionctl's and meson's JSON
test=(libcmocka-dev umockdev libumockdev-dev clang libclang-rt-14-dev groff-base man-db udev python3)
vm=(valgrind qemu-system-x86 busybox-static cpio bc flex bison libelf-dev
    libssl-dev xz-utils make linux-source-6.1 ca-certificates)

pkgs=("${build[@]}")
[ "${1:-}" = --build ] || pkgs+=("${test[@]}" "${vm[@]}")

missing=()
for p in "${pkgs[@]}"; do
	dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'ok installed' || missing+=("$p")
done
[ ${#missing[@]} -eq 0 ] && exit 0

sudo=
[ "$(id -u)" = 0 ] || sudo=sudo
echo "deps: installing ${missing[*]}" >&2
$sudo apt-get update -q >&2
DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -q --no-install-recommends "${missing[@]}" >&2
