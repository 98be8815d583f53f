// The watchdog turns a hang or a termination signal into a readable result file and exit status 3.
// Its thread never calls MPI: on expiry (a deadline passed, or SIGTERM/SIGINT/SIGHUP arrived) it runs the
// owner's callback (rank 0 marks the HDF5 file failed) and ends the process.
#pragma once
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
  std::thread thread_;
};

}  // namespace fabricbench::runtime
