// What a pair communicator costs made from nothing (ncclGetUniqueId, its MPI_Bcast, ncclCommInitRank: fabric-sweep
// --nccl-comms init) against split from a parent over every rank (ncclCommSplit with the parent's splitShare 0 or 1:
// --nccl-comms split with and without --timeout), without the harness. One rank per GPU; ranks 2i and 2i+1 form a
// pair (a single rank: one-rank "pairs", all that one GPU allows). The ways are interleaved, K times each; every
// time is the slowest rank's; the first all_reduce after the communicator is timed with it (NCCL connects lazily).
//   [mpirun -np N] nccl_split_cost [K=10]
// Prints (rank 0): the parents' creation once, then per way the median, min and max of create and create + first
// all_reduce, in ms. docs/fabric-sweep.md ("Communicator cost") has what one H100 showed.
#include <cuda_runtime.h>
#include <mpi.h>
#include <nccl.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <vector>

namespace {

void check(bool ok, const char* what) {
  if (ok) return;
  std::fprintf(stderr, "nccl_split_cost: %s failed\n", what);
  MPI_Abort(MPI_COMM_WORLD, 3);
}
void nccl(ncclResult_t rc, const char* what) {
  if (rc != ncclSuccess) std::fprintf(stderr, "nccl_split_cost: %s: %s\n", what, ncclGetErrorString(rc));
  check(rc == ncclSuccess, what);
}

double now_s() { return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count(); }
double slowest(double mine) {
  double out = 0;
  MPI_Allreduce(&mine, &out, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
  return out;
}

ncclComm_t init_over(MPI_Comm comm, int split_share) {
  int rank = 0, size = 0;
  MPI_Comm_rank(comm, &rank);
  MPI_Comm_size(comm, &size);
  ncclUniqueId id{};
  if (rank == 0) nccl(ncclGetUniqueId(&id), "ncclGetUniqueId");
  MPI_Bcast(&id, sizeof id, MPI_BYTE, 0, comm);
  ncclComm_t out = nullptr;
  if (split_share < 0) {
    nccl(ncclCommInitRank(&out, size, id, rank), "ncclCommInitRank");
  } else {
    ncclConfig_t config = NCCL_CONFIG_INITIALIZER;
    config.splitShare = split_share;
    nccl(ncclCommInitRankConfig(&out, size, id, rank, &config), "ncclCommInitRankConfig");
  }
  return out;
}

struct Way {
  const char* name;
  ncclComm_t parent;  // null: ncclCommInitRank over the pair
  std::vector<double> create_ms, first_op_ms;
};

void print(const char* what, std::vector<double> ms) {
  std::sort(ms.begin(), ms.end());
  std::printf("  %-22s median %8.2f  min %8.2f  max %8.2f\n", what, ms[ms.size() / 2], ms.front(), ms.back());
}

}  // namespace

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int rank = 0, size = 0, gpus = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  const int k = argc > 1 ? std::max(1, std::atoi(argv[1])) : 10;
  check(cudaGetDeviceCount(&gpus) == cudaSuccess && gpus > 0, "cudaGetDeviceCount");
  check(cudaSetDevice(rank % gpus) == cudaSuccess, "cudaSetDevice");
  cudaStream_t stream = nullptr;
  check(cudaStreamCreate(&stream) == cudaSuccess, "cudaStreamCreate");
  float* one = nullptr;
  check(cudaMalloc(&one, sizeof(float)) == cudaSuccess, "cudaMalloc");
  const int color = rank / 2;
  MPI_Comm pair = MPI_COMM_NULL;
  MPI_Comm_split(MPI_COMM_WORLD, color, rank, &pair);

  std::vector<Way> ways{{"init (per pair)", nullptr, {}, {}},
                        {"split, splitShare 0", nullptr, {}, {}},
                        {"split, splitShare 1", nullptr, {}, {}}};
  for (int share = 0; share < 2; ++share) {
    MPI_Barrier(MPI_COMM_WORLD);
    const double t0 = now_s();
    ways[1 + share].parent = init_over(MPI_COMM_WORLD, share);
    const double made = slowest(now_s() - t0);
    if (rank == 0) std::printf("parent over %d ranks, splitShare %d: created in %.2f ms\n", size, share, made * 1e3);
  }
  for (int i = 0; i < k; ++i)
    for (auto& way : ways) {
      MPI_Barrier(MPI_COMM_WORLD);
      const double t0 = now_s();
      ncclComm_t comm = nullptr;
      if (way.parent) {
        ncclConfig_t config = NCCL_CONFIG_INITIALIZER;
        config.splitShare = 0;
        nccl(ncclCommSplit(way.parent, color, rank, &comm, &config), "ncclCommSplit");
      } else {
        comm = init_over(pair, -1);
      }
      const double t1 = now_s();
      nccl(ncclAllReduce(one, one, 1, ncclFloat32, ncclSum, comm, stream), "ncclAllReduce");
      check(cudaStreamSynchronize(stream) == cudaSuccess, "cudaStreamSynchronize");
      const double t2 = now_s();
      way.create_ms.push_back(slowest(t1 - t0) * 1e3);
      way.first_op_ms.push_back(slowest(t2 - t0) * 1e3);
      nccl(ncclCommDestroy(comm), "ncclCommDestroy");
    }
  if (rank == 0) {
    int version = 0;
    ncclGetVersion(&version);
    std::printf("NCCL %d, %d rank(s) on %d GPU(s), pairs of ranks 2i and 2i+1, %d times each way (ms, slowest rank):\n",
                version, size, gpus, k);
    for (const auto& way : ways) {
      std::printf("%s\n", way.name);
      print("create", way.create_ms);
      print("create + first op", way.first_op_ms);
    }
  }
  for (auto& way : ways)
    if (way.parent) ncclCommDestroy(way.parent);
  cudaFree(one);
  cudaStreamDestroy(stream);
  MPI_Comm_free(&pair);
  MPI_Finalize();
  return 0;
}
