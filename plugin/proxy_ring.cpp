#include "proxy_ring.hpp"

#include "clocks.hpp"

namespace fabricbench::profiler {

namespace slow = job::slow;

void ProxySlot::step_state(unsigned step, bool net, std::uint64_t size, std::int64_t now) {
  auto& s = steps[step % kSteps];
  if (size) s.size = size;
  if (net && !s.in_network) {
    s.in_network = true;
    if (in_network++ == 0) busy_since = now;
  } else if (!net && s.in_network) {
    s.in_network = false;
    if (--in_network == 0) record.net_ns += static_cast<std::uint64_t>(now - busy_since);
  }
}

void ProxySlot::step_stop(unsigned step, std::int64_t now) {
  step_state(step, false, 0, now);
  auto& s = steps[step % kSteps];
  record.bytes += sized_steps && s.size ? s.size : chunk;
  if (record.steps < UINT16_MAX) ++record.steps;
  s = Step{};
}

void ProxySlot::stop(std::int64_t now) {
  record.op_ns = static_cast<std::uint64_t>(now - start_mono);
  state.store(kStopped, std::memory_order_release);
}

ProxyRing::ProxyRing() : slots_(new ProxySlot[kSlots]) {}

ProxySlot* ProxyRing::open(const ProxyStart& p) {
  ProxySlot& s = slots_[next_.fetch_add(1, std::memory_order_relaxed) % kSlots];
  std::uint32_t expected = ProxySlot::kFree;  // claimed at once: only the claimer writes an open slot
  if (!s.state.compare_exchange_strong(expected, ProxySlot::kOpen, std::memory_order_acquire)) {
    dropped_.fetch_add(1, std::memory_order_relaxed);
    return nullptr;
  }
  auto& r = s.record;
  r = slow::ProxyRecord{};
  r.comm = p.comm, r.seq = p.seq, r.host_ns = realtime_ns();
  r.rank = p.rank, r.peer = p.peer, r.channel = p.channel, r.is_send = p.is_send ? 1 : 0;
  r.flags = slow::kProxy;
  s.start_mono = monotonic_ns();
  s.chunk = p.chunk > 0 ? static_cast<std::uint32_t>(p.chunk) : 0;
  s.sized_steps = p.sized_steps;
  s.in_network = 0, s.busy_since = 0;
  for (auto& step : s.steps) step = ProxySlot::Step{};
  return &s;
}

void ProxyRing::harvest(std::vector<slow::Record>& out) {
  for (std::size_t i = 0; i < kSlots; ++i) {
    ProxySlot& s = slots_[i];
    if (s.state.load(std::memory_order_acquire) == ProxySlot::kStopped) {
      out.push_back(slow::as_record(s.record));
      s.state.store(ProxySlot::kFree, std::memory_order_release);
    }
  }
}

}  // namespace fabricbench::profiler
