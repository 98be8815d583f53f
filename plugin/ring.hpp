// One communicator's collectives as the NCCL profiler plugin sees them: a ring of slots (bounded memory), each slot
// one collective from its start event to the stop of its last kernel channel. NCCL's threads only claim slots and
// update atomics (never a lock, a clock read or a write to a file: a v3 channel's host time excepted); the plugin's
// writer thread (recorder.hpp) takes the finished ones out and frees their slots. The recorder owns every ring to the
// process's end: a finalized communicator's is closed, then given to a new communicator a minute later.
#pragma once
#include <atomic>
#include <cstdint>
#include <memory>
#include <vector>

#include "fabricbench/job/slow_record.hpp"
#include "proxy_ring.hpp"

namespace fabricbench::profiler {

class Ring;

struct alignas(64) Slot {
  static constexpr std::uint32_t kMagic = 0x46425331;  // a parent pointer that is not one of ours is ignored
  enum State : std::uint32_t { kFree, kClaiming, kOpen };
  std::uint32_t magic = kMagic;
  std::atomic<std::uint32_t> state{kFree};
  std::atomic<std::uint32_t> channels_started{0};
  std::atomic<std::uint32_t> channels_open{0};
  std::atomic<bool> enqueued{false};  // the collective's own stop event came (NCCL enqueued it)
  std::atomic<std::uint64_t> gpu_start{UINT64_MAX};
  std::atomic<std::uint64_t> gpu_stop{0};
  job::slow::Record record{};  // written by the claimer before state becomes kOpen
  Ring* ring = nullptr;
  // The writer's own: how many channels had started when it last looked, and for how many looks nothing changed.
  std::uint32_t seen_started = 0, quiet_looks = 0;

  void channel_start(std::uint64_t t);
  void channel_stop_time(std::uint64_t t);
  void channel_end() { channels_open.fetch_sub(1, std::memory_order_acq_rel); }
};

// What NCCL says of a collective at its start event.
struct CollectiveStart {
  std::uint64_t comm, seq, count;
  const char* func;
  const char* datatype;
  const char* algo;
  const char* proto;
  int rank;
  std::uint8_t channels;
};

class Ring {
 public:
  static constexpr std::size_t kSlots = 1024;
  // `api`: the profiler interface NCCL chose; with 3, channel times are the host's CLOCK_MONOTONIC.
  Ring(std::uint64_t comm, int nranks, int api);
  ~Ring();
  Ring(const Ring&) = delete;
  Ring& operator=(const Ring&) = delete;
  // A slot for the collective, or nullptr when every slot is still busy (the collective is counted as dropped).
  Slot* open(const CollectiveStart& c);
  // The communicator's proxy operations: made at the first (by whichever of NCCL's threads comes first).
  ProxyRing* proxies();
  // Called by the writer alone: appends the collectives that finished (every kernel channel stopped; a channel
  // count NCCL did not give exactly is settled after a look without change) or that waited 30 s (kIncomplete), and
  // frees their slots, then the proxy operations that stopped. `all`: every collective still open goes out as it is
  // (the communicator ends).
  void harvest(std::vector<job::slow::Record>& out, std::int64_t now_ns, bool all);
  std::uint64_t comm() const { return comm_; }
  int api() const { return api_; }
  std::uint64_t dropped() const;
  // Its communicator was finalized: no new collective or proxy operation is taken (an event NCCL sends after
  // finalize is ignored; the ring's memory stays, the recorder's, so a late event never touches freed memory).
  void close() { closed_.store(true, std::memory_order_release); }
  bool closed() const { return closed_.load(std::memory_order_acquire); }
  // The recorder gives a closed ring, long harvested, to a new communicator (the writer's lock held).
  void reopen(std::uint64_t comm, int nranks);

 private:
  std::atomic<bool> closed_{false};
  std::unique_ptr<Slot[]> slots_;
  std::atomic<std::uint64_t> next_{0};
  std::atomic<std::uint64_t> dropped_{0};
  std::atomic<ProxyRing*> proxies_{nullptr};
  std::uint64_t comm_;
  int nranks_, api_;
};

}  // namespace fabricbench::profiler
