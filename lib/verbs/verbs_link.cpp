#include "fabricbench/verbs/verbs_link.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <atomic>
#include <cstring>
#include <random>
#include <unordered_map>

#include "fabricbench/error.hpp"
#include "fabricbench/runtime/mpi.hpp"
#include "fabricbench/timing/iteration_timer.hpp"

namespace fabricbench::verbs {
namespace {

constexpr int access_all = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ |
                           IBV_ACCESS_REMOTE_ATOMIC;
constexpr int poll_batch = 16;  // perftest's CTX_POLL_BATCH

// Byte patterns: what a rank's local buffer (the source of writes and sends) and target buffer (the destination
// of writes and receives, the source of reads) hold before a test, so that every received byte is checkable.
memory::FillPattern local_pattern(int world_rank) { return {0x1000u + static_cast<std::uint32_t>(world_rank)}; }
memory::FillPattern target_pattern(int world_rank) { return {0x7000u + static_cast<std::uint32_t>(world_rank)}; }

int world_rank_of(MPI_Comm comm, int rank) {
  MPI_Group group, world;
  MPI_Comm_group(comm, &group);
  MPI_Comm_group(MPI_COMM_WORLD, &world);
  int out = MPI_UNDEFINED;
  MPI_Group_translate_ranks(group, 1, &rank, world, &out);
  MPI_Group_free(&group);
  MPI_Group_free(&world);
  return out;
}

}  // namespace

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
      : device(d), comm(c), peer(p), leader(lead), settings(s),
        local(memory, std::max<std::uint64_t>(max_bytes, 8)), target(memory, std::max<std::uint64_t>(max_bytes, 8)),
        local_mr(d, local, access_all), target_mr(d, target, access_all),
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
      case Verb::send: wr.opcode = IBV_WR_SEND; break;
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

  // ---- perftest's bandwidth loop (run_iter_bw; the send test's receiving side as run_iter_bw_server) ----
  // Posts `iterations` messages per QP when `sending`, keeps receives posted and consumes `iterations` per QP when
  // `receiving`. With `stamps`, records each post and each completion (perftest's tposted/tcompleted).
  void stream(Verb verb, std::uint64_t bytes, int iterations, int tx_depth, int cq_mod, int inline_bytes, bool sending,
              bool receiving, std::vector<double>* posted, std::vector<double>* completed, double* seconds_per_tick) {
    const int n_qps = static_cast<int>(qps.size());
    const std::size_t total = static_cast<std::size_t>(iterations) * n_qps;
    std::vector<int> sent(n_qps, 0), done(n_qps, 0), received(n_qps, 0), receives_posted(n_qps, 0);
    std::vector<std::uint64_t> t_post, t_done;
    if (posted) {
      t_post.assign(total, 0);
      t_done.assign(total, 0);
    }
    if (receiving)
      for (int q = 0; q < n_qps; ++q)
        for (; receives_posted[q] < std::min(settings.rx_depth, iterations); ++receives_posted[q]) post_receive(q, bytes);
    // The sender must not send before the receiver has posted: a barrier (the RNR retries would work, slowly).
    if (verb == Verb::send) runtime::idle_barrier(comm);
    timing::IterationTimer timer(0);
    timer.start();
    std::size_t total_sent = 0, total_done = 0, total_received = 0;
    ibv_wc wc[poll_batch];
    while ((sending && total_done < total) || (receiving && total_received < total)) {
      if (sending)
        for (int q = 0; q < n_qps; ++q)
          while (sent[q] < iterations && sent[q] - done[q] < tx_depth) {
            const bool signaled = (sent[q] + 1) % cq_mod == 0 || sent[q] == iterations - 1;
            if (posted) t_post[total_sent] = timing::IterationTimer::ticks();
            post_one(q, verb, bytes, signaled, inline_bytes);
            ++sent[q];
            ++total_sent;
          }
      if (sending && total_done < total) {
        const int n = poll(send_cq, wc);
        for (int i = 0; i < n; ++i) {
          const int q = static_cast<int>(wc[i].wr_id);
          const int now_done = std::min(done[q] + cq_mod, iterations);
          total_done += static_cast<std::size_t>(now_done - done[q]);
          done[q] = now_done;
          if (posted) t_done[total_done - 1] = timing::IterationTimer::ticks();
        }
      }
      if (receiving && total_received < total) {
        const int n = poll(receive_cq, wc);
        for (int i = 0; i < n; ++i) {
          const int q = static_cast<int>(wc[i].wr_id);
          ++received[q];
          ++total_received;
          if (receives_posted[q] < iterations) {
            post_receive(q, bytes);
            ++receives_posted[q];
          }
        }
      }
    }
    timer.stop();
    if (posted) {
      const double scale = timer.seconds_per_tick();
      *seconds_per_tick = scale;
      posted->resize(total);
      completed->resize(total);
      for (std::size_t k = 0; k < total; ++k) {
        (*posted)[k] = static_cast<double>(t_post[k] - t_post[0]) * scale;
        (*completed)[k] = t_done[k] ? static_cast<double>(t_done[k] - t_post[0]) * scale : 0.0;
      }
    }
  }

