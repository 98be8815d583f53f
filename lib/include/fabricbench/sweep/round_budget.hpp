// --budget: how many of a plan's rounds fit a time limit on the whole sweep. Before the first round the estimate
// is given (--pair-time-estimate, else the pair tests' own caps); once rounds ran, it is the median round measured
// (a round is its slowest pair test plus the splits and gathers around it; the next round runs the same tests, and
// one slow round, a hung pair's, should not end the sweep). Pure: rank 0 asks, and broadcasts the answer.
#pragma once
#include <string>
#include <vector>

namespace fabricbench::sweep {

class RoundBudget {
 public:
  RoundBudget() = default;  // no budget: every round fits
  RoundBudget(double budget_s, double first_estimate_s) : budget_s_(budget_s), first_s_(first_estimate_s) {}
  bool limited() const { return budget_s_ > 0; }
  double budget_s() const { return budget_s_; }
  double round_estimate_s() const;
  // Whether one more round fits once `elapsed_s` of the budget are spent.
  bool fits(double elapsed_s) const { return !limited() || elapsed_s + round_estimate_s() <= budget_s_; }
  // How many rounds of the estimate fit a fresh budget (the dry run's answer).
  long long rounds_that_fit() const;
  void measured(double round_s) { rounds_s_.push_back(round_s); }

 private:
  double budget_s_ = 0, first_s_ = 0;
  std::vector<double> rounds_s_;
};

// "1 h 02 min", "4 min 10 s", "12.5 s": a duration as the plan and the budget's notes print it.
std::string human_duration(double seconds);

}  // namespace fabricbench::sweep
