#!/usr/bin/env bash
# The README's test command: install (apt, when root), build with CUDA auto-detected and with CUDA off, and run
# every test (unit, MPI launches, analysis); a third build without CUDA and libibverbs, with AddressSanitizer and
# UndefinedBehaviorSanitizer, runs the unit tests (the bad-file corpus among them). Build trees: build/, build-cpu/
# and build-minimal/.
set -euo pipefail
cd "$(dirname "$0")/.."
ci/install-deps.sh
. ci/env.sh
jobs=${FABRICBENCH_JOBS:-2}

echo "== build (CUDA auto) =="
cmake --preset default >/dev/null
cmake --build --preset default -j "$jobs"
echo "== build (CUDA off) =="
cmake --preset cpu >/dev/null
cmake --build --preset cpu -j "$jobs"

echo "== build (CUDA off, libibverbs off, ASan + UBSan) =="
cmake --preset minimal >/dev/null
cmake --build --preset minimal -j "$jobs" --target fabricbench_unit_tests

echo "== tests: CUDA-off build, unit =="
ctest --test-dir build-cpu -L unit --output-on-failure
echo "== tests: CUDA-off, libibverbs-off build under ASan + UBSan, unit =="
ASAN_OPTIONS=${ASAN_OPTIONS:-abort_on_error=1} UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1} \
  ctest --test-dir build-minimal -L unit --output-on-failure
echo "== tests: all but the GPU label (ci/gpu-test.sh runs those) =="
ctest --test-dir build -LE gpu --output-on-failure
