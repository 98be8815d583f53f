// fabric-watchdog's command line: what it watches (the command after --, or only NCCL's RAS with --watch), how long a
// silence is a hang, what it does then, and where the report goes. Every refusal is one line naming the option, before
// the command starts; an option the chosen mode does not use is refused, not ignored.
#pragma once
#include <optional>
#include <string>
#include <vector>

#include "fabricbench/job/ras.hpp"
#include "fabricbench/tools/watchdog/slow_judge.hpp"

namespace fabricbench::watchdog {

// The name its messages and files carry.
inline constexpr const char* kProgram = "fabric-watchdog";

struct Options {
  double timeout_s = 20 * 60, ras_timeout_s = 30, action_timeout_s = 60;
  std::optional<job::RasAddress> ras;  // none: --no-ras
  bool stacks = false, kill = false, scancel = false;
  std::string exec, report;
  bool force = false, unbuffered = false, python_hook = true;
  double watch_s = 0;      // --watch: a RAS look this often (0: only after --timeout of silence)
  std::string prometheus;  // --prometheus: the textfile each look rewrites
  // --slow DIR: the profiler plugin in the command's environment, the ranks' records in DIR, judged while the job
  // runs (by the watchdog of the launcher's first task). --judge DIR: that judge alone. slow.folder empty: neither.
  SlowOptions slow;
  bool judge_only = false;
  std::string plugin;  // the plugin's path (next to the tools: <prefix>/lib)
  std::vector<std::string> command;
  std::string command_line;

  // Error::usage on bad input; --help prints the options and exits 0.
  static Options parse(int argc, char** argv);
};

// Whether this watchdog is the launcher's first task (SLURM_PROCID, OMPI_COMM_WORLD_RANK, PMI_RANK or PMIX_RANK 0),
// or the only one: the one that judges --slow's folder and writes its report.
bool first_task();

}  // namespace fabricbench::watchdog
