// fabric-watchdog's looks at NCCL's RAS service: two looks 2 s apart when the job went quiet (did any rank move?), one
// look per --watch period, and the node_exporter textfile (--prometheus) of each look. The hang report and the loop
// that watches the job are in watchdog_tool.cpp.
#pragma once
#include <sys/types.h>

#include <optional>
#include <string>
#include <vector>

#include "fabricbench/job/ras.hpp"
#include "fabricbench/tools/watchdog/watchdog_options.hpp"

namespace fabricbench::tools::watchdog {

// Two RAS looks 2 s apart; nothing when RAS cannot be asked (`why` says why).
struct Looks {
  job::RasReply last;
  std::optional<job::RasStatus> before, now;
  double between_s = 0;
  std::string why;
  bool progressing() const;  // the second look counted more operations than the first
};

Looks look(const RasSettings& o);
// `pids` with the processes RAS names (laggards, dead, missing) first, in the order named, then the others.
std::vector<pid_t> named_first(std::vector<pid_t> pids, const Looks& looks);
// The textfile of one look: what node_exporter shows between two looks. `before`: the previous look's status.
void write_metrics(const RasSettings& o, const std::optional<job::RasStatus>& now, const job::RasStatus* before,
                   const std::string& why);
// One look of --watch: the status, or nothing (`why` says why).
std::optional<job::RasStatus> watch_look(const RasSettings& o, std::string& why);

}  // namespace fabricbench::tools::watchdog
