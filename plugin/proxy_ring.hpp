// One communicator's proxy operations as the NCCL profiler plugin sees them (NCCL's network transport only: its
// proxy thread posts each step of a connection to the network and tests for its completion): a ring of slots, each
// one operation (a collective's connection to one peer on one channel) from its start to its stop, with the time at
// least one of its steps was in the network (up to 8 are in flight at once: their times are not summed, which would
// count the same wall time several times). Only NCCL's proxy thread writes a slot while it is open (the steps of one
// operation come from one thread); the writer thread takes the stopped ones out. Made at the communicator's first
// proxy operation: a job whose traffic stays on NVLink or shared memory never allocates it.
#pragma once
#include <atomic>
#include <cstdint>
#include <memory>
#include <vector>

#include "fabricbench/job/slow_record.hpp"

namespace fabricbench::profiler {

struct alignas(64) ProxySlot {
  static constexpr std::uint32_t kMagic = 0x46425032;  // tells a proxy operation's handle from a collective's
  static constexpr unsigned kSteps = 8;                // NCCL_STEPS: steps in flight on one connection
  enum State : std::uint32_t { kFree, kOpen, kStopped };
  std::uint32_t magic = kMagic;
  std::atomic<std::uint32_t> state{kFree};
  job::slow::ProxyRecord record{};
  std::int64_t start_mono = 0;
  std::uint32_t chunk = 0;  // bytes a step carries at most (v3 has no step sizes)
  bool sized_steps = false;
  std::uint32_t in_network = 0;  // steps in the network now
  std::int64_t busy_since = 0;   // since when at least one is
  struct Step {
    bool in_network = false;
    std::uint64_t size = 0;  // the step's size as NCCL last gave it
  } steps[kSteps];

  // A step's state changed at `now`: into the network (`net`), or out of it (any later state, or its stop).
  void step_state(unsigned step, bool net, std::uint64_t size, std::int64_t now);
  void step_stop(unsigned step, std::int64_t now);
  void stop(std::int64_t now);
};

// What NCCL says of a proxy operation at its start.
struct ProxyStart {
  std::uint64_t comm, seq;
  int rank, peer, steps, chunk;
  std::uint8_t channel;
  bool is_send, sized_steps;
};

class ProxyRing {
 public:
  static constexpr std::size_t kSlots = 2048;
  ProxyRing();
  // A slot, or nullptr when it is still busy (the operation is counted as dropped).
  ProxySlot* open(const ProxyStart& p);
  // The writer's: stopped operations out, their slots freed (one still open at the end is left: its times are
  // partial and its writer may still be at it).
  void harvest(std::vector<job::slow::Record>& out);
  std::uint64_t dropped() const { return dropped_.load(std::memory_order_relaxed); }

 private:
  std::unique_ptr<ProxySlot[]> slots_;
  std::atomic<std::uint64_t> next_{0};
  std::atomic<std::uint64_t> dropped_{0};
};

}  // namespace fabricbench::profiler
