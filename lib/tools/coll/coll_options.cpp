// fabric-coll's command line (coll_benchmark.hpp): its options, and configure(), which checks their values against the
// operation table and the job and refuses an option none of the chosen operations reads.
#include <fmt/format.h>

#include <algorithm>
#include <cstdlib>
#include <memory>
#include <string>
#include <vector>

#include "fabricbench/cli/byte_size.hpp"
#include "fabricbench/cli/choice.hpp"
#include "fabricbench/cli/name_list.hpp"
#include "fabricbench/memory/buffer.hpp"
#include "fabricbench/runtime/gpu.hpp"
#include "fabricbench/test_hooks.hpp"
#include "fabricbench/timing/timed_blocks.hpp"
#include "fabricbench/tools/coll/coll_benchmark.hpp"

namespace fabricbench::tools::coll {
namespace {

std::string_view op_name(const ops::CollectiveOp& c) { return c.name; }
std::string_view type_name(ops::DataType t) { return to_string(t); }
std::string_view redop_name(ops::RedOp o) { return to_string(o); }

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

// --in-place: which placements each case runs.
enum class Placements { both, out_of_place, in_place };
constexpr cli::Choice<Placements> kPlacements[] = {
    {"both", Placements::both}, {"0", Placements::out_of_place}, {"1", Placements::in_place}};
// --memory: where the MPI back end's buffers are.
constexpr cli::Choice<memory::MemoryKind> kMpiMemory[] = {{"host", memory::MemoryKind::host},
                                                          {"device", memory::MemoryKind::device}};

// "int8, uint8, ...": the entries of `all` MPI has, for the message refusing one it lacks.
template <typename T>
std::string mpi_names(const std::vector<T>& all) {
  std::string out;
  for (const auto t : all)
    if (mpi_has(t)) out += (out.empty() ? "" : ", ") + std::string(to_string(t));
  return out;
}

// An option none of the chosen operations or timing modes reads is refused, not ignored (issue 48): an all_reduce
// run given --root 1 would otherwise look as if the root had mattered. Only what was typed (cli::typed): a --config
// preset may set them for every run. Called once the values themselves were checked.
void refuse_unused_options(const cli::po::variables_map& v, const cli::CommonOptions& common,
                           const std::vector<const ops::CollectiveOp*>& ops, ops::TimingMode timing) {
  const auto op_list = v["op"].as<std::string>();
  if (cli::typed(v, common, "root") && std::none_of(ops.begin(), ops.end(), [](auto* c) { return c->rooted; }))
    throw Error::usage(fmt::format("--root with --op {}: only {} have a root; drop it", op_list,
                                   ops::collectives_that([](const ops::CollectiveOp& c) { return c.rooted; })));
  if (cli::typed(v, common, "redop") && std::none_of(ops.begin(), ops.end(), [](auto* c) { return c->reduces; }))
    throw Error::usage(fmt::format("--redop with --op {}: only {} reduce; drop it", op_list,
                                   ops::collectives_that([](const ops::CollectiveOp& c) { return c.reduces; })));
  // One block of a fixed count is timed with -n, --per-iter and --graph; --min-time 0 says the same and is fine.
  if (!cli::typed(v, common, "min-time") || v["min-time"].as<double>() == 0) return;
  if (common.iterations > 0)
    throw Error::usage("--min-time with --iters: -n times one block of that count; give one of them");
  if (timing == ops::TimingMode::events || timing == ops::TimingMode::graph)
    throw Error::usage(fmt::format("--min-time with {}: that timing mode times one block of nccl-tests' count; drop it",
                                   timing == ops::TimingMode::events ? "--per-iter" : "--graph"));
}

}  // namespace

void CollBenchmark::add_options(cli::po::options_description& options) {
  namespace po = cli::po;
  auto add = options.add_options();
  add("op", po::value<std::string>()->default_value("all_reduce"),
      ("operations, comma-separated: " + choices(ops::collectives(), op_name)).c_str());
  add("backend", po::value<std::string>()->default_value("auto"),
      "nccl (one rank per GPU), mpi, or auto (nccl when built with it and a GPU is visible)");
  add("dtype,d", po::value<std::string>()->default_value("float"),
      (choices(ops::all_data_types(), type_name) + ", comma-separated (nccl-tests -d)").c_str());
  add("redop,o", po::value<std::string>()->default_value("sum"),
      (choices(ops::all_red_ops(), redop_name) + ", comma-separated (nccl-tests -o)").c_str());
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
  ops_ = parse_names(v["op"].as<std::string>(), ops::collectives(), op_name, "--op");
  dtypes_.clear();
  for (const auto* t : parse_names(v["dtype"].as<std::string>(), ops::all_data_types(), type_name, "--dtype"))
    dtypes_.push_back(*t);
  redops_.clear();
  for (const auto* o : parse_names(v["redop"].as<std::string>(), ops::all_red_ops(), redop_name, "--redop"))
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
  const auto placements = cli::parse_choice(v["in-place"].as<std::string>(), "--in-place", kPlacements);
  in_place_ = placements == Placements::both ? std::vector<bool>{false, true}
                                             : std::vector<bool>{placements == Placements::in_place};
  const int blocking = v["blocking"].as<int>();
  if (blocking != 0 && blocking != 1)
    throw Error::usage(fmt::format("--blocking {}: allowed values are 0 and 1", blocking));
  graph_launches_ = v["graph"].as<int>();
  cli::require_at_least("--graph", graph_launches_, 0);
  const bool per_iter = v.count("per-iter") > 0;
  if (int(per_iter) + int(graph_launches_ > 0) + blocking > 1)
    throw Error::usage("--per-iter, --graph and --blocking are different timing modes: choose one");
  timing_ = per_iter              ? ops::TimingMode::events
            : graph_launches_ > 0 ? ops::TimingMode::graph
            : blocking            ? ops::TimingMode::blocking
                                  : ops::TimingMode::host;
  min_time_s_ = timing::TimedBlocks::checked_min_time(v["min-time"].as<double>(), "--min-time");
  if (common.iterations > 0 || timing_ == ops::TimingMode::events || timing_ == ops::TimingMode::graph)
    min_time_s_ = 0;  // -n: a count, as nccl-tests
  const int average = v["average"].as<int>();
  if (average < 0 || average > 3)
    throw Error::usage(fmt::format("--average {}: allowed values are 0, 1, 2, 3", average));
  combine_ = static_cast<ops::RankCombine>(average);
  refuse_unused_options(v, common, ops_, timing_);

  backend_ = choose_backend(cli::parse_choice(v["backend"].as<std::string>(), "--backend", ops::kBackendChoices));
  const std::string backend_name(to_string(backend_));
  device_memory_ =
      cli::parse_choice(v["memory"].as<std::string>(), "--memory", kMpiMemory) == memory::MemoryKind::device;
  if (backend_ == ops::BackendKind::nccl || device_memory_) {
    try {
      gpu_ = runtime::bind_gpu(placement.me().machine_local_rank);
    } catch (const Error& e) {
      throw Error(e.status(),
                  fmt::format("--backend {}{}: {}", backend_name, device_memory_ ? " --memory device" : "", e.what()));
    }
  }
  if (backend_ == ops::BackendKind::mpi) {
    if (device_memory_ && !runtime::mpi_is_cuda_aware())
      throw Error::usage("--memory device: this MPI library is not CUDA-aware (MPIX_Query_cuda_support); use host");
    if (timing_ == ops::TimingMode::events || timing_ == ops::TimingMode::graph)
      throw Error::usage("--per-iter and --graph time CUDA work: they need --backend nccl");
    // "all" means every type and reduction this back end has; naming one it lacks is an error.
    if (v["dtype"].as<std::string>() == "all")
      dtypes_.erase(std::remove_if(dtypes_.begin(), dtypes_.end(), [](ops::DataType t) { return !mpi_has(t); }),
                    dtypes_.end());
    if (v["redop"].as<std::string>() == "all")
      redops_.erase(std::remove_if(redops_.begin(), redops_.end(), [](ops::RedOp o) { return !mpi_has(o); }),
                    redops_.end());
    for (auto t : dtypes_)
      if (!mpi_has(t))
        throw Error::usage(fmt::format("--dtype {}: MPI has no such type; allowed with --backend mpi: {}", to_string(t),
                                       mpi_names(ops::all_data_types())));
    for (auto o : redops_)
      if (!mpi_has(o))
        throw Error::usage(fmt::format("--redop {}: MPI has no {}; allowed with --backend mpi: {}", to_string(o),
                                       o == ops::RedOp::avg ? "average" : "such reduction",
                                       mpi_names(ops::all_red_ops())));
    require_mpi_counts(ops_, dtypes_, common.sizes.max(), nranks, common.sizes_option);
  } else if (device_memory_) {
    throw Error::usage("--memory applies to --backend mpi only (NCCL always uses device memory)");
  }
  if (v.count("per-rank")) {
    if (backend_ != ops::BackendKind::nccl)
      throw Error::usage("--per-rank reads NCCL's profiler events: it needs --backend nccl");
    per_rank_ = std::make_unique<PerRankView>();  // before NCCL's first communicator
  }
  const bool some_all = v["dtype"].as<std::string>() == "all" || v["redop"].as<std::string>() == "all";
  for (auto o : redops_)
    for (auto t : dtypes_)
      if (o == ops::RedOp::avg && !is_floating(t) && !some_all)
        throw Error::usage(
            fmt::format("--redop avg with --dtype {}: avg is checked for floating types only "
                        "(half, float, double, bfloat16)",
                        to_string(t)));
  flip_byte_ = TestHooks::current().flip_byte;
}

}  // namespace fabricbench::tools::coll
