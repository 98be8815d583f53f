// What fabric-sweep knows of its job once configured, as one value: the hosts (the placement's, or a --dry-run's
// planned ones), each rank's host, the fixed plan's schedule, the hosts a --resume goes on without and their pairs,
// and (rank 0, from the run's start) the book of which NIC each host-rail used. The pass loop, the round runner's
// setup and the rank-0 writer read it; nothing changes it after the run's start.
#pragma once
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "fabricbench/sweep/judge.hpp"
#include "fabricbench/sweep/pair_schedule.hpp"
#include "fabricbench/tools/sweep/nic_book.hpp"
#include "fabricbench/tools/sweep/sweep_options.hpp"

namespace fabricbench::tools::sweep {
// What it takes from lib/sweep/ (this namespace hides that one's name).
using fabricbench::sweep::Fabric;
using fabricbench::sweep::JudgedMetric;
using fabricbench::sweep::PairSchedule;
using fabricbench::sweep::RoundKind;

// Why a pair was not tested: the --budget ran out, or one of its hosts was left out of a --resume (given with
// --exclude, or hung in the earlier part).
enum class UntestedReason { budget, excluded, hung };
// Its word in /sweep/untested's reason column ("budget", "excluded", "hung").
std::string_view reason_name(UntestedReason why);

// A pair the run did not test, and why; round -1: a pair of an excluded host.
struct UntestedPair {
  int round;
  RoundKind kind;
  std::string host_a, host_b;
  UntestedReason reason;
};

// A host of the --resume'd file this run goes on without, and why (`excluded` or `hung`).
struct ExcludedHost {
  std::string host;
  UntestedReason why;
  std::string why_text() const;  // "--exclude", "hung in the earlier part"
};

struct SweepJob {
  std::vector<std::string> hosts;
  std::vector<int> host_of_rank;
  int ranks_per_host = 1;  // the most ranks any host has
  int local_rank = 0;
  std::optional<PairSchedule> schedule;
  // --resume: (rank 0) hosts of the file this run goes on without, with why ("--exclude", "hung in the earlier
  // part"), and their pairs the earlier part had not measured.
  std::vector<ExcludedHost> excluded;
  std::string excluded_text() const;  // "node3 (--exclude), node5 (hung in the earlier part)"
  std::vector<UntestedPair> excluded_pairs;
  NicBook nics;  // rank 0: the NIC of each host-rail, per family of traffic (gathered at the run's start)

  // What the judge knows of the hardware.
  Fabric fabric(const SweepOptions& opt) const;
  // Rank 0: the NICs metric `m`'s traffic went through (per host * rails + rail), and the NIC of host `host`'s rail
  // `rail` among them ("" where the book has none).
  const std::vector<std::string>& nics_of(const SweepOptions& opt, const SweepMetric& m) const;
  std::string nic_of(const SweepOptions& opt, const SweepMetric& m, int host, int rail) const;
  // The metrics asked for, as the judge reads them (with their NICs: after the book was gathered).
  std::vector<JudgedMetric> judged_metrics(const SweepOptions& opt) const;
};

}  // namespace fabricbench::tools::sweep
