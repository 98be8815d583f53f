// What a running tool may use: its options, the world, who is where, the outputs (rank 0), the watchdog and the
// progress board, and the step bookkeeping every measurement goes through.
#pragma once
#include <string>

#include "fabricbench/cli/command_line.hpp"
#include "fabricbench/env/environment.hpp"
#include "fabricbench/facts/expected_share.hpp"
#include "fabricbench/results/result_set.hpp"
#include "fabricbench/runtime/failure_report.hpp"
#include "fabricbench/runtime/placement.hpp"
#include "fabricbench/runtime/progress_board.hpp"
#include "fabricbench/runtime/watchdog.hpp"
#include "fabricbench/test_hooks.hpp"

namespace fabricbench::app {

// `out` is null except on rank 0.
struct RunContext {
  const cli::CommonOptions& options;
  const runtime::Communicator& world;
  const runtime::Placement& placement;
  results::ResultSet* out;
  runtime::Watchdog& watchdog;
  runtime::ProgressBoard& board;
  runtime::FailureReport& report;
  // Rank 0: every host's facts, expected bandwidth and the cheap checks' findings (empty elsewhere, and in a resumed
  // run, which keeps its first part's /env).
  const env::EnvReport& environment;
  // Rank 0: what bandwidth rows are held against (from environment.expected) and the rule that warns.
  const facts::ExpectedShare& expected;
  const std::string& program;  // "fabric-p2p", for warning lines
  const TestHooks& hooks;      // TestHooks::current(): read once, before the run

  bool is_root() const { return out != nullptr; }
  mutable int measurements = 0;

  // One measurement: arms the watchdog with --timeout and tells the progress board this rank started it;
  // measured() tells it this rank finished. Outside timed regions only.
  // `timeout_s` >= 0 replaces --timeout for this step (a sweep round that holds several bounded pair tests).
  void measuring(std::string what, double timeout_s = -1) const;
  void measured() const;
  // What this rank is doing within the measurement, for a failure report ("pair h1 - h3, p2p_bw a->b").
  void doing(const std::string& what) const { report.set_doing(what); }
  // One line of progress on stderr (rank 0, not with --quiet).
  void progress(const std::string& line) const;
  // Rank 0: fills a row's expected_gbps and pct_expected; a judged row below the rule leaves one warning line in
  // the table and the file's notes (on stderr with --quiet).
  void expect(results::Row& row, double measured_gbps, const facts::Reference& ref, std::uint64_t bytes,
              const std::string& what) const;
};

}  // namespace fabricbench::app
