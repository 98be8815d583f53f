// What a fixed plan holds, counted instead of built: a --dry-run of 100,000 hosts answers from a few numbers, where
// building all-pairs of them would take 37 GiB on every rank. The same count of a built plan (a pairs file, rounds a
// topology added) comes from its rounds, so the dry run and the refusal of a plan too big state one figure.
#pragma once
#include <string>
#include <utility>
#include <vector>

#include "fabricbench/sweep/pair_schedule.hpp"

namespace fabricbench::sweep {

class PlanSize {
 public:
  // all-pairs, quick or shift of `hosts` hosts, by formula (pair_schedule.cpp builds the same rounds).
  static PlanSize of(Plan plan, int hosts);
  // The rounds of a built plan.
  static PlanSize of(const std::vector<Round>& rounds, int hosts, bool directed);
  // Every pair in a round of its own (--sequential): each round lists the other hosts as resting.
  PlanSize one_pair_per_round() const;

  long long rounds() const;
  long long pairs() const;
  long long fewest() const;  // pairs in a round
  long long most() const;
  // The pairs of the first `rounds` rounds (what a --budget that fits them covers).
  long long pairs_in_first(long long rounds) const;
  // Bytes of the plan as every rank holds it: its pairs, its resting hosts and its rounds.
  double bytes() const;

 private:
  std::vector<std::pair<long long, long long>> runs_;  // (rounds, pairs in each), in order
  int hosts_ = 0;
  bool directed_ = false;  // shift: every host in two pairs of each round, none resting
};

// Bytes in binary units, as the plan's memory is given: "1.00 GiB", "256 MiB", "12 KiB".
std::string binary_bytes(double bytes);

}  // namespace fabricbench::sweep
