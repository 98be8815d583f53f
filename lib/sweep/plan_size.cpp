// A fixed plan counted by formula or from its rounds (plan_size.hpp).
#include "fabricbench/sweep/plan_size.hpp"

#include <fmt/format.h>

#include <algorithm>

#include "fabricbench/error.hpp"

namespace fabricbench::sweep {

PlanSize PlanSize::of(Plan plan, int hosts) {
  PlanSize s;
  s.hosts_ = hosts;
  const long long n = hosts;
  if (n < 2) return s;
  switch (plan) {
    case Plan::all_pairs:  // the circle method: N-1 rounds of N/2 (even N), N rounds of (N-1)/2 (odd N)
      s.runs_.push_back(n % 2 == 0 ? std::pair{n - 1, n / 2} : std::pair{n, (n - 1) / 2});
      return s;
    case Plan::quick:  // one round of N/2; odd N: the host left out with host 0 in a second
      s.runs_.push_back({1, n / 2});
      if (n % 2 == 1) s.runs_.push_back({1, 1});
      return s;
    case Plan::shift:  // N-1 steps of N directed pairs
      s.runs_.push_back({n - 1, n});
      s.directed_ = true;
      return s;
    case Plan::adaptive:
    case Plan::pairs_file:
      break;
  }
  throw Error::usage(fmt::format("plan {}: not counted (all-pairs, quick or shift)", to_string(plan)));
}

PlanSize PlanSize::of(const std::vector<Round>& rounds, int hosts, bool directed) {
  PlanSize s;
  s.hosts_ = hosts, s.directed_ = directed;
  for (const auto& r : rounds) {
    const auto pairs = static_cast<long long>(r.pairs.size());
    if (!s.runs_.empty() && s.runs_.back().second == pairs)
      ++s.runs_.back().first;
    else
      s.runs_.push_back({1, pairs});
  }
  return s;
}

PlanSize PlanSize::one_pair_per_round() const {
  PlanSize s;
  s.hosts_ = hosts_, s.directed_ = false;  // one pair: the two hosts busy, every other one resting
  if (pairs() > 0) s.runs_.push_back({pairs(), 1});
  return s;
}

long long PlanSize::rounds() const {
  long long out = 0;
  for (const auto& [count, each] : runs_) out += count;
  return out;
}

long long PlanSize::pairs() const { return pairs_in_first(rounds()); }

long long PlanSize::fewest() const {
  long long out = runs_.empty() ? 0 : runs_.front().second;
  for (const auto& [count, each] : runs_) out = std::min(out, each);
  return out;
}

long long PlanSize::most() const {
  long long out = 0;
  for (const auto& [count, each] : runs_) out = std::max(out, each);
  return out;
}

long long PlanSize::pairs_in_first(long long rounds) const {
  long long out = 0;
  for (const auto& [count, each] : runs_) {
    const long long take = std::min(count, std::max(0LL, rounds));
    out += take * each;
    rounds -= take;
  }
  return out;
}

double PlanSize::bytes() const {
  // A round is its two vectors; each host in no pair of a round is one int in its resting list (a directed plan's
  // hosts are all busy). The schedule reserves its vectors to fit (pair_schedule.cpp), so there is no spare capacity
  // to count; the allocator's few bytes per vector are left out.
  const double n = hosts_, r = static_cast<double>(rounds()), p = static_cast<double>(pairs());
  const double resting = directed_ ? 0 : std::max(0.0, r * n - 2 * p);
  return p * sizeof(HostPair) + resting * sizeof(int) + r * sizeof(Round);
}

std::string binary_bytes(double bytes) {
  if (bytes >= 1024.0 * 1024 * 1024) return fmt::format("{:.2f} GiB", bytes / (1024.0 * 1024 * 1024));
  if (bytes >= 1024.0 * 1024) return fmt::format("{:.0f} MiB", bytes / (1024.0 * 1024));
  return fmt::format("{:.0f} KiB", std::max(1.0, bytes / 1024));
}

}  // namespace fabricbench::sweep