  // ---- perftest's latency loops (run_iter_lat_write, run_iter_lat_send, run_iter_lat) ----
  // One QP (the first). The leader starts each round trip; returns the leader's post stamps in ticks.
  std::vector<std::uint64_t> ping_pong(Verb verb, std::uint64_t bytes, int iterations, int inline_bytes) {
    std::vector<std::uint64_t> stamps;
    if (leader) stamps.reserve(static_cast<std::size_t>(iterations));
    ibv_wc wc[poll_batch];
    const auto wait_send = [&] {
      while (poll(send_cq, wc) == 0) {
      }
    };
    if (verb == Verb::read || verb == Verb::atomic) {  // one-sided: the peer's CPU takes no part
      if (leader)
        for (int i = 0; i < iterations; ++i) {
          stamps.push_back(timing::IterationTimer::ticks());
          post_one(0, verb, bytes, true, 0);
          wait_send();
        }
      runtime::idle_barrier(comm);
      return stamps;
    }
    if (verb == Verb::send) {
      int posted = 0;
      for (; posted < std::min(settings.rx_depth, iterations); ++posted) post_receive(0, bytes);
      runtime::idle_barrier(comm);
      const auto receive = [&] {
        while (poll(receive_cq, wc) == 0) {
        }
        if (posted < iterations) {
          post_receive(0, bytes);
          ++posted;
        }
      };
      for (int i = 0; i < iterations; ++i) {
        if (!leader) receive();
        if (leader) stamps.push_back(timing::IterationTimer::ticks());
        post_one(0, verb, bytes, true, inline_bytes);
        wait_send();
        if (leader) receive();
      }
      return stamps;
    }
    // RDMA write ping-pong: the last byte of a message carries the iteration's mark; each side spins on the last
    // byte of its target buffer for the peer's write, then writes back.
    auto* flag = static_cast<volatile std::uint8_t*>(target.data()) + (bytes - 1);
    auto* mark = static_cast<std::uint8_t*>(local.data()) + (bytes - 1);
    *flag = 0;
    runtime::idle_barrier(comm);
    for (int i = 0; i < iterations; ++i) {
      const auto m = static_cast<std::uint8_t>(i % 255 + 1);
      if (!leader)
        while (*flag != m) {
        }
      if (leader) stamps.push_back(timing::IterationTimer::ticks());
      *mark = m;
      std::atomic_thread_fence(std::memory_order_release);
      post_one(0, verb, bytes, true, inline_bytes);
      wait_send();
      if (leader)
        while (*flag != m) {
        }
    }
    return stamps;
  }
};

