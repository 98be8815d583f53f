// The adaptive plan's round (sweep/adaptive_plan.hpp), from the evidence adaptive_plan.cpp read: most urgent first,
// hung pairs split, slow pairs confirmed, leaves with several slow hosts tested inside, slow host-rails re-paired with
// clean hosts, hosts with too few tests paired, the rest paired at random; once every host is judged, covering.
#include <algorithm>
#include <map>
#include <set>

#include "adaptive_parts.hpp"
#include "fabricbench/sweep/adaptive_plan.hpp"

namespace fabricbench::sweep {

using adaptive::hosts_of;

// Every host judged: a pair that hung while covering split (as in compose), a pair slow in its first test once more,
// then pairs an earlier round had to leave out, then the next step of the circle method (duplex: of the shift
// pattern), untested pairs only. A pair that meets a busy host, or a host whose hang is not yet resolved, waits; a
// hung host's pairs are not covered. Duplex: a host is at most once a and once b; a re-test or a hung split keeps its
// hosts to itself.
std::optional<Round> AdaptivePlan::cover_round(const std::vector<Hung>& hung, int cap_rounds) {
  const int n = hosts_;
  const bool duplex = options_.duplex_cover;
  state_.covering = covering_ = true;
  std::vector<char> as_a(static_cast<std::size_t>(n), 0), as_b(static_cast<std::size_t>(n), 0);  // ends taken
  const auto idle = [&](int h) { return !as_a[h] && !as_b[h]; };
  std::vector<HostPair> round;
  const auto whole = [&](int x, int y) {
    as_a[x] = as_b[x] = as_a[y] = as_b[y] = 1;
    round.push_back({std::min(x, y), std::max(x, y)});
  };
  for (int h = 0; h < n; ++h)
    if (hung[h] == Hung::unresolved && idle(h) && hung_with_[h] > h) {
      as_a[hung_with_[h]] = as_b[hung_with_[h]] = 1;  // rests until its partner's test with another host answers
      int p = -1;                                     // another usable host, one never tested with h first
      for (int c = 0; c < n && (p < 0 || tested_.count(pair_key(h, p))); ++c)
        if (c != h && idle(c) && usable(hung, c) && (p < 0 || !tested_.count(pair_key(h, c)))) p = c;
      if (p >= 0) whole(h, p);
    }
  // A pair placed: with its hosts to itself, else (duplex) as a -> b or b -> a where those ends are free.
  const auto placed = [&](HostPair p, bool alone) {
    if (alone || !duplex) {
      if (!idle(p.a) || !idle(p.b)) return false;
      whole(p.a, p.b);
      return true;
    }
    for (const auto q : {p, HostPair{p.b, p.a}})
      if (!as_a[q.a] && !as_b[q.b]) {
        as_a[q.a] = as_b[q.b] = 1;
        round.push_back(q);
        return true;
      }
    return false;
  };
  const auto place = [&](const std::vector<HostPair>& pairs, bool untested_only, bool alone) {
    std::vector<std::uint64_t> later;
    for (const auto& p : pairs) {
      const auto key = pair_key(p.a, p.b);
      if (hung[p.a] == Hung::hung || hung[p.b] == Hung::hung || (untested_only && tested_.count(key))) continue;
      if (!usable(hung, p.a) || !usable(hung, p.b) || !placed(p, alone)) later.push_back(key);
    }
    return later;
  };
  const auto pairs_of = [](const std::vector<std::uint64_t>& keys) {
    std::vector<HostPair> out;
    for (const auto key : keys) out.push_back({hosts_of(key).first, hosts_of(key).second});
    return out;
  };
  to_confirm_ = place(pairs_of(to_confirm_), false, true);
  deferred_ = place(pairs_of(deferred_), true, false);
  const auto before = round.size();
  const int slots = n % 2 == 0 ? n : n + 1, fixed = slots - 1;
  const int steps = duplex ? n / 2 : slots - 1;
  for (; round.size() == before && cover_step_ < steps; ++cover_step_) {
    std::vector<HostPair> step;
    if (duplex) {  // shift step d: i sends to i + d (d = n / 2: each pair once)
      const int d = cover_step_ + 1;
      for (int i = 0; i < (2 * d == n ? d : n); ++i) step.push_back({i, (i + d) % n});
    } else {
      const auto take = [&](int x, int y) {
        if (x < n && y < n) step.push_back({std::min(x, y), std::max(x, y)});
      };
      take(fixed, cover_step_);
      for (int k = 1; k < slots / 2; ++k) take((cover_step_ + k) % fixed, (cover_step_ - k + fixed) % fixed);
    }
    const auto later = place(step, true, false);
    deferred_.insert(deferred_.end(), later.begin(), later.end());
  }
  state_.hosts_judged = judged_at_cover_;  // judging ended before covering began
  for (int h = 0; h < n; ++h) state_.hosts_hung += hung[h] == Hung::hung;
  if (round.empty() || planned_ >= cap_rounds) return std::nullopt;
  ++planned_;
  auto r = Round::of(n, std::move(round));
  // Duplex where a host is in two pairs; a round of disjoint pairs (re-tests, a last few) runs as any other.
  std::vector<char> in_pair(static_cast<std::size_t>(n), 0);
  for (const auto& p : r.pairs)
    for (const int h : {p.a, p.b}) r.duplex = r.duplex || in_pair[h]++;
  return r;
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
