// fabric-sweep's continuous mesh options (--repeat N, --bw-every K, --every D, --prometheus FILE) and, with --resume,
// the pass and round a resumed mesh goes on from. The wait between passes is the pass loop's (pass_loop.cpp); each
// pass's rows and the Prometheus file are the writer's (sweep_writer_mesh.cpp).
#include <fmt/format.h>

#include <algorithm>
#include <filesystem>

#include "fabricbench/results/hdf5_reader.hpp"
#include "fabricbench/results/prometheus.hpp"
#include "fabricbench/tools/sweep/sweep_benchmark.hpp"

namespace fabricbench::tools::sweep {
using namespace fabricbench::sweep;  // lib/sweep: what this tool runs

void SweepBenchmark::configure_mesh(const cli::po::variables_map& v, bool root) {
  opt_.mesh = v.count("repeat") > 0;
  opt_.repeat = 1;
  opt_.every_s = 0;
  first_pass_ = 1;
  first_round_ = 0;
  opt_.prometheus = v.count("prometheus") ? v["prometheus"].as<std::string>() : std::string();
  if (opt_.mesh) {
    const auto repeat = v["repeat"].as<long long>();
    cli::require_in_range("--repeat", repeat, 0, 1000000);
    opt_.repeat = static_cast<int>(repeat);
    if (v.count("budget"))
      throw Error::usage(
          "--budget caps one sweep; with --repeat each pass is the whole plan: give --every, or a --plan "
          "that fits (quick, --pairs-file)");
  }
  opt_.bw_every = 1;
  if (v.count("bw-every")) {
    if (!opt_.mesh)
      throw Error::usage("--bw-every: give --repeat N too (it spaces the bandwidth metrics over the passes)");
    const auto k = v["bw-every"].as<long long>();
    cli::require_in_range("--bw-every", k, 1, 1000000);
    opt_.bw_every = static_cast<int>(k);
    const auto higher = [](const SweepMetric* m) { return m->better == results::Better::higher; };
    if (opt_.bw_every > 1 && (std::all_of(opt_.metrics.begin(), opt_.metrics.end(), higher) ||
                              std::none_of(opt_.metrics.begin(), opt_.metrics.end(), higher)))
      throw Error::usage(
          fmt::format("--bw-every {}: give --metric with a latency metric ({}) and a bandwidth one, e.g. "
                      "p2p_latency,p2p_bw",
                      opt_.bw_every, metric_names(is_latency)));
  }
  if (v.count("every")) {
    if (!opt_.mesh) throw Error::usage("--every: give --repeat N too (the passes it spaces; 0: until stopped)");
    opt_.every_s = cli::parse_duration(v["every"].as<std::string>(), "--every", true);  // 0, 0s ...: no wait
  }
  if (!opt_.prometheus.empty()) {
    const auto folder = std::filesystem::path(opt_.prometheus).parent_path();
    if (!folder.empty() && !std::filesystem::is_directory(folder))
      throw Error::usage(
          fmt::format("--prometheus {}: the folder {} does not exist", opt_.prometheus, folder.string()));
    if (std::filesystem::path(opt_.prometheus).extension() != ".prom")
      throw Error::usage(
          fmt::format("--prometheus {}: give a file ending in .prom (node_exporter's textfile collector "
                      "reads *.prom)",
                      opt_.prometheus));
    if (root && !opt_.dry_run) results::Exposition::check_writable(opt_.prometheus);  // rank 0 writes it
  }
  if (opt_.resume.empty() || opt_.dry_run || !root) return;  // rank 0 reads the file; run() tells the others
  const bool is_mesh = results::has_table(opt_.resume, tables_.passes);  // declared by a mesh's start, rows or not
  if (is_mesh != opt_.mesh)
    throw Error::usage(
        is_mesh ? fmt::format("--resume {}: a mesh (--repeat); give --repeat (the passes in all) to go on", opt_.resume)
                : fmt::format("--resume {}: a sweep of one pass; resume it without --repeat", opt_.resume));
  if (!opt_.mesh) return;
  for (const auto& row : results::read_rows(opt_.resume, tables_.passes))
    first_pass_ = std::max(first_pass_, static_cast<int>(row.get(tables_.pass_col.pass)) + 1);
  for (const auto& row : resumed_rows_)
    first_round_ = std::max(first_round_, static_cast<int>(row.get(tables_.pair_col.round)) + 1);
  if (opt_.repeat > 0 && first_pass_ > opt_.repeat)
    throw Error::usage(fmt::format("--resume {}: its {} passes are done; ask for more with --repeat {} or 0",
                                   opt_.resume, first_pass_ - 1, first_pass_));
}

}  // namespace fabricbench::tools::sweep
