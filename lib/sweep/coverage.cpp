#include "fabricbench/sweep/coverage.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <set>
#include <utility>

namespace fabricbench::sweep {

Coverage Coverage::of(const std::vector<PairRecord>& records, int hosts, const std::vector<HostPair>& planned_pairs,
                      bool pairs_asked) {
  Coverage c;
  c.hosts_planned = hosts;
  c.pairs_asked = pairs_asked;
  std::set<std::pair<int, int>> planned;
  for (const auto& p : planned_pairs) planned.insert(std::minmax(p.a, p.b));
  const long long n = hosts;
  c.pairs_planned = planned_pairs.empty() ? n * (n - 1) / 2 : static_cast<long long>(planned.size());
  std::vector<char> measured(static_cast<std::size_t>(std::max(hosts, 0)), 0);
  std::set<std::pair<int, int>> tested;
  for (const auto& r : records) {
    if (std::isnan(r.value) || r.a < 0 || r.b < 0 || r.a >= hosts || r.b >= hosts) continue;
    measured[static_cast<std::size_t>(r.a)] = measured[static_cast<std::size_t>(r.b)] = 1;
    const auto pair = std::minmax(r.a, r.b);
    if (planned_pairs.empty() || planned.count(pair)) tested.insert(pair);
  }
  c.pairs_tested = static_cast<long long>(tested.size());
  for (int h = 0; h < hosts; ++h)
    if (measured[static_cast<std::size_t>(h)])
      ++c.hosts_tested;
    else
      c.untested_hosts.push_back(h);
  return c;
}

bool Coverage::complete() const {
  if (hosts_tested < hosts_planned) return false;
  if (hosts_judged >= 0 && hosts_judged < hosts_planned) return false;
  return !pairs_asked || pairs_tested >= pairs_planned;
}

std::string Coverage::text() const {
  if (complete()) return "complete";
  std::string out = fmt::format("incomplete: {} of {} pairs and {} of {} hosts tested", pairs_tested, pairs_planned,
                                hosts_tested, hosts_planned);
  if (hosts_judged >= 0) out += fmt::format(", {} judged", hosts_judged);
  if (!why.empty()) out += fmt::format(" ({})", why);
  return out;
}

std::vector<Verdict> Coverage::verdicts() const {
  std::vector<Verdict> out;
  if (complete()) return out;
  const std::string cut = why.empty() ? "" : fmt::format(" ({})", why);
  for (int h : untested_hosts)
    out.emplace_back("", VerdictKind::untested, h, -1, "no pair test measured this host" + cut);
  if (!untested_hosts.empty()) return out;
  if (hosts_judged >= 0 && hosts_judged < hosts_planned)
    out.emplace_back("", VerdictKind::untested, -1, -1,
                     fmt::format("the adaptive plan judged {} of {} hosts{} (a host is judged once its slow tests are "
                                 "confirmed or cleared against clean peers; where every host had a slow test none was "
                                 "left clean: run again with more iterations (-n) or in a quieter window)",
                                 hosts_judged, hosts_planned, cut));
  else
    out.emplace_back("", VerdictKind::untested, -1, -1,
                     fmt::format("{} of {} planned pairs not tested{}; /sweep/untested lists them",
                                 pairs_planned - pairs_tested, pairs_planned, cut));
  return out;
}

}  // namespace fabricbench::sweep
