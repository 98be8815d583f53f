// One collective's NCCL call: its arguments as the NCCL back end passes them, and the call of each operation of
// collectives() (nccl_collectives.cpp, compiled where NCCL is found).
#pragma once
#include <cuda_runtime.h>
#include <nccl.h>

#include <cstddef>

#include "fabricbench/ops/collective.hpp"

namespace fabricbench::ops {

struct NcclCall {
  const void* send;
  void* recv;
  std::size_t count;  // CollCounts::param
  ncclDataType_t type;
  std::size_t type_size;
  ncclRedOp_t op;
  int root;
  int rank, nranks;
  ncclComm_t comm;
  cudaStream_t stream;
};

using NcclLaunch = void (*)(const NcclCall& call);
// The NCCL call of the collective of `kind` (its table is checked against CollKind at compile time).
NcclLaunch nccl_launch(CollKind kind);

}  // namespace fabricbench::ops
