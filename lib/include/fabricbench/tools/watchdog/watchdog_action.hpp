// An action of the watchdog (exec:PATH, scancel): its own command (argv, no shell: a path with a quote or a `;` is
// passed as it is), its output passed through, bounded by --action-timeout and then ended (SIGTERM, SIGKILL 5 s later)
// with whatever it started, or at once when `stop` is set. A failure is a line on stderr, never an exception.
#pragma once
#include <csignal>
#include <string>
#include <vector>

namespace fabricbench::tools::watchdog {

void run_action(const std::vector<std::string>& argv, const std::vector<std::string>& env, double timeout_s,
                const volatile std::sig_atomic_t& stop);

}  // namespace fabricbench::tools::watchdog
