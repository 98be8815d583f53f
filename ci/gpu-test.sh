#!/usr/bin/env bash
# GPU test script (self-hosted GPU runner, or the lent GPU machine):
#   ci/gpu-test.sh                 configure the gpu preset (sm_90, CUDA + NCCL), build, ctest -L gpu
#   ci/gpu-test.sh --prebuilt DIR  run a build carried from elsewhere: an installed prefix (DIR/bin the executables
#                                  and unit tests, DIR/share/fabricbench the shipped files, DIR/lib any libraries
#                                  the machine lacks; see launch/carry-gpu-build.sh)
# NVLink multicast stays off (NCCL_NVLS_ENABLE=0): on shared GPU hosts it can take the GPUs out of service.
set -euo pipefail
cd "$(dirname "$0")/.."
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
[ "$(id -u)" -eq 0 ] && export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
nvidia-smi -L
if [ "${1:-}" = "--prebuilt" ]; then
  dir=$(cd "$2" && pwd)
  export LD_LIBRARY_PATH="$dir/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
  echo "== unit tests (prebuilt) =="
  # The fixtures beside the unit tests where a prefix has them, else the repository's (launch/carry-gpu-build.sh
  # leaves them out).
  [ -d "$dir/bin/fixtures" ] || export FABRICBENCH_FIXTURES="$PWD/tests/fixtures"
  "$dir/bin/fabricbench_unit_tests" --gtest_brief=1
  echo "== GPU tests (prebuilt) =="
  cd tests
  FABRICBENCH_BIN="$dir/bin" PYTHONPATH="../analysis:." python3 -m unittest -v gpu.test_nccl gpu.test_doctor gpu.test_expected gpu.test_p2p_nccl gpu.test_nccl_ras gpu.test_slow_rank gpu.test_sweep_duplex
else
  . ci/env.sh
  cmake --preset gpu
  cmake --build --preset gpu -j "${FABRICBENCH_JOBS:-$(nproc)}"
  ctest --test-dir build-gpu -L "gpu|unit" --output-on-failure
fi
