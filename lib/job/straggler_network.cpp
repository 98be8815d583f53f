// The slow-rank judge's network side (straggler.hpp): the proxies' sends of a window rated against their usual and
// their own past, placed on a link or a rank's network by the network rule (network_rule.hpp), and read together with
// the kernels' late ranks. StragglerFinder::find (straggler.cpp) calls place_inside once a look.
#include <algorithm>
#include <climits>

#include "fabricbench/job/straggler.hpp"

namespace fabricbench::job {

NetworkRuleSettings StragglerFinder::network_rule() const {
  NetworkRuleSettings r;
  r.link_ratio = s_.link_ratio, r.loss = s_.loss, r.loss_gone = s_.loss_gone, r.min_ops = s_.min_link_ops;
  return r;
}

// A connection's usual: the lower quartile of its readings that end before the present window began.
OwnUsual StragglerFinder::own_usual(std::uint64_t comm, std::int64_t now_ns) const {
  OwnUsual out;
  if (s_.own_history_s <= 0) return out;
  const auto before = now_ns - static_cast<std::int64_t>(s_.link_window_s * 1e9);
  for (auto it = readings_.lower_bound({comm, INT32_MIN, INT32_MIN, INT32_MIN});
       it != readings_.end() && std::get<0>(it->first) == comm; ++it) {
    std::vector<double> v;
    for (const auto& [t, per_byte] : it->second)
      if (t <= before) v.push_back(per_byte);
    if (v.size() < std::max<std::size_t>(1, s_.own_min_readings)) continue;
    const auto q = v.begin() + static_cast<std::ptrdiff_t>((v.size() - 1) / 4);
    std::nth_element(v.begin(), q, v.end());
    out[{{std::get<1>(it->first), std::get<2>(it->first)}, std::get<3>(it->first)}] = *q;
  }
  return out;
}

// The present window's reading of each connection, one every link_window_s; those older than own_history_s go.
void StragglerFinder::remember(std::uint64_t comm, const std::vector<RatedConnection>& rated, std::int64_t now_ns) {
  if (s_.own_history_s <= 0) return;
  const auto every = static_cast<std::int64_t>(s_.link_window_s * 1e9);
  for (const auto& c : rated)
    for (const auto& [cls, per_byte] : c.per_byte) {
      auto& d = readings_[{comm, c.who.first, c.who.second, cls}];
      if (d.empty() || now_ns - d.back().first >= every) d.emplace_back(now_ns, per_byte);
    }
}

// One communicator's sends: its link and network findings (`out`, and the keys they hold in `named`), and the ranks
// its suspect connections (suspect_ratio, whatever they cost) implicate: a rank's network, or a link's receiver (a
// rank that arrives late makes the sends into it wait; a sender's sends do not wait for its own lateness), with the
// most one of them costs.
StragglerFinder::Suspects StragglerFinder::judge_links(std::uint64_t comm, const Sends& sends, double span_s,
                                                       double inside_loss, std::int64_t now_ns,
                                                       std::vector<SlowFinding>& out, std::set<LinkKey>& named,
                                                       Placements& placing) {
  const auto rule = network_rule();
  const auto own = own_usual(comm, now_ns);
  auto rated = rate_connections(sends.recent, span_s, rule, own);
  remember(comm, rated, now_ns);
  std::vector<RatedConnection> slow, candidates;
  for (auto& c : rated) {
    // What a slow connection costs: its own excess network time, or what the communicator's collectives lose inside
    // against their best (the others wait in the network behind it, which its sends alone do not count).
    if (c.ratio >= rule.link_ratio) c.loss = std::max(c.loss, inside_loss);
    if (c.ratio >= rule.suspect_ratio) candidates.push_back(c);
    if (c.ratio < rule.link_ratio) continue;
    const bool was = links_named_.count({comm, c.who.first, c.who.second}) > 0;
    if (c.loss >= (was ? rule.loss_gone : rule.loss)) slow.push_back(c);
  }
  // Suspects over the whole window too: the kernels' rule looks at all of it (a slow connection that ended 4 s ago
  // still made ranks wait there).
  const auto whole = rate_connections(sends.whole, span_s, rule, own);
  std::vector<RatedConnection> whole_candidates;
  for (const auto& c : whole)
    if (c.ratio >= rule.suspect_ratio) whole_candidates.push_back(c);
  Suspects implicated;
  implicated.cost = inside_loss;
  for (const auto* list : {&candidates, &whole_candidates})
    for (const auto& c : *list) implicated.cost = std::max(implicated.cost, c.loss);
  // A connection once placed on a rank's network stays there while it is slow (the connections beside it, which
  // decided, may fall back under their mark a look later: the place does not flip between the link and the rank).
  const auto sticky = [&](NetworkVerdict v) {
    const auto was = placed_on_.find({comm, v.rank, v.peer});
    if (v.kind != NetworkVerdict::Kind::link || was == placed_on_.end()) return v;
    const auto slow_one = v.connections.front().who;
    v.kind = NetworkVerdict::Kind::network, v.rank = was->second.first, v.peer = -1, v.evidence = was->second.second;
    for (const auto& c : rated)  // the connections beside it as they read now, for the line
      if (c.who != slow_one && (c.who.first == v.rank || c.who.second == v.rank) && c.ratio >= rule.beside_ratio)
        v.connections.push_back(c);
    return v;
  };
  const auto implicate = [&](const std::vector<RatedConnection>& suspects, const std::vector<RatedConnection>& beside) {
    for (const auto& v : place_slow_connections(suspects, beside, rule)) {
      const auto placed = sticky(v);
      implicated.ranks.insert(placed.kind == NetworkVerdict::Kind::link ? placed.peer : placed.rank);
    }
  };
  implicate(candidates, rated);
  implicate(whole_candidates, whole);
  for (auto v : place_slow_connections(slow, rated, rule)) {
    v = sticky(v);
    if (v.kind == NetworkVerdict::Kind::network)
      for (const auto& c : v.connections)
        if (c.ratio >= rule.link_ratio) placing[{comm, c.who.first, c.who.second}] = {v.rank, v.evidence};
    SlowFinding f;
    f.kind = v.kind == NetworkVerdict::Kind::link ? SlowFinding::Kind::link : SlowFinding::Kind::network;
    f.comm = comm, f.rank = v.rank, f.peer = v.peer, f.evidence = v.evidence, f.ratio = v.ratio, f.loss = v.loss;
    if (auto src = source_of(comm, v.rank)) f.source = *src;
    for (const auto& c : v.connections) {
      f.connections.push_back(c.who);
      f.connection_ratios.push_back(c.ratio);
    }
    named.insert({comm, v.rank, v.peer});
    for (const auto& c : v.connections)
      if (c.ratio >= rule.link_ratio) named.insert({comm, c.who.first, c.who.second});
    out.push_back(f);
  }
  return implicated;
}

// Where the network has suspect connections, the kernels and the sends are read together. A rank that arrives last
// and is not implicated is the network's doing (the others' kernels wait inside the collective for the slow
// connection, and which ran shortest is then chance, or a GPU's time slices): not named, where the suspects cost
// enough to explain its waiting (a quarter of it or more). A stopped process's own sends stall with it and implicate
// their receiver, at a fraction of what the others wait for the process (2.5% against 41% where CI's judge lost a
// stopped rank): it stays named. One that is implicated: a rank's network named with its kernels agreeing, or a late
// rank the sends into which wait (the link's receiver): one finding with both kinds of evidence.
void StragglerFinder::read_together(SlowWindow& w, std::vector<SlowFinding>& placed,
                                    const std::map<std::uint64_t, Suspects>& implicated) {
  constexpr double kExplains = 4;  // suspects explain a late rank's waiting from a quarter of what it costs
  for (auto it = w.findings.begin(); it != w.findings.end();) {
    const auto imp = implicated.find(it->comm);
    if (it->kind != SlowFinding::Kind::late || imp == implicated.end() || imp->second.ranks.empty()) {
      ++it;
      continue;
    }
    const std::uint64_t comm = it->comm;
    const int rank = it->rank;
    const auto network = std::find_if(placed.begin(), placed.end(), [&](const SlowFinding& p) {
      return p.comm == comm && p.kind == SlowFinding::Kind::network && p.rank == rank;
    });
    if (network != placed.end()) network->kernels_agree = true;
    const bool implicated_rank = imp->second.ranks.count(rank) > 0;
    const bool explained = kExplains * imp->second.cost >= it->loss;
    if (network != placed.end() || (!implicated_rank && explained)) {
      named_.erase({comm, rank});
      it = w.findings.erase(it);
      continue;
    }
    if (!implicated_rank) {  // its own lateness: the suspects are too cheap to have made the others wait
      ++it;
      continue;
    }
    const auto before = placed.size();
    placed.erase(std::remove_if(placed.begin(), placed.end(),
                                [&](const SlowFinding& p) {
                                  return p.comm == comm && p.kind == SlowFinding::Kind::link && p.peer == rank;
                                }),
                 placed.end());
    it->sends_agree = placed.size() < before;
    ++it;
  }
}

// The link and network findings of the window's last link_window_s (a link slowed 2 s ago shows twice as strong
// over 5 s as over 10; the whole window's collectives still say what the job loses inside them: `inside`).
void StragglerFinder::place_inside(std::int64_t start, SlowWindow& w, const std::map<std::uint64_t, double>& inside) {
  std::map<std::uint64_t, Sends> sends;
  std::map<std::uint64_t, std::pair<std::int64_t, std::int64_t>> spans;
  const std::int64_t from =
      std::max(start, w.end_ns - static_cast<std::int64_t>(std::min(s_.link_window_s, s_.window_s) * 1e9));
  for (const auto& p : proxies_) {
    if (p.host_ns < start) continue;
    sends[p.comm].whole.push_back(&p);
    if (p.host_ns < from) continue;
    sends[p.comm].recent.push_back(&p);
    auto& sp = spans.emplace(p.comm, std::make_pair(p.host_ns, p.host_ns)).first->second;
    sp.first = std::min(sp.first, p.host_ns), sp.second = std::max(sp.second, p.host_ns);
  }
  std::set<LinkKey> links;
  Placements placing;
  std::vector<SlowFinding> placed;
  std::map<std::uint64_t, Suspects> implicated;
  for (const auto& [comm, list] : sends) {
    const auto sp = spans.count(comm) ? spans[comm] : std::make_pair(start, start);
    const auto lost = inside.find(comm);
    implicated[comm] = judge_links(comm, list, std::max(1.0, static_cast<double>(sp.second - sp.first) * 1e-9),
                                   lost == inside.end() ? 0 : lost->second, w.end_ns, placed, links, placing);
  }
  // Readings older than own_history_s go (a communicator's, once it is gone).
  const auto oldest = w.end_ns - static_cast<std::int64_t>(s_.own_history_s * 1e9);
  for (auto it = readings_.begin(); it != readings_.end();) {
    while (!it->second.empty() && it->second.front().first < oldest) it->second.pop_front();
    it = it->second.empty() ? readings_.erase(it) : std::next(it);
  }
  links_named_ = std::move(links);
  placed_on_ = std::move(placing);
  read_together(w, placed, implicated);
  if (!placed.empty()) {
    // A slow collective placed on a link or a rank's network is said once, there.
    w.findings.erase(std::remove_if(w.findings.begin(), w.findings.end(),
                                    [&](const SlowFinding& f) {
                                      return f.kind == SlowFinding::Kind::inside &&
                                             std::any_of(placed.begin(), placed.end(),
                                                         [&](const SlowFinding& p) { return p.comm == f.comm; });
                                    }),
                     w.findings.end());
    w.findings.insert(w.findings.end(), placed.begin(), placed.end());
  }
}

}  // namespace fabricbench::job
