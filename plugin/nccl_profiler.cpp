// libnccl-profiler-fabricbench.so: the NCCL profiler plugin fabric-watchdog --slow puts in a job's environment
// (NCCL_PROFILER_PLUGIN). It exports the v3, v4, v5 and v6 tables; NCCL takes the highest it knows. It asks NCCL
// for collective, kernel channel and proxy events only, and keeps per collective the host time of its start, the
// earliest kernel channel start and the latest stop on this GPU, op, bytes, algorithm and protocol (ring.hpp), and
// per proxy operation (a connection to one peer over the network) the time its steps spent in the network
// (proxy_ring.hpp), written to the run's folder by the recorder's thread (recorder.hpp). Every entry returns success
// but init, which fails (NCCL then runs without the plugin) when there is nowhere to write.
//
// Handles: a collective's slot; a kernel channel's is its collective's slot | 1; a proxy operation's slot; a proxy
// step's is its operation's slot | 2 | (step % 8) << 2 (slots are 64-byte aligned). A collective's and a proxy
// operation's slot are told apart by their magic.
#include <unistd.h>

#include <cstdint>
#include <cstring>

#include "clocks.hpp"
#include "profiler_abi.hpp"
#include "recorder.hpp"
#include "ring.hpp"

namespace fabricbench::profiler {
namespace {

constexpr int kMask = abi::kColl | abi::kKernelCh | abi::kProxyOp | abi::kProxyStep;
static_assert(alignof(Slot) == 64 && alignof(ProxySlot) == 64, "handles keep tags in a slot's low 6 bits");

std::uintptr_t bits(void* h) { return reinterpret_cast<std::uintptr_t>(h); }
void* channel_handle(Slot* s) { return reinterpret_cast<void*>(bits(s) | 1u); }
void* step_handle(ProxySlot* s, int step) {
  return reinterpret_cast<void*>(bits(s) | 2u | (static_cast<std::uintptr_t>(step) % ProxySlot::kSteps) << 2);
}
bool is_channel(void* h) { return bits(h) & 1u; }
bool is_step(void* h) { return bits(h) & 2u; }
unsigned step_of(void* h) { return static_cast<unsigned>(bits(h) >> 2) % ProxySlot::kSteps; }
template <typename T>
T* slot_of(void* h) {
  return reinterpret_cast<T*>(bits(h) & ~std::uintptr_t{63});
}
// Ours only if aligned as our slots are and marked as one (read as bytes: nothing is assumed of a foreign object).
template <typename T>
T* ours(void* p) {
  if (!p || bits(p) % alignof(T) != 0) return nullptr;
  std::uint32_t magic = 0;
  std::memcpy(&magic, p, sizeof magic);
  return magic == T::kMagic ? static_cast<T*>(p) : nullptr;
}

pid_t g_pid = 0;  // this process's: a proxy operation of another process's collective (PXN) is not linked to it

abi::Result init_ring(void** context, int* mask, std::uint64_t comm, int nranks, int api) {
  *context = nullptr;
  g_pid = ::getpid();
  auto* recorder = Recorder::get(api);
  if (!recorder) return abi::kInternalError;
  *context = recorder->add(comm, nranks, api);
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
  if (is_step(handle)) {
    slot_of<ProxySlot>(handle)->step_stop(step_of(handle), monotonic_ns());
  } else if (is_channel(handle)) {
    Slot* s = slot_of<Slot>(handle);
    if (s->ring->api() <= 3) s->channel_stop_time(static_cast<std::uint64_t>(monotonic_ns()));
    s->channel_end();
  } else if (Slot* s = ours<Slot>(handle)) {
    s->enqueued.store(true, std::memory_order_release);
  } else if (ProxySlot* p = ours<ProxySlot>(handle)) {
    p->stop(monotonic_ns());
  }
  return abi::kSuccess;
}

abi::Result record_state(void* handle, int state, abi::StateArgsV4* args) {
  if (!handle) return abi::kSuccess;
  if (is_step(handle))
    slot_of<ProxySlot>(handle)->step_state(step_of(handle), abi::in_network(state), args ? args->trans_size : 0,
                                           monotonic_ns());
  else if (is_channel(handle) && state == abi::kKernelChStop && args)
    slot_of<Slot>(handle)->channel_stop_time(args->kernel_ch_ptimer);
  return abi::kSuccess;
}

// v3's state arguments carry no step size.
abi::Result record_state_v3(void* handle, int state, abi::StateArgsV3*) {
  if (handle && is_step(handle))
    slot_of<ProxySlot>(handle)->step_state(step_of(handle), abi::in_network(state), 0, monotonic_ns());
  return abi::kSuccess;
}

// A kernel channel of one of our collectives starts at `t`: its handle, or none for a parent that is not ours.
void* start_channel(void* parent, std::uint64_t t) {
  Slot* s = ours<Slot>(parent);
  if (!s) return nullptr;
  s->channel_start(t);
  return channel_handle(s);
}

// A proxy operation: linked to its collective when that is this process's (its parent then is one of our slots).
void* start_proxy_op(Ring* ring, const abi::ProxyOp& op, int rank, void* parent) {
  Slot* coll = op.pid == g_pid ? ours<Slot>(parent) : nullptr;
  const std::uint64_t comm = coll ? coll->record.comm : ring->comm();
  const std::uint64_t seq = coll ? coll->record.seq : job::slow::ProxyRecord::kNoSeq;
  return ring->proxies()->open(
      {comm, seq, rank, op.peer, op.steps, op.chunk_size, op.channel, op.is_send != 0, ring->api() >= 4});
}

void* start_proxy_step(void* parent, int step) {
  ProxySlot* p = ours<ProxySlot>(parent);
  return p ? step_handle(p, step) : nullptr;
}

// v4 and v5 differ only in the descriptor's type field and init's arguments.
template <typename Descr>
abi::Result start_event(void* context, void** handle, Descr* d) {
  *handle = nullptr;
  auto* ring = static_cast<Ring*>(context);
  if (!ring || !d || ring->closed()) return abi::kSuccess;  // (an event after finalize: ignored)
  if (d->type == abi::kColl) {
    const auto& c = d->coll;
    *handle = ring->open({0, c.seq, c.count, c.func, c.datatype, c.algo, c.proto, d->rank, c.channels});
  } else if (d->type == abi::kKernelCh) {
    *handle = start_channel(d->parent, d->kernel_ch.ptimer);
  } else if (d->type == abi::kProxyOp) {
    *handle = start_proxy_op(ring, d->proxy_op, d->rank, d->parent);
  } else if (d->type == abi::kProxyStep) {
    *handle = start_proxy_step(d->parent, d->proxy_step.step);
  }
  return abi::kSuccess;
}

abi::Result start_event_v3(void* context, void** handle, abi::DescrV3* d) {
  *handle = nullptr;
  auto* ring = static_cast<Ring*>(context);
  if (!ring || !d || ring->closed()) return abi::kSuccess;  // (an event after finalize: ignored)
  if (d->type == abi::kColl) {
    const auto& c = d->coll;
    *handle = ring->open({c.comm_hash, c.seq, c.count, c.func, c.datatype, c.algo, c.proto, d->rank, c.max_channels});
  } else if (d->type == abi::kKernelCh) {
    *handle = start_channel(d->parent, static_cast<std::uint64_t>(monotonic_ns()));  // v3: no GPU timer
  } else if (d->type == abi::kProxyOp) {
    *handle = start_proxy_op(ring, d->proxy_op, d->rank, d->parent);
  } else if (d->type == abi::kProxyStep) {
    *handle = start_proxy_step(d->parent, d->proxy_step.step);
  }
  return abi::kSuccess;
}

abi::Result init_v6(void** context, std::uint64_t comm, int* mask, const char*, int, int nranks, int, abi::Logger) {
  return init_ring(context, mask, comm, nranks, 6);
}
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
__attribute__((visibility("default"))) extern const fp::abi::ProfilerV6 ncclProfiler_v6;
__attribute__((visibility("default"))) extern const fp::abi::ProfilerV5 ncclProfiler_v5;
__attribute__((visibility("default"))) extern const fp::abi::ProfilerV4 ncclProfiler_v4;
__attribute__((visibility("default"))) extern const fp::abi::ProfilerV3 ncclProfiler_v3;

const fp::abi::ProfilerV6 ncclProfiler_v6 = {"fabricbench",  fp::init_v6,      fp::start_event<fp::abi::DescrV6>,
                                             fp::stop_event, fp::record_state, fp::finalize};
const fp::abi::ProfilerV5 ncclProfiler_v5 = {"fabricbench",  fp::init_v5,      fp::start_event<fp::abi::DescrV5>,
                                             fp::stop_event, fp::record_state, fp::finalize};
const fp::abi::ProfilerV4 ncclProfiler_v4 = {"fabricbench",  fp::init_v4,      fp::start_event<fp::abi::DescrV4>,
                                             fp::stop_event, fp::record_state, fp::finalize};
const fp::abi::ProfilerV3 ncclProfiler_v3 = {"fabricbench",  fp::init_v3,         fp::start_event_v3,
                                             fp::stop_event, fp::record_state_v3, fp::finalize};
}
