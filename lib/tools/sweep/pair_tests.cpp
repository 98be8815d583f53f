// fabric-sweep's point-to-point and collective pair tests: fabric-p2p's exchange and fabric-coll's measured case on
// a pair's own communicator, each figure computed by the tool's own function.
#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <utility>

#include "fabricbench/error.hpp"
#include "fabricbench/ops/collective.hpp"
#include "fabricbench/ops/p2p_exchange.hpp"
#include "fabricbench/test_hooks.hpp"
#include "fabricbench/timing/sample_stats.hpp"
#include "fabricbench/tools/sweep/pair_test.hpp"

namespace fabricbench::tools::sweep {
using namespace fabricbench::sweep;  // lib/sweep: what this tool runs
namespace {
double seconds_since(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

// --timeout's deadline from now.
std::chrono::steady_clock::time_point deadline_in(double timeout_s) {
  return std::chrono::steady_clock::now() +
         std::chrono::duration_cast<std::chrono::steady_clock::duration>(std::chrono::duration<double>(timeout_s));
}

// A p2p record from one end's measurement (over MPI or NCCL): what ran, what this end's NIC carried in the timed part
// (sent + received, for the data-path check) and, on the leader, the figure of what actually ran (a cut test's value
// is the bandwidth of what it moved) with its laps' median and p99.
void fill_p2p_record(PairRecord& rec, const ops::P2PTest& test, std::uint64_t bytes, const ops::PairMeasurement& r,
                     bool leader) {
  rec.iterations = r.iterations, rec.bytes = static_cast<std::int64_t>(bytes);
  rec.wrong = static_cast<std::int64_t>(r.wrong), rec.window = r.window, rec.cut = r.cut ? 1 : 0;
  rec.payload = static_cast<double>(bytes) * r.iterations *
                (test.ping_pong() ? 2.0 : (test.directions == 2 ? 2.0 : 1.0) * r.window);
  if (!leader) return;
  rec.value = test.pair_figure(bytes, r.window, r.iterations, r.elapsed_s);
  const auto stats = timing::SampleStats::of(r.laps_us);
  const double scale = test.ping_pong() ? 0.5 : 1.0;
  rec.median_us = stats.median * scale, rec.p99_us = stats.p99 * scale;
}
}  // namespace

std::string PairSlot::doing(int direction) const {
  const char* way = !m.both_directions ? "both" : direction == 0 ? "a->b" : "b->a";
  return fmt::format("pair {} - {}: {} {}", host_names[hosts.a], host_names[hosts.b], m.name,
                     m.collective() ? "" : way);
}

P2PPairTest::P2PPairTest(const std::vector<const SweepMetric*>& metrics, std::uint64_t bw_bytes,
                         std::uint64_t lat_bytes, int window, double pair_time_s, double pair_time_relative)
    : metrics_(metrics),
      bw_bytes_(bw_bytes),
      lat_bytes_(lat_bytes),
      window_(window),
      pair_time_s_(pair_time_s),
      pair_time_relative_(pair_time_relative),
      send_(memory::MemoryKind::host, std::max<std::uint64_t>({bw_bytes, lat_bytes, 1})),
      recv_(memory::MemoryKind::host, std::max<std::uint64_t>({bw_bytes, lat_bytes, 1})),
      fastest_(metrics.size() * 2, INFINITY),
      measured_(metrics.size() * 2, INFINITY) {
  budgets_ = {std::vector<double>(metrics.size() * 2, 0), std::vector<double>(metrics.size() * 2, 0), 0};
  if (const auto& hooks = TestHooks::current(); hooks.late_host >= 0)
    late_host_ = hooks.late_host, late_receives_s_ = hooks.late_ms / 1e3;
}

std::uint64_t P2PPairTest::bytes_of(const SweepMetric& m) const { return m.p2p().ping_pong() ? lat_bytes_ : bw_bytes_; }

void P2PPairTest::plan_round(const runtime::Communicator& world, const runtime::Communicator* pair) {
  const std::size_t slots = metrics_.size() * 2;
  budgets_ = {std::vector<double>(slots, 0), std::vector<double>(slots, 0), 0};
  if (pair_time_s_ <= 0) return;
  const auto probes_start = std::chrono::steady_clock::now();
  for (std::size_t k = 0; pair && k < metrics_.size(); ++k) {
    const auto& m = *metrics_[k];
    if (m.family != MetricFamily::p2p) continue;
    const auto& test = m.p2p();
    for (int direction = 0; direction < m.directions(); ++direction) {
      const int me = pair->rank();
      budgets_.probe_s[slot(static_cast<int>(k), direction)] = ops::probe_message_s(
          test, {pair->get(), me, 1 - me, me == direction, send_, recv_, bytes_of(m), 0, 0, window_, false, false});
    }
  }
  // The probes are link time, part of the pair's test (not the sweep's overhead in /sweep/rounds).
  budgets_.probing_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - probes_start).count();
  // The fastest pair so far, from what earlier rounds measured (a probe of a fresh connection runs in TCP's slow
  // start and would make the fast pairs look slow): every leader offers its own, the world takes the minimum.
  std::vector<double> fastest(slots);
  runtime::check_mpi(
      MPI_Allreduce(measured_.data(), fastest.data(), static_cast<int>(slots), MPI_DOUBLE, MPI_MIN, world.get()),
      "MPI_Allreduce");
  for (std::size_t i = 0; i < slots; ++i) {
    fastest_[i] = std::min(fastest_[i], fastest[i]);
    budgets_.budget_s[i] =
        std::isfinite(fastest_[i]) ? std::max(pair_time_s_, pair_time_relative_ * fastest_[i]) : pair_time_s_;
  }
}

std::vector<PairRecord> P2PPairTest::run(const PairSlot& s) {
  const auto& test = s.m.p2p();
  const auto& options = s.context.options;
  const auto bytes = bytes_of(s.m);
  const int iterations = s.m.defaults.iterations(bytes, options.iterations);
  const int warmup = s.m.defaults.warmup(bytes, options.warmup);
  const int me = s.pair.rank();
  std::vector<PairRecord> out;
  for (int direction = 0; direction < s.m.directions(); ++direction) {
    const bool leader = me == direction;
    s.context.doing(s.doing(direction));
    ops::Exchanger x{s.pair.get(), me,         1 - me, leader,  send_,         recv_,
                     bytes,        iterations, warmup, window_, options.check, false};
    x.budget_s = budgets_.budget_s[slot(s.metric, direction)];
    x.probe_s = budgets_.probe_s[slot(s.metric, direction)];
    const auto measure_start = std::chrono::steady_clock::now();
    const auto r = ops::run_exchange(test, x);
    auto rec = s.record(direction);
    rec.measure_s = seconds_since(measure_start);
    fill_p2p_record(rec, test, bytes, r, leader);
    if (leader) {
      // How long the whole requested test would take at the speed measured (for the next rounds' budgets).
      const double per_message_s = r.elapsed_s / (static_cast<double>(r.iterations) * r.window);
      const double full_s = per_message_s * (iterations + warmup) * (test.ping_pong() ? 1 : window_);
      auto& fastest = measured_[slot(s.metric, direction)];
      fastest = std::min(fastest, full_s);
    }
    out.push_back(rec);
  }
  return out;
}

std::optional<PairRecord> PairTest::shift(const app::RunContext&, const runtime::Communicator&, const SweepMetric& m,
                                          int, const ShiftStep&) {
  throw Error::internal(fmt::format("fabric-sweep: no shift step for {} over this pair test", m.name));
}

namespace {
// A shift step's exchange (its test: receive a window while sending one), run by `run` from the Exchanger made here,
// and its record: one direction's bytes over the steps' times until `to` had them (the later of this node's sends and
// `to`'s receives, per step: over MPI, mpiGraph's send bandwidth where the window outgrows the socket buffers, the
// link's otherwise).
template <class Run>
std::optional<PairRecord> shift_step(const app::RunContext& context, const runtime::Communicator& ring,
                                     const SweepMetric& m, int round, const ShiftStep& step, memory::Buffer& send,
                                     memory::Buffer& recv, std::uint64_t bytes, int window, Run&& run) {
  const auto& o = context.options;
  const int iterations = m.defaults.iterations(bytes, o.iterations), warmup = m.defaults.warmup(bytes, o.warmup);
  const int host = step.host, to = step.to;
  ops::Exchanger x{ring.get(), host, to, true, send, recv, bytes, iterations, warmup, window, o.check, false};
  x.from = step.from, x.mpigraph_steps = true;
  const auto measure_start = std::chrono::steady_clock::now();
  const ops::PairMeasurement r = run(*ops::find_p2p_test("bibw"), x);
  // The steps this link ended (on GPUs a step past --timeout stops every link's; over MPI all of them): none, and
  // not hung, is no record (not measured: the pair is not tested).
  const int done = static_cast<int>(r.laps_us.size());
  if (to == MPI_PROC_NULL || (done == 0 && !r.hung)) return std::nullopt;
  const auto stats = timing::SampleStats::of(r.laps_us);
  auto rec = PairRecord::of(round, {host, to}, 0, 0);
  rec.measure_s = seconds_since(measure_start);
  rec.iterations = done, rec.bytes = static_cast<std::int64_t>(bytes), rec.wrong = static_cast<std::int64_t>(r.wrong);
  rec.hung = r.hung ? 1 : 0;
  if (!r.hung) rec.value = ops::find_p2p_test("bw")->pair_figure(bytes, window, done, r.elapsed_s);
  rec.median_us = stats.median, rec.p99_us = stats.p99, rec.window = window;
  return rec;
}
}  // namespace

std::optional<PairRecord> P2PPairTest::shift(const app::RunContext& context, const runtime::Communicator& ring,
                                             const SweepMetric& m, int round, const ShiftStep& step) {
  return shift_step(context, ring, m, round, step, send_, recv_, bw_bytes_, window_,
                    [&](const ops::P2PTest& test, ops::Exchanger& x) {
                      if (step.host == late_host_) x.late_receives_s = late_receives_s_;
                      return ops::run_exchange(test, x);
                    });
}

namespace {

class CollPairTest : public PairTest {
 public:
  CollPairTest(ops::BackendKind backend, int gpu, std::uint64_t bytes, std::uint64_t latency_bytes, int window,
               NcclComms comms)
      : backend_(backend), gpu_(gpu), bytes_(bytes), latency_bytes_(latency_bytes), window_(window), comms_(comms) {}

