#include "fabricbench/ops/nccl_p2p.hpp"

#include "fabricbench/error.hpp"

#ifdef FABRICBENCH_HAVE_NCCL
#include <cstdlib>
#include <string>

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

PairMeasurement nccl_exchange(NcclComm& nccl, cudaStream_t stream, const P2PTest& test, const Exchanger& x,
                              NcclBound bound) {
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
