#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
#
# Run test programs inside a QEMU VM booted on a small test kernel that has
# DMA-BUF heaps, udmabuf, DRM (vgem, vkms, virtio-gpu) and, on 5.10, ION.
#
#   run-vm.sh --kernel 6.1|5.10|6.1-arm64 --init VM_INIT [--timeout SECONDS]
#             [--vm-timeout SECONDS] [--smp N] [--extra-file SRC:DEST]...
#             [--env KEY=VALUE]... [--log FILE]
#             -- TEST [ARGS...] [';' TEST [ARGS...]]...
#
#   --kernel      kernel series; build-kernel.sh builds or finds its image.
#                 6.1 and 5.10 boot x86_64's q35 machine (intel-iommu);
#                 6.1-arm64 boots arm64's virt machine, with a device tree
#                 and an SMMUv3 (VM_INIT and the tests must be aarch64
#                 programs, from the aarch64 cross build)
#   --init        the vm-init executable (static), which becomes /init
#   --timeout     per-test timeout inside the VM (default 300); a test that
#                 SIGKILL cannot end within 30 s more is stuck in the
#                 kernel: vm-init prints its tasks' kernel stacks and
#                 stops the suite there
#   --vm-timeout  the whole VM's limit (default 1080 s, the sum of the
#                 per-test ones plus 60 s if that is less): it ends a guest
#                 whose kernel no longer runs vm-init; 15 s before, each
#                 vCPU's program counter is read through QEMU's monitor
#                 and printed with its kernel symbol (vm-where.py)
#   --smp         virtual CPUs (default 1: 6.1's vkms can deadlock two of
#                 them, see below; benchmarks that want two say so)
#   --extra-file  copy SRC into the VM at the absolute path DEST, with its
#                 libraries if it is dynamically linked; DEST must not be
#                 under /dev, /proc, /sys or /tmp, which the VM mounts over
#   --env         put KEY=VALUE in the tests' environment (besides
#                 LIBION_IN_VM=1 and LIBION_TEST_KERNEL=<uname -r>)
#   --log         also write the console output to FILE
#
# Each TEST (a host path, relative to the current directory or absolute)
# runs as /tests/bin/<basename> with its ARGS, which must not contain
# blanks; tests are separated by a ';' argument (quote it in a shell).  Its
# shared libraries and the dynamic loader are copied at their host paths,
# and each library is also hard-linked as /lib/<soname> (the VM's
# LD_LIBRARY_PATH) so that build-tree libraries found through an $ORIGIN
# RUNPATH resolve too, even under /tmp, which the VM mounts over (as it
# does /dev, /proc and /sys).  /bin/sh is busybox on x86_64 (no test
# needs a shell; the arm64 VM has none).  The libraries of an aarch64
# program are found by its own loader under qemu-aarch64 (--list), as ldd
# finds a native program's.
#
# The console is streamed to stdout (less the firmware's terminal escapes,
# which would turn off line wrapping in a terminal).  Exit status 0 only if
# every test exited with 0 and the VM shut down cleanly (no panic, no
# timeout) and its kernel reported no error (vm-init repeats the kernel's
# warnings and worse from /dev/kmsg; BUG:, Oops, WARNING:, a bad page
# state, list corruption, a general protection fault or refcount_t's
# reports fail the run); the last line printed is
# "vm-<series>: N passed, N failed".
set -euo pipefail

usage() {
	sed -n '7,10p' "$0" | sed 's/^# \{0,1\}//' >&2
	exit 2
}
die() {
	echo "run-vm: $*" >&2
	exit 2
}

here=$(cd "$(dirname "$0")" && pwd)
series='' init='' timeout=300 vm_timeout=1080 smp=1 log=''
extras=() envs=()
while [ $# -gt 0 ]; do
	case "$1" in
	--kernel) series=${2:?}; shift 2 ;;
	--init) init=${2:?}; shift 2 ;;
	--timeout) timeout=${2:?}; shift 2 ;;
	--vm-timeout) vm_timeout=${2:?}; shift 2 ;;
	--smp) smp=${2:?}; shift 2 ;;
	--extra-file) extras+=("${2:?}"); shift 2 ;;
	--env) envs+=("${2:?}"); shift 2 ;;
	--log) log=${2:?}; shift 2 ;;
	--) shift; break ;;
	*) usage ;;
	esac