  // NCCL with --nccl-comms split: one parent over the world, made at the first round; each round every rank splits
  // it and the pair's back end adopts the child. Any failure, and any hang, turns the rest of the sweep to one
  // ncclCommInitRank per pair (run()), said once in a note.
  void begin_round(const app::RunContext& context, const runtime::Communicator* group, int color, int key,
                   int comms) override {
    end_round();
    if (backend_ != ops::BackendKind::nccl || init_per_pair_) return;
    const auto note = [&](const std::string& text) {
      if (context.is_root()) context.out->note(text);
    };
    if (comms_ == NcclComms::init) {
      note("NCCL pair communicators: ncclCommInitRank per pair, metric and round (--nccl-comms init)");
      init_per_pair_ = true;  // said once
      return;
    }
    const double timeout_s = context.options.timeout_s;
    try {
      if (!splitter_) {
        const auto start = std::chrono::steady_clock::now();
        splitter_ = ops::make_nccl_splitter(context.world, gpu_, timeout_s > 0, timeout_s);
        const double created_s = seconds_since(start);
        if (context.is_root()) context.out->attribute("nccl_parent_s", created_s);
        note(
            fmt::format("NCCL parent communicator over all {} ranks: created once in {:.3f} s (rank 0; not in any "
                        "pair's setup_s); each round's pair communicators are split from it ({})",
                        context.world.size(), created_s, splitter_->sharing()));
      }
      const auto start = std::chrono::steady_clock::now();
      for (int k = 0; k < comms; ++k)
        round_.push_back(splitter_->split(color < 0 ? color : color * comms + k, key, group));
      round_setup_s_ = seconds_since(start);
    } catch (const ops::SplitGivenUp& e) {
      note(fmt::format("NCCL pair communicators: ncclCommInitRank per pair from here on ({}: {})",
                       splitter_ ? "the split was given up" : "no parent communicator", e.what()));
      init_per_pair_ = true;
      splitter_.reset();
    }
  }

