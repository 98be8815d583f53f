#!/usr/bin/env bash
# The README's test command: install (apt, when root), build with CUDA auto-detected, and again with CUDA and
# libibverbs off under AddressSanitizer and UndefinedBehaviorSanitizer (every target: the CUDA-off path compiled and
# its unit tests run), then run every test but the GPU ones: unit, MPI launches and analysis four at once (on two
# cores: most of them wait on mpirun's start, sockets and timeouts), the rigs (as root) and the timing comparisons
# each alone. Build trees: build/ and build-minimal/.
set -euo pipefail
cd "$(dirname "$0")/.."
ci/install-deps.sh
. ci/env.sh
jobs=${FABRICBENCH_JOBS:-2}
tests=${FABRICBENCH_TEST_JOBS:-4}
stamp() { echo "== $1 ($(date -u +%H:%M:%S), $((SECONDS / 60)) min $((SECONDS % 60)) s in) =="; }

stamp "build (CUDA auto)"
cmake --preset default >/dev/null
cmake --build --preset default -j "$jobs"
stamp "build (CUDA off, libibverbs off, ASan + UBSan)"
cmake --preset minimal >/dev/null
cmake --build --preset minimal -j "$jobs"

stamp "tests: CUDA-off, libibverbs-off build under ASan + UBSan, unit"
ASAN_OPTIONS=${ASAN_OPTIONS:-abort_on_error=1} UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1} \
  ctest --test-dir build-minimal -L unit -j "$jobs" --output-on-failure
stamp "tests: all but the GPU label (ci/gpu-test.sh runs those), $tests at once"
ctest --test-dir build -LE gpu -j "$tests" --output-on-failure
stamp "done"
