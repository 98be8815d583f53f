// From one metric's pair values to suspects and their explanation (sweep/verdict.hpp): switch, uplink, node, NIC,
// link, in that order, each cause taking the suspect pairs it explains.
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <map>
#include <optional>
#include <set>

#include "fabricbench/sweep/verdict.hpp"
#include "fabricbench/timing/sample_stats.hpp"

namespace fabricbench::sweep {
namespace {

using PairKey = std::tuple<int, int, int>;  // a < b, rail

// The counts a cause is judged on, per host and rail.
struct Tally {
  int rails;
  std::vector<int> tested, bad;  // host * rails + rail
  int at(int h, int r) const { return h * rails + r; }
};

// One metric's assessment, phase by phase: each phase reads what the ones before left in `out`, `explained` (pairs
// a wider cause took) and `blamed` (host-rails a node or NIC verdict named).
class Assessor {
 public:
  Assessor(const std::string& metric, const MetricRule& rule, double bad_fraction, const Fabric& fabric,
           const std::vector<PairValue>& values, const std::vector<std::string>& nics)
      : metric_(metric),
        rule_(rule),
        f_(bad_fraction),
        fabric_(fabric),
        values_(values),
        nics_(nics),
        n_(static_cast<int>(fabric.hosts.size())),
        rails_(std::max(1, fabric.rails)) {}

  Assessment run() {
    best_of_tests();
    out_.suspect.assign(values_.size(), false);
    out_.slow_test.assign(values_.size(), false);
    if (out_.best.empty()) return std::move(out_);
    reference_and_suspects();
    if (fabric_.topology)
      for (int r = 0; r < rails_; ++r) leaves_of_rail(r);
    nodes_and_nics();
    intermittent_nodes();
    links();
    return std::move(out_);
  }

 private:
  void best_of_tests();
  void reference_and_suspects();
  Tally tally() const;
  bool bad_on(const Tally& t, int h, int r) const {
    const int i = t.at(h, r);
    return t.tested[i] >= 2 && t.bad[i] > 0 && t.bad[i] >= f_ * t.tested[i];
  }
  struct LeafPairs {
    std::vector<double> inside, crossing;
    std::vector<std::size_t> crossing_keys;  // indices into best
    std::int64_t inside_suspect = 0, crossing_suspect = 0;
  };
  std::map<int, LeafPairs> sort_into_leaves(int r) const;
  void leaves_of_rail(int r);
  void name_uplinks(int r, const std::vector<int>& uplinks, const std::vector<std::size_t>& uplink_pairs);
  void nodes_and_nics();
  void intermittent_nodes();
  void links();
  std::string nic(int h, int r) const {
    const auto i = static_cast<std::size_t>(h * rails_ + r);
    return i < nics_.size() ? nics_[i] : std::string();
  }

