// The adaptive plan (sweep/adaptive_plan.hpp): evidence per host-rail from the records, then the round that adds the
// evidence still missing, most urgent first: hung pairs split, slow pairs confirmed, leaves with several slow hosts
// tested inside, slow host-rails re-paired with clean hosts, hosts with too few tests paired, the rest paired at
// random.
#include "fabricbench/sweep/adaptive_plan.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <set>
#include <unordered_map>
#include <unordered_set>

namespace fabricbench::sweep {
namespace {

std::uint64_t pair_key(int a, int b) {
  const auto [lo, hi] = std::minmax(a, b);
  return (static_cast<std::uint64_t>(lo) << 32) | static_cast<std::uint32_t>(hi);
}

std::pair<int, int> hosts_of(std::uint64_t key) {
  return {static_cast<int>(key >> 32), static_cast<int>(key & 0xffffffffu)};
}

// What the records say of one pair on one rail, over every metric.
struct PairEvidence {
  int tests = 0;         // tests of it (re-tests apart), the most of any metric
  bool suspect = false;  // suspect in any metric, best of its tests
};

// One host-rail's test: its partner, and whether the pair was slow for a reason nobody else explains.
struct Test {
  int partner;
  bool slow;
};

// The leaves a switch or uplink verdict names ("r0l1,r0l2").
std::set<std::string> leaf_names(const std::string& names) {
  std::set<std::string> leaves;
  for (std::size_t start = 0; start <= names.size();) {
    const auto comma = std::min(names.find(',', start), names.size());
    leaves.insert(names.substr(start, comma - start));
    start = comma + 1;
  }
  return leaves;
}

}  // namespace

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

struct AdaptivePlan::Evidence {
  std::unordered_map<std::uint64_t, std::vector<PairEvidence>> pairs;  // pair_key -> per rail
  std::vector<char> named, explained;  // per host-rail: named by a node or NIC verdict; under a leaf a verdict names
  std::vector<std::pair<std::uint64_t, int>> slow_tests;  // pair, rail of every test beyond the line
  // Whether a verdict already explains a slow pair between these host-rails.
  bool cause_known(std::size_t hx, std::size_t hy) const {
    return named[hx] || named[hy] || explained[hx] || explained[hy];
  }
};

struct AdaptivePlan::HostView {
  std::vector<std::vector<Test>> tests;                        // per host-rail
  std::vector<std::pair<std::uint64_t, int>> to_confirm;       // slow pairs (pair, rail) tested too few times, sorted
  std::map<std::pair<int, int>, int> inside;                   // (leaf, rail) -> pairs inside it
  std::vector<char> clean, needs_tests, needs_clean, watched;  // per host
  std::vector<char> suspect_rail, undecided;                   // per host-rail
};

// A round being filled: hosts disjoint; partners from a random order of the hosts.
class AdaptivePlan::RoundBuilder {
 public:
  RoundBuilder(const AdaptivePlan& plan, const std::vector<Hung>& hung, std::mt19937_64& rng)
      : plan_(plan), hung_(hung), busy(static_cast<std::size_t>(plan.hosts_), 0), order(busy.size()) {
    for (int h = 0; h < plan.hosts_; ++h) order[h] = h;
    std::shuffle(order.begin(), order.end(), rng);
  }
  void add(int a, int b) {
    busy[a] = busy[b] = 1;
    pairs.push_back({std::min(a, b), std::max(a, b)});
  }
  bool free(int h) const { return !busy[h] && plan_.usable(hung_, h); }
  // A partner for `h` from `order`: free, `wanted`, preferably never tested with h and under another leaf.
  // `fresh_only`: never tested with h (else one tested before may do: a re-test is a test too).
  template <typename Wanted>
  int partner(int h, Wanted&& wanted, bool fresh_only = false) const {
    int fallback = -1, again = -1;  // untested under the same leaf; tested before
    for (int p : order) {
      if (p == h || !free(p) || !wanted(p)) continue;
      const bool fresh = !plan_.tested_.count(pair_key(h, p));
      if (fresh && (plan_.leaf(h, 0) < 0 || plan_.leaf(h, 0) != plan_.leaf(p, 0))) return p;
      if (fallback < 0 && fresh) fallback = p;
      if (again < 0) again = p;
    }
    return fallback >= 0 || fresh_only ? fallback : again;
  }

