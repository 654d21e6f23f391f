#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Installs what building and testing libion needs on Debian 12.
#   tests/deps.sh          build + host tests (umockdev too) + VM suite
#   tests/deps.sh --build  only what building and running ionctl needs
set -euo pipefail

build=(gcc g++ meson ninja-build pkg-config libdrm-dev libudev-dev libcmocka-dev)
# unit-udev: fake udev devices under umockdev-wrapper
test=(umockdev libumockdev-dev)
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
