// GPU binding (one GPU per rank, chosen by local rank) and whether the MPI library can take device pointers.
#pragma once

namespace fabricbench::runtime {

// Makes GPU (local_rank % visible GPUs) current for this process and returns its index. Throws Error::usage when
// this build has no CUDA or no GPU is visible.
int bind_gpu(int local_rank);

// GPUs visible to this process (0 without CUDA or without a GPU).
int visible_gpus();

// Open MPI's MPIX_Query_cuda_support() where available; false otherwise.
bool mpi_is_cuda_aware();

}  // namespace fabricbench::runtime
