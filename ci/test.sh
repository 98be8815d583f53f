#!/usr/bin/env bash
# The README's test command: install (apt, when root), build with CUDA auto-detected and with CUDA off, and run
# every test (unit, MPI launches, analysis). Build trees: build/ and build-cpu/.
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

echo "== tests: CUDA-off build, unit =="
ctest --test-dir build-cpu -L unit --output-on-failure
echo "== tests: all but the GPU label (ci/gpu-test.sh runs those) =="
ctest --test-dir build -LE gpu --output-on-failure