 private:
  const AdaptivePlan& plan_;
  const std::vector<Hung>& hung_;

 public:
  std::vector<char> busy;
  std::vector<int> order;
  std::vector<HostPair> pairs;
};

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

// Every host judged: a pair that hung while covering split (as in compose), a pair slow in its first test once more,
// then pairs an earlier round had to leave out, then the circle method's next step, untested pairs only. A pair that
// meets a busy host, or a host whose hang is not yet resolved, waits; a hung host's pairs are not covered.
std::optional<Round> AdaptivePlan::cover_round(const std::vector<Hung>& hung, int cap_rounds) {
  const int n = hosts_;
  state_.covering = covering_ = true;
  std::vector<char> busy(static_cast<std::size_t>(n), 0);
  std::vector<HostPair> round;
  for (int h = 0; h < n; ++h)
    if (hung[h] == Hung::unresolved && !busy[h] && hung_with_[h] > h) {
      busy[hung_with_[h]] = 1;  // rests until its partner's test with another host answers
      int p = -1;               // another usable host, one never tested with h first
      for (int c = 0; c < n && (p < 0 || tested_.count(pair_key(h, p))); ++c)
        if (c != h && !busy[c] && usable(hung, c) && (p < 0 || !tested_.count(pair_key(h, c)))) p = c;
      if (p >= 0) busy[h] = busy[p] = 1, round.push_back({std::min(h, p), std::max(h, p)});
    }
  const auto place = [&](std::vector<std::uint64_t>& keys, bool untested_only) {
    std::vector<std::uint64_t> later;
    for (const auto key : keys) {
      const auto [x, y] = hosts_of(key);
      if (hung[x] == Hung::hung || hung[y] == Hung::hung || (untested_only && tested_.count(key))) continue;
      if (busy[x] || busy[y] || !usable(hung, x) || !usable(hung, y)) {
        later.push_back(key);
        continue;
      }
      busy[x] = busy[y] = 1;
      round.push_back({x, y});
    }
    keys = std::move(later);
  };
  place(to_confirm_, false);
  place(deferred_, true);
  const auto before = round.size();
  const int slots = n % 2 == 0 ? n : n + 1, fixed = slots - 1;
  for (; round.size() == before && cover_step_ < slots - 1; ++cover_step_) {
    std::vector<std::uint64_t> step;
    const auto take = [&](int x, int y) {
      if (x < n && y < n) step.push_back(pair_key(x, y));
    };
    take(fixed, cover_step_);
    for (int k = 1; k < slots / 2; ++k) take((cover_step_ + k) % fixed, (cover_step_ - k + fixed) % fixed);
    place(step, true);
    deferred_.insert(deferred_.end(), step.begin(), step.end());
  }
  state_.hosts_judged = judged_at_cover_;  // judging ended before covering began
  for (int h = 0; h < n; ++h) state_.hosts_hung += hung[h] == Hung::hung;
  if (round.empty() || planned_ >= cap_rounds) return std::nullopt;
  ++planned_;
  return Round::of(n, std::move(round));
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

// The round, most urgent first; hosts disjoint. Nothing urgent after screening: covering (with cover_pairs) or done.
std::optional<Round> AdaptivePlan::compose(const HostView& view, const std::vector<Hung>& hung, int cap_rounds) {
  RoundBuilder round(*this, hung, rng_);
  const bool screening = planned_ < options_.screening_rounds;
  split_hung(round, view, hung);
  for (const auto& [key, r] : view.to_confirm) {  // slow pairs once more (the best of the tests stands)
    const auto [x, y] = hosts_of(key);
    if (round.free(x) && round.free(y)) round.add(x, y);
  }
  if (screening) screen(round);
  if (topology_) inside_leaves(round, view);
  pair_suspects(round, view);
  if (round.pairs.empty() && !screening) {
    if (!options_.cover_pairs) return std::nullopt;
    judged_at_cover_ = state_.hosts_judged;
    return cover_round(hung, cap_rounds);
  }
  // Everyone else free: random pairs (a round costs the same with them, and each new pair may show a link).
  for (int h : round.order)
    if (round.free(h) && hung[h] != Hung::unresolved) {
      const int p = round.partner(h, [&](int c) { return hung[c] != Hung::unresolved; });
      if (p >= 0) round.add(h, p);
    }
  ++planned_;
  return Round::of(hosts_, std::move(round.pairs));
}

// Hung pairs: the lower host tests again with another; the other rests until that answers.
void AdaptivePlan::split_hung(RoundBuilder& round, const HostView& view, const std::vector<Hung>& hung) const {
  for (int h = 0; h < hosts_; ++h)
    if (hung[h] == Hung::unresolved && !round.busy[h] && hung_with_[h] > h) {
      round.busy[hung_with_[h]] = 1;
      const int p = round.partner(h, [&](int c) { return view.clean[c] || !view.needs_clean[c]; });
      if (p >= 0) round.add(h, p);
    }
}

// Screening: round k of the circle method over the hosts in a random order (no pair twice, nobody left out; with
// leaves of L hosts most pairs cross leaves, about 1 in L falls inside one).
void AdaptivePlan::screen(RoundBuilder& round) const {
  const int n = hosts_;
  const int slots = n % 2 == 0 ? n : n + 1, fixed = slots - 1, step = planned_ % (slots - 1);
  const auto take = [&](int x, int y) {
    if (x >= n || y >= n) return;
    const int a = relabel_[static_cast<std::size_t>(x)], b = relabel_[static_cast<std::size_t>(y)];
    if (round.free(a) && round.free(b)) round.add(a, b);
  };
  take(fixed, step);
  for (int k = 1; k < slots / 2; ++k) take((step + k) % fixed, (step - k + fixed) % fixed);
}

// Leaves (per rail) where several hosts are slow: pairs inside them (an uplink: inside fine, crossing slow).
void AdaptivePlan::inside_leaves(RoundBuilder& round, const HostView& view) {
  for (int r = 0; r < rails_; ++r)
    for (int l : topology_->leaves(r)) {
      const auto& under = topology_->switches()[static_cast<std::size_t>(l)].hosts;
      int slow = 0;
      for (int h : under) slow += view.undecided[hr(h, r)] && view.suspect_rail[hr(h, r)];
      const auto it = view.inside.find({l, r});
      const int have = it != view.inside.end() ? it->second : 0;
      if (slow < 2 || have >= options_.inside_tests) continue;
      std::vector<int> free;
      for (int h : under)
        if (round.free(h)) free.push_back(h);
      std::shuffle(free.begin(), free.end(), rng_);
      for (std::size_t i = 0; i + 1 < free.size(); ++i)
        for (std::size_t j = i + 1; j < free.size(); ++j)
          if (!round.busy[free[i]] && !round.busy[free[j]] && !tested_.count(pair_key(free[i], free[j]))) {
            round.add(free[i], free[j]);
            i = free.size();
            break;
          }
    }
}

// Slow host-rails with clean partners; watched hosts with a fresh clean peer; then hosts with too few tests, among
// themselves first.
void AdaptivePlan::pair_suspects(RoundBuilder& round, const HostView& view) const {
  for (int h : round.order)
    if (view.needs_clean[h] && !round.busy[h]) {
      const int p = round.partner(h, [&](int c) { return view.clean[c] != 0; });
      if (p >= 0) round.add(h, p);
    }
  for (int h : round.order)
    if (view.watched[h] && !round.busy[h]) {
      int p = round.partner(
          h, [&](int c) { return view.clean[c] != 0 && !view.watched[c]; }, true);
      if (p < 0)
        p = round.partner(
            h, [&](int c) { return !view.watched[c]; }, true);
      if (p >= 0) round.add(h, p);
    }
  for (int h : round.order)
    if (view.needs_tests[h] && !round.busy[h]) {
      int p = round.partner(
          h, [&](int c) { return view.needs_tests[c] != 0; }, true);
      if (p < 0) p = round.partner(h, [&](int c) { return !view.needs_clean[c]; });
      if (p >= 0) round.add(h, p);
    }
}

}  // namespace fabricbench::sweep
