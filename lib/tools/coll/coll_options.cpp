// fabric-coll's command line (coll_benchmark.hpp): its options, and configure(), which checks their values against the
// operation table and the job and refuses an option none of the chosen operations reads.
#include <fmt/format.h>

#include <algorithm>
#include <cstdlib>
#include <memory>
#include <string>
#include <vector>

#include "fabricbench/cli/byte_size.hpp"
#include "fabricbench/cli/name_list.hpp"
#include "fabricbench/runtime/gpu.hpp"
#include "fabricbench/test_hooks.hpp"
#include "fabricbench/timing/timed_blocks.hpp"
#include "fabricbench/tools/coll/coll_benchmark.hpp"

namespace fabricbench::ops {
namespace {

std::string_view op_name(const CollectiveOp& c) { return c.name; }
std::string_view type_name(DataType t) { return to_string(t); }
std::string_view redop_name(RedOp o) { return to_string(o); }

// The entries of `table` the comma list `text` names ("all": every one), in the order given.
template <typename T, typename Name>
std::vector<const T*> parse_names(const std::string& text, const std::vector<T>& table, Name name, const char* option) {
  const auto names = cli::names_of(table, name);
  std::vector<const T*> out;
  for (const auto i : cli::parse_name_list(option, text, names, {cli::NameGroup::all(names.size())}))
    out.push_back(&table[i]);
  return out;
}

// What --help says an option over `table` takes: "a, b, or all".
template <typename T, typename Name>
std::string choices(const std::vector<T>& table, Name name) {
  const auto names = cli::names_of(table, name);
  return cli::name_choices(names, {cli::NameGroup::all(names.size())});
}

// An option none of the chosen operations or timing modes reads is refused, not ignored (issue 48): an all_reduce
// run given --root 1 would otherwise look as if the root had mattered. Only what was typed (cli::typed): a --config
// preset may set them for every run. Called once the values themselves were checked.
void refuse_unused_options(const cli::po::variables_map& v, const cli::CommonOptions& common,
                           const std::vector<const CollectiveOp*>& ops, TimingMode timing) {
  const auto op_list = v["op"].as<std::string>();
  if (cli::typed(v, common, "root") && std::none_of(ops.begin(), ops.end(), [](auto* c) { return c->rooted; }))
    throw Error::usage(fmt::format("--root with --op {}: only {} have a root; drop it", op_list,
                                   collectives_that([](const CollectiveOp& c) { return c.rooted; })));
  if (cli::typed(v, common, "redop") && std::none_of(ops.begin(), ops.end(), [](auto* c) { return c->reduces; }))
    throw Error::usage(fmt::format("--redop with --op {}: only {} reduce; drop it", op_list,
                                   collectives_that([](const CollectiveOp& c) { return c.reduces; })));
  // One block of a fixed count is timed with -n, --per-iter and --graph; --min-time 0 says the same and is fine.
  if (!cli::typed(v, common, "min-time") || v["min-time"].as<double>() == 0) return;
  if (common.iterations > 0)
    throw Error::usage("--min-time with --iters: -n times one block of that count; give one of them");
  if (timing == TimingMode::events || timing == TimingMode::graph)
    throw Error::usage(fmt::format("--min-time with {}: that timing mode times one block of nccl-tests' count; drop it",
                                   timing == TimingMode::events ? "--per-iter" : "--graph"));
}

}  // namespace

void CollBenchmark::add_options(cli::po::options_description& options) {
  namespace po = cli::po;
  auto add = options.add_options();
  add("op", po::value<std::string>()->default_value("all_reduce"),
      ("operations, comma-separated: " + choices(collectives(), op_name)).c_str());
  add("backend", po::value<std::string>()->default_value("auto"),
      "nccl (one rank per GPU), mpi, or auto (nccl when built with it and a GPU is visible)");
  add("dtype,d", po::value<std::string>()->default_value("float"),
      (choices(all_data_types(), type_name) + ", comma-separated (nccl-tests -d)").c_str());
  add("redop,o", po::value<std::string>()->default_value("sum"),
      (choices(all_red_ops(), redop_name) + ", comma-separated (nccl-tests -o)").c_str());
  add("root,r", po::value<std::string>()->default_value("0"), "root rank of broadcast/reduce, or all (nccl-tests -r)");
  add("in-place", po::value<std::string>()->default_value("both"), "both, 0 (out-of-place only) or 1 (in-place only)");
  add("blocking,z", po::value<int>()->default_value(0),
      "1: wait after every operation (nccl-tests -z); gives per-iteration samples");
  add("per-iter", "time every operation with CUDA events (NCCL): per-iteration percentiles");
  add("graph,G", po::value<int>()->default_value(0),
      "capture the timed operations in a CUDA graph and launch it N times (nccl-tests -G)");
  add("average,a", po::value<int>()->default_value(1),
      "time across ranks: 0 rank 0, 1 average, 2 min, 3 max (nccl-tests -a)");
  add("min-time", po::value<double>()->default_value(0.1),
      "without -n: repeat each size's timed block of nccl-tests' iteration count until about this many seconds were "
      "timed (at most 100 blocks) and report the median block, with the blocks' spread; 0: one block");
  add("memory", po::value<std::string>()->default_value("host"),
      "MPI back end buffers: host or device (CUDA-aware MPI)");
  add("per-rank",
      "NCCL: each rank's kernel time in every collective, from fabricbench's NCCL profiler plugin, and the rank that "
      "made the others wait named (/coll/per_rank; nccl-tests' -I with its straggler analysis, named)");
}

void CollBenchmark::configure(const cli::po::variables_map& v, const cli::CommonOptions& common,
                              const runtime::Placement& placement) {
  const int nranks = placement.world_size();
  ops_ = parse_names(v["op"].as<std::string>(), collectives(), op_name, "--op");
  dtypes_.clear();
  for (const auto* t : parse_names(v["dtype"].as<std::string>(), all_data_types(), type_name, "--dtype"))
    dtypes_.push_back(*t);
  redops_.clear();
  for (const auto* o : parse_names(v["redop"].as<std::string>(), all_red_ops(), redop_name, "--redop"))
    redops_.push_back(*o);
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
  if (blocking != 0 && blocking != 1)
    throw Error::usage(fmt::format("--blocking {}: allowed values are 0 and 1", blocking));
  graph_launches_ = v["graph"].as<int>();
  cli::require_at_least("--graph", graph_launches_, 0);
  const bool per_iter = v.count("per-iter") > 0;
  if (int(per_iter) + int(graph_launches_ > 0) + blocking > 1)
    throw Error::usage("--per-iter, --graph and --blocking are different timing modes: choose one");
  timing_ = per_iter              ? TimingMode::events
            : graph_launches_ > 0 ? TimingMode::graph
            : blocking            ? TimingMode::blocking
                                  : TimingMode::host;
  min_time_s_ = timing::TimedBlocks::checked_min_time(v["min-time"].as<double>(), "--min-time");
  if (common.iterations > 0 || timing_ == TimingMode::events || timing_ == TimingMode::graph)
    min_time_s_ = 0;  // -n: a count, as nccl-tests
  const int average = v["average"].as<int>();
  if (average < 0 || average > 3)
    throw Error::usage(fmt::format("--average {}: allowed values are 0, 1, 2, 3", average));
  combine_ = static_cast<RankCombine>(average);
  refuse_unused_options(v, common, ops_, timing_);

  backend_ = choose_backend(v["backend"].as<std::string>());
  const std::string backend_name(to_string(backend_));
  const auto mem = v["memory"].as<std::string>();
  cli::require_choice("--memory", mem, {"host", "device"});
  device_memory_ = mem == "device";
  if (backend_ == BackendKind::nccl || device_memory_) {
    try {
      gpu_ = runtime::bind_gpu(placement.me().machine_local_rank);
    } catch (const Error& e) {
      throw Error(e.status(),
                  fmt::format("--backend {}{}: {}", backend_name, device_memory_ ? " --memory device" : "", e.what()));
    }
  }
  if (backend_ == BackendKind::mpi) {
    if (device_memory_ && !runtime::mpi_is_cuda_aware())
      throw Error::usage("--memory device: this MPI library is not CUDA-aware (MPIX_Query_cuda_support); use host");
    if (timing_ == TimingMode::events || timing_ == TimingMode::graph)
      throw Error::usage("--per-iter and --graph time CUDA work: they need --backend nccl");
    // "all" means every type and reduction this back end has; naming one it lacks is an error.
    const auto mpi_has_type = [](DataType t) { return t != DataType::float16 && t != DataType::bfloat16; };
    if (v["dtype"].as<std::string>() == "all")
      dtypes_.erase(std::remove_if(dtypes_.begin(), dtypes_.end(), [&](DataType t) { return !mpi_has_type(t); }),
                    dtypes_.end());
    if (v["redop"].as<std::string>() == "all")
      redops_.erase(std::remove(redops_.begin(), redops_.end(), RedOp::avg), redops_.end());
    for (auto t : dtypes_)
      if (!mpi_has_type(t))
        throw Error::usage(
            fmt::format("--dtype {}: MPI has no such type; allowed with --backend mpi: int8, uint8, "
                        "int32, uint32, int64, uint64, float, double",
                        to_string(t)));
    for (auto o : redops_)
      if (o == RedOp::avg)
        throw Error::usage("--redop avg: MPI has no average; allowed with --backend mpi: sum, prod, min, max");
    require_mpi_counts(ops_, dtypes_, common.sizes.max(), nranks, common.sizes_option);
  } else if (device_memory_) {
    throw Error::usage("--memory applies to --backend mpi only (NCCL always uses device memory)");
  }
  if (v.count("per-rank")) {
    if (backend_ != BackendKind::nccl)
      throw Error::usage("--per-rank reads NCCL's profiler events: it needs --backend nccl");
    per_rank_ = std::make_unique<PerRankView>();  // before NCCL's first communicator
  }
  const bool some_all = v["dtype"].as<std::string>() == "all" || v["redop"].as<std::string>() == "all";
  for (auto o : redops_)
    for (auto t : dtypes_)
      if (o == RedOp::avg && !is_floating(t) && !some_all)
        throw Error::usage(
            fmt::format("--redop avg with --dtype {}: avg is checked for floating types only "
                        "(half, float, double, bfloat16)",
                        to_string(t)));
  flip_byte_ = TestHooks::current().flip_byte;
}

}  // namespace fabricbench::ops
