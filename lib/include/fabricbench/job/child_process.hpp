// A command run under the watchdog (the job, or an exec: action): its own process group (so that all of it on this
// node is signalled at once), its output passed through to ours as it comes while the time of its last output is
// kept, and the process tree it grew (the pids whose stacks are taken). One owner: the destructor ends whatever is
// left of the group. A guard process ends the group too when the watchdog itself dies without a word (SIGKILL, the
// OOM killer), where no destructor or handler runs, and then removes the folder the job was given (the stack hook's),
// whose owner in the watchdog could not.
#pragma once
#include <sys/types.h>

#include <chrono>
#include <string>
#include <vector>

namespace fabricbench::job {

// `root` and every process below it, `root` first (parents read from /proc).
std::vector<pid_t> process_tree(pid_t root);

class ChildProcess {
 public:
  using Clock = std::chrono::steady_clock;
  // Starts `argv` (argv[0] looked up in PATH, run as given: no shell) with `extra_env` ("NAME=value") set, in place
  // of ours of that name; Error::usage when it cannot be started (not found, not executable). `guard_removes`: a
  // folder of the job's that the guard removes once it ended the group (none when empty).
  ChildProcess(const std::vector<std::string>& argv, const std::vector<std::string>& extra_env,
               const std::string& guard_removes = "");
  ~ChildProcess();
  ChildProcess(const ChildProcess&) = delete;
  ChildProcess& operator=(const ChildProcess&) = delete;

  // Passes through what the child wrote, waiting at most `wait_s` (less when a signal arrives); false once the child
  // has exited and its output is drained. A child that closed its stdout and stderr is still waited for, in steps,
  // never blocking: its silence is what the watchdog times.
  bool pump(double wait_s);
  Clock::time_point last_output() const { return last_output_; }
  pid_t pid() const { return pid_; }
  bool exited() const { return exited_; }
  // The exit status as a shell gives it (128 + N for a signal); valid once pump() returned false.
  int status() const { return status_; }
  // The child and every descendant, the child first (read from /proc).
  std::vector<pid_t> tree() const;
  // `signal` to the group and to every descendant that left it (SIGCONT first: a stopped process takes no signal
  // until it runs).
  void signal(int signal) const;
  // SIGTERM to the group, then SIGKILL after `grace_s`; returns when the child has exited, its group emptied.
  void stop(double grace_s);

 private:
  void reap(bool block);
  void end_group(double grace_s);  // whatever is left of the group once the child exited
  pid_t pid_ = -1;
  pid_t guard_ = -1;   // the guard process (see above)
  int guard_fd_ = -1;  // our end of its pipe: a byte on it says "done, end nothing"; EOF without one says "end it"
  int out_ = -1, err_ = -1;  // read ends of the child's stdout and stderr
  bool exited_ = false;
  int status_ = 0;
  Clock::time_point last_output_ = Clock::now();
};

}  // namespace fabricbench::job
