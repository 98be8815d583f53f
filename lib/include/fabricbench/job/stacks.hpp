// The stacks of a job's processes on this host, taken while it hangs: py-spy for a Python process, else gdb or
// eu-stack, whichever is installed. Where none is, what can still be had: the Python tracebacks of a process started
// with the watchdog's hook (PythonStackHook: Python's faulthandler, armed at start-up), and every thread's state,
// wait channel and kernel stack from /proc; then the one command to run by hand for the rest.
#pragma once
#include <sys/types.h>

#include <optional>
#include <string>
#include <vector>

#include "fabricbench/results/result_set.hpp"
#include "fabricbench/runtime/temp_dir.hpp"

namespace fabricbench::job {

// A private folder (mode 0700, removed with it) holding a sitecustomize.py that every Python process started with
// env() in its environment runs at start-up: it registers Python's faulthandler on SIGRTMIN+7 to write every thread's
// traceback into FOLDER/PID.py-stack, a file that exists only once the handler does (re-armed in a forked child; a
// sitecustomize of the user's further on the path still runs). What it costs a process: one open file and one signal
// handler; nothing runs until the signal.
class PythonStackHook {
 public:
  PythonStackHook();  // Error::runtime when the folder cannot be made
  // "PYTHONPATH=FOLDER[:the PYTHONPATH we have]"
  std::string env() const;
  const std::string& folder() const { return folder_.path(); }
  // The tracebacks `pid` writes when asked (SIGRTMIN+7), waiting at most `timeout_s` for them; nullopt when it has no
  // hook (not Python, started elsewhere, or its own handler took the signal) or wrote nothing in time (frozen).
  std::optional<std::string> take(pid_t pid, double timeout_s) const;

 private:
  runtime::TempDir folder_;
};

// One process's stack as a tool printed it.
struct Stack {
  pid_t pid = 0;
  std::string command;  // the process's command line (/proc/PID/cmdline, blanks between arguments)
  std::string tool;     // "py-spy", "gdb", "eu-stack", "proc", "faulthandler+gdb" ...: the tools it came from
  std::string text;     // what the tools printed, then the command to run by hand where none was installed
};

// The stacks of `pids` in order, each bounded by `timeout_s`: py-spy dump for a Python process where py-spy is
// installed; else a Python process's tracebacks through `hook` (when given), then the native stacks of gdb, eu-stack,
// or (neither installed) the threads from /proc, and the one command to run by hand for what is missing.
std::vector<Stack> take_stacks(const std::vector<pid_t>& pids, double timeout_s, const PythonStackHook* hook = nullptr);

// `stacks` into the table /GROUP/NAME (pid, line, tool, command, text: one row per line of each stack), declared here,
// and one note per process naming it.
void write_stacks(results::ResultSet& out, const std::string& group, const std::string& name,
                  const std::vector<Stack>& stacks);

}  // namespace fabricbench::job
