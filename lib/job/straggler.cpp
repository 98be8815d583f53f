#include "fabricbench/job/straggler.hpp"

#include <algorithm>

#include "fabricbench/timing/sample_stats.hpp"

namespace fabricbench::job {
namespace {

double median(const std::vector<double>& v) { return v.empty() ? 0 : timing::median_of(v); }

// The lower median: of two connections, the faster (a slow one is then compared with its healthy twin).
double lower_median(std::vector<double> v) {
  if (v.empty()) return 0;
  const auto mid = v.begin() + static_cast<std::ptrdiff_t>((v.size() - 1) / 2);
  std::nth_element(v.begin(), mid, v.end());
  return *mid;
}

constexpr std::int64_t kSecond = 1000000000;

}  // namespace

std::optional<std::size_t> StragglerJudge::source_of(std::uint64_t comm, int rank) const {
  const auto c = ranks_of_.find(comm);
  if (c == ranks_of_.end()) return std::nullopt;
  const auto r = c->second.find(rank);
  if (r == c->second.end()) return std::nullopt;
  return r->second;
}

void StragglerJudge::add_proxy(const slow::ProxyRecord& p) {
  const ConnectionKey key{p.comm, p.rank, p.peer, p.is_send != 0};
  auto it = connections_.find(key);
  if (it == connections_.end()) {
    if (connections_.size() >= kKeptConnections) {
      ++connections_dropped_;
    } else {
      it = connections_.emplace(key, ConnectionTotal{}).first;
    }
  }
  if (it != connections_.end()) {
    auto& t = it->second;
    ++t.ops, t.bytes += p.bytes, t.net_s += static_cast<double>(p.net_ns) * 1e-9;
    t.channels.set(p.channel);
  }
  if (p.is_send && p.bytes > 0) proxies_.push_back(p);
}

void StragglerJudge::add(std::size_t source, const slow::Record& r) {
  if (slow::is_proxy(r)) return add_proxy(slow::as_proxy(r));
  if (r.flags & slow::kIncomplete) return;  // partial times would name the wrong rank
  newest_ns_ = std::max(newest_ns_, r.host_ns);
  ranks_of_[r.comm][r.rank] = source;
  auto& seen = last_seen_[{r.comm, r.rank}];
  seen = std::max(seen, r.host_ns);
  const Key key{r.comm, r.seq};
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

void StragglerJudge::finish(const Key& key, Pending& p) {
  if (p.parts.size() < 2) return;
  const auto last = std::min_element(p.parts.begin(), p.parts.end(),
                                     [](const Part& a, const Part& b) { return a.kernel_ns < b.kernel_ns; });
  const double own_s = static_cast<double>(last->kernel_ns) * 1e-9;
  std::vector<double> waits;
  waits.reserve(p.parts.size());
  for (const auto& part : p.parts)
    if (&part != &*last) waits.push_back(static_cast<double>(part.kernel_ns - last->kernel_ns) * 1e-9);
  const double wait_s = median(waits);
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
void StragglerJudge::expire(std::int64_t now_ns, bool all) {
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

void StragglerJudge::close() { expire(0, true); }

std::vector<std::pair<std::pair<std::uint64_t, int>, std::size_t>> StragglerJudge::quiet_ranks(double after_s) const {
  std::map<std::uint64_t, std::int64_t> newest;
  for (const auto& [key, t] : last_seen_) newest[key.first] = std::max(newest[key.first], t);
  std::vector<std::pair<std::pair<std::uint64_t, int>, std::size_t>> out;
  for (const auto& [key, t] : last_seen_)
    if (static_cast<double>(newest[key.first] - t) > after_s * 1e9)
      out.push_back({key, ranks_of_.at(key.first).at(key.second)});
  return out;
}

void StragglerJudge::judge_links(std::uint64_t comm, const std::vector<const slow::ProxyRecord*>& sends, double span_s,
                                 std::vector<SlowFinding>& out, std::set<LinkKey>& named) {
  struct Conn {
    std::size_t ops = 0;
    double bytes = 0, net_s = 0;
    std::bitset<256> channels;
  };
  std::map<std::pair<int, int>, Conn> conns;
  for (const auto* p : sends) {
    auto& c = conns[{p->rank, p->peer}];
    ++c.ops, c.bytes += static_cast<double>(p->bytes), c.net_s += static_cast<double>(p->net_ns) * 1e-9;
    c.channels.set(p->channel);
  }
  std::vector<double> per_byte;
  for (const auto& [who, c] : conns)
    if (c.ops >= s_.min_link_ops) per_byte.push_back(c.net_s / c.bytes);
  if (per_byte.size() < 2) return;
  const double usual = lower_median(per_byte);
  if (usual <= 0) return;
  struct Slow {
    std::pair<int, int> who;
    double ratio, loss;
  };
  std::vector<Slow> slow;
  for (const auto& [who, c] : conns) {
    if (c.ops < s_.min_link_ops) continue;
    const double ratio = c.net_s / c.bytes / usual;
    const double excess_s =
        (c.net_s - c.bytes * usual) / static_cast<double>(std::max<std::size_t>(1, c.channels.count()));
    const double loss = excess_s / span_s;
    const bool was = links_named_.count({comm, who.first, who.second}) > 0;
    if (ratio >= s_.link_ratio && loss >= (was ? s_.loss_gone : s_.loss)) slow.push_back({who, ratio, loss});
  }
  if (slow.empty()) return;
  // One rank that every slow connection touches, when there are several: its network.
  std::map<int, std::size_t> touches;
  for (const auto& x : slow) {
    ++touches[x.who.first];
    if (x.who.second != x.who.first) ++touches[x.who.second];
  }
  int common = -1;
  for (const auto& [rank, n] : touches)
    if (n == slow.size() && slow.size() >= 2) common = common < 0 ? rank : -2;  // two ranks in all: a pair
  const auto finding = [&](SlowFinding::Kind kind, int rank, int peer) {
    SlowFinding f;
    f.kind = kind, f.comm = comm, f.rank = rank, f.peer = peer;
    if (auto src = source_of(comm, rank)) f.source = *src;
    return f;
  };
  if (common >= 0) {
    auto f = finding(SlowFinding::Kind::network, common, -1);
    for (const auto& x : slow) {
      f.connections.push_back(x.who);
      f.ratio = std::max(f.ratio, x.ratio), f.loss = std::max(f.loss, x.loss);
    }
    named.insert({comm, common, -1});
    for (const auto& x : slow) named.insert({comm, x.who.first, x.who.second});
    out.push_back(f);
    return;
  }
  for (const auto& x : slow) {
    auto f = finding(SlowFinding::Kind::link, x.who.first, x.who.second);
    f.connections.push_back(x.who);
    f.ratio = x.ratio, f.loss = x.loss;
    named.insert({comm, x.who.first, x.who.second});
    out.push_back(f);
  }
}

void StragglerJudge::place_inside(std::int64_t start, SlowWindow& w) {
  std::map<std::uint64_t, std::vector<const slow::ProxyRecord*>> sends;
  std::map<std::uint64_t, std::pair<std::int64_t, std::int64_t>> spans;
  for (const auto& p : proxies_) {
    if (p.host_ns < start) continue;
    sends[p.comm].push_back(&p);
    auto& sp = spans.emplace(p.comm, std::make_pair(p.host_ns, p.host_ns)).first->second;
    sp.first = std::min(sp.first, p.host_ns), sp.second = std::max(sp.second, p.host_ns);
  }
  std::set<LinkKey> links;
  std::vector<SlowFinding> placed;
  for (const auto& [comm, list] : sends) {
    const auto& sp = spans[comm];
    judge_links(comm, list, std::max(1.0, static_cast<double>(sp.second - sp.first) * 1e-9), placed, links);
  }
  links_named_ = std::move(links);
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

SlowWindow StragglerJudge::judge(std::int64_t now_ns) {
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
    for (auto& [rank, waits] : a.waits) {
      RankWindow r;
      r.comm = comm, r.rank = rank, r.source = a.source[rank], r.collectives = a.n, r.late = waits.size();
      std::vector<double> standing_out;
      for (double x : waits) {
        r.cost_s += x;
        if (x > 4 * usual_s) standing_out.push_back(x);
      }
      r.wait_median_s = standing_out.empty() ? median(waits) : median(standing_out);
      r.loss = r.cost_s / span_s;
      r.share = total_s > 0 ? r.cost_s / total_s : 0;
      r.kernel_median_s = median(kernels[{comm, rank}]);
      const auto& ops = a.ops[rank];
      r.op = slow::name_of(slow::kOps, std::max_element(ops.begin(), ops.end(), [](const auto& x, const auto& y) {
                                         return x.second < y.second;
                                       })->first);
      const double late_fraction = static_cast<double>(r.late) / static_cast<double>(r.collectives);
      const bool was = named_.count({comm, rank}) > 0;
      const bool enough = r.collectives >= s_.min_collectives && r.share >= s_.share && late_fraction >= s_.late;
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
      const double lost = (now_s - best) * static_cast<double>(n) / span_s;
      if (comm_late || now_s < s_.inside_ratio * best || lost < s_.loss) continue;
      SlowFinding f;
      f.kind = SlowFinding::Kind::inside, f.comm = comm, f.op = slow::name_of(slow::kOps, what.first);
      f.bytes = what.second, f.own_s = now_s, f.best_s = best, f.loss = lost, f.collectives = n;
      w.findings.push_back(f);
    }
  }
  named_ = std::move(named);

  place_inside(start, w);
  std::sort(w.ranks.begin(), w.ranks.end(), [](const RankWindow& x, const RankWindow& y) { return x.loss > y.loss; });
  return w;
}

}  // namespace fabricbench::job
