// A job's command run under the watchdog: its own process group (so that the whole job on this node is stopped at
// once), its output passed through to ours as it comes while the time of its last output is kept, and the process
// tree it grew (the pids whose stacks are taken). One owner: the destructor ends a child still running.
#pragma once
#include <sys/types.h>

#include <chrono>
#include <string>
#include <vector>

namespace fabricbench::job {

class ChildProcess {
 public:
  using Clock = std::chrono::steady_clock;
  // Starts `argv` (argv[0] looked up in PATH) with `extra_env` ("NAME=value") set, in place of ours of that name;
  // Error::usage when it cannot be started (not found, not executable).
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

}  // namespace fabricbench::job
