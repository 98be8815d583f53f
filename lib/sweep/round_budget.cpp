#include "fabricbench/sweep/round_budget.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

namespace fabricbench::sweep {

double RoundBudget::round_estimate_s() const {
  if (rounds_s_.empty()) return first_s_;
  auto v = rounds_s_;
  const auto mid = v.size() / 2;
  std::nth_element(v.begin(), v.begin() + static_cast<std::ptrdiff_t>(mid), v.end());
  if (v.size() % 2) return v[mid];
  const double upper = v[mid];
  return (upper + *std::max_element(v.begin(), v.begin() + static_cast<std::ptrdiff_t>(mid))) / 2;
}

long long RoundBudget::rounds_that_fit() const {
  const double each = round_estimate_s();
  if (!limited()) return -1;
  if (!(each > 0)) return 0;
  return static_cast<long long>(std::floor(budget_s_ / each + 1e-9));
}

std::string human_duration(double seconds) {
  if (!(seconds >= 0) || !std::isfinite(seconds)) return "?";
  if (seconds < 60) return fmt::format("{:.3g} s", seconds);
  if (const auto whole = std::llround(seconds); whole < 3600)
    return fmt::format("{} min {:02} s", whole / 60, whole % 60);
  const auto minutes = std::llround(seconds / 60);
  return fmt::format("{} h {:02} min", minutes / 60, minutes % 60);
}

}  // namespace fabricbench::sweep
