// GPU to GPU point-to-point over NCCL on any MPI: the exchanges of OSU 7.x's xccl benchmarks (c/xccl/pt2pt:
// osu_xccl_latency, osu_xccl_bw, osu_xccl_bibw) with device buffers, ncclSend/ncclRecv on one stream, MPI only for
// the launch, the barriers and the blocks' count. fabric-p2p --backend nccl runs every pair of the job on one
// communicator; the same exchange serves each test kind:
//   latency (ping-pong): send, wait for the stream, receive, wait; half the round trip;
//   bw / mbw_mr (window): the leader enqueues `window` sends, waits for the stream, then enqueues the follower's
//     one-byte ack without waiting (the next iteration's wait takes it, as OSU's does); the follower receives the
//     window, waits, and sends the ack;
//   bibw: both enqueue `window` sends and receives in one NCCL group and wait.
// Timing, blocks, validation and the test hook (a flipped byte) are run_exchange's (p2p_exchange.hpp).
#pragma once
#include <memory>

#include "fabricbench/ops/p2p_exchange.hpp"
#include "fabricbench/runtime/mpi.hpp"

namespace fabricbench::ops {

class NcclP2P {
 public:
  // One NCCL communicator over every rank of `comm` (one GPU each, already current) and one stream; collective
  // over `comm`. Error::usage when this build has no NCCL.
  explicit NcclP2P(const runtime::Communicator& comm);
  ~NcclP2P();
  NcclP2P(const NcclP2P&) = delete;
  NcclP2P& operator=(const NcclP2P&) = delete;

  // run_exchange over NCCL: `x.send` and `x.recv` are device buffers, `x.comm` the MPI communicator of the same
  // ranks in the same order. No budget, no mpiGraph steps (CollBackend::shift_steps runs those).
  PairMeasurement run(const P2PTest& test, const Exchanger& x);

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

// Whether this build has NCCL (fabric-p2p's --backend nccl).
bool nccl_p2p_built();

}  // namespace fabricbench::ops
