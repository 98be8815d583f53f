#!/usr/bin/env bash
# The README's test command: install (apt, when root), build with CUDA auto-detected (GCC), and again with CUDA and
# libibverbs off under AddressSanitizer and UndefinedBehaviorSanitizer with clang (every target: the CUDA-off path
# compiled and its unit tests run; two compilers' errors and warnings), then run every test but the GPU ones.
# docs/testing.md ("CI's time") has the measurements behind this order. On two cores the tests are the limit, so the
# CPU is shared by kind of work:
# - both trees are Ninja unity builds (16 files a compile: the shared headers parsed once a batch, half the CPU);
# - the first tree builds and then the tests that launch MPI jobs (labels mpi and install: RUN_SERIAL, one at a time,
#   as under load mpi.test_sweep's late receiver and mpi.test_side_channel's flood failed) run at the normal priority
#   while the sanitizer tree compiles (from the start) and the analysis modules (label analysis: they read files and
#   draw, judging nothing by time; from the end of the first build) run at the idle priority (SCHED_IDLE: only the
#   CPU the others leave, handed back the moment one wakes);
# - the modules that mostly wait (label waits, a ctest entry per test) after the MPI jobs, FABRICBENCH_WAIT_JOBS (4) at
#   a time, beside the idle work only, which from then on includes the Soft-RoCE guest's rig (its verdicts are
#   measured inside the guest);
# - then the other rigs (label rig), one at a time with nothing at the idle priority beside them (their verdicts
#   depend on the cores: see below);
# - the unit tests (deadlines of seconds) at the normal priority: build/'s before the MPI tests, the sanitized tree's
#   after them, FABRICBENCH_TEST_JOBS (2) at a time.
# On a fresh machine apt installs what the build needs first, and the rest (the analysis package's, the rigs' tools)
# while the first tree compiles; then the Soft-RoCE guest's image (rigs.test_verbs_rxe) is made at the idle priority
# (downloads and unpacking). Build trees: build/ and build-minimal/.
set -euo pipefail
cd "$(dirname "$0")/.."
ci/install-deps.sh build
. ci/env.sh
jobs=${FABRICBENCH_JOBS:-2}
tests=${FABRICBENCH_TEST_JOBS:-2}  # what is not RUN_SERIAL (unit cases, analysis modules) runs this many at a time
waits=${FABRICBENCH_WAIT_JOBS:-4}  # the tests that mostly wait (label waits) run this many at a time
stamp() { echo "== $1 ($(date -u +%H:%M:%S), $((SECONDS / 60)) min $((SECONDS % 60)) s in) =="; }

pids=()
# A build or test failing below ends the ones in the background, with their children (ninja, ctest, apt).
trap 'for p in "${pids[@]}"; do pkill -TERM -P "$p"; kill "$p"; done 2>/dev/null || true' EXIT
deps_log=$(mktemp)
deps_rc=$(mktemp)  # the install's exit status, once it ended
(
  rc=0
  ci/install-deps.sh tests || rc=$?
  echo "$rc" >"$deps_rc"
  exit "$rc"
) >"$deps_log" 2>&1 &
deps=$!
pids+=("$deps")
# The guest's image once its tools are there; a failure here is said before the rigs (the rig test builds again).
vm_log=$(mktemp)
(
  until [ -s "$deps_rc" ]; do sleep 1; done
  if [ "$(cat "$deps_rc")" = 0 ] && [ "$(id -u)" -eq 0 ] && command -v mmdebstrap >/dev/null &&
     command -v qemu-system-x86_64 >/dev/null; then
    chrt --idle --pid 0 "$BASHPID"  # needed from the waiting modules on: the CPU the builds leave
    tests/rigs/rxe_vm.sh build
  fi
) >"$vm_log" 2>&1 &
vm_build=$!
pids+=("$vm_build")

# The sanitizer tree from the start, in the background at the idle priority: it takes the CPU the first build and then
# the tests leave (the first build's configuring and linking leave a core idle at times).
stamp "build (CUDA off, libibverbs off, ASan + UBSan, clang) in the background at the idle priority, from now on"
minimal_log=$(mktemp)
(
  chrt --idle --pid 0 "$BASHPID"
  # clang: half GCC's CPU for this tree (126 s against 237, -j2 from scratch, 2026-11-30), and its UBSan checks more
  # (float-to-integer overflow, calls through a pointer of another function type).
  fabricbench_configure minimal -DCMAKE_C_COMPILER=clang -DCMAKE_CXX_COMPILER=clang++
  cmake --build --preset minimal -j "$jobs"
  stamp "build (CUDA off, libibverbs off, ASan + UBSan): done"
) >"$minimal_log" 2>&1 &
minimal=$!
pids+=("$minimal")

stamp "build (CUDA auto)"
# Line tables only (-g1) for the C++ here: the same -O2 code as the preset's -g, a fifth less compile time; stacks and
# backtraces keep their function names and lines.
fabricbench_configure default -DCMAKE_CXX_FLAGS_RELWITHDEBINFO="-O2 -g1 -DNDEBUG"
cmake --build --preset default -j "$jobs"

joined() {  # PID LOG WHAT: waits for a job of the background, prints its log, ends the run if it failed
  local rc=0
  wait "$1" || rc=$?
  cat "$2"
  [ "$rc" -eq 0 ] || { echo "ci/test.sh: $3 failed (above)"; exit 1; }
}
stamp "the tests' packages, waited for"
joined "$deps" "$deps_log" "installing the tests' packages"

