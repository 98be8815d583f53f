#!/usr/bin/env bash
# The README's test command: install (apt, when root), build with CUDA auto-detected, and again with CUDA and
# libibverbs off under AddressSanitizer and UndefinedBehaviorSanitizer (every target: the CUDA-off path compiled and
# its unit tests run), then run every test but the GPU ones. The Soft-RoCE guest's image (rigs.test_verbs_rxe) is made
# while the trees compile (downloads and unpacking, not the compiler's work). Tests that launch MPI jobs or compare
# figures (labels mpi and rig, but the analysis modules) run alone (RUN_SERIAL: under load mpi.test_sweep's late
# receiver and mpi.test_side_channel's flood failed); the analysis modules run FABRICBENCH_TEST_JOBS (2) at a time
# beside each other; the modules that mostly wait (label waits) run in a second ctest from the end of the first build
# on, beside everything after it. Build trees: build/ and build-minimal/.
set -euo pipefail
cd "$(dirname "$0")/.."
ci/install-deps.sh
. ci/env.sh
jobs=${FABRICBENCH_JOBS:-2}
tests=${FABRICBENCH_TEST_JOBS:-2}  # what is not RUN_SERIAL (the analysis modules) runs this many at a time
stamp() { echo "== $1 ($(date -u +%H:%M:%S), $((SECONDS / 60)) min $((SECONDS % 60)) s in) =="; }

vm_build=""
if [ "$(id -u)" -eq 0 ] && command -v mmdebstrap >/dev/null && command -v qemu-system-x86_64 >/dev/null; then
  vm_log=$(mktemp)
  tests/rigs/rxe_vm.sh build >"$vm_log" 2>&1 &
  vm_build=$!
fi

stamp "build (CUDA auto)"
# Line tables only (-g1) for the C++ here: the same -O2 code as the preset's -g, a fifth less compile time; stacks and
# backtraces keep their function names and lines.
cmake --preset default -DCMAKE_CXX_FLAGS_RELWITHDEBINFO="-O2 -g1 -DNDEBUG" >/dev/null
cmake --build --preset default -j "$jobs"
# The tests that mostly wait (label waits: well under a tenth of a core each, judging nothing by speed finer than
# seconds) run from here on in a ctest of their own, beside the sanitizer build and the other tests.
stamp "tests that mostly wait (label waits), in the background"
waits_log=$(mktemp)
ctest --test-dir build -L waits --output-on-failure >"$waits_log" 2>&1 &
waits=$!
trap 'kill "$waits" 2>/dev/null || true' EXIT  # a build or test failing below ends it too
stamp "build (CUDA off, libibverbs off, ASan + UBSan)"
cmake --preset minimal >/dev/null
cmake --build --preset minimal -j "$jobs"

# The unit tests $jobs at a time: each case is its own process, and every temporary file is named per process.
stamp "tests: CUDA-off, libibverbs-off build under ASan + UBSan, unit"
ASAN_OPTIONS=${ASAN_OPTIONS:-abort_on_error=1} UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1} \
  ctest --test-dir build-minimal -L unit -j "$jobs" --output-on-failure
stamp "tests: unit"
ctest --test-dir build -L unit -j "$jobs" --output-on-failure
if [ -n "$vm_build" ]; then
  wait "$vm_build" || { echo "rxe_vm.sh build failed (rigs.test_verbs_rxe builds again and says why):"; tail -5 "$vm_log"; }
fi
stamp "tests: all but the unit, GPU and waits labels (ci/gpu-test.sh runs the GPU ones), the analysis modules $tests at a time"
log=$(mktemp)
ctest --test-dir build -LE "gpu|unit|waits" -j "$tests" --output-on-failure | tee "$log"
waits_rc=0
wait "$waits" || waits_rc=$?
stamp "tests that mostly wait (label waits), ended"
cat "$waits_log"
[ "$waits_rc" -eq 0 ] || { echo "ci/test.sh: tests of the label waits failed (above)"; exit 1; }
# A Python test module whose every test skipped is reported as skipped (tests/run_module.py). Run as root, with the
# packages ci/install-deps.sh installs, nothing of the rigs may skip: that would be a green run without their coverage.
if [ "$(id -u)" -eq 0 ] && grep -E "py\.rigs\..*\*\*\*Skipped" "$log"; then
  echo "ci/test.sh: rig tests were skipped though run as root (above): their tools or rights are missing"
  exit 1
fi
stamp "done"
