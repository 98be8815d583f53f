// Device-side fill and check of collective data (coll_kernels.cu), by the rules of coll_data.hpp.
#pragma once
#include <cuda_runtime.h>

#include <cstdint>

#include "fabricbench/ops/coll_data.hpp"

namespace fabricbench::ops {

// Element i of `buffer` (count elements of type t) = rule.input(source_rank, i).
void launch_fill(void* buffer, DataType t, std::uint64_t count, const ElementRule& rule, int source_rank,
                 cudaStream_t stream);
// Adds to *wrong (device memory) the number of the `count` output elements that differ from rule.expected.
void launch_check(const void* output, DataType t, std::uint64_t count, const ElementRule& rule,
                  unsigned long long* wrong, cudaStream_t stream);

}  // namespace fabricbench::ops
