#include "fabricbench/job/straggler.hpp"

#include <algorithm>

#include "fabricbench/timing/sample_stats.hpp"

namespace fabricbench::job {
namespace {

double median(const std::vector<double>& v) { return v.empty() ? 0 : timing::median_of(v); }

constexpr std::int64_t kSecond = 1000000000;

}  // namespace

std::optional<std::size_t> StragglerFinder::source_of(std::uint64_t comm, int rank) const {
  const auto c = ranks_of_.find(comm);
  if (c == ranks_of_.end()) return std::nullopt;
  const auto r = c->second.find(rank);
  if (r == c->second.end()) return std::nullopt;
  return r->second;
}

void StragglerFinder::set_gpu(std::size_t source, std::string physical_gpu) {
  if (gpu_of_.size() <= source) gpu_of_.resize(source + 1);
  gpu_of_[source] = std::move(physical_gpu);
}

std::vector<int> StragglerFinder::sharing_gpu(std::uint64_t comm) const {
  const auto c = ranks_of_.find(comm);
  if (c == ranks_of_.end() || gpu_of_.empty()) return {};
  std::map<std::string, std::vector<int>> on;
  for (const auto& [rank, source] : c->second)
    if (source < gpu_of_.size() && !gpu_of_[source].empty()) on[gpu_of_[source]].push_back(rank);
  std::vector<int> out;
  for (const auto& [gpu, ranks] : on)
    if (ranks.size() > 1) out.insert(out.end(), ranks.begin(), ranks.end());
  std::sort(out.begin(), out.end());
  return out;
}

bool StragglerFinder::still_settling(std::uint64_t comm, std::int64_t t_ns) const {
  const auto it = comm_first_.find(comm);
  return it != comm_first_.end() && static_cast<double>(t_ns - it->second) < s_.settle_s * 1e9;
}

void StragglerFinder::add_proxy(const slow::ProxyRecord& p) {
  const auto first = comm_first_.emplace(p.comm, p.host_ns).first;
  first->second = std::min(first->second, p.host_ns);
  const ConnectionKey key{p.comm, p.rank, p.peer, p.is_send != 0};
  auto it = connections_.find(key);
  if (it == connections_.end()) {
    if (connections_.size() >= kKeptConnections) {
      ++connections_dropped_;
    } else {
      it = connections_.emplace(key, ConnectionTotal{}).first;
    }
  }
  const bool small = p.bytes < std::max<std::uint64_t>(1, s_.small_op_bytes);
  if (it != connections_.end()) {
    auto& t = it->second;
    if (small) {
      ++t.small_ops;
    } else {
      ++t.ops, t.bytes += p.bytes, t.net_s += static_cast<double>(p.net_ns) * 1e-9;
      t.channels.set(p.channel);
    }
  }
  if (p.is_send && !small && !still_settling(p.comm, p.host_ns)) proxies_.push_back(p);
}

void StragglerFinder::add(std::size_t source, const slow::Record& r) {
  if (slow::is_sample(r)) return;  // a host's sample (host_evidence.hpp)
  if (slow::is_proxy(r)) return add_proxy(slow::as_proxy(r));
  if (r.flags & slow::kIncomplete) return;  // partial times would name the wrong rank
  newest_ns_ = std::max(newest_ns_, r.host_ns);
  ranks_of_[r.comm][r.rank] = source;
  const auto first = comm_first_.emplace(r.comm, r.host_ns).first;
  first->second = std::min(first->second, r.host_ns);
  auto& seen = last_seen_[{r.comm, r.rank}];
  seen = std::max(seen, r.host_ns);
  const Key key{r.comm, r.seq, r.op};
  auto& p = pending_[key];
  if (p.parts.empty()) {
    p.first_ns = r.host_ns, p.bytes = r.bytes, p.op = r.op, p.algo = r.algo, p.proto = r.proto;
    p.nranks = r.nranks;
  }
  p.first_ns = std::min(p.first_ns, r.host_ns);
  p.newest_ns = std::max(p.newest_ns, r.host_ns);
  for (const auto& part : p.parts)
    if (part.rank == r.rank) return;  // the same rank twice (a rotated file read again): the first counts
  p.parts.push_back({r.rank, source, r.kernel_ns()});
  if (p.nranks > 0 && static_cast<int>(p.parts.size()) >= p.nranks) {
    finish(key, p);
    pending_.erase(key);
  }
}

void StragglerFinder::finish(const Key& key, Pending& p) {
  if (p.parts.size() < 2) return;
  const auto last = std::min_element(p.parts.begin(), p.parts.end(),
                                     [](const Part& a, const Part& b) { return a.kernel_ns < b.kernel_ns; });
  const double own_s = static_cast<double>(last->kernel_ns) * 1e-9;
  std::vector<double> waits;
  waits.reserve(p.parts.size());
  for (const auto& part : p.parts)
    if (&part != &*last) waits.push_back(static_cast<double>(part.kernel_ns - last->kernel_ns) * 1e-9);
  const double wait_s = median(waits);
  const bool new_kind = ++kinds_seen_[{key.comm, p.op, p.algo, p.proto}] <= s_.settle_ops;
  if (new_kind || still_settling(key.comm, p.first_ns))
    ++settling_;
  else
    done_.push_back({p.first_ns, key.comm, p.bytes, p.op, last->rank, last->source, wait_s, own_s});
  for (const auto& part : p.parts) {
    rows_.push_back({p.first_ns, key.comm, key.seq, p.bytes, part.rank, p.op, p.algo, p.proto,
                     static_cast<double>(part.kernel_ns) * 1e-9,
                     static_cast<double>(part.kernel_ns - last->kernel_ns) * 1e-9, &part == &*last});
    if (rows_.size() > kKeptRows) rows_.pop_front();
  }
  ++judged_;
}

// Collectives that will not complete: with a known size, after 30 s (a rank's records missing: counted per rank);
// without one (v3), 2 s after their newest record.
void StragglerFinder::expire(std::int64_t now_ns, bool all) {
  for (auto it = pending_.begin(); it != pending_.end();) {
    auto& p = it->second;
    const bool unsized_done = p.nranks <= 0 && (all || now_ns - p.newest_ns > 2 * kSecond);
    if (unsized_done) finish(it->first, p);
    if (unsized_done || all || now_ns - p.newest_ns > 30 * kSecond) {
      if (!unsized_done)
        for (const auto& [rank, source] : ranks_of_[it->first.comm])
          if (std::none_of(p.parts.begin(), p.parts.end(), [&](const Part& q) { return q.rank == rank; }))
            ++missing_[{it->first.comm, rank}];
      it = pending_.erase(it);
    } else {
      ++it;
    }
  }
}

void StragglerFinder::close() { expire(0, true); }

std::vector<std::pair<std::pair<std::uint64_t, int>, std::size_t>> StragglerFinder::quiet_ranks(double after_s) const {
  std::map<std::uint64_t, std::int64_t> newest;
  for (const auto& [key, t] : last_seen_) newest[key.first] = std::max(newest[key.first], t);
  std::vector<std::pair<std::pair<std::uint64_t, int>, std::size_t>> out;
  for (const auto& [key, t] : last_seen_)
    if (static_cast<double>(newest[key.first] - t) > after_s * 1e9)
      out.push_back({key, ranks_of_.at(key.first).at(key.second)});
  return out;
}

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

// A finding is said from its `confirm_looks`-th look in a row on: one look's blip (a window caught mid-change) names
// nobody.
void StragglerFinder::confirm(SlowWindow& w) {
  std::map<SlowFinding::Key, std::size_t> looks;
  for (const auto& f : w.findings) {
    const auto before = looks_.find(f.key());
    looks[f.key()] = (before == looks_.end() ? 0 : before->second) + 1;
  }
  looks_ = std::move(looks);
  // A link is what is left when the connections beside a slow one do not lean to either end; they take longer to
  // show than the slow connection itself (a stalled receiver's own sends slow a few seconds after the sends into
  // it): a link waits three looks more.
  const auto needed = [&](const SlowFinding& f) {
    const auto base = std::max<std::size_t>(1, s_.confirm_looks);
    return f.kind == SlowFinding::Kind::link && base > 1 ? base + 3 : base;
  };
  w.findings.erase(std::remove_if(w.findings.begin(), w.findings.end(),
                                  [&](const SlowFinding& f) { return looks_.at(f.key()) < needed(f); }),
                   w.findings.end());
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

SlowWindow StragglerFinder::find(std::int64_t now_ns) {
  expire(now_ns);
  const std::int64_t start = now_ns - static_cast<std::int64_t>(s_.window_s * 1e9);
  while (!done_.empty() && done_.front().t_ns < start) done_.pop_front();
  while (!proxies_.empty() && proxies_.front().host_ns < start) proxies_.pop_front();
  SlowWindow w;
  w.start_ns = start, w.end_ns = now_ns, w.collectives = done_.size();

  // Per communicator: the span its collectives cover, and per rank what its late arrivals cost the others.
  struct Acc {
    std::int64_t first = INT64_MAX, last = INT64_MIN;
    std::size_t n = 0;
    std::map<int, std::vector<double>> waits;  // by the rank that was last
    std::map<int, std::map<std::uint8_t, std::size_t>> ops;
    std::map<int, std::size_t> source;
    std::map<std::pair<std::uint8_t, std::uint64_t>, std::vector<double>> own;  // by (op, bytes)
  };
  std::map<std::uint64_t, Acc> comms;
  for (const auto& d : done_) {
    auto& a = comms[d.comm];
    a.first = std::min(a.first, d.t_ns), a.last = std::max(a.last, d.t_ns), ++a.n;
    a.own[{d.op, d.bytes}].push_back(d.own_s);
    if (d.wait_s < s_.min_wait_s) continue;
    a.waits[d.last_rank].push_back(d.wait_s);
    ++a.ops[d.last_rank][d.op];
    a.source[d.last_rank] = d.last_source;
  }
  std::map<std::pair<std::uint64_t, int>, std::vector<double>> kernels;
  for (auto it = rows_.rbegin(); it != rows_.rend() && it->host_ns >= start; ++it)
    kernels[{it->comm, it->rank}].push_back(it->kernel_s);

  std::map<std::pair<std::uint64_t, int>, bool> named;
  std::map<std::uint64_t, double> inside;  // per communicator: the time lost inside its collectives against their best
  for (auto& [comm, a] : comms) {
    // The span: from the first collective to the last, and never less than 1 s (a burst is not a rate).
    const double span_s = std::max(1.0, static_cast<double>(a.last - a.first) * 1e-9);
    bool comm_late = false;
    double total_s = 0;
    std::vector<double> every;
    for (const auto& [rank, waits] : a.waits)
      for (double x : waits) total_s += x, every.push_back(x);
    // A rank's typical wait: the median of its waits that stand out (over 4x the communicator's median wait), where
    // it has such: while it turns slow, its window still holds the healthy turns, whose median would say 0.2 ms.
    const double usual_s = median(every);
    const auto shared = sharing_gpu(comm);
    if (!shared.empty()) w.shared_gpu[comm] = shared;
    for (auto& [rank, waits] : a.waits) {
      RankWindow r;
      r.comm = comm, r.rank = rank, r.source = a.source[rank], r.collectives = a.n, r.late = waits.size();
      std::vector<double> standing_out;
      for (double x : waits) {
        r.cost_s += x;
        if (x > 4 * usual_s) standing_out.push_back(x);
      }
      r.wait_median_s = standing_out.empty() ? median(waits) : median(standing_out);
      r.loss = part_of(r.cost_s, span_s);
      r.share = total_s > 0 ? r.cost_s / total_s : 0;
      r.kernel_median_s = median(kernels[{comm, rank}]);
      const auto& ops = a.ops[rank];
      r.op = slow::name_of(slow::kOps, std::max_element(ops.begin(), ops.end(), [](const auto& x, const auto& y) {
                                         return x.second < y.second;
                                       })->first);
      const double late_fraction = static_cast<double>(r.late) / static_cast<double>(r.collectives);
      const bool was = named_.count({comm, rank}) > 0;
      const bool enough = r.collectives >= s_.min_collectives && r.share >= s_.share && late_fraction >= s_.late &&
                          !std::binary_search(shared.begin(), shared.end(), rank);
      if (enough && r.loss >= (was ? s_.loss_gone : s_.loss)) {
        named[{comm, rank}] = true;
        comm_late = true;
        SlowFinding f;
        f.kind = SlowFinding::Kind::late, f.comm = comm, f.rank = rank, f.source = r.source, f.op = r.op;
        f.late_fraction = late_fraction, f.wait_median_s = r.wait_median_s, f.loss = r.loss;
        f.collectives = r.collectives;
        w.findings.push_back(f);
      }
      w.ranks.push_back(r);
    }
    for (auto& [what, own] : a.own) {
      const auto n = own.size();
      const double now_s = median(own);
      auto& best = best_own_[{comm, what.first, what.second}];
      if (n < 2 * s_.min_collectives) continue;
      if (best == 0 || now_s < best) best = now_s;
      const double lost = part_of((now_s - best) * static_cast<double>(n), span_s);
      inside[comm] = std::min(1.0, inside[comm] + lost);
      if (comm_late || now_s < s_.inside_ratio * best || lost < s_.loss) continue;
      SlowFinding f;
      f.kind = SlowFinding::Kind::inside, f.comm = comm, f.op = slow::name_of(slow::kOps, what.first);
      f.bytes = what.second, f.own_s = now_s, f.best_s = best, f.loss = lost, f.collectives = n;
      w.findings.push_back(f);
    }
  }
  named_ = std::move(named);

  place_inside(start, w, inside);
  confirm(w);
  std::sort(w.ranks.begin(), w.ranks.end(), [](const RankWindow& x, const RankWindow& y) { return x.loss > y.loss; });
  return w;
}

}  // namespace fabricbench::job
