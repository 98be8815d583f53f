// fabric-sweep's configure (the command line into SweepOptions, the SweepJob, the round runner) and its run in three
// steps: start, the passes (PassLoop, pass_loop.cpp), finish (rank 0, through the SweepWriter).
#include "fabricbench/tools/sweep/sweep_benchmark.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <ctime>
#include <fstream>
#include <iterator>

#include "fabricbench/app/shipped_files.hpp"
#include "fabricbench/cli/byte_size.hpp"
#include "fabricbench/cli/choice.hpp"
#include "fabricbench/cli/ini_file.hpp"
#include "fabricbench/cli/name_list.hpp"
#include "fabricbench/ops/coll_backend.hpp"
#include "fabricbench/ops/p2p_exchange.hpp"
#include "fabricbench/runtime/gpu.hpp"

namespace fabricbench::tools::sweep {
using namespace fabricbench::sweep;  // lib/sweep: what this tool runs
std::string SweepBenchmark::summary() const {
  std::string s =
      "fabric-sweep: every node pair of the job, the pairs of each round at once; names the bad node or link.\n"
      "Ranks are grouped by host; -b/-e/--sizes give the bandwidth message size (the largest).\nMetrics:";
  for (const auto& m : sweep_metrics()) s += fmt::format("\n  {:12} {}", m.name, m.description);
  return s;
}

void SweepBenchmark::add_options(cli::po::options_description& options) {
  namespace po = cli::po;
  auto add = options.add_options();
  add("plan", po::value<std::string>(),
      "all-pairs (circle method), quick (node i with i+N/2), shift (mpiGraph; p2p_bw only) or adaptive (rounds chosen "
      "from the results so far: random pairs, slow hosts re-paired with clean ones, slow pairs confirmed, pairs inside "
      "a leaf where an uplink is suspect; it re-tests by itself); --pattern is the same option");
  add("seed", po::value<long long>()->default_value(1),
      "--plan adaptive: the seed of its random pairs (the same seed, hosts and results give the same rounds)");
  add("pattern", po::value<std::string>()->default_value("all-pairs"), "the same as --plan");
  add("budget", po::value<std::string>(),
      "a time limit on the whole sweep (15m, 1h, 90s): rounds run while the next one fits, judged from the rounds "
      "measured so far; the end of the run says which pairs were not covered (/sweep/untested)");
  add("dry-run",
      "measure nothing: print the plan (rounds, pairs per round) and its estimated time, and with --budget how much of "
      "it fits");
  add("hosts", po::value<long long>(),
      "with --dry-run: plan for this many hosts instead of the job's (one process is enough)");
  add("hostfile", po::value<std::string>(),
      "with --dry-run: plan for the hosts of this file (one per line, the first word; '#' comments), e.g. for "
      "--topology");
  add("pair-time-estimate", po::value<std::string>(),
      "the time of one round's pair tests (all metrics) before any was measured, for --dry-run and --budget; default: "
      "--pair-time per metric and direction");
  add("pairs-file", po::value<std::string>(), "rounds from a file, lines 'ROUND HOST_A HOST_B' (instead of --pattern)");
  add("metric", po::value<std::string>()->default_value("p2p_bw,p2p_latency"),
      ("comma list of " +
       cli::name_choices(cli::names_of(sweep_metrics(), [](const SweepMetric& m) { return m.name; })))
          .c_str());
  add("lat-bytes", po::value<std::string>()->default_value("8"), "message size of p2p_latency");
  add("window,W", po::value<long long>()->default_value(64), "messages in flight for the bandwidth metrics");
  add("pair-time", po::value<std::string>()->default_value("2s"),
      "time budget of one p2p pair test (per metric and direction): a slower pair runs fewer iterations (or a smaller "
      "window) and reports what it moved; 0: none");
  add("pair-time-relative", po::value<double>()->default_value(1.5),
      "after the first round the budget is at least this many times the fastest pair's full test time measured so far");
  add("qp-timeout", po::value<int>()->default_value(14),
      "the rdma metrics' local ACK timeout 0-31, 4.096 us x 2^N before a retransmission (perftest -u)");
  add("retest", po::value<long long>()->default_value(1),
      "times each suspect pair is re-tested, also against good nodes; a pair that turns suspect after a re-test gets "
      "its own (0: none)");
  add("rules", po::value<std::string>()->default_value(app::shipped_config("sweep.ini")),
      "verdict rules (INI); default: the shipped configs/sweep.ini ($FABRICBENCH_DATA_DIR or "
      "<bin>/../share/fabricbench)");
  add("backend", po::value<std::string>()->default_value("auto"),
      "collective metrics: nccl, mpi, or auto; given as nccl, the p2p metrics too measure GPU to GPU "
      "(ncclSend/ncclRecv, one rank per GPU)");
  add("nccl-comms", po::value<std::string>()->default_value("split"),
      "collective metrics with NCCL: split (each round's pair communicators split from one communicator over the job, "
      "made once: ncclCommSplit) or init (a fresh ncclCommInitRank per pair, metric and round); split falls back to "
      "init after a hang or where it fails");
  add("sequential",
      "test the pairs of a round one after another, the re-tests too (to measure what running them at once saves)");
  add("rails", po::value<int>()->implicit_value(0),
      "every local rank takes part: local rank i of one node tests local rank i of the other (rail i), all rails at "
      "once, every metric; rows and verdicts name the rail and NIC");
  add("rail-map", po::value<std::string>(),
      "with --rails: the NIC of each rail, lines 'RAIL rdma=DEVICE[:PORT] net=INTERFACE' (the launcher's file); the "
      "rdma metrics open rail i's device and the data-path check reads its counters");
  add("topology", po::value<std::string>(),
      "the switch tree in Slurm's topology.conf format (SwitchName= Nodes=|Switches= [Rail=]); several files, "
      "comma-separated, are one per rail: adds leaf switch and uplink verdicts and makes sure every pair of leaves is "
      "crossed on every rail");
  add("resume", po::value<std::string>(),
      "continue the sweep of this HDF5 file (a run that hung, was killed or failed): skip every pair it finished, "
      "append to it, end as if run in one go; same options, and its hosts less those excluded");
  add("repeat", po::value<long long>(),
      "a continuous mesh: run the sweep this many passes (0: until stopped; SIGTERM, or SIGUSR1 to mpirun, stops it "
      "after the pass in flight), each judged on its own; the passes go to one file (/sweep/passes, the pass column), "
      "and a verdict that appears or goes is named with its pass (/sweep/changes)");
  add("bw-every", po::value<long long>(),
      fmt::format("with --repeat: the bandwidth metrics ({}) run only in every K-th pass, the latency ones in every "
                  "pass; a pass is judged with the last bandwidth figures",
                  metric_names(is_bandwidth))
          .c_str());
  add("every", po::value<std::string>(),
      "with --repeat: start a pass this often (30s, 5m; default 0: back to back); a pass that overruns starts the next "
      "at once");
  add("prometheus", po::value<std::string>(),
      "write the figures, verdicts and pass in Prometheus' text format to this .prom file (node_exporter's textfile "
      "collector), replaced whole after each pass (without --repeat: once, at the end)");
  add("exclude", po::value<std::string>(),
      "with --resume: go on without these hosts (comma-separated; a host the earlier part named hung is left out by "
      "itself); their pairs are recorded as not tested (/sweep/untested)");
}

void SweepBenchmark::configure(const cli::po::variables_map& v, const cli::CommonOptions& common,
                               const runtime::Placement& placement) {
  opt_.dry_run = v.count("dry-run") > 0;
  opt_.planned = v.count("hosts") || v.count("hostfile");
  configure_job(v, placement);
  configure_rails(v, placement);
  configure_plan(v);
  configure_measures(v, common);
  opt_.sequential = v.count("sequential") > 0;
  configure_resume(v, placement, common.sizes_option);
  configure_mesh(v, placement.me().rank == 0);
  configure_backend(v, common);
  configure_budget(v);
  refuse_unused(v);
  if (opt_.dry_run) return;  // nothing is opened for a plan
  make_runner(placement, v["qp-timeout"].as<int>());
}

void SweepBenchmark::configure_job(const cli::po::variables_map& v, const runtime::Placement& placement) {
  job_.host_of_rank.clear();
  if (opt_.planned) {  // --dry-run for hosts other than the job's: R ranks per host with --rails=R
    job_.hosts = planned_hosts(v);
    const int per = v.count("rails") ? v["rails"].as<int>() : 1;
    if (per < 1) throw Error::usage("--rails with --hosts/--hostfile: give the rails per host, --rails=8");
    for (std::size_t h = 0; h < job_.hosts.size(); ++h)
      job_.host_of_rank.insert(job_.host_of_rank.end(), static_cast<std::size_t>(per), static_cast<int>(h));
  } else {
    job_.hosts = placement.hosts();
    if (job_.hosts.size() < 2)
      throw Error::usage(
          fmt::format("fabric-sweep tests pairs of nodes and this job has 1 host ({}); launch it across 2 "
                      "or more nodes (ranks are grouped by host name), or plan with --dry-run --hosts N",
                      job_.hosts.front()));
    for (const auto& r : placement.ranks())
      job_.host_of_rank.push_back(
          static_cast<int>(std::find(job_.hosts.begin(), job_.hosts.end(), r.host) - job_.hosts.begin()));
    for (const auto& r : placement.ranks()) job_.ranks_per_host = std::max(job_.ranks_per_host, r.local_size);
  }
}

void SweepBenchmark::configure_plan(const cli::po::variables_map& v) {
  const int n = static_cast<int>(job_.hosts.size());
  if (v.count("plan") && !v["pattern"].defaulted())
    throw Error::usage("--plan and --pattern are the same option: give one");
  const auto pattern = v.count("plan") ? v["plan"].as<std::string>() : v["pattern"].as<std::string>();
  if (v.count("pairs-file")) {
    const auto path = v["pairs-file"].as<std::string>();
    cli::require_text_file(path, "--pairs-file");
    std::ifstream in(path);
    if (!in) throw Error::usage(fmt::format("--pairs-file {}: cannot read the file", path));
    job_.schedule = PairSchedule::from_pairs_file(in, job_.hosts, path);
  } else {
    std::vector<cli::Choice<Plan>> plans;
    for (const auto p : chosen_plans()) plans.push_back({to_string(p), p});
    const auto plan = cli::parse_choice(pattern, v.count("plan") ? "--plan" : "--pattern", plans);
    // A dry run of a fixed plan counts it (PlanSize): 8192 hosts' all-pairs took 1.7 s and 550 MB to build and copy,
    // 16,384 were refused. Built where a topology adds rounds to it (quick; all-pairs already crosses every leaf pair).
    const bool count = opt_.dry_run && plan != Plan::adaptive && !(opt_.topology && plan == Plan::quick);
    job_.schedule = count ? PairSchedule::counted(plan, n) : PairSchedule::of(plan, n);
  }
  opt_.metrics.clear();
  const auto names = cli::names_of(sweep_metrics(), [](const SweepMetric& m) { return m.name; });
  for (const auto i : cli::parse_name_list("--metric", v["metric"].as<std::string>(), names))
    opt_.metrics.push_back(&sweep_metrics()[i]);
  if (job_.schedule->directed() && (opt_.rails > 1 || opt_.topology))
    throw Error::usage(
        "--pattern shift sends around a ring of nodes: with --rails or --topology use all-pairs, quick or "
        "--pairs-file");
  opt_.adaptive = job_.schedule->plan() == Plan::adaptive;
  opt_.seed = static_cast<std::uint64_t>(v["seed"].as<long long>());
  if (!opt_.adaptive && !v["seed"].defaulted())
    throw Error::usage(fmt::format("--seed: the {} plan is not random; --seed seeds --plan adaptive's pairs",
                                   job_.schedule->pattern()));
  if (opt_.adaptive && v.count("sequential"))
    throw Error::usage("--sequential with --plan adaptive: the adaptive plan's rounds are its own; use a fixed plan");
  if (opt_.topology && !opt_.adaptive && job_.schedule->built())
    job_.schedule->cover(*opt_.topology, opt_.rails);  // the adaptive plan crosses the leaves itself
  if (job_.schedule->directed() && (opt_.metrics.size() != 1 || !is_one_way_p2p(*opt_.metrics[0])))
    throw Error::usage(
        fmt::format("--pattern shift sends to one node while receiving from another: it measures --metric {} only",
                    metric_names(is_one_way_p2p)));
}

void SweepBenchmark::configure_measures(const cli::po::variables_map& v, const cli::CommonOptions& common) {
  opt_.bw_bytes = common.sizes.max();
  opt_.lat_bytes = cli::parse_byte_size(v["lat-bytes"].as<std::string>(), "--lat-bytes");
  if (opt_.bw_bytes == 0)
    throw Error::usage(
        fmt::format("{} 0: the bandwidth metrics need messages of at least 1 byte", common.sizes_option));
  const auto window = v["window"].as<long long>();
  cli::require_in_range("--window", window, 1, ops::max_window);
  opt_.window = static_cast<int>(window);
  const auto pair_time = v["pair-time"].as<std::string>();
  opt_.pair_time_s = pair_time == "0" ? 0 : cli::parse_duration(pair_time, "--pair-time");
  opt_.pair_time_relative = v["pair-time-relative"].as<double>();
  if (!(opt_.pair_time_relative >= 1) || opt_.pair_time_relative > 1000)
    throw Error::usage(fmt::format("--pair-time-relative {}: give a factor from 1 to 1000", opt_.pair_time_relative));
  const auto retest = v["retest"].as<long long>();
  cli::require_in_range("--qp-timeout", v["qp-timeout"].as<int>(), 0, 31);
  cli::require_in_range("--retest", retest, 0, 10);
  opt_.retest = static_cast<int>(retest);
  std::vector<std::string> metric_names;
  for (const auto& m : sweep_metrics()) metric_names.emplace_back(m.name);
  opt_.rules = Rules::load(
      v["rules"].as<std::string>(),
      common.baseline.empty() ? results::Baseline() : results::Baseline::load(common.baseline, tables_.pairs),
      metric_names);
  for (const auto* m : opt_.metrics)
    if (!opt_.rules.metrics.count(std::string(m->name)))
      throw Error::usage(
          fmt::format("--rules {}: no [{}] section for --metric {}", v["rules"].as<std::string>(), m->name, m->name));
}

void SweepBenchmark::configure_backend(const cli::po::variables_map& v, const cli::CommonOptions& common) {
  opt_.nccl_comms = cli::parse_choice(v["nccl-comms"].as<std::string>(), "--nccl-comms", kNcclComms);
  const auto backend = cli::parse_choice(v["backend"].as<std::string>(), "--backend", ops::kBackendChoices);
  opt_.backend = ops::choose_backend(backend);
  opt_.gpu_p2p = backend == ops::BackendChoice::nccl;
  const bool collectives =
      std::any_of(opt_.metrics.begin(), opt_.metrics.end(), [](const SweepMetric* m) { return m->collective(); });
  const bool on_gpus = opt_.any_on_gpus();
  if (!v["nccl-comms"].defaulted() && !(on_gpus && opt_.backend == ops::BackendKind::nccl))
    throw Error::usage(fmt::format(
        "--nccl-comms: it chooses how the collective metrics ({}), and the p2p ones with --backend nccl, make "
        "their NCCL communicators; give one of them with --backend nccl",
        metric_names(is_collective)));
  if (collectives && opt_.bw_bytes < 4)
    throw Error::usage(fmt::format("{} {}: the collective metrics move floats: give at least 4 bytes",
                                   common.sizes_option, opt_.bw_bytes));
  if (collectives && opt_.backend == ops::BackendKind::mpi) {
    std::vector<const ops::CollectiveOp*> ops;
    for (const auto* m : opt_.metrics)
      if (m->collective()) ops.push_back(&m->op());
    // Two nodes' ranks at least; more ranks only shrink all_reduce/sendrecv counts.
    ops::require_mpi_counts(ops, {ops::DataType::float32}, opt_.bw_bytes, 2, common.sizes_option);
  }
}

void SweepBenchmark::make_runner(const runtime::Placement& placement, int qp_timeout) {
  const bool on_gpus = opt_.any_on_gpus();
  if (on_gpus && opt_.backend == ops::BackendKind::nccl) gpu_ = runtime::bind_gpu(placement.me().machine_local_rank);
  // The pair tests of the metrics asked for. The rdma one opens every rank's port now: no RDMA device, a port that
  // is not Active or a build without libibverbs is exit 2, before any output.
  const auto any = [&](auto&& pred) { return std::any_of(opt_.metrics.begin(), opt_.metrics.end(), pred); };
  RoundRunner::Tests tests;
  if (any([&](const SweepMetric* m) { return m->family == MetricFamily::p2p && !opt_.on_gpus(*m); }))
    tests.p2p = std::make_unique<P2PPairTest>(opt_.metrics, opt_.bw_bytes, opt_.lat_bytes, opt_.window,
                                              opt_.pair_time_s, opt_.pair_time_relative);
  if (on_gpus)
    tests.coll = make_coll_pair_test(opt_.backend, gpu_, opt_.bw_bytes, opt_.lat_bytes, opt_.window, opt_.nccl_comms);
  if (any([](const SweepMetric* m) { return m->family == MetricFamily::rdma; }))
    tests.rdma = make_rail_rdma_test(placement.me().host, qp_timeout);
  runner_.reset();
  runner_.emplace(RoundRunner::Job{opt_.metrics, job_.hosts, job_.host_of_rank, opt_.rails, job_.local_rank,
                                   opt_.gpu_p2p, job_.schedule->directed()},
                  std::move(tests));
}

std::vector<Round> SweepBenchmark::rounds_to_run() const {
  if (!opt_.sequential) return job_.schedule->rounds();
  return Round::one_by_one(static_cast<int>(job_.hosts.size()), job_.schedule->rounds());
}

ExitStatus SweepBenchmark::run(const app::RunContext& context) {
  Untested untested;
  untested.started = std::chrono::steady_clock::now();  // --budget counts from here
  untested.budget = budget_;
  untested.pairs = job_.excluded_pairs;
  std::optional<SweepWriter> writer;
  if (context.is_root()) writer.emplace(context, opt_, job_, tables_);
  const auto rounds = start(context, writer ? &*writer : nullptr);
  const auto metrics = job_.judged_metrics(opt_);  // after start: a metric's NICs are the book's, gathered there
  if (opt_.mesh) {
    if (writer) {  // a resumed mesh: the last pass done is what the next one is held against
      const auto resumed = first_pass_ > 1 ? std::optional<Judgement>(judge(resumed_records(first_pass_ - 1), metrics,
                                                                            opt_.rules, job_.fabric(opt_)))
                                           : std::nullopt;
      writer->start_mesh(metrics, resumed ? &*resumed : nullptr, first_pass_ - 1);
    }
    context.watchdog.stop_after_signal();  // SIGTERM: stop after the pass in flight
  }
  PassLoop loop(context, opt_, job_, *runner_, writer ? &*writer : nullptr, metrics, std::move(untested));
  auto done =
      loop.run(rounds, first_pass_, first_round_, writer && !opt_.mesh ? resumed_records() : std::vector<PairRecord>{});
  const std::int64_t verdicts = writer ? finish(context, *writer, done) : 0;
  const bool failed = context.world.broadcast_value(verdicts, 0) > 0;
  runner_->finish();  // NCCL's parent communicator (if any) goes with the sweep, on every rank at once
  return failed ? ExitStatus::measurement_failed : ExitStatus::ok;
}

std::vector<Round> SweepBenchmark::start(const app::RunContext& context, SweepWriter* writer) {
  const auto mine =
      NicBook::of_this_rank(opt_.rail_map ? &*opt_.rail_map : nullptr, job_.local_rank, runner_->rdma_nic());
  runner_->start(context, opt_.backend == ops::BackendKind::nccl, mine.counter);
  job_.nics = NicBook::gather(context, tables_.nics, mine, opt_.rails > 1 ? job_.local_rank : 0, job_.host_of_rank,
                              job_.hosts.size(), opt_.rails);
  auto rounds = rounds_to_run();
  // --resume: every rank drops the pairs the earlier part finished (rank 0 read them); rounds keep their numbers.
  const auto finished =
      context.world.broadcast_array(context.is_root() ? finished_pairs() : std::vector<HostPair>{}, 0);
  std::size_t skipped = 0;
  for (auto& round : rounds) {
    const auto before = round.pairs.size();
    round.pairs.erase(std::remove_if(round.pairs.begin(), round.pairs.end(),
                                     [&](const HostPair& p) {
                                       return std::find(finished.begin(), finished.end(), p.unordered()) !=
                                              finished.end();
                                     }),
                      round.pairs.end());
    skipped += before - round.pairs.size();
  }
  if (writer) writer->start(rounds, skipped);
  return rounds;
}

std::int64_t SweepBenchmark::finish(const app::RunContext& context, SweepWriter& writer, PassLoop::Done& done) {
  const auto& tally = done.tally;
  auto& judgement = done.judgement;
  if (opt_.mesh) context.out->attribute("passes", static_cast<std::int64_t>(done.passes));
  writer.topology(judgement);
  writer.untested(tally, done.untested);
  context.out->note(
      fmt::format("time of the rounds: pair tests {}, setup {} (each round's longest, summed; setup: "
                  "communicator splits, NCCL communicators, QPs; per pair in /sweep/pairs setup_s)",
                  human_duration(tally.test_longest_s), human_duration(tally.setup_longest_s)));
  // Every pair's own, summed: what the sweep's pairs cost in all, setup beside measuring.
  context.out->note(fmt::format("pair rows: setup {}, measure {} (sums of setup_s and measure_s over {} rows)",
                                human_duration(tally.pair_setup_s), human_duration(tally.pair_measure_s),
                                tally.pair_rows));
  context.out->attribute("pair_setup_s", tally.pair_setup_s);
  context.out->attribute("pair_measure_s", tally.pair_measure_s);
  // A run that tested fewer hosts or pairs than asked is not a pass: its untested hosts are verdicts too.
  const auto coverage = writer.coverage(done.records, tally, done.untested);
  for (auto& v : coverage.verdicts()) judgement.verdicts.push_back(std::move(v));
  context.out->attribute("hosts_planned", static_cast<double>(coverage.hosts_planned));
  context.out->attribute("hosts_tested", static_cast<double>(coverage.hosts_tested));
  context.out->attribute("pairs_planned", static_cast<double>(coverage.pairs_planned));
  context.out->attribute("pairs_tested", static_cast<double>(coverage.pairs_tested));
  context.out->attribute("coverage_complete", coverage.complete() ? 1 : 0);
  if (!opt_.mesh && !opt_.prometheus.empty())  // one pass: the textfile once, at the end
    writer.prometheus(done.passes, tally, done.untested, results::utc_timestamp(), done.records, judgement, true);
  writer.judgement(done.records, judgement, coverage);
  return static_cast<std::int64_t>(judgement.verdicts.size()) + (done.any_verdict ? 1 : 0) + writer.changes();
}

}  // namespace fabricbench::tools::sweep