stamp "analysis modules (label analysis), $tests at a time, in the background at the idle priority"
analysis_log=$(mktemp)
(
  chrt --idle --pid 0 "$BASHPID"
  ctest --test-dir build -L analysis -j "$tests" --output-on-failure
  stamp "analysis modules (label analysis): done"
) >"$analysis_log" 2>&1 &
analysis=$!
pids+=("$analysis")
stamp "tests: unit"
ctest --test-dir build -L unit -j "$tests" --output-on-failure
stamp "tests: MPI jobs (labels mpi, install), one at a time"
ctest --test-dir build -L "mpi|install" -LE "gpu|waits|rig" --output-on-failure

# The modules that mostly wait, $waits tests at a time (each under a tenth of a core; 70 s against 255 s one after
# the other), beside nothing but the idle work, at nice -10 where root may: their fake NCCL jobs'
# network steps are 50 us sleeps and their slow rank's turns are 50 ms, which the MPI jobs beside them stretched
# (clean-clone runs of 2026-11-29 with them beside the MPI jobs: a slow link placed on its sender's or receiver's
# network, a late rank named 10 s in and let go at once; at nice -10 beside them too). Their results are said at the end.
# Beside them, also at the idle priority, the Soft-RoCE guest's rig (rigs.test_verbs_rxe, 2.5 min): what it judges is
# measured inside the guest, whose ranks yield to the guest's own scheduler; on this side QEMU's threads only take the
# CPU the waiting modules leave (about 1.5 cores), and hand it back the moment one of theirs wakes.
wait "$vm_build" || { echo "rxe_vm.sh build failed (rigs.test_verbs_rxe builds again and says why):"; tail -5 "$vm_log"; }
stamp "the Soft-RoCE guest's rig (rigs.test_verbs_rxe) in the background at the idle priority"
guest_log=$(mktemp)
(
  chrt --idle --pid 0 "$BASHPID"
  ctest --test-dir build -R '^py[.]rigs[.]test_verbs_rxe$' -LE gpu --output-on-failure
) >"$guest_log" 2>&1 &
guest=$!
pids+=("$guest")
stamp "tests that mostly wait (label waits), beside the idle work only"
waits_log=$(mktemp)
waits_nice=()
[ "$(id -u)" -eq 0 ] && waits_nice=(nice -n -10)
waits_rc=0
"${waits_nice[@]}" ctest --test-dir build -L waits -j "$waits" --output-on-failure >"$waits_log" 2>&1 || waits_rc=$?

stamp "the sanitizer build and the analysis modules, waited for"
joined "$minimal" "$minimal_log" "the sanitizer build"
joined "$analysis" "$analysis_log" "an analysis module"
stamp "the Soft-RoCE guest's rig, waited for"
log=$(mktemp)
joined "$guest" "$guest_log" "the Soft-RoCE guest's rig"
cp "$guest_log" "$log"
# The other rigs judge speed on two shared cores: nothing at the idle priority beside them. Ranks that poll with
# mpi_yield_when_idle hand the core to any runnable task at each yield; with the idle work beside, three clean-clone
# runs of four lost a verdict (a slowed node "too noisy to judge" or not named, a NIC and a node "too noisy").
stamp "tests: rigs (label rig), one at a time, alone"
ctest --test-dir build -L rig -LE gpu -E '^py[.]rigs[.]test_verbs_rxe$' --output-on-failure | tee -a "$log"
# Here the GoogleTest cases run in $tests shards of one process each (GTEST_TOTAL_SHARDS): 34 s against 100 s for a
# process per case (a sanitized process takes 0.3 s to start), and every case beside the others in one process, where
# build/'s run above has each alone. Beside them at nice 10 (in the CPU the shards leave as the first ends) the unit
# label's sanitized simulator; not its style checks, which read the sources, not a tree (build/'s unit run had them).
# One after the other these took 35 s, a core idle for 13 of them (2026-11-30).
stamp "tests: CUDA-off, libibverbs-off build under ASan + UBSan, unit"
export ASAN_OPTIONS=${ASAN_OPTIONS:-abort_on_error=1} UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}
sim_log=$(mktemp)
nice -n 10 ctest --test-dir build-minimal -L script -E '^style[.]' --output-on-failure >"$sim_log" 2>&1 &
sim=$!
pids+=("$sim")
shards=()
for ((i = 0; i < tests; i++)); do
  shard_log=$(mktemp)
  GTEST_TOTAL_SHARDS=$tests GTEST_SHARD_INDEX=$i build-minimal/tests/fabricbench_unit_tests --gtest_brief=1 \
    >"$shard_log" 2>&1 &
  shards+=("$!:$shard_log")
done
for s in "${shards[@]}"; do
  if wait "${s%%:*}"; then tail -n 1 "${s#*:}"; else cat "${s#*:}"; echo "ci/test.sh: unit tests under the sanitizers failed (above)"; exit 1; fi
done
joined "$sim" "$sim_log" "the sanitized simulator's check"

stamp "tests that mostly wait (label waits), their results"
cat "$waits_log"
[ "$waits_rc" -eq 0 ] || { echo "ci/test.sh: tests of the label waits failed (above)"; exit 1; }
# Every test is in one of the runs above: a test of no label would run nowhere.
unlabelled=$(ctest --test-dir build -N -LE "unit|mpi|rig|install|analysis|waits|gpu" | sed -n 's/^ *Test *#[0-9]*: //p')
[ -z "$unlabelled" ] || { echo "ci/test.sh: tests run by none of the steps above: $unlabelled"; exit 1; }
# A Python test module whose every test skipped is reported as skipped (tests/run_module.py). Run as root, with the
# packages ci/install-deps.sh installs, nothing of the rigs may skip: that would be a green run without their coverage.
if [ "$(id -u)" -eq 0 ] && grep -E "py\.rigs\..*\*\*\*Skipped" "$log"; then
  echo "ci/test.sh: rig tests were skipped though run as root (above): their tools or rights are missing"
  exit 1
fi
stamp "done"
