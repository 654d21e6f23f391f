#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
#
# Build (once) a small test kernel from a Debian linux-source package and
# print the path of its image (bzImage on x86_64, Image on arm64).  The
# image is cached outside the source tree, keyed by the source package
# version and the config fragments, so only the first run on a machine
# pays the ~5 minutes of a build.
#
#   tests/vm/build-kernel.sh 6.1        # bookworm's linux-source-6.1
#   tests/vm/build-kernel.sh 5.10       # bullseye's linux-source-5.10, with ION
#   tests/vm/build-kernel.sh 6.1-arm64  # linux-source-6.1 cross-built for
#                                       # QEMU's arm64 virt machine
#
# LIBION_VM_CACHE overrides the cache directory.
set -euo pipefail

series=${1:?usage: build-kernel.sh 6.1|5.10|6.1-arm64}
here=$(cd "$(dirname "$0")" && pwd)
cache=${LIBION_VM_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/libion-vm}
mkdir -p "$cache"

log() { echo "build-kernel: $*" >&2; }

# Fetch bullseye's linux-source-5.10 without touching the machine's apt
# state: a private sources list and lists directory under the cache.
fetch_bullseye_source() {
	local apt="$cache/apt-bullseye"
	mkdir -p "$apt/lists/partial" "$apt/archives"
	cat >"$apt/sources.list" <<-EOF
	deb [signed-by=/usr/share/keyrings/debian-archive-keyring.gpg] http://deb.debian.org/debian bullseye main
	EOF
	local opts=(-o "Dir::Etc::SourceList=$apt/sources.list"
		-o "Dir::Etc::SourceParts=/dev/null"
		-o "Dir::State::Lists=$apt/lists"
		-o "Dir::Cache::Archives=$apt/archives"
		-o "APT::Get::List-Cleanup=0")
	if ! ls "$apt"/linux-source-5.10_*.deb >/dev/null 2>&1; then
		log "fetching linux-source-5.10 from bullseye"
		apt-get -q "${opts[@]}" update >&2
		(cd "$apt" && apt-get -q "${opts[@]}" download linux-source-5.10 >&2)
	fi
	local deb
	deb=$(ls "$apt"/linux-source-5.10_*.deb | sort -V | tail -n 1)
	src_version=$(dpkg-deb -f "$deb" Version)
	tarball="$apt/linux-source-5.10.tar.xz"
	if [ ! -f "$tarball.$src_version" ]; then
		local x="$apt/extract"
		rm -rf "$x" && mkdir -p "$x"
		dpkg-deb -x "$deb" "$x"
		mv "$x"/usr/src/linux-source-5.10.tar.xz "$tarball.$src_version"
		rm -rf "$x"
	fi
	tarball="$tarball.$src_version"
}

# x86_64 natively, or arm64 with Debian's cross compiler.
arch=x86
image=arch/x86/boot/bzImage
kmake=(make)

case "$series" in
6.1-arm64)
	fragments=("$here/kernel-6.1.config" "$here/kernel-media.config" "$here/kernel-arm64.config")
	tarball=/usr/src/linux-source-6.1.tar.xz
	src_version=$(dpkg-query -W -f='${Version}' linux-source-6.1)
	arch=arm64
	image=arch/arm64/boot/Image
	kmake=(make ARCH=arm64 CROSS_COMPILE=aarch64-linux-gnu-)
	command -v aarch64-linux-gnu-gcc >/dev/null ||
		{ log "missing aarch64-linux-gnu-gcc (apt-get install gcc-aarch64-linux-gnu)"; exit 1; }
	;;
6.1)
	fragments=("$here/kernel-6.1.config" "$here/kernel-media.config")
	tarball=/usr/src/linux-source-6.1.tar.xz
	src_version=$(dpkg-query -W -f='${Version}' linux-source-6.1)
	;;
5.10)
	fragments=("$here/kernel-6.1.config" "$here/kernel-media.config" "$here/kernel-ion.config")
	fetch_bullseye_source
	;;
*)
	echo "build-kernel: unknown series '$series'" >&2
	exit 2
	;;
esac

key=$( (echo "$series $src_version"; cat "${fragments[@]}") | sha256sum | cut -c1-16)
out="$cache/linux-$series-$key"
# An image cached before System.map was kept is built again.
if [ -f "$out/${image##*/}" ] && [ -f "$out/System.map" ]; then
	echo "$out/${image##*/}"
	exit 0
fi

[ -f "$tarball" ] || { log "missing $tarball (apt-get install linux-source-${series%-*})"; exit 1; }

work=$(mktemp -d "$cache/build-$series.XXXXXX")
trap 'rm -rf "$work"' EXIT
log "building Linux $series ($src_version) in $work"
tar -C "$work" -xf "$tarball"
src=$(echo "$work"/linux-source-*)
# merge_config.sh finds ARCH in the environment, as make does.
[ "$arch" = x86 ] || export ARCH=arm64 CROSS_COMPILE=aarch64-linux-gnu-
"${kmake[@]}" -C "$src" -s tinyconfig >&2
"$src/scripts/kconfig/merge_config.sh" -m -O "$src" "$src/.config" "${fragments[@]}" >/dev/null
"${kmake[@]}" -C "$src" -s olddefconfig >&2

# merge_config only warns when an option does not survive olddefconfig; a
# test kernel that silently lacks an allocator would make the VM suite lie.
# A later fragment may turn an option off (kernel-arm64.config does so for
# x86's): what counts is the last fragment's word on each option.
declare -A wanted=()
while IFS= read -r line; do
	case "$line" in
	CONFIG_*=*) wanted[${line%%=*}]=$line ;;
	"# CONFIG_"*" is not set") line=${line#\# }; wanted[${line%% *}]=off ;;
	esac
done < <(cat "${fragments[@]}")
missing=0
for opt in "${!wanted[@]}"; do
	line=${wanted[$opt]}
	case "$line" in *=y) ;; *) continue ;; esac
	if ! grep -qx "$line" "$src/.config"; then
		log "option did not survive olddefconfig: $line"
		missing=1
	fi
done
[ "$missing" = 0 ] || exit 1

"${kmake[@]}" -C "$src" -s -j"$(nproc)" "${image##*/}" >&2
mkdir -p "$out.tmp"
# System.map: run-vm.sh names the functions a hung guest's CPUs are in.
cp "$src/$image" "$src/.config" "$src/System.map" "$out.tmp/"
rm -rf "$out" && mv "$out.tmp" "$out"
log "cached $out/${image##*/}"
echo "$out/${image##*/}"
