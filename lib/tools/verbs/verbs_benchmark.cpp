#include "fabricbench/tools/verbs/verbs_benchmark.hpp"

#include <fmt/format.h>
#include <sched.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <filesystem>

#include "fabricbench/cli/byte_size.hpp"
#include "fabricbench/cli/choice.hpp"
#include "fabricbench/cli/name_list.hpp"
#include "fabricbench/runtime/gpu.hpp"
#include "fabricbench/test_hooks.hpp"
#include "fabricbench/timing/rank_laps.hpp"

namespace fabricbench::tools::verbs {
using namespace fabricbench::verbs;  // lib/verbs: what this tool runs
namespace {

// The NUMA node of the CPU this rank runs on (-1 when the machine does not say).
int current_numa_node() {
  const int cpu = sched_getcpu();
  std::error_code ec;
  for (const auto& entry : std::filesystem::directory_iterator(fmt::format("/sys/devices/system/cpu/cpu{}", cpu), ec)) {
    const auto name = entry.path().filename().string();
    if (name.rfind("node", 0) == 0 && name.size() > 4) return std::atoi(name.c_str() + 4);
  }
  return -1;
}

std::vector<std::string> test_names() {
  return cli::names_of(verbs_tests(), [](const VerbsTest& t) { return t.name; });
}

// What a rank sends rank 0 for one test and size (plain values, gathered as one record).
struct RankFigures {
  int timed = 0;
  double avg_mibps = 0, peak_mibps = 0, avg_gbitps = 0, peak_gbitps = 0, msg_rate_mps = 0;
  std::uint64_t wrong = 0;
  // Adds the rates of `other` (pairs and the two sides of a bidirectional pair add up, as perftest's -b).
  RankFigures& add_rates(const RankFigures& other) {
    avg_mibps += other.avg_mibps;
    peak_mibps += other.peak_mibps;
    avg_gbitps += other.avg_gbitps;
    peak_gbitps += other.peak_gbitps;
    msg_rate_mps += other.msg_rate_mps;
    return *this;
  }
};

// Largest message one scatter/gather entry describes (its length is 32 bits; devices cap at 2 GiB).
constexpr std::uint64_t max_message = std::uint64_t{1} << 31;

// An option none of the chosen tests reads is refused, not ignored (issue 48): write_lat given -t 64 would otherwise
// look as if it had run with 64 in flight. Only what was typed (cli::typed): a --config preset may set them for
// every test.
void refuse_unused_options(const cli::po::variables_map& values, const cli::CommonOptions& common,
                           const std::vector<const VerbsTest*>& tests) {
  const auto any = [&](auto pred) { return std::any_of(tests.begin(), tests.end(), pred); };
  const auto test_list = values["test"].as<std::string>();
  const auto refuse = [&](const std::string& option, const std::string& why) {
    throw Error::usage(fmt::format("{} with --test {}: {}; drop it", option, test_list, why));
  };
  const auto typed = [&](const char* name) { return cli::typed(values, common, name); };
  // A latency test is one ping-pong (or one read, one atomic) at a time on one QP, each completion polled.
  if (!any([](const VerbsTest* t) { return t->pattern == Pattern::bandwidth; })) {
    for (const char* name : {"tx-depth", "cq-mod", "qps", "bidirectional", "report-gbits"})
      if (typed(name))
        refuse(std::string("--") + name,
               "it applies to the bandwidth tests (write_bw, read_bw, send_bw, atomic_bw) only");
  }
  if (typed("rx-depth") && !any([](const VerbsTest* t) { return t->verb == Verb::send; }))
    refuse("--rx-depth", "receives are posted by send_bw and send_lat only");
  if (typed("atomic-type") && !any([](const VerbsTest* t) { return t->verb == Verb::atomic; }))
    refuse("--atomic-type", "it applies to atomic_bw and atomic_lat only");
  // Reads and atomics carry no data in the work request: inline is for writes and sends.
  if (typed("inline") && !any([](const VerbsTest* t) { return t->verb == Verb::write || t->verb == Verb::send; }))
    refuse("--inline", "only writes and sends carry inline data");
  if (!any([](const VerbsTest* t) { return !t->fixed_size(); }))
    for (const char* name : {"size", "all-sizes", "sizes", "min-bytes", "max-bytes", "step-factor", "osu-m"})
      if (typed(name)) refuse(std::string("--") + name, "atomics move 8 bytes");
}

}  // namespace

VerbsBenchmark::VerbsBenchmark() : table_(make_table()), samples_(table_.samples()), col_(table_) {}

VerbsBenchmark::Columns::Columns(const results::TableSpec& t)
    : test(t.handle<std::string>("test")),
      memory(t.handle<std::string>("memory")),
      device(t.handle<std::string>("device")),
      link_layer(t.handle<std::string>("link_layer")),
      bytes(t.handle<std::int64_t>("bytes")),
      pairs(t.handle<std::int64_t>("pairs")),
      qps(t.handle<std::int64_t>("qps")),
      iterations(t.handle<std::int64_t>("iterations")),
      warmup(t.handle<std::int64_t>("warmup")),
      tx_depth(t.handle<std::int64_t>("tx_depth")),
      cq_mod(t.handle<std::int64_t>("cq_mod")),
      inline_bytes(t.handle<std::int64_t>("inline_bytes")),
      mtu(t.handle<std::int64_t>("mtu")),
      port(t.handle<std::int64_t>("port")),
      gid_index(t.handle<std::int64_t>("gid_index")),
      wrong(t.handle<std::int64_t>("wrong")),
      bw_avg_mibps(t.handle<double>("bw_avg_mibps")),
      bw_avg_gbitps(t.handle<double>("bw_avg_gbitps")),
      msg_rate_mps(t.handle<double>("msg_rate_mps")),
      bw_min_pair_mibps(t.handle<double>("bw_min_pair_mibps")),
      bw_peak_mibps(t.handle<double>("bw_peak_mibps")),
      bw_peak_gbitps(t.handle<double>("bw_peak_gbitps")),
      latency_us(t.handle<double>("latency_us")),
      time_us_min(t.handle<double>("time_us_min")),
      time_us_max(t.handle<double>("time_us_max")),
      time_us_mean(t.handle<double>("time_us_mean")),
      time_us_stddev(t.handle<double>("time_us_stddev")),
      time_us_p99(t.handle<double>("time_us_p99")),
      time_us_p999(t.handle<double>("time_us_p999")) {}
VerbsBenchmark::~VerbsBenchmark() = default;

std::string VerbsBenchmark::summary() const {
  std::string s =
      "fabric-verbs: perftest-style RDMA verbs tests (ib_write_bw, ib_read_lat, ...) over Reliable "
      "Connected queue pairs.\nRank i is paired with rank i+N/2 (use --map-by node to put pairs across "
      "nodes); all pairs run at once; queue pairs connect over MPI.\nTests:";
  for (const auto& t : verbs_tests()) s += fmt::format("\n  {:10} {} ({})", t.name, t.description, t.peer);
  return s;
}

results::TableSpec VerbsBenchmark::make_table() {
  using namespace results;
  TableSpec table{"results",
                  "verbs",
                  {series(key_text("test", 10)),
                   key_text("memory", 8),
                   key_int("bytes", Unit::bytes, "size_B"),
                   key_int("pairs"),
                   key_int("qps"),
                   setting_int("iterations", "iters"),
                   setting_int("warmup"),
                   setting_int("tx_depth"),
                   setting_int("cq_mod"),
                   setting_int("inline_bytes", "inline"),
                   setting_int("mtu", "mtu"),
                   setting_text("device", 16),
                   setting_int("port"),
                   setting_text("link_layer", 10),
                   setting_int("gid_index"),
                   measured("bw_peak_mibps", Unit::mibps, Better::higher, "BW_peak[MB/sec]"),
                   headline(measured("bw_avg_mibps", Unit::mibps, Better::higher, "BW_average[MB/sec]")),
                   measured("bw_peak_gbitps", Unit::gbitps, Better::higher, "BW_peak[Gb/sec]", 3),
                   measured("bw_avg_gbitps", Unit::gbitps, Better::higher, "BW_average[Gb/sec]", 3),
                   measured("bw_min_pair_mibps", Unit::mibps, Better::higher, "min_pair[MB/sec]"),
                   measured("msg_rate_mps", Unit::mega_per_s, Better::higher, "MsgRate[Mpps]", 6),
                   headline(measured("latency_us", Unit::us, Better::lower, "t_typical[usec]")),
                   statistic("time_us_min", Unit::us, Better::lower, "t_min[usec]"),
                   statistic("time_us_max", Unit::us, Better::lower, "t_max[usec]"),
                   statistic("time_us_mean", Unit::us, Better::lower, "t_avg[usec]"),
                   statistic("time_us_stddev", Unit::us, Better::lower, "t_stdev[usec]"),
                   statistic("time_us_p99", Unit::us, Better::lower, "99%[usec]"),
                   statistic("time_us_p999", Unit::us, Better::lower, "99.9%[usec]"),
                   measured_int("wrong", Unit::bytes, Better::lower, "#wrong")}};
  for (auto& c : facts::counter_columns()) table.columns.push_back(std::move(c));
  for (auto& c : facts::ExpectedShare::columns()) table.columns.push_back(std::move(c));
  return table;
}

void VerbsBenchmark::add_options(cli::po::options_description& options) {
  auto add = options.add_options();
  add("test", cli::po::value<std::string>()->default_value("write_bw"),
      ("tests, comma-separated: " + cli::name_choices(test_names(), {cli::NameGroup::all(verbs_tests().size())}))
          .c_str());
  add("size,s", cli::po::value<std::string>(),
      "one message size (perftest -s); default 65536 for bandwidth, 2 for latency, 8 for atomics");
  add("all-sizes,a", cli::po::bool_switch(), "every power of two from 2 B to 8 MiB (perftest -a)");
  add("duration,D", cli::po::value<double>(), "seconds per test and size instead of an iteration count (perftest -D)");
  add("qps,q", cli::po::value<int>()->default_value(1), "queue pairs per pair of ranks (perftest -q)");
  add("bidirectional,b", cli::po::bool_switch(),
      "both ranks of a pair send at once; the pair's bandwidth is the sum (perftest -b)");
  add("tx-depth,t", cli::po::value<int>(),
      "work requests in flight per QP (perftest -t); default 128 for bandwidth, 1 for latency");
  add("rx-depth,r", cli::po::value<int>()->default_value(512), "receives kept posted for send tests (perftest -r)");
  add("cq-mod,Q", cli::po::value<int>(),
      "a completion every N messages (perftest -Q); default 100, 1 above 8 KiB unless -a");
  add("inline,I", cli::po::value<int>(),
      "largest message sent inline (perftest -I); default 220 write_lat, 236 send_lat, 0 otherwise");
  add("mtu,m", cli::po::value<int>(), "path MTU 256-4096 (perftest -m); default the ports' active MTU");
  add("qp-timeout,u", cli::po::value<int>()->default_value(14),
      "local ACK timeout 0-31, 4.096 us x 2^N before a retransmission (perftest -u)");
  add("gid-index,x", cli::po::value<int>(),
      "GID index (perftest -x); default detected: the IPv4 RoCE v2 entry on Ethernet, none on InfiniBand");
  add("ib-dev,d", cli::po::value<std::string>(),
      "RDMA device (perftest -d); default the one on the rank's NUMA node, else the first with an Active port");
  add("ib-port,i", cli::po::value<int>(), "port of the device (perftest -i); default its first Active port");
  add("events,e", cli::po::bool_switch(), "sleep on completion events instead of polling (perftest -e)");
  add("atomic-type,A", cli::po::value<std::string>()->default_value("fetch_add"),
      "atomic tests: fetch_add or cmp_swap (perftest -A FETCH_AND_ADD|CMP_AND_SWAP)");
  add("report-gbits", cli::po::bool_switch(),
      "show bandwidth in Gb/s (1e9 bits) instead of MB/s (2^20 bytes) (perftest --report_gbits)");
  add("memory", cli::po::value<std::string>()->default_value("host"),
      "where buffers live: host or device (GPU memory registered through dma-buf or nvidia-peermem)");
}

void VerbsBenchmark::configure(const cli::po::variables_map& values, const cli::CommonOptions& common,
                               const runtime::Placement& placement) {
  tests_.clear();
  for (const auto i : cli::parse_name_list("--test", values["test"].as<std::string>(), test_names(),
                                           {cli::NameGroup::all(verbs_tests().size())}))
    tests_.push_back(&verbs_tests()[i]);

  sizes_given_ = values.count("sizes") || values.count("min-bytes") || values.count("max-bytes") ||
                 values.count("step-factor") || values.count("osu-m");
  settings_.all_sizes = values["all-sizes"].as<bool>();
  if (values.count("size")) size_ = cli::parse_byte_size(values["size"].as<std::string>(), "--size");
  if (int(sizes_given_) + int(settings_.all_sizes) + int(size_.has_value()) > 1)
    throw Error::usage("--size, --all-sizes and --sizes each give the sizes: use only one of them");
  for (const auto* t : tests_)
    for (const auto bytes : sizes_for(*t, common)) {
      if (bytes == 0)
        throw Error::usage(
            fmt::format("{} 0: {} needs messages of at least 1 byte", size_ ? "--size" : common.sizes_option, t->name));
      if (bytes > max_message)
        throw Error::usage(fmt::format("{} {}: at most 2G (one verbs message)", size_ ? "--size" : common.sizes_option,
                                       cli::format_byte_size(bytes)));
    }
  // perftest's minimum: the latency statistics drop the two largest of the round trips between posts.
  if (common.iterations > 0) cli::require_at_least("--iters", common.iterations, 5);
  if (values.count("duration")) {
    duration_s_ = values["duration"].as<double>();
    if (!(duration_s_ > 0) || duration_s_ > 3600)
      throw Error::usage(fmt::format("--duration {}: must be more than 0 and at most 3600 seconds", duration_s_));
    if (common.iterations > 0) throw Error::usage("--duration and --iters both set the length: give one");
  }
  const auto qps = values["qps"].as<int>();
  cli::require_in_range("--qps", qps, 1, 1024);
  settings_.qps = qps;
  settings_.bidirectional = values["bidirectional"].as<bool>();
  settings_.events = values["events"].as<bool>();
  if (values.count("tx-depth")) {
    cli::require_in_range("--tx-depth", values["tx-depth"].as<int>(), 1, 16384);
    settings_.tx_depth = values["tx-depth"].as<int>();
  }
  settings_.rx_depth = values["rx-depth"].as<int>();
  cli::require_in_range("--rx-depth", settings_.rx_depth, 1, 16384);
  if (values.count("cq-mod")) {
    cli::require_in_range("--cq-mod", values["cq-mod"].as<int>(), 1, 16384);
    settings_.cq_mod = values["cq-mod"].as<int>();
  }
  if (values.count("inline")) {
    cli::require_in_range("--inline", values["inline"].as<int>(), 0, 1024);
    settings_.inline_bytes = values["inline"].as<int>();
  }
  settings_.qp_timeout = values["qp-timeout"].as<int>();
  cli::require_in_range("--qp-timeout", settings_.qp_timeout, 0, 31);
  if (values.count("mtu")) settings_.mtu = mtu_bytes(parse_mtu(values["mtu"].as<int>()));
  settings_.atomic = cli::parse_choice(values["atomic-type"].as<std::string>(), "--atomic-type", kAtomicOps);
  report_gbits_ = values["report-gbits"].as<bool>();
  refuse_unused_options(values, common, tests_);

  memory_ = memory::parse_memory_kind(values["memory"].as<std::string>(), "--memory");
  if (memory_ == memory::MemoryKind::device)
    for (const auto* t : tests_)
      if (t->verb == Verb::write && t->pattern == Pattern::latency)
        throw Error::usage(
            "--memory device: write_lat spins on the last byte of the buffer from the CPU, which GPU "
            "memory does not allow; use host memory or another test");
  if (memory_ != memory::MemoryKind::host) gpu_ = runtime::bind_gpu(placement.me().machine_local_rank);
  pairs_.emplace(placement.world_size());

  request_.device = values.count("ib-dev") ? values["ib-dev"].as<std::string>() : "";
  if (values.count("ib-port")) {
    cli::require_in_range("--ib-port", values["ib-port"].as<int>(), 1, 255);
    request_.port = values["ib-port"].as<int>();
  }
  if (values.count("gid-index")) {
    cli::require_in_range("--gid-index", values["gid-index"].as<int>(), 0, 65535);
    request_.gid_index = values["gid-index"].as<int>();
  }
  request_.numa_node = current_numa_node();
  if (TestHooks::current().qp_error_at >= 0) qp_error_at_ = TestHooks::current().qp_error_at;
  // Every rank opens its port now: a missing device or a port that is not Active is a usage error (exit 2), found
  // before any output exists.
  device_ = std::make_unique<Device>(Device::open(request_, placement.me().host));
}

std::vector<std::uint64_t> VerbsBenchmark::sizes_for(const VerbsTest& test, const cli::CommonOptions& common) const {
  if (test.fixed_size()) return {8};
  if (size_) return {*size_};
  if (settings_.all_sizes) return cli::SizeList::geometric(2, 8u << 20, 2).values();
  if (sizes_given_) return common.sizes.values();
  return {test.default_bytes};
}

void VerbsBenchmark::abort() noexcept {
  if (link_) link_->abort();
}

facts::Reference VerbsBenchmark::reference(const app::RunContext& context) const {
  // Every pair goes through rank 0's port: the sum is held against it (twice over with --bidirectional).
  const auto& port = device_->port();
  auto ref = context.expected.port(context.placement.me().host, fmt::format("{}/{}", port.device, port.port));
  return settings_.bidirectional ? ref.scaled(2, "both directions of") : ref;
}

void VerbsBenchmark::report(const app::RunContext& context, const app::ToolLoop& loop, const VerbsTest& test,
                            std::uint64_t bytes, int warmup, const VerbsMeasurement& mine,
                            const facts::CounterReading& grown) {
  const auto& world = context.world;
  RankFigures f;
  f.timed = mine.timed;
  f.avg_mibps = mine.bandwidth.avg_mibps;
  f.peak_mibps = mine.bandwidth.peak_mibps;
  f.avg_gbitps = mine.bandwidth.avg_gbitps;
  f.peak_gbitps = mine.bandwidth.peak_gbitps;
  f.msg_rate_mps = mine.bandwidth.msg_rate_mps;
  f.wrong = mine.wrong;
  const auto figures = world.gather_values(f, 0);
  const auto round_trips = timing::RankLaps::gather(world, mine.round_trips_us);
  const auto samples = timing::RankLaps::gather(world, mine.samples_us);
  if (!context.is_root()) return;

  const auto& port = device_->port();
  results::Row row(table_);
  row.set(col_.test, std::string(test.name)).set(col_.memory, std::string(memory::to_string(memory_)));
  row.set(col_.bytes, std::int64_t(bytes)).set(col_.pairs, std::int64_t(pairs_->pairs()));
  row.set(col_.qps, std::int64_t(test.pattern == Pattern::bandwidth ? settings_.qps : 1));
  row.set(col_.iterations, std::int64_t(mine.iterations)).set(col_.warmup, std::int64_t(warmup));
  row.set(col_.tx_depth, std::int64_t(mine.tx_depth)).set(col_.cq_mod, std::int64_t(mine.cq_mod));
  row.set(col_.inline_bytes, std::int64_t(mine.inline_bytes)).set(col_.mtu, std::int64_t(link_->path_mtu_bytes()));
  row.set(col_.device, port.device).set(col_.port, std::int64_t(port.port)).set(col_.link_layer, port.link_layer);
  row.set(col_.gid_index, std::int64_t(port.gid_index));
  std::uint64_t wrong = 0;
  for (const auto& r : figures) wrong += r.wrong;
  row.set(col_.wrong, std::int64_t(wrong));
  if (test.pattern == Pattern::bandwidth) {
    // A pair's figure is the sum of its timed ranks (both with --bidirectional, as perftest adds both sides); the
    // row is the sum over pairs, with the slowest pair beside it.
    std::vector<RankFigures> pair(pairs_->pairs());
    for (int r = 0; r < world.size(); ++r)
      if (figures[r].timed) pair[pairs_->pair_of(r)].add_rates(figures[r]);
    RankFigures sum;
    double min_pair = INFINITY;
    for (const auto& p : pair) {
      sum.add_rates(p);
      min_pair = std::min(min_pair, p.avg_mibps);
    }
    row.set(col_.bw_avg_mibps, sum.avg_mibps).set(col_.bw_avg_gbitps, sum.avg_gbitps);
    row.set(col_.msg_rate_mps, sum.msg_rate_mps).set(col_.bw_min_pair_mibps, min_pair);
    // perftest leaves the peak out (0.00) above 20000 messages; so does the row (NaN).
    if (sum.peak_mibps > 0) row.set(col_.bw_peak_mibps, sum.peak_mibps).set(col_.bw_peak_gbitps, sum.peak_gbitps);
    context.expect(row, facts::ExpectedShare::gbps(sum.avg_mibps, results::Unit::mibps), reference(context), bytes,
                   fmt::format("{} at {} B", test.name, bytes));
  } else {
    const auto lat = ops::perftest_latency(round_trips.all(), test.latency_divisor);
    row.set(col_.latency_us, lat.typical_us).set(col_.time_us_min, lat.min_us).set(col_.time_us_max, lat.max_us);
    row.set(col_.time_us_mean, lat.avg_us).set(col_.time_us_stddev, lat.stdev_us);
    row.set(col_.time_us_p99, lat.p99_us).set(col_.time_us_p999, lat.p999_us);
  }
  loop.write(row, grown, samples_, [&](std::int64_t index) { return samples.samples(index); });
}

std::string VerbsBenchmark::section_title(const VerbsTest& test) const {
  return fmt::format("{}: {} (as {}; pairs: {}, QPs: {})", test.name, test.description, test.peer, pairs_->pairs(),
                     test.pattern == Pattern::bandwidth ? settings_.qps : 1);
}

std::vector<results::TerminalColumn> VerbsBenchmark::terminal_view(const app::RunContext& context,
                                                                   const VerbsTest& test) const {
  std::vector<results::TerminalColumn> shown{{"bytes", "#bytes"}, {"iterations", "#iterations"}};
  if (test.pattern == Pattern::bandwidth) {
    const std::string unit = report_gbits_ ? "gbitps" : "mibps";
    shown.insert(shown.end(), {{"bw_peak_" + unit}, {"bw_avg_" + unit}, {"msg_rate_mps"}});
    if (pairs_->pairs() > 1) shown.push_back({"bw_min_pair_mibps"});
    if (reference(context).known()) shown.push_back({"pct_expected"});
  } else {
    shown.insert(shown.end(), {{"time_us_min"},
                               {"time_us_max"},
                               {"latency_us"},
                               {"time_us_mean"},
                               {"time_us_stddev"},
                               {"time_us_p99"},
                               {"time_us_p999"}});
  }
  shown.push_back({"wrong"});
  return shown;
}

ExitStatus VerbsBenchmark::run(const app::RunContext& context) {
  std::uint64_t max_bytes = 8;
  for (const auto* t : tests_)
    for (const auto b : sizes_for(*t, context.options)) max_bytes = std::max(max_bytes, b);
  const int me = context.world.rank();
  link_ = std::make_unique<VerbsLink>(*device_, memory_, max_bytes, settings_, context.world.get(), pairs_->peer_of(me),
                                      pairs_->leads(me));
  const auto& port = device_->port();
  // The error counters of the port each rank opened, read around each size by the first rank of the host on it.
  app::ToolLoop loop(context, facts::LinkWatch(context.world, context.placement.me().host, false,
                                               {fmt::format("{}/{}", port.device, port.port)}));
  // Every rank's port, for the notes: a pair on the wrong device or GID type shows here.
  const auto ports = context.world.gather(
      fmt::format("{} port {} ({}, {} GID[{}] {}, active MTU {}, rate {}, registered with {})", port.device, port.port,
                  port.link_layer, port.gid_type, port.gid_index, gid_text(port.gid), mtu_bytes(port.active_mtu),
                  port.rate.empty() ? "?" : port.rate, link_->registration()),
      0);
  if (context.is_root()) context.out->declare(samples_);
  loop.note_pairs(*pairs_, ports);
  if (context.is_root())
    context.out->note(fmt::format("memory: {}  QPs per pair: {}  {}  check: {}", memory::to_string(memory_),
                                  settings_.qps, settings_.bidirectional ? "bidirectional" : "unidirectional",
                                  context.options.check ? "on" : "off"));
  for (std::size_t k = 0; k < tests_.size(); ++k) {
    const auto& test = *tests_[k];
    const auto sizes = sizes_for(test, context.options);
    loop.begin("test", k, tests_.size(), test.name, sizes.size());
    if (context.is_root()) context.out->section(table_, section_title(test), terminal_view(context, test));
    for (const auto bytes : sizes) {
      const int warmup = test.defaults.warmup(bytes, context.options.warmup);
      int iterations = test.defaults.iterations(bytes, context.options.iterations);
      loop.step(
          fmt::format("{} at {} B", test.name, bytes),
          [&] {
            if (duration_s_ > 0) {
              // -D: as many iterations as fill the duration at the slowest pair's pace (at least perftest's minimum,
              // 5).
              double per_iteration = link_->probe_iteration_s(test, bytes);
              runtime::check_mpi(
                  MPI_Allreduce(MPI_IN_PLACE, &per_iteration, 1, MPI_DOUBLE, MPI_MAX, context.world.get()),
                  "MPI_Allreduce");
              iterations = static_cast<int>(std::clamp(std::ceil(duration_s_ / per_iteration), 5.0, 2e6));
            }
            if (context.measurements - 1 == qp_error_at_ && pairs_->leads(me)) link_->abort();
            context.doing(fmt::format("{} {} B, QPs {}", test.name, bytes, link_->states()));
            return link_->run(test, bytes, iterations, warmup, context.options.check);
          },
          [&](const VerbsMeasurement& mine, const facts::CounterReading& grown) {
            loop.count_wrong(mine.wrong);
            report(context, loop, test, bytes, warmup, mine, grown);
          });
    }
  }
  const auto status = loop.finish("bytes");
  link_.reset();
  return status;
}

}  // namespace fabricbench::tools::verbs
