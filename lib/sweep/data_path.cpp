#include "fabricbench/sweep/data_path.hpp"

#include <fmt/format.h>

#include <cmath>
#include <map>
#include <optional>
#include <set>

namespace fabricbench::sweep {

std::vector<Verdict> check_data_path(const std::vector<NicTraffic>& traffic, const Fabric& fabric,
                                     const std::vector<std::string>& nics) {
  const int rails = std::max(1, fabric.rails);
  const auto nic = [&](int h, int r) {
    const auto i = static_cast<std::size_t>(h * rails + r);
    return i < nics.size() ? nics[i] : std::string();
  };
  std::vector<Verdict> out;
  // Two rails of one host on the same NIC.
  for (std::size_t h = 0; h < fabric.hosts.size(); ++h)
    for (int r = 0; r < rails; ++r)
      for (int q = r + 1; q < rails; ++q)
        if (!nic(static_cast<int>(h), r).empty() && nic(static_cast<int>(h), r) == nic(static_cast<int>(h), q))
          out.push_back(
              {"data_path", VerdictKind::path, static_cast<int>(h), -1,
               fmt::format("{}: rails {} and {} both use {}", fabric.hosts[h], r, q, nic(static_cast<int>(h), r)),
               fabric.rail_column(q), nic(static_cast<int>(h), q)});
  // Per round and host: each rail's bytes against its payload.
  std::map<std::pair<int, int>, std::map<int, NicTraffic>> by_host;
  for (const auto& t : traffic) {
    auto& slot = by_host[{t.round, t.host}][t.rail];
    slot.round = t.round, slot.host = t.host, slot.rail = t.rail;
    slot.bytes = t.bytes, slot.payload += t.payload;
  }
  // A rail strays in a round when its NIC carried less than half of what its tests moved. Its peers' traffic to a
  // host that strays goes astray too (in that round only), so a host-rail is named when it strayed in more than half
  // of its rounds, with the first such round's figures.
  struct Tally {
    int rounds = 0, strayed = 0;
    std::optional<NicTraffic> first;
    std::string by;
  };
  std::map<std::pair<int, int>, Tally> tally;  // host, rail
  for (const auto& [where, rails_seen] : by_host) {
    const int host = where.second;
    for (const auto& [r, t] : rails_seen) {
      if (!(t.payload > 0) || std::isnan(t.bytes)) continue;
      auto& y = tally[{host, r}];
      ++y.rounds;
      if (t.bytes >= 0.5 * t.payload) continue;
      ++y.strayed;
      if (y.first) continue;
      y.first = t;
      // Where did it go: the NIC of another rail with that much more than its own tests moved.
      for (const auto& [q, u] : rails_seen)
        if (q != r && !std::isnan(u.bytes) && nic(host, q) != nic(host, r) && u.bytes - u.payload >= 0.5 * t.payload)
          y.by = nic(host, q).empty() ? fmt::format("the NIC of rail {}", q) : nic(host, q);
    }
  }
  for (const auto& [key, y] : tally) {
    if (2 * y.strayed <= y.rounds) continue;
    const auto [host, r] = key;
    const auto& t = *y.first;
    const auto own = nic(host, r).empty() ? fmt::format("the NIC of rail {}", r) : nic(host, r);
    const auto figures =
        fmt::format("in {} of its {} rounds; round {}: {:.3g} MB counted of the {:.3g} MB its tests moved", y.strayed,
                    y.rounds, t.round, t.bytes / 1e6, t.payload / 1e6);
    out.push_back({"data_path", VerdictKind::path, host, -1,
                   y.by.empty() ? fmt::format("{}: rail {} traffic did not go by {}, nor by another rail's NIC ({})",
                                              fabric.hosts[host], r, own, figures)
                                : fmt::format("{}: rail {} traffic left by {}, not {} ({})", fabric.hosts[host], r,
                                              y.by, own, figures),
                   fabric.rail_column(r), nic(host, r)});
  }
  return out;
}

}  // namespace fabricbench::sweep
