// One point-to-point test between two ranks of a communicator: warm-up, a barrier, the timed iterations of the
// test's exchange (chosen once, outside the timed loop), and the check of the received data. fabric-p2p runs it on
// MPI_COMM_WORLD for every pair at once; fabric-sweep runs it on each node pair's own communicator.
#pragma once
#include <mpi.h>

#include <cstdint>
#include <vector>

#include "fabricbench/memory/buffer.hpp"
#include "fabricbench/ops/p2p_test.hpp"
#include "fabricbench/runtime/mpi.hpp"

namespace fabricbench::ops {

// What one rank measured for one test and size.
struct PairMeasurement {
  double elapsed_s = 0;         // leader: steady-clock span of the timed iterations; follower: 0
  std::vector<double> laps_us;  // leader: one per timed iteration
  std::uint64_t wrong = 0;      // bytes that failed the check on this rank
};

struct Exchanger {
  MPI_Comm comm;   // both ranks belong to it; its barrier starts the timed part
  int me, peer;    // ranks in comm
  bool leader;     // leads the ping-pong, sends the window
  memory::Buffer& send;
  memory::Buffer& recv;
  std::uint64_t bytes;
  int iterations, warmup, window;
  bool check;
  bool flip_byte;  // test hook: corrupt one received byte before the check
  int from = -1;   // bidirectional window only: receive from this rank instead of `peer` (mpiGraph's shift)
};

PairMeasurement run_exchange(const P2PTest& test, const Exchanger& exchanger);

}  // namespace fabricbench::ops