  void end_round() override {
    round_.clear();
    round_setup_s_ = 0;
  }

  // A shift step between the ring's GPUs over the round's communicators (begin_round with the ring as its group and
  // the round's lanes), else back ends of its own over the ring: the sends on the step's send lane, the receives on
  // its receive lane. With --timeout the steps have a deadline: past it the communicators are aborted on every rank
  // of the ring, and the links it stopped are hung records.
  std::optional<PairRecord> shift(const app::RunContext& context, const runtime::Communicator& ring,
                                  const SweepMetric& m, int round, const ShiftStep& step) override {
    const double timeout_s = context.options.timeout_s;
    const auto setup_start = std::chrono::steady_clock::now();
    std::vector<std::unique_ptr<ops::CollBackend>> own;
    if (round_.empty())
      for (int k = 0; k < step.lanes; ++k) own.push_back(ops::make_backend(backend_, ring, gpu_, false, timeout_s > 0));
    auto& lanes = round_.empty() ? own : round_;
    const double setup_s = seconds_since(setup_start) + std::exchange(round_setup_s_, 0.0);
    device_buffers();
    if (timeout_s > 0)
      for (auto& lane : lanes) lane->set_deadline(deadline_in(timeout_s));
    ops::CollBackend& sends = *lanes.at(static_cast<std::size_t>(step.send_lane));
    ops::CollBackend& receives = *lanes.at(static_cast<std::size_t>(step.receive_lane));
    auto rec = shift_step(context, ring, m, round, step, *send_, *recv_, bytes_, window_,
                          [&](const ops::P2PTest&, const ops::Exchanger& x) {
                            return sends.shift_steps(x, receives, {step.send_lane, step.receive_lane, step.lanes});
                          });
    if (rec) rec->setup_s = setup_s;
    if (ring.all_sum(static_cast<std::uint64_t>(rec && rec->hung)) > 0) {  // every rank of the ring agrees, over MPI
      for (auto& lane : lanes) lane->abort();
      own.clear(), round_.clear();
    }
    return rec;
  }

