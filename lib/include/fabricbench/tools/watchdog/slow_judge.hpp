// fabric-watchdog's judge (--judge DIR, and the one --slow starts): the run's folder of profiler records read every
// second, the job's ranks judged over a sliding window (job/straggler.hpp), a line when a slow rank (or a slow
// collective) appears and when it goes, node_exporter's textfile, an optional action, and at the end the report (HDF5:
// the findings, the ranks against time, the per-rank, per-collective rows, the processes). It runs as its own process:
// killed, it takes nothing of the job with it.
#pragma once
#include <csignal>
#include <string>

#include "fabricbench/tools/watchdog/watchdog_options.hpp"

namespace fabricbench::tools::watchdog {

// Judges until `stop` is set (then once more: what the ended job wrote last), writes the report; the exit status.
int run_judge(const JudgeMode& o, const std::string& command_line, const volatile std::sig_atomic_t& stop);

}  // namespace fabricbench::tools::watchdog
