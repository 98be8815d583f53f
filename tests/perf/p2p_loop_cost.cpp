// What fabric-p2p's hot loop costs, measured where launch-to-launch noise cannot hide it: in one pair of processes,
// blocks of one test (latency: OSU ping-pong; bw: OSU's window of 64 sends, then an ack) run in turn as (a) a bare
// MPI loop, (b) the same loop with a clock read after each iteration on the leader (what per-iteration samples
// cost), and (c) the library's own run_exchange, whose timed region is what fabric-p2p reports. The order rotates
// every block. Prints the quartiles of the per-block time ratios b/a and c/a. A benchmark run, not a test
// (tests/perf/p2p_overhead.py compares whole launches).
//   mpirun -np 2 --bind-to core --mca btl self,vader p2p_loop_cost [latency|bw] [BYTES=8] [BLOCKS=60] [ITERS=20000]
#include <mpi.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "fabricbench/memory/buffer.hpp"
#include "fabricbench/ops/p2p_exchange.hpp"
#include "fabricbench/timing/iteration_timer.hpp"

using namespace fabricbench;

namespace {
void quartiles(const char* label, std::vector<double> ratios) {
  std::sort(ratios.begin(), ratios.end());
  const auto n = ratios.size();
  std::printf("%-34s q1 %.4f  median %.4f  q3 %.4f\n", label, ratios[n / 4], ratios[n / 2], ratios[3 * n / 4]);
}
}  // namespace

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int rank = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  const std::string test_name = argc > 1 ? argv[1] : "latency";
  const int bytes = argc > 2 ? std::atoi(argv[2]) : 8, blocks = argc > 3 ? std::atoi(argv[3]) : 60;
  const int n = argc > 4 ? std::atoi(argv[4]) : 20000, peer = 1 - rank, window = 64;
  const auto* test = ops::find_p2p_test(test_name);
  if (!test || (test_name != "latency" && test_name != "bw")) {
    if (rank == 0) std::fprintf(stderr, "p2p_loop_cost: the test is latency or bw\n");
    MPI_Abort(MPI_COMM_WORLD, 2);
  }
  const bool ping_pong = test->exchange == ops::Exchange::ping_pong;
  std::vector<MPI_Request> requests(window);
  char ack = 0;
  memory::Buffer send(memory::MemoryKind::host, bytes), recv(memory::MemoryKind::host, bytes);
  void* const sbuf = send.data();
  void* const rbuf = recv.data();
  const auto step = [&] {
    if (ping_pong && rank == 0) {
      MPI_Send(sbuf, bytes, MPI_BYTE, peer, 1, MPI_COMM_WORLD);
      MPI_Recv(rbuf, bytes, MPI_BYTE, peer, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    } else if (ping_pong) {
      MPI_Recv(rbuf, bytes, MPI_BYTE, peer, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
      MPI_Send(sbuf, bytes, MPI_BYTE, peer, 1, MPI_COMM_WORLD);
    } else if (rank == 0) {
      for (int w = 0; w < window; ++w) MPI_Isend(sbuf, bytes, MPI_BYTE, peer, 1, MPI_COMM_WORLD, &requests[w]);
      MPI_Waitall(window, requests.data(), MPI_STATUSES_IGNORE);
      MPI_Recv(&ack, 1, MPI_BYTE, peer, 2, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    } else {
      for (int w = 0; w < window; ++w) MPI_Irecv(rbuf, bytes, MPI_BYTE, peer, 1, MPI_COMM_WORLD, &requests[w]);
      MPI_Waitall(window, requests.data(), MPI_STATUSES_IGNORE);
      MPI_Send(&ack, 1, MPI_BYTE, peer, 2, MPI_COMM_WORLD);
    }
  };
  timing::IterationTimer timer(static_cast<std::size_t>(n));
  // Seconds of one block of variant v: 0 bare, 1 bare + clock read, 2 run_exchange's timed region.
  const auto block = [&](int v) {
    if (v == 2)
      return ops::run_exchange(*test, {MPI_COMM_WORLD, rank, peer, rank == 0, send, recv,
                                       static_cast<std::uint64_t>(bytes), n, 0, window, false, false})
          .elapsed_s;
    MPI_Barrier(MPI_COMM_WORLD);
    const double t0 = MPI_Wtime();
    if (v == 1 && rank == 0) {
      timer.start();
      for (int i = 0; i < n; ++i) {
        step();
        timer.lap();
      }
      timer.stop();
    } else {
      for (int i = 0; i < n; ++i) step();
    }
    return MPI_Wtime() - t0;
  };
  for (int i = 0; i < n; ++i) step();  // warm-up
  std::vector<double> clock_read, harness, bare_us;
  for (int b = 0; b < blocks; ++b) {
    double seconds[3] = {0, 0, 0};
    for (int k = 0; k < 3; ++k) seconds[(b + k) % 3] = block((b + k) % 3);
    clock_read.push_back(seconds[1] / seconds[0]);
    bare_us.push_back(seconds[0] * 1e6 / n / (ping_pong ? 2 : 1));
    harness.push_back(seconds[2] / seconds[0]);
  }
  if (rank == 0) {
    std::printf("%s at %d B, %d blocks of %d iterations, time relative to a bare loop:\n", test_name.c_str(), bytes,
                blocks, n);
    std::sort(bare_us.begin(), bare_us.end());
    std::printf("%-34s median %.4f us (%s)\n", "bare loop", bare_us[blocks / 2], ping_pong ? "one way" : "per window");
    quartiles("bare loop + a clock read per iter.", clock_read);
    quartiles("fabric-p2p's loop (run_exchange)", harness);
  }
  MPI_Finalize();
  return 0;
}
