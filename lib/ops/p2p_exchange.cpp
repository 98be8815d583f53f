#include "fabricbench/ops/p2p_exchange.hpp"

#include <vector>

#include "fabricbench/timing/iteration_timer.hpp"

namespace fabricbench::ops {
namespace {

constexpr int data_tag = 1;
constexpr int ack_tag = 2;

// Every sender's pattern differs (by size and rank), so a message from the wrong peer or size fails the check.
memory::FillPattern pattern_of(int sender, std::uint64_t bytes) {
  return {static_cast<std::uint32_t>(bytes * 2654435761u) ^ static_cast<std::uint32_t>(sender * 40503u + 1)};
}

using runtime::check_mpi;
inline void check(int rc, const char* what) { check_mpi(rc, what); }

}  // namespace

PairMeasurement run_exchange(const P2PTest& test, const Exchanger& x) {
  const int me = x.me, peer = x.peer, from = x.from >= 0 ? x.from : x.peer;
  const bool leader = x.leader;
  const MPI_Comm comm = x.comm;
  const std::uint64_t bytes = x.bytes;
  const int iterations = x.iterations, warmup = x.warmup;
  // Messages of 2 GiB and more go whole, as one derived datatype (runtime::ByteMessage), not cut to an int.
  const runtime::ByteMessage message(bytes);
  const int count = message.count();
  const MPI_Datatype type = message.type();
  void* const sbuf = x.send.data();
  void* const rbuf = x.recv.data();
  PairMeasurement m;
  // The data a rank receives: both directions for ping-pong and bibw, leader -> follower for window.
  const bool receives = test.exchange != Exchange::window || !leader;
  if (receives) memory::clear(x.recv, bytes);
  pattern_of(me, bytes).fill(x.send, bytes);

  timing::IterationTimer timer(static_cast<std::size_t>(iterations));
  // The exchange is chosen once, outside the timed loop: each case hands its own step to the same loop. Only the
  // leader's times are reported, so only the leader reads the clock: each read sits on the round trip
  // (tests/perf/p2p_loop_cost.cpp measures what it costs).
  const auto timed = [&](auto&& step) {
    check(MPI_Barrier(comm), "MPI_Barrier");
    for (int i = 0; i < warmup; ++i) step();
    if (!leader) {
      for (int i = 0; i < iterations; ++i) step();
      return;
    }
    timer.start();
    for (int i = 0; i < iterations; ++i) {
      step();
      timer.lap();
    }
    timer.stop();
  };
  std::vector<MPI_Request> requests(static_cast<std::size_t>(2 * x.window));
  MPI_Request* const req = requests.data();
  const int window = x.window;
  char ack = 0;
  switch (test.exchange) {
    case Exchange::ping_pong:
      if (leader)
        timed([&] {
          check(MPI_Send(sbuf, count, type, peer, data_tag, comm), "MPI_Send");
          check(MPI_Recv(rbuf, count, type, peer, data_tag, comm, MPI_STATUS_IGNORE), "MPI_Recv");
        });
      else
        timed([&] {
          check(MPI_Recv(rbuf, count, type, peer, data_tag, comm, MPI_STATUS_IGNORE), "MPI_Recv");
          check(MPI_Send(sbuf, count, type, peer, data_tag, comm), "MPI_Send");
        });
      break;
    case Exchange::window:
      if (leader)
        timed([&] {
          for (int w = 0; w < window; ++w) check(MPI_Isend(sbuf, count, type, peer, data_tag, comm, &req[w]), "MPI_Isend");
          check(MPI_Waitall(window, req, MPI_STATUSES_IGNORE), "MPI_Waitall");
          check(MPI_Recv(&ack, 1, MPI_BYTE, peer, ack_tag, comm, MPI_STATUS_IGNORE), "MPI_Recv");
        });
      else
        timed([&] {
          for (int w = 0; w < window; ++w) check(MPI_Irecv(rbuf, count, type, peer, data_tag, comm, &req[w]), "MPI_Irecv");
          check(MPI_Waitall(window, req, MPI_STATUSES_IGNORE), "MPI_Waitall");
          check(MPI_Send(&ack, 1, MPI_BYTE, peer, ack_tag, comm), "MPI_Send");
        });
      break;
    case Exchange::bidirectional_window:
      timed([&] {
        for (int w = 0; w < window; ++w) check(MPI_Irecv(rbuf, count, type, from, data_tag, comm, &req[w]), "MPI_Irecv");
        for (int w = 0; w < window; ++w)
          check(MPI_Isend(sbuf, count, type, peer, data_tag, comm, &req[window + w]), "MPI_Isend");
        check(MPI_Waitall(2 * window, req, MPI_STATUSES_IGNORE), "MPI_Waitall");
      });
      break;
  }
  if (leader) {
    m.elapsed_s = timer.elapsed_s();
    m.laps_us = timer.laps_us();
  }
  if (receives && x.check) {
    if (x.flip_byte && bytes > 0) {
      std::uint8_t b = 0;
      x.recv.copy_to_host(&b, 1);
      b ^= 0xff;
      x.recv.copy_from_host(&b, 1);
    }
    m.wrong = pattern_of(from, bytes).count_wrong(x.recv, bytes);
  }
  return m;
}

}  // namespace fabricbench::ops
