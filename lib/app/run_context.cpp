#include "fabricbench/app/run_context.hpp"

#include <fmt/format.h>

#include <chrono>
#include <thread>

#include "fabricbench/results/printable.hpp"

namespace fabricbench::app {

void RunContext::measuring(std::string what, double timeout_s) const {
  report.set_step(what);
  watchdog.arm(timeout_s >= 0 ? timeout_s : options.timeout_s, std::move(what));
  const int step = measurements++;
  if (step == hooks.stall_at && world.rank() == hooks.stall_rank)
    while (true) std::this_thread::sleep_for(std::chrono::seconds(1));
  board.started(step);
}

void RunContext::measured() const {
  board.finished(measurements - 1);
  watchdog.disarm();
}

void RunContext::progress(const std::string& line) const {
  if (!is_root() || options.quiet) return;
  fmt::print(stderr, "[progress] {}\n", results::printable(line));
}

void RunContext::expect(results::Row& row, double measured_gbps, const facts::Reference& ref, std::uint64_t bytes,
                        const std::string& what) const {
  const auto warning = expected.stamp(row, measured_gbps, ref, bytes, what);
  if (warning.empty() || !is_root()) return;
  out->note(warning);  // the table shows it where it happened; with --quiet there is no table
  if (options.quiet) fmt::print(stderr, "{}: {}\n", program, results::printable(warning));
}

}  // namespace fabricbench::app
