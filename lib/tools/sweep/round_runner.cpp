// fabric-sweep's round runner (round_runner.hpp): one round on this rank, in one of three kinds (a ring: the shift
// pattern's step or a duplex round; --rails' rail pairs; pairs of hosts), each metric's pair test with the host's links
// read around it, then the wait for the round's other pairs and every rank's records gathered to rank 0.
#include "fabricbench/tools/sweep/round_runner.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <tuple>

#include "fabricbench/facts/rail_nic.hpp"

namespace fabricbench::tools::sweep {
using namespace fabricbench::sweep;  // lib/sweep: what this tool runs

void RoundRunner::start(const app::RunContext& context, bool nvlink, const std::string& counter_nic) {
  links_ = facts::LinkWatch(context.world, context.placement.me().host, nvlink);
  if (job_.rails > 1) host_comm_ = context.world.split(job_.host_of_rank[context.world.rank()], context.world.rank());
  counter_nic_ = counter_nic;
}

// A round in flight on this rank: what it measured and what each step cost.
struct RoundRunner::Step {
  Result result;
  std::vector<PairRecord> mine;     // this rank's records
  std::vector<NicTraffic> traffic;  // --rails: this rank's NIC bytes around the round
  static double since(std::chrono::steady_clock::time_point t0) {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  }
  // A communicator split: setup.
  template <class Make>
  runtime::Communicator split(Make&& make) {
    const auto t0 = std::chrono::steady_clock::now();
    auto comm = make();
    result.split_s += since(t0);
    return comm;
  }
  // A step whose time goes to `into` (the back end's round communicator made, or released).
  template <class Do>
  void clocked(double& into, Do&& step) {
    const auto t0 = std::chrono::steady_clock::now();
    step();
    into += since(t0);
  }
  // This rank's pair tests: their time and records.
  template <class Measure>
  void timed(Measure&& measure) {
    const auto t0 = std::chrono::steady_clock::now();
    auto records = measure();
    result.test_s += since(t0);
    mine.insert(mine.end(), records.begin(), records.end());
  }
};

namespace {

// The index of the round's pair host `h` belongs to (-1: none) and its end (0: a, 1: b).
std::pair<int, int> pair_of(const Round& round, int h) {
  for (std::size_t p = 0; p < round.pairs.size(); ++p)
    if (round.pairs[p].a == h || round.pairs[p].b == h) return {static_cast<int>(p), round.pairs[p].a == h ? 0 : 1};
  return {-1, 0};
}

}  // namespace

RoundRunner::Result RoundRunner::run(const app::RunContext& context, const Pass& pass, const Round& round, int index,
                                     RoundKind kind) {
  const auto& world = context.world;
  Step step;
  if (round.duplex || (job_.directed && kind == RoundKind::sweep))
    run_ring(context, round, index, step);
  else if (job_.rails > 1)
    run_rails(context, pass, round, index, step);
  else
    run_hosts(context, pass, round, index, step);
  for (auto& r : step.mine) r.test_s = step.result.test_s;
  if (!step.mine.empty()) step.mine.front().setup_s += step.result.split_s;  // the splits are the pair's, paid once
  context.doing("waiting for the round's other pairs");
  step.clocked(step.result.wait_s, [&] { runtime::idle_barrier(world.get()); });
  step.result.measured_at = std::chrono::steady_clock::now();
  context.measured();
  for (const auto& theirs : world.gather_arrays(step.mine, 0))
    step.result.records.insert(step.result.records.end(), theirs.begin(), theirs.end());
  if (job_.rails > 1)
    for (const auto& theirs : world.gather_arrays(step.traffic, 0))
      step.result.traffic.insert(step.result.traffic.end(), theirs.begin(), theirs.end());
  return std::move(step.result);
}

bool RoundRunner::collectives_run(const Pass& pass) const {
  return tests_.coll &&
         std::any_of(job_.metrics.begin(), job_.metrics.end(), [&](auto* m) { return on_gpus(*m) && !pass.rests(*m); });
}

void RoundRunner::run_ring(const app::RunContext& context, const Round& round, int index, Step& step) {
  const auto& world = context.world;
  const int h = job_.host_of_rank[world.rank()];
  const bool in_ring = job_.rails > 1 || context.placement.me().local_rank == 0;
  const int rail = job_.rails > 1 ? job_.local_rank : 0;
  const auto ring = step.split([&] { return world.split(in_ring ? rail : MPI_UNDEFINED, h); });
  // The one metric (a one-way p2p figure): over MPI, or GPU to GPU over the back end's communicators of the ring, one
  // per lane (Round::lanes: a host sends on one and receives on another).
  const auto& m = *job_.metrics.front();
  const bool gpus = on_gpus(m);
  PairTest& test = gpus ? *tests_.coll : static_cast<PairTest&>(*tests_.p2p);
  const auto lanes = round.lanes();
  const int lane_count = lanes.empty() ? 1 : 1 + *std::max_element(lanes.begin(), lanes.end());
  if (gpus)
    step.clocked(step.result.begin_s, [&] {
      test.begin_round(context, ring.empty() ? nullptr : &ring, ring.empty() ? -1 : rail, h, lane_count);
    });
  if (!ring.empty()) {
    int out = -1, in = -1;  // the pairs this host sends in (as a) and receives in (as b)
    for (std::size_t p = 0; p < round.pairs.size(); ++p) {
      if (round.pairs[p].a == h) out = static_cast<int>(p);
      if (round.pairs[p].b == h) in = static_cast<int>(p);
    }
    const int to = out >= 0 ? round.pairs[out].b : MPI_PROC_NULL, from = in >= 0 ? round.pairs[in].a : MPI_PROC_NULL;
    const int out_lane = out >= 0 ? lanes[out] : in >= 0 ? lanes[in] : 0, in_lane = in >= 0 ? lanes[in] : out_lane;
    const auto name = [&](int host) { return host == MPI_PROC_NULL ? std::string("none") : job_.hosts[host]; };
    step.timed([&] {
      std::vector<PairRecord> out_records;
      for (int phase = 0; phase < (round.duplex ? 2 : 1); ++phase) {  // a -> b, then (duplex) b -> a
        const ShiftStep s = phase == 0 ? ShiftStep{h, to, from, out_lane, in_lane, lane_count}
                                       : ShiftStep{h, from, to, in_lane, out_lane, lane_count};
        context.doing(fmt::format("{} {}: sending to {} while receiving from {}",
                                  round.duplex ? "duplex round" : "shift step", job_.hosts[h], name(s.to),
                                  name(s.from)));
        auto rec = test.shift(context, ring, m, index, s);
        if (rec) {
          if (phase == 1) rec->a = s.to, rec->b = h, rec->direction = 1;
          rec->rail = rail;
          out_records.push_back(*rec);
        }
        // A step past --timeout aborted the ring's communicators (GPUs): the round ends on every rank of the ring.
        if (gpus && ring.all_sum(static_cast<std::uint64_t>(rec && rec->hung)) > 0) break;
      }
      return out_records;
    });
  }
  if (gpus) step.clocked(step.result.teardown_s, [&] { test.end_round(); });
}

void RoundRunner::run_rails(const app::RunContext& context, const Pass& pass, const Round& round, int index,
                            Step& step) {
  // Rails: the pair's communicator (every rank of both nodes) split by local rank, as nccl-tests'
  // NCCL_TESTS_SPLIT_MASK does: rail i's two ranks run every metric, all rails at once.
  const auto& world = context.world;
  const int me = world.rank();
  int k = 0, role = 0;  // not a structured binding: the lambdas below capture them (C++17)
  std::tie(k, role) = pair_of(round, job_.host_of_rank[me]);
  const bool collectives = collectives_run(pass);
  const auto pair = step.split([&] { return world.split(k >= 0 ? k : MPI_UNDEFINED, role * world.size() + me); });
  runtime::Communicator rail;
  if (!pair.empty()) rail = step.split([&] { return pair.split(job_.local_rank, role); });
  if (tests_.p2p) tests_.p2p->plan_round(world, rail.empty() ? nullptr : &rail);
  // The rail's collective communicator: the pair's and rail's color, in the rail communicator's order.
  if (collectives)
    step.clocked(step.result.begin_s, [&] {
      tests_.coll->begin_round(context, rail.empty() ? nullptr : &rail,
                               rail.empty() ? -1 : k * job_.rails + job_.local_rank, role);
    });
  if (!rail.empty()) {
    if (tests_.p2p) step.result.test_s += tests_.p2p->probing_s();
    step.timed([&] { return measure_rail(context, pass, rail, index, round.pairs[k], step.traffic); });
  }
  if (collectives) step.clocked(step.result.teardown_s, [&] { tests_.coll->end_round(); });
}

void RoundRunner::run_hosts(const app::RunContext& context, const Pass& pass, const Round& round, int index,
                            Step& step) {
  const auto& world = context.world;
  const int me = world.rank();
  int k = 0, role = 0;  // not a structured binding: the lambdas below capture them (C++17)
  std::tie(k, role) = pair_of(round, job_.host_of_rank[me]);
  const bool host_leader = context.placement.me().local_rank == 0;
  const bool any_host_level =
      std::any_of(job_.metrics.begin(), job_.metrics.end(), [&](auto* m) { return !on_gpus(*m); });
  if (any_host_level) {  // one rank per node
    const auto pair = step.split([&] { return world.split(k >= 0 && host_leader ? k : MPI_UNDEFINED, role); });
    if (tests_.p2p) tests_.p2p->plan_round(world, pair.empty() ? nullptr : &pair);
    if (!pair.empty()) {
      if (tests_.p2p) step.result.test_s += tests_.p2p->probing_s();  // the probes are link time, the pair's test
      step.timed([&] { return measure_pair(context, pass, pair, index, round.pairs[k], true); });
    }
  }
  if (tests_.coll) {  // every rank of both nodes
    const auto pair = step.split([&] { return world.split(k >= 0 ? k : MPI_UNDEFINED, role * world.size() + me); });
    // The same color and key for the back end's own communicator (NCCL: split from one parent, collective).
    if (collectives_run(pass))
      step.clocked(step.result.begin_s, [&] {
        tests_.coll->begin_round(context, pair.empty() ? nullptr : &pair, k, role * world.size() + me);
      });
    if (!pair.empty()) step.timed([&] { return measure_pair(context, pass, pair, index, round.pairs[k], false); });
    step.clocked(step.result.teardown_s, [&] { tests_.coll->end_round(); });
  }
}

std::vector<PairRecord> RoundRunner::measure_pair(const app::RunContext& context, const Pass& pass,
                                                  const runtime::Communicator& pair, int round_index,
                                                  const HostPair& hosts, bool host_level) {
  std::vector<PairRecord> out;
  // The first rank of each host reads its links around each metric: the records say on which end they grew.
  const int my_host = job_.host_of_rank[context.world.rank()];
  for (std::size_t k = 0; k < job_.metrics.size(); ++k) {
    const auto& m = *job_.metrics[k];
    if ((job_.rails == 1 && on_gpus(m) == host_level) || pass.rests(m)) continue;
    PairTest& test = m.family == MetricFamily::rdma ? *tests_.rdma
                     : on_gpus(m)                   ? *tests_.coll
                                                    : static_cast<PairTest&>(*tests_.p2p);
    const PairSlot slot{
        context, pair, round_index, hosts, job_.rails > 1 ? job_.local_rank : 0, static_cast<int>(k), m, job_.hosts};
    auto [records, grown] = links_.around([&] { return test.run(slot); });
    // A reader whose rank holds no figure of the pair (the b end of a collective) still sends its links' growth.
    if (records.empty() && links_.reads()) records.push_back(slot.record(0));
    if (!records.empty()) {
      // One growth per metric, on its first record only, so that sums over records count it once.
      auto& first = records.front();
      const int end = first.end_of(my_host);
      first.port_errors[end] = grown.port_errors, first.xmit_wait[end] = grown.xmit_wait;
      first.nvlink_errors[end] = grown.nvlink_errors;
    }
    out.insert(out.end(), records.begin(), records.end());
    if (std::any_of(records.begin(), records.end(), [](const PairRecord& r) { return r.hung; }))
      break;  // the pair's other metrics would hang the same way
  }
  return out;
}

std::vector<PairRecord> RoundRunner::measure_rail(const app::RunContext& context, const Pass& pass,
                                                  const runtime::Communicator& rail, int round_index,
                                                  const HostPair& hosts, std::vector<NicTraffic>& traffic) {
  const auto files = facts::HostFiles::for_host(context.placement.me().host);
  const auto device = facts::counter_device(counter_nic_);
  context.doing("waiting for this host's other rails to start");
  runtime::idle_barrier(host_comm_.get());  // the host's rails start together...
  const double before = facts::nic_bytes(files, device);
  auto records = measure_pair(context, pass, rail, round_index, hosts, true);
  context.doing("waiting for this host's other rails to finish");
  runtime::idle_barrier(host_comm_.get());  // ...so that each NIC's counters cover every rail's tests
  NicTraffic t;
  t.round = round_index, t.host = job_.host_of_rank[context.world.rank()], t.rail = job_.local_rank;
  t.bytes = facts::nic_bytes(files, device) - before;
  for (const auto& r : records) t.payload += r.payload;
  traffic.push_back(t);
  return records;
}

}  // namespace fabricbench::tools::sweep
