// A same-session yardstick for fabric-coll, written without the harness, in the two layouts nccl-tests runs in:
//  - one process drives every GPU (nccl-tests' single-process mode, the layout of the reference figures in
//    configs/baselines/): each iteration is a group of one call per GPU issued by one thread;
//  - under mpirun, one process per GPU (nccl-tests with `mpirun -np N ... -g 1`, fabric-coll's layout): the unique
//    id goes over MPI and each process issues one call per iteration.
// Timing as nccl-tests: `warmup` untimed iterations, host clock around `iters` back-to-back iterations, then the
// streams are synchronised; under MPI the per-process times are averaged (nccl-tests -a 1). No validation.
// GRAPH=G (one process per GPU, or one process with one GPU): the `iters` iterations are captured in a CUDA graph,
// launched once untimed (that launch uploads it; GRAPH_UPLOAD_TIMED=1 times it too, as nccl-tests -G does) and then G
// times, timed.
// Knobs for telling a harness's cost from NCCL's (docs/measurements/perf-nccl-one-gpu.md): ALLOC=nccl allocates the
// buffers with ncclMemAlloc as nccl-tests 2.19 does (default cudaMalloc, as fabric-coll); ROTATE=1 moves both buffers
// on by one message every iteration as both tools do (default: the same region each time); NOGROUP=1 issues a process's
// one call without ncclGroupStart/End around it, as nccl-tests does with one GPU per process.
//   [mpirun -np N] nccl_peer OP MIN_BYTES MAX_BYTES [ITERS=20] [WARMUP=5] [FACTOR=2]
//   OP: all_reduce all_gather reduce_scatter alltoall sendrecv, or a comma list of them (run in that order); memcpy
//   (one cudaMemcpyAsync of the size per GPU, no NCCL call: the floor of one rank's out-of-place operation);
//   NGPUS limits the GPUs of the one-process layout.
// Prints (rank 0): op gpus bytes time_us algbw_gbps busbw_gbps layout
#include <cuda_runtime.h>
#include <mpi.h>
#include <nccl.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#define CHECK_CUDA(x)                                              \
  do {                                                             \
    cudaError_t e = (x);                                           \
    if (e != cudaSuccess) {                                        \
      std::fprintf(stderr, "%s: %s\n", #x, cudaGetErrorString(e)); \
      std::exit(3);                                                \
    }                                                              \
  } while (0)
#define CHECK_NCCL(x)                                              \
  do {                                                             \
    ncclResult_t r = (x);                                          \
    if (r != ncclSuccess) {                                        \
      std::fprintf(stderr, "%s: %s\n", #x, ncclGetErrorString(r)); \
      std::exit(3);                                                \
    }                                                              \
  } while (0)

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int rank = 0, nprocs = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &nprocs);
  if (argc < 4) {
    if (rank == 0) std::fprintf(stderr, "usage: [mpirun -np N] nccl_peer OP MIN_BYTES MAX_BYTES [ITERS] [WARMUP] [FACTOR]\n");
    MPI_Finalize();
    return 2;
  }
  std::vector<std::string> ops;
  for (std::string list = argv[1]; !list.empty();) {
    const auto comma = list.find(',');
    ops.push_back(list.substr(0, comma));
    list = comma == std::string::npos ? "" : list.substr(comma + 1);
  }
  const size_t min_bytes = std::strtoull(argv[2], nullptr, 10), max_bytes = std::strtoull(argv[3], nullptr, 10);
  const int iters = argc > 4 ? std::atoi(argv[4]) : 20, warmup = argc > 5 ? std::atoi(argv[5]) : 5;
  const size_t factor_bytes = argc > 6 ? std::strtoull(argv[6], nullptr, 10) : 2;
  const bool per_process = nprocs > 1;

  // This process's GPUs (local indices) and their ranks in the NCCL communicator of n ranks.
  int visible = 0;
  CHECK_CUDA(cudaGetDeviceCount(&visible));
  std::vector<int> devs;
  int n = 0;
  std::vector<ncclComm_t> comms;
  if (per_process) {
    MPI_Comm local;
    MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, rank, MPI_INFO_NULL, &local);
    int local_rank = 0;
    MPI_Comm_rank(local, &local_rank);
    MPI_Comm_free(&local);
    devs = {local_rank % visible};
    n = nprocs;
    ncclUniqueId id{};
    if (rank == 0) CHECK_NCCL(ncclGetUniqueId(&id));
    MPI_Bcast(&id, sizeof id, MPI_BYTE, 0, MPI_COMM_WORLD);
    CHECK_CUDA(cudaSetDevice(devs[0]));
    comms.resize(1);
    CHECK_NCCL(ncclCommInitRank(&comms[0], n, id, rank));
  } else {
    n = std::getenv("NGPUS") ? std::atoi(std::getenv("NGPUS")) : visible;
    for (int i = 0; i < n; ++i) devs.push_back(i);
    comms.resize(n);
    CHECK_NCCL(ncclCommInitAll(comms.data(), n, devs.data()));
  }
  const int local_gpus = static_cast<int>(devs.size());
  std::vector<float*> send(local_gpus), recv(local_gpus);
  std::vector<cudaStream_t> streams(local_gpus);
  const bool nccl_alloc = std::getenv("ALLOC") && std::string(std::getenv("ALLOC")) == "nccl";
  const bool rotate = std::getenv("ROTATE") && std::atoi(std::getenv("ROTATE")) != 0;
  const bool nogroup = std::getenv("NOGROUP") && std::atoi(std::getenv("NOGROUP")) != 0 && local_gpus == 1;
  for (int g = 0; g < local_gpus; ++g) {
    CHECK_CUDA(cudaSetDevice(devs[g]));
    if (nccl_alloc) {
      CHECK_NCCL(ncclMemAlloc(reinterpret_cast<void**>(&send[g]), max_bytes));
      CHECK_NCCL(ncclMemAlloc(reinterpret_cast<void**>(&recv[g]), max_bytes));
    } else {
      CHECK_CUDA(cudaMalloc(&send[g], max_bytes));
      CHECK_CUDA(cudaMalloc(&recv[g], max_bytes));
    }
    CHECK_CUDA(cudaMemset(send[g], 0, max_bytes));
    CHECK_CUDA(cudaStreamCreateWithFlags(&streams[g], cudaStreamNonBlocking));
  }
  for (const auto& op : ops) {
    const double factor = op == "all_reduce" ? 2.0 * (n - 1) / n : (op == "sendrecv" ? 1.0 : double(n - 1) / n);
    for (size_t bytes = min_bytes; bytes <= max_bytes; bytes *= factor_bytes) {
      const size_t count = bytes / sizeof(float), per = count / n;
      // g: local GPU index; me: its rank in the communicator.
      const size_t steps = rotate ? max_bytes / bytes : 1;
      size_t launches = 0, shift = 0;  // in floats
      auto one = [&](int g) {
        const int me = per_process ? rank : g;
        float* const s0 = send[g] + shift;
        float* const r0 = recv[g] + shift;
        if (op == "all_reduce")
          CHECK_NCCL(ncclAllReduce(s0, r0, count, ncclFloat, ncclSum, comms[g], streams[g]));
        else if (op == "all_gather")
          CHECK_NCCL(ncclAllGather(s0, r0, per, ncclFloat, comms[g], streams[g]));
        else if (op == "reduce_scatter")
          CHECK_NCCL(ncclReduceScatter(s0, r0, per, ncclFloat, ncclSum, comms[g], streams[g]));
        else if (op == "alltoall") {
          for (int p = 0; p < n; ++p) {
            CHECK_NCCL(ncclSend(s0 + p * per, per, ncclFloat, p, comms[g], streams[g]));
            CHECK_NCCL(ncclRecv(r0 + p * per, per, ncclFloat, p, comms[g], streams[g]));
          }
        } else if (op == "sendrecv") {
          CHECK_NCCL(ncclSend(s0, count, ncclFloat, (me + 1) % n, comms[g], streams[g]));
          CHECK_NCCL(ncclRecv(r0, count, ncclFloat, (me - 1 + n) % n, comms[g], streams[g]));
        } else if (op == "memcpy") {  // no NCCL: what NCCL does for one rank out of place, as a floor
          CHECK_CUDA(cudaMemcpyAsync(r0, s0, bytes, cudaMemcpyDefault, streams[g]));
        } else {
          std::fprintf(stderr, "unknown op %s\n", op.c_str());
          std::exit(2);
        }
      };
      auto iteration = [&] {
        shift = bytes / sizeof(float) * (launches++ % steps);
        if (nogroup) return one(0);
        CHECK_NCCL(ncclGroupStart());
        for (int g = 0; g < local_gpus; ++g) one(g);
        CHECK_NCCL(ncclGroupEnd());
      };
      auto sync = [&] {
        for (int g = 0; g < local_gpus; ++g) CHECK_CUDA(cudaStreamSynchronize(streams[g]));
      };
      for (int i = 0; i < warmup; ++i) iteration();
      sync();
      const int graph = (per_process || local_gpus == 1) && std::getenv("GRAPH") ? std::atoi(std::getenv("GRAPH")) : 0;
      const bool upload_timed = std::getenv("GRAPH_UPLOAD_TIMED") != nullptr;
      cudaGraph_t captured = nullptr;
      cudaGraphExec_t exec = nullptr;
      if (graph > 0) {
        CHECK_CUDA(cudaStreamBeginCapture(streams[0], cudaStreamCaptureModeThreadLocal));
        for (int i = 0; i < iters; ++i) iteration();
        CHECK_CUDA(cudaStreamEndCapture(streams[0], &captured));
        CHECK_CUDA(cudaGraphInstantiate(&exec, captured, 0));
        if (!upload_timed) {
          CHECK_CUDA(cudaGraphLaunch(exec, streams[0]));
          sync();
        }
      }
      MPI_Barrier(MPI_COMM_WORLD);
      const auto t0 = std::chrono::steady_clock::now();
      if (graph > 0)
        for (int l = 0; l < graph; ++l) CHECK_CUDA(cudaGraphLaunch(exec, streams[0]));
      else
        for (int i = 0; i < iters; ++i) iteration();
      sync();
      double us = std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - t0).count() /
                  (iters * double(graph > 0 ? graph : 1));
      if (graph > 0) {
        CHECK_CUDA(cudaGraphExecDestroy(exec));
        CHECK_CUDA(cudaGraphDestroy(captured));
      }
      double sum = 0;
      MPI_Allreduce(&us, &sum, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
      us = sum / nprocs;
      const size_t moved =
          (op == "all_gather" || op == "reduce_scatter" || op == "alltoall") ? per * n * sizeof(float) : bytes;
      const double algbw = moved / us / 1e3;
      if (rank == 0) {
        std::printf("%s %d %zu %.3f %.3f %.3f %s\n", op.c_str(), n, moved, us, algbw, algbw * factor,
                    per_process ? "process-per-gpu" : "one-process");
        std::fflush(stdout);
      }
    }
  }
  for (int g = 0; g < local_gpus; ++g) {
    if (nccl_alloc) {
      ncclMemFree(send[g]);
      ncclMemFree(recv[g]);
    } else {
      cudaFree(send[g]);
      cudaFree(recv[g]);
    }
  }
  for (auto c : comms) ncclCommDestroy(c);
  MPI_Finalize();
  return 0;
}
