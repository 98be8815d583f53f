#include "fabricbench/tools/sweep/sweep_benchmark.hpp"

#include "fabricbench/cli/ini_file.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <fstream>
#include <iterator>
#include <map>
#include <sstream>
#include <thread>

#include "fabricbench/app/shipped_files.hpp"
#include "fabricbench/cli/byte_size.hpp"
#include "fabricbench/cli/name_list.hpp"
#include "fabricbench/memory/buffer.hpp"
#include "fabricbench/ops/bandwidth.hpp"
#include "fabricbench/tools/coll/coll_benchmark.hpp"
#include "fabricbench/ops/p2p_exchange.hpp"
#include "fabricbench/runtime/gpu.hpp"
#include "fabricbench/sweep/adaptive_plan.hpp"
#include "fabricbench/timing/sample_stats.hpp"

namespace fabricbench::sweep {
std::string SweepBenchmark::summary() const {
  std::string s = "fabric-sweep: every node pair of the job, the pairs of each round at once; names the bad node or link.\n"
                  "Ranks are grouped by host; -b/-e/--sizes give the bandwidth message size (the largest).\nMetrics:";
  for (const auto& m : sweep_metrics()) s += fmt::format("\n  {:12} {}", m.name, m.description);
  return s;
}

void SweepBenchmark::add_options(cli::po::options_description& options) {
  namespace po = cli::po;
  options.add_options()
      ("plan", po::value<std::string>(), "all-pairs (circle method), quick (node i with i+N/2), shift (mpiGraph; p2p_bw only) or adaptive (rounds chosen from the results so far: random pairs, slow hosts re-paired with clean ones, slow pairs confirmed, pairs inside a leaf where an uplink is suspect; it re-tests by itself); --pattern is the same option")
      ("seed", po::value<long long>()->default_value(1), "--plan adaptive: the seed of its random pairs (the same seed, hosts and results give the same rounds)")
      ("pattern", po::value<std::string>()->default_value("all-pairs"), "the same as --plan")
      ("budget", po::value<std::string>(), "a time limit on the whole sweep (15m, 1h, 90s): rounds run while the next one fits, judged from the rounds measured so far; the end of the run says which pairs were not covered (/sweep/untested)")
      ("dry-run", "measure nothing: print the plan (rounds, pairs per round) and its estimated time, and with --budget how much of it fits")
      ("hosts", po::value<long long>(), "with --dry-run: plan for this many hosts instead of the job's (one process is enough)")
      ("hostfile", po::value<std::string>(), "with --dry-run: plan for the hosts of this file (one per line, the first word; '#' comments), e.g. for --topology")
      ("pair-time-estimate", po::value<std::string>(), "the time of one round's pair tests (all metrics) before any was measured, for --dry-run and --budget; default: --pair-time per metric and direction")
      ("pairs-file", po::value<std::string>(), "rounds from a file, lines 'ROUND HOST_A HOST_B' (instead of --pattern)")
      ("metric", po::value<std::string>()->default_value("p2p_bw,p2p_latency"),
       ("comma list of " + cli::name_choices(cli::names_of(sweep_metrics(), [](const SweepMetric& m) { return m.name; }))).c_str())
      ("lat-bytes", po::value<std::string>()->default_value("8"), "message size of p2p_latency")
      ("window,W", po::value<long long>()->default_value(64), "messages in flight for the bandwidth metrics")
      ("pair-time", po::value<std::string>()->default_value("2s"), "time budget of one p2p pair test (per metric and direction): a slower pair runs fewer iterations (or a smaller window) and reports what it moved; 0: none")
      ("pair-time-relative", po::value<double>()->default_value(1.5), "after the first round the budget is at least this many times the fastest pair's full test time measured so far")
      ("qp-timeout", po::value<int>()->default_value(14), "the rdma metrics' local ACK timeout 0-31, 4.096 us x 2^N before a retransmission (perftest -u)")
      ("retest", po::value<long long>()->default_value(1), "times each suspect pair is re-tested, also against good nodes; a pair that turns suspect after a re-test gets its own (0: none)")
      ("rules", po::value<std::string>()->default_value(app::shipped_config("sweep.ini")), "verdict rules (INI); default: the shipped configs/sweep.ini ($FABRICBENCH_DATA_DIR or <bin>/../share/fabricbench)")
      ("backend", po::value<std::string>()->default_value("auto"), "collective metrics: nccl, mpi, or auto")
      ("nccl-comms", po::value<std::string>()->default_value("split"), "collective metrics with NCCL: split (each round's pair communicators split from one communicator over the job, made once: ncclCommSplit) or init (a fresh ncclCommInitRank per pair, metric and round); split falls back to init after a hang or where it fails")
      ("sequential", "test the pairs of a round one after another (to measure what running them at once saves)")
      ("rails", po::value<int>()->implicit_value(0), "every local rank takes part: local rank i of one node tests local rank i of the other (rail i), all rails at once, every metric; rows and verdicts name the rail and NIC")
      ("rail-map", po::value<std::string>(), "with --rails: the NIC of each rail, lines 'RAIL rdma=DEVICE[:PORT] net=INTERFACE' (the launcher's file); the rdma metrics open rail i's device and the data-path check reads its counters")
      ("topology", po::value<std::string>(), "the switch tree in Slurm's topology.conf format (SwitchName= Nodes=|Switches= [Rail=]); several files, comma-separated, are one per rail: adds leaf switch and uplink verdicts and makes sure every pair of leaves is crossed on every rail")
      ("resume", po::value<std::string>(), "continue the sweep of this HDF5 file (a run that hung, was killed or failed): skip every pair it finished, append to it, end as if run in one go; same options, and its hosts less those excluded")
      ("repeat", po::value<long long>(), "a continuous mesh: run the sweep this many passes (0: until stopped; SIGTERM, or SIGUSR1 to mpirun, stops it after the pass in flight), each judged on its own; the passes go to one file (/sweep/passes, the pass column), and a verdict that appears or goes is named with its pass (/sweep/changes)")
      ("bw-every", po::value<long long>(), "with --repeat: the bandwidth metrics (p2p_bw, p2p_bibw, rdma_bw, allreduce, sendrecv) run only in every K-th pass, the latency ones in every pass; a pass is judged with the last bandwidth figures")
      ("every", po::value<std::string>(), "with --repeat: start a pass this often (30s, 5m; default 0: back to back); a pass that overruns starts the next at once")
      ("prometheus", po::value<std::string>(), "write the figures, verdicts and pass in Prometheus' text format to this .prom file (node_exporter's textfile collector), replaced whole after each pass")
      ("exclude", po::value<std::string>(), "with --resume: go on without these hosts (comma-separated; a host the earlier part named hung is left out by itself); their pairs are recorded as not tested (/sweep/untested)");
}

void SweepBenchmark::configure(const cli::po::variables_map& v, const cli::CommonOptions& common,
                               const runtime::Placement& placement) {
  dry_run_ = v.count("dry-run") > 0;
  planned_ = v.count("hosts") || v.count("hostfile");
  host_of_rank_.clear();
  if (planned_) {  // --dry-run for hosts other than the job's: R ranks per host with --rails=R
    hosts_ = planned_hosts(v);
    const int per = v.count("rails") ? v["rails"].as<int>() : 1;
    if (per < 1) throw Error::usage("--rails with --hosts/--hostfile: give the rails per host, --rails=8");
    for (std::size_t h = 0; h < hosts_.size(); ++h) host_of_rank_.insert(host_of_rank_.end(), static_cast<std::size_t>(per), static_cast<int>(h));
  } else {
    hosts_ = placement.hosts();
    if (hosts_.size() < 2)
      throw Error::usage(fmt::format("fabric-sweep tests pairs of nodes and this job has 1 host ({}); launch it across 2 "
                                     "or more nodes (ranks are grouped by host name), or plan with --dry-run --hosts N",
                                     hosts_.front()));
    for (const auto& r : placement.ranks())
      host_of_rank_.push_back(static_cast<int>(std::find(hosts_.begin(), hosts_.end(), r.host) - hosts_.begin()));
    for (const auto& r : placement.ranks()) ranks_per_host_ = std::max(ranks_per_host_, r.local_size);
  }
  const int n = static_cast<int>(hosts_.size());
  configure_rails(v, placement);
  if (v.count("plan") && !v["pattern"].defaulted())
    throw Error::usage("--plan and --pattern are the same option: give one");
  const auto pattern = v.count("plan") ? v["plan"].as<std::string>() : v["pattern"].as<std::string>();
  if (v.count("pairs-file")) {
    const auto path = v["pairs-file"].as<std::string>();
    cli::require_text_file(path, "--pairs-file");
    std::ifstream in(path);
    if (!in) throw Error::usage(fmt::format("--pairs-file {}: cannot read the file", path));
    schedule_ = PairSchedule::from_pairs_file(in, hosts_, path);
  } else {
    cli::require_choice(v.count("plan") ? "--plan" : "--pattern", pattern, {"all-pairs", "quick", "shift", "adaptive"});
    schedule_ = pattern == "all-pairs" ? PairSchedule::all_pairs(n) : pattern == "quick" ? PairSchedule::quick(n)
                : pattern == "shift"   ? PairSchedule::shift(n)
                                       : PairSchedule::adaptive(n);
  }
  metrics_.clear();
  const auto names = cli::names_of(sweep_metrics(), [](const SweepMetric& m) { return m.name; });
  for (const auto i : cli::parse_name_list("--metric", v["metric"].as<std::string>(), names))
    metrics_.push_back(&sweep_metrics()[i]);
  if (schedule_->directed() && (rails_ > 1 || topology_))
    throw Error::usage("--pattern shift sends around a ring of nodes: with --rails or --topology use all-pairs, quick or --pairs-file");
  adaptive_ = schedule_->pattern() == "adaptive";
  seed_ = static_cast<std::uint64_t>(v["seed"].as<long long>());
  if (adaptive_ && v.count("sequential"))
    throw Error::usage("--sequential with --plan adaptive: the adaptive plan's rounds are its own; use a fixed plan");
  if (topology_ && !adaptive_) schedule_->cover(*topology_, rails_);  // the adaptive plan crosses the leaves itself
  if (schedule_->directed() && (metrics_.size() != 1 || metrics_[0]->name != "p2p_bw"))
    throw Error::usage("--pattern shift sends to one node while receiving from another: it measures --metric p2p_bw only");
  bw_bytes_ = common.sizes.max();
  lat_bytes_ = cli::parse_byte_size(v["lat-bytes"].as<std::string>(), "--lat-bytes");
  if (bw_bytes_ == 0) throw Error::usage(fmt::format("{} 0: the bandwidth metrics need messages of at least 1 byte", common.sizes_option));
  const auto window = v["window"].as<long long>();
  cli::require_in_range("--window", window, 1, ops::max_window);
  window_ = static_cast<int>(window);
  const auto pair_time = v["pair-time"].as<std::string>();
  pair_time_s_ = pair_time == "0" ? 0 : cli::parse_duration(pair_time, "--pair-time");
  pair_time_relative_ = v["pair-time-relative"].as<double>();
  if (!(pair_time_relative_ >= 1) || pair_time_relative_ > 1000)
    throw Error::usage(fmt::format("--pair-time-relative {}: give a factor from 1 to 1000", pair_time_relative_));
  const auto retest = v["retest"].as<long long>();
  const int qp_timeout = v["qp-timeout"].as<int>();
  cli::require_in_range("--qp-timeout", qp_timeout, 0, 31);
  cli::require_in_range("--retest", retest, 0, 10);
  retest_ = static_cast<int>(retest);
  std::vector<std::string> metric_names;
  for (const auto& m : sweep_metrics()) metric_names.emplace_back(m.name);
  rules_ = Rules::load(v["rules"].as<std::string>(),
                       common.baseline.empty() ? results::Baseline() : results::Baseline::load(common.baseline, pairs_table_),
                       metric_names);
  for (const auto* m : metrics_)
    if (!rules_.metrics.count(std::string(m->name)))
      throw Error::usage(fmt::format("--rules {}: no [{}] section for --metric {}", v["rules"].as<std::string>(), m->name, m->name));
  sequential_ = v.count("sequential") > 0;
  configure_resume(v, placement);
  configure_mesh(v, placement.me().rank == 0);
  const auto nccl_comms = v["nccl-comms"].as<std::string>();
  cli::require_choice("--nccl-comms", nccl_comms, {"split", "init"});
  nccl_comms_ = nccl_comms == "split" ? NcclComms::split : NcclComms::init;
  backend_ = ops::choose_backend(v["backend"].as<std::string>());
  const bool collectives = std::any_of(metrics_.begin(), metrics_.end(), [](const SweepMetric* m) { return m->collective(); });
  if (collectives && bw_bytes_ < 4)
    throw Error::usage(fmt::format("{} {}: the collective metrics move floats: give at least 4 bytes", common.sizes_option, bw_bytes_));
  if (collectives && backend_ == ops::BackendKind::mpi) {
    std::vector<const ops::CollectiveOp*> ops;
    for (const auto* m : metrics_)
      if (m->collective()) ops.push_back(ops::find_collective(m->coll == ops::CollKind::sendrecv ? "sendrecv" : "all_reduce"));
    // Two nodes' ranks at least; more ranks only shrink all_reduce/sendrecv counts.
    ops::require_mpi_counts(ops, {ops::DataType::float32}, bw_bytes_, 2, common.sizes_option);
  }
  configure_budget(v);
  if (dry_run_) return;  // nothing is opened for a plan
  if (collectives && backend_ == ops::BackendKind::nccl) gpu_ = runtime::bind_gpu(placement.me().machine_local_rank);
  // The pair tests of the metrics asked for. The rdma one opens every rank's port now: no RDMA device, a port that
  // is not Active or a build without libibverbs is exit 2, before any output.
  const auto any = [&](auto&& pred) { return std::any_of(metrics_.begin(), metrics_.end(), pred); };
  p2p_.reset();
  coll_.reset();
  rdma_.reset();
  if (any([](const SweepMetric* m) { return !m->p2p_test.empty(); }))
    p2p_ = std::make_unique<P2PPairTest>(metrics_, bw_bytes_, lat_bytes_, window_, pair_time_s_, pair_time_relative_);
  if (collectives) coll_ = make_coll_pair_test(backend_, gpu_, bw_bytes_, nccl_comms_);
  if (any([](const SweepMetric* m) { return !m->verbs_test.empty(); }))
    rdma_ = make_rail_rdma_test(placement.me().host, qp_timeout);
}

std::vector<PairRecord> SweepBenchmark::measure_pair(const app::RunContext& context, const runtime::Communicator& pair,
                                                     int round_index, const HostPair& hosts, bool host_level) {
  std::vector<PairRecord> out;
  // The first rank of each host reads its links around each metric: the records say on which end they grew.
  const int my_host = host_of_rank_[context.world.rank()];
  for (std::size_t k = 0; k < metrics_.size(); ++k) {
    const auto& m = *metrics_[k];
    if ((rails_ == 1 && m.collective() == host_level) || resting(m)) continue;
    PairTest& test = !m.verbs_test.empty() ? *rdma_ : m.collective() ? *coll_ : static_cast<PairTest&>(*p2p_);
    const PairSlot slot{context, pair, round_index, hosts, rails_ > 1 ? local_rank_ : 0, static_cast<int>(k), m, hosts_};
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

std::vector<PairRecord> SweepBenchmark::run_rounds(const app::RunContext& context, std::vector<Round> rounds,
                                                   const std::string& kind, int first_round) {
  const auto& world = context.world;
  const int me = world.rank(), h = host_of_rank_[me];
  const bool host_leader = context.placement.me().local_rank == 0;
  const bool any_host_level = std::any_of(metrics_.begin(), metrics_.end(), [](auto* m) { return !m->collective(); });
  // Whether this pass runs collectives (between a mesh's bandwidth passes they rest): then each round prepares them.
  const bool collectives = coll_ && std::any_of(metrics_.begin(), metrics_.end(), [&](auto* m) {
                             return m->collective() && !resting(*m);
                           });
  std::vector<PairRecord> all;
  if (!adaptive_) rest_hung_hosts(context, {}, rounds, 0);  // hosts that hung in an earlier pass rest in this one too
  const auto start = std::chrono::steady_clock::now();
  std::size_t pairs_total = 0, pairs_done = 0;
  for (const auto& r : rounds) pairs_total += r.pairs.size();
  for (std::size_t i = 0; i < rounds.size(); ++i) {
    const auto& round = rounds[i];
    const int index = first_round + static_cast<int>(i);
    if (round.pairs.empty()) continue;  // every pair of it finished before a --resume, or its hosts rest
    if (!round_fits(context, rounds, i, kind, first_round)) break;
    if (kind == "sweep") ++sweep_rounds_run_;
    const double elapsed = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    if (adaptive_ && kind == "sweep")  // one round at a time: how many is the plan's answer, not known here
      context.progress(fmt::format("adaptive round {}: {} pairs now", index + 1, round.pairs.size()));
    else
      context.progress(fmt::format("{} round {} of {}: {} pairs now, {} of {} pairs done, {:.1f} s elapsed{}", kind,
                                   i + 1, rounds.size(), round.pairs.size(), pairs_done, pairs_total, elapsed,
                                   i ? fmt::format(", about {:.1f} s left", elapsed / i * (rounds.size() - i)) : ""));
    pairs_done += round.pairs.size();
    context.measuring(fmt::format("{} round {} ({} pairs)", kind, index, round.pairs.size()), round_timeout_s(context));
    const auto round_start = std::chrono::steady_clock::now();
    std::vector<PairRecord> mine;
    std::vector<NicTraffic> my_traffic;
    double test_s = 0;   // this rank's pair tests only (not the splits, waiting or gathering)
    double split_s = 0;  // this rank's pair (and rail) communicators' splits: setup
    const auto split = [&](auto&& make) {
      const auto t0 = std::chrono::steady_clock::now();
      auto comm = make();
      split_s += std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
      return comm;
    };
    const auto timed = [&](auto&& measure) {
      const auto t0 = std::chrono::steady_clock::now();
      auto r = measure();
      test_s += std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
      mine.insert(mine.end(), r.begin(), r.end());
    };
    if (schedule_->directed() && kind == "sweep") {
      const auto leaders = world.split(host_leader ? 0 : MPI_UNDEFINED, h);
      if (!leaders.empty()) {
        int to = -1, from = -1;
        for (const auto& p : round.pairs) {
          if (p.a == h) to = p.b;
          if (p.b == h) from = p.a;
        }
        timed([&] { return std::vector<PairRecord>{p2p_->shift(context, leaders, index, h, to, from)}; });
      }
    } else if (rails_ > 1) {
      // Rails: the pair's communicator (every rank of both nodes) split by local rank, as nccl-tests'
      // NCCL_TESTS_SPLIT_MASK does: rail i's two ranks run every metric, all rails at once.
      int k = -1, role = 0;
      for (std::size_t p = 0; p < round.pairs.size(); ++p)
        if (round.pairs[p].a == h || round.pairs[p].b == h) k = static_cast<int>(p), role = round.pairs[p].a == h ? 0 : 1;
      const auto pair = split([&] { return world.split(k >= 0 ? k : MPI_UNDEFINED, role * world.size() + me); });
      runtime::Communicator rail;
      if (!pair.empty()) rail = split([&] { return pair.split(local_rank_, role); });
      if (p2p_) p2p_->plan_round(world, rail.empty() ? nullptr : &rail);
      // The rail's collective communicator: the pair's and rail's color, in the rail communicator's order.
      if (collectives)
        coll_->begin_round(context, rail.empty() ? nullptr : &rail, rail.empty() ? -1 : k * rails_ + local_rank_, role);
      if (!rail.empty()) {
        if (p2p_) test_s += p2p_->probing_s();
        timed([&] { return measure_rail(context, rail, index, round.pairs[k], my_traffic); });
      }
      if (collectives) coll_->end_round();
    } else {
      int k = -1, role = 0;
      for (std::size_t p = 0; p < round.pairs.size(); ++p)
        if (round.pairs[p].a == h || round.pairs[p].b == h) {
          k = static_cast<int>(p);
          role = round.pairs[p].a == h ? 0 : 1;
        }
      if (any_host_level) {  // one rank per node
        const auto pair = split([&] { return world.split(k >= 0 && host_leader ? k : MPI_UNDEFINED, role); });
        if (p2p_) p2p_->plan_round(world, pair.empty() ? nullptr : &pair);
        if (!pair.empty()) {
          if (p2p_) test_s += p2p_->probing_s();  // the probes are link time, part of the pair's test
          timed([&] { return measure_pair(context, pair, index, round.pairs[k], true); });
        }
      }
      if (coll_) {  // every rank of both nodes
        const auto pair = split([&] { return world.split(k >= 0 ? k : MPI_UNDEFINED, role * world.size() + me); });
        // The same color and key for the back end's own communicator (NCCL: split from one parent, collective).
        if (collectives) coll_->begin_round(context, pair.empty() ? nullptr : &pair, k, role * world.size() + me);
        if (!pair.empty()) timed([&] { return measure_pair(context, pair, index, round.pairs[k], false); });
        coll_->end_round();
      }
    }
    for (auto& r : mine) r.test_s = test_s;
    if (!mine.empty()) mine.front().setup_s += split_s;  // the splits are the pair's, paid once
    context.doing("waiting for the round's other pairs");
    runtime::idle_barrier(world.get());
    context.measured();
    std::vector<PairRecord> records;
    for (const auto& theirs : world.gather_arrays(mine, 0)) records.insert(records.end(), theirs.begin(), theirs.end());
    std::vector<NicTraffic> traffic;
    if (rails_ > 1)
      for (const auto& theirs : world.gather_arrays(my_traffic, 0)) traffic.insert(traffic.end(), theirs.begin(), theirs.end());
    if (context.is_root()) {
      std::vector<results::Row> rows;
      for (const auto& t : traffic)
        rows.push_back(results::Row(traffic_table_).set("round", std::int64_t(t.round)).set("host", hosts_[t.host])
                           .set("rail", std::int64_t(t.rail))
                           .set("nic", counter_nics_[static_cast<std::size_t>(t.host * rails_ + t.rail)])
                           .set("bytes", t.bytes).set("payload", t.payload));
      context.out->rows(rows);
      traffic_.insert(traffic_.end(), traffic.begin(), traffic.end());
      // The sweep's own cost in this round: everything but its longest pair test (splits, waiting, gathering).
      double longest = 0, setup = 0;  // the round's longest pair test, and its longest setup of one metric
      for (const auto& r : records) longest = std::max(longest, r.test_s), setup = std::max(setup, r.setup_s);
      const auto merged = report_records(context, records, kind);
      all.insert(all.end(), merged.begin(), merged.end());
      for (const auto& r : merged) pair_setup_sum_s_ += r.setup_s, pair_measure_sum_s_ += r.measure_s, ++pair_rows_;
      // Rank 0's round ends once its rows are written: the other ranks wait for it at the next split.
      const double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - round_start).count();
      budget_.measured(wall);
      context.out->row(results::Row(rounds_table_).set("pass", std::int64_t(pass_)).set("round", std::int64_t(index)).set("kind", kind)
                           .set("pairs", std::int64_t(round.pairs.size())).set("wall_s", wall)
                           .set("longest_test_s", longest).set("overhead_s", wall - longest).set("setup_s", setup));
      setup_total_s_ += setup, measure_total_s_ += longest;
    }
    if (!adaptive_) rest_hung_hosts(context, all, rounds, i + 1);  // the adaptive plan splits a hung pair itself
  }
  return all;
}

ExitStatus SweepBenchmark::run(const app::RunContext& context) {
  started_ = std::chrono::steady_clock::now();  // --budget counts from here
  links_ = facts::LinkWatch(context.world, context.placement.me().host, backend_ == ops::BackendKind::nccl);
  if (rails_ > 1) host_comm_ = context.world.split(host_of_rank_[context.world.rank()], context.world.rank());
  gather_nics(context);
  auto rounds = schedule_->rounds();
  const int n = static_cast<int>(hosts_.size());
  if (sequential_) {  // every pair in a round of its own
    std::vector<Round> one_by_one;
    for (const auto& r : rounds)
      for (const auto& p : r.pairs) one_by_one.push_back(Round::of(n, {p}));
    rounds = one_by_one;
  }
  // --resume: every rank drops the pairs the earlier part finished (rank 0 read them); rounds keep their numbers.
  const auto finished = context.world.broadcast_array(context.is_root() ? finished_pairs() : std::vector<HostPair>{}, 0);
  std::size_t skipped = 0;
  for (auto& round : rounds) {
    const auto before = round.pairs.size();
    round.pairs.erase(std::remove_if(round.pairs.begin(), round.pairs.end(), [&](const HostPair& p) {
                        return std::find(finished.begin(), finished.end(), p.unordered()) != finished.end();
                      }), round.pairs.end());
    skipped += before - round.pairs.size();
  }
  if (context.is_root()) {
    if (!resume_.empty())
      context.out->note(fmt::format("resuming {}: {} pairs finished before are skipped", resume_, skipped));
    std::string metrics;
    for (const auto* m : metrics_) metrics += (metrics.empty() ? "" : ", ") + std::string(m->name);
    context.out->note(fmt::format("{} hosts{}, pattern {}{}, {}; metrics: {}; bandwidth message {} B, latency {} B",
                                  n, rails_ > 1 ? fmt::format(" x {} rails", rails_) : "", schedule_->pattern(),
                                  sequential_ ? " (sequential)" : "",
                                  adaptive_ ? std::string("rounds chosen from the results") : fmt::format("{} rounds", rounds.size()),
                                  metrics, bw_bytes_, lat_bytes_));
    context.out->declare(schedule_table_);
    context.out->declare(rounds_table_);
    if (rails_ > 1) {
      context.out->declare(traffic_table_);
      context.out->attribute("rails", rails_);
    }
    for (std::size_t r = 0; resume_.empty() && r < rounds.size(); ++r)
      for (const auto& p : rounds[r].pairs)
        context.out->row(results::Row(schedule_table_).set("round", std::int64_t(r)).set("kind", std::string("sweep"))
                             .set("host_a", hosts_[p.a]).set("host_b", hosts_[p.b]));
    if (mesh_) {
      // each pass is a line; the pair rows go to the file only
    } else if (n <= 16 && rails_ > 1)
      context.out->section(pairs_table_, "pair tests", {{"round"}, {"host_a"}, {"host_b"}, {"rail"}, {"metric"},
                                                        {"direction"}, {"value"}, {"unit"}, {"pct_expected"}, {"wrong"}});
    else if (n <= 16)
      context.out->section(pairs_table_, "pair tests", {{"round"}, {"host_a"}, {"host_b"}, {"metric"}, {"direction"},
                                                        {"value"}, {"unit"}, {"pct_expected"}, {"wrong"}});
  }
  setup_total_s_ = measure_total_s_ = pair_setup_sum_s_ = pair_measure_sum_s_ = 0;
  pair_rows_ = 0;
  sweep_rounds_planned_ = static_cast<int>(std::count_if(rounds.begin(), rounds.end(), [](const Round& r) { return !r.pairs.empty(); }));
  const auto metrics = judged_metrics();
  if (mesh_) {
    if (context.is_root()) {
      context.out->declare(passes_table_);
      context.out->declare(changes_table_);
      context.out->attribute("repeat", static_cast<std::int64_t>(repeat_));
      context.out->attribute("every_s", every_s_);
      mesh_history_.emplace(metrics, fabric());
      if (first_pass_ > 1)  // a resumed mesh: the last pass done is what the next one is held against
        mesh_history_->add(first_pass_ - 1, "", judge(resumed_records(first_pass_ - 1), metrics, rules_, fabric()));
    }
    context.watchdog.stop_after_signal();  // SIGTERM: stop after the pass in flight
  }
  std::vector<PairRecord> records;
  Judgement judgement;
  bool any_verdict = false;
  int next_round = first_round_, passes_done = first_pass_ - 1;
  first_pass_ = context.world.broadcast_value(first_pass_, 0);
  next_round = first_round_ = context.world.broadcast_value(first_round_, 0);
  const auto first_start = std::chrono::steady_clock::now();
  mesh_start_epoch_ = static_cast<double>(std::time(nullptr));
  for (pass_ = first_pass_;; ++pass_) {
    const auto planned = first_start + std::chrono::duration_cast<std::chrono::steady_clock::duration>(
                                           std::chrono::duration<double>(every_s_ * (pass_ - first_pass_)));
    if (pass_ > first_pass_ && !wait_for_pass(context, planned)) break;
    bw_pass_ = pass_ == first_pass_ || (pass_ - 1) % bw_every_ == 0;
    const auto pass_start = std::chrono::steady_clock::now();
    const auto started = results::utc_timestamp();
    records = context.is_root() && !mesh_ ? resumed_records() : std::vector<PairRecord>{};
    if (adaptive_) {
      // Rank 0 asks the plan for each round with every record of this pass; every rank runs what it broadcasts.
      std::optional<AdaptivePlan> plan;
      int adaptive_rounds = 0;  // run in this pass
      AdaptiveOptions options;
      options.cover_pairs = !budget_given_.empty();  // the rest of a --budget tests pairs never tested (links)
      if (context.is_root())
        plan.emplace(n, rails_, topology_ ? &*topology_ : nullptr, metrics, rules_, seed_ + static_cast<std::uint64_t>(pass_ - 1),
                     options);
      while (true) {
        std::vector<HostPair> pairs;
        if (context.is_root())
          if (const auto round = plan->next(records)) pairs = round->pairs;
        pairs = context.world.broadcast_array(pairs, 0);
        if (pairs.empty()) break;
        const int ran = sweep_rounds_run_;
        auto measured = run_rounds(context, {Round::of(n, pairs)}, "sweep", next_round++);
        records.insert(records.end(), measured.begin(), measured.end());
        if (sweep_rounds_run_ == ran) break;  // the budget left it out
        ++adaptive_rounds;
      }
      if (context.is_root())  // the plan read every record: the loop ends at its answer or at a round not run
        adaptive_pairs_tested_ = plan->pairs_tested(), adaptive_hosts_judged_ = plan->state().hosts_judged;
      if (context.is_root())
        context.out->note(fmt::format("adaptive plan: {} rounds run, {} of {} hosts judged{}", adaptive_rounds,
                                      plan->state().hosts_judged, n,
                                      plan->state().covering ? "; then untested pairs while the budget lasted" : ""));
    } else {
      auto measured = run_rounds(context, rounds, "sweep", next_round);
      next_round += static_cast<int>(rounds.size());
      records.insert(records.end(), measured.begin(), measured.end());
    }
    RetestLedger ledger(adaptive_ ? 0 : retest_);  // the adaptive plan confirms slow pairs itself
    while (true) {  // ends: each pass re-tests at least one pair, and each pair at most retest_ times
      std::vector<HostPair> suspects;
      if (context.is_root()) suspects = ledger.due(judge(records, metrics, rules_, fabric()).suspects);
      suspects = context.world.broadcast_array(suspects, 0);
      if (suspects.empty()) break;
      const auto retests = plan_retests(n, suspects);
      auto more = run_rounds(context, retests, "retest", next_round);
      next_round += static_cast<int>(retests.size());
      records.insert(records.end(), more.begin(), more.end());
    }
    passes_done = pass_;
    const bool stop = context.world.all_sum(context.watchdog.stop_requested() ? 1 : 0) > 0;
    const bool last = stop || (repeat_ > 0 && pass_ >= repeat_);
    if (context.is_root()) {
      // Between bandwidth passes the judge reads the last bandwidth figures beside this pass's latency ones.
      const auto is_bw = [&](const PairRecord& r) { return metrics_[static_cast<std::size_t>(r.metric)]->better == results::Better::higher; };
      if (bw_pass_) {
        last_bw_records_.clear();
        std::copy_if(records.begin(), records.end(), std::back_inserter(last_bw_records_), is_bw);
      } else {
        records.insert(records.end(), last_bw_records_.begin(), last_bw_records_.end());
      }
      judgement = judge(records, metrics, rules_, fabric(), traffic_, counter_nics_);
      any_verdict = any_verdict || !judgement.verdicts.empty();
      if (mesh_)
        write_pass(context, started, std::chrono::duration<double>(std::chrono::steady_clock::now() - pass_start).count(),
                   static_cast<std::size_t>(next_round), records, judgement, last);
    }
    if (last) break;
    if (rails_ > 1) traffic_.clear();  // the data-path check of each pass reads its own rounds
  }
  std::int64_t verdicts = 0;
  if (context.is_root()) {
    if (mesh_)
      context.out->attribute("passes", static_cast<std::int64_t>(passes_done));
    write_topology(context, judgement);
    write_untested(context);
    context.out->note(fmt::format("time of the rounds: pair tests {}, setup {} (each round's longest, summed; setup: "
                                  "communicator splits, NCCL communicators, QPs; per pair in /sweep/pairs setup_s)",
                                  human_duration(measure_total_s_), human_duration(setup_total_s_)));
    // Every pair's own, summed: what the sweep's pairs cost in all, setup beside measuring.
    context.out->note(fmt::format("pair rows: setup {}, measure {} (sums of setup_s and measure_s over {} rows)",
                                  human_duration(pair_setup_sum_s_), human_duration(pair_measure_sum_s_), pair_rows_));
    context.out->attribute("pair_setup_s", pair_setup_sum_s_);
    context.out->attribute("pair_measure_s", pair_measure_sum_s_);
    write_judgement(context, records, judgement);
    verdicts = static_cast<std::int64_t>(judgement.verdicts.size()) + (any_verdict ? 1 : 0) + changes_;
  }
  const bool failed = context.world.broadcast_value(verdicts, 0) > 0;
  coll_.reset();  // NCCL's parent communicator (if any) goes with the sweep, on every rank at once
  return failed ? ExitStatus::measurement_failed : ExitStatus::ok;
}

}  // namespace fabricbench::sweep
