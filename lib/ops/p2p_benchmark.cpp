#include "fabricbench/ops/p2p_benchmark.hpp"

#include <fmt/format.h>

#include <cmath>
#include <cstdlib>
#include <numeric>

#include "fabricbench/cli/byte_size.hpp"
#include "fabricbench/ops/bandwidth.hpp"
#include "fabricbench/runtime/gpu.hpp"
#include "fabricbench/timing/iteration_timer.hpp"
#include "fabricbench/timing/sample_stats.hpp"

namespace fabricbench::ops {
namespace {

void check(int rc, const char* what) { runtime::check_mpi(rc, what); }

}  // namespace

P2PBenchmark::P2PBenchmark() : table_(make_table()) {}

std::string P2PBenchmark::summary() const {
  std::string s = "fabric-p2p: OSU-style point-to-point latency and bandwidth over MPI.\n"
                  "Rank i is paired with rank i+N/2 (use --map-by node to put pairs across nodes); all pairs run "
                  "at once.\nTests:";
  for (const auto& t : p2p_tests()) s += fmt::format("\n  {:8} {}", t.name, t.description);
  return s;
}

results::TableSpec P2PBenchmark::make_table() {
  using results::ColumnType;
  results::TableSpec t{"results", "p2p", {}};
  t.columns = {{"test", ColumnType::text, 16},       {"memory", ColumnType::text, 8},
               {"bytes", ColumnType::integer},       {"pairs", ColumnType::integer},
               {"window", ColumnType::integer},      {"iterations", ColumnType::integer},
               {"warmup", ColumnType::integer},      {"latency_us", ColumnType::real},
               {"bw_mbps", ColumnType::real},        {"bw_min_pair_mbps", ColumnType::real},
               {"msg_rate_mps", ColumnType::real},   {"time_us_min", ColumnType::real},
               {"time_us_median", ColumnType::real}, {"time_us_mean", ColumnType::real},
               {"time_us_max", ColumnType::real},    {"time_us_p90", ColumnType::real},
               {"time_us_p99", ColumnType::real},    {"time_us_stddev", ColumnType::real},
               {"wrong", ColumnType::integer}};
  return t;
}

void P2PBenchmark::add_options(cli::po::options_description& options) {
  options.add_options()
      ("test,t", cli::po::value<std::string>()->default_value("all"), "latency, bw, bibw, mbw_mr, or all")
      ("window,W", cli::po::value<long long>()->default_value(64), "messages in flight per iteration for bw, bibw, mbw_mr (OSU -W)")
      ("memory", cli::po::value<std::string>()->default_value("host"), "where buffers live: host, pinned or device (device needs a CUDA-aware MPI)");
}

void P2PBenchmark::configure(const cli::po::variables_map& values, const cli::CommonOptions& common,
                             const runtime::Placement& placement) {
  const auto test = values["test"].as<std::string>();
  tests_.clear();
  for (const auto& t : p2p_tests())
    if (test == "all" ? t.name != "mbw_mr" || placement.world_size() > 2 : t.name == test) tests_.push_back(&t);
  if (tests_.empty()) cli::require_choice("--test", test, {"latency", "bw", "bibw", "mbw_mr", "all"});
  const auto window = values["window"].as<long long>();
  cli::require_at_least("--window", window, 1);
  cli::require_at_least("--window", -window, -100000);
  window_ = static_cast<int>(window);
  memory_ = memory::parse_memory_kind(values["memory"].as<std::string>(), "--memory");
  pairs_.emplace(placement.world_size());
  if (memory_ != memory::MemoryKind::host) gpu_ = runtime::bind_gpu(placement.me().machine_local_rank);
  if (memory_ == memory::MemoryKind::device && !runtime::mpi_is_cuda_aware())
    throw Error::usage("--memory device: this MPI library is not CUDA-aware (MPIX_Query_cuda_support); use host or pinned");
  flip_byte_ = std::getenv("FABRICBENCH_TEST_FLIP_BYTE") != nullptr;
  (void)common;
}

PairMeasurement P2PBenchmark::measure(const P2PTest& test, std::uint64_t bytes, int iterations, int warmup,
                                      const runtime::Communicator& world) {
  const int me = world.rank();
  return run_exchange(test, {world.get(), me, pairs_->peer_of(me), pairs_->leads(me), *send_, *recv_, bytes, iterations,
                             warmup, window_, check_, flip_byte_});
}

void P2PBenchmark::report(const app::RunContext& context, const P2PTest& test, std::uint64_t bytes, int iterations,
                          int warmup, const PairMeasurement& mine) {
  const auto& world = context.world;
  const int n = world.size();
  // Leaders' elapsed times and laps, and every rank's wrong count, to rank 0.
  std::vector<double> elapsed(context.is_root() ? n : 0);
  check(MPI_Gather(&mine.elapsed_s, 1, MPI_DOUBLE, elapsed.data(), 1, MPI_DOUBLE, 0, world.get()), "MPI_Gather");
  std::uint64_t wrong = 0;
  check(MPI_Reduce(&mine.wrong, &wrong, 1, MPI_UINT64_T, MPI_SUM, 0, world.get()), "MPI_Reduce");
  const int my_laps = static_cast<int>(mine.laps_us.size());
  std::vector<int> lap_counts(context.is_root() ? n : 0), displs(context.is_root() ? n : 0);
  check(MPI_Gather(&my_laps, 1, MPI_INT, lap_counts.data(), 1, MPI_INT, 0, world.get()), "MPI_Gather");
  if (context.is_root()) std::exclusive_scan(lap_counts.begin(), lap_counts.end(), displs.begin(), 0);
  std::vector<double> laps(context.is_root() ? static_cast<std::size_t>(displs.back() + lap_counts.back()) : 0);
  check(MPI_Gatherv(mine.laps_us.data(), my_laps, MPI_DOUBLE, laps.data(), lap_counts.data(), displs.data(),
                    MPI_DOUBLE, 0, world.get()),
        "MPI_Gatherv");
  if (!context.is_root()) return;

  const int pairs = pairs_->pairs();
  double latency_sum = 0, bw_sum = 0, rate_sum = 0, bw_min = INFINITY;
  std::vector<double> metric_samples;
  std::vector<results::Sample> samples;
  for (int r = 0; r < pairs; ++r) {
    const double t = elapsed[r];
    const double bw = window_bandwidth_mbps(bytes, window_, iterations, test.directions, t);
    latency_sum += pingpong_latency_us(t, iterations);
    bw_sum += bw;
    bw_min = std::min(bw_min, bw);
    rate_sum += message_rate_mps(window_, iterations, test.directions, t);
  }
  // Per-iteration sample: one-way latency for ping-pong, the time of one window otherwise.
  const double sample_scale = test.exchange == Exchange::ping_pong ? 0.5 : 1.0;
  const bool mean = test.aggregate == PairAggregate::mean;
  results::Row row(table_);
  row.set("test", std::string(test.name)).set("memory", std::string(memory::to_string(memory_)));
  row.set("bytes", std::int64_t(bytes)).set("pairs", std::int64_t(pairs)).set("iterations", std::int64_t(iterations));
  row.set("warmup", std::int64_t(warmup)).set("wrong", std::int64_t(wrong));
  if (test.exchange == Exchange::ping_pong) {
    row.set("latency_us", latency_sum / pairs).set("window", std::int64_t{1});
  } else {
    row.set("window", std::int64_t(window_)).set("bw_mbps", mean ? bw_sum / pairs : bw_sum);
    row.set("bw_min_pair_mbps", bw_min).set("msg_rate_mps", mean ? rate_sum / pairs : rate_sum);
  }
  for (int r = 0; r < pairs; ++r)
    for (int i = 0; i < lap_counts[r]; ++i) metric_samples.push_back(laps[displs[r] + i] * sample_scale);
  const auto stats = timing::SampleStats::of(metric_samples);
  row.set("time_us_min", stats.min).set("time_us_median", stats.median).set("time_us_mean", stats.mean);
  row.set("time_us_max", stats.max).set("time_us_p90", stats.p90).set("time_us_p99", stats.p99);
  row.set("time_us_stddev", stats.stddev);
  const auto index = context.out->row(row);
  samples.reserve(metric_samples.size());
  for (int r = 0; r < pairs; ++r)
    for (int i = 0; i < lap_counts[r]; ++i)
      samples.push_back({index, i, r, laps[displs[r] + i] * sample_scale});
  context.out->samples(table_, samples);
}

ExitStatus P2PBenchmark::run(const app::RunContext& context) {
  const auto& sizes = context.options.sizes.values();
  check_ = context.options.check;
  send_.emplace(memory_, context.options.sizes.max());
  recv_.emplace(memory_, context.options.sizes.max());
  if (context.is_root()) {
    for (int p = 0; p < pairs_->pairs(); ++p) {
      const auto& a = context.placement.ranks()[p];
      const auto& b = context.placement.ranks()[pairs_->peer_of(p)];
      context.out->note(fmt::format("pair {}: rank {} ({}) <-> rank {} ({})", p, a.rank, a.host, b.rank, b.host));
    }
    context.out->note(fmt::format("memory: {}  check: {}", memory::to_string(memory_), check_ ? "on" : "off"));
  }
  std::uint64_t wrong_total = 0;
  for (std::size_t k = 0; k < tests_.size(); ++k) {
    const auto& test = *tests_[k];
    context.progress(fmt::format("test {} of {}: {} ({} sizes)", k + 1, tests_.size(), test.name, sizes.size()));
    if (context.is_root()) {
      std::vector<results::TerminalColumn> shown{{"bytes", "size_B"}, {"iterations", "iters"}};
      if (test.exchange == Exchange::ping_pong) {
        shown.insert(shown.end(), {{"latency_us", "latency_us"}, {"time_us_median", "p50_us"},
                                   {"time_us_p90", "p90_us"}, {"time_us_p99", "p99_us"},
                                   {"time_us_min", "min_us"}, {"time_us_max", "max_us"}});
      } else {
        shown.insert(shown.end(), {{"bw_mbps", "bw_MB/s"}, {"msg_rate_mps", "msgs_M/s", 3},
                                   {"time_us_median", "p50_win_us"}, {"time_us_p99", "p99_win_us"}});
        if (pairs_->pairs() > 1) shown.push_back({"bw_min_pair_mbps", "min_pair_MB/s"});
      }
      shown.push_back({"wrong", "#wrong"});
      context.out->section(table_, fmt::format("{}: {}  (pairs: {}, window: {})", test.name, test.description,
                                               pairs_->pairs(), test.exchange == Exchange::ping_pong ? 1 : window_),
                           shown);
    }
    for (const auto bytes : sizes) {
      const int iterations = test.defaults.iterations(bytes, context.options.iterations);
      const int warmup = test.defaults.warmup(bytes, context.options.warmup);
      context.measuring(fmt::format("{} at {} B", test.name, bytes));
      const auto mine = measure(test, bytes, iterations, warmup, context.world);
      report(context, test, bytes, iterations, warmup, mine);
      context.measured();
      wrong_total += mine.wrong;
    }
  }
  std::uint64_t wrong_all = 0;
  check(MPI_Allreduce(&wrong_total, &wrong_all, 1, MPI_UINT64_T, MPI_SUM, context.world.get()), "MPI_Allreduce");
  if (wrong_all > 0 && context.is_root()) context.out->note(fmt::format("{} bytes failed the check", wrong_all));
  return wrong_all > 0 ? ExitStatus::measurement_failed : ExitStatus::ok;
}

}  // namespace fabricbench::ops
