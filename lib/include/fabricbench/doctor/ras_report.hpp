// fabric-doctor --nccl-ras [HOST[:PORT]]: a running NCCL job asked through NCCL's RAS service (lib/job/ras.hpp) on
// rank 0 before any output exists (nothing there, not RAS, no answer in time: one usage line, exit 2, no file); a
// rank behind its peers is asked about once more after a short wait, so that only a rank that did not move is named.
// Then the findings (dead processes, laggard ranks, missing ranks, errors, aborts; the answer first) and the tables
// of communicators, ranks and the reply itself through the harness's outputs (terminal, HDF5 /doctor/..., --json).
#pragma once
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "fabricbench/doctor/findings.hpp"
#include "fabricbench/error.hpp"
#include "fabricbench/job/ras.hpp"
#include "fabricbench/job/stacks.hpp"
#include "fabricbench/results/result_set.hpp"

namespace fabricbench::doctor {

// What helps next, beside the findings: stacks of the named processes that run on this host (--stacks), and the
// leaf switch and NIC of a named host (--topology FILE[,FILE...] as the sweep reads it, --rail-map FILE; the GPU's
// rail is its CUDA device modulo the rails, as fabric-rail-exec binds local rank g to rail g).
struct RasExtras {
  bool stacks = false;
  std::vector<std::string> topology;
  std::string rail_map;
};

class NcclRasMode {
 public:
  // `timeout_s` bounds each look (connection, NCCL's collection, reply); `second_look_s` the wait before the second.
  NcclRasMode(const job::RasAddress& address, double timeout_s, double second_look_s, const RasExtras& extras = {});
  // Looks already taken (the watchdog's): `last` and, if taken, the one `seconds_between` before it.
  NcclRasMode(const job::RasAddress& address, job::RasReply last, std::optional<job::RasStatus> status,
              std::optional<job::RasStatus> before, double seconds_between);
  // The answer line's text: the first failure, or what a healthy job showed.
  std::string answer() const;
  // The doctor's findings of the last look.
  std::vector<Finding> findings() const;
  // Rank 0: every table through `out` (findings into `findings`, the tool's table); the exit status of the findings.
  ExitStatus write(results::ResultSet& out, const results::TableSpec& findings, bool show_ok, bool strict) const;

 private:
  job::RasAddress address_;
  job::RasReply reply_;
  std::optional<job::RasStatus> status_, before_;  // JSON replies: the last look and the one before it
  double seconds_between_ = 0;
  std::map<std::string, std::string> places_;  // host (as RAS names it) -> "node7: leaf leaf3 under spine1"
  std::vector<std::string> nics_;              // rail -> NIC (--rail-map)
  std::vector<job::Stack> stacks_;             // of the named processes on this host (--stacks)
  std::vector<std::string> elsewhere_;         // the named processes --stacks could not reach (another host)
  void take_extras(const RasExtras& extras);
};

}  // namespace fabricbench::doctor
