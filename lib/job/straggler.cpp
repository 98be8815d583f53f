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
        for (const auto& entry : ranks_of_[it->first.comm]) {
          const auto rank = entry.first;  // a name of its own: C++17 lambdas do not capture structured bindings
          if (std::none_of(p.parts.begin(), p.parts.end(), [&](const Part& q) { return q.rank == rank; }))
            ++missing_[{it->first.comm, rank}];
        }
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
