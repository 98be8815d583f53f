// The plugin's one process-wide part: the file of this process's records in the run's folder
// (FABRICBENCH_SLOW_DIR, made by fabric-watchdog --slow) and the thread that writes to it. Every 100 ms it takes the
// finished collectives out of each communicator's ring and appends them; NCCL's calls never wait for it. A file
// past 16 MiB is rotated (<host>.<pid>.fbslow.old, replaced), so a process keeps at most two segments. A write that
// fails (a full or vanished folder) is said once on stderr and recording stops in this process; the job goes on.
#pragma once
#include <atomic>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "ring.hpp"

namespace fabricbench::profiler {

class Recorder {
 public:
  // The process's recorder, made at the first communicator; nullptr (and one line on stderr) when the folder is
  // not named, not a folder of ours, or not writable: init then fails and NCCL runs without the plugin.
  static Recorder* get(int api);
  // A ring for a new communicator: one closed at least kReuseAfter ago, or a new one. The recorder owns every ring
  // to the process's end (NCCL holds its address as the communicator's context).
  Ring* add(std::uint64_t comm, int nranks, int api);
  // The communicator ends: the ring is closed; the writer writes what it still holds, then keeps it for reuse.
  void remove(Ring* ring);
  static constexpr std::int64_t kReuseAfterNs = 60'000'000'000;
  bool on() const { return on_.load(std::memory_order_relaxed); }

 private:
  Recorder(int fd, std::string path, std::string folder, int api);
  void loop();
  void write_out(std::vector<job::slow::Record>& records);
  void fail(const char* what, int err);
  static void flush_at_exit();

  std::mutex mutex_;
  std::vector<std::unique_ptr<Ring>> rings_;                            // NCCL's contexts, alive
  std::vector<std::unique_ptr<Ring>> ending_;                           // finalized, to be written out by the writer
  std::vector<std::pair<std::int64_t, std::unique_ptr<Ring>>> closed_;  // written out (when), kept for reuse
  int fd_;
  std::string path_, folder_;
  int api_;
  std::uint64_t written_ = 0;
  std::atomic<bool> on_{true};
  std::atomic<bool> stop_{false}, finished_{false};
  pid_t owner_;
  std::thread thread_;
};

}  // namespace fabricbench::profiler
