#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
#
# Runs a libFuzzer target that is already built, for a bounded time:
#   tests/fuzz/run-fuzz.sh BUILD/tests/fuzz/fuzz-heaps-conf [SECONDS]
# (build it with CC=clang meson setup BUILD -Dfuzz=enabled). The seeds are
# the shipped heaps.d/*.conf and tests/fuzz/corpus-heaps-conf/*; the
# inputs it finds go to a scratch corpus, or to KEEP_CORPUS=DIR. A crash
# leaves its input as crash-* in the current folder and exits non-zero.
set -euo pipefail

fuzzer=${1:?usage: run-fuzz.sh FUZZER [SECONDS]}
seconds=${2:-60}
here=$(cd "$(dirname "$0")" && pwd)
top=$(cd "$here/../.." && pwd)

if [ ! -x "$fuzzer" ]; then
	echo "run-fuzz: $fuzzer is not a built fuzzer" >&2
	exit 2
fi
case $seconds in
''|*[!0-9]*) echo "run-fuzz: SECONDS must be a number" >&2; exit 2 ;;
esac

seeds=$(mktemp -d)
work=${KEEP_CORPUS:-$(mktemp -d)}
cleanup() {
	rm -rf "$seeds"
	[ -n "${KEEP_CORPUS:-}" ] || rm -rf "$work"
}
trap cleanup EXIT
mkdir -p "$work"

shopt -s nullglob
for f in "$top"/heaps.d/*.conf; do
	cp "$f" "$seeds/shipped-$(basename "$f")"
done
for f in "$here"/corpus-heaps-conf/*; do
	cp "$f" "$seeds/seed-$(basename "$f")"
done

dict=()
[ -f "$here/heaps-conf.dict" ] && dict=(-dict="$here/heaps-conf.dict")

# Lines up to 4096 bytes and past them: inputs of a few lines of that.
exec "$fuzzer" -max_total_time="$seconds" -timeout=10 -rss_limit_mb=2048 \
	-max_len=16384 -print_final_stats=1 "${dict[@]}" "$work" "$seeds"