done
if [ -z "$series" ] || [ -z "$init" ] || [ $# -eq 0 ]; then
	usage
fi
[[ "$timeout" =~ ^[1-9][0-9]*$ ]] || die "bad --timeout '$timeout'"
[[ "$vm_timeout" =~ ^[1-9][0-9]*$ ]] || die "bad --vm-timeout '$vm_timeout'"
[[ "$smp" =~ ^[1-8]$ ]] || die "bad --smp '$smp'"

case "$series" in
*-arm64) arch=arm64 ;;
*) arch=x86_64 ;;
esac
kernel_image=$("$here/build-kernel.sh" "$series")

tmp=$(mktemp -d "${TMPDIR:-/tmp}/libion-vm.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
root=$tmp/root
mkdir -p "$root"/{bin,dev,proc,sys,tmp,lib,tests/bin}

# The shared libraries of an ELF program, as ldd lists them; fails for a
# static program or another file.  A foreign (aarch64) program's loader
# lists them under qemu-aarch64, which runs it from the multiarch paths.
list_libs() {
	local interp
	interp=$(readelf -lW "$1" 2>/dev/null |
		sed -n 's/.*Requesting program interpreter: \(.*\)]$/\1/p')
	if [ -z "$interp" ]; then
		# A shared library (a GStreamer plugin that gets dlopen'ed) has
		# no interpreter of its own: the host's ldd lists a native one's.
		readelf -hW "$1" 2>/dev/null | grep -q 'Type: *DYN' || return 1
		ldd "$1" 2>/dev/null
		return
	fi
	case "$(readelf -hW "$1" | sed -n 's/^ *Machine: *//p')" in
	AArch64) [ "$(uname -m)" = aarch64 ] || {
		# (without the qemu-user test setup's preload, if it is set)
		env -u QEMU_SET_ENV qemu-aarch64 "$interp" --list "$1"
		return
	} ;;
	esac
	ldd "$1" 2>/dev/null
}

