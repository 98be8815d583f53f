// fabric-watchdog's command line, as its three modes, each with what it takes:
// - RunMode: a command after --, watched for a hang (how long a silence is one, what it does then, where the report
//   goes), and with --slow DIR its ranks' records judged while it runs (the judge's settings, JudgeMode);
// - MonitorMode: --watch D without a command, NCCL's RAS looked at every D for node_exporter;
// - JudgeMode: --judge DIR, the judge of a --slow folder alone (the one --slow starts is this mode too).
// One parse: every refusal is one line naming the option, before the command starts; an option the chosen mode does
// not take is refused, not ignored (which mode takes which option: one table, watchdog_options.cpp).
#pragma once
#include <optional>
#include <string>
#include <variant>
#include <vector>

#include "fabricbench/job/ras.hpp"

namespace fabricbench::tools::watchdog {

// The name its messages and files carry.
inline constexpr const char* kProgram = "fabric-watchdog";

// --judge DIR: the ranks' records in DIR judged over a sliding window (slow_judge.hpp).
struct JudgeMode {
  std::string folder, report, prometheus, exec;
  double window_s = 10, loss_pct = 10, action_timeout_s = 60;
  double settle_s = 5;  // a communicator's first seconds, not judged (job::StragglerSettings::settle_s)
  bool force = false;
  bool replay = false;  // --replay: the folder judged after the fact, in the records' own time
  // The share of the window the others must lose to a rank before it is named.
  double loss() const { return loss_pct / 100; }
  // No record in the folder after this long: the job's NCCL did not load the plugin (said once).
  double silent_s() const { return window_s * 6 < 5 ? 5 : window_s * 6; }
  // The command line of the judge --slow starts: `program` --judge DIR with these settings.
  std::vector<std::string> argv(const std::string& program) const;
};

// NCCL's RAS as the watching modes ask it: where (none: --no-ras), how long a look may take, and --watch's looks.
struct RasSettings {
  std::optional<job::RasAddress> address;
  double timeout_s = 30;
  double watch_s = 0;      // --watch: a look this often (0: only after --timeout of silence)
  std::string prometheus;  // --prometheus: the textfile each look rewrites
};

// --watch D without a command: looks until SIGTERM.
struct MonitorMode {
  RasSettings ras;
};

// A command watched.
struct RunMode {
  RasSettings ras;
  double timeout_s = 20 * 60, action_timeout_s = 60;
  bool stacks = false, kill = false, scancel = false;
  std::string exec, report;
  bool force = false, unbuffered = false, python_hook = true;
  // --slow DIR: the profiler plugin in the command's environment, the ranks' records in DIR, judged while the job
  // runs by a judge with these settings (started by the watchdog of the launcher's first task).
  std::optional<JudgeMode> slow;
  std::vector<std::string> environment;  // what --slow adds to the command's environment
  std::vector<std::string> command;
};

struct Options {
  std::variant<RunMode, MonitorMode, JudgeMode> mode;
  std::string command_line;

  // Error::usage on bad input; --help prints the options and exits 0.
  static Options parse(int argc, char** argv);
};

// Whether this watchdog is the launcher's first task (SLURM_PROCID, OMPI_COMM_WORLD_RANK, PMI_RANK or PMIX_RANK 0),
// or the only one: the one that judges --slow's folder and writes its report.
bool first_task();

}  // namespace fabricbench::tools::watchdog
