#include "ring.hpp"

#include "clocks.hpp"

namespace fabricbench::profiler {

namespace slow = job::slow;

void Slot::channel_start(std::uint64_t t) {
  // open before started: a writer that sees the new start also sees the channel open
  channels_open.fetch_add(1, std::memory_order_acq_rel);
  channels_started.fetch_add(1, std::memory_order_release);
  auto cur = gpu_start.load(std::memory_order_relaxed);
  while (t < cur && !gpu_start.compare_exchange_weak(cur, t, std::memory_order_relaxed)) {
  }
}

void Slot::channel_stop_time(std::uint64_t t) {
  auto cur = gpu_stop.load(std::memory_order_relaxed);
  while (t > cur && !gpu_stop.compare_exchange_weak(cur, t, std::memory_order_relaxed)) {
  }
}

Ring::Ring(std::uint64_t comm, int nranks, int api)
    : slots_(new Slot[kSlots]), comm_(comm), nranks_(nranks), api_(api) {
  for (std::size_t i = 0; i < kSlots; ++i) slots_[i].ring = this;
}

Ring::~Ring() { delete proxies_.load(std::memory_order_acquire); }

void Ring::reopen(std::uint64_t comm, int nranks) {
  comm_ = comm, nranks_ = nranks;
  dropped_.store(0, std::memory_order_relaxed);
  closed_.store(false, std::memory_order_release);
}

ProxyRing* Ring::proxies() {
  if (auto* p = proxies_.load(std::memory_order_acquire)) return p;
  auto* made = new ProxyRing();
  ProxyRing* expected = nullptr;
  if (proxies_.compare_exchange_strong(expected, made, std::memory_order_acq_rel)) return made;
  delete made;  // another thread made it first
  return expected;
}

std::uint64_t Ring::dropped() const {
  const auto* p = proxies_.load(std::memory_order_acquire);
  return dropped_.load(std::memory_order_relaxed) + (p ? p->dropped() : 0);
}

Slot* Ring::open(const CollectiveStart& c) {
  if (closed()) return nullptr;
  Slot& s = slots_[next_.fetch_add(1, std::memory_order_relaxed) % kSlots];
  std::uint32_t expected = Slot::kFree;
  if (!s.state.compare_exchange_strong(expected, Slot::kClaiming, std::memory_order_acquire)) {
    dropped_.fetch_add(1, std::memory_order_relaxed);
    return nullptr;
  }
  auto& r = s.record;
  r = slow::Record{};
  r.comm = c.comm ? c.comm : comm_;
  r.seq = c.seq;
  const auto size = slow::datatype_size(c.datatype);
  r.bytes = c.count * (size ? size : 1);
  r.host_ns = realtime_ns();
  r.rank = c.rank;
  r.nranks = nranks_;
  r.op = slow::index_of(slow::kOps, c.func);
  r.algo = slow::index_of(slow::kAlgos, c.algo);
  r.proto = slow::index_of(slow::kProtos, c.proto);
  r.channels = c.channels;
  r.flags = api_ <= 3 ? slow::kHostTimer : 0;
  s.channels_started.store(0, std::memory_order_relaxed);
  s.channels_open.store(0, std::memory_order_relaxed);
  s.enqueued.store(false, std::memory_order_relaxed);
  s.gpu_start.store(UINT64_MAX, std::memory_order_relaxed);
  s.gpu_stop.store(0, std::memory_order_relaxed);
  s.seen_started = 0, s.quiet_looks = 0;
  s.state.store(Slot::kOpen, std::memory_order_release);
  return &s;
}

void Ring::harvest(std::vector<slow::Record>& out, std::int64_t now_ns, bool all) {
  constexpr std::int64_t kGiveUpNs = 30'000'000'000;
  for (std::size_t i = 0; i < kSlots; ++i) {
    Slot& s = slots_[i];
    if (s.state.load(std::memory_order_acquire) != Slot::kOpen) continue;
    const auto started = s.channels_started.load(std::memory_order_acquire);
    const bool settled = s.enqueued.load(std::memory_order_acquire) && started > 0 &&
                         s.channels_open.load(std::memory_order_acquire) == 0;
    bool done = false;
    if (settled) {
      if (started >= s.record.channels) {
        done = true;
      } else if (started == s.seen_started) {
        done = ++s.quiet_looks >= 2;
      } else {
        s.seen_started = started, s.quiet_looks = 0;
      }
    }
    const bool old = now_ns - s.record.host_ns > kGiveUpNs;
    if (!done && !old && !all) continue;
    if (started > 0) {
      auto r = s.record;
      r.gpu_start_ns = s.gpu_start.load(std::memory_order_relaxed);
      r.gpu_stop_ns = s.gpu_stop.load(std::memory_order_relaxed);
      if (!done || r.gpu_stop_ns == 0) r.flags |= slow::kIncomplete;
      out.push_back(r);
    } else {
      dropped_.fetch_add(1, std::memory_order_relaxed);  // no kernel channel ever started (a captured graph)
    }
    s.state.store(Slot::kFree, std::memory_order_release);
  }
  if (auto* p = proxies_.load(std::memory_order_acquire)) p->harvest(out);
}

}  // namespace fabricbench::profiler
