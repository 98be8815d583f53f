#include "fabricbench/runtime/gpu.hpp"

#include <fmt/format.h>
#include <mpi.h>
#if __has_include(<mpi-ext.h>)
#include <mpi-ext.h>
#endif
#ifdef FABRICBENCH_HAVE_CUDA
#include <cuda_runtime.h>
#endif

#include "fabricbench/error.hpp"

namespace fabricbench::runtime {

int bind_gpu(int local_rank) {
#ifdef FABRICBENCH_HAVE_CUDA
  int count = 0;
  const cudaError_t rc = cudaGetDeviceCount(&count);
  if (rc != cudaSuccess || count == 0)
    throw Error::usage(fmt::format("no GPU is visible to this rank ({}); GPU options need one",
                                   rc != cudaSuccess ? cudaGetErrorString(rc) : "0 devices"));
  const int gpu = local_rank % count;
  if (const cudaError_t set = cudaSetDevice(gpu); set != cudaSuccess)
    throw Error::runtime(fmt::format("cudaSetDevice({}) failed: {}", gpu, cudaGetErrorString(set)));
  return gpu;
#else
  (void)local_rank;
  throw Error::usage("this build has no CUDA (configured with FABRICBENCH_CUDA=OFF or without a CUDA Toolkit)");
#endif
}

int visible_gpus() {
#ifdef FABRICBENCH_HAVE_CUDA
  int count = 0;
  return cudaGetDeviceCount(&count) == cudaSuccess ? count : 0;
#else
  return 0;
#endif
}

bool mpi_is_cuda_aware() {
#if defined(MPIX_CUDA_AWARE_SUPPORT) && MPIX_CUDA_AWARE_SUPPORT
  return MPIX_Query_cuda_support() == 1;
#else
  return false;
#endif
}

}  // namespace fabricbench::runtime
