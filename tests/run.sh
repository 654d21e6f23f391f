#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
#
# The whole test suite, as CI runs it:
#  1. installs the Debian packages it needs (tests/deps.sh);
#  2. builds and runs the unit, host-integration and build tests (the
#     build suite compares the ABI with abi/'s baseline), and builds the
#     Debian packages and runs lintian on them (suite package);
#  3. runs them again under valgrind, in a build without libdrm and
#     libudev, in an ASan+UBSan build and in a ThreadSanitizer build;
#  4. cross-builds for aarch64 and armhf with -Dwerror=true (cross/) and
#     runs the unit and host tests of each under qemu-user; builds the
#     whole tree with clang -Dwerror=true for x86_64, aarch64 and armhf;
#  5. runs the libFuzzer targets for 30 s each (with clang);
#  6. builds (once, cached in ~/.cache/libion-vm) Linux 6.1 and 5.10 test
#     kernels and an arm64 6.1 one, and runs the integration tests and
#     ionctl inside QEMU on all three (arm64: the aarch64 cross build's
#     programs on QEMU's virt machine).
# Ends with one line "N passed, N failed" over every meson test it ran.
#
# LIBION_SKIP_VM=1 skips step 6; LIBION_SKIP_CROSS=1 skips step 4 and the
# arm64 VM; BUILD_DIR (default build-tests) names the build directory
# (BUILD_DIR-nodeps is the one without libdrm and libudev, BUILD_DIR-aarch64
# and BUILD_DIR-armhf the cross builds), ASAN_DIR (default build-asan) the
# sanitizer one.
set -euo pipefail
cd "$(dirname "$0")/.."

build=${BUILD_DIR:-build-tests}
asan=${ASAN_DIR:-build-asan}
logs=()

tests/deps.sh

step() { printf '\n==== %s\n' "$*"; }

# meson test, keeping a copy of its JSON log for the final count.
logdir=$(mktemp -d)
trap 'rm -rf "$logdir"' EXIT
mtest() {
	local dir=$1 status=0
	shift
	meson test -C "$dir" --print-errorlogs "$@" || status=$?
	logs+=("$logdir/${#logs[@]}.json")
	cp "$(ls -t "$dir"/meson-logs/testlog*.json | head -n 1)" "${logs[-1]}"
	return $status
}

failed=0
step "build"
# Both library kinds: the build suite links a static consumer too.
opts=(-Ddefault_library=both -Dtests=enabled)
if [ -d "$build" ]; then meson setup --reconfigure "$build" "${opts[@]}" >/dev/null; else meson setup "$build" "${opts[@]}"; fi
meson compile -C "$build"

step "unit, host and build tests"
mtest "$build" --suite unit --suite host --suite build || failed=1

step "Debian packages (dpkg-buildpackage, lintian) from a copy of the tree"
mtest "$build" --suite package || failed=1

step "the same under valgrind"
mtest "$build" --setup valgrind --suite unit --suite host || failed=1

step "build without libdrm and libudev"
nodeps=${build}-nodeps
[ -d "$nodeps" ] || meson setup "$nodeps" -Ddrm=disabled -Dudev=disabled -Dvm_tests=disabled \
	-Ddefault_library=both -Dtests=enabled >/dev/null
meson compile -C "$nodeps" >/dev/null
mtest "$nodeps" --suite unit --suite host --suite build || failed=1

step "ASan + UBSan build"
if [ ! -d "$asan" ]; then
	meson setup "$asan" -Db_sanitize=address,undefined -Db_lundef=false \
		-Dvm_tests=disabled -Dwerror=true -Dtests=enabled
fi
meson compile -C "$asan"
ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1 \
	mtest "$asan" --suite unit --suite host --suite build || failed=1

step "ThreadSanitizer build"
# test-faults interposes the libc calls TSan intercepts too: left out here.
tsan=${build}-tsan
[ -d "$tsan" ] || meson setup "$tsan" -Db_sanitize=thread -Db_lundef=false \
	-Dvm_tests=disabled -Dtests=enabled >/dev/null
meson compile -C "$tsan" >/dev/null
TSAN_OPTIONS=halt_on_error=1 mtest "$tsan" unit-util unit-registry unit-ion unit-pool-internal \
	host-compat host-heaps host-expected-heaps host-buffer host-pool host-hostile host-hotplug \
	host-dmabufheap || failed=1

