#!/bin/sh
# SPDX-License-Identifier: MIT
#
# ionctl's behaviour and exit statuses (0 success, 1 a runtime failure or
# a "no", 2 a usage error), on whatever heaps this machine has.
# Usage: check-ionctl.sh IONCTL VERSION SCHEMA PYTHON (PYTHON: one with
# the jsonschema module, which every --json output is validated with)
set -u
ionctl=$1
version=$2
schema=$3
python=$4
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
failures=0
checks=0

# expect STATUS DESCRIPTION -- ARGS...: runs ionctl ARGS, output in
# $tmp/out and $tmp/err, and checks its exit status.
expect() {
	want=$1 what=$2
	shift 3
	checks=$((checks + 1))
	"$ionctl" "$@" >"$tmp/out" 2>"$tmp/err"
	got=$?
	if [ "$got" != "$want" ]; then
		echo "FAIL: $what: ionctl $*: exit $got, not $want" >&2
		sed 's/^/  stdout: /' "$tmp/out" | head -n 5 >&2
		sed 's/^/  stderr: /' "$tmp/err" | head -n 5 >&2
		failures=$((failures + 1))
		return 1
	fi
	echo "ok: $what (exit $got)"
}

# has FILE PATTERN DESCRIPTION: the output has a line matching PATTERN.
has() {
	checks=$((checks + 1))
	if ! grep -Eq -- "$2" "$tmp/$1"; then
		echo "FAIL: $3: no '$2' in $1:" >&2
		sed 's/^/  /' "$tmp/$1" | head -n 10 >&2
		failures=$((failures + 1))
		return 1
	fi
}

# json EXPR DESCRIPTION: $tmp/out parses as JSON, is valid by
# ionctl.schema.json, and the Python expression EXPR (over `d`) is true.
json() {
	checks=$((checks + 1))
	if ! "$python" -c 'import json, sys, jsonschema
d = json.load(open(sys.argv[1]))
try:
    jsonschema.validate(d, json.load(open(sys.argv[3])))
except jsonschema.ValidationError as e:
    print("not as ionctl.schema.json says: %s at %s" % (e.message, list(e.absolute_path)))
    sys.exit(1)
sys.exit(0 if eval(sys.argv[2]) else 1)' "$tmp/out" "$1" "$schema"; then
		echo "FAIL: $2: $1 is not true of:" >&2
		head -c 2000 "$tmp/out" | sed 's/^/  /' >&2
		failures=$((failures + 1))
		return 1
	fi
}

# ---- usage, help, version
expect 2 "no command prints usage" -- && has err '^usage: ionctl' "usage on stderr"
expect 0 "--help" -- --help && has out '^  bench ' "--help lists the commands"
expect 0 "help alone" -- help && has out '^usage: ionctl' "help prints usage"
for cmd in heaps devices solve explain check alloc pool bench; do
	expect 0 "help $cmd shows that topic" -- help "$cmd" &&
		has out "^usage: ionctl $cmd" "help $cmd is $cmd's usage"
	expect 0 "$cmd --help" -- "$cmd" --help
done
expect 2 "help of no such topic" -- help nosuch
expect 0 "--version" -- --version && has out "^ionctl $version\$" "--version says $version"
expect 2 "an unknown command" -- nosuch
expect 2 "an unknown global option" -- --nosuch
expect 2 "--sysroot without a directory" -- --sysroot
expect 2 "heaps with an extra argument" -- heaps extra
expect 2 "heaps with an unknown option" -- heaps --nosuch
expect 2 "alloc without --size" -- alloc
expect 2 "alloc --size 0" -- alloc --size 0
expect 2 "alloc --size garbage" -- alloc --size 12Q
expect 2 "alloc --count 0" -- alloc --size 4K --count 0
expect 2 "alloc --heap and --for" -- alloc --size 4K --heap memfd --for card0
expect 2 "solve without a device" -- solve
expect 2 "explain --json" -- explain --json card0
expect 2 "bench --rounds 0" -- bench --rounds 0
expect 2 "bench --solve --rounds 64 (its figures live in 64 slots)" -- bench --solve --rounds 64
expect 2 "bench --for without --solve" -- bench --for card0
expect 2 "bench --solve --pool" -- bench --solve --pool
expect 2 "pool with malformed --hints" -- pool --hints 8y1M

