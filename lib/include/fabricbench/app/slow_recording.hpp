// The slow-rank contract, as a tool arms it: fabricbench's NCCL profiler plugin (NCCL_PROFILER_PLUGIN) and the folder
// its ranks write their records to (job::slow::kFolderVariable), in a job's environment. The plugin's side is
// plugin/recorder.cpp; the records' layout, job/slow_record.hpp. fabric-watchdog --slow arms its command's
// environment, fabric-coll --per-rank its own process's (its NCCL reads both at init).
#pragma once
#include <string>
#include <vector>

namespace fabricbench::app {

class SlowRecording {
 public:
  // The installed plugin, checked first: Error::usage "OPTION: NCCL_PROFILER_PLUGIN is already set (...): NCCL
  // loads one profiler plugin" + `advice`, or "OPTION: the profiler plugin PATH is missing ...".
  static SlowRecording check(const std::string& option, const std::string& advice = "");
  const std::string& plugin() const { return plugin_; }
  // The two variables as NAME=VALUE, for a command's environment.
  std::vector<std::string> environment(const std::string& folder) const;
  // Both set in this process's environment.
  void arm_this_process(const std::string& folder) const;

 private:
  explicit SlowRecording(std::string plugin) : plugin_(std::move(plugin)) {}
  std::string plugin_;
};

}  // namespace fabricbench::app
