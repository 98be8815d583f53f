// fabric-doctor: the checks people do by hand before and after a benchmark (ibstat, NCCL's transport, topo -p2p,
// nvlink -s/-e, remapped rows, THP, NUMA, versions across hosts) in one MPI job over every host. Findings go to
// /doctor/findings and to one table per host on the terminal; exit 1 when a check fails (--strict: or warns).
#pragma once
#include <memory>
#include <string>
#include <vector>

#include "fabricbench/app/benchmark.hpp"
#include "fabricbench/doctor/checks.hpp"
#include "fabricbench/doctor/ras_report.hpp"
#include "fabricbench/tools/doctor/nccl_log_mode.hpp"

namespace fabricbench::tools::doctor {
// What it takes from lib/doctor/ (this namespace hides that one's name).
using fabricbench::doctor::Check;
using fabricbench::doctor::NcclRasMode;

// The text of `--list`: every check with its group, scope and one line.
std::string list_checks();

// A small NCCL job over `world` (init and one all_reduce on `gpu`) with NCCL_DEBUG=INFO,
// NCCL_DEBUG_SUBSYS=INIT,NET and a private NCCL_DEBUG_FILE; returns this rank's log. NCCL reads these variables
// once per process, so this must be the process's first use of NCCL. Throws Error::runtime on NCCL failures;
// without NCCL in the build it returns "" and sets `why`.
std::string run_nccl_probe(const runtime::Communicator& world, int gpu, std::string* why);

class DoctorBenchmark : public app::Benchmark {
 public:
  DoctorBenchmark();
  std::string program() const override { return "fabric-doctor"; }
  std::string summary() const override;
  cli::OptionGroups option_groups() const override { return {std::nullopt, ""}; }
  void add_options(cli::po::options_description& options) override;
  void configure(const cli::po::variables_map& values, const cli::CommonOptions& common,
                 const runtime::Placement& placement) override;
  const results::TableSpec& table() const override { return table_; }
  int gpu() const override { return gpu_; }
  app::HarnessRequest request() const override {
    return {list_ ? list_checks() : std::string(), "", json_, !nccl_log_reader_};
  }
  ExitStatus run(const app::RunContext& context) override;

 private:
  results::TableSpec table_;
  std::vector<const Check*> selected_;
  bool list_ = false, strict_ = false, show_ok_ = true, json_ = false;
  bool nccl_log_reader_ = false;           // --nccl-log or --nccl-ras given (every rank): a job read, not this host
  std::unique_ptr<NcclLogMode> nccl_log_;  // the logs read (rank 0)
  std::unique_ptr<NcclRasMode> nccl_ras_;  // the running job asked (rank 0)
  int gpu_ = -1;
  std::string gpu_bus_;
};

}  // namespace fabricbench::tools::doctor
