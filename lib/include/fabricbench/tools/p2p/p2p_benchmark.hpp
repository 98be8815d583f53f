// fabric-p2p: the OSU-style point-to-point tests over MPI, or between GPUs over NCCL (--backend nccl, OSU's xccl
// benchmarks; ops/nccl_p2p.hpp). With N ranks, rank i is paired with rank i + N/2 and all pairs run each test at
// once; one row per test and size.
#pragma once
#include <cstdint>
#include <memory>
#include <optional>
#include <vector>

#include "fabricbench/app/benchmark.hpp"
#include "fabricbench/app/tool_loop.hpp"
#include "fabricbench/facts/link_counters.hpp"
#include "fabricbench/memory/buffer.hpp"
#include "fabricbench/ops/coll_backend.hpp"
#include "fabricbench/ops/nccl_p2p.hpp"
#include "fabricbench/ops/p2p_exchange.hpp"
#include "fabricbench/ops/p2p_test.hpp"

namespace fabricbench::tools::p2p {

class P2PBenchmark : public app::Benchmark {
 public:
  P2PBenchmark();
  std::string program() const override { return "fabric-p2p"; }
  std::string summary() const override;
  cli::OptionGroups option_groups() const override { return {cli::SizeOptions{{1, 4u << 20, 2}, false}, ""}; }
  void add_options(cli::po::options_description& options) override;
  void configure(const cli::po::variables_map& values, const cli::CommonOptions& common,
                 const runtime::Placement& placement) override;
  const results::TableSpec& table() const override { return table_; }
  int gpu() const override { return gpu_; }
  ExitStatus run(const app::RunContext& context) override;

  // The table every output gets (exposed for tests).
  static results::TableSpec make_table();

 private:
  ops::PairMeasurement measure(const ops::P2PTest& test, std::uint64_t bytes, int iterations, int warmup,
                               const runtime::Communicator& world);
  // Every rank's measurement gathered; rank 0 writes the row (and its samples) through `loop`, with `grown`, the
  // links' growth summed over hosts.
  void report(const app::RunContext& context, const app::ToolLoop& loop, const ops::P2PTest& test, std::uint64_t bytes,
              int iterations, int warmup, const ops::PairMeasurement& mine, const facts::CounterReading& grown);
  // The terminal view of `test`'s rows (declared beside the table): its title and the columns it shows.
  std::string section_title(const ops::P2PTest& test) const;
  std::vector<results::TerminalColumn> terminal_view(const app::RunContext& context, const ops::P2PTest& test) const;

  // The healthy curves' name of `test` over this back end (configs/expected-curves.csv): p2p_bw, nccl_p2p_bw, ...
  std::string curve_op(const ops::P2PTest& test) const;
  // What a bandwidth row of `test` is held against (rank 0).
  facts::Reference reference(const app::RunContext& context, const ops::P2PTest& test) const;

  results::TableSpec table_, samples_;
  // Handles of the columns the tool sets (made once, beside the table: a wrong name or type stops every run).
  struct Columns {
    explicit Columns(const results::TableSpec& t);
    results::ColumnHandle<std::string> test, memory, backend;
    results::ColumnHandle<std::int64_t> bytes, pairs, iterations, warmup, wrong, blocks, window;
    results::ColumnHandle<double> time_us_spread_pct, latency_us, bw_mbps, bw_min_pair_mbps, msg_rate_mps, time_us_min,
        time_us_median, time_us_mean, time_us_max, time_us_p90, time_us_p99, time_us_stddev;
  };
  Columns col_;
  std::vector<const ops::P2PTest*> tests_;
  memory::MemoryKind memory_ = memory::MemoryKind::host;
  ops::BackendKind backend_ =
      ops::BackendKind::mpi;            // --backend: MPI (host, pinned, device where CUDA-aware) or NCCL (device)
  std::unique_ptr<ops::NcclP2P> nccl_;  // --backend nccl: the job's communicator, made in run()
  int window_ = 64;
  int gpu_ = -1;
  bool check_ = false;
  double min_time_s_ = 0.1;  // --min-time; 0 with -n
  bool flip_byte_ = false;   // test hook FABRICBENCH_TEST_FLIP_BYTE: corrupt one received byte per size
  std::optional<runtime::RankPairs> pairs_;
  std::optional<memory::Buffer> send_, recv_;
};

}  // namespace fabricbench::tools::p2p
