#include "fabricbench/ops/coll_benchmark.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <climits>
#include <cstdlib>
#include <numeric>
#include <sstream>

#include "fabricbench/cli/byte_size.hpp"
#include "fabricbench/memory/buffer.hpp"
#include "fabricbench/runtime/gpu.hpp"
#include "fabricbench/timing/sample_stats.hpp"

namespace fabricbench::ops {
namespace {

std::vector<std::string> split_list(const std::string& text) {
  std::vector<std::string> out;
  std::stringstream in(text);
  for (std::string item; std::getline(in, item, ',');) out.push_back(item);
  if (out.empty()) out.push_back("");
  return out;
}

// Parses "a,b" or "all" against the names of `all`.
template <typename T, typename Name>
std::vector<T> parse_names(const std::string& text, const std::vector<T>& all, Name name, const char* option) {
  if (text == "all") return all;
  std::vector<T> out;
  std::string allowed;
  for (const auto& v : all) allowed += std::string(allowed.empty() ? "" : ", ") + std::string(name(v));
  for (const auto& item : split_list(text)) {
    auto it = std::find_if(all.begin(), all.end(), [&](const T& v) { return name(v) == item; });
    if (it == all.end()) throw Error::usage(fmt::format("{} '{}': allowed values are {}, all", option, item, allowed));
    out.push_back(*it);
  }
  return out;
}

void check(int rc, const char* what) { runtime::check_mpi(rc, what); }

}  // namespace

double combine_rank_times(const std::vector<double>& t, RankCombine how) {
  switch (how) {
    case RankCombine::rank0: return t.front();
    case RankCombine::min: return *std::min_element(t.begin(), t.end());
    case RankCombine::max: return *std::max_element(t.begin(), t.end());
    default: return std::accumulate(t.begin(), t.end(), 0.0) / static_cast<double>(t.size());
  }
}

CollBenchmark::CollBenchmark() : table_(make_table()) {}
CollBenchmark::~CollBenchmark() = default;

std::string CollBenchmark::summary() const {
  std::string ops;
  for (const auto& c : collectives()) ops += (ops.empty() ? "" : ", ") + std::string(c.name);
  return "fabric-coll: NCCL and MPI collectives with nccl-tests' algbw and busbw, validated.\n"
         "Operations: " + ops + ".\n"
         "algbw = bytes / time (1e9 B/s); busbw = algbw x factor: all_reduce 2(n-1)/n; all_gather, reduce_scatter,\n"
         "alltoall (n-1)/n; broadcast, reduce, sendrecv 1. Time: per-rank mean per op, averaged over ranks (-a).";
}

results::TableSpec CollBenchmark::make_table() {
  using results::ColumnType;
  results::TableSpec t{"results", "coll", {}};
  t.columns = {{"op", ColumnType::text, 16},          {"backend", ColumnType::text, 8},
               {"dtype", ColumnType::text, 12},       {"redop", ColumnType::text, 8},
               {"root", ColumnType::integer},         {"in_place", ColumnType::integer},
               {"bytes", ColumnType::integer},        {"count", ColumnType::integer},
               {"ranks", ColumnType::integer},        {"iterations", ColumnType::integer},
               {"warmup", ColumnType::integer},       {"timing", ColumnType::text, 12},
               {"time_us", ColumnType::real},         {"time_us_rank_min", ColumnType::real},
               {"time_us_rank_max", ColumnType::real}, {"iter_us_min", ColumnType::real},
               {"iter_us_median", ColumnType::real},  {"iter_us_p99", ColumnType::real},
               {"iter_us_max", ColumnType::real},     {"algbw_gbps", ColumnType::real},
               {"busbw_gbps", ColumnType::real},      {"wrong", ColumnType::integer}};
  return t;
}

void CollBenchmark::add_options(cli::po::options_description& options) {
  namespace po = cli::po;
  options.add_options()
      ("op", po::value<std::string>()->default_value("all_reduce"), "operations: all_reduce, all_gather, reduce_scatter, broadcast, reduce, alltoall, sendrecv, or all")
      ("backend", po::value<std::string>()->default_value("auto"), "nccl (one rank per GPU), mpi, or auto (nccl when built with it and a GPU is visible)")
      ("dtype,d", po::value<std::string>()->default_value("float"), "int8, uint8, int32, uint32, int64, uint64, half, float, double, bfloat16, or all (nccl-tests -d)")
      ("redop,o", po::value<std::string>()->default_value("sum"), "sum, prod, min, max, avg, or all (nccl-tests -o)")
      ("root,r", po::value<std::string>()->default_value("0"), "root rank of broadcast/reduce, or all (nccl-tests -r)")
      ("in-place", po::value<std::string>()->default_value("both"), "both, 0 (out-of-place only) or 1 (in-place only)")
      ("blocking,z", po::value<int>()->default_value(0), "1: wait after every operation (nccl-tests -z); gives per-iteration samples")
      ("per-iter", "time every operation with CUDA events (NCCL): per-iteration percentiles")
      ("graph,G", po::value<int>()->default_value(0), "capture the timed operations in a CUDA graph and launch it N times (nccl-tests -G)")
      ("average,a", po::value<int>()->default_value(1), "time across ranks: 0 rank 0, 1 average, 2 min, 3 max (nccl-tests -a)")
      ("memory", po::value<std::string>()->default_value("host"), "MPI back end buffers: host or device (CUDA-aware MPI)");
}

void CollBenchmark::configure(const cli::po::variables_map& v, const cli::CommonOptions& common,
                              const runtime::Placement& placement) {
  const int nranks = placement.world_size();
  ops_.clear();
  std::vector<const CollectiveOp*> all_ops;
  for (const auto& c : collectives()) all_ops.push_back(&c);
  ops_ = parse_names(v["op"].as<std::string>(), all_ops, [](const CollectiveOp* c) { return c->name; }, "--op");
  dtypes_ = parse_names(v["dtype"].as<std::string>(), all_data_types(), [](DataType t) { return to_string(t); }, "--dtype");
  redops_ = parse_names(v["redop"].as<std::string>(), all_red_ops(), [](RedOp o) { return to_string(o); }, "--redop");
  const auto root = v["root"].as<std::string>();
  roots_.clear();
  if (root != "all") {
    char* end = nullptr;
    const long r = std::strtol(root.c_str(), &end, 10);
    if (root.empty() || *end != '\0' || r < 0 || r >= nranks)
      throw Error::usage(fmt::format("--root '{}': allowed values are 0 to {} (the ranks) or all", root, nranks - 1));
    roots_.push_back(static_cast<int>(r));
  }
  const auto in_place = v["in-place"].as<std::string>();
  cli::require_choice("--in-place", in_place, {"both", "0", "1"});
  in_place_ = in_place == "both" ? std::vector<bool>{false, true} : std::vector<bool>{in_place == "1"};
  const int blocking = v["blocking"].as<int>();
  if (blocking != 0 && blocking != 1) throw Error::usage(fmt::format("--blocking {}: allowed values are 0 and 1", blocking));
  graph_launches_ = v["graph"].as<int>();
  cli::require_at_least("--graph", graph_launches_, 0);
  const bool per_iter = v.count("per-iter") > 0;
  if (int(per_iter) + int(graph_launches_ > 0) + blocking > 1)
    throw Error::usage("--per-iter, --graph and --blocking are different timing modes: choose one");
  timing_ = per_iter ? TimingMode::events : graph_launches_ > 0 ? TimingMode::graph
                                                                : blocking ? TimingMode::blocking : TimingMode::host;
  const int average = v["average"].as<int>();
  if (average < 0 || average > 3) throw Error::usage(fmt::format("--average {}: allowed values are 0, 1, 2, 3", average));
  combine_ = static_cast<RankCombine>(average);

  backend_name_ = v["backend"].as<std::string>();
  cli::require_choice("--backend", backend_name_, {"auto", "nccl", "mpi"});
#ifdef FABRICBENCH_HAVE_NCCL
  const bool nccl_built = true;
#else
  const bool nccl_built = false;
#endif
  if (backend_name_ == "auto")
    backend_name_ = nccl_built && memory::unavailable_reason(memory::MemoryKind::device).empty() ? "nccl" : "mpi";
  if (backend_name_ == "nccl" && !nccl_built)
    throw Error::usage("--backend nccl: this build has no NCCL (FABRICBENCH_CUDA=OFF or NCCL not found); allowed here: mpi");
  const auto mem = v["memory"].as<std::string>();
  cli::require_choice("--memory", mem, {"host", "device"});
  device_memory_ = mem == "device";
  if (backend_name_ == "nccl" || device_memory_) {
    try {
      gpu_ = runtime::bind_gpu(placement.me().machine_local_rank);
    } catch (const Error& e) {
      throw Error(e.status(), fmt::format("--backend {}{}: {}", backend_name_, device_memory_ ? " --memory device" : "", e.what()));
    }
  }
  if (backend_name_ == "mpi") {
    if (device_memory_ && !runtime::mpi_is_cuda_aware())
      throw Error::usage("--memory device: this MPI library is not CUDA-aware (MPIX_Query_cuda_support); use host");
    if (timing_ == TimingMode::events || timing_ == TimingMode::graph)
      throw Error::usage("--per-iter and --graph time CUDA work: they need --backend nccl");
    // "all" means every type and reduction this back end has; naming one it lacks is an error.
    const auto mpi_has_type = [](DataType t) { return t != DataType::float16 && t != DataType::bfloat16; };
    if (v["dtype"].as<std::string>() == "all")
      dtypes_.erase(std::remove_if(dtypes_.begin(), dtypes_.end(), [&](DataType t) { return !mpi_has_type(t); }), dtypes_.end());
    if (v["redop"].as<std::string>() == "all") redops_.erase(std::remove(redops_.begin(), redops_.end(), RedOp::avg), redops_.end());
    for (auto t : dtypes_)
      if (!mpi_has_type(t))
        throw Error::usage(fmt::format("--dtype {}: MPI has no such type; allowed with --backend mpi: int8, uint8, "
                                       "int32, uint32, int64, uint64, float, double", to_string(t)));
    for (auto o : redops_)
      if (o == RedOp::avg) throw Error::usage("--redop avg: MPI has no average; allowed with --backend mpi: sum, prod, min, max");
    const auto max_elements = common.sizes.max();
    if (max_elements > static_cast<std::uint64_t>(INT_MAX))
      throw Error::usage(fmt::format("--max-bytes {}: more elements than MPI's int count allows", cli::format_byte_size(max_elements)));
  } else if (device_memory_) {
    throw Error::usage("--memory applies to --backend mpi only (NCCL always uses device memory)");
  }
  const bool some_all = v["dtype"].as<std::string>() == "all" || v["redop"].as<std::string>() == "all";
  for (auto o : redops_)
    for (auto t : dtypes_)
      if (o == RedOp::avg && !is_floating(t) && !some_all)
        throw Error::usage(fmt::format("--redop avg with --dtype {}: avg is checked for floating types only "
                                       "(half, float, double, bfloat16)", to_string(t)));
  flip_byte_ = std::getenv("FABRICBENCH_TEST_FLIP_BYTE") != nullptr;
}

void CollBenchmark::abort() noexcept {
  if (backend_) backend_->abort();
}

CollBenchmark::Measured CollBenchmark::measure(const app::RunContext& context, const CollCase& c, int warmup,
                                               int iterations) {
  const auto& world = context.world;
  const int n = world.size();
  backend_->prepare(c);
  const CaseTiming t = time_case(*backend_, c, {timing_, warmup, iterations, graph_launches_}, world);
  std::uint64_t wrong = 0;
  if (context.options.check) {
    backend_->prepare(c);
    backend_->launch(c);
    backend_->wait();
    if (flip_byte_) backend_->flip_output_byte(c);
    wrong = backend_->count_wrong(c);
  }
  Measured m{};
  const double mine_us = t.seconds_per_op * 1e6;
  m.rank_us.resize(context.is_root() ? n : 0);
  check(MPI_Gather(&mine_us, 1, MPI_DOUBLE, m.rank_us.data(), 1, MPI_DOUBLE, 0, world.get()), "MPI_Gather");
  check(MPI_Reduce(&wrong, &m.wrong, 1, MPI_UINT64_T, MPI_SUM, 0, world.get()), "MPI_Reduce");
  const int my_laps = static_cast<int>(t.laps_us.size());
  m.laps_per_rank.resize(context.is_root() ? n : 0);
  check(MPI_Gather(&my_laps, 1, MPI_INT, m.laps_per_rank.data(), 1, MPI_INT, 0, world.get()), "MPI_Gather");
  std::vector<int> displs(m.laps_per_rank.size(), 0);
  if (context.is_root()) std::exclusive_scan(m.laps_per_rank.begin(), m.laps_per_rank.end(), displs.begin(), 0);
  m.laps_us.resize(context.is_root() ? static_cast<std::size_t>(displs.back() + m.laps_per_rank.back()) : 0);
  check(MPI_Gatherv(t.laps_us.data(), my_laps, MPI_DOUBLE, m.laps_us.data(), m.laps_per_rank.data(), displs.data(),
                    MPI_DOUBLE, 0, world.get()),
        "MPI_Gatherv");
  if (context.is_root()) m.time_us = combine_rank_times(m.rank_us, combine_);
  return m;
}

results::Row CollBenchmark::make_row(const CollCase& c, const Measured& m, int iterations, int warmup,
                                     int nranks) const {
  static constexpr const char* timing_names[] = {"host", "blocking", "events", "graph"};
  const auto bytes = c.counts.bytes(type_size(c.dtype));
  const double algbw = algbw_gbps(bytes, m.time_us * 1e-6);
  const auto laps = timing::SampleStats::of(m.laps_us);
  results::Row row(table_);
  row.set("op", std::string(c.op->name)).set("backend", backend_name_).set("dtype", std::string(to_string(c.dtype)));
  row.set("redop", c.op->reduces ? std::string(to_string(c.redop)) : std::string("none"));
  row.set("root", std::int64_t(c.op->rooted ? c.root : -1)).set("in_place", std::int64_t(c.in_place));
  row.set("bytes", std::int64_t(bytes)).set("count", std::int64_t(c.counts.param)).set("ranks", std::int64_t(nranks));
  row.set("iterations", std::int64_t(iterations)).set("warmup", std::int64_t(warmup));
  row.set("timing", std::string(timing_names[static_cast<int>(timing_)]));
  row.set("time_us", m.time_us);
  row.set("time_us_rank_min", *std::min_element(m.rank_us.begin(), m.rank_us.end()));
  row.set("time_us_rank_max", *std::max_element(m.rank_us.begin(), m.rank_us.end()));
  row.set("iter_us_min", laps.min).set("iter_us_median", laps.median).set("iter_us_p99", laps.p99);
  row.set("iter_us_max", laps.max).set("algbw_gbps", algbw).set("busbw_gbps", algbw * c.op->busbw_factor(nranks));
  row.set("wrong", std::int64_t(m.wrong));
  return row;
}

ExitStatus CollBenchmark::run(const app::RunContext& context) {
  const auto& world = context.world;
  const int nranks = world.size();
  backend_ = backend_name_ == "nccl" ? make_nccl_backend(world, gpu_) : make_mpi_backend(world, device_memory_);
  const auto max_bytes = context.options.sizes.max();
  backend_->allocate(max_bytes, max_bytes);
  const int iterations = context.options.iterations > 0 ? context.options.iterations : 20;
  const int warmup = context.options.warmup >= 0 ? context.options.warmup : 5;
  std::vector<int> roots = roots_;
  if (roots.empty())
    for (int r = 0; r < nranks; ++r) roots.push_back(r);
  if (context.is_root())
    context.out->note(fmt::format("backend: {}  ranks: {}  check: {}  timing: {}{}", backend_name_, nranks,
                                  context.options.check ? "on" : "off",
                                  std::array{"host clock", "blocking", "CUDA events", "CUDA graph"}[static_cast<int>(timing_)],
                                  timing_ == TimingMode::graph ? fmt::format(" x{}", graph_launches_) : ""));
  std::uint64_t wrong_total = 0;
  for (std::size_t k = 0; k < ops_.size(); ++k) {
    const auto* op = ops_[k];
    context.progress(fmt::format("operation {} of {}: {} ({} sizes)", k + 1, ops_.size(), op->name,
                                 context.options.sizes.values().size()));
    std::vector<bool> modes;
    for (const bool ip : in_place_)
      if (!ip || backend_->in_place_defined(op->kind)) modes.push_back(ip);
    if (modes.size() < in_place_.size() && context.is_root())
      context.out->note(fmt::format("{}: in place is not defined for the {} back end (its send and receive regions "
                                    "overlap); out-of-place only", op->name, backend_name_));
    if (modes.empty()) continue;
    double busbw_sum = 0;
    int busbw_rows = 0;
    for (const auto dtype : dtypes_) {
      for (const auto redop : op->reduces ? redops_ : std::vector<RedOp>{RedOp::sum}) {
        for (const int root : op->rooted ? roots : std::vector<int>{0}) {
          if (!backend_->supports(dtype, op->reduces ? redop : RedOp::sum)) continue;
          if (op->reduces && redop == RedOp::avg && !is_floating(dtype)) continue;  // only with "all"
          if (context.is_root()) {
            std::vector<results::TerminalColumn> shown{{"bytes", "size_B", 0, 0}, {"count", "count", 0, 0},
                                                       {"dtype", "type", 0, 0},   {"redop", "redop", 0, 0},
                                                       {"root", "root", 0, 0}};
            for (std::size_t k = 0; k < modes.size(); ++k) {
              const std::string p = modes[k] ? "ip_" : "oop_";
              const int part = static_cast<int>(k);
              shown.insert(shown.end(), {{"time_us", p + "time_us", 2, part}, {"algbw_gbps", p + "algbw_GB/s", 2, part},
                                         {"busbw_gbps", p + "busbw_GB/s", 2, part}, {"wrong", p + "#wrong", 0, part}});
            }
            context.out->section(table_, fmt::format("{} ({} ranks, {})", op->name, nranks, backend_name_), shown);
          }
          for (const auto bytes : context.options.sizes.values()) {
            for (const bool in_place : modes) {
              const CollCase c{op, dtype, redop, root, in_place, op->counts(bytes / type_size(dtype), nranks)};
              context.measuring(fmt::format("{} {} {} {} at {} B", op->name, in_place ? "in-place" : "out-of-place",
                                            to_string(dtype), op->reduces ? to_string(redop) : "none", bytes));
              const auto m = measure(context, c, warmup, iterations);
              context.measured();
              wrong_total += context.is_root() ? m.wrong : 0;
              if (!context.is_root()) continue;
              const auto row = make_row(c, m, iterations, warmup, nranks);
              busbw_sum += row.number("busbw_gbps");
              ++busbw_rows;
              const auto index = context.out->row(row);
              std::vector<results::Sample> samples;
              std::size_t at = 0;
              for (int r = 0; r < nranks; ++r) {
                if (m.laps_per_rank[r] == 0) samples.push_back({index, -1, r, m.rank_us[r]});
                for (int i = 0; i < m.laps_per_rank[r]; ++i) samples.push_back({index, i, r, m.laps_us[at++]});
              }
              context.out->samples(table_, samples);
            }
          }
        }
      }
    }
    if (context.is_root() && busbw_rows > 0)
      context.out->note(fmt::format("{}: Avg bus bandwidth : {:.3f} GB/s over {} rows", op->name, busbw_sum / busbw_rows, busbw_rows));
  }
  std::uint64_t wrong_all = wrong_total;
  check(MPI_Bcast(&wrong_all, 1, MPI_UINT64_T, 0, world.get()), "MPI_Bcast");
  if (context.is_root()) context.out->note(fmt::format("Out of bounds values : {} {}", wrong_all, wrong_all ? "FAILED" : "OK"));
  return wrong_all > 0 ? ExitStatus::measurement_failed : ExitStatus::ok;
}

}  // namespace fabricbench::ops
