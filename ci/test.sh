#!/usr/bin/env bash
# The README's test command: install (apt, when root), build with CUDA auto-detected, and again with CUDA and
# libibverbs off under AddressSanitizer and UndefinedBehaviorSanitizer (every target: the CUDA-off path compiled and
# its unit tests run), then run every test but the GPU ones, one at a time: with FABRICBENCH_TEST_JOBS=4 the MPI
# launches and analysis tests took 4 min instead of ~7, but tests that compare figures measured in turn failed under
# that load (mpi.test_sweep's late receiver, mpi.test_side_channel's flood), so CI keeps one at a time. Build trees: build/ and build-minimal/.
set -euo pipefail
cd "$(dirname "$0")/.."
ci/install-deps.sh
. ci/env.sh
jobs=${FABRICBENCH_JOBS:-2}
tests=${FABRICBENCH_TEST_JOBS:-1}  # 4 ran twice as fast here, but figures compared under load failed
stamp() { echo "== $1 ($(date -u +%H:%M:%S), $((SECONDS / 60)) min $((SECONDS % 60)) s in) =="; }

stamp "build (CUDA auto)"
cmake --preset default >/dev/null
cmake --build --preset default -j "$jobs"
stamp "build (CUDA off, libibverbs off, ASan + UBSan)"
cmake --preset minimal >/dev/null
cmake --build --preset minimal -j "$jobs"

# The unit tests one at a time (seconds in all): cases of one fixture may share a temporary file.
stamp "tests: CUDA-off, libibverbs-off build under ASan + UBSan, unit"
ASAN_OPTIONS=${ASAN_OPTIONS:-abort_on_error=1} UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1} \
  ctest --test-dir build-minimal -L unit --output-on-failure
stamp "tests: unit"
ctest --test-dir build -L unit --output-on-failure
stamp "tests: all but the unit and GPU labels (ci/gpu-test.sh runs the GPU ones), $tests at a time"
ctest --test-dir build -LE "gpu|unit" -j "$tests" --output-on-failure
stamp "done"
