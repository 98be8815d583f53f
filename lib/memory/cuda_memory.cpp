// Pinned and device memory through the CUDA runtime; compiled only in CUDA builds.
#include <cuda_runtime.h>
#include <fmt/format.h>

#include "fabricbench/error.hpp"
#include "fabricbench/memory/buffer.hpp"

namespace fabricbench::memory {
namespace {

void check_cuda(cudaError_t rc, const char* what, std::size_t bytes) {
  if (rc != cudaSuccess)
    throw Error::runtime(fmt::format("{} of {} bytes failed: {}", what, bytes, cudaGetErrorString(rc)));
}

void* pinned_allocate(std::size_t bytes) {
  void* p = nullptr;
  check_cuda(cudaMallocHost(&p, bytes == 0 ? 1 : bytes), "cudaMallocHost", bytes);
  return p;
}
void pinned_release(void* p) noexcept { cudaFreeHost(p); }
void* device_allocate(std::size_t bytes) {
  void* p = nullptr;
  check_cuda(cudaMalloc(&p, bytes == 0 ? 1 : bytes), "cudaMalloc", bytes);
  return p;
}
void device_release(void* p) noexcept { cudaFree(p); }
void copy(void* dst, const void* src, std::size_t bytes) {
  check_cuda(cudaMemcpy(dst, src, bytes, cudaMemcpyDefault), "cudaMemcpy", bytes);
}

const MemoryBackend pinned_backend{MemoryKind::pinned, pinned_allocate, pinned_release, copy, copy};
const MemoryBackend device_backend{MemoryKind::device, device_allocate, device_release, copy, copy};

}  // namespace

std::string cuda_unavailable_reason() {
  int count = 0;
  const cudaError_t rc = cudaGetDeviceCount(&count);
  if (rc != cudaSuccess) return fmt::format("no usable CUDA device ({})", cudaGetErrorString(rc));
  if (count == 0) return "no CUDA device is visible";
  return {};
}

const MemoryBackend* cuda_backend(MemoryKind kind) {
  if (!cuda_unavailable_reason().empty()) return nullptr;
  return kind == MemoryKind::pinned ? &pinned_backend : kind == MemoryKind::device ? &device_backend : nullptr;
}

}  // namespace fabricbench::memory
