// What a sweep tested of what it was asked to test. A run that tested fewer hosts or pairs than asked is not a pass,
// whatever its verdicts say: no verdict about an untested host means nothing (a 2 s budget spent on setup once gave
// "no fault in the 0 of 28 pairs tested", exit 0).
#pragma once
#include <string>
#include <vector>

#include "fabricbench/sweep/pair_record.hpp"
#include "fabricbench/sweep/verdict.hpp"

namespace fabricbench::sweep {

struct Coverage {
  long long hosts_planned = 0, hosts_tested = 0;  // hosts: every host of the sweep; tested: in a measured record
  long long pairs_planned = 0, pairs_tested = 0;  // unordered host pairs the plan asked for, and measured of them
  // The fixed plans ask for each of their pairs; the adaptive plan asks for every host to be judged (not every pair).
  bool pairs_asked = true;
  long long hosts_judged = -1;      // the adaptive plan: hosts it judged (-1: a fixed plan)
  std::vector<int> untested_hosts;  // in no measured record
  std::string why;                  // what cut the run short ("--budget 2s", a hung host ...), for the text

  // From the measured records (a value that is not NaN) of a plan of `hosts` hosts asking for `planned` pairs
  // (`planned_pairs` empty: every pair counts, as for the adaptive plan).
  static Coverage of(const std::vector<PairRecord>& records, int hosts, const std::vector<HostPair>& planned_pairs,
                     bool pairs_asked);

  bool complete() const;
  // "complete", or "incomplete: 0 of 28 pairs and 0 of 8 hosts tested (--budget 2s)".
  std::string text() const;
  // Verdicts of kind "untested": one per host no test measured; where every host was, one for the pairs (or hosts
  // the adaptive plan did not judge). None when complete.
  std::vector<Verdict> verdicts() const;
};

}  // namespace fabricbench::sweep
