// A job's command run under the watchdog: its own process group (so that the whole job on this node is stopped at
// once), its output passed through to ours as it comes while the time of its last output is kept, and the process
// tree it grew (the pids whose stacks are taken). One owner: the destructor ends a child still running.
#pragma once
#include <sys/types.h>

#include <chrono>
#include <string>
#include <vector>

#include "fabricbench/results/result_set.hpp"

namespace fabricbench::job {

class ChildProcess {
 public:
  using Clock = std::chrono::steady_clock;
  // Starts `argv` (argv[0] looked up in PATH) with `extra_env` ("NAME=value") added; Error::usage when it cannot be
  // started (not found, not executable).
  ChildProcess(const std::vector<std::string>& argv, const std::vector<std::string>& extra_env);
  ~ChildProcess();
  ChildProcess(const ChildProcess&) = delete;
  ChildProcess& operator=(const ChildProcess&) = delete;

  // Passes through what the child wrote, waiting at most `wait_s` for it; false once the child has exited and its
  // output is drained.
  bool pump(double wait_s);
  Clock::time_point last_output() const { return last_output_; }
  pid_t pid() const { return pid_; }
  // The exit status as a shell gives it (128 + N for a signal); valid once pump() returned false.
  int status() const { return status_; }
  // The child and every descendant, the child first (read from /proc).
  std::vector<pid_t> tree() const;
  // SIGTERM to the group, then SIGKILL after `grace_s`; returns when the child has exited.
  void stop(double grace_s);

 private:
  void reap(bool block);
  pid_t pid_ = -1;
  int out_ = -1, err_ = -1;  // read ends of the child's stdout and stderr
  bool exited_ = false;
  int status_ = 0;
  Clock::time_point last_output_ = Clock::now();
};

// One process's stack as a tool printed it.
struct Stack {
  pid_t pid = 0;
  std::string command;  // the process's command line (/proc/PID/cmdline, blanks between arguments)
  std::string tool;     // "py-spy", "gdb", "eu-stack", or "" when none is installed
  std::string text;     // what the tool printed, or the command to run by hand
};

// The stacks of `pids` in order: py-spy dump for a Python process where py-spy is installed, else gdb's backtrace of
// every thread, else eu-stack; each bounded by `timeout_s`. Without a tool, the one command to run on this host.
std::vector<Stack> take_stacks(const std::vector<pid_t>& pids, double timeout_s);

// `stacks` into the table /GROUP/NAME (pid, line, tool, command, text: one row per line of each stack), declared here,
// and one note per process naming it.
void write_stacks(results::ResultSet& out, const std::string& group, const std::string& name,
                  const std::vector<Stack>& stacks);

}  // namespace fabricbench::job
