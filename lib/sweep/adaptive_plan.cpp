// The adaptive plan (sweep/adaptive_plan.hpp): evidence per host-rail from the records, then the round that adds the
// evidence still missing, most urgent first: hung pairs split, slow pairs confirmed, leaves with several slow hosts
// tested inside, slow host-rails re-paired with clean hosts, hosts with too few tests paired, the rest paired at random.
#include "fabricbench/sweep/adaptive_plan.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <set>
#include <unordered_map>
#include <unordered_set>

namespace fabricbench::sweep {
namespace {

enum class HungState { none, unresolved, released, hung };

std::uint64_t pair_key(int a, int b) {
  const auto [lo, hi] = std::minmax(a, b);
  return (static_cast<std::uint64_t>(lo) << 32) | static_cast<std::uint32_t>(hi);
}

// What the records say of one pair on one rail, over every metric.
struct PairEvidence {
  int tests = 0;         // tests of it (re-tests apart), the most of any metric
  bool suspect = false;  // suspect in any metric, best of its tests
};

}  // namespace

AdaptivePlan::AdaptivePlan(int hosts, int rails, const Topology* topology, std::vector<JudgedMetric> metrics, Rules rules,
                           std::uint64_t seed, AdaptiveOptions options)
    : hosts_(hosts), rails_(std::max(1, rails)), topology_(topology), metrics_(std::move(metrics)),
      rules_(std::move(rules)), options_(options), rng_(seed) {
  for (int h = 0; h < hosts_; ++h) names_.push_back(fmt::format("host{}", h)), relabel_.push_back(h);
  std::shuffle(relabel_.begin(), relabel_.end(), rng_);
}

std::optional<Round> AdaptivePlan::next(const std::vector<PairRecord>& records) {
  const int n = hosts_, rails = rails_;
  const int cap_rounds = options_.max_rounds > 0 ? options_.max_rounds
                  : options_.cover_pairs     ? 2 * n + 16  // screening and re-tests, then the circle method's rounds
                                             : std::max(1, n - 1);
  state_ = {};
  if (n < 2) return std::nullopt;
  const auto hr = [&](int h, int r) { return static_cast<std::size_t>(h) * rails + r; };
  const auto leaf = [&](int h, int r) { return topology_ ? topology_->leaf_of(h, r) : -1; };

  // Hung pairs: a host that completed a test after its last hang is cleared; one that hung with two partners is hung;
  // the partner of a hung host is released, the partner of a cleared one is hung; else the pair is unresolved.
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
  const auto& tested = tested_;
  const auto& hangs = hangs_;
  const auto& last_hang = last_hang_;
  const auto& last_done = last_done_;
  const auto& hung_with = hung_with_;
  const auto cleared = [&](int h) { return hangs[h] == 0 || last_done[h] > last_hang[h]; };
  std::vector<HungState> hung(n, HungState::none);
  for (int h = 0; h < n; ++h) {
    if (hangs[h] == 0) continue;
    if (cleared(h)) hung[h] = HungState::released;
    else if (hangs[h] >= 2) hung[h] = HungState::hung;
  }
  for (int h = 0; h < n; ++h) {
    if (hung[h] != HungState::none || hangs[h] == 0) continue;
    const int p = hung_with[h];
    hung[h] = hung[p] == HungState::hung ? HungState::released
              : hung[p] == HungState::released ? HungState::hung : HungState::unresolved;
  }
  const auto usable = [&](int h) { return hung[h] == HungState::none || hung[h] == HungState::released; };

  const auto cover_round = [&]() -> std::optional<Round> {
    // Every host judged: a pair that hung while covering split (as below), a pair slow in its first test once more,
    // then pairs an earlier round had to leave out, then the circle method's next step, untested pairs only. A pair
    // that meets a busy host, or a host whose hang is not yet resolved, waits; a hung host's pairs are not covered.
    state_.covering = covering_ = true;
    std::vector<char> busy(static_cast<std::size_t>(n), 0);
    std::vector<HostPair> round;
    for (int h = 0; h < n; ++h)
      if (hung[h] == HungState::unresolved && !busy[h] && hung_with[h] > h) {
        busy[hung_with[h]] = 1;  // rests until its partner's test with another host answers
        int p = -1;               // another usable host, one never tested with h first
        for (int c = 0; c < n && (p < 0 || tested.count(pair_key(h, p))); ++c)
          if (c != h && !busy[c] && usable(c) && (p < 0 || !tested.count(pair_key(h, c)))) p = c;
        if (p >= 0) busy[h] = busy[p] = 1, round.push_back({std::min(h, p), std::max(h, p)});
      }
    const auto place = [&](std::vector<std::uint64_t>& keys, bool untested_only) {
      std::vector<std::uint64_t> later;
      for (const auto key : keys) {
        const int x = static_cast<int>(key >> 32), y = static_cast<int>(key & 0xffffffffu);
        if (hung[x] == HungState::hung || hung[y] == HungState::hung || (untested_only && tested.count(key))) continue;
        if (busy[x] || busy[y] || !usable(x) || !usable(y)) {
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
    for (int h = 0; h < n; ++h) state_.hosts_hung += hung[h] == HungState::hung;
    if (round.empty() || planned_ >= cap_rounds) return std::nullopt;
    ++planned_;
    return Round::of(n, std::move(round));
  };
  if (covering_) return cover_round();

  // Suspects and verdicts, as the judge would see them now.
  std::unordered_map<std::uint64_t, std::vector<PairEvidence>> pairs;  // pair_key -> per rail
  std::vector<char> named(static_cast<std::size_t>(n) * rails, 0), explained(named.size(), 0);
  // Per host: peers with a slow test of their own, and those of them whose pair came out fine (best of its tests).
  std::vector<std::unordered_set<int>> slow_peers(static_cast<std::size_t>(n)), unconfirmed(static_cast<std::size_t>(n));
  std::vector<std::pair<std::uint64_t, int>> slow_tests;  // pair, rail: read once the verdicts are known
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
      auto& e = pairs[pair_key(v.a, v.b)];
      e.resize(static_cast<std::size_t>(rails));
      ++e[static_cast<std::size_t>(v.rail)].tests;  // counted per metric, the most kept below
      if (a.slow_test[i]) slow_tests.emplace_back(pair_key(v.a, v.b), v.rail);
    }
    for (const auto& p : a.best)
      if (p.suspect) pairs[pair_key(p.a, p.b)][static_cast<std::size_t>(p.rail)].suspect = true;
    for (const auto& v : a.verdicts) {
      const int rail = v.rail < 0 ? 0 : v.rail;
      if (v.kind == VerdictKind::node && v.a >= 0)
        for (int r = 0; r < rails; ++r) named[hr(v.a, r)] = 1;
      if (v.kind == VerdictKind::nic && v.a >= 0) named[hr(v.a, rail)] = 1;
      if ((v.kind == VerdictKind::uplink || v.kind == VerdictKind::leaf_switch) && topology_) {
        std::set<std::string> leaves;
        for (std::size_t start = 0; start <= v.switch_name.size();) {
          const auto comma = std::min(v.switch_name.find(',', start), v.switch_name.size());
          leaves.insert(v.switch_name.substr(start, comma - start));
          start = comma + 1;
        }
        for (const auto& s : topology_->switches())
          if (s.leaf() && leaves.count(s.name))
            for (int h : s.hosts) explained[hr(h, rail)] = 1;
      }
    }
  }
  if (metrics_.size() > 1)  // tests were summed over metrics: keep the most of one metric (an upper bound is fine)
    for (auto& [key, e] : pairs)
      for (auto& x : e) x.tests = (x.tests + static_cast<int>(metrics_.size()) - 1) / static_cast<int>(metrics_.size());

  // Per host-rail: its partners and whether each pair is slow for a reason nobody else explains.
  struct Test {
    int partner;
    bool slow;
  };
  std::vector<std::vector<Test>> tests(named.size());
  std::vector<std::pair<std::uint64_t, int>> to_confirm;  // pair, rail
  std::map<std::pair<int, int>, int> inside;              // (leaf, rail) -> pairs inside it
  for (const auto& [key, per_rail] : pairs) {
    const int x = static_cast<int>(key >> 32), y = static_cast<int>(key & 0xffffffffu);
    for (int r = 0; r < rails; ++r) {
      const auto& e = per_rail[static_cast<std::size_t>(r)];
      if (e.tests == 0) continue;
      const bool cause_known = named[hr(x, r)] || named[hr(y, r)] || explained[hr(x, r)] || explained[hr(y, r)];
      const bool slow = e.suspect && !cause_known;
      tests[hr(x, r)].push_back({y, slow});
      tests[hr(y, r)].push_back({x, slow});
      if (slow && e.tests < options_.confirm_tests) to_confirm.emplace_back(key, r);
      if (topology_ && leaf(x, r) >= 0 && leaf(x, r) == leaf(y, r)) ++inside[{leaf(x, r), r}];
    }
  }
  std::sort(to_confirm.begin(), to_confirm.end());
  for (const auto& [key, r] : slow_tests) {
    const int x = static_cast<int>(key >> 32), y = static_cast<int>(key & 0xffffffffu);
    if (named[hr(x, r)] || named[hr(y, r)] || explained[hr(x, r)] || explained[hr(y, r)]) continue;
    slow_peers[x].insert(y), slow_peers[y].insert(x);
    if (!pairs[key][static_cast<std::size_t>(r)].suspect) unconfirmed[x].insert(y), unconfirmed[y].insert(x);
  }
  std::vector<char> watched(static_cast<std::size_t>(n), 0);
  std::vector<std::unordered_set<int>> peers(static_cast<std::size_t>(n));
  for (const auto& [key, per_rail] : pairs) {
    const int x = static_cast<int>(key >> 32), y = static_cast<int>(key & 0xffffffffu);
    if (x < n && y < n) peers[x].insert(y), peers[y].insert(x);
  }
  const auto slow_count = [&](int h, int r) {
    return std::count_if(tests[hr(h, r)].begin(), tests[hr(h, r)].end(), [](const Test& t) { return t.slow; });
  };
  std::vector<char> clean(static_cast<std::size_t>(n), 0);
  for (int h = 0; h < n; ++h) {
    bool all = usable(h);
    for (int r = 0; r < rails && all; ++r)
      all = !named[hr(h, r)] && slow_count(h, r) == 0 &&
            static_cast<int>(tests[hr(h, r)].size()) >= options_.clean_tests;
    clean[static_cast<std::size_t>(h)] = all;
  }
  // A host-rail is decided when clean, explained by a leaf, or (slow pairs, or named) tested enough with clean hosts.
  std::vector<char> suspect_rail(named.size(), 0), undecided(named.size(), 0);
  std::vector<char> needs_tests(static_cast<std::size_t>(n), 0), needs_clean(static_cast<std::size_t>(n), 0);
  for (int h = 0; h < n; ++h) {
    if (!usable(h)) {
      if (hung[h] == HungState::hung) ++state_.hosts_hung;
      if (hung[h] == HungState::hung) ++state_.hosts_judged;
      continue;
    }
    bool judged = true;
    for (int r = 0; r < rails; ++r) {
      const auto i = hr(h, r);
      if (explained[i]) continue;
      const auto& mine = tests[i];
      const bool slow = named[i] || slow_count(h, r) > 0;
      if (!slow) {
        if (static_cast<int>(mine.size()) < options_.clean_tests) undecided[i] = 1, needs_tests[h] = 1;
        continue;
      }
      suspect_rail[i] = 1;
      const auto with_clean = std::count_if(mine.begin(), mine.end(), [&](const Test& t) { return clean[t.partner]; });
      if (with_clean < options_.suspect_tests &&
          static_cast<int>(mine.size()) < options_.suspect_tests + options_.clean_tests + 2)
        undecided[i] = 1, needs_clean[h] = 1, ++state_.host_rails_suspect;
    }
    const auto intermittent_peers = metrics_.empty() ? 4 : rules_.rule(metrics_.front().name).intermittent_peers;
    watched[h] = !unconfirmed[h].empty() && static_cast<int>(slow_peers[h].size()) < intermittent_peers &&
                 static_cast<int>(peers[h].size()) < options_.watch_tests;
    state_.hosts_watched += watched[h];
    for (int r = 0; r < rails; ++r) judged = judged && !undecided[hr(h, r)];
    state_.hosts_judged += judged && !watched[h];
  }
  state_.pairs_to_confirm = static_cast<int>(to_confirm.size());

  if (planned_ >= cap_rounds) return std::nullopt;

  // The round, most urgent first; hosts disjoint.
  std::vector<char> busy(static_cast<std::size_t>(n), 0);
  std::vector<HostPair> round;
  const auto add = [&](int a, int b) {
    busy[a] = busy[b] = 1;
    round.push_back({std::min(a, b), std::max(a, b)});
  };
  std::vector<int> order(static_cast<std::size_t>(n));
  for (int h = 0; h < n; ++h) order[h] = h;
  std::shuffle(order.begin(), order.end(), rng_);
  // A partner for `h` from `order`: free, `wanted`, preferably never tested with h and under another leaf.
  // `fresh_only`: never tested with h (else one tested before may do: a re-test is a test too).
  const auto partner = [&](int h, auto&& wanted, bool fresh_only = false) {
    int fallback = -1, again = -1;  // untested under the same leaf; tested before
    for (int p : order) {
      if (p == h || busy[p] || !usable(p) || !wanted(p)) continue;
      const bool fresh = !tested.count(pair_key(h, p));
      if (fresh && (leaf(h, 0) < 0 || leaf(h, 0) != leaf(p, 0))) return p;
      if (fallback < 0 && fresh) fallback = p;
      if (again < 0) again = p;
    }
    return fallback >= 0 || fresh_only ? fallback : again;
  };
  const bool screening = planned_ < options_.screening_rounds;
  // Hung pairs: the lower host tests again with another; the other rests until that answers.
  for (int h = 0; h < n; ++h)
    if (hung[h] == HungState::unresolved && !busy[h] && hung_with[h] > h) {
      busy[hung_with[h]] = 1;
      const int p = partner(h, [&](int c) { return clean[c] || !needs_clean[c]; });
      if (p >= 0) add(h, p);
    }
  // Slow pairs once more (best of the tests stands).
  for (const auto& [key, r] : to_confirm) {
    const int x = static_cast<int>(key >> 32), y = static_cast<int>(key & 0xffffffffu);
    if (!busy[x] && !busy[y] && usable(x) && usable(y)) add(x, y);
  }
  // Screening: round k of the circle method over the hosts in a random order (no pair twice, nobody left out; with
  // leaves of L hosts most pairs cross leaves, about 1 in L falls inside one).
  if (screening) {
    const int slots = n % 2 == 0 ? n : n + 1, fixed = slots - 1, step = planned_ % (slots - 1);
    const auto take = [&](int x, int y) {
      if (x >= n || y >= n) return;
      const int a = relabel_[static_cast<std::size_t>(x)], b = relabel_[static_cast<std::size_t>(y)];
      if (!busy[a] && !busy[b] && usable(a) && usable(b)) add(a, b);
    };
    take(fixed, step);
    for (int k = 1; k < slots / 2; ++k) take((step + k) % fixed, (step - k + fixed) % fixed);
  }
  // Leaves (per rail) where several hosts are slow: pairs inside them (an uplink: inside fine, crossing slow).
  if (topology_)
    for (int r = 0; r < rails; ++r)
      for (int l : topology_->leaves(r)) {
        const auto& under = topology_->switches()[static_cast<std::size_t>(l)].hosts;
        int slow = 0;
        for (int h : under) slow += undecided[hr(h, r)] && suspect_rail[hr(h, r)];
        const int have = inside.count({l, r}) ? inside[{l, r}] : 0;
        if (slow < 2 || have >= options_.inside_tests) continue;
        std::vector<int> free;
        for (int h : under)
          if (!busy[h] && usable(h)) free.push_back(h);
        std::shuffle(free.begin(), free.end(), rng_);
        for (std::size_t i = 0; i + 1 < free.size(); ++i)
          for (std::size_t j = i + 1; j < free.size(); ++j)
            if (!busy[free[i]] && !busy[free[j]] && !tested.count(pair_key(free[i], free[j]))) {
              add(free[i], free[j]);
              i = free.size();
              break;
            }
      }
  // Slow host-rails with clean partners; then hosts with too few tests, among themselves first.
  for (int h : order)
    if (needs_clean[h] && !busy[h]) {
      const int p = partner(h, [&](int c) { return clean[c] != 0; });
      if (p >= 0) add(h, p);
    }
  for (int h : order)  // watched hosts: a fresh clean peer each round
    if (watched[h] && !busy[h]) {
      int p = partner(h, [&](int c) { return clean[c] != 0 && !watched[c]; }, true);
      if (p < 0) p = partner(h, [&](int c) { return !watched[c]; }, true);
      if (p >= 0) add(h, p);
    }
  for (int h : order)
    if (needs_tests[h] && !busy[h]) {
      int p = partner(h, [&](int c) { return needs_tests[c] != 0; }, true);
      if (p < 0) p = partner(h, [&](int c) { return !needs_clean[c]; });
      if (p >= 0) add(h, p);
    }
  const bool useful = !round.empty();
  if (!useful && !screening) {
    if (!options_.cover_pairs) return std::nullopt;
    judged_at_cover_ = state_.hosts_judged;
    return cover_round();
  }
  // Everyone else free: random pairs (a round costs the same with them, and each new pair may show a link).
  for (int h : order)
    if (!busy[h] && usable(h) && hung[h] != HungState::unresolved) {
      const int p = partner(h, [&](int c) { return hung[c] != HungState::unresolved; });
      if (p >= 0) add(h, p);
    }
  ++planned_;
  return Round::of(n, std::move(round));
}

}  // namespace fabricbench::sweep
