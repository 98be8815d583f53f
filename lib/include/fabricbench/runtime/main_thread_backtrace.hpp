// The main thread's backtrace taken from inside the process (no debugger): a watchdog thread signals the main thread
// (SIGUSR2), whose handler records its frames; the failure report (failure_report.hpp) sends them to rank 0.
#pragma once
#include <chrono>
#include <string>
#include <vector>

namespace fabricbench::runtime {

// The main thread's backtrace, taken by signalling it (SIGUSR2) from another thread. Install once, on the main
// thread; capture() from any other thread.
class MainThreadBacktrace {
 public:
  static void install();
  // Frames (symbolised, demangled where possible), innermost first; empty if the main thread did not answer.
  static std::vector<std::string> capture(std::chrono::milliseconds wait = std::chrono::milliseconds(500));
};

}  // namespace fabricbench::runtime
