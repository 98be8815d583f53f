#include "fabricbench/job/network_rule.hpp"

#include <algorithm>
#include <bitset>

namespace fabricbench::job {
namespace {

// The lower median: of two, the faster (a slow one is then compared with its healthy twin).
double lower_median(std::vector<double> v) {
  if (v.empty()) return 0;
  const auto mid = v.begin() + static_cast<std::ptrdiff_t>((v.size() - 1) / 2);
  std::nth_element(v.begin(), mid, v.end());
  return *mid;
}

// The most slowed connection beside the slow one at `end`: into it (`into`) or out of it, other than `skip`.
double beside(const std::vector<RatedConnection>& all, int end, bool into, std::pair<int, int> skip) {
  double worst = 0;
  for (const auto& c : all)
    if (c.who != skip && (into ? c.who.second : c.who.first) == end) worst = std::max(worst, c.ratio);
  return worst;
}

}  // namespace

std::vector<RatedConnection> rate_connections(const std::vector<const slow::ProxyRecord*>& sends, double span_s,
                                              const NetworkRuleSettings& s, const OwnUsual& own) {
  struct Part {
    std::size_t ops = 0;
    double bytes = 0, net_s = 0;
  };
  struct Conn {
    std::map<int, Part> classes;
    std::bitset<256> channels;
  };
  std::map<std::pair<int, int>, Conn> conns;
  for (const auto* p : sends) {
    auto& c = conns[{p->rank, p->peer}];
    auto& part = c.classes[size_class(p->bytes)];
    ++part.ops, part.bytes += static_cast<double>(p->bytes), part.net_s += static_cast<double>(p->net_ns) * 1e-9;
    c.channels.set(p->channel);
  }
  std::map<int, std::vector<double>> by_class;
  for (const auto& [who, c] : conns)
    for (const auto& [cls, part] : c.classes)
      if (part.ops >= s.min_ops) by_class[cls].push_back(part.net_s / part.bytes);
  std::map<int, double> usual;  // a class only one connection has is compared with nothing
  for (const auto& [cls, v] : by_class)
    if (v.size() >= 2 && lower_median(v) > 0) usual[cls] = lower_median(v);
  // Against the others (`cross`) and against itself before (`self`), over the classes each knows.
  struct Against {
    std::size_t ops = 0;
    double net_s = 0, expected_s = 0;
    void add(const Part& part, double usual_per_byte) {
      if (usual_per_byte > 0) ops += part.ops, net_s += part.net_s, expected_s += part.bytes * usual_per_byte;
    }
    double ratio(std::size_t min_ops) const { return ops >= min_ops && expected_s > 0 ? net_s / expected_s : 0; }
  };
  struct Rated {
    Against cross, self;
    std::map<int, double> per_byte;
  };
  std::map<std::pair<int, int>, Rated> rated;
  std::vector<double> selves;
  for (const auto& [who, c] : conns) {
    auto& r = rated[who];
    for (const auto& [cls, part] : c.classes) {
      if (part.ops < s.min_ops) continue;
      r.per_byte[cls] = part.net_s / part.bytes;
      if (const auto u = usual.find(cls); u != usual.end()) r.cross.add(part, u->second);
      if (const auto u = own.find({who, cls}); u != own.end()) r.self.add(part, u->second);
    }
    if (r.self.ratio(s.min_ops) > 0) selves.push_back(r.self.ratio(s.min_ops));
  }
  // Where most connections of the communicator slowed against their own usual (their lower median: a congested
  // fabric, or the job's own pace), a connection's past says nothing of it: the others alone judge.
  const bool own_says = selves.size() < 2 || lower_median(selves) < s.suspect_ratio;
  std::vector<RatedConnection> out;
  for (auto& [who, r] : rated) {
    const auto& c = conns.at(who);
    // Its own past counts where the others already find it suspect (or have nothing to compare it with): a fault
    // slows the connections around it against their own usual too, but not against each other.
    const double r_cross = r.cross.ratio(s.min_ops), r_self = r.self.ratio(s.min_ops);
    const bool own_counts = own_says && r_self > r_cross && (r_cross >= s.suspect_ratio || r_cross == 0);
    const auto& by = own_counts ? r.self : r.cross;
    if (by.ratio(s.min_ops) <= 0) continue;
    const double channels = static_cast<double>(std::max<std::size_t>(1, c.channels.count()));
    const double excess = (by.net_s - by.expected_s) / channels;
    out.push_back(
        {who, by.net_s / by.expected_s, span_s > 0 ? std::clamp(excess / span_s, 0.0, 1.0) : 0, std::move(r.per_byte)});
  }
  return out;
}

std::vector<NetworkVerdict> place_slow_connections(const std::vector<RatedConnection>& slow,
                                                   const std::vector<RatedConnection>& all,
                                                   const NetworkRuleSettings& s) {
  if (slow.empty()) return {};
  // One rank that every slow connection touches, when there are several.
  std::map<int, std::size_t> touches;
  for (const auto& x : slow) {
    ++touches[x.who.first];
    if (x.who.second != x.who.first) ++touches[x.who.second];
  }
  int common = -1;
  for (const auto& [rank, n] : touches)
    if (n == slow.size() && slow.size() >= 2) common = common < 0 ? rank : -2;  // two ranks in all: a pair
  const auto worst = [](NetworkVerdict& v) {
    for (const auto& c : v.connections) v.ratio = std::max(v.ratio, c.ratio), v.loss = std::max(v.loss, c.loss);
  };
  if (common >= 0) {
    NetworkVerdict v{NetworkVerdict::Kind::network, common, -1, Evidence::connections, slow};
    worst(v);
    return {v};
  }
  std::vector<NetworkVerdict> out;
  for (const auto& x : slow) {
    const auto [from, to] = x.who;
    NetworkVerdict v{NetworkVerdict::Kind::link, from, to, Evidence::link, {x}};
    worst(v);
    // The connections beside it: the receiver's own sends, the sender's incoming ones.
    const double receiver = beside(all, to, false, x.who), sender = beside(all, from, true, x.who);
    const auto add_beside = [&](int end, bool into) {
      for (const auto& c : all)
        if (c.who != x.who && (into ? c.who.second : c.who.first) == end && c.ratio >= s.beside_ratio)
          v.connections.push_back(c);
    };
    if (receiver >= s.beside_ratio && receiver >= s.lean * sender) {
      v.kind = NetworkVerdict::Kind::network, v.rank = to, v.peer = -1, v.evidence = Evidence::sends_into;
      add_beside(to, false);
    } else if (sender >= s.beside_ratio && sender >= s.lean * receiver) {
      v.kind = NetworkVerdict::Kind::network, v.rank = from, v.peer = -1, v.evidence = Evidence::sends_from;
      add_beside(from, true);
    }
    out.push_back(v);
  }
  return out;
}

}  // namespace fabricbench::job