  std::vector<PairRecord> run(const PairSlot& s) override {
    const auto& options = s.context.options;
    s.context.doing(s.doing(2));
    const auto setup_start = std::chrono::steady_clock::now();
    // The round's split communicator (its split timed in begin_round, counted on the round's first collective), else
    // a back end of its own.
    std::unique_ptr<ops::CollBackend> own;
    if (round_.empty()) own = ops::make_backend(backend_, s.pair, gpu_, false, options.timeout_s > 0);
    ops::CollBackend& backend = round_.empty() ? *own : *round_.front();
    const double setup_s = seconds_since(setup_start) + std::exchange(round_setup_s_, 0.0);
    if (s.m.family == MetricFamily::p2p) {
      bool hung = false;
      auto records = run_p2p(s, backend, setup_s, hung);
      if (hung) own.reset(), round_.clear();  // aborted on every rank of the pair
      return records;
    }
    const auto* op = &s.m.op();
    backend.allocate(bytes_, bytes_);
    const ops::CollCase c{op, ops::DataType::float32, ops::RedOp::sum, 0, false, op->counts(bytes_ / 4, s.pair.size())};
    const int iterations = s.m.defaults.iterations(bytes_, options.iterations);
    const int warmup = s.m.defaults.warmup(bytes_, options.warmup);
    // With --timeout, a back end that can abort one communicator (NCCL) bounds the pair: a hang becomes a verdict.
    if (options.timeout_s > 0) backend.set_deadline(deadline_in(options.timeout_s));
    ops::CaseResult r;
    std::uint64_t hung = 0;
    const auto measure_start = std::chrono::steady_clock::now();
    try {
      r = ops::run_case(backend, c, {ops::TimingMode::host, warmup, iterations, 0}, s.pair, options.check);
    } catch (const ops::Hung&) {
      hung = 1;
    }
    auto rec = s.record(2);
    rec.iterations = iterations, rec.window = 1, rec.setup_s = setup_s, rec.measure_s = seconds_since(measure_start);
    if (s.pair.all_sum(hung) > 0) {  // every rank of the pair agrees, over MPI, which still works
      backend.abort();               // on every end: a communicator whose peer gave up is not destroyed with it
      own.reset(), round_.clear();
      rec.hung = 1;
      return {rec};
    }
    const auto times = s.pair.gather_values(r.timing.seconds_per_op, 0);
    const auto wrong = s.pair.sum(r.wrong, 0);
    const auto bytes = c.counts.bytes(4);
    // What this rank's NIC carried (sent + received): the bus factor's share of the buffer each way.
    const double factor = op->busbw_gbps(bytes, 1.0, s.pair.size()) * 1e9 / static_cast<double>(bytes);
    rec.payload = 2.0 * factor * static_cast<double>(bytes) * iterations;
    if (s.pair.rank() != 0) return {rec};  // no figure: rank 0 merges it into the leader's (its payload counts)
    const double seconds = ops::combine_rank_times(times, ops::RankCombine::average);
    rec.bytes = static_cast<std::int64_t>(bytes), rec.wrong = static_cast<std::int64_t>(wrong);
    rec.value = op->busbw_gbps(bytes, seconds, s.pair.size());
    rec.median_us = seconds * 1e6;
    return {rec};
  }

