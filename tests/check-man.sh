#!/bin/sh
# SPDX-License-Identifier: MIT
#
# The man pages render without a single warning, and ionctl(1) keeps up
# with ionctl:
#  1. each page: groff -ww -man -z (every warning groff has), and
#     man --warnings -l where man-db is installed; any output fails;
#  2. no @PLACEHOLDER@ is left from configure_file;
#  3. given ionctl: every command of `ionctl --help` has its section in
#     ionctl(1), and every long option of every `ionctl COMMAND --help`,
#     and of `ionctl --help`, is in the page.
# Usage: check-man.sh [--ionctl IONCTL] PAGE...
set -eu
ionctl=
if [ "${1:-}" = --ionctl ]; then
	ionctl=$2
	shift 2
fi
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
failed=0 passed=0
fail() { echo "FAIL: $*" >&2; failed=$((failed + 1)); }

command -v groff >/dev/null || { echo "groff is not installed (groff-base)" >&2; exit 77; }
for page in "$@"; do
	name=$(basename "$page")
	if ! groff -ww -man -z "$page" >"$tmp/groff" 2>&1 || [ -s "$tmp/groff" ]; then
		fail "$name: groff -ww -man -z warns:"
		sed 's/^/  /' "$tmp/groff" >&2
	else
		passed=$((passed + 1)); echo "ok: $name renders without groff warnings"
	fi
	if command -v man >/dev/null; then
		if ! LC_ALL=C.UTF-8 MANWIDTH=80 man --warnings -l "$page" >"$tmp/out" 2>"$tmp/man" ||
			[ -s "$tmp/man" ]; then
			fail "$name: man --warnings -l warns:"
			sed 's/^/  /' "$tmp/man" >&2
		else
			passed=$((passed + 1)); echo "ok: $name renders without man --warnings warnings"
		fi
	fi
	if grep -n '@[A-Z_]*@' "$page" >"$tmp/at"; then
		fail "$name: placeholders left:"
		sed 's/^/  /' "$tmp/at" >&2
	fi
done

if [ -n "$ionctl" ]; then
	page=
	for p in "$@"; do
		case $p in */ionctl.1) page=$p ;; esac
	done
	[ -n "$page" ] || { fail "no ionctl.1 given"; exit 1; }
	# roff's \- is a plain - for this comparison.
	sed 's/\\-/-/g' "$page" >"$tmp/page"
	commands=$("$ionctl" --help | sed -n 's/^  \([a-z][a-z]*\)  .*/\1/p')
	[ -n "$commands" ] || fail "ionctl --help lists no commands"
	for cmd in $commands help; do
		if grep -q "^\.SS \"ionctl $cmd" "$tmp/page"; then
			passed=$((passed + 1))
		else
			fail "ionctl.1 has no section for 'ionctl $cmd'"
		fi
		[ "$cmd" = help ] && continue
		"$ionctl" "$cmd" --help >"$tmp/help" 2>&1 || true
		for opt in $(grep -o -- '--[a-z][a-z-]*' "$tmp/help" | sort -u); do
			if grep -q -- "$opt" "$tmp/page"; then
				passed=$((passed + 1))
			else
				fail "ionctl.1 does not mention $cmd's $opt"
			fi
		done
	done
	for opt in $("$ionctl" --help | grep -o -- '--[a-z][a-z-]*' | sort -u); do
		grep -q -- "$opt" "$tmp/page" || fail "ionctl.1 does not mention the global $opt"
	done
	echo "ok: ionctl.1 covers ionctl's commands and options"
fi

echo "$passed passed, $failed failed"
[ "$failed" = 0 ]
