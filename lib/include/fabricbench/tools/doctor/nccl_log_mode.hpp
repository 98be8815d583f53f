// fabric-doctor --nccl-log: a real job's NCCL logs read (streamed) on rank 0 before any output exists, so that a
// bad file is one usage line and no file; then the transport findings and the calls tables written through the
// harness's outputs (terminal grouped where ranks agree, HDF5 /doctor/..., --json).
#pragma once
#include <string>
#include <vector>

#include "fabricbench/error.hpp"
#include "fabricbench/job/nccl_job_log.hpp"
#include "fabricbench/results/result_set.hpp"
#include "fabricbench/tools/doctor/nccl_log_report.hpp"

namespace fabricbench::tools::doctor {

class NcclLogMode {
 public:
  // Reads every file; `rank` >= 0 keeps that rank's processes only. Throws Error::usage for a file that is not an
  // NCCL log, a bad marker or a rank no process has.
  NcclLogMode(const std::vector<std::string>& paths, const std::string& marker, int rank);
  // Rank 0: every table through `out` (findings into `findings`, the tool's table); the exit status of the findings.
  ExitStatus write(results::ResultSet& out, const results::TableSpec& findings, bool show_ok, bool strict) const;

 private:
  job::NcclJobLog job_;
  std::vector<const job::NcclProcess*> processes_;
  bool has_marker_ = false;
  double seconds_ = 0;
};

}  // namespace fabricbench::tools::doctor
