#include "fabricbench/ops/nccl_p2p.hpp"

#include "fabricbench/error.hpp"

#ifdef FABRICBENCH_HAVE_NCCL
#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <string>
#include <vector>

#include "fabricbench/test_hooks.hpp"
#include "nccl_comm.hpp"

namespace fabricbench::ops {

struct NcclP2P::Impl {
  explicit Impl(const runtime::Communicator& comm) : nccl(comm, false) {}
  NcclComm nccl;  // declared before the stream: destroyed after it
  Stream stream;
};

NcclP2P::NcclP2P(const runtime::Communicator& comm) : impl_(std::make_unique<Impl>(comm)) {}
NcclP2P::~NcclP2P() = default;

bool nccl_p2p_built() { return true; }

PairMeasurement NcclP2P::run(const P2PTest& test, const Exchanger& x) {
  return nccl_exchange(impl_->nccl, impl_->stream.s, test, x);
}

namespace {

// This rank's ends of one step: seconds from its start until its sends, and its receives, were done (0 where it has
// none; -1: not done by the deadline).
struct LaneEnds {
  double sent = 0, received = 0;
  bool hung() const { return sent < 0 || received < 0; }
};

// Until the streams of the lanes in use are idle, each one's end from `t0`; past the deadline both communicators are
// aborted and what had not ended is -1.
LaneEnds wait_lanes(NcclLane sends, NcclLane receives, bool sending, bool receiving, NcclClock::time_point t0,
                    const NcclClock::time_point* deadline) {
  double ends[2] = {0, 0};
  bool done[2] = {!sending, !receiving};
  const NcclLane lanes[2] = {sends, receives};
  for (unsigned polls = 0; !done[0] || !done[1]; ++polls) {
    for (int k = 0; k < 2; ++k) {
      if (done[k]) continue;
      const cudaError_t rc = cudaStreamQuery(lanes[k].stream);
      if (rc == cudaSuccess) {
        done[k] = true;
        ends[k] = std::chrono::duration<double>(NcclClock::now() - t0).count();
      } else {
        if (rc != cudaErrorNotReady) check_cuda(rc, "cudaStreamQuery");
        lanes[k].comm.check_async();
      }
    }
    if (deadline && (polls & 1023) == 0 && NcclClock::now() > *deadline) {
      sends.comm.abort(), receives.comm.abort();
      return {done[0] ? ends[0] : -1, done[1] ? ends[1] : -1};
    }
  }
  return {ends[0], ends[1]};
}

}  // namespace

PairMeasurement nccl_shift_steps(NcclLane sends, NcclLane receives, ShiftLanes lanes, const Exchanger& x,
                                 NcclBound bound) {
  constexpr int step_times_tag = 4;
  exchange_pattern(x.me, x.bytes).fill(x.send, x.bytes);
  if (x.from != MPI_PROC_NULL) memory::clear(x.recv, x.bytes);
  check_cuda(cudaDeviceSynchronize(), "cudaDeviceSynchronize");
  // One step: the window's sends and receives in one NCCL group; with `only` >= 0, one message of that lane's only
  // (the connections are made lane by lane: each rank has one operation on a lane at most, and its peer the matching
  // one, where a group of a send and a receive waits for both peers' connections, and a ring of such groups for
  // every connection of the ring).
  const auto run_step = [&](int only) -> LaneEnds {
    const bool send = x.peer != MPI_PROC_NULL && (only < 0 || lanes.send == only);
    const bool receive = x.from != MPI_PROC_NULL && (only < 0 || lanes.receive == only);
    const auto t0 = NcclClock::now();
    try {
      if (!send && !receive) return {};
      if (bound.stalled) sends.comm.stall(bound.deadline);
      check_nccl(ncclGroupStart(), "ncclGroupStart");
      for (int w = 0; w < (only < 0 ? x.window : 1); ++w) {
        if (send)
          check_nccl(ncclSend(x.send.data(), x.bytes, ncclChar, x.peer, sends.comm.get(), sends.stream), "ncclSend");
        if (receive)
          check_nccl(ncclRecv(x.recv.data(), x.bytes, ncclChar, x.from, receives.comm.get(), receives.stream),
                     "ncclRecv");
      }
      check_nccl(ncclGroupEnd(), "ncclGroupEnd");
      if (send) sends.comm.settle(bound.deadline);
      if (receive) receives.comm.settle(bound.deadline);
      return wait_lanes(sends, receives, send, receive, t0, bound.deadline);
    } catch (const Hung&) {  // a call that did not take effect, or the stall test hook: the communicator is aborted
      return {send ? -1.0 : 0.0, receive ? -1.0 : 0.0};
    }
  };
  PairMeasurement m;
  m.iterations = x.iterations, m.warmup = x.warmup, m.window = x.window;
  // Per step, this rank's sends' and receives' ends (-1: not run), the warm-ups untimed; the receives' last entry
  // says whether they ended in every step run.
  const std::size_t steps = static_cast<std::size_t>(x.iterations);
  std::vector<double> sent_s(steps, -1), received_s(steps + 1, -1), peer_received_s(steps + 1, 1);
  LaneEnds last;  // the last step run (where one passed the deadline, it tells which side did)
  int any_hung = 0;
  const auto agree = [&] {  // the steps' first barrier: whether any rank's step passed the deadline
    const int hung = last.hung();
    runtime::check_mpi(MPI_Allreduce(&hung, &any_hung, 1, MPI_INT, MPI_MAX, x.comm), "MPI_Allreduce");
  };
  // Lane by lane, each agreed on: the lanes after one past the deadline are not connected (and not measured).
  for (int lane = 0; lane < lanes.count && !any_hung; ++lane) {
    runtime::check_mpi(MPI_Barrier(x.comm), "MPI_Barrier");
    last = run_step(lane);
    agree();
  }
  for (int i = -x.warmup; i < x.iterations && !any_hung; ++i) {
    runtime::check_mpi(MPI_Barrier(x.comm), "MPI_Barrier");
    last = run_step(-1);
    if (i >= 0) sent_s[i] = last.sent, received_s[i] = last.received;
    agree();
  }
  // As over MPI (p2p_exchange.cpp): every rank hands its receive times to the rank it received from, and a step to
  // `peer` lasts the later of this rank's sends and `peer`'s receives.
  received_s[steps] = last.received < 0 ? 0 : 1;
  runtime::check_mpi(
      MPI_Sendrecv(received_s.data(), x.iterations + 1, MPI_DOUBLE, x.from, step_times_tag, peer_received_s.data(),
                   x.iterations + 1, MPI_DOUBLE, x.peer, step_times_tag, x.comm, MPI_STATUS_IGNORE),
      "MPI_Sendrecv");
  m.hung = x.peer != MPI_PROC_NULL && (last.sent < 0 || peer_received_s[steps] == 0);
  for (std::size_t i = 0; i < steps && sent_s[i] >= 0 && peer_received_s[i] >= 0; ++i) {
    const double step_s = std::max(sent_s[i], peer_received_s[i]);
    m.elapsed_s += step_s;
    m.laps_us.push_back(step_s * 1e6);
  }
  if (x.from != MPI_PROC_NULL && !any_hung) m.wrong = check_received(x, x.from);
  return m;
}

PairMeasurement nccl_exchange(NcclComm& nccl, cudaStream_t stream, const P2PTest& test, const Exchanger& x,
                              NcclBound bound) {
  if (x.mpigraph_steps) throw Error::internal("mpiGraph's steps over NCCL: nccl_shift_steps, with two communicators");
  const ncclComm_t comm = nccl.get();
  const int peer = x.peer;
  const bool leader = x.leader;
  const std::size_t bytes = x.bytes;
  void* const sbuf = x.send.data();
  void* const rbuf = x.recv.data();
  const int window = test.ping_pong() ? 1 : x.window;
  exchange_pattern(x.me, x.bytes).fill(x.send, x.bytes);
  // The data a rank receives: both directions for ping-pong and bibw, leader -> follower for the window.
  const bool receives = test.exchange != Exchange::window || !leader;
  if (receives) memory::clear(x.recv, x.bytes);
  check_cuda(cudaDeviceSynchronize(), "cudaDeviceSynchronize");  // the fill and clear are done before any send

  // Inside a group a call only records itself: the group's end settles. A stalled rank (test hook) launches nothing.
  bool grouped = false;
  const auto settle = [&] {
    if (!grouped) nccl.settle(bound.deadline);
  };
  const auto send = [&](std::size_t n) {
    if (bound.stalled) return;
    check_nccl(ncclSend(sbuf, n, ncclChar, peer, comm, stream), "ncclSend");
    settle();
  };
  const auto recv = [&](std::size_t n) {
    if (bound.stalled) return;
    check_nccl(ncclRecv(rbuf, n, ncclChar, peer, comm, stream), "ncclRecv");
    settle();
  };
  // The host waits for the stream by polling it, as the NCCL back end does and OSU's xccl tests do (a spin on
  // cudaStreamQuery): on 2 x H200 this read latency 1-2 us lower than cudaStreamSynchronize, within -4%..+3% of
  // osu_xccl_latency (docs/measurements/perf-p2p-nccl-osu.md), and it bounds the exchange by the deadline.
  // Test hook FABRICBENCH_TEST_OSU_POLL: "1" waits exactly as OSU does (cudaStreamQuery and MPI_Iprobe in turn),
  // "sync" with cudaStreamSynchronize, to measure what the wait costs.
  enum class Poll { nccl, osu, sync };
  const auto& hook = TestHooks::current().osu_poll;
  const Poll poll = hook.empty() ? Poll::nccl : hook == "sync" ? Poll::sync : Poll::osu;  // decided before any timing
  const auto wait = [&] {
    if (bound.stalled) nccl.stall(bound.deadline);
    if (poll == Poll::sync) return check_cuda(cudaStreamSynchronize(stream), "cudaStreamSynchronize");
    if (poll == Poll::nccl) return nccl.wait(stream, bound.deadline);
    cudaError_t rc = cudaErrorNotReady;
    for (int flag = 0; rc == cudaErrorNotReady;) {
      rc = cudaStreamQuery(stream);
      runtime::check_mpi(MPI_Iprobe(MPI_ANY_SOURCE, MPI_ANY_TAG, x.comm, &flag, MPI_STATUS_IGNORE), "MPI_Iprobe");
    }
    check_cuda(rc, "cudaStreamQuery");
  };

  PairMeasurement m;
  m.iterations = x.iterations, m.warmup = x.warmup, m.window = window;
  PairTimer timer(x.comm, leader, x.iterations, x.warmup, x.min_time_s);
  switch (test.exchange) {
    case Exchange::ping_pong:
      if (leader)
        timer.run([&] { send(bytes), wait(), recv(bytes), wait(); });
      else
        timer.run([&] { recv(bytes), wait(), send(bytes), wait(); });
      break;
    case Exchange::window:
      // The ack's receive is enqueued, not waited for: the next iteration's wait takes it (osu_xccl_bw), and the
      // last one's is waited for after the block, untimed.
      if (leader)
        timer.run(
            [&] {
              for (int w = 0; w < window; ++w) send(bytes);
              wait();
              recv(1);
            },
            wait);
      else
        timer.run(
            [&] {
              for (int w = 0; w < window; ++w) recv(bytes);
              wait();
              send(1);
            },
            wait);
      break;
    case Exchange::bidirectional_window:
      timer.run([&] {
        check_nccl(ncclGroupStart(), "ncclGroupStart");
        grouped = true;
        for (int w = 0; w < window; ++w) send(bytes), recv(bytes);
        grouped = false;
        check_nccl(ncclGroupEnd(), "ncclGroupEnd");
        settle();
        wait();
      });
      break;
  }
  timer.finish(m);
  if (receives) m.wrong = check_received(x, peer);
  return m;
}

}  // namespace fabricbench::ops

#else

namespace fabricbench::ops {

struct NcclP2P::Impl {};

NcclP2P::NcclP2P(const runtime::Communicator&) {
  throw Error::usage("--backend nccl: this build has no NCCL (configure with CUDA and NCCL found); use --backend mpi");
}
NcclP2P::~NcclP2P() = default;
PairMeasurement NcclP2P::run(const P2PTest&, const Exchanger&) { return {}; }
bool nccl_p2p_built() { return false; }

}  // namespace fabricbench::ops

#endif
