// fabric-verbs: perftest's ib_{write,read,send,atomic}_{bw,lat} from one mpirun/srun line. Rank i is paired with
// rank i + N/2; every pair runs each test at once over its own Reliable Connected queue pairs, connected over MPI.
#pragma once
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "fabricbench/app/benchmark.hpp"
#include "fabricbench/app/tool_loop.hpp"
#include "fabricbench/facts/link_counters.hpp"
#include "fabricbench/runtime/placement.hpp"
#include "fabricbench/verbs/verbs_link.hpp"

namespace fabricbench::tools::verbs {
// What it takes from lib/verbs/ (this namespace hides that one's name).
using fabricbench::verbs::Device;
using fabricbench::verbs::PortRequest;
using fabricbench::verbs::VerbsLink;
using fabricbench::verbs::VerbsMeasurement;
using fabricbench::verbs::VerbsSettings;
using fabricbench::verbs::VerbsTest;

class VerbsBenchmark : public app::Benchmark {
 public:
  VerbsBenchmark();
  ~VerbsBenchmark() override;
  std::string program() const override { return "fabric-verbs"; }
  std::string summary() const override;
  // perftest's letters: -b bidirectional, -e events, -i port, -m MTU, -q QPs, -x GID index (the common options keep
  // their long names).
  cli::OptionGroups option_groups() const override { return {cli::SizeOptions{{2, 8u << 20, 2}, false}, "beimqx"}; }
  void add_options(cli::po::options_description& options) override;
  void configure(const cli::po::variables_map& values, const cli::CommonOptions& common,
                 const runtime::Placement& placement) override;
  const results::TableSpec& table() const override { return table_; }
  int gpu() const override { return gpu_; }
  ExitStatus run(const app::RunContext& context) override;
  void abort() noexcept override;

  static results::TableSpec make_table();
  // The sizes a test runs: --sizes/-s/-a when given, else perftest's default size for the test (exposed for tests).
  std::vector<std::uint64_t> sizes_for(const VerbsTest& test, const cli::CommonOptions& common) const;

 private:
  // Rank 0: what a bandwidth row is held against (rank 0's port).
  facts::Reference reference(const app::RunContext& context) const;
  // Every rank's figures gathered; rank 0 writes the row through `loop` with `grown`, the ports' growth.
  void report(const app::RunContext& context, const app::ToolLoop& loop, const VerbsTest& test, std::uint64_t bytes,
              int warmup, const VerbsMeasurement& mine, const facts::CounterReading& grown);
  // The terminal view of `test`'s rows (declared beside the table): its title and the columns it shows.
  std::string section_title(const VerbsTest& test) const;
  std::vector<results::TerminalColumn> terminal_view(const app::RunContext& context, const VerbsTest& test) const;

  results::TableSpec table_, samples_;
  // Handles of the columns the tool sets (made once, beside the table: a wrong name or type stops every run).
  struct Columns {
    explicit Columns(const results::TableSpec& t);
    results::ColumnHandle<std::string> test, memory, device, link_layer;
    results::ColumnHandle<std::int64_t> bytes, pairs, qps, iterations, warmup, tx_depth, cq_mod, inline_bytes, mtu,
        port, gid_index, wrong;
    results::ColumnHandle<double> bw_avg_mibps, bw_avg_gbitps, msg_rate_mps, bw_min_pair_mibps, bw_peak_mibps,
        bw_peak_gbitps, latency_us, time_us_min, time_us_max, time_us_mean, time_us_stddev, time_us_p99, time_us_p999;
  };
  Columns col_;
  std::vector<const VerbsTest*> tests_;
  VerbsSettings settings_;
  PortRequest request_;
  memory::MemoryKind memory_ = memory::MemoryKind::host;
  std::optional<std::uint64_t> size_;  // -s
  bool sizes_given_ = false, report_gbits_ = false;
  double duration_s_ = 0;
  int gpu_ = -1;
  int qp_error_at_ = -1;  // test hook FABRICBENCH_TEST_QP_ERROR=K: leaders' QPs to the error state at measurement K
  std::optional<runtime::RankPairs> pairs_;
  std::unique_ptr<Device> device_;
  std::unique_ptr<VerbsLink> link_;
};

}  // namespace fabricbench::tools::verbs
