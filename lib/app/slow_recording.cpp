#include "fabricbench/app/slow_recording.hpp"

#include <fmt/format.h>
#include <unistd.h>

#include <cstdlib>

#include "fabricbench/app/shipped_files.hpp"
#include "fabricbench/error.hpp"
#include "fabricbench/job/slow_record.hpp"

namespace fabricbench::app {

namespace slow = job::slow;

SlowRecording SlowRecording::check(const std::string& option, const std::string& advice) {
  if (const char* set = std::getenv(slow::kPluginVariable); set && *set)
    throw Error::usage(fmt::format("{}: {} is already set ({}): NCCL loads one profiler plugin{}", option,
                                   slow::kPluginVariable, set, advice));
  auto plugin = profiler_plugin();
  if (::access(plugin.c_str(), R_OK) != 0)
    throw Error::usage(
        fmt::format("{}: the profiler plugin {} is missing (it is installed with the tools)", option, plugin));
  return SlowRecording(std::move(plugin));
}

std::vector<std::string> SlowRecording::environment(const std::string& folder) const {
  return {fmt::format("{}={}", slow::kPluginVariable, plugin_), fmt::format("{}={}", slow::kFolderVariable, folder)};
}

void SlowRecording::arm_this_process(const std::string& folder) const {
  ::setenv(slow::kPluginVariable, plugin_.c_str(), 1);
  ::setenv(slow::kFolderVariable, folder.c_str(), 1);
}

}  // namespace fabricbench::app