# ---- the heaps here
expect 0 "heaps" -- heaps && has out '^HEAP ' "heaps prints its table"
expect 0 "heaps --json" -- heaps --json && json 'len(d["heaps"]) > 0' "heaps --json lists the heaps"
cp "$tmp/out" "$tmp/heaps.json"
heap=$(python3 -c 'import json, sys
heaps = [h for h in json.load(open(sys.argv[1]))["heaps"] if h["available"]]
print(heaps[0]["name"] if heaps else "")' "$tmp/heaps.json")
[ -n "$heap" ] || { echo "FAIL: no available heap here" >&2; exit 1; }
echo "an available heap: $heap"

# Valid JSON whatever the bytes of a name: a heaps.d folder whose name
# holds a control byte, DEL, a byte of no UTF-8 and a real UTF-8 letter
# comes back in each heap attribute's source.
odd=$(printf '%s/odd-\001-\177-\377-\303\050-\303\251' "$tmp")
mkdir "$odd" && printf '[Heap %s]\nAliases = odd\n' "$heap" >"$odd/60-odd.conf"
expect 0 "heaps --json with odd bytes in a source" -- --config-dir "$odd" heaps --json &&
	json 'any("odd-\x01-\x7f-\xff-\xc3(-\xe9/60-odd.conf" in a["source"]
	          for h in d["heaps"] for a in h["attributes"])' \
		"every byte of a source comes back as a JSON string"

# ---- --heap nosuch names the heaps that exist
for cmd in "alloc --size 4K" "pool" "bench" "bench --pool"; do
	# shellcheck disable=SC2086
	expect 1 "$cmd --heap nosuch fails" -- $cmd --heap nosuch &&
		has err "no heap is named 'nosuch'; the heaps here are:.* $heap" \
			"$cmd --heap nosuch lists the heaps there are"
done
[ -s "$tmp/out" ] && {
	echo "FAIL: bench --pool --heap nosuch printed a table" >&2
	failures=$((failures + 1))
}

# ---- alloc reports the size it really allocated
expect 0 "alloc of 5000 bytes" -- alloc --size 5000 --heap "$heap" &&
	has out '^buffer 0: [0-9]+ bytes \(5000 asked\) from' "alloc says the real size and the asked one"
expect 0 "alloc --json" -- alloc --size 5000 --count 2 --heap "$heap" --json &&
	json 'len(d["buffers"]) == 2 and all(b["requested"] == 5000 and b["size"] >= 8192 and
	      b["size"] % 4096 == 0 and b["heap"] == "'"$heap"'" and b["child"] > 0 for b in d["buffers"])' \
		"alloc --json: the requested and the real, page-rounded size of each buffer"
expect 0 "alloc of whole pages" -- alloc --size 8K --heap "$heap" &&
	has out '^buffer 0: 8192 bytes from' "alloc of whole pages says only the size"

# ---- bench: a table and JSON rows
expect 0 "bench on $heap" -- bench --heap "$heap" --sizes 4K --rounds 1 --round-ms 1 &&
	has out "^$heap " "bench prints a row for $heap"
expect 0 "bench --json" -- bench --heap "$heap" --sizes 4K,64K --rounds 1 --round-ms 1 --json &&
	json 'len(d["rows"]) >= 2 and all(set(r) >= {"heap", "backend", "raw_call", "size", "raw_ns",
	      "lib_ns", "ratio"} and r["heap"] == "'"$heap"'" for r in d["rows"] if "skipped" not in r)' \
		"bench --json rows have heap, size, raw_ns, lib_ns, ratio"
# memfd beside the very syscalls libion makes, its checks included: the
# ratio to those is what the library's own code costs (README, Benchmarks).
expect 0 "bench --json on memfd" -- bench --heap memfd --sizes 4K --rounds 1 --round-ms 1 --json &&
	json '[r["raw_call"] for r in d["rows"]] == ["memfd", "memfd+seal", "memfd+seal+rlimit",
	      "memfd+seal+rlimit+fstat"]' "bench times memfd's raw call with and without libion's checks"
