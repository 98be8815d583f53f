// libnccl-profiler-fabricbench.so: the NCCL profiler plugin fabric-watchdog --slow puts in a job's environment
// (NCCL_PROFILER_PLUGIN). It exports the v3, v4 and v5 tables; NCCL takes the highest it knows. It asks NCCL for
// collective and kernel channel events only, and keeps per collective the host time of its start, the earliest
// kernel channel start and the latest stop on this GPU, op, bytes, algorithm and protocol (ring.hpp), written to the
// run's folder by the recorder's thread (recorder.hpp). Every entry returns success but init, which fails (NCCL
// then runs without the plugin) when there is nowhere to write.
#include <cstdint>
#include <cstring>

#include "profiler_abi.hpp"
#include "recorder.hpp"
#include "ring.hpp"

namespace fabricbench::profiler {
namespace {

constexpr int kMask = abi::kColl | abi::kKernelCh;

// A kernel channel's handle is its collective's slot with the low bit set (slots are 64-byte aligned).
void* channel_handle(Slot* s) { return reinterpret_cast<void*>(reinterpret_cast<std::uintptr_t>(s) | 1u); }
bool is_channel(void* h) { return reinterpret_cast<std::uintptr_t>(h) & 1u; }
Slot* slot_of(void* h) { return reinterpret_cast<Slot*>(reinterpret_cast<std::uintptr_t>(h) & ~std::uintptr_t{1}); }
// Ours only if aligned as our slots are and marked as one (read as bytes: nothing is assumed of a foreign object).
Slot* our_slot(void* parent) {
  if (!parent || reinterpret_cast<std::uintptr_t>(parent) % alignof(Slot) != 0) return nullptr;
  std::uint32_t magic = 0;
  std::memcpy(&magic, parent, sizeof magic);
  return magic == Slot::kMagic ? static_cast<Slot*>(parent) : nullptr;
}

abi::Result init_ring(void** context, int* mask, std::uint64_t comm, int nranks, int api) {
  *context = nullptr;
  auto* recorder = Recorder::get(api);
  if (!recorder) return abi::kInternalError;
  auto* ring = new Ring(comm, nranks, api);
  recorder->add(ring);
  *context = ring;
  *mask = kMask;
  return abi::kSuccess;
}

abi::Result finalize(void* context) {
  if (auto* ring = static_cast<Ring*>(context))
    if (auto* recorder = Recorder::get(ring->api())) recorder->remove(ring);
  return abi::kSuccess;
}

abi::Result stop_event(void* handle) {
  if (!handle) return abi::kSuccess;
  Slot* s = slot_of(handle);
  if (!is_channel(handle)) {
    s->enqueued.store(true, std::memory_order_release);
    return abi::kSuccess;
  }
  if (s->ring->api() <= 3) s->channel_stop_time(static_cast<std::uint64_t>(monotonic_ns()));
  s->channel_end();
  return abi::kSuccess;
}

abi::Result record_state(void* handle, int state, abi::StateArgsV4* args) {
  if (handle && is_channel(handle) && state == abi::kKernelChStop && args)
    slot_of(handle)->channel_stop_time(args->kernel_ch_ptimer);
  return abi::kSuccess;
}

// A kernel channel of one of our collectives starts at `t`: its handle, or none for a parent that is not ours.
void* start_channel(void* parent, std::uint64_t t) {
  Slot* s = our_slot(parent);
  if (!s) return nullptr;
  s->channel_start(t);
  return channel_handle(s);
}

// v4 and v5 differ only in the descriptor's type field and init's arguments.
template <typename Descr>
abi::Result start_event(void* context, void** handle, Descr* d) {
  *handle = nullptr;
  auto* ring = static_cast<Ring*>(context);
  if (!ring || !d) return abi::kSuccess;
  if (d->type == abi::kColl) {
    const auto& c = d->coll;
    *handle = ring->open({0, c.seq, c.count, c.func, c.datatype, c.algo, c.proto, d->rank, c.channels});
  } else if (d->type == abi::kKernelCh) {
    *handle = start_channel(d->parent, d->kernel_ch.ptimer);
  }
  return abi::kSuccess;
}

abi::Result start_event_v3(void* context, void** handle, abi::DescrV3* d) {
  *handle = nullptr;
  auto* ring = static_cast<Ring*>(context);
  if (!ring || !d) return abi::kSuccess;
  if (d->type == abi::kColl) {
    const auto& c = d->coll;
    *handle = ring->open({c.comm_hash, c.seq, c.count, c.func, c.datatype, c.algo, c.proto, d->rank, c.max_channels});
  } else if (d->type == abi::kKernelCh) {
    *handle = start_channel(d->parent, static_cast<std::uint64_t>(monotonic_ns()));  // v3: no GPU timer
  }
  return abi::kSuccess;
}

abi::Result record_state_v3(void*, int, abi::StateArgsV3*) { return abi::kSuccess; }

abi::Result init_v5(void** context, std::uint64_t comm, int* mask, const char*, int, int nranks, int, abi::Logger) {
  return init_ring(context, mask, comm, nranks, 5);
}
abi::Result init_v4(void** context, int* mask, const char*, std::uint64_t comm, int, int nranks, int, abi::Logger) {
  return init_ring(context, mask, comm, nranks, 4);
}
abi::Result init_v3(void** context, int* mask) { return init_ring(context, mask, 0, 0, 3); }

}  // namespace
}  // namespace fabricbench::profiler

namespace fp = fabricbench::profiler;

extern "C" {
__attribute__((visibility("default"))) extern const fp::abi::ProfilerV5 ncclProfiler_v5;
__attribute__((visibility("default"))) extern const fp::abi::ProfilerV4 ncclProfiler_v4;
__attribute__((visibility("default"))) extern const fp::abi::ProfilerV3 ncclProfiler_v3;

const fp::abi::ProfilerV5 ncclProfiler_v5 = {"fabricbench",  fp::init_v5,      fp::start_event<fp::abi::DescrV5>,
                                             fp::stop_event, fp::record_state, fp::finalize};
const fp::abi::ProfilerV4 ncclProfiler_v4 = {"fabricbench",  fp::init_v4,      fp::start_event<fp::abi::DescrV4>,
                                             fp::stop_event, fp::record_state, fp::finalize};
const fp::abi::ProfilerV3 ncclProfiler_v3 = {"fabricbench",  fp::init_v3,         fp::start_event_v3,
                                             fp::stop_event, fp::record_state_v3, fp::finalize};
}
