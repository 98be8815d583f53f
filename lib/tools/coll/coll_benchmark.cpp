#include "fabricbench/tools/coll/coll_benchmark.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <climits>
#include <cmath>
#include <cstdlib>
#include <numeric>

#include "fabricbench/memory/buffer.hpp"
#include "fabricbench/timing/rank_laps.hpp"

namespace fabricbench::tools::coll {

CollBenchmark::CollBenchmark() : table_(make_table()), samples_(table_.samples()), col_(table_) {}

CollBenchmark::Columns::Columns(const results::TableSpec& t)
    : op(t.handle<std::string>("op")),
      backend(t.handle<std::string>("backend")),
      dtype(t.handle<std::string>("dtype")),
      redop(t.handle<std::string>("redop")),
      timing(t.handle<std::string>("timing")),
      root(t.handle<std::int64_t>("root")),
      in_place(t.handle<std::int64_t>("in_place")),
      bytes(t.handle<std::int64_t>("bytes")),
      count(t.handle<std::int64_t>("count")),
      ranks(t.handle<std::int64_t>("ranks")),
      iterations(t.handle<std::int64_t>("iterations")),
      warmup(t.handle<std::int64_t>("warmup")),
      blocks(t.handle<std::int64_t>("blocks")),
      wrong(t.handle<std::int64_t>("wrong")),
      time_us_spread_pct(t.handle<double>("time_us_spread_pct")),
      time_us(t.handle<double>("time_us")),
      time_us_rank_min(t.handle<double>("time_us_rank_min")),
      time_us_rank_max(t.handle<double>("time_us_rank_max")),
      iter_us_min(t.handle<double>("iter_us_min")),
      iter_us_median(t.handle<double>("iter_us_median")),
      iter_us_p99(t.handle<double>("iter_us_p99")),
      iter_us_max(t.handle<double>("iter_us_max")),
      algbw_gbps(t.handle<double>("algbw_gbps")),
      busbw_gbps(t.handle<double>("busbw_gbps")) {}
CollBenchmark::~CollBenchmark() = default;

std::string CollBenchmark::summary() const {
  // The factors grouped as the table gives them: "all_reduce 2(n-1)/n; all_gather, reduce_scatter, alltoall (n-1)/n".
  std::string ops;
  std::vector<std::pair<std::string_view, std::string>> factors;
  for (const auto& c : ops::collectives()) {
    ops += (ops.empty() ? "" : ", ") + std::string(c.name);
    auto it = std::find_if(factors.begin(), factors.end(), [&](const auto& f) { return f.first == c.factor_text; });
    if (it == factors.end()) it = factors.insert(factors.end(), {c.factor_text, ""});
    it->second += (it->second.empty() ? "" : ", ") + std::string(c.name);
  }
  std::string factor_list;
  for (const auto& [factor, names] : factors)
    factor_list += fmt::format("{}{} {}", factor_list.empty() ? "" : "; ", names, factor);
  return fmt::format(
      "fabric-coll: NCCL and MPI collectives with nccl-tests' algbw and busbw, validated.\n"
      "Operations: {}.\n"
      "algbw = bytes / time (1e9 B/s); busbw = algbw x factor: {}.\n"
      "Time: per-rank mean per op, averaged over ranks (-a).",
      ops, factor_list);
}

results::TableSpec CollBenchmark::make_table() {
  using namespace results;
  TableSpec table{"results",
                  "coll",
                  {series(key_text("op", 16)),
                   key_text("backend", 8),
                   key_text("dtype", 12, "type"),
                   key_text("redop", 8),
                   key_int("root"),
                   key_int("in_place"),
                   key_int("bytes", Unit::bytes, "size_B"),
                   key_int("count", Unit::elements),
                   key_int("ranks"),
                   setting_int("iterations", "iters"),
                   setting_int("warmup"),
                   setting_int("blocks"),
                   key_text("timing", 12),
                   measured("time_us", Unit::us, Better::lower),
                   statistic("time_us_spread_pct", Unit::percent, Better::lower, "spread_%", 1),
                   statistic("time_us_rank_min", Unit::us, Better::lower, "rank_min_us"),
                   statistic("time_us_rank_max", Unit::us, Better::lower, "rank_max_us"),
                   statistic("iter_us_min", Unit::us, Better::lower, "min_us"),
                   statistic("iter_us_median", Unit::us, Better::lower, "p50_us"),
                   statistic("iter_us_p99", Unit::us, Better::lower, "p99_us"),
                   statistic("iter_us_max", Unit::us, Better::lower, "max_us"),
                   measured("algbw_gbps", Unit::gbps, Better::higher, "algbw_GB/s"),
                   headline(measured("busbw_gbps", Unit::gbps, Better::higher, "busbw_GB/s")),
                   measured_int("wrong", Unit::elements, Better::lower, "#wrong")}};
  for (auto& c : facts::ExpectedShare::columns()) table.columns.push_back(std::move(c));
  // NCCL rows: the transports and GPUDirect RDMA of rank 0's connections, from NCCL's INFO lines (NcclPathLog).
  table.columns.push_back(setting_text("path", 96));
  return table;
}

void CollBenchmark::abort() noexcept {
  if (backend_impl_) backend_impl_->abort();
}

CollBenchmark::Measured CollBenchmark::measure(const app::RunContext& context, const ops::CollCase& c, int warmup,
                                               int iterations) {
  const auto& world = context.world;
  const auto r = run_case(*backend_impl_, c, {timing_, warmup, iterations, graph_launches_, min_time_s_}, world,
                          context.options.check, flip_byte_);
  Measured m{};
  m.rank_us = world.gather_values(r.timing.seconds_per_op * 1e6, 0);
  m.wrong = world.sum(r.wrong, 0);
  m.laps = timing::RankLaps::gather(world, r.timing.laps_us);
  m.blocks = r.timing.blocks;
  for (const double s : world.gather_values(r.timing.spread, 0))
    if (!std::isnan(s)) m.spread = std::isnan(m.spread) ? s : std::max(m.spread, s);
  if (context.is_root()) m.time_us = combine_rank_times(m.rank_us, combine_);
  return m;
}

results::Row CollBenchmark::make_row(const ops::CollCase& c, const Measured& m, int iterations, int warmup,
                                     int nranks) const {
  static constexpr const char* timing_names[] = {"host", "blocking", "events", "graph"};
  const auto bytes = c.counts.bytes(type_size(c.dtype));
  const double algbw = ops::algbw_gbps(bytes, m.time_us * 1e-6);
  const auto laps = m.laps.stats();
  results::Row row(table_);
  row.set(col_.op, std::string(c.op->name))
      .set(col_.backend, std::string(to_string(backend_)))
      .set(col_.dtype, std::string(to_string(c.dtype)));
  row.set(col_.redop, c.op->reduces ? std::string(to_string(c.redop)) : std::string("none"));
  row.set(col_.root, std::int64_t(c.op->rooted ? c.root : -1)).set(col_.in_place, std::int64_t(c.in_place));
  row.set(col_.bytes, std::int64_t(bytes))
      .set(col_.count, std::int64_t(c.counts.param))
      .set(col_.ranks, std::int64_t(nranks));
  row.set(col_.iterations, std::int64_t(iterations)).set(col_.warmup, std::int64_t(warmup));
  row.set(col_.blocks, std::int64_t(m.blocks)).set(col_.time_us_spread_pct, m.spread * 100);
  row.set(col_.timing, std::string(timing_names[static_cast<int>(timing_)]));
  row.set(col_.time_us, m.time_us);
  row.set(col_.time_us_rank_min, *std::min_element(m.rank_us.begin(), m.rank_us.end()));
  row.set(col_.time_us_rank_max, *std::max_element(m.rank_us.begin(), m.rank_us.end()));
  row.set(col_.iter_us_min, laps.min).set(col_.iter_us_median, laps.median).set(col_.iter_us_p99, laps.p99);
  row.set(col_.iter_us_max, laps.max)
      .set(col_.algbw_gbps, algbw)
      .set(col_.busbw_gbps, c.op->busbw_gbps(bytes, m.time_us * 1e-6, nranks));
  row.set(col_.wrong, std::int64_t(m.wrong));
  return row;
}

void CollBenchmark::run_sizes(const app::RunContext& context, app::ToolLoop& loop, const ops::CollCase& base,
                              const std::vector<bool>& modes, const facts::Reference& reference, Busbw& busbw) {
  const auto* op = base.op;
  const auto dtype = base.dtype;
  const int nranks = context.world.size();
  int skipped = 0;
  for (const auto bytes : context.options.sizes.values()) {
    const auto counts = op->counts(bytes / type_size(dtype), nranks);
    if (counts.bytes(type_size(dtype)) == 0) {  // nothing to move: no row, never a bandwidth of nothing
      ++skipped;
      continue;
    }
    const int iterations = ops::nccl_tests_iterations.iterations(bytes, context.options.iterations);
    const int warmup = ops::nccl_tests_iterations.warmup(bytes, context.options.warmup);
    for (const bool in_place : modes) {
      const ops::CollCase c{op, dtype, base.redop, base.root, in_place, counts};
      loop.step(
          fmt::format("{} {} {} {} at {} B", op->name, in_place ? "in-place" : "out-of-place", to_string(dtype),
                      op->reduces ? to_string(base.redop) : "none", bytes),
          [&] { return measure(context, c, warmup, iterations); },
          [&](const Measured& m, const facts::CounterReading& grown) {
            if (!context.is_root()) return;
            loop.count_wrong(m.wrong);  // already summed over ranks
            auto row = make_row(c, m, iterations, warmup, nranks);
            const std::string path = nccl_path_ ? nccl_path_->path() : std::string();
            row.set("path", path);
            context.expect(row, row.number("busbw_gbps"), context.expected.at_size(reference, op->name, nranks, bytes),
                           bytes,
                           fmt::format("{} {} busbw at {} B{}", op->name, in_place ? "in-place" : "out-of-place", bytes,
                                       path.empty() ? "" : " (NCCL path: " + path + ")"));
            busbw.sum += row.number("busbw_gbps");
            ++busbw.rows;
            loop.write(row, grown, samples_,
                       [&](std::int64_t index) { return m.laps.samples(index, 1.0, -1, &m.rank_us); });
          });
    }
  }
  if (skipped > 0 && context.is_root())
    context.out->note(fmt::format("{} {}: {} size(s) hold no whole {} per rank on {} ranks; skipped", op->name,
                                  to_string(dtype), skipped, to_string(dtype), nranks));
}

ExitStatus CollBenchmark::run(const app::RunContext& context) {
  const auto& world = context.world;
  const int nranks = world.size();
  const std::string backend_name(to_string(backend_));
  if (backend_ == ops::BackendKind::nccl) {
    nccl_path_ = std::make_unique<NcclPathLog>();  // before NCCL's first call
    if (context.is_root() && !nccl_path_->why_unnamed().empty())
      context.out->note("the NCCL path is not named on the rows: " + nccl_path_->why_unnamed());
  }
  backend_impl_ = make_backend(backend_, world, gpu_, device_memory_);
  const auto max_bytes = context.options.sizes.max();
  backend_impl_->allocate(max_bytes, max_bytes);
  std::vector<int> roots = roots_;
  if (roots.empty())
    for (int r = 0; r < nranks; ++r) roots.push_back(r);
  if (context.is_root()) {
    context.out->declare(samples_);
    context.out->note(fmt::format(
        "backend: {}  ranks: {}  check: {}  timing: {}{}", backend_name, nranks, context.options.check ? "on" : "off",
        std::array{"host clock", "blocking", "CUDA events", "CUDA graph"}[static_cast<int>(timing_)],
        timing_ == ops::TimingMode::graph ? fmt::format(" x{}", graph_launches_) : ""));
  }
  // Bus bandwidth is each rank's share of the busiest link: held against the per-rank reference.
  int ranks_per_host = 1;
  std::vector<std::string> hosts;
  for (const auto& r : context.placement.ranks()) {
    ranks_per_host = std::max(ranks_per_host, r.local_size);
    hosts.push_back(r.host);
  }
  // One rank moves nothing over any link (its bus bandwidth is 0 or a copy within the GPU): nothing to hold it against.
  // NCCL across nodes: the network model (the nodes' NICs x a healthy busbw per NIC), where the hosts' NICs are known.
  const auto network = context.is_root() && backend_ == ops::BackendKind::nccl ? context.expected.across_nodes(hosts)
                                                                               : facts::Reference{};
  const auto reference =
      network.known() ? network
      : context.is_root() && nranks > 1
          ? context.expected.per_rank(hosts, ranks_per_host, backend_ == ops::BackendKind::nccl || device_memory_)
          : facts::Reference{};
  if (reference.known() && facts::is_gpu_link(reference.path))
    context.out->note(
        fmt::format("expected bus bandwidth: each op's healthy curve for {} GPUs over {} {:.2f} GB/s "
                    "where one was measured (expect_from calibrated), else uncalibrated ({})",
                    nranks, facts::to_string(reference.path), reference.gbps, reference.basis));
  else if (reference.known())
    context.out->note(fmt::format("expected bus bandwidth: {:.2f} GB/s ({})", reference.gbps, reference.basis));
  else if (nranks == 1 && context.is_root())
    context.out->note(fmt::format(
        "one rank: no link carries data, so no expected bus bandwidth (busbw is nccl-tests' figure: 0 for {})",
        ops::collectives_that([](const ops::CollectiveOp& c) { return c.busbw_factor(1) == 0; })));
  app::ToolLoop loop(context);
  for (std::size_t k = 0; k < ops_.size(); ++k) {
    const auto* op = ops_[k];
    loop.begin("operation", k, ops_.size(), op->name, context.options.sizes.values().size());
    std::vector<bool> modes;
    for (const bool ip : in_place_)
      if (!ip || backend_impl_->in_place_defined(*op)) modes.push_back(ip);
    if (modes.size() < in_place_.size() && context.is_root())
      context.out->note(
          fmt::format("{}: in place is not defined for the {} back end (its send and receive regions "
                      "overlap); out-of-place only",
                      op->name, backend_name));
    if (modes.empty()) continue;
    Busbw busbw;
    for (const auto dtype : dtypes_) {
      for (const auto redop : op->reduces ? redops_ : std::vector<ops::RedOp>{ops::RedOp::sum}) {
        for (const int root : op->rooted ? roots : std::vector<int>{0}) {
          if (!backend_impl_->supports(dtype, op->reduces ? redop : ops::RedOp::sum)) continue;
          if (op->reduces && redop == ops::RedOp::avg && !is_floating(dtype)) continue;  // only with "all"
          if (context.is_root())
            context.out->section(table_, fmt::format("{} ({} ranks, {})", op->name, nranks, backend_name),
                                 terminal_view(modes, reference.known()));
          run_sizes(context, loop, {op, dtype, redop, root, false, {}}, modes, reference, busbw);
        }
      }
    }
    if (context.is_root() && busbw.rows > 0)
      context.out->note(fmt::format("{}: Avg bus bandwidth : {:.3f} GB/s over {} rows", op->name,
                                    busbw.sum / busbw.rows, busbw.rows));
  }
  if (per_rank_) per_rank_->write(context);
  const auto status = loop.finish("elements");
  if (context.is_root())  // nccl-tests' last line
    context.out->note(
        fmt::format("Out of bounds values : {} {}", loop.wrong_total(), loop.wrong_total() ? "FAILED" : "OK"));
  return status;
}

std::vector<results::TerminalColumn> CollBenchmark::terminal_view(const std::vector<bool>& modes,
                                                                  bool reference_known) const {
  std::vector<results::TerminalColumn> shown{{"bytes"}, {"count"}, {"dtype"}, {"redop"}, {"root"}};
  for (std::size_t k = 0; k < modes.size(); ++k) {
    const std::string p = modes[k] ? "ip_" : "oop_";
    const int part = static_cast<int>(k);
    for (const char* column : {"time_us", "algbw_gbps", "busbw_gbps", "wrong"})
      shown.push_back({column, p + table_.column(column).header(), part});
    if (reference_known) shown.push_back({"pct_expected", p + table_.column("pct_expected").header(), part});
    if (min_time_s_ > 0)
      shown.push_back({"time_us_spread_pct", p + table_.column("time_us_spread_pct").header(), part});
  }
  return shown;
}

}  // namespace fabricbench::tools::coll