expect 0 "bench --pool --json" -- bench --pool --heap "$heap" --sizes 4K --rounds 3 \
	--stream-seconds 0 --json && json 'len(d["rows"]) == 1' "bench --pool --json has its row"
# A heap that cannot give a size is a row that says so, not a failed run:
# memfd limited to 1M by a board file, asked for 4M.
mkdir "$tmp/max1m"
printf '[Heap memfd]\nMaxSize = 1M\n' >"$tmp/max1m/10-max.conf"
export ION_HEAPS_PATH="$tmp/max1m"
expect 0 "bench --pool with a size the heap cannot give" -- bench --pool --heap memfd \
	--sizes 4K,4M --rounds 3 --stream-seconds 0 --json &&
	json '(len(d["rows"]) == 2 and "raw_p50_ns" in d["rows"][0] and
	       d["rows"][1]["exhausted"] is True and d["rows"][1]["size"] == 4 << 20)' \
		"bench --pool: the 4M row is exhausted, the 4K row measured"
unset ION_HEAPS_PATH
# bench --solve's JSON contract (only these keys: others may join them):
# figures for context creation and for solves over 1, 4 and 16 devices;
# alloc_ratio null where no device here is served (the host, often).
# The smallest fake tree and one round keep it fast.
expect 0 "bench --solve --json" -- bench --solve --devices 16 --rounds 1 --json &&
	json '(type(d["context_ns"]) in (int, float) and d["context_ns"] > 0 and
	       type(d["solve_ns"]) is dict and set(d["solve_ns"]) == {"1", "4", "16"} and
	       all(type(v) in (int, float) and v > 0 for v in d["solve_ns"].values()) and
	       "alloc_ratio" in d and (d["alloc_ratio"] is None or
	                               type(d["alloc_ratio"]) in (int, float) and d["alloc_ratio"] > 0))' \
		"bench --solve --json: context_ns, solve_ns for 1, 4 and 16 devices, alloc_ratio"

expect 0 "bench --pool --json with a stream" -- bench --pool --heap "$heap" --sizes 4K --rounds 3 \
	--stream-seconds 1 --json &&
	json '(len(d["rows"]) == 1 and set(d["stream"]) >= {"heap", "size", "stream_p50_ns",
	      "stream_p99_ns", "stream_hits", "stream_misses", "raw_p50_ns", "raw_paced_p50_ns",
	      "raw_paced_p99_ns"} and d["stream"]["heap"] == "'"$heap"'" and
	      0 < d["stream"]["stream_p50_ns"] <= d["stream"]["stream_p99_ns"] and
	      d["stream"]["stream_hits"] + d["stream"]["stream_misses"] == 60)' \
		"bench --pool --json: the stream's p50, p99, hits and misses" &&
	json 'all(s["p99_after_1s_ns"] is None and 1 <= len(s["slowest_gets"]) <= 3 and
	          all(0 <= g["at"] < s["hits"] + s["misses"] for g in s["slowest_gets"]) and
	          [g["ns"] for g in s["slowest_gets"]] ==
	              sorted((g["ns"] for g in s["slowest_gets"]), reverse=True) and
	          s["slowest_gets"][0]["ns"] >= s["p99_ns"]
	          for s in d["streams"] if "p50_ns" in s) and len(d["streams"]) >= 6' \
		"bench --pool --json: each stream's slowest gets, and no p99 after 1 s of a 1 s stream" &&
	json 'all(0 <= s["nothing_paced_p50_ns"] <= s["nothing_paced_p99_ns"] and
	          0 < s["nothing_paced_p99_ns"] for s in d["streams"] if "p50_ns" in s)' \
		"bench --pool --json: nothing at all timed beside each stream" &&
	json 'all(0 < s["spin_paced_p50_ns"] <= s["spin_paced_p99_ns"] <= s["spin_paced_max_ns"] and
	          s["spin_paced_p50_ns"] >= s["p50_ns"] / 4 and
	          s["spin_p99_within_2x_p50"] == (s["spin_paced_p99_ns"] <= 2 * s["spin_paced_p50_ns"])
	          for s in d["streams"] if "p50_ns" in s)' \
		"bench --pool --json: a spin as long as the get, timed beside each stream" &&
	json 'all(0 < s["call_paced_p50_ns"] <= s["call_paced_p99_ns"] and
	          0 < s["far_paced_p50_ns"] <= s["far_paced_p99_ns"] and
	          s["far_paced_p50_ns"] >= s["p50_ns"] / 4 and
	          s["far_p99_within_2x_p50"] == (s["far_paced_p99_ns"] <= 2 * s["far_paced_p50_ns"])
	          for s in d["streams"] if "p50_ns" in s)' \
		"bench --pool --json: a call to a page of code of its own, bare and as long as a get" &&
	json '([w["rate"] for w in d["wakes"]] == [60, 240] and
	       all(0 < w["p50_ns"] <= w["p99_ns"] for w in d["wakes"]))' \
		"bench --pool --json: what a wake-up costs at 60 and 240 a second"

