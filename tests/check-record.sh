#!/bin/sh
# SPDX-License-Identifier: MIT
#
# ionctl record round-trips (and, on those trees, a few answers of ionctl
# that need a board): each board's fake tree, built, recorded
# through --sysroot and built again from the recording, gives the same
# `ionctl devices --json` (every device, constraint, source and fact),
# `heaps --json` and `solve` for every pair of devices, read with the
# shipped heaps.d; and `record --draft` of each is a heaps.d file that
# `ionctl check` reads without a problem.
# Usage: check-record.sh IONCTL MAKE_FAKETREE BOARDS_DIR HEAPS_D_DIR
set -eu
ionctl=$1 make_faketree=$2 boards=$3 heaps_d=$4
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
failed=0 passed=0

# ionctl on a tree, its output with the tree's own root taken out.
run() {
	root=$1
	shift
	"$ionctl" --sysroot "$root" --config-dir "$heaps_d" "$@" 2>&1 | sed "s|$root||g"
}

for tree in "$boards"/*.tree; do
	board=$(basename "$tree" .tree)
	a=$tmp/$board-a b=$tmp/$board-b
	"$make_faketree" "$tree" "$a"
	if ! "$ionctl" --sysroot "$a" record --output "$tmp/$board.tree" ||
		! "$make_faketree" "$tmp/$board.tree" "$b"; then
		echo "FAIL: $board: the recording does not build" >&2
		failed=$((failed + 1))
		continue
	fi
	same=1
	devices=$(run "$a" devices --json | sed -n 's/^ *{"device": "\([^"]*\)".*/\1/p')
	set -- "devices --json" "heaps --json"
	for x in $devices; do
		for y in $devices; do
			[ "$x" \< "$y" ] && set -- "$@" "solve $x $y"
		done
	done
	for cmd in "$@"; do
		# shellcheck disable=SC2086 # the commands are words
		run "$a" $cmd >"$tmp/a.out" || true
		# shellcheck disable=SC2086
		run "$b" $cmd >"$tmp/b.out" || true
		if ! cmp -s "$tmp/a.out" "$tmp/b.out"; then
			echo "FAIL: $board: ionctl $cmd differs once recorded:" >&2
			diff "$tmp/a.out" "$tmp/b.out" | head -n 10 >&2 || true
			same=0
		fi
	done
	if [ $same = 1 ]; then
		passed=$((passed + 1))
		echo "ok: $board round-trips ($# commands, $(grep -c . "$tmp/$board.tree") lines)"
	else
		failed=$((failed + 1))
	fi
	mkdir "$tmp/draft-$board"
	"$ionctl" --sysroot "$a" --config-dir "$tmp/none" record --draft \
		>"$tmp/draft-$board/60-draft.conf"
	if "$ionctl" check "$tmp/draft-$board/60-draft.conf" >"$tmp/check.out" 2>&1 &&
		grep -q '^\[Board ' "$tmp/draft-$board/60-draft.conf" &&
		grep -q '^\[Device ' "$tmp/draft-$board/60-draft.conf"; then
		passed=$((passed + 1))
		echo "ok: $board's draft board file checks clean"
	else
		failed=$((failed + 1))
		echo "FAIL: $board's draft:" >&2
		cat "$tmp/check.out" >&2
	fi
done

# Nothing private: no serial number or MAC address leaves the machine.
printf 'file /sys/firmware/devicetree/base/compatible acme,board\\0\nfile /sys/firmware/devicetree/base/serial-number 0123456789\\0\nfile /sys/firmware/devicetree/base/chosen/bootargs root=/dev/secret\\0\nfile /sys/firmware/devicetree/base/ethernet@0/local-mac-address \\x02\\x11\\x22\\x33\\x44\\x55\nfile /sys/firmware/devicetree/base/ethernet@0/compatible acme,eth\\0\n' >"$tmp/private.tree"
"$make_faketree" "$tmp/private.tree" "$tmp/private"
"$ionctl" --sysroot "$tmp/private" record --output "$tmp/private.out"
if grep -q 'serial-number\|bootargs\|mac-address\|0123456789' "$tmp/private.out" ||
	! grep -q 'ethernet@0/compatible' "$tmp/private.out"; then
	failed=$((failed + 1))
	echo "FAIL: the recording keeps something private, or drops the rest:" >&2
	cat "$tmp/private.out" >&2
