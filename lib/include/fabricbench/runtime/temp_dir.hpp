// A private temporary folder (mkdtemp), removed with everything in it when its owner goes: where a tool asks NCCL to
// write its INFO log (fabric-doctor's probe, fabric-coll's NCCL path). The run's watchdog ends a hung or signalled
// process with _exit, where no destructor runs: it removes the folders still alive first (remove_all_alive), before
// its failure record, during which mpirun may kill a rank.
#pragma once
#include <string>

namespace fabricbench::runtime {

class TempDir {
 public:
  explicit TempDir(const std::string& prefix);  // Error::runtime when the folder cannot be made
  ~TempDir();
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  const std::string& path() const { return path_; }

  // Removes every TempDir of this process still alive (their owners then find them gone): for runtime::Watchdog,
  // just before its _exit.
  static void remove_all_alive();

 private:
  std::string path_;
};

}  // namespace fabricbench::runtime