VerbsLink::VerbsLink(const Device& device, memory::MemoryKind memory, std::uint64_t max_bytes,
                     const VerbsSettings& settings, MPI_Comm comm, int peer, bool leader)
    : impl_(std::make_unique<Impl>(device, memory, max_bytes, settings, comm, peer, leader)) {
  auto& m = *impl_;
  m.me_world = world_rank_of(comm, [&] {
    int r;
    MPI_Comm_rank(comm, &r);
    return r;
  }());
  m.peer_world = world_rank_of(comm, peer);
  QueuePairLimits limits;
  limits.send_depth = std::max(settings.tx_depth, 128);
  limits.receive_depth = std::max(settings.rx_depth, 1);
  limits.inline_bytes = settings.inline_bytes >= 0 ? settings.inline_bytes : 236;
  for (int q = 0; q < settings.qps; ++q) {
    try {
      m.qps.push_back(std::make_unique<QueuePair>(device, m.send_cq, m.receive_cq, limits));
    } catch (const Error&) {
      // perftest gives devices it does not know no inline data; do the same when the device refuses the default.
      if (settings.inline_bytes >= 0 || limits.inline_bytes == 0) throw;
      limits.inline_bytes = 0;
      m.qps.push_back(std::make_unique<QueuePair>(device, m.send_cq, m.receive_cq, limits));
    }
    m.qp_index[m.qps.back()->number()] = q;
  }
  // Endpoints over MPI: one per QP, for our target buffer; random starting PSNs as perftest's.
  std::mt19937 random(std::random_device{}());
  std::vector<std::uint32_t> psn(settings.qps);
  std::vector<Endpoint> mine(settings.qps);
  for (int q = 0; q < settings.qps; ++q) {
    psn[q] = random() & 0xffffff;
    mine[q] = m.qps[q]->endpoint(device, psn[q], m.target_mr);
  }
  m.remote.resize(settings.qps);
  runtime::check_mpi(MPI_Sendrecv(mine.data(), static_cast<int>(mine.size() * sizeof(Endpoint)), MPI_BYTE, peer, 71,
                                  m.remote.data(), static_cast<int>(m.remote.size() * sizeof(Endpoint)), MPI_BYTE, peer,
                                  71, comm, MPI_STATUS_IGNORE),
                     "MPI_Sendrecv (verbs endpoints)");
  const ibv_mtu mtu = settings.mtu > 0 ? parse_mtu(settings.mtu) : static_cast<ibv_mtu>(0);
  for (int q = 0; q < settings.qps; ++q) m.qps[q]->connect(device, m.remote[q], psn[q], mtu);
  path_mtu_ = settings.mtu > 0 ? settings.mtu
                               : mtu_bytes(std::min(device.port().active_mtu, static_cast<ibv_mtu>(m.remote[0].mtu)));
  // Both sides must be in RTR before either sends.
  runtime::idle_barrier(comm);
}

VerbsLink::~VerbsLink() = default;

int VerbsLink::tx_depth_for(const VerbsTest& test, const VerbsSettings& settings, int iterations) {
  const int depth = settings.tx_depth > 0 ? settings.tx_depth : test.pattern == Pattern::bandwidth ? 128 : 1;
  return std::max(1, std::min(depth, iterations));
}

int VerbsLink::cq_mod_for(const VerbsTest& test, const VerbsSettings& settings, std::uint64_t bytes, int tx_depth) {
  if (test.pattern == Pattern::latency) return 1;
  if (settings.cq_mod > 0) return std::min(settings.cq_mod, tx_depth);
  // perftest: 100, capped to the TX depth; 1 for messages above 8 KiB (MSG_SIZE_CQ_MOD_LIMIT) unless -a or -e.
  // (perftest keeps 100 with events too: "having a lot of processes with use_event leads to bugs".)
  if (bytes > 8192 && !settings.all_sizes && !settings.events) return 1;
  return std::min(100, tx_depth);
}

int VerbsLink::inline_for(const VerbsTest& test, const VerbsSettings& settings) {
  if (settings.inline_bytes >= 0) return settings.inline_bytes;
  if (test.pattern != Pattern::latency) return 0;
  return test.verb == Verb::write ? 220 : test.verb == Verb::send ? 236 : 0;
}

