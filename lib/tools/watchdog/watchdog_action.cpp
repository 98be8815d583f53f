#include "fabricbench/tools/watchdog/watchdog_action.hpp"

#include <fmt/format.h>

#include <chrono>
#include <cstdio>

#include "fabricbench/error.hpp"
#include "fabricbench/job/child_process.hpp"
#include "fabricbench/results/printable.hpp"

namespace fabricbench::tools::watchdog {

void run_action(const std::vector<std::string>& argv, const std::vector<std::string>& env, double timeout_s,
                const volatile std::sig_atomic_t& stop) {
  using Clock = std::chrono::steady_clock;
  try {
    job::ChildProcess action(argv, env);
    const auto until =
        Clock::now() + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(timeout_s));
    while (action.pump(0.2))
      if (Clock::now() >= until || stop) {
        std::fprintf(stderr, "fabric-watchdog: action %s %s: stopped\n", results::printable(argv[0]).c_str(),
                     stop ? "interrupted" : fmt::format("still running after {:g} s", timeout_s).c_str());
        action.stop(5);
        return;
      }
    if (action.status() != 0)
      std::fprintf(stderr, "fabric-watchdog: action %s exited with status %d\n", results::printable(argv[0]).c_str(),
                   action.status());
  } catch (const Error& e) {
    std::fprintf(stderr, "fabric-watchdog: action %s: %s\n", results::printable(argv[0]).c_str(),
                 Error::one_line(e.what()).c_str());
  }
}

}  // namespace fabricbench::tools::watchdog
