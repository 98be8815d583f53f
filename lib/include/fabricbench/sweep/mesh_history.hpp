// A continuous mesh (fabric-sweep --repeat N --every D): the same sweep pass after pass, each pass judged on its own
// records. MeshHistory is the pure part: given each pass's judgement it says what changed against the pass before,
// a verdict that appeared ("node2: p2p_latency to every peer 21.3 -> 2104 us from pass 4, 14:02:30Z") or one that went
// ("... back to 21.5 us from pass 9"). No MPI, no tables: the tool writes what it returns, the unit tests call it
// alike.
#pragma once
#include <cmath>
#include <string>
#include <vector>

#include "fabricbench/sweep/judge.hpp"

namespace fabricbench::sweep {

struct MeshChange {
  int pass = 0;         // the pass where it changed (from 1)
  std::string started;  // that pass's start, UTC ("2026-11-24T14:02:30Z")
  Verdict verdict;      // the verdict that appeared, or (recovered) the one that went
  bool recovered = false;
  double before = NAN, after = NAN;  // the subject's figure in the pass before and in this one (NaN: none)
  std::string unit;
  std::string text;  // one line for a person
};

class MeshHistory {
 public:
  MeshHistory(std::vector<JudgedMetric> metrics, Fabric fabric)
      : metrics_(std::move(metrics)), fabric_(std::move(fabric)) {}
  // Pass `pass` was judged: its verdicts against the previous pass's (every verdict of the first pass is new).
  std::vector<MeshChange> add(int pass, const std::string& started, const Judgement& judgement);

  // The figure a verdict is about in `judgement`: a node's median pair (the median over its rails), a NIC's (its
  // rail), a link's or pair's worse direction; NaN for the other kinds or where not measured.
  double figure(const Verdict& verdict, const Judgement& judgement) const;

 private:
  std::vector<JudgedMetric> metrics_;
  Fabric fabric_;
  bool first_ = true;
  std::vector<Verdict> last_;  // the previous pass's verdicts
  Judgement last_judgement_;
};

}  // namespace fabricbench::sweep
