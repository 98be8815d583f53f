#include "fabricbench/job/network_rule.hpp"

#include <algorithm>
#include <bitset>

namespace fabricbench::job {
namespace {

// A proxy operation's size class: powers of 4 (64-255 KiB, 256 KiB-1 MiB, ...). A 256 KiB operation takes longer per
// byte than a 16 MiB one on the same healthy link.
int size_class(std::uint64_t bytes) { return (63 - __builtin_clzll(bytes | 1)) / 2; }

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
                                              const NetworkRuleSettings& s) {
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
  std::map<int, std::vector<double>> per_byte;
  for (const auto& [who, c] : conns)
    for (const auto& [cls, part] : c.classes)
      if (part.ops >= s.min_ops) per_byte[cls].push_back(part.net_s / part.bytes);
  std::map<int, double> usual;  // a class only one connection has is compared with nothing
  for (const auto& [cls, v] : per_byte)
    if (v.size() >= 2 && lower_median(v) > 0) usual[cls] = lower_median(v);
  std::vector<RatedConnection> out;
  for (const auto& [who, c] : conns) {
    std::size_t ops = 0;
    double net_s = 0, expected_s = 0;
    for (const auto& [cls, part] : c.classes)
      if (const auto u = usual.find(cls); u != usual.end() && part.ops >= s.min_ops)
        ops += part.ops, net_s += part.net_s, expected_s += part.bytes * u->second;
    if (ops < s.min_ops || expected_s <= 0) continue;
    const double channels = static_cast<double>(std::max<std::size_t>(1, c.channels.count()));
    const double excess = (net_s - expected_s) / channels;
    out.push_back({who, net_s / expected_s, span_s > 0 ? std::clamp(excess / span_s, 0.0, 1.0) : 0});
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