# --sizes with an empty item, a bad one, too many: refused once, clearly.
expect 2 "bench --sizes 4K,,1M" -- bench --sizes 4K,,1M &&
	has err '^ionctl bench: --sizes 4K,,1M: an empty size$' "an empty size is said" &&
	checks=$((checks + 1)) && [ "$(wc -l <"$tmp/err")" = 1 ] ||
	{ echo "FAIL: --sizes 4K,,1M: not one line:" >&2; cat "$tmp/err" >&2; failures=$((failures + 1)); }
expect 2 "bench --sizes 4K,1X" -- bench --sizes 4K,1X && checks=$((checks + 1)) &&
	[ "$(wc -l <"$tmp/err")" = 1 ] ||
	{ echo "FAIL: --sizes 4K,1X: not one line:" >&2; cat "$tmp/err" >&2; failures=$((failures + 1)); }
expect 2 "bench --sizes with 17 sizes" -- bench --sizes 1K,2K,3K,4K,5K,6K,7K,8K,9K,10K,11K,12K,13K,14K,15K,16K,17K &&
	has err 'at most 16 sizes' "too many sizes is said"

# Progress: on a terminal's stderr only (script(1) gives it one).
if command -v script >/dev/null; then
	IONCTL_PROGRESS_AFTER=0 script -qec "'$ionctl' bench --solve --devices 16 --rounds 1" \
		/dev/null >"$tmp/out" 2>&1
	has out 'ionctl bench: --solve, 4 devices\.\.\.' "bench shows progress on a terminal"
	IONCTL_PROGRESS_AFTER=0 "$ionctl" bench --solve --devices 16 --rounds 1 >/dev/null 2>"$tmp/err"
	checks=$((checks + 1))
	if grep -q 'ionctl bench: --solve,' "$tmp/err"; then
		echo "FAIL: progress where stderr is no terminal" >&2
		failures=$((failures + 1))
	fi
fi

# ---- devices, solve, check
expect 0 "devices --json" -- devices --json && json 'isinstance(d["devices"], list)' "devices --json lists the devices"
# A device that does not exist: -ENODEV, said with the path asked for
# (the library logs it only at debug priority: it is no error to a
# caller that probes).
expect 1 "solve for no such device" -- solve /dev/nosuch-device &&
	has err '^ionctl solve: no device /dev/nosuch-device: No such device$' \
		"solve names the missing device"
expect 1 "alloc for no such device" -- alloc --size 4K --for /dev/nosuch-device &&
	has err '^ionctl alloc: no device /dev/nosuch-device: No such device$' \
		"alloc names the missing device"
expect 1 "devices of no such device" -- devices /sys/devices/nosuch-device &&
	has err '^ionctl devices: no device /sys/devices/nosuch-device: ' \
		"devices names the missing device" &&
	has err '^ionctl devices: the devices here:' "and lists those there are"
# getopt's own complaints name the command; a --sysroot that is not there
# is an error, not a machine with nothing on it.
expect 2 "an unknown option" -- heaps --nosuch-option &&
	has err "^ionctl heaps: unrecognized option '--nosuch-option'" "getopt's message names the command"
