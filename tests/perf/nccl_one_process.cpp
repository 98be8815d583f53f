// A same-session stand-in for nccl-tests' single-process mode (the setup of the reference figures in
// configs/baselines/): ONE process drives every GPU, each iteration is a group of one call per GPU, timed by the
// host clock around `iters` iterations after `warmup`, then every stream is synchronised. No validation: timing only.
//   nccl_one_process OP MIN_BYTES MAX_BYTES [ITERS=20] [WARMUP=5]     OP: all_reduce all_gather reduce_scatter alltoall sendrecv
// Prints: op gpus bytes time_us algbw_gbps busbw_gbps (nccl-tests' definitions).
#include <cuda_runtime.h>
#include <nccl.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#define CHECK_CUDA(x) do { cudaError_t e = (x); if (e != cudaSuccess) { std::fprintf(stderr, "%s: %s\n", #x, cudaGetErrorString(e)); std::exit(3); } } while (0)
#define CHECK_NCCL(x) do { ncclResult_t r = (x); if (r != ncclSuccess) { std::fprintf(stderr, "%s: %s\n", #x, ncclGetErrorString(r)); std::exit(3); } } while (0)

int main(int argc, char** argv) {
  if (argc < 4) {
    std::fprintf(stderr, "usage: nccl_one_process OP MIN_BYTES MAX_BYTES [ITERS] [WARMUP]\n");
    return 2;
  }
  const std::string op = argv[1];
  const size_t min_bytes = std::strtoull(argv[2], nullptr, 10), max_bytes = std::strtoull(argv[3], nullptr, 10);
  const int iters = argc > 4 ? std::atoi(argv[4]) : 20, warmup = argc > 5 ? std::atoi(argv[5]) : 5;
  int n = 0;
  CHECK_CUDA(cudaGetDeviceCount(&n));
  if (std::getenv("NGPUS")) n = std::atoi(std::getenv("NGPUS"));
  std::vector<int> devs(n);
  for (int i = 0; i < n; ++i) devs[i] = i;
  std::vector<ncclComm_t> comms(n);
  CHECK_NCCL(ncclCommInitAll(comms.data(), n, devs.data()));
  std::vector<float*> send(n), recv(n);
  std::vector<cudaStream_t> streams(n);
  for (int i = 0; i < n; ++i) {
    CHECK_CUDA(cudaSetDevice(i));
    CHECK_CUDA(cudaMalloc(&send[i], max_bytes));
    CHECK_CUDA(cudaMalloc(&recv[i], max_bytes));
    CHECK_CUDA(cudaMemset(send[i], 0, max_bytes));
    CHECK_CUDA(cudaStreamCreateWithFlags(&streams[i], cudaStreamNonBlocking));
  }
  const double factor = op == "all_reduce" ? 2.0 * (n - 1) / n : (op == "sendrecv" ? 1.0 : double(n - 1) / n);
  for (size_t bytes = min_bytes; bytes <= max_bytes; bytes *= 2) {
    const size_t count = bytes / sizeof(float), per = count / n;
    auto one = [&](int g) {
      if (op == "all_reduce") CHECK_NCCL(ncclAllReduce(send[g], recv[g], count, ncclFloat, ncclSum, comms[g], streams[g]));
      else if (op == "all_gather") CHECK_NCCL(ncclAllGather(send[g], recv[g], per, ncclFloat, comms[g], streams[g]));
      else if (op == "reduce_scatter") CHECK_NCCL(ncclReduceScatter(send[g], recv[g], per, ncclFloat, ncclSum, comms[g], streams[g]));
      else if (op == "alltoall") {
        for (int p = 0; p < n; ++p) {
          CHECK_NCCL(ncclSend(send[g] + p * per, per, ncclFloat, p, comms[g], streams[g]));
          CHECK_NCCL(ncclRecv(recv[g] + p * per, per, ncclFloat, p, comms[g], streams[g]));
        }
      } else if (op == "sendrecv") {
        CHECK_NCCL(ncclSend(send[g], count, ncclFloat, (g + 1) % n, comms[g], streams[g]));
        CHECK_NCCL(ncclRecv(recv[g], count, ncclFloat, (g - 1 + n) % n, comms[g], streams[g]));
      } else {
        std::fprintf(stderr, "unknown op %s\n", op.c_str());
        std::exit(2);
      }
    };
    auto iteration = [&] {
      CHECK_NCCL(ncclGroupStart());
      for (int g = 0; g < n; ++g) one(g);
      CHECK_NCCL(ncclGroupEnd());
    };
    auto sync = [&] {
      for (int g = 0; g < n; ++g) CHECK_CUDA(cudaStreamSynchronize(streams[g]));
    };
    for (int i = 0; i < warmup; ++i) iteration();
    sync();
    const auto t0 = std::chrono::steady_clock::now();
    for (int i = 0; i < iters; ++i) iteration();
    sync();
    const double us = std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - t0).count() / iters;
    const size_t moved = (op == "all_gather" || op == "reduce_scatter" || op == "alltoall") ? per * n * sizeof(float) : bytes;
    const double algbw = moved / us / 1e3;
    std::printf("%s %d %zu %.3f %.3f %.3f\n", op.c_str(), n, moved, us, algbw, algbw * factor);
    std::fflush(stdout);
  }
  for (int i = 0; i < n; ++i) ncclCommDestroy(comms[i]);
  return 0;
}
