// The adaptive plan (sweep/adaptive_plan.hpp): evidence per host-rail from the records (this file), then the round
// that adds the evidence still missing (adaptive_round.cpp).
#include "fabricbench/sweep/adaptive_plan.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <set>
#include <unordered_map>
#include <unordered_set>

#include "adaptive_parts.hpp"

namespace fabricbench::sweep {

using adaptive::hosts_of;
using adaptive::leaf_names;

AdaptivePlan::AdaptivePlan(int hosts, int rails, const Topology* topology, std::vector<JudgedMetric> metrics,
                           Rules rules, std::uint64_t seed, AdaptiveOptions options)
    : hosts_(hosts),
      rails_(std::max(1, rails)),
      topology_(topology),
      metrics_(std::move(metrics)),
      rules_(std::move(rules)),
      options_(options),
      rng_(seed) {
  for (int h = 0; h < hosts_; ++h) names_.push_back(fmt::format("host{}", h)), relabel_.push_back(h);
  std::shuffle(relabel_.begin(), relabel_.end(), rng_);
}

std::optional<Round> AdaptivePlan::next(const std::vector<PairRecord>& records) {
  const int n = hosts_;
  const int cap_rounds = options_.max_rounds > 0 ? options_.max_rounds
                         : options_.cover_pairs ? 2 * n + 16  // screening and re-tests, then the circle method's rounds
                                                : std::max(1, n - 1);
  state_ = {};
  if (n < 2) return std::nullopt;
  read(records);
  const auto hung = hung_states();
  if (covering_) return cover_round(hung, cap_rounds);
  const auto view = decide(gather(records), hung);
  if (planned_ >= cap_rounds) return std::nullopt;
  return compose(view, hung, cap_rounds);
}

void AdaptivePlan::read(const std::vector<PairRecord>& records) {
  const int n = hosts_;
  if (records.size() < seen_ || hangs_.size() != static_cast<std::size_t>(n)) {
    seen_ = 0, tested_.clear(), hung_seen_.clear();
    hangs_.assign(static_cast<std::size_t>(n), 0), last_hang_.assign(static_cast<std::size_t>(n), -1);
    last_done_.assign(static_cast<std::size_t>(n), -1), hung_with_.assign(static_cast<std::size_t>(n), -1);
    slow_peers_.assign(static_cast<std::size_t>(n), 0);
  }
  for (; seen_ < records.size(); ++seen_) {
    const auto& r = records[seen_];
    if (r.a < 0 || r.b < 0 || r.a >= n || r.b >= n) continue;
    tested_.insert(pair_key(r.a, r.b));
    if (covering_ && !r.hung && !std::isnan(r.value) && r.metric >= 0 && r.metric < static_cast<int>(lines_.size())) {
      const auto& [rule, reference] = lines_[static_cast<std::size_t>(r.metric)];
      // A host already slow with intermittent_peers others explains its slow pairs (the judge's intermittent rule):
      // confirming each would cost it a round per pair.
      const auto key = pair_key(r.a, r.b);
      if (rule.beyond(r.value, reference) && confirmed_.insert(key).second) {
        const int most = std::max(++slow_peers_[r.a], ++slow_peers_[r.b]);
        if (most <= rule.intermittent_peers) to_confirm_.push_back(key);
      }
    }
    if (r.hung) {
      if (!hung_seen_.insert({r.round, std::min(r.a, r.b), std::max(r.a, r.b)}).second) continue;
      for (auto [h, p] : {std::pair{r.a, r.b}, std::pair{r.b, r.a}})
        ++hangs_[h], last_hang_[h] = std::max(last_hang_[h], r.round), hung_with_[h] = p;
    } else if (!std::isnan(r.value)) {
      for (int h : {r.a, r.b}) last_done_[h] = std::max(last_done_[h], r.round);
    }
  }
}

// A host that completed a test after its last hang is cleared; one that hung with two partners is hung; the partner
// of a hung host is released, the partner of a cleared one is hung; else the pair is unresolved.
std::vector<AdaptivePlan::Hung> AdaptivePlan::hung_states() const {
  const int n = hosts_;
  const auto cleared = [&](int h) { return hangs_[h] == 0 || last_done_[h] > last_hang_[h]; };
  std::vector<Hung> hung(n, Hung::none);
  for (int h = 0; h < n; ++h) {
    if (hangs_[h] == 0) continue;
    if (cleared(h))
      hung[h] = Hung::released;
    else if (hangs_[h] >= 2)
      hung[h] = Hung::hung;
  }
  for (int h = 0; h < n; ++h) {
    if (hung[h] != Hung::none || hangs_[h] == 0) continue;
    const int p = hung_with_[h];
    hung[h] = hung[p] == Hung::hung ? Hung::released : hung[p] == Hung::released ? Hung::hung : Hung::unresolved;
  }
  return hung;
}

// Suspects and verdicts, as the judge would see them now; the line of each metric is kept for covering.
AdaptivePlan::Evidence AdaptivePlan::gather(const std::vector<PairRecord>& records) {
  const int rails = rails_;
  Evidence e;
  e.named.assign(static_cast<std::size_t>(hosts_) * rails, 0), e.explained.assign(e.named.size(), 0);
  Fabric fabric;
  fabric.hosts = names_, fabric.rails = rails, fabric.topology = topology_;
  for (std::size_t k = 0; k < metrics_.size(); ++k) {
    auto rule = rules_.rule(metrics_[k].name);
    rule.higher_is_better = metrics_[k].better != results::Better::lower;
    const auto values = pair_values(records, static_cast<int>(k), rule.higher_is_better);
    const auto a = assess(metrics_[k].name, rule, rules_.bad_node_fraction, fabric, values);
    if (lines_.size() <= k) lines_.resize(k + 1);
    lines_[k] = {rule, a.reference};
    for (std::size_t i = 0; i < values.size(); ++i) {
      const auto& v = values[i];
      if (v.rail < 0 || v.rail >= rails) continue;
      auto& per_rail = e.pairs[pair_key(v.a, v.b)];
      per_rail.resize(static_cast<std::size_t>(rails));
      ++per_rail[static_cast<std::size_t>(v.rail)].tests;  // counted per metric, the most kept below
      if (a.slow_test[i]) e.slow_tests.emplace_back(pair_key(v.a, v.b), v.rail);
    }
    for (const auto& p : a.best)
      if (p.suspect) e.pairs[pair_key(p.a, p.b)][static_cast<std::size_t>(p.rail)].suspect = true;
    for (const auto& v : a.verdicts) {
      const int rail = v.rail < 0 ? 0 : v.rail;
      if (v.kind == VerdictKind::node && v.a >= 0)
        for (int r = 0; r < rails; ++r) e.named[hr(v.a, r)] = 1;
      if (v.kind == VerdictKind::nic && v.a >= 0) e.named[hr(v.a, rail)] = 1;
      if ((v.kind == VerdictKind::uplink || v.kind == VerdictKind::leaf_switch) && topology_) {
        const auto leaves = leaf_names(v.switch_name);
        for (const auto& s : topology_->switches())
          if (s.leaf() && leaves.count(s.name))
            for (int h : s.hosts) e.explained[hr(h, rail)] = 1;
      }
    }
  }
  if (metrics_.size() > 1)  // tests were summed over metrics: keep the most of one metric (an upper bound is fine)
    for (auto& [key, per_rail] : e.pairs)
      for (auto& x : per_rail)
        x.tests = (x.tests + static_cast<int>(metrics_.size()) - 1) / static_cast<int>(metrics_.size());
  return e;
}

// Per host-rail: its partners and whether each pair is slow for a reason nobody else explains; the slow pairs to test
// again; the pairs inside each leaf.
AdaptivePlan::HostView AdaptivePlan::tally(const Evidence& e) const {
  HostView v;
  v.tests.resize(e.named.size());
  for (const auto& [key, per_rail] : e.pairs) {
    const auto [x, y] = hosts_of(key);
    for (int r = 0; r < rails_; ++r) {
      const auto& pe = per_rail[static_cast<std::size_t>(r)];
      if (pe.tests == 0) continue;
      const bool slow = pe.suspect && !e.cause_known(hr(x, r), hr(y, r));
      v.tests[hr(x, r)].push_back({y, slow});
      v.tests[hr(y, r)].push_back({x, slow});
      if (slow && pe.tests < options_.confirm_tests) v.to_confirm.emplace_back(key, r);
      if (topology_ && leaf(x, r) >= 0 && leaf(x, r) == leaf(y, r)) ++v.inside[{leaf(x, r), r}];
    }
  }
  std::sort(v.to_confirm.begin(), v.to_confirm.end());
  return v;
}

// Per host: whether it had a slow test that a re-test did not confirm, with too few slow peers for the judge's
// intermittent rule and fewer peers than watch_tests (it gets fresh peers until one of them says which).
std::vector<char> AdaptivePlan::watch_candidates(const Evidence& e) const {
  const auto n = static_cast<std::size_t>(hosts_);
  std::vector<std::unordered_set<int>> slow_peers(n), unconfirmed(n), peers(n);
  for (const auto& [key, r] : e.slow_tests) {
    const auto [x, y] = hosts_of(key);
    if (e.cause_known(hr(x, r), hr(y, r))) continue;
    slow_peers[x].insert(y), slow_peers[y].insert(x);
    if (!e.pairs.at(key)[static_cast<std::size_t>(r)].suspect) unconfirmed[x].insert(y), unconfirmed[y].insert(x);
  }
  for (const auto& [key, per_rail] : e.pairs) {
    const auto [x, y] = hosts_of(key);
    if (x < hosts_ && y < hosts_) peers[x].insert(y), peers[y].insert(x);
  }
  const auto intermittent_peers = metrics_.empty() ? 4 : rules_.rule(metrics_.front().name).intermittent_peers;
  std::vector<char> out(n, 0);
  for (std::size_t h = 0; h < n; ++h)
    out[h] = !unconfirmed[h].empty() && static_cast<int>(slow_peers[h].size()) < intermittent_peers &&
             static_cast<int>(peers[h].size()) < options_.watch_tests;
  return out;
}

// A host-rail is decided when clean, explained by a leaf, or (slow pairs, or named) tested enough with clean hosts.
AdaptivePlan::HostView AdaptivePlan::decide(const Evidence& e, const std::vector<Hung>& hung) {
  const int n = hosts_;
  auto v = tally(e);
  const auto candidates = watch_candidates(e);
  const auto slow_count = [&](int h, int r) {
    return std::count_if(v.tests[hr(h, r)].begin(), v.tests[hr(h, r)].end(), [](const Test& t) { return t.slow; });
  };
  v.clean.assign(static_cast<std::size_t>(n), 0);
  for (int h = 0; h < n; ++h) {
    bool all = usable(hung, h);
    for (int r = 0; r < rails_ && all; ++r)
      all = !e.named[hr(h, r)] && slow_count(h, r) == 0 &&
            static_cast<int>(v.tests[hr(h, r)].size()) >= options_.clean_tests;
    v.clean[static_cast<std::size_t>(h)] = all;
  }
  v.suspect_rail.assign(e.named.size(), 0), v.undecided.assign(e.named.size(), 0);
  v.needs_tests.assign(static_cast<std::size_t>(n), 0), v.needs_clean.assign(static_cast<std::size_t>(n), 0);
  v.watched.assign(static_cast<std::size_t>(n), 0);
  for (int h = 0; h < n; ++h) {
    if (!usable(hung, h)) {
      state_.hosts_hung += hung[h] == Hung::hung;
      state_.hosts_judged += hung[h] == Hung::hung;
      continue;
    }
    bool judged = true;
    for (int r = 0; r < rails_; ++r) {
      const auto i = hr(h, r);
      if (e.explained[i]) continue;
      const auto& mine = v.tests[i];
      if (!e.named[i] && slow_count(h, r) == 0) {
        if (static_cast<int>(mine.size()) < options_.clean_tests) v.undecided[i] = 1, v.needs_tests[h] = 1;
        continue;
      }
      v.suspect_rail[i] = 1;
      const auto with_clean =
          std::count_if(mine.begin(), mine.end(), [&](const Test& t) { return v.clean[t.partner]; });
      if (with_clean < options_.suspect_tests &&
          static_cast<int>(mine.size()) < options_.suspect_tests + options_.clean_tests + 2)
        v.undecided[i] = 1, v.needs_clean[h] = 1, ++state_.host_rails_suspect;
    }
    v.watched[h] = candidates[h];
    state_.hosts_watched += v.watched[h];
    for (int r = 0; r < rails_; ++r) judged = judged && !v.undecided[hr(h, r)];
    state_.hosts_judged += judged && !v.watched[h];
  }
  state_.pairs_to_confirm = static_cast<int>(v.to_confirm.size());
  return v;
}

}  // namespace fabricbench::sweep
