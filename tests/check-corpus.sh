#!/bin/sh
# SPDX-License-Identifier: MIT
# check-corpus.sh IONCTL MAKE_FAKETREE CORPUS_DIR HEAPS_D
#
# Boards nobody wrote a heaps.d board file for, solved with the shipped
# heaps.d folder (driver files and derivation alone): each fake tree in
# CORPUS_DIR names its sources and ends with the answers public facts
# imply, one line a device set:
#
#   # expect card0 video0 = system linux,cma
#
# the heaps that set may be given ("" for none).  An answer is safe when
# every candidate ionctl solve gives is among them (a device is never
# given a heap it cannot reach), precise when the candidates are exactly
# them.  A safe answer known to fall short is written after the line:
#
#   # expect video0 = linux,cma | known:
#
# Fails on any unsafe answer and on any imprecise one not marked known
# (and on a known one that changed), so a regression either way shows;
# prints both figures.
set -eu

if [ $# -ne 4 ]; then
	echo "usage: $0 IONCTL MAKE_FAKETREE CORPUS_DIR HEAPS_D" >&2
	exit 2
fi
ionctl=$1
make_faketree=$2
corpus=$3
heaps_d=$4

tmp=$(mktemp -d /tmp/libion-check-corpus-XXXXXX)
trap 'rm -rf "$tmp"' EXIT INT TERM

# judge JSON WANT: "precise", "safe" or "unsafe", then the candidates
# (blank-separated) that solve --json gave.
judge='
import json, sys
got = json.load(open(sys.argv[1])).get("candidates") or []
want = set(sys.argv[2].split())
print("precise" if set(got) == want else "safe" if set(got) <= want else "unsafe", *got)
'

boards=0 answers=0 safe=0 precise=0 failures=0
for tree in "$corpus"/*.tree; do
	board=$(basename "$tree" .tree)
	boards=$((boards + 1))
	"$make_faketree" "$tree" "$tmp/$board"
	grep '^# expect ' "$tree" | sed 's/^# expect //' >"$tmp/expect"
	while IFS= read -r line; do
		known=none
		case $line in
		*" | known:"*)
			known=${line#* | known:}
			known=${known# }
			line=${line%% | known:*} ;;
		esac
		devices=${line%% =*}
		want=${line#*= }
		[ "$want" != "$line" ] || want=""
		# shellcheck disable=SC2086
		"$ionctl" --sysroot "$tmp/$board" --config-dir "$heaps_d" solve --json $devices \
			>"$tmp/out" 2>"$tmp/err" || true
		answers=$((answers + 1))
		if ! result=$(python3 -c "$judge" "$tmp/out" "$want" 2>/dev/null); then
			echo "FAIL: $board: ionctl solve $devices gave no JSON" >&2
			sed 's/^/    /' "$tmp/err" >&2
			failures=$((failures + 1))
			continue
		fi
		verdict=${result%% *}
		got=${result#"$verdict"}
		got=${got# }
		case $verdict in
		precise)
			precise=$((precise + 1)) safe=$((safe + 1))
			[ "$known" = none ] || echo "note: $board: $devices: now precise; drop its known mark" ;;
		safe)
			safe=$((safe + 1))
			echo "imprecise: $board: $devices: \"$got\", the facts allow \"$want\""
			if [ "$known" != "$got" ]; then
				echo "FAIL: $board: $devices: an imprecise answer not marked known" >&2
				failures=$((failures + 1))
			fi ;;
		*)
			failures=$((failures + 1))
			echo "FAIL: $board: $devices: \"$got\" gives a heap outside \"$want\"" >&2 ;;
		esac
	done <"$tmp/expect"
done

echo "corpus: $boards boards, $answers answers: safety $safe/$answers," \
	"precision $precise/$answers ($((precise * 100 / (answers ? answers : 1)))%)"
[ "$failures" -eq 0 ] && [ "$answers" -gt 0 ]
