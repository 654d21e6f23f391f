#!/bin/sh
# SPDX-License-Identifier: MIT
# check-boards.sh IONCTL MAKE_FAKETREE TREE_DIR HEAPS_D
#
# ionctl solve and explain on fake trees of the shipped boards: the JSON's
# shape and answers, the exit statuses (0 a heap fits, 1 none does or a
# failure, 2 a usage error), and that explain cites every board-file line
# the answer rests on.  The expected answers are the board facts that
# tests/unit/test-boards.c explains case by case.
set -eu

if [ $# -ne 4 ]; then
	echo "usage: $0 IONCTL MAKE_FAKETREE TREE_DIR HEAPS_D" >&2
	exit 2
fi
ionctl=$1
make_faketree=$2
trees=$3
heaps_d=$4

tmp=$(mktemp -d /tmp/libion-check-boards-XXXXXX)
trap 'rm -rf "$tmp"' EXIT INT TERM
failures=0

fail() {
	echo "FAIL: $*" >&2
	failures=$((failures + 1))
}

for board in rpi4 rpi5 rock5b imx8mp-evk am62x-sk qemu-q35 qemu-virt; do
	"$make_faketree" "$trees/$board.tree" "$tmp/$board"
done

# conf_line FILE SECTION [KEY]: the line of KEY in "[SECTION]" of a board
# file, or of the section header itself.
conf_line() {
	awk -v sec="[$2]" -v key="${3-}" '
		/^[ \t]*\[/ {
			s = $0; gsub(/^[ \t]+|[ \t\r]+$/, "", s)
			inside = (s == sec)
			if (inside && key == "") { print NR; exit }
			next
		}
		inside && key != "" {
			s = $0; sub(/^[ \t]+/, "", s)
			if (index(s, key) == 1 && substr(s, length(key) + 1, 1) ~ /[ \t=+]/) {
				print NR; exit
			}
		}' "$heaps_d/$1"
}

# at FILE SECTION [KEY]: "FILE:LINE", as sources and reasons cite it.
at() {
	line=$(conf_line "$@")
	if [ -z "$line" ]; then
		fail "$1 has no ${3:-header} in [$2]"
		line=0
	fi
	echo "$1:$line"
}

# run BOARD STATUS COMMAND ARGS...: ionctl on the board's tree, output in
# $tmp/out, checked for the exit status.
run() {
	board=$1
	want=$2
	shift 2
	status=0
	"$ionctl" --sysroot "$tmp/$board" --config-dir "$heaps_d" "$@" >"$tmp/out" 2>"$tmp/err" ||
		status=$?
	if [ "$status" -ne "$want" ]; then
		fail "$board: ionctl $*: exit status $status, expected $want"
		sed 's/^/    /' "$tmp/err" >&2
	fi
}

# The JSON check: shape first, then the expectations given as arguments:
#   heap=NAME|none    the chosen heap
#   cand=A B          the candidates, best first, blank-separated (heap
#                     names hold commas); "" for none
#   dev=DEVICE:A B    what that device alone would take
#   src=DEVICE:TEXT   the device's "source" contains TEXT
#   rej=HEAP:DEVICE:TEXT  HEAP is rejected by DEVICE, the reason contains TEXT
check_json='
import json, sys
out = json.load(open(sys.argv[1]))
errors = []
def need(cond, what):
    if not cond:
        errors.append(what)
for key in ("version", "command", "heap", "candidates", "devices", "rejected"):
    need(key in out, "no key %s" % key)
need(isinstance(out.get("candidates"), list), "candidates is no list")
for d in out.get("devices", []):
    for key in ("device", "syspath", "heaps", "source"):
        need(key in d, "a device without %s: %r" % (key, d))
    need(isinstance(d.get("heaps"), list), "heaps of %s is no list" % d.get("device"))
for r in out.get("rejected", []):
    for key in ("heap", "device", "reason"):
        need(key in r, "a rejection without %s: %r" % (key, r))
if out.get("candidates"):
    need(out.get("heap") == out["candidates"][0], "heap is not the first candidate")
else:
    need(out.get("heap") is None, "a heap without candidates")
devices = {d.get("device"): d for d in out.get("devices", [])}
for arg in sys.argv[2:]:
    kind, _, value = arg.partition("=")
    if kind == "heap":
        want = None if value == "none" else value
        need(out.get("heap") == want, "heap %r, expected %r" % (out.get("heap"), want))
    elif kind == "cand":
        want = value.split()
        need(out.get("candidates") == want,
             "candidates %r, expected %r" % (out.get("candidates"), want))
    elif kind == "dev":
        name, _, heaps = value.partition(":")
        got = devices.get(name, {}).get("heaps")
        need(got == heaps.split(), "%s alone takes %r, expected %s" % (name, got, heaps))
    elif kind == "src":
        name, _, text = value.partition(":")
        got = devices.get(name, {}).get("source", "")
        need(text in got, "source of %s %r lacks %r" % (name, got, text))
    elif kind == "rej":
        heap, device, text = value.split(":", 2)
        need(any(r.get("heap") == heap and r.get("device") == device and
                 text in (r.get("reason") or "") for r in out.get("rejected", [])),
             "no rejection of %s by %s citing %r" % (heap, device, text))
    else:
        need(False, "bad expectation %r" % arg)
for e in errors:
    print(e)
sys.exit(1 if errors else 0)
'

# solve BOARD STATUS DEVICES -- EXPECTATIONS...
solve() {
	board=$1
	want=$2
	shift 2
	devices=""
	while [ "$1" != "--" ]; do
		devices="$devices $1"
		shift
	done
	shift
	# shellcheck disable=SC2086 # the device list splits on purpose
	run "$board" "$want" solve $devices --json
	if ! python3 -c "$check_json" "$tmp/out" "$@" >"$tmp/why"; then
		fail "$board: ionctl solve$devices --json:"
		sed 's/^/    /' "$tmp/why" >&2
	fi
}

# explain BOARD STATUS DEVICES -- FILE:LINE...: explain cites each line.
explain() {
	board=$1
	want=$2
	shift 2
	devices=""
	while [ "$1" != "--" ]; do
		devices="$devices $1"
		shift
	done
	shift
	# shellcheck disable=SC2086
	run "$board" "$want" explain $devices
	for cite in "$@"; do
		grep -qF "/$cite]" "$tmp/out" || grep -qF "/$cite)" "$tmp/out" ||
			fail "$board: ionctl explain$devices does not cite $cite"
	done
}

# ---- Raspberry Pi 4 ----
c=50-rpi4.conf
solve rpi4 0 card1 /dev/video0 -- heap=linux,cma cand="linux,cma" \
	dev="card1:linux,cma" dev="video0:linux,cma" \
	src="card1:$(at $c 'Device vc4' Heaps)" \
	rej="system:card1:$(at $c 'Device vc4' Heaps)" \
	rej="system:video0:$(at $c 'Device unicam' Contiguous)" \
	rej="memfd:card1:no dma-buf"
solve rpi4 0 /dev/dri/card0 -- heap=system cand="system linux,cma" dev="card0:system linux,cma" \
	src="card0:$(at $c 'Device v3d' Contiguous)"
solve rpi4 0 video13 /sys/class/video4linux/video10 -- heap=linux,cma cand="linux,cma" \
	rej="system:video13:$(at $c 'Device bcm2835-isp' Contiguous)"
explain rpi4 0 card1 video0 -- "$(at $c 'Board rpi4')" \
	"$(at $c 'Device vc4' Heaps)" "$(at $c 'Device vc4' Contiguous)" \
	"$(at $c 'Device vc4' AddressBits)" "$(at $c 'Device unicam' Contiguous)" \
	"$(at $c 'Device unicam' AddressBits)" "$(at $c 'Heap linux,cma' AddressBits)" \
	"$(at $c 'Heap linux,cma' Memory)"

# ionctl devices: each constraint's key, value, and the board file's
# line it came from.
check_devices='
import json, sys
out = json.load(open(sys.argv[1]))
errors = []
devices = {d.get("device"): d for d in out.get("devices", [])}
if out.get("version") != 1 or not isinstance(out.get("devices"), list):
    errors.append("devices --json is no version 1 object with a devices list")
for arg in sys.argv[2:]:
    name, _, rest = arg.partition(":")
    key, _, rest = rest.partition("=")
    value, _, source = rest.partition("@")
    got = [c for c in devices.get(name, {}).get("constraints", []) if c.get("key") == key]
    if not got:
        errors.append("%s has no constraint %s" % (name, key))
    elif got[0].get("value") != value or not (got[0].get("source") or "").endswith("/" + source):
        errors.append("%s: %s = %r from %r, expected %r from .../%s" % (name, key,
                      got[0].get("value"), got[0].get("source"), value, source))
for e in errors:
    print(e)
sys.exit(1 if errors else 0)
'
run rpi4 0 devices --json card1 video0
if ! python3 -c "$check_devices" "$tmp/out" \
	"card1:Heaps=cma@$(at $c 'Device vc4' Heaps)" \
	"card1:Contiguous=yes@$(at $c 'Device vc4' Contiguous)" \
	"card1:AddressBits=30@$(at $c 'Device vc4' AddressBits)" \
	"video0:Contiguous=yes@$(at $c 'Device unicam' Contiguous)" >"$tmp/why"; then
	fail "rpi4: ionctl devices --json card1 video0:"
	sed 's/^/    /' "$tmp/why" >&2
fi

# ---- Raspberry Pi 5 ----
c=50-rpi5.conf
solve rpi5 0 card1 card0 video0 -- heap=system cand="system linux,cma" \
	dev="card1:system linux,cma" dev="card0:system linux,cma" dev="video0:system linux,cma" \
	src="card0:$(at $c 'Device v3d' Contiguous)"
explain rpi5 0 card0 video20 -- "$(at $c 'Board rpi5')" "$(at $c 'Device v3d' Contiguous)" \
	"$(at $c 'Device pispbe' Contiguous)" "$(at $c 'Heap linux,cma' AddressBits)"

# ---- Radxa ROCK 5B ----
c=50-rock5b.conf
solve rock5b 0 card0 video1 -- heap=reserved cand="reserved" \
	dev="card0:system reserved" dev="video1:reserved" \
	rej="system:video1:$(at $c 'Device rga2' AddressBits)"
solve rock5b 0 card0 card1 video0 -- heap=system cand="system reserved"
explain rock5b 0 card0 video1 -- "$(at $c 'Board rock5b')" \
	"$(at $c 'Device rockchip-drm' Contiguous)" "$(at $c 'Device rga2' Contiguous)" \
	"$(at $c 'Device rga2' AddressBits)" "$(at $c 'Heap reserved' AddressBits)"

# ---- NXP i.MX8M Plus EVK ----
c=50-imx8mp-evk.conf
solve imx8mp-evk 0 card0 video0 video3 -- heap=reserved cand="reserved" \
	rej="system:card0:$(at $c 'Device lcdif' Contiguous)" \
	rej="system:video0:$(at $c 'Device isi' Contiguous)" \
	rej="system:video3:$(at $c 'Device hantro' Contiguous)"
solve imx8mp-evk 0 card1 -- heap=system cand="system reserved" \
	src="card1:$(at $c 'Device etnaviv' Contiguous)"
explain imx8mp-evk 0 card0 video3 -- "$(at $c 'Board imx8mp-evk')" \
	"$(at $c 'Device lcdif' Contiguous)" "$(at $c 'Device hantro' AddressBits)" \
	"$(at $c 'Heap reserved' AddressBits)"

# ---- TI AM62x SK ----
c=50-am62x-sk.conf
solve am62x-sk 0 card0 card1 -- heap=reserved cand="reserved" dev="card1:system reserved" \
	rej="system:card0:$(at $c 'Device tidss' Contiguous)"
explain am62x-sk 0 video0 card1 -- "$(at $c 'Board am62x-sk')" \
	"$(at $c 'Device csi2rx' Contiguous)" "$(at $c 'Device powervr' Contiguous)"

# ---- the test VM ----
c=50-qemu-q35.conf
solve qemu-q35 0 video0 video1 -- heap=reserved cand="reserved" \
	dev="video0:reserved" dev="video1:system reserved" \
	rej="udmabuf:video1:$(at $c 'Device vivid-vmalloc' KernelMap)"
# No heap fits: virtio-gpu takes only its own buffers, and a fake tree
# has no GEM heap.
solve qemu-q35 1 virtio-gpu -- heap=none cand= \
	rej="system:virtio-gpu:$(at $c 'Device virtio-gpu' OwnBuffersOnly)"
explain qemu-q35 1 virtio-gpu -- "$(at $c 'Device virtio-gpu' OwnBuffersOnly)"
explain qemu-q35 0 video0 -- "$(at $c 'Board qemu-q35')" \
	"$(at $c 'Device vivid-contig' Contiguous)" "$(at $c 'Device vivid-contig' AddressBits)" \
	"$(at $c 'Device vivid-contig' KernelMap)" "$(at $c 'Heap reserved' MaxSize)"
# --expect: exit 0 only when the answer is the heap named (its name, not
# an alias), and say the answer otherwise.
run qemu-q35 0 solve video0 video1 --expect reserved
run qemu-q35 1 solve video0 video1 --expect system
grep -q 'the answer is reserved, not system' "$tmp/err" ||
	fail "qemu-q35: solve --expect system does not say the answer"
run qemu-q35 1 solve video0 video1 --json --expect cma
run qemu-q35 1 solve virtio-gpu --expect reserved
grep -q 'the answer is no heap, not reserved' "$tmp/err" ||
	fail "qemu-q35: solve --expect with no answer does not say so"
run qemu-q35 0 explain video0 video1 --expect reserved
run qemu-q35 1 explain video0 video1 --expect system
run qemu-q35 2 solve video0 --expect

# ---- the arm64 test VM: QEMU virt, a device tree, an SMMUv3 ----
# The devices and answers of q35's, from the board that the device tree's
# root matches (no DMI there); like q35's, the tree has no DRM driver
# names, so vkms (card1) is left out.
c=50-qemu-virt.conf
solve qemu-virt 0 video0 video1 -- heap=reserved cand="reserved" \
	dev="video0:reserved" dev="video1:system reserved" \
	src="video0:$(at $c 'Device vivid-contig' Contiguous)" \
	rej="system:video0:$(at $c 'Device vivid-contig' Contiguous)" \
	rej="udmabuf:video1:$(at $c 'Device vivid-vmalloc' KernelMap)"
# virtio-gpu's card behind the SMMU: scattered memory, derived from its
# IOMMU group (a fake tree has no DRM driver name to match the board's
# virtio-gpu section, which the next solve names).
solve qemu-virt 0 card2 -- heap=system cand="system udmabuf reserved" \
	src="card2:/4010000000.pcie/pci0000:00/0000:00:01.0/iommu_group"
solve qemu-virt 1 virtio-gpu -- heap=none cand= \
	rej="system:virtio-gpu:$(at $c 'Device virtio-gpu' OwnBuffersOnly)"
explain qemu-virt 0 video0 -- "$(at $c 'Board qemu-virt')" \
	"$(at $c 'Device vivid-contig' Contiguous)" "$(at $c 'Device vivid-contig' AddressBits)" \
	"$(at $c 'Device vivid-contig' KernelMap)" "$(at $c 'Heap reserved' MaxSize)"

# ---- exit statuses of failures and usage errors ----
run rpi4 1 solve no-such-device --json
run rpi4 2 solve --json
run rpi4 2 solve --no-such-option card1
run rpi4 2 explain --json card1
run rpi4 2 no-such-command

if [ "$failures" -ne 0 ]; then
	echo "$failures failure(s)" >&2
	exit 1
fi
echo "all board checks passed"
