// One point-to-point test between two ranks of a communicator: warm-up, a barrier, the timed iterations of the
// test's exchange (chosen once, outside the timed loop), and the check of the received data. fabric-p2p runs it on
// MPI_COMM_WORLD for every pair at once; fabric-sweep runs it on each node pair's own communicator.
#pragma once
#include <mpi.h>

#include <cmath>
#include <cstdint>
#include <vector>

#include "fabricbench/memory/buffer.hpp"
#include "fabricbench/ops/p2p_test.hpp"
#include "fabricbench/runtime/mpi.hpp"
#include "fabricbench/timing/iteration_timer.hpp"
#include "fabricbench/timing/timed_blocks.hpp"

namespace fabricbench::ops {

// What one rank measured for one test and size.
struct PairMeasurement {
  double elapsed_s = 0;         // leader: steady-clock span of the timed iterations (the median block's); follower: 0
  std::vector<double> laps_us;  // leader: one per timed iteration, every block's
  int blocks = 1;               // timed blocks of `iterations` (Exchanger::min_time_s)
  double spread = NAN;          // leader: (p90 - p10) / median of the blocks' spans; NaN with one block
  std::uint64_t wrong = 0;      // bytes that failed the check on this rank
  int iterations = 0, warmup = 0, window = 0;  // what ran: a time budget may have cut the requested counts
  bool cut = false;                            // the budget cut them
  bool hung = false;  // mpiGraph's steps over NCCL: this rank's sends or `peer`'s receives passed the deadline
};

// How much of a pair test fits a time budget, from probes of one message (or one round trip).
struct ExchangePlan {
  int iterations, warmup, window;
  bool cut;
  // The requested counts when they fit `budget_s` (<= 0: no budget); otherwise fewer warm-ups, then fewer
  // iterations (at least 1), then a smaller window (at least 1 message). `message_s`: one message of the window
  // (window tests) or one round trip (ping-pong); `window` 1 for ping-pong.
  static ExchangePlan fit(double message_s, int iterations, int warmup, int window, double budget_s);
};

struct Exchanger {
  MPI_Comm comm;  // both ranks belong to it; its barrier starts the timed part
  int me, peer;   // ranks in comm
  bool leader;    // leads the ping-pong, sends the window
  memory::Buffer& send;
  memory::Buffer& recv;
  std::uint64_t bytes;
  int iterations, warmup, window;
  bool check;
  bool flip_byte;  // test hook: corrupt one received byte before the check
  int from = -1;   // bidirectional window only: receive from this rank instead of `peer` (mpiGraph's shift)
  // Bidirectional window only, mpiGraph's step (its shift): every step starts after two barriers of `comm`; each
  // rank times, from its own first post, its sends' completion and its receives' completion. A step to `peer` lasts
  // the later of this rank's sends and `peer`'s receives (a send completes once the kernel holds it, before the
  // bytes crossed the link); elapsed_s is the sum of those, laps_us each step's. Every rank of `comm` must be in the
  // call, each with its own `peer` and `from` (either MPI_PROC_NULL: it sends, or receives, nothing; `from` is
  // then taken as given, never defaulted to `peer`). Steps run back to back, or a rank's time taken to the end of its
  // own receives, would time the ring: a rank waits for its left neighbour, who waits for its own, so one slow link
  // slows every pair of its step.
  bool mpigraph_steps = false;
  double late_receives_s = 0;  // test hook, mpigraph_steps only: post each step's receives this long after its sends
  double budget_s = 0;         // > 0: probe first and cut the counts to fit this many seconds (not with `from`)
  double probe_s = 0;          // with a budget: a probe_message_s() already taken (0: probe now)
  // > 0: repeat the timed block of `iterations` until about this many seconds were timed (timing::TimedBlocks);
  // rank 0 of `comm` decides the count, so every rank of `comm` must be in the call. Not with a budget.
  double min_time_s = 0;
};

// What `sender` puts in a message of `bytes`: every sender's pattern differs (by size and rank), so a message from
// the wrong peer or of the wrong size fails the check.
memory::FillPattern exchange_pattern(int sender, std::uint64_t bytes);

// After a test, the wrong bytes of what this rank received from `sender` (0 without x.check); the test hook
// x.flip_byte corrupts one received byte first.
std::uint64_t check_received(const Exchanger& x, int sender);

// The timed part of a pair test, shared by the MPI exchange and the NCCL one (nccl_p2p.hpp): blocks of `iterations`
// steps, each after a barrier of `comm` (the warm-ups before the first), the leader lapping every step; with a
// minimum time rank 0 of `comm` decides how many blocks run. Only the leader reads the clock per iteration: each
// read sits on the round trip (tests/perf/p2p_loop_cost.cpp measures what it costs). Every rank times whole blocks,
// to agree on their count.
class PairTimer {
 public:
  PairTimer(MPI_Comm comm, bool leader, int iterations, int warmup, double min_time_s);
  // `step` one iteration; `settle` after each block, untimed (the NCCL exchange waits there for what its last step
  // left on the stream).
  template <typename Step, typename Settle>
  void run(Step&& step, Settle&& settle) {
    for (int b = 0; b < blocks_.count(); ++b) {
      barrier();
      if (b == 0)
        for (int i = 0; i < warmup_; ++i) step();
      timer_.start();
      if (leader_) {
        for (int i = 0; i < iterations_; ++i) {
          step();
          timer_.lap();
        }
      } else {
        for (int i = 0; i < iterations_; ++i) step();
      }
      timer_.stop();
      settle();
      end_block();
    }
  }
  template <typename Step>
  void run(Step&& step) {
    run(step, [] {});
  }
  // The blocks' figures into `m`: count, and on the leader the median block's seconds, their spread and every lap.
  void finish(PairMeasurement& m) const;
  timing::TimedBlocks& blocks() { return blocks_; }

 private:
  void barrier() const;
  void end_block();

  MPI_Comm comm_;
  bool leader_;
  int iterations_, warmup_;
  timing::IterationTimer timer_;
  timing::TimedBlocks blocks_;
  std::vector<double> laps_us_;
};

// With a budget, the leader probes the pair (a few messages in flight, or the faster of two round trips), fits the
// counts (ExchangePlan::fit) and tells the follower, before any warm-up: a link 100 times slower than planned
// costs the budget, not 100 times the test, and still gets a value from what it moved.
PairMeasurement run_exchange(const P2PTest& test, const Exchanger& exchanger);

// Seconds of one message (window tests: a few in flight, after a one-byte exchange that pays for connection setup)
// or one round trip (ping-pong: the faster of two); collective over the pair, the leader's value on both ranks.
// For planning only (never reported).
double probe_message_s(const P2PTest& test, const Exchanger& exchanger);

}  // namespace fabricbench::ops