else
	passed=$((passed + 1))
	echo "ok: serial numbers, MAC addresses and /chosen stay out"
fi
# A device name with a typo: ionctl lists the devices the tree has.
if "$ionctl" --sysroot "$tmp/qemu-q35-a" solve vide0 >/dev/null 2>"$tmp/err" ||
	! grep -q '^ionctl solve: the devices here: .*video0 (/dev/video0)' "$tmp/err"; then
	failed=$((failed + 1)); echo "FAIL: no device lists the devices:" >&2; cat "$tmp/err" >&2
else
	passed=$((passed + 1)); echo "ok: a missing device's message lists those there are"
fi
# explain says what a heaps.d name is ("vc4 is card1"), and wraps its
# verdicts at a terminal's width (script(1) gives it one of 60 columns).
if ! "$ionctl" --sysroot "$tmp/rpi4-a" --config-dir "$heaps_d" explain vc4 unicam >"$tmp/out" ||
	! grep -q '^   vc4 is card1$' "$tmp/out" || ! grep -q '^   unicam is video0$' "$tmp/out" ||
	grep -q '^ \{31\}[^ ]' "$tmp/out"; then
	failed=$((failed + 1)); echo "FAIL: explain vc4 unicam:" >&2; cat "$tmp/out" >&2
else
	passed=$((passed + 1)); echo "ok: explain names vc4 as card1, one line a verdict off a terminal"
fi
if command -v script >/dev/null; then
	script -qec "stty cols 60; '$ionctl' --sysroot '$tmp/rpi4-a' --config-dir '$heaps_d' explain vc4 unicam" \
		/dev/null | tr -d '\r' >"$tmp/out"
	if grep -q '^ \{31\}[^ ]' "$tmp/out" &&
		! sed -n '/^4\./,/^5\./p' "$tmp/out" | grep -v '^ \{31\}[^ ]*$' | grep -q '.\{61\}'; then
		passed=$((passed + 1)); echo "ok: explain wraps at a terminal's 60 columns"
	else
		failed=$((failed + 1)); echo "FAIL: explain on a 60-column terminal:" >&2; cat "$tmp/out" >&2
	fi
fi
# A length past a heap's MaxSize: the refusal names the board file's line.
line=$(grep -n '^MaxSize = ' "$heaps_d/50-qemu-q35.conf" | head -n 1 | cut -d: -f1)
if "$ionctl" --sysroot "$tmp/qemu-q35-a" --config-dir "$heaps_d" alloc --size 100M \
	--heap reserved >/dev/null 2>"$tmp/err" ||
	! grep -q "^ionctl alloc: reserved can never give 104857600 bytes: at most 67108864 (MaxSize, .*/50-qemu-q35.conf:$line)\$" "$tmp/err"; then
	failed=$((failed + 1)); echo "FAIL: a MaxSize refusal without its file:line:" >&2; cat "$tmp/err" >&2
else
	passed=$((passed + 1)); echo "ok: a MaxSize refusal names 50-qemu-q35.conf:$line"
fi
# Errors: a sysroot that does not exist, an output that cannot be made.
if "$ionctl" --sysroot "$tmp/nosuch" record >/dev/null 2>"$tmp/err" ||
	! grep -q 'ionctl record: --sysroot' "$tmp/err"; then
	failed=$((failed + 1)); echo "FAIL: record on a missing sysroot" >&2
else
	passed=$((passed + 1)); echo "ok: record on a missing sysroot is an error"
fi
if "$ionctl" record --output "$tmp/nosuch/x.tree" 2>/dev/null; then
	failed=$((failed + 1)); echo "FAIL: record into a missing folder" >&2
else
	passed=$((passed + 1)); echo "ok: record into a missing folder is an error"
fi
echo "$passed passed, $failed failed"
[ "$failed" = 0 ]