expect 1 "a --sysroot that does not exist" -- --sysroot /nonexistent/root heaps &&
	has err '^ionctl heaps: --sysroot /nonexistent/root: No such file or directory$' \
		"a missing sysroot is said"
# --constraints: another process's, the DEVICEs left out.  Heaps=nosuch
# excludes every heap, and memfd is out for any device: each verdict is
# the remote device's.
expect 1 "explain --constraints of another process" -- explain \
	--constraints 'ionc1 dev=peer0,Heaps=nosuch@7@peer.conf' &&
	has out "^   $heap +out: peer0 " "explain names the other process's device"
expect 1 "solve --constraints of a malformed text" -- solve --constraints 'ionc1 dev=%GG' &&
	has err '^ionctl solve: the constraints are refused: Invalid argument$' \
		"solve says the text is refused"
# A peer's ESC, CR, LF, BEL and DEL (a colour, a line of its own, a window
# title) reach explain's output escaped: no control byte but the line
# ends, and the name on its verdict's one line.
peer='ionc1 dev=evil%1B%5B31m%0D%0Afake%7F,Heaps=nosuch@7@src%1B%5D0%3Btitle%07%0D%0A'
for cmd in explain solve; do
	expect 1 "$cmd --constraints with control bytes" -- "$cmd" --constraints "$peer" || continue
	checks=$((checks + 1))
	if LC_ALL=C grep -q '[[:cntrl:]]' "$tmp/out"; then
		echo "FAIL: $cmd --constraints printed a control byte:" >&2
		LC_ALL=C grep -n '[[:cntrl:]]' "$tmp/out" | cat -v | head -n 5 >&2
		failures=$((failures + 1))
	fi
	has out '^ .*evil\\x1b\[31m\\x0d\\x0afake\\x7f ' "$cmd shows the peer's name escaped"
done
printf '[Heap system]\nContigous = yes\n' >"$tmp/90-bad.conf"
expect 1 "check of a file with a typo" -- check "$tmp/90-bad.conf" &&
	has err "90-bad.conf:2: " "check says file:line"
printf '[Heap system]\nContiguous = no\n' >"$tmp/90-good.conf"
expect 0 "check of a good file" -- check "$tmp/90-good.conf" &&
	has out '^1 file read, 0 problems$' "check counts the file it read"
# PATHs that yield no file: a missing one is no error to discovery (a
# layer this system lacks), but "0 problems" would pass a typo.
mkdir "$tmp/empty"
expect 1 "check of a folder without .conf files" -- check "$tmp/empty" &&
	has err '^ionctl check: no file read' "check says it read no file"
expect 1 "check of a path that does not exist" -- check "$tmp/nosuch"
expect 0 "check of an empty folder beside a good file" -- check "$tmp/empty" "$tmp/90-good.conf"
# More than 16 PATHs: the library reads 16 and says which it left out.
paths=""
for i in $(seq 1 17); do
	mkdir "$tmp/layer$i"
	paths="$paths $tmp/layer$i"
done
cp "$tmp/90-good.conf" "$tmp/layer1/"
# shellcheck disable=SC2086 # the paths hold no blanks (mktemp -d)
expect 0 "check of 17 folders" -- check $paths &&
	has err "more than 16 folders: $tmp/layer17 and every one after it are not read" \
		"check says the 17th folder is not read"
expect 0 "pool on $heap" -- pool --heap "$heap" --hints 2x64K --cycle 64K --count 4
expect 0 "pool --json" -- pool --heap "$heap" --hints 2x64K --cycle 64K --count 4 --json &&
	json '(set(d) >= {"pool", "hits", "misses", "bytes_held", "high_water", "buffers_out",
	      "refills", "reclaims", "trims", "board_pools"} and d["pool"] == "'"$heap"'" and
	      d["refills"] == 2 and d["hits"] + d["misses"] == 4 and d["buffers_out"] == 0 and
	      isinstance(d["board_pools"], list))' \
		"pool --json: every statistic, and the board pools"

echo "$((checks - failures)) passed, $failures failed"
[ "$failures" = 0 ]
