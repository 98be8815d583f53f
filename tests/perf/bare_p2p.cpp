// The yardstick for fabric-p2p's harness cost: a plain MPI ping-pong and a plain windowed send, written without
// fabricbench (no timer per iteration, no buffers classes, no results). Prints one number.
//   bare_p2p latency BYTES ITERS WARMUP          -> one-way latency in us (half the round trip)
//   bare_p2p bw BYTES ITERS WARMUP WINDOW        -> MB/s (1e6 B/s)
//   bare_p2p bibw BYTES ITERS WARMUP WINDOW      -> MB/s, both directions; one MPI_Waitall of every request
//                                                  (fabric-p2p's shape)
//   bare_p2p bibw_osu BYTES ITERS WARMUP WINDOW  -> the same, waiting as osu_bibw 7.4 does: rank 0 its sends then
//                                                  its receives, rank 1 its receives then its sends
#include <mpi.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int rank = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  if (argc < 5) {
    if (rank == 0) std::fprintf(stderr, "usage: bare_p2p latency|bw BYTES ITERS WARMUP [WINDOW]\n");
    MPI_Finalize();
    return 2;
  }
  const bool latency = std::strcmp(argv[1], "latency") == 0;
  const bool bibw = std::strncmp(argv[1], "bibw", 4) == 0;
  const bool osu_order = std::strcmp(argv[1], "bibw_osu") == 0;
  const int bytes = std::atoi(argv[2]), iters = std::atoi(argv[3]), warmup = std::atoi(argv[4]);
  const int window = argc > 5 ? std::atoi(argv[5]) : 64;
  // Page-aligned like OSU's buffers (and fabric-p2p's): a 16-byte offset from malloc cost 10-20% at 4 MiB here.
  char* sbuf = nullptr;
  char* rbuf = nullptr;
  if (posix_memalign(reinterpret_cast<void**>(&sbuf), 4096, bytes + 1) || posix_memalign(reinterpret_cast<void**>(&rbuf), 4096, bytes + 1))
    MPI_Abort(MPI_COMM_WORLD, 3);
  std::memset(sbuf, 'a', bytes + 1);
  std::memset(rbuf, 0, bytes + 1);
  std::vector<MPI_Request> req(2 * window);
  char ack = 0;
  const int peer = 1 - rank;
  double t0 = 0;
  MPI_Barrier(MPI_COMM_WORLD);
  for (int i = 0; i < warmup + iters; ++i) {
    if (i == warmup) t0 = MPI_Wtime();
    if (latency) {
      if (rank == 0) {
        MPI_Send(sbuf, bytes, MPI_BYTE, peer, 1, MPI_COMM_WORLD);
        MPI_Recv(rbuf, bytes, MPI_BYTE, peer, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
      } else {
        MPI_Recv(rbuf, bytes, MPI_BYTE, peer, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        MPI_Send(sbuf, bytes, MPI_BYTE, peer, 1, MPI_COMM_WORLD);
      }
    } else if (bibw) {
      for (int w = 0; w < window; ++w) MPI_Irecv(rbuf, bytes, MPI_BYTE, peer, 1, MPI_COMM_WORLD, &req[w]);
      for (int w = 0; w < window; ++w) MPI_Isend(sbuf, bytes, MPI_BYTE, peer, 1, MPI_COMM_WORLD, &req[window + w]);
      if (!osu_order) {
        MPI_Waitall(2 * window, req.data(), MPI_STATUSES_IGNORE);
      } else {
        MPI_Request* first = rank == 0 ? &req[window] : &req[0];  // rank 0: sends first; rank 1: receives first
        MPI_Request* second = rank == 0 ? &req[0] : &req[window];
        MPI_Waitall(window, first, MPI_STATUSES_IGNORE);
        MPI_Waitall(window, second, MPI_STATUSES_IGNORE);
      }
    } else if (rank == 0) {
      for (int w = 0; w < window; ++w) MPI_Isend(sbuf, bytes, MPI_BYTE, peer, 1, MPI_COMM_WORLD, &req[w]);
      MPI_Waitall(window, req.data(), MPI_STATUSES_IGNORE);
      MPI_Recv(&ack, 1, MPI_BYTE, peer, 2, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    } else {
      for (int w = 0; w < window; ++w) MPI_Irecv(rbuf, bytes, MPI_BYTE, peer, 1, MPI_COMM_WORLD, &req[w]);
      MPI_Waitall(window, req.data(), MPI_STATUSES_IGNORE);
      MPI_Send(&ack, 1, MPI_BYTE, peer, 2, MPI_COMM_WORLD);
    }
  }
  const double t = MPI_Wtime() - t0;
  if (rank == 0) {
    if (latency) std::printf("%.4f\n", t * 1e6 / (2.0 * iters));
    else std::printf("%.2f\n", static_cast<double>(bytes) * window * iters * (bibw ? 2 : 1) / t / 1e6);
  }
  std::free(sbuf);
  std::free(rbuf);
  MPI_Finalize();
  return 0;
}