# copy SRC DEST: SRC at DEST inside the VM, with its libraries if it has any.
copy() {
	mkdir -p "$root$(dirname "$2")"
	cp -L "$1" "$root$2"
	local libs
	libs=$(list_libs "$1") || return 0 # static or not an ELF
	if grep -q 'not found' <<<"$libs"; then
		echo "run-vm: missing libraries for $1:" >&2
		grep 'not found' <<<"$libs" >&2
		exit 1
	fi
	# "libc.so.6 => /lib/.../libc.so.6 (0x...)", "/lib64/ld-linux-x86-64.so.2
	# (0x...)" (the loader), and lines with no file such as linux-vdso.so.1.
	local name arrow path rest
	while read -r name arrow path rest; do
		[ "$arrow" = "=>" ] || path=$name
		[[ "$path" == /* ]] || continue
		if [ ! -e "$root$path" ]; then
			mkdir -p "$root$(dirname "$path")"
			cp -L "$path" "$root$path"
		fi
		if [ "$arrow" = "=>" ] && [ ! -e "$root/lib/$name" ]; then
			ln "$root$path" "$root/lib/$name"
		fi
	done <<<"$libs"
}

cp "$init" "$root/init"
if [ "$arch" = x86_64 ]; then
	cp /bin/busybox "$root/bin/busybox"
	ln -s busybox "$root/bin/sh"
fi

ntests=0
line=()
flush_test() {
	[ ${#line[@]} -gt 0 ] || return 0
	local dest
	dest=/tests/bin/$(basename "${line[0]}")
	if [ -e "$root$dest" ] && ! cmp -s "${line[0]}" "$root$dest"; then
		die "two different tests named ${dest##*/}"
	fi
	copy "${line[0]}" "$dest"
	line[0]=$dest
	echo "${line[*]}" >>"$root/tests/list"
	ntests=$((ntests + 1))
	line=()
}
for arg in "$@"; do
	if [ "$arg" = ";" ]; then
		flush_test
	elif [[ "$arg" =~ [[:space:]] ]]; then
		die "blanks in a test argument are not supported: '$arg'"
	else
		line+=("$arg")
	fi
done
flush_test

for spec in ${extras[@]+"${extras[@]}"}; do
	case "${spec##*:}" in
	/dev/* | /proc/* | /sys/* | /tmp/*) die "$spec: the VM mounts over DEST" ;;
	/*) ;;
	*) die "$spec: DEST must be an absolute path" ;;
	esac
	copy "${spec%:*}" "${spec##*:}"
done
echo "$timeout" >"$root/tests/timeout"
printf '%s\n' ${envs[@]+"${envs[@]}"} >"$root/tests/env"

(cd "$root" && find . | cpio -o -H newc -R 0:0 --quiet) | gzip -1 >"$tmp/initrd.gz"

[ $((timeout * ntests + 60)) -ge "$vm_timeout" ] || vm_timeout=$((timeout * ntests + 60))
console=${log:-$tmp/console.log}
status=0
vivid="vivid.n_devs=2 vivid.allocators=1,0 vivid.node_types=0x1,0x1"
if [ "$arch" = arm64 ]; then
	# QEMU's virt machine: a device tree, not ACPI; virtio-gpu on the PCI
	# host behind the SMMUv3.
	qemu=(qemu-system-aarch64 -M virt,iommu=smmuv3 -cpu cortex-a57 -accel tcg
		-m 1024 -smp "$smp" -nographic -no-reboot -nic none -device virtio-gpu-pci
		-kernel "$kernel_image" -initrd "$tmp/initrd.gz"
		-append "console=ttyAMA0 quiet cma=64M panic=-1 $vivid")
else
	qemu=(qemu-system-x86_64 -M q35 -accel tcg -m 1024 -smp "$smp" -nographic
		-no-reboot -nic none -device intel-iommu -vga none -device virtio-gpu-pci
		-kernel "$kernel_image" -initrd "$tmp/initrd.gz"
		-append "console=ttyS0 quiet cma=64M panic=-1 intel_iommu=on $vivid")
fi
# A guest that overruns its time: where its CPUs are, read 15 s before
# the end (a kernel spinning with interrupts off reports nothing itself).
qemu+=(-monitor "unix:$tmp/monitor,server=on,wait=off")
system_map=$(dirname "$kernel_image")/System.map
(
	exec </dev/null >/dev/null 2>&1 # meson waits for its pipes to close
	sleep $((vm_timeout > 30 ? vm_timeout - 15 : vm_timeout / 2)) &
	sleeper=$!
	trap 'kill "$sleeper"; exit 0' TERM
	wait "$sleeper"
	python3 "$here/vm-where.py" "$tmp/monitor" "$system_map" >"$tmp/where" 2>&1
) &
watcher=$!
timeout --foreground --kill-after=10 "$vm_timeout" "${qemu[@]}" \
	</dev/null | sed -u 's/\x1b\(c\|\[[0-9;?]*[A-Za-z]\)//g' | tee "$console" ||
	status=$?
kill "$watcher" 2>/dev/null || true
wait "$watcher" 2>/dev/null || true

[ -z "$(tail -c 1 "$console")" ] || echo # end the console's last line
# Markers may follow a test's output that did not end in a newline.
markers=$(tr -d '\r' <"$console" | grep -o '@@VM-.*' || true)
passed=$(grep -c '^@@VM-TEST-END .* 0$' <<<"$markers" || true)
failed=$((ntests - passed))
ok=1
if [ "$status" = 124 ] || [ "$status" = 137 ]; then
	echo "run-vm: the VM did not finish within ${vm_timeout}s" >&2
	[ ! -s "$tmp/where" ] || sed 's/^/run-vm: /' "$tmp/where" >&2
	ok=0
fi
if grep -q 'Kernel panic' "$console"; then
	echo "run-vm: kernel panic" >&2
	ok=0
fi
# A guest whose kernel found its own memory or state broken: whatever the
# tests said after that (or before it, in the same boot) is not to be
# trusted.  Only the kernel's messages (vm-init's KMSG lines, wherever a
# test's unfinished line put them), each with the test that was running.
# One warning is known and harmless, and let pass by its kernel and its
# exact place:
#  - 5.10: virtio-gpu's PRIME import of another driver's buffer maps it
#    for the virtio device, which has no DMA mask: dma_map_sg_attrs()
#    warns once (WARN_ON_ONCE(!dev->dma_mask), kernel/dma/mapping.c:188)
#    and maps nothing, and the import fails (EINVAL), which is the refusal
#    test-kernel-agrees expects (virtio-gpu takes only its own buffers).
if ! tr -d '\r' <"$console" | awk -v series="$series" '
	/@@VM-TEST-BEGIN / { name = substr($0, index($0, "@@VM-TEST-BEGIN ") + 16) }
	/@@VM-TEST-END / { name = "" }
	series == "5.10" && /@@VM-KMSG WARNING: CPU: [0-9]+ PID: [0-9]+ at kernel\/dma\/mapping\.c:188 / {
		print "run-vm: known 5.10 warning (virtio-gpu import, no DMA mask), not counted: " $0
		next
	}
	match($0, /@@VM-KMSG /) &&
	substr($0, RSTART) ~ /BUG:|kernel BUG at|Bad page state|list_(add|del) corruption|general protection fault|Oops|refcount_t:|WARNING:/ {
		if (!bad++) print "run-vm: the kernel reported errors:"
		if (bad <= 40) print "  " (name != "" ? "(during " name ") " : "(between tests) ") $0
	}
	END { exit bad > 0 }
' >&2; then
	ok=0
fi
if ! grep -q '^@@VM-SUITE-DONE ' <<<"$markers"; then
	echo "run-vm: the VM did not report the end of the suite" >&2
	ok=0
fi
grep '^@@VM-TEST-END ' <<<"$markers" | grep -v ' 0$' |
	sed 's/^@@VM-TEST-END /run-vm: FAILED: /' >&2 || true
# What each failed test said of its failures, where a log cut to its last
# lines (meson's) would not show it: at most 20 lines a test, on stderr.
# "test-NAME: ..." lines too: a test's helpers say so when they end it
# outside cmocka (a service that ended badly, a connection refused).
tr -d '\r' <"$console" | awk '
	/@@VM-TEST-BEGIN / { name = substr($0, index($0, "@@VM-TEST-BEGIN ") + 16); n = 0; delete lines; next }
	/@@VM-TEST-END / {
		if ($NF != "0" && n) {
			print "run-vm: what " name " said of its failures:"
			for (i = 1; i <= n; i++) print "  " lines[i]
		}
		next
	}
	/FAIL|ERROR|error:|Failure|LINE  |panic|Assertion|leaked|^test-[a-z0-9-]+: / { if (n < 20) lines[++n] = $0 }
' >&2 || true
# A hang: a stuck test's tasks (vm-init's STUCK lines) and the kernel's
# own reports, with their stacks (a task blocked 60 s, a CPU that did not
# schedule for 20 s, sysrq's blocked tasks), where a log cut to its last
# lines would not show them: at most 80 lines.
tr -d '\r' <"$console" | awk '
	/@@VM-STUCK |blocked for more than|soft lockup|Show Blocked State/ { left = 25 }
	left > 0 && shown < 80 { if (!shown++) print "run-vm: what the guest said of a hang:"; print "  " $0; left-- }
' >&2 || true
[ "$failed" = 0 ] || ok=0

echo "vm-$series: $passed passed, $failed failed"
[ "$ok" = 1 ]
