// The GPU-related facts of one rank: from the CUDA runtime and NCCL when built with them, empty otherwise.
#include <fmt/format.h>

#include "fabricbench/env/environment.hpp"

#ifdef FABRICBENCH_HAVE_CUDA
#include <cuda_runtime.h>
#endif
#ifdef FABRICBENCH_HAVE_NCCL
#include <nccl.h>
#endif

namespace fabricbench::env {

std::map<std::string, std::string> describe_rank(int gpu) {
  std::map<std::string, std::string> facts{{"gpu", std::to_string(gpu)}};
#ifdef FABRICBENCH_HAVE_CUDA
  int runtime = 0, driver = 0;
  if (cudaRuntimeGetVersion(&runtime) == cudaSuccess)
    facts["cuda"] = fmt::format("{}.{}", runtime / 1000, runtime % 1000 / 10);
  if (cudaDriverGetVersion(&driver) == cudaSuccess && driver > 0)
    facts["cuda"] += fmt::format(" (driver API {}.{})", driver / 1000, driver % 1000 / 10);
  cudaDeviceProp prop{};
  if (gpu >= 0 && cudaGetDeviceProperties(&prop, gpu) == cudaSuccess) {
    facts["gpu_name"] = prop.name;
    std::string uuid = "GPU-";
    for (int i = 0; i < 16; ++i) uuid += fmt::format("{:02x}", static_cast<unsigned char>(prop.uuid.bytes[i]));
    facts["gpu_uuid"] = uuid;
    facts["pci_bus_id"] = fmt::format("{:04x}:{:02x}:{:02x}.0", prop.pciDomainID, prop.pciBusID, prop.pciDeviceID);
  }
#endif
#ifdef FABRICBENCH_HAVE_NCCL
  int nccl = 0;
  if (ncclGetVersion(&nccl) == ncclSuccess)
    facts["nccl"] = fmt::format("{}.{}.{}", nccl / 10000, nccl % 10000 / 100, nccl % 100);
#endif
  return facts;
}

}  // namespace fabricbench::env