  const std::string& metric_;
  const MetricRule& rule_;
  const double f_;
  const Fabric& fabric_;
  const std::vector<PairValue>& values_;
  const std::vector<std::string>& nics_;
  const int n_, rails_;
  Assessment out_;
  std::vector<std::int64_t> at_;                   // per value: the index of its pair in out_.best (-1: left out)
  std::vector<char> explained_;                    // per pair in out_.best: a wider cause took it
  std::vector<std::vector<std::size_t>> by_rail_;  // with a topology: indices into out_.best, per rail
  std::optional<Tally> before_leaves_;             // the counts before any leaf took its pairs
  std::set<std::pair<int, int>> blamed_;           // host, rail
  std::optional<Tally> left_;                      // the counts the leaves left, for nodes, NICs and links
  std::string against_;                            // "median node 1234", what a reason measures against
};

// One sort groups the tests of each pair and rail (a map of pairs was most of the judge's time at 4096 hosts); the
// best of each pair's tests stands.
void Assessor::best_of_tests() {
  auto& best = out_.best;
  at_.assign(values_.size(), -1);
  std::vector<std::pair<PairKey, std::size_t>> tests;
  for (std::size_t i = 0; i < values_.size(); ++i) {
    const auto& v = values_[i];
    // A value of a host or rail this fabric does not have (a caller's mistake) is left out, not read out of bounds.
    if (std::isnan(v.value) || v.a < 0 || v.a >= n_ || v.b < 0 || v.b >= n_ || v.rail < 0 || v.rail >= rails_) continue;
    const auto [lo, hi] = std::minmax(v.a, v.b);
    tests.push_back({PairKey{lo, hi, v.rail}, i});
  }
  std::sort(tests.begin(), tests.end());
  for (std::size_t t = 0; t < tests.size(); ++t) {
    const auto& [key, i] = tests[t];
    const double v = values_[i].value;
    if (t == 0 || key != tests[t - 1].first)
      best.push_back({std::get<0>(key), std::get<1>(key), std::get<2>(key), v});
    else
      best.back().value = rule_.higher_is_better ? std::max(best.back().value, v) : std::min(best.back().value, v);
    at_[i] = static_cast<std::int64_t>(best.size()) - 1;
  }
}

// Higher is better: the reference is the median over host-rails of each one's median pair. The median pair itself
// is not robust: a bad node is in half the pairs of a 4-node sweep, and re-tests add more of its pairs (seen on the
// emulated cluster: 3 of 5 pairs slow, the median pair slow, nothing flagged). One bad node (or NIC) cannot move
// the median of medians. Lower is better: the lower median over host-rails of each one's best pair. The single best
// pair was the reference before: on an oversubscribed machine one unusually fast pair put every other pair beyond
// 3x it, and 7-8 of 8 hosts were named bad nodes. A host-rail's best pair is its floor; one fast pair moves two of
// them, one slow host only its own, and the lower median holds while at most half the host-rails are slow.
void Assessor::reference_and_suspects() {
  auto& best = out_.best;
  std::vector<double> medians, floors;
  std::vector<std::vector<double>> per_host_rail(static_cast<std::size_t>(n_) * rails_);  // one pass: O(pairs)
  for (const auto& p : best) {
    per_host_rail[static_cast<std::size_t>(p.a * rails_ + p.rail)].push_back(p.value);
    per_host_rail[static_cast<std::size_t>(p.b * rails_ + p.rail)].push_back(p.value);
  }
  for (auto& mine : per_host_rail) {
    if (mine.empty()) continue;
    floors.push_back(*std::min_element(mine.begin(), mine.end()));
    medians.push_back(timing::median_of(std::move(mine)));
  }
  std::sort(floors.begin(), floors.end());
  out_.reference = rule_.higher_is_better ? timing::median_of(medians) : floors[(floors.size() - 1) / 2];
  const auto is_suspect = [&](double v) { return rule_.beyond(v, out_.reference); };
  explained_.assign(best.size(), 0);
  for (auto& p : best)
    if ((p.suspect = is_suspect(p.value))) out_.suspects.emplace_back(p.a, p.b, p.rail);
  for (std::size_t i = 0; i < values_.size(); ++i) {
    out_.suspect[i] = at_[i] >= 0 && best[static_cast<std::size_t>(at_[i])].suspect;
    out_.slow_test[i] = at_[i] >= 0 && is_suspect(values_[i].value);
  }
  const char* unit_word = rule_.higher_is_better
                              ? (rails_ > 1 ? "median host-rail" : "median node")
                              : (rails_ > 1 ? "median host-rail's best pair" : "median node's best pair");
  against_ = fmt::format("{} {:.4g}", unit_word, out_.reference);
  if (fabric_.topology) {
    before_leaves_ = tally();
    by_rail_.assign(static_cast<std::size_t>(rails_), {});
    for (std::size_t j = 0; j < best.size(); ++j) by_rail_[static_cast<std::size_t>(best[j].rail)].push_back(j);
  }
}

// Tested and suspect pairs per host-rail, counting only pairs no wider cause explained: a pair a leaf's uplink
// explains says nothing of its hosts, either way (counted as tested, the adaptive plan's few pairs of a bad node
// that met the leaf's hosts left it below bad_node_fraction on that rail: a NIC on every other rail, not a node).
Tally Assessor::tally() const {
  const auto& best = out_.best;
  Tally t{rails_, std::vector<int>(static_cast<std::size_t>(n_ * rails_), 0),
          std::vector<int>(static_cast<std::size_t>(n_ * rails_), 0)};
  for (std::size_t j = 0; j < best.size(); ++j) {
    if (explained_[j]) continue;
    for (int h : {best[j].a, best[j].b}) {
      ++t.tested[t.at(h, best[j].rail)];
      if (best[j].suspect) ++t.bad[t.at(h, best[j].rail)];
    }
  }
  return t;
}

// One pass over a rail's pairs sorts each into its leaves (inside one, or crossing two): O(pairs), not
// O(leaves x pairs) (4096 hosts in leaves of 32 made the latter the judge's whole cost).
std::map<int, Assessor::LeafPairs> Assessor::sort_into_leaves(int r) const {
  const auto* topo = fabric_.topology;
  std::map<int, LeafPairs> sorted;  // by leaf
  for (const std::size_t j : by_rail_[static_cast<std::size_t>(r)]) {
    const auto& p = out_.best[j];
    const int la = topo->leaf_of(p.a, r), lb = topo->leaf_of(p.b, r);
    if (la == lb) {
      if (la < 0) continue;
      auto& leaf = sorted[la];
      leaf.inside.push_back(p.value);
      leaf.inside_suspect += p.suspect;
      continue;
    }
    for (int l : {la, lb}) {
      if (l < 0) continue;
      auto& leaf = sorted[l];
      leaf.crossing.push_back(p.value);
      leaf.crossing_suspect += p.suspect;
      if (p.suspect) leaf.crossing_keys.push_back(j);
    }
  }
  return sorted;
}

// With a topology, per rail: a leaf switch (every host under it slow on this rail, pairs inside it too, the same
// hosts fine on their other rails), then leaf uplinks (the pairs crossing it slow, those inside it fine).
void Assessor::leaves_of_rail(int r) {
  const auto* topo = fabric_.topology;
  const auto& before = *before_leaves_;
  auto sorted = sort_into_leaves(r);
  std::vector<int> uplinks;
  std::vector<std::size_t> uplink_pairs;
  for (int leaf : topo->leaves(r)) {
    const auto& sw = topo->switches()[static_cast<std::size_t>(leaf)];
    const auto under = [&](int h) { return topo->leaf_of(h, r) == leaf; };
    LeafSummary s{leaf, r};
    s.hosts = static_cast<std::int64_t>(sw.hosts.size());
    auto& p = sorted[leaf];
    s.inside_pairs = static_cast<std::int64_t>(p.inside.size()),
    s.crossing_pairs = static_cast<std::int64_t>(p.crossing.size());
    s.inside_suspect = p.inside_suspect, s.crossing_suspect = p.crossing_suspect;
    s.inside_median = timing::median_of(std::move(p.inside)),
    s.crossing_median = timing::median_of(std::move(p.crossing));
    out_.leaves.push_back(s);
    // Its hosts fine on their other rails (a host slow everywhere is a node, whatever its leaf).
    bool fine_elsewhere = true;
    for (int h : sw.hosts)
      for (int other = 0; other < rails_; ++other)
        if (other != r && bad_on(before, h, other)) fine_elsewhere = false;
    if (!fine_elsewhere) continue;
    bool all_hosts_bad = sw.hosts.size() >= 2;
    for (int h : sw.hosts) all_hosts_bad = all_hosts_bad && bad_on(before, h, r);
    if (all_hosts_bad && s.inside_pairs > 0 && s.inside_suspect >= f_ * s.inside_pairs) {
      out_.verdicts.push_back({metric_, VerdictKind::leaf_switch, -1, -1,
                               fmt::format("leaf {} on rail {}: all {} hosts under it slow on rail {} ({} of {} pairs "
                                           "inside it and {} of {} crossing it suspect; {}); the same hosts fine on "
                                           "their other rails",
                                           sw.name, r, s.hosts, r, s.inside_suspect, s.inside_pairs, s.crossing_suspect,
                                           s.crossing_pairs, against_),
                               fabric_.rail_column(r), "", sw.name});
      for (const std::size_t j : by_rail_[static_cast<std::size_t>(r)])
        if (under(out_.best[j].a) || under(out_.best[j].b)) explained_[j] = 1;
      continue;
    }
    if (s.crossing_pairs > 0 && s.crossing_suspect >= f_ * s.crossing_pairs && s.inside_pairs > 0 &&
        s.inside_suspect <= (1 - f_) * s.inside_pairs) {
      uplinks.push_back(leaf);
      uplink_pairs.insert(uplink_pairs.end(), p.crossing_keys.begin(), p.crossing_keys.end());
    }
  }
  if (!uplinks.empty()) name_uplinks(r, uplinks, uplink_pairs);
}

// One uplink verdict per rail: the leaf, or the leaves whose crossing pairs cannot tell which uplink it is.
void Assessor::name_uplinks(int r, const std::vector<int>& uplinks, const std::vector<std::size_t>& uplink_pairs) {
  const auto* topo = fabric_.topology;
  std::vector<std::string> leaf_names, parents;
  for (int leaf : uplinks) {
    leaf_names.push_back(topo->switches()[static_cast<std::size_t>(leaf)].name);
    const auto p = topo->parent_name(leaf);
    if (!p.empty() && std::find(parents.begin(), parents.end(), p) == parents.end()) parents.push_back(p);
  }
  const auto above = parents.empty() ? std::string() : fmt::format(" to {}", fmt::join(parents, ", "));
  std::string reason;
  if (uplinks.size() == 1) {
    const auto& s = *std::find_if(out_.leaves.begin(), out_.leaves.end(),
                                  [&](const LeafSummary& x) { return x.rail == r && x.leaf == uplinks[0]; });
    reason = fmt::format(
        "uplink of leaf {}{} on rail {}: {} of {} pairs crossing it suspect, {} of {} inside it ({}); "
        "its hosts fine on their other rails",
        leaf_names[0], above, r, s.crossing_suspect, s.crossing_pairs, s.inside_suspect, s.inside_pairs, against_);
  } else {
    reason = fmt::format(
        "an uplink of leaf {}{} on rail {}: the pairs crossing between them are suspect, those "
        "inside each are fine ({}); {}",
        fmt::join(leaf_names, " or "), above, r, against_,
        uplinks.size() == fabric_.topology->leaves(r).size()
            ? fmt::format("every leaf of rail {} shows it, so the pairs cannot tell which uplink, or "
                          "the switch above itself",
                          r)
            : "the pairs cannot tell which of them");
  }
  out_.verdicts.push_back({metric_, VerdictKind::uplink, -1, -1, reason, fabric_.rail_column(r), "",
                           fmt::format("{}", fmt::join(leaf_names, ","))});
  for (const std::size_t j : uplink_pairs) explained_[j] = 1;
}

// Nodes (slow on every rail tested) and NICs (slow on one rail, fine on another).
void Assessor::nodes_and_nics() {
  left_ = tally();
  const auto& left = *left_;
  const auto& names = fabric_.hosts;
  for (int h = 0; h < n_; ++h) {
    std::vector<int> bad_rails, tested_rails;
    for (int r = 0; r < rails_; ++r) {
      if (left.tested[left.at(h, r)] >= 2) tested_rails.push_back(r);
      if (bad_on(left, h, r)) bad_rails.push_back(r);
    }
    if (bad_rails.empty()) continue;
    for (int r : bad_rails) blamed_.insert({h, r});
    if (bad_rails.size() == tested_rails.size()) {
      for (int r = 0; r < rails_; ++r) blamed_.insert({h, r});  // a node explains its slow pairs on every rail
      int bad = 0, tested = 0;
      for (int r : bad_rails) bad += left.bad[left.at(h, r)], tested += left.tested[left.at(h, r)];
      out_.verdicts.push_back({metric_, VerdictKind::node, h, -1,
                               fmt::format("{}: {} of its {} pairs suspect{} ({})", names[h], bad, tested,
                                           rails_ > 1 ? " on every rail" : "", against_)});
      continue;
    }
    for (int r : bad_rails) {
      const auto name = nic(h, r);
      out_.verdicts.push_back({metric_, VerdictKind::nic, h, -1,
                               fmt::format("{}: its rail-{} NIC{}: {} of its {} rail-{} pairs suspect ({}); its other "
                                           "rails fine",
                                           names[h], r, name.empty() ? "" : " " + name, left.bad[left.at(h, r)],
                                           left.tested[left.at(h, r)], r, against_),
                               fabric_.rail_column(r), name});
    }
  }
}

// Nodes slow some of the time: counted per peer over every test (a re-test keeps a pair's best, which hides them),
// leaving out tests a switch, an uplink or a node or NIC named above explains. Only peers fine otherwise (slow with
// at most one other host) count towards the rule, so that noise spread over many hosts names none of them.
void Assessor::intermittent_nodes() {
  std::vector<std::vector<int>> peers(static_cast<std::size_t>(n_)), slow_peers(static_cast<std::size_t>(n_));
  for (std::size_t i = 0; i < values_.size(); ++i) {
    if (at_[i] < 0 || explained_[static_cast<std::size_t>(at_[i])]) continue;
    const auto& p = out_.best[static_cast<std::size_t>(at_[i])];
    peers[p.a].push_back(p.b), peers[p.b].push_back(p.a);
    if (out_.slow_test[i] && !blamed_.count({p.a, p.rail}) && !blamed_.count({p.b, p.rail}))
      slow_peers[p.a].push_back(p.b), slow_peers[p.b].push_back(p.a);
  }
  for (auto* lists : {&peers, &slow_peers})
    for (auto& list : *lists) {  // each peer once
      std::sort(list.begin(), list.end());
      list.erase(std::unique(list.begin(), list.end()), list.end());
    }
  const auto enough = [&](std::size_t count, std::size_t tested) {
    return static_cast<int>(count) >= rule_.intermittent_peers &&
           static_cast<double>(count) >= rule_.intermittent_fraction * static_cast<double>(tested);
  };
  for (int h = 0; h < n_; ++h) {
    const auto& mine = slow_peers[static_cast<std::size_t>(h)];
    const auto tested = peers[static_cast<std::size_t>(h)].size();
    if (!enough(mine.size(), tested)) continue;
    std::size_t fine_elsewhere = 0;
    for (int p : mine) fine_elsewhere += slow_peers[static_cast<std::size_t>(p)].size() <= 2;
    if (!enough(fine_elsewhere, tested)) continue;
    for (int r = 0; r < rails_; ++r) blamed_.insert({h, r});
    out_.verdicts.push_back(
        {metric_, VerdictKind::node, h, -1,
         fmt::format("{}: slow some of the time: {} of its {} peers had a slow test with it ({:.0f}%; "
                     "{}), {} of them fine with their other peers; the best of each pair's tests "
                     "hides it",
                     fabric_.hosts[h], mine.size(), tested,
                     100.0 * static_cast<double>(mine.size()) / static_cast<double>(tested), against_,
                     fine_elsewhere)});
  }
}

// What no wider cause explains: a link where both hosts have other pairs to compare with, else a pair.
void Assessor::links() {
  const auto& left = *left_;
  const auto& names = fabric_.hosts;
  for (const auto& p : out_.best) {
    const std::size_t j = static_cast<std::size_t>(&p - out_.best.data());
    const int a = p.a, b = p.b, r = p.rail;
    if (!p.suspect || explained_[j] || blamed_.count({a, r}) || blamed_.count({b, r})) continue;
    const bool attributable = left.tested[left.at(a, r)] >= 2 && left.tested[left.at(b, r)] >= 2;
    out_.verdicts.push_back({metric_, attributable ? VerdictKind::link : VerdictKind::pair, a, b,
                             fmt::format("{} - {}{}: {:.4g} against {}{}", names[a], names[b],
                                         rails_ > 1 ? fmt::format(" on rail {}", r) : "", p.value, against_,
                                         attributable ? "; both nodes fine with other peers"
                                                      : "; too few other pairs to tell node from link (use --retest)"),
                             fabric_.rail_column(r)});
  }
}

}  // namespace

Assessment assess(const std::string& metric, const MetricRule& rule, double bad_node_fraction, int hosts,
                  const std::vector<PairValue>& values, const std::vector<std::string>& names) {
  Fabric fabric;
  fabric.hosts.assign(names.begin(),
                      names.begin() + std::min<std::size_t>(names.size(), static_cast<std::size_t>(hosts)));
  return assess(metric, rule, bad_node_fraction, fabric, values);
}

Assessment assess(const std::string& metric, const MetricRule& rule, double f, const Fabric& fabric,
                  const std::vector<PairValue>& values, const std::vector<std::string>& nics) {
  return Assessor(metric, rule, f, fabric, values, nics).run();
}

}  // namespace fabricbench::sweep
