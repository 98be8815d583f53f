#include "fabricbench/tools/p2p/p2p_benchmark.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>

#include "fabricbench/cli/byte_size.hpp"
#include "fabricbench/cli/choice.hpp"
#include "fabricbench/cli/name_list.hpp"
#include "fabricbench/error.hpp"
#include "fabricbench/ops/bandwidth.hpp"
#include "fabricbench/runtime/gpu.hpp"
#include "fabricbench/test_hooks.hpp"
#include "fabricbench/timing/iteration_timer.hpp"
#include "fabricbench/timing/rank_laps.hpp"
#include "fabricbench/timing/timed_blocks.hpp"

namespace fabricbench::tools::p2p {
namespace {

// An option the chosen tests never read is refused, not ignored (issue 48): a latency run given -W 16 would
// otherwise look as if it had measured with that window. Only what was typed: a --config preset sets the window for
// every test.
void refuse_unused_options(const cli::po::variables_map& values, const cli::CommonOptions& common,
                           const std::vector<const ops::P2PTest*>& tests) {
  const auto windowed = std::any_of(tests.begin(), tests.end(),
                                    [](const ops::P2PTest* t) { return t->exchange != ops::Exchange::ping_pong; });
  if (!windowed && cli::typed(values, common, "window"))
    throw Error::usage(fmt::format("--window with --test {}: the window applies to bw, bibw and mbw_mr; drop it",
                                   values["test"].as<std::string>()));
  // -n gives one block of that count, so a time to fill is never read; --min-time 0 says the same and is fine.
  if (common.iterations > 0 && values["min-time"].as<double>() > 0 && cli::typed(values, common, "min-time"))
    throw Error::usage("--min-time with --iters: -n times one block of that count; give one of them");
}

}  // namespace

P2PBenchmark::P2PBenchmark() : table_(make_table()), samples_(table_.samples()), col_(table_) {}

P2PBenchmark::Columns::Columns(const results::TableSpec& t)
    : test(t.handle<std::string>("test")),
      memory(t.handle<std::string>("memory")),
      backend(t.handle<std::string>("backend")),
      bytes(t.handle<std::int64_t>("bytes")),
      pairs(t.handle<std::int64_t>("pairs")),
      iterations(t.handle<std::int64_t>("iterations")),
      warmup(t.handle<std::int64_t>("warmup")),
      wrong(t.handle<std::int64_t>("wrong")),
      blocks(t.handle<std::int64_t>("blocks")),
      window(t.handle<std::int64_t>("window")),
      time_us_spread_pct(t.handle<double>("time_us_spread_pct")),
      latency_us(t.handle<double>("latency_us")),
      bw_mbps(t.handle<double>("bw_mbps")),
      bw_min_pair_mbps(t.handle<double>("bw_min_pair_mbps")),
      msg_rate_mps(t.handle<double>("msg_rate_mps")),
      time_us_min(t.handle<double>("time_us_min")),
      time_us_median(t.handle<double>("time_us_median")),
      time_us_mean(t.handle<double>("time_us_mean")),
      time_us_max(t.handle<double>("time_us_max")),
      time_us_p90(t.handle<double>("time_us_p90")),
      time_us_p99(t.handle<double>("time_us_p99")),
      time_us_stddev(t.handle<double>("time_us_stddev")) {}

std::string P2PBenchmark::summary() const {
  std::string s =
      "fabric-p2p: OSU-style point-to-point latency and bandwidth over MPI, or between GPUs over "
      "NCCL (--backend nccl: OSU's xccl benchmarks).\n"
      "Rank i is paired with rank i+N/2 (use --map-by node to put pairs across nodes); all pairs run "
      "at once.\nTests:";
  for (const auto& t : ops::p2p_tests()) s += fmt::format("\n  {:8} {}", t.name, t.description);
  return s;
}

results::TableSpec P2PBenchmark::make_table() {
  using namespace results;
  TableSpec table{"results",
                  "p2p",
                  {series(key_text("test", 16)),
                   key_text("memory", 8),
                   key_text("backend", 8),
                   key_int("bytes", Unit::bytes, "size_B"),
                   key_int("pairs"),
                   key_int("window"),
                   setting_int("iterations", "iters"),
                   setting_int("warmup"),
                   setting_int("blocks"),
                   headline(measured("latency_us", Unit::us, Better::lower)),
                   headline(measured("bw_mbps", Unit::mbps, Better::higher, "bw_MB/s")),
                   measured("bw_min_pair_mbps", Unit::mbps, Better::higher, "min_pair_MB/s"),
                   measured("msg_rate_mps", Unit::mega_per_s, Better::higher, "msgs_M/s", 3),
                   statistic("time_us_min", Unit::us, Better::lower, "min_us"),
                   statistic("time_us_median", Unit::us, Better::lower, "p50_us"),
                   statistic("time_us_mean", Unit::us, Better::lower, "mean_us"),
                   statistic("time_us_max", Unit::us, Better::lower, "max_us"),
                   statistic("time_us_p90", Unit::us, Better::lower, "p90_us"),
                   statistic("time_us_p99", Unit::us, Better::lower, "p99_us"),
                   statistic("time_us_stddev", Unit::us, Better::lower, "stddev_us"),
                   statistic("time_us_spread_pct", Unit::percent, Better::lower, "spread_%", 1),
                   measured_int("wrong", Unit::bytes, Better::lower, "#wrong")}};
  for (auto& c : facts::counter_columns()) table.columns.push_back(std::move(c));
  for (auto& c : facts::ExpectedShare::columns()) table.columns.push_back(std::move(c));
  return table;
}

void P2PBenchmark::add_options(cli::po::options_description& options) {
  auto add = options.add_options();
  add("test,t", cli::po::value<std::string>()->default_value("all"),
      ("tests, comma-separated: " +
       cli::name_choices(cli::names_of(ops::p2p_tests(), [](const ops::P2PTest& t) { return t.name; }), {{"all", {}}}) +
       " (all: every test, mbw_mr only with more than one pair)")
          .c_str());
  add("window,W", cli::po::value<long long>()->default_value(64),
      "messages in flight per iteration for bw, bibw, mbw_mr (OSU -W)");
  add("memory", cli::po::value<std::string>()->default_value("host"),
      "where buffers live: host, pinned or device (device needs a CUDA-aware MPI, or --backend nccl)");
  add("backend", cli::po::value<std::string>()->default_value("mpi"),
      "mpi (MPI_Isend/MPI_Irecv) or nccl (ncclSend/ncclRecv between GPUs, device buffers, one rank per GPU: OSU's "
      "osu_xccl_* tests on any MPI)");
  add("min-time", cli::po::value<double>()->default_value(0.1),
      "without -n: repeat each size's timed block of OSU's iteration count until about this many seconds were timed "
      "(at most 100 blocks) and report the median block, with the blocks' spread; 0: one block");
}

void P2PBenchmark::configure(const cli::po::variables_map& values, const cli::CommonOptions& common,
                             const runtime::Placement& placement) {
  // "all": every test, but a sum over the pairs (mbw_mr) only with more than one pair (with one it is bw again).
  const auto& table = ops::p2p_tests();
  cli::NameGroup all{"all", {}};
  for (std::size_t i = 0; i < table.size(); ++i)
    if (table[i].aggregate != ops::PairAggregate::sum || placement.world_size() > 2) all.members.push_back(i);
  tests_.clear();
  for (const auto i : cli::parse_name_list("--test", values["test"].as<std::string>(),
                                           cli::names_of(table, [](const ops::P2PTest& t) { return t.name; }), {all}))
    tests_.push_back(&table[i]);
  const auto window = values["window"].as<long long>();
  cli::require_in_range("--window", window, 1, ops::max_window);
  window_ = static_cast<int>(window);
  min_time_s_ = timing::TimedBlocks::checked_min_time(values["min-time"].as<double>(), "--min-time");
  refuse_unused_options(values, common, tests_);
  for (const auto* t : tests_)
    if (t->exchange != ops::Exchange::ping_pong && common.sizes.min() == 0)
      throw Error::usage(
          fmt::format("--sizes 0: {} measures bandwidth, which needs messages of at least 1 byte "
                      "(latency takes 0)",
                      t->name));
  memory_ = memory::parse_memory_kind(values["memory"].as<std::string>(), "--memory");
  backend_ = cli::parse_choice(values["backend"].as<std::string>(), "--backend", ops::kBackendKinds);
  pairs_.emplace(placement.world_size());
  if (backend_ == ops::BackendKind::nccl) {
    if (!values["memory"].defaulted() && memory_ != memory::MemoryKind::device)
      throw Error::usage(
          fmt::format("--memory {} with --backend nccl: NCCL moves device memory only (--memory "
                      "device, its default there)",
                      memory::to_string(memory_)));
    memory_ = memory::MemoryKind::device;
    if (!ops::nccl_p2p_built())
      throw Error::usage(
          "--backend nccl: this build has no NCCL (configure with CUDA and NCCL found); use --backend mpi");
    // Before NCCL is called: a communicator with two ranks on one GPU fails inside ncclCommInitRank.
    const int gpus = runtime::visible_gpus();
    const auto& me = placement.me();
    if (gpus == 0) throw Error::usage("--backend nccl: no GPU is visible to this rank; NCCL needs one GPU per rank");
    if (me.machine_local_rank >= gpus)
      throw Error::usage(
          fmt::format("--backend nccl: rank {} on {} would share a GPU ({} visible there for {} or more "
                      "ranks); NCCL needs one rank per GPU: start at most {} rank(s) per machine",
                      me.rank, me.host, gpus, me.machine_local_rank + 1, gpus));
  }
  if (memory_ != memory::MemoryKind::host) gpu_ = runtime::bind_gpu(placement.me().machine_local_rank);
  if (backend_ == ops::BackendKind::mpi && memory_ == memory::MemoryKind::device && !runtime::mpi_is_cuda_aware())
    throw Error::usage(
        "--memory device: this MPI library is not CUDA-aware (MPIX_Query_cuda_support); use host or "
        "pinned, or --backend nccl");
  flip_byte_ = TestHooks::current().flip_byte;
  if (common.iterations > 0) min_time_s_ = 0;  // -n: a count, as OSU's -i
}

ops::PairMeasurement P2PBenchmark::measure(const ops::P2PTest& test, std::uint64_t bytes, int iterations, int warmup,
                                           const runtime::Communicator& world) {
  const int me = world.rank();
  ops::Exchanger x{
      world.get(), me,     pairs_->peer_of(me), pairs_->leads(me), *send_, *recv_, bytes, iterations, warmup,
      window_,     check_, flip_byte_};
  x.min_time_s = min_time_s_;
  return nccl_ ? nccl_->run(test, x) : run_exchange(test, x);
}

void P2PBenchmark::report(const app::RunContext& context, const app::ToolLoop& loop, const ops::P2PTest& test,
                          std::uint64_t bytes, int iterations, int warmup, const ops::PairMeasurement& mine,
                          const facts::CounterReading& grown) {
  const auto& world = context.world;
  // Leaders' elapsed times and laps, and every rank's wrong count, to rank 0.
  const auto elapsed = world.gather_values(mine.elapsed_s, 0);
  const auto spreads = world.gather_values(mine.spread, 0);
  const auto wrong = world.sum(mine.wrong, 0);
  const auto laps = timing::RankLaps::gather(world, mine.laps_us);
  if (!context.is_root()) return;

  const int pairs = pairs_->pairs();
  double latency_sum = 0, bw_sum = 0, rate_sum = 0, bw_min = INFINITY, spread = NAN;
  const bool ping_pong = test.exchange == ops::Exchange::ping_pong;
  for (int r = 0; r < pairs; ++r) {
    const double t = elapsed[r];
    if (!std::isnan(spreads[r])) spread = std::isnan(spread) ? spreads[r] : std::max(spread, spreads[r]);
    const double figure = test.pair_figure(bytes, window_, iterations, t);
    if (ping_pong) {
      latency_sum += figure;
      continue;
    }
    const double bw = figure;
    bw_sum += bw;
    bw_min = std::min(bw_min, bw);
    rate_sum += ops::message_rate_mps(window_, iterations, test.directions, t);
  }
  // Per-iteration sample: one-way latency for ping-pong, the time of one window otherwise.
  const double sample_scale = ping_pong ? 0.5 : 1.0;
  const bool mean = test.aggregate == ops::PairAggregate::mean;
  results::Row row(table_);
  row.set(col_.test, std::string(test.name)).set(col_.memory, std::string(memory::to_string(memory_)));
  row.set(col_.backend, std::string(to_string(backend_)));
  row.set(col_.bytes, std::int64_t(bytes))
      .set(col_.pairs, std::int64_t(pairs))
      .set(col_.iterations, std::int64_t(iterations));
  row.set(col_.warmup, std::int64_t(warmup)).set(col_.wrong, std::int64_t(wrong));
  row.set(col_.blocks, std::int64_t(mine.blocks)).set(col_.time_us_spread_pct, spread * 100);
  if (ping_pong) {
    row.set(col_.latency_us, latency_sum / pairs).set(col_.window, std::int64_t{1});
  } else {
    row.set(col_.window, std::int64_t(window_)).set(col_.bw_mbps, mean ? bw_sum / pairs : bw_sum);
    row.set(col_.bw_min_pair_mbps, bw_min).set(col_.msg_rate_mps, mean ? rate_sum / pairs : rate_sum);
  }
  // Ranks 0 .. pairs-1 lead their pairs: theirs are the laps.
  const auto stats = laps.stats(sample_scale, pairs);
  row.set(col_.time_us_min, stats.min).set(col_.time_us_median, stats.median).set(col_.time_us_mean, stats.mean);
  row.set(col_.time_us_max, stats.max).set(col_.time_us_p90, stats.p90).set(col_.time_us_p99, stats.p99);
  row.set(col_.time_us_stddev, stats.stddev);
  // Between GPUs: the healthy curve of this test over NCCL where one was measured; MPI's between GPUs has none.
  if (!ping_pong)
    context.expect(row, facts::ExpectedShare::gbps(row.number("bw_mbps"), results::Unit::mbps),
                   context.expected.at_size(reference(context, test), curve_op(test), 2 * pairs_->pairs(), bytes),
                   bytes, fmt::format("{} at {} B", test.name, bytes));
  loop.write(row, grown, samples_, [&](std::int64_t index) { return laps.samples(index, sample_scale, pairs); });
}

facts::Reference P2PBenchmark::reference(const app::RunContext& context, const ops::P2PTest& test) const {
  // The slowest pair's stream; a sum over pairs (mbw_mr) as ExpectedShare::pairs_sum; both directions count twice.
  const auto& ranks = context.placement.ranks();
  const bool gpu_memory = memory_ == memory::MemoryKind::device;
  facts::Reference slowest;
  std::vector<std::string> hosts;
  for (int p = 0; p < pairs_->pairs(); ++p) {
    const auto& a = ranks[p].host;
    const auto& b = ranks[pairs_->peer_of(p)].host;
    hosts.insert(hosts.end(), {a, b});
    const auto ref = context.expected.stream(a, b, gpu_memory);
    if (!ref.known()) return {};
    if (!slowest.known() || ref.gbps < slowest.gbps) slowest = ref;
  }
  const auto ref =
      test.aggregate == ops::PairAggregate::sum ? context.expected.pairs_sum(slowest, pairs_->pairs(), hosts) : slowest;
  return test.directions == 2 ? ref.scaled(2, "both directions of") : ref;
}

std::string P2PBenchmark::curve_op(const ops::P2PTest& test) const {
  return fmt::format("{}p2p_{}", backend_ == ops::BackendKind::nccl ? "nccl_" : "", test.name);
}

std::string P2PBenchmark::section_title(const ops::P2PTest& test) const {
  return fmt::format("{}: {}  (pairs: {}, window: {})", test.name, test.description, pairs_->pairs(),
                     test.exchange == ops::Exchange::ping_pong ? 1 : window_);
}

std::vector<results::TerminalColumn> P2PBenchmark::terminal_view(const app::RunContext& context,
                                                                 const ops::P2PTest& test) const {
  std::vector<results::TerminalColumn> shown{{"bytes"}, {"iterations"}};
  if (test.exchange == ops::Exchange::ping_pong) {
    shown.insert(
        shown.end(),
        {{"latency_us"}, {"time_us_median"}, {"time_us_p90"}, {"time_us_p99"}, {"time_us_min"}, {"time_us_max"}});
  } else {
    shown.insert(shown.end(),
                 {{"bw_mbps"}, {"msg_rate_mps"}, {"time_us_median", "p50_win_us"}, {"time_us_p99", "p99_win_us"}});
    if (pairs_->pairs() > 1) shown.push_back({"bw_min_pair_mbps"});
    if (reference(context, test).known()) shown.push_back({"pct_expected"});
  }
  if (min_time_s_ > 0) shown.push_back({"time_us_spread_pct"});
  shown.push_back({"wrong"});
  return shown;
}

ExitStatus P2PBenchmark::run(const app::RunContext& context) {
  const auto& sizes = context.options.sizes.values();
  check_ = context.options.check;
  send_.emplace(memory_, context.options.sizes.max());
  recv_.emplace(memory_, context.options.sizes.max());
  if (backend_ == ops::BackendKind::nccl) nccl_ = std::make_unique<ops::NcclP2P>(context.world);
  // Every host's links (NVLink too with GPU memory), read by its first rank around every size.
  app::ToolLoop loop(
      context, facts::LinkWatch(context.world, context.placement.me().host, memory_ == memory::MemoryKind::device));
  if (context.is_root()) context.out->declare(samples_);
  loop.note_pairs(*pairs_);
  if (context.is_root())
    context.out->note(fmt::format("backend: {}  memory: {}  check: {}", to_string(backend_), memory::to_string(memory_),
                                  check_ ? "on" : "off"));
  for (std::size_t k = 0; k < tests_.size(); ++k) {
    const auto& test = *tests_[k];
    loop.begin("test", k, tests_.size(), test.name, sizes.size());
    if (context.is_root()) context.out->section(table_, section_title(test), terminal_view(context, test));
    for (const auto bytes : sizes) {
      const int iterations = test.defaults.iterations(bytes, context.options.iterations);
      const int warmup = test.defaults.warmup(bytes, context.options.warmup);
      loop.step(
          fmt::format("{} at {} B", test.name, bytes),
          [&] { return measure(test, bytes, iterations, warmup, context.world); },
          [&](const ops::PairMeasurement& mine, const facts::CounterReading& grown) {
            loop.count_wrong(mine.wrong);
            report(context, loop, test, bytes, iterations, warmup, mine, grown);
          });
    }
  }
  return loop.finish("bytes");
}

}  // namespace fabricbench::tools::p2p
