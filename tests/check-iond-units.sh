#!/bin/sh
# SPDX-License-Identifier: MIT
#
# iond's systemd units pass `systemd-analyze verify` (skipped, 77, where
# systemd-analyze is missing).  The units name the installed iond, which a
# build has not installed: the copies verified here name the built one.
# Usage: check-iond-units.sh IOND UNIT...
set -eu
iond=$1
shift
command -v systemd-analyze >/dev/null || { echo "systemd-analyze is not installed" >&2; exit 77; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
for unit in "$@"; do
	sed "s|^ExecStart=[^ ]*iond|ExecStart=$iond|" "$unit" >"$tmp/$(basename "$unit")"
done
cd "$tmp"
if ! SYSTEMD_LOG_LEVEL=warning systemd-analyze verify --man=no ./*.socket ./*.service >out 2>&1 ||
	grep -v '^$' out | grep -q .; then
	echo "FAIL: systemd-analyze verify:" >&2
	sed 's/^/  /' out >&2
	exit 1
fi
echo "ok: $(cd "$tmp" && ls -- *.socket *.service | tr "\n" " ")verify clean"
