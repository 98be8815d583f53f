// fabric-watchdog --slow's words and report: how a finding is said (the terminal's line, the action's
// FABRIC_WATCHDOG_SLOW and the report's text), and the report itself (HDF5, docs/RESULTS.md /slow): the findings,
// the ranks against time, the per-rank, per-collective rows, the connections, the processes, the collectives never
// reported. The judge writes it whole every 30 s while the job runs (status "running", replaced atomically) and at
// the end, so a judge killed mid-run leaves what it had judged, saying it did not complete.
#pragma once
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "fabricbench/job/slow_folder.hpp"
#include "fabricbench/job/straggler.hpp"

namespace fabricbench::tools::watchdog {

std::string comm_text(std::uint64_t comm);
std::string utc_text(std::int64_t ns);

// One naming, from the look it appeared at to the last look it held at.
struct SlowEpisode {
  job::SlowFinding first, worst;
  std::int64_t from_ns = 0, to_ns = 0;
  std::int64_t missed_ns = 0;  // the first look of a run of looks without it (0: seen at the last look)
  // When its trouble began: its naming, or the first naming of the same finding gone and named again within the
  // evidence's minute (a loaded judge lost it for a few looks). The host's "before" ends there.
  std::int64_t trouble_ns = 0;
  std::string because;    // what the named rank's host saw (host_evidence.hpp), "" when it took no samples
  bool told_why = false;  // a line said "because: ..." (at the naming, or when the evidence came later)
};

class SlowWords {
 public:
  SlowWords(const std::vector<job::SlowSource>& sources, double window_s) : sources_(sources), window_s_(window_s) {}
  // "rank 2 (pid 812, GPU 2 (0000:1b:00.0) on host gpu-017)", "?" parts when not known.
  std::string rank(std::uint64_t comm, int rank, std::size_t source) const;
  // Who or what a finding names, and the whole line.
  std::string who(const job::SlowFinding& f) const;
  std::string describe(const job::SlowFinding& f) const;
  const job::SlowSource& source(std::size_t i) const;

 private:
  const std::vector<job::SlowSource>& sources_;
  double window_s_;
};

// What the report is written from.
struct SlowReportData {
  const job::SlowFolder& folder;
  const job::StragglerFinder& finder;
  const std::vector<SlowEpisode>& episodes;
  const std::vector<std::pair<std::int64_t, job::RankWindow>>& windows;
  std::size_t records;
  double window_s;
};

// Writes the report to `path` through `<path>.partial` and a rename (never a half-written report at `path`).
// `status`: "running" while the job runs, "complete", or "failed: <why>"; `terminal`: the findings' table on stderr
// too (the last write only).
void write_slow_report(const std::string& path, const std::string& command_line, const SlowReportData& d,
                       const std::string& status, bool terminal);

}  // namespace fabricbench::tools::watchdog
