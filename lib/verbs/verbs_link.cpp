#include "fabricbench/verbs/verbs_link.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <random>

#include "fabricbench/error.hpp"
#include "fabricbench/runtime/mpi.hpp"
#include "fabricbench/timing/iteration_timer.hpp"
#include "verbs_link_impl.hpp"

namespace fabricbench::verbs {
namespace {

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
  limits.ack_timeout = settings.qp_timeout;
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
  runtime::check_mpi(
      MPI_Sendrecv(mine.data(), static_cast<int>(mine.size() * sizeof(Endpoint)), MPI_BYTE, peer, 71, m.remote.data(),
                   static_cast<int>(m.remote.size() * sizeof(Endpoint)), MPI_BYTE, peer, 71, comm, MPI_STATUS_IGNORE),
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
      out.bandwidth =
          ops::perftest_bandwidth(bytes, posted, completed, out.cq_mod, posted.size() <= ops::perftest_peak_limit);
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
  runtime::check_mpi(
      MPI_Sendrecv(&mine, 1, MPI_DOUBLE, m.peer, 72, &theirs, 1, MPI_DOUBLE, m.peer, 72, m.comm, MPI_STATUS_IGNORE),
      "MPI_Sendrecv (probe)");
  return std::max(mine, theirs);
}

void VerbsLink::abort() noexcept {
  for (auto& qp : impl_->qps) qp->to_error();
}

std::string VerbsLink::states() const { return impl_->states(); }

const std::string& VerbsLink::registration() const { return impl_->local_mr.how(); }

}  // namespace fabricbench::verbs
