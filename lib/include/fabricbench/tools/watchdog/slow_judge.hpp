// fabric-watchdog's slow-rank judge: the run's folder of profiler records read every second, the job's ranks judged
// over a sliding window (job/straggler.hpp), a line when a slow rank (or a slow collective) appears and when it
// goes, node_exporter's textfile, an optional action, and at the end the report (HDF5: the findings, the ranks
// against time, the per-rank, per-collective rows, the processes). It runs as its own process (fabric-watchdog
// --judge DIR): killed, it takes nothing of the job with it.
#pragma once
#include <csignal>
#include <string>

namespace fabricbench::watchdog {

struct SlowOptions {
  std::string folder, report, prometheus, exec;
  double window_s = 10, loss = 0.10, action_timeout_s = 60;
  double settle_s = 5;  // a communicator's first seconds, not judged (job::StragglerSettings::settle_s)
  bool force = false;
  bool replay = false;  // --judge DIR --replay: the folder judged after the fact, in the records' own time
  // No record in the folder after this long: the job's NCCL did not load the plugin (said once).
  double silent_s() const { return window_s * 6 < 5 ? 5 : window_s * 6; }
};

// Judges until `stop` is set (then once more: what the ended job wrote last), writes the report; the exit status.
int judge_slow(const SlowOptions& o, const std::string& command_line, const volatile std::sig_atomic_t& stop);

}  // namespace fabricbench::watchdog
