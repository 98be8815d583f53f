// fabric-coll: NCCL and MPI collectives with nccl-tests' algbw/busbw. Every operation x type x reduction x root
// x size x (out-of-place, in-place) is one case run by the shared timing loop and validated after it.
#pragma once
#include <cmath>
#include <memory>
#include <vector>

#include "fabricbench/app/benchmark.hpp"
#include "fabricbench/app/tool_loop.hpp"
#include "fabricbench/ops/coll_backend.hpp"
#include "fabricbench/timing/rank_laps.hpp"
#include "fabricbench/tools/coll/nccl_path_log.hpp"
#include "fabricbench/tools/coll/per_rank_view.hpp"

namespace fabricbench::tools::coll {

class CollBenchmark : public app::Benchmark {
 public:
  CollBenchmark();
  ~CollBenchmark() override;
  std::string program() const override { return "fabric-coll"; }
  std::string summary() const override;
  cli::OptionGroups option_groups() const override { return {cli::SizeOptions{{32u << 20, 32u << 20, 2}, true}, ""}; }
  void add_options(cli::po::options_description& options) override;
  void configure(const cli::po::variables_map& values, const cli::CommonOptions& common,
                 const runtime::Placement& placement) override;
  const results::TableSpec& table() const override { return table_; }
  int gpu() const override { return gpu_; }
  ExitStatus run(const app::RunContext& context) override;
  void abort() noexcept override;

  static results::TableSpec make_table();

 private:
  struct Measured {
    double time_us;
    std::vector<double> rank_us;  // every rank's mean time per op (rank 0 only)
    timing::RankLaps laps;        // every rank's laps (rank 0 only)
    std::uint64_t wrong;
    int blocks = 1;
    double spread = NAN;  // the largest over ranks of each rank's block spread (fraction)
  };
  Measured measure(const app::RunContext& context, const ops::CollCase& c, int warmup, int iterations);
  // An op's busbw summed over its rows, for nccl-tests' "Avg bus bandwidth" line.
  struct Busbw {
    double sum = 0;
    int rows = 0;
  };
  // One (op, dtype, redop, root) of `base` over every size and each of `modes` (in place or not): a row each on rank
  // 0, held against `reference`, its busbw added to `busbw`.
  void run_sizes(const app::RunContext& context, app::ToolLoop& loop, const ops::CollCase& base,
                 const std::vector<bool>& modes, const facts::Reference& reference, Busbw& busbw);
  results::Row make_row(const ops::CollCase& c, const Measured& m, int iterations, int warmup, int nranks) const;
  // The terminal view (declared beside the table): one line per size, the in-place modes side by side.
  std::vector<results::TerminalColumn> terminal_view(const std::vector<bool>& modes, bool reference_known) const;

  results::TableSpec table_, samples_;
  // Handles of the columns the tool sets (made once, beside the table: a wrong name or type stops every run).
  struct Columns {
    explicit Columns(const results::TableSpec& t);
    results::ColumnHandle<std::string> op, backend, dtype, redop, timing;
    results::ColumnHandle<std::int64_t> root, in_place, bytes, count, ranks, iterations, warmup, blocks, wrong;
    results::ColumnHandle<double> time_us_spread_pct, time_us, time_us_rank_min, time_us_rank_max, iter_us_min,
        iter_us_median, iter_us_p99, iter_us_max, algbw_gbps, busbw_gbps;
  };
  Columns col_;
  std::vector<const ops::CollectiveOp*> ops_;
  std::vector<ops::DataType> dtypes_;
  std::vector<ops::RedOp> redops_;
  std::vector<int> roots_;  // empty: every rank (-r all)
  std::vector<bool> in_place_;
  ops::BackendKind backend_ = ops::BackendKind::mpi;
  bool device_memory_ = false;
  ops::TimingMode timing_ = ops::TimingMode::host;
  int graph_launches_ = 0;
  double min_time_s_ = 0.1;  // --min-time; 0 with -n and for device timing
  ops::RankCombine combine_ = ops::RankCombine::average;
  int gpu_ = -1;
  bool flip_byte_ = false;
  std::unique_ptr<ops::CollBackend> backend_impl_;
  std::unique_ptr<PerRankView> per_rank_;   // --per-rank
  std::unique_ptr<NcclPathLog> nccl_path_;  // NCCL backend: the path NCCL took, named on each row
};

}  // namespace fabricbench::tools::coll
