// One link's state (VerbsLink::Impl): its buffers and their registrations, completion queues, queue pairs and the
// peer's endpoints, with the posting and polling perftest's loops share (defined here, inline: they run inside the
// timed loops). The link is connected and a test run in verbs_link.cpp; the loops are stream_loop.cpp (bandwidth)
// and ping_pong_loop.cpp (latency). Internal to lib/verbs.
#pragma once
#include <fmt/format.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

#include "fabricbench/error.hpp"
#include "fabricbench/runtime/mpi.hpp"
#include "fabricbench/verbs/verbs_link.hpp"

namespace fabricbench::verbs {

constexpr int access_all =
    IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_ATOMIC;
constexpr int poll_batch = 16;  // perftest's CTX_POLL_BATCH

struct VerbsLink::Impl {
  const Device& device;
  MPI_Comm comm;
  int peer;
  bool leader;
  VerbsSettings settings;
  memory::Buffer local, target;
  MemoryRegion local_mr, target_mr;
  CompletionQueue send_cq, receive_cq;
  std::vector<std::unique_ptr<QueuePair>> qps;  // after the queues: released before them
  std::vector<Endpoint> remote;
  std::unordered_map<std::uint32_t, int> qp_index;  // QP number -> index
  int me_world, peer_world;

  Impl(const Device& d, memory::MemoryKind memory, std::uint64_t max_bytes, const VerbsSettings& s, MPI_Comm c, int p,
       bool lead)
      : device(d),
        comm(c),
        peer(p),
        leader(lead),
        settings(s),
        local(memory, std::max<std::uint64_t>(max_bytes, 8)),
        target(memory, std::max<std::uint64_t>(max_bytes, 8)),
        local_mr(d, local, access_all),
        target_mr(d, target, access_all),
        send_cq(d, s.qps * std::max(s.tx_depth, 128) + 16, s.events),
        receive_cq(d, s.qps * std::max(s.rx_depth, 1) + 16, s.events) {}

  void check(int rc, const char* what) const { runtime::check_mpi(rc, what); }

  // ---- posting ----
  void post_one(int q, Verb verb, std::uint64_t bytes, bool signaled, int inline_bytes) {
    ibv_sge sge{};
    sge.addr = reinterpret_cast<std::uintptr_t>(local.data());
    sge.length = static_cast<std::uint32_t>(bytes);
    sge.lkey = local_mr.lkey();
    ibv_send_wr wr{}, *bad = nullptr;
    wr.wr_id = static_cast<std::uint64_t>(q);
    wr.sg_list = &sge;
    wr.num_sge = 1;
    wr.send_flags = signaled ? IBV_SEND_SIGNALED : 0;
    if (inline_bytes > 0 && bytes <= static_cast<std::uint64_t>(inline_bytes)) wr.send_flags |= IBV_SEND_INLINE;
    const auto& r = remote[q];
    switch (verb) {
      case Verb::write:
        wr.opcode = IBV_WR_RDMA_WRITE;
        wr.wr.rdma.remote_addr = r.address;
        wr.wr.rdma.rkey = r.rkey;
        break;
      case Verb::read:
        wr.opcode = IBV_WR_RDMA_READ;
        wr.wr.rdma.remote_addr = r.address;
        wr.wr.rdma.rkey = r.rkey;
        break;
      case Verb::send:
        wr.opcode = IBV_WR_SEND;
        break;
      case Verb::atomic:
        sge.length = 8;
        wr.wr.atomic.remote_addr = r.address;
        wr.wr.atomic.rkey = r.rkey;
        if (settings.atomic == AtomicOp::fetch_add) {
          wr.opcode = IBV_WR_ATOMIC_FETCH_AND_ADD;
          wr.wr.atomic.compare_add = 1;
        } else {
          wr.opcode = IBV_WR_ATOMIC_CMP_AND_SWP;
          wr.wr.atomic.compare_add = 0;
          wr.wr.atomic.swap = 0;
        }
        break;
    }
    if (int rc = ibv_post_send(qps[q]->get(), &wr, &bad)) fail_post("ibv_post_send", q, rc);
  }

  void post_receive(int q, std::uint64_t bytes) {
    ibv_sge sge{};
    sge.addr = reinterpret_cast<std::uintptr_t>(target.data());
    sge.length = static_cast<std::uint32_t>(std::max<std::uint64_t>(bytes, 1));
    sge.lkey = target_mr.lkey();
    ibv_recv_wr wr{}, *bad = nullptr;
    wr.wr_id = static_cast<std::uint64_t>(q);
    wr.sg_list = &sge;
    wr.num_sge = 1;
    if (int rc = ibv_post_recv(qps[q]->get(), &wr, &bad)) fail_post("ibv_post_recv", q, rc);
  }

  [[noreturn]] void fail_post(const char* what, int q, int rc) const {
    throw Error::runtime(fmt::format("{} on QP {:#x} failed: {} (QP state {})", what, qps[q]->number(),
                                     std::strerror(rc), qps[q]->state()));
  }

  // Polls `cq`; a failed completion gets the queue pairs' states added.
  int poll(CompletionQueue& cq, ibv_wc* wc) {
    try {
      return cq.poll(wc, poll_batch);
    } catch (const Error& e) {
      throw Error::runtime(fmt::format("{}; queue pairs: {}", e.what(), states()));
    }
  }

  std::string states() const {
    std::vector<std::string> out;
    for (const auto& qp : qps) out.push_back(fmt::format("{:#x} {}", qp->number(), qp->state()));
    return fmt::format("{}", fmt::join(out, ", "));
  }

  // ---- perftest's bandwidth loop (run_iter_bw; the receiving side of send as run_iter_bw_server): stream_loop.cpp
  // Posts `iterations` messages per QP when `sending`, keeps receives posted and consumes `iterations` per QP when
  // `receiving`. With `stamps`, records each post and each completion (perftest's tposted/tcompleted).
  void stream(Verb verb, std::uint64_t bytes, int iterations, int tx_depth, int cq_mod, int inline_bytes, bool sending,
              bool receiving, std::vector<double>* posted, std::vector<double>* completed, double* seconds_per_tick);

  // ---- perftest's latency loops (run_iter_lat_write, run_iter_lat_send, run_iter_lat): ping_pong_loop.cpp
  // One QP (the first). The leader starts each round trip; returns the leader's post stamps in ticks.
  std::vector<std::uint64_t> ping_pong(Verb verb, std::uint64_t bytes, int iterations, int inline_bytes);
};

}  // namespace fabricbench::verbs