cross=0
[ "${LIBION_SKIP_CROSS:-0}" = 1 ] || cross=1
if [ "$cross" = 1 ]; then
	# gcc -Werror cross builds, tested under qemu-user (the cross files'
	# exe_wrapper).  aarch64 keeps its VM test (vm-6.1-arm64, step 6);
	# armhf has no VM.  armhf runs the ion_map ABI test of 32-bit callers.
	for target in aarch64:aarch64-linux-gnu armhf:armhf-linux-gnueabihf; do
		arch=${target%%:*}
		dir=${build}-$arch
		step "cross build for $arch (gcc -Werror), unit and host tests under qemu-user"
		vm=auto
		[ "$arch" = aarch64 ] || vm=disabled
		# A build that fails says so and fails the run, without ending
		# it: the steps after still run, and the summary counts.
		if ! { [ -d "$dir" ] || meson setup "$dir" --cross-file "cross/${target#*:}.txt" \
			-Dwerror=true -Dvm_tests=$vm >/dev/null; } ||
		   ! meson compile -C "$dir" >"$logdir/compile-$arch.log" 2>&1; then
			grep -E 'error|FAILED' "$logdir/compile-$arch.log" | head -20
			echo "cross build for $arch failed"
			failed=1
			continue
		fi
		mtest "$dir" --suite unit --suite host || failed=1
	done

	step "clang -Werror builds of the whole tree: x86_64, aarch64, armhf"
	# Built, not run (gcc's builds run): the fuzzers are left out, as
	# Debian has no libFuzzer runtime for the cross targets.
	for target in x86_64 aarch64:aarch64-linux-gnu armhf:armhf-linux-gnueabihf; do
		arch=${target%%:*}
		dir=${build}-clang-$arch
		args=(-Dwerror=true -Dexamples=enabled -Dtests=enabled -Dfuzz=disabled -Dvm_tests=disabled)
		if [ "$arch" != x86_64 ]; then
			args+=(--cross-file "cross/${target#*:}.txt"
			       --cross-file "cross/clang-${target#*:}.txt")
		fi
		if [ -d "$dir" ] || CC=clang meson setup "$dir" "${args[@]}" >/dev/null; then
			meson compile -C "$dir" >/dev/null || { echo "clang $arch: build failed"; failed=1; }
		else
			echo "clang $arch: setup failed"
			failed=1
		fi
	done
fi

step "libFuzzer targets, 30 s each"
# Their own clang build; skipped where clang is missing.  A crash leaves
# its input as crash-* in the current folder and fails the run.
if command -v clang >/dev/null; then
	fuzz=${build}-fuzz
	[ -d "$fuzz" ] || CC=clang meson setup "$fuzz" -Dfuzz=enabled -Dvm_tests=disabled \
		-Dtests=enabled >/dev/null
	meson compile -C "$fuzz" tests/fuzz/fuzz-heaps-conf tests/fuzz/fuzz-constraints \
		tests/fuzz/fuzz-iond >/dev/null
	tests/fuzz/run-fuzz.sh "$fuzz/tests/fuzz/fuzz-heaps-conf" 30 || failed=1
	# run-fuzz.sh seeds with board files: this one takes its own corpus.
	fuzz_work=$(mktemp -d)
	"$fuzz/tests/fuzz/fuzz-constraints" -max_total_time=30 -timeout=10 -rss_limit_mb=2048 \
		-max_len=8192 -print_final_stats=1 "$fuzz_work" tests/fuzz/corpus-constraints || failed=1
	rm -rf "$fuzz_work"
	# iond's requests, replies and policy files, from their own seeds.
	fuzz_work=$(mktemp -d)
	"$fuzz/tests/fuzz/fuzz-iond" -max_total_time=30 -timeout=10 -rss_limit_mb=2048 \
		-max_len=70000 -print_final_stats=1 "$fuzz_work" tests/fuzz/corpus-iond || failed=1
	rm -rf "$fuzz_work"
else
	echo "clang not found: the fuzzers are not run"
fi

if [ "${LIBION_SKIP_VM:-0}" != 1 ]; then
	step "test kernels (built once, then cached)"
	tests/vm/build-kernel.sh 6.1
	tests/vm/build-kernel.sh 5.10
	[ "$cross" = 0 ] || tests/vm/build-kernel.sh 6.1-arm64
	step "VM suite: Linux 6.1 and 5.10 under QEMU"
	mtest "$build" --suite vm || failed=1
	if [ "$cross" = 1 ]; then
		step "VM suite: Linux 6.1 on arm64 (QEMU virt, device tree, SMMUv3)"
		mtest "${build}-aarch64" --suite vm || failed=1
	fi
fi

step "summary"
python3 - "${logs[@]}" <<'PY'
import json, sys
passed = failed = skipped = 0
for path in sys.argv[1:]:
    for line in open(path):
        r = json.loads(line)
        if r["result"] in ("OK", "EXPECTEDFAIL"):
            passed += 1
        elif r["result"] == "SKIP":
            skipped += 1
        else:
            failed += 1
            print("failed:", r["name"], r["result"])
print(f"{passed} passed, {failed} failed, {skipped} skipped")
PY
exit $failed
