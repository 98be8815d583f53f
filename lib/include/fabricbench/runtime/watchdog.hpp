// The watchdog turns a hang or a termination signal into a readable result file and exit status 3.
// Its thread never calls MPI: on expiry (a deadline passed, or SIGTERM/SIGINT/SIGHUP/SIGUSR1 arrived) it removes the
// process's temporary folders (TempDir), runs the owner's callback (rank 0 marks the HDF5 file failed) and ends the
// process. A tool that can stop at a clean point (fabric-sweep --repeat: after the pass in flight) asks for
// stop_after_signal(): the first signal then only sets stop_requested(), and a second one ends the process as before.
#pragma once
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <functional>
#include <mutex>
#include <string>
#include <thread>

namespace fabricbench::runtime {

class Watchdog {
 public:
  // on_failure(reason) runs on the watchdog thread once, before the process exits with status 3. on_tick (if
  // given) runs on the watchdog thread every poll interval while nothing failed (the failure report's requests).
  explicit Watchdog(std::function<void(const std::string&)> on_failure, std::function<void()> on_tick = {});
  ~Watchdog();
  Watchdog(const Watchdog&) = delete;
  Watchdog& operator=(const Watchdog&) = delete;

  // Fail if disarm() is not called within `seconds` (<= 0: no deadline). `what` names the step for the report.
  void arm(double seconds, std::string what);
  void disarm();
  // From now on the first signal is a request to stop at the tool's next clean point, not a failure.
  void stop_after_signal();
  // A signal arrived while stop_after_signal() was in effect.
  bool stop_requested() const { return stop_requested_.load(); }

 private:
  void watch();

  std::function<void(const std::string&)> on_failure_;
  std::function<void()> on_tick_;
  std::mutex mutex_;
  std::condition_variable wake_;
  bool stop_ = false;
  bool armed_ = false;  // a step is in progress (named in a signal's report even without a deadline)
  std::chrono::steady_clock::time_point deadline_;
  double seconds_ = 0;
  std::string what_;
  bool stop_after_signal_ = false;
  std::atomic<bool> stop_requested_{false};
  std::thread thread_;
};

}  // namespace fabricbench::runtime