VerbsMeasurement VerbsLink::run(const VerbsTest& test, std::uint64_t bytes, int iterations, int warmup, bool check) {
  auto& m = *impl_;
  VerbsMeasurement out;
  out.iterations = iterations;
  out.tx_depth = tx_depth_for(test, m.settings, iterations);
  out.cq_mod = cq_mod_for(test, m.settings, bytes, out.tx_depth);
  out.inline_bytes = std::min(inline_for(test, m.settings), m.qps[0]->inline_bytes());
  if (test.fixed_size()) bytes = 8;

  // Known contents before the test: patterns in both buffers (atomics: a zero counter in the target).
  local_pattern(m.me_world).fill(m.local, bytes);
  target_pattern(m.me_world).fill(m.target, bytes);
  if (test.verb == Verb::atomic) memory::clear(m.target, 8);
  runtime::idle_barrier(m.comm);

  const bool both = m.settings.bidirectional && test.pattern == Pattern::bandwidth;
  const bool sends = m.leader || both;
  const bool receives = test.verb == Verb::send && (!m.leader || both);
  if (test.pattern == Pattern::bandwidth) {
    if (warmup > 0) {
      m.stream(test.verb, bytes, warmup, out.tx_depth, out.cq_mod, out.inline_bytes, sends, receives, nullptr, nullptr,
               nullptr);
      runtime::idle_barrier(m.comm);
    }
    std::vector<double> posted, completed;
    double scale = 0;
    if (sends || receives) {
      m.stream(test.verb, bytes, iterations, out.tx_depth, out.cq_mod, out.inline_bytes, sends, receives,
               sends ? &posted : nullptr, sends ? &completed : nullptr, &scale);
    }
    runtime::idle_barrier(m.comm);  // the passive side of a one-sided test waits here, asleep
    if (sends) {
      out.timed = true;
      out.bandwidth = ops::perftest_bandwidth(bytes, posted, completed, out.cq_mod,
                                              posted.size() <= ops::perftest_peak_limit);
      double previous = 0;
      for (std::size_t k = 0; k < completed.size(); ++k)
        if (completed[k] > 0) {
          out.samples_us.push_back((completed[k] - previous) * 1e6);
          previous = completed[k];
        }
    }
  } else {
    if (warmup > 0) m.ping_pong(test.verb, bytes, warmup, out.inline_bytes);
    timing::IterationTimer timer(0);
    timer.start();
    const auto stamps = m.ping_pong(test.verb, bytes, iterations, out.inline_bytes);
    timer.stop();
    runtime::idle_barrier(m.comm);
    if (m.leader) {
      out.timed = true;
      const double scale = timer.seconds_per_tick() * 1e6;
      for (std::size_t i = 1; i < stamps.size(); ++i)
        out.round_trips_us.push_back(static_cast<double>(stamps[i] - stamps[i - 1]) * scale);
      for (const double rt : out.round_trips_us) out.samples_us.push_back(rt / test.latency_divisor);
    }
  }

  if (check) {
    // Every byte the peer put here (or we fetched from it) against the pattern it started from.
    switch (test.verb) {
      case Verb::write:
      case Verb::send:
        if (!m.leader || both || test.pattern == Pattern::latency) {
          // A write ping-pong's last byte holds the iteration mark, not data.
          const auto checked = test.pattern == Pattern::latency && test.verb == Verb::write ? bytes - 1 : bytes;
          out.wrong = local_pattern(m.peer_world).count_wrong(m.target, checked);
        }
        break;
      case Verb::read:
        if (m.leader || both) out.wrong = target_pattern(m.peer_world).count_wrong(m.local, bytes);
        break;
      case Verb::atomic:
        if (!m.leader || both) {
          // fetch-and-add of 1 by every operation of the peer; compare-and-swap of 0 with 0 leaves 0.
          const std::uint64_t ops = m.settings.atomic == AtomicOp::fetch_add
                                        ? static_cast<std::uint64_t>(warmup + iterations) *
                                              (test.pattern == Pattern::bandwidth ? m.qps.size() : 1)
                                        : 0;
          std::uint64_t value = 0;
          m.target.copy_to_host(&value, 8);
          for (int b = 0; b < 8; ++b) out.wrong += ((value >> (8 * b)) & 0xff) != ((ops >> (8 * b)) & 0xff);
        }
        break;
    }
  }
  runtime::idle_barrier(m.comm);
  return out;
}

double VerbsLink::probe_iteration_s(const VerbsTest& test, std::uint64_t bytes) {
  auto& m = *impl_;
  const int iterations = test.pattern == Pattern::bandwidth ? 200 : 100;
  timing::IterationTimer timer(0);
  timer.start();
  run(test, bytes, iterations, 0, false);
  timer.stop();
  double mine = timer.elapsed_s() / iterations, theirs = 0;
  runtime::check_mpi(MPI_Sendrecv(&mine, 1, MPI_DOUBLE, m.peer, 72, &theirs, 1, MPI_DOUBLE, m.peer, 72, m.comm,
                                  MPI_STATUS_IGNORE),
                     "MPI_Sendrecv (probe)");
  return std::max(mine, theirs);
}

void VerbsLink::abort() noexcept {
  for (auto& qp : impl_->qps) qp->to_error();
}

std::string VerbsLink::states() const { return impl_->states(); }

const std::string& VerbsLink::registration() const { return impl_->local_mr.how(); }

}  // namespace fabricbench::verbs