 private:
  // A p2p metric between the pair's GPUs: the first rank of each node (ranks 0 and half of the pair's communicator,
  // node a's ranks first; with rails the rail's two) exchange over the back end's NCCL communicator, as OSU's xccl
  // tests, with the records P2PPairTest gives (the leader's carries the figure). No time budget: the full counts.
  // With --timeout each direction has a deadline: past it the communicator is aborted on both ends and the pair is a
  // hung record and `aborted` is set on every rank of the pair, as for the collective metrics.
  std::vector<PairRecord> run_p2p(const PairSlot& s, ops::CollBackend& backend, double setup_s, bool& aborted) {
    const auto& test = s.m.p2p();
    const auto& options = s.context.options;
    const std::uint64_t bytes = test.ping_pong() ? latency_bytes_ : bytes_;
    const int half = s.pair.size() / 2, me = s.pair.rank();
    const bool end = me == 0 || me == half;
    const auto ends = s.pair.split(end ? 0 : MPI_UNDEFINED, me);
    std::uint64_t hung = 0;
    std::vector<PairRecord> out;
    if (end) {
      device_buffers();
      const int iterations = s.m.defaults.iterations(bytes, options.iterations);
      const int warmup = s.m.defaults.warmup(bytes, options.warmup);
      for (int direction = 0; direction < s.m.directions() && !hung; ++direction) {
        const bool leader = (me == 0) == (direction == 0);
        s.context.doing(s.doing(direction));
        const ops::Exchanger x{ends.get(), me,      me == 0 ? half : 0, leader, *send_, *recv_, bytes, iterations,
                               warmup,     window_, options.check,      false};
        if (options.timeout_s > 0) backend.set_deadline(deadline_in(options.timeout_s));
        const auto measure_start = std::chrono::steady_clock::now();
        auto rec = s.record(direction);
        rec.setup_s = direction == 0 ? setup_s : 0;
        try {
          const auto r = backend.exchange(test, x);
          rec.measure_s = seconds_since(measure_start);
          fill_p2p_record(rec, test, bytes, r, leader);
        } catch (const ops::Hung&) {
          hung = 1;
          rec.measure_s = seconds_since(measure_start);
        }
        hung = ends.all_sum(hung);  // both ends agree, over MPI, which still works
        if (hung) rec.hung = 1;
        out.push_back(rec);
      }
    }
    aborted = s.pair.all_sum(me == 0 ? hung : 0) > 0;  // the pair's other ranks learn it too
    if (aborted) backend.abort();  // on every rank: a communicator whose peer gave up is not destroyed with it
    return out;
  }

  void device_buffers() {
    if (send_) return;
    send_.emplace(memory::MemoryKind::device, std::max<std::uint64_t>({bytes_, latency_bytes_, 1}));
    recv_.emplace(memory::MemoryKind::device, send_->size());
  }

  ops::BackendKind backend_;
  int gpu_;
  std::uint64_t bytes_, latency_bytes_;
  int window_;
  std::optional<memory::Buffer> send_, recv_;  // device buffers of the p2p metrics, made at their first test
  NcclComms comms_;
  bool init_per_pair_ = false;  // NCCL: one ncclCommInitRank per pair from here on (--nccl-comms init, or a fall-back)
  std::unique_ptr<ops::CommSplitter> splitter_;           // declared before round_: a child goes before its parent
  std::vector<std::unique_ptr<ops::CollBackend>> round_;  // this round's back ends over the split communicators
  double round_setup_s_ = 0;                              // its split, on this rank
};

}  // namespace

std::unique_ptr<PairTest> make_coll_pair_test(ops::BackendKind backend, int gpu, std::uint64_t bytes,
                                              std::uint64_t latency_bytes, int window, NcclComms comms) {
  return std::make_unique<CollPairTest>(backend, gpu, bytes, latency_bytes, window, comms);
}

}  // namespace fabricbench::tools::sweep
