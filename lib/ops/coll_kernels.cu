#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include "coll_kernels.hpp"

namespace fabricbench::ops {
namespace {

template <typename T>
__device__ T from_real(double v) {
  return static_cast<T>(v);
}
template <>
__device__ __half from_real<__half>(double v) {
  return __double2half(v);
}
template <>
__device__ __nv_bfloat16 from_real<__nv_bfloat16>(double v) {
  return __double2bfloat16(v);
}
template <typename T>
__device__ double to_real(T v) {
  return static_cast<double>(v);
}
template <>
__device__ double to_real<__half>(__half v) {
  return static_cast<double>(__half2float(v));
}
template <>
__device__ double to_real<__nv_bfloat16>(__nv_bfloat16 v) {
  return static_cast<double>(__bfloat162float(v));
}

template <typename T>
__device__ T from_input(std::uint64_t v) {
  if constexpr (std::is_integral_v<T>) return static_cast<T>(v);
  else return from_real<T>(static_cast<double>(v));
}

template <typename T>
__device__ double epsilon() {
  if constexpr (std::is_same_v<T, __half>) return 9.765625e-4;
  else if constexpr (std::is_same_v<T, __nv_bfloat16>) return 7.8125e-3;
  else if constexpr (std::is_same_v<T, float>) return 1.1920929e-7;
  else return 2.220446049250313e-16;
}

template <typename T>
__device__ bool matches(T got, const Expected& e, RedOp op, int nranks) {
  if constexpr (std::is_integral_v<T>) {
    return got == static_cast<T>(e.bits);
  } else {
    if (op == RedOp::avg) return fabs(to_real(got) - e.real) <= 8.0 * nranks * epsilon<T>();
    const double want = to_real(from_real<T>(e.real));  // the expected value as the type holds it
    const double have = to_real(got);
    return have == want;  // NaN (poison) never matches; inf matches inf
  }
}

template <typename T>
__global__ void fill_kernel(T* p, std::uint64_t n, ElementRule rule, int source) {
  for (std::uint64_t i = blockIdx.x * static_cast<std::uint64_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<std::uint64_t>(gridDim.x) * blockDim.x)
    p[i] = from_input<T>(rule.input(source, i));
}

template <typename T>
__global__ void check_kernel(const T* p, std::uint64_t n, ElementRule rule, unsigned long long* wrong) {
  unsigned long long local = 0;
  Expected e{};
  for (std::uint64_t j = blockIdx.x * static_cast<std::uint64_t>(blockDim.x) + threadIdx.x; j < n;
       j += static_cast<std::uint64_t>(gridDim.x) * blockDim.x)
    if (rule.expected(j, &e) && !matches(p[j], e, rule.redop, rule.nranks)) ++local;
  if (local) atomicAdd(wrong, local);
}

template <typename F>
void with_device_type(DataType t, F&& f) {
  switch (t) {
    case DataType::int8: f(std::int8_t{}); break;
    case DataType::uint8: f(std::uint8_t{}); break;
    case DataType::int32: f(std::int32_t{}); break;
    case DataType::uint32: f(std::uint32_t{}); break;
    case DataType::int64: f(std::int64_t{}); break;
    case DataType::uint64: f(std::uint64_t{}); break;
    case DataType::float16: f(__half{}); break;
    case DataType::float32: f(float{}); break;
    case DataType::float64: f(double{}); break;
    case DataType::bfloat16: f(__nv_bfloat16{}); break;
  }
}

constexpr int threads = 256;
unsigned blocks_for(std::uint64_t n) {
  const std::uint64_t b = (n + threads - 1) / threads;
  return static_cast<unsigned>(b < 4096 ? (b ? b : 1) : 4096);
}

}  // namespace

void launch_fill(void* buffer, DataType t, std::uint64_t count, const ElementRule& rule, int source_rank,
                 cudaStream_t stream) {
  with_device_type(t, [&](auto zero) {
    using T = decltype(zero);
    fill_kernel<T><<<blocks_for(count), threads, 0, stream>>>(static_cast<T*>(buffer), count, rule, source_rank);
  });
}

void launch_check(const void* output, DataType t, std::uint64_t count, const ElementRule& rule,
                  unsigned long long* wrong, cudaStream_t stream) {
  with_device_type(t, [&](auto zero) {
    using T = decltype(zero);
    check_kernel<T><<<blocks_for(count), threads, 0, stream>>>(static_cast<const T*>(output), count, rule, wrong);
  });
}

}  // namespace fabricbench::ops
