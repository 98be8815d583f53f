#include "fabricbench/ops/coll_backend.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <climits>
#include <cmath>

#include "fabricbench/cli/byte_size.hpp"
#include "fabricbench/error.hpp"
#include "fabricbench/memory/buffer.hpp"
#include "fabricbench/ops/p2p_exchange.hpp"
#include "fabricbench/timing/iteration_timer.hpp"
#include "fabricbench/timing/timed_blocks.hpp"

namespace fabricbench::ops {

CaseTiming CollBackend::time_on_device(const CollCase&, const TimingPlan&) {
  throw Error::usage(
      fmt::format("the {} back end has no device timing (--per-iter/--graph need --backend nccl)", name()));
}

CaseTiming time_case(CollBackend& backend, const CollCase& c, const TimingPlan& plan,
                     const runtime::Communicator& world) {
  const auto mode = plan.mode;
  const int iterations = plan.iterations;
  for (int i = 0; i < plan.warmup; ++i) backend.launch(c);
  backend.wait();
  if (mode == TimingMode::events || mode == TimingMode::graph) {
    world.barrier();
    return backend.time_on_device(c, plan);
  }
  // With a synchronous library every lap is one complete operation; otherwise only with --blocking.
  const bool laps = backend.synchronous() || mode == TimingMode::blocking;
  timing::IterationTimer timer(static_cast<std::size_t>(iterations));
  timing::TimedBlocks blocks(plan.min_time_s);
  CaseTiming t;
  for (int b = 0; b < blocks.count(); ++b) {
    world.barrier();
    timer.start();
    for (int i = 0; i < iterations; ++i) {
      backend.launch(c);
      if (mode == TimingMode::blocking) backend.wait();
      timer.lap();
    }
    backend.wait();
    timer.stop();
    blocks.add(timer.elapsed_s() / iterations);
    if (laps) {
      const auto mine = timer.laps_us();
      t.laps_us.insert(t.laps_us.end(), mine.begin(), mine.end());
    }
    // Rank 0's first block sets the count for every rank (each block starts with a barrier).
    if (blocks.deciding()) blocks.decide(world.broadcast_value(timer.elapsed_s(), 0));
  }
  t.seconds_per_op = blocks.median();
  t.blocks = blocks.blocks();
  t.spread = blocks.spread();
  return t;
}

CaseResult run_case(CollBackend& backend, const CollCase& c, const TimingPlan& plan, const runtime::Communicator& comm,
                    bool check, bool flip_byte) {
  CaseResult result;
  backend.prepare(c);
  result.timing = time_case(backend, c, plan, comm);
  if (check) {
    backend.prepare(c);
    backend.launch(c);
    backend.wait();
    if (flip_byte) backend.flip_output_byte(c);
    result.wrong = backend.count_wrong(c);
  }
  return result;
}

std::string_view to_string(BackendKind kind) { return cli::choice_name(kBackendKinds, kind); }

PairMeasurement CollBackend::exchange(const P2PTest&, const Exchanger&) {
  throw Error::internal(name() + " back end: point-to-point between GPUs is NCCL's only");
}

PairMeasurement CollBackend::shift_steps(const Exchanger&, CollBackend&, ShiftLanes) {
  throw Error::internal(name() + " back end: point-to-point between GPUs is NCCL's only");
}

BackendKind choose_backend(BackendChoice choice, std::string_view option) {
#ifdef FABRICBENCH_HAVE_NCCL
  const bool nccl_built = true;
#else
  const bool nccl_built = false;
#endif
  switch (choice) {
    case BackendChoice::automatic:
      return nccl_built && memory::unavailable_reason(memory::MemoryKind::device).empty() ? BackendKind::nccl
                                                                                          : BackendKind::mpi;
    case BackendChoice::mpi:
      return BackendKind::mpi;
    case BackendChoice::nccl:
      break;
  }
  if (!nccl_built)
    throw Error::usage(
        fmt::format("{} nccl: this build has no NCCL (FABRICBENCH_CUDA=OFF or NCCL not found); "
                    "allowed here: auto, mpi",
                    option));
  return BackendKind::nccl;
}

std::unique_ptr<CollBackend> make_backend(BackendKind kind, const runtime::Communicator& comm, int gpu,
                                          bool device_memory, bool abortable) {
  return kind == BackendKind::nccl ? make_nccl_backend(comm, gpu, abortable) : make_mpi_backend(comm, device_memory);
}

void require_mpi_counts(const std::vector<const CollectiveOp*>& ops, const std::vector<DataType>& types,
                        std::uint64_t max_bytes, int nranks, std::string_view option) {
  for (const auto* op : ops)
    for (const auto t : types) {
      const auto ts = static_cast<std::uint64_t>(type_size(t));
      if (op->counts(max_bytes / ts, nranks).param <= static_cast<std::uint64_t>(INT_MAX)) continue;
      // The largest size whose count still fits: counts grow with the size, so halve until it does.
      std::uint64_t fits = max_bytes;
      while (fits > 0 && op->counts(fits / ts, nranks).param > static_cast<std::uint64_t>(INT_MAX)) fits /= 2;
      throw Error::usage(
          fmt::format("{} {}: {} {} passes {} elements per call and MPI's counts stop at {} (an int); "
                      "use at most {} with --backend mpi",
                      option, cli::format_byte_size(max_bytes), op->name, to_string(t),
                      op->counts(max_bytes / ts, nranks).param, INT_MAX, cli::format_byte_size(fits)));
    }
}

}  // namespace fabricbench::ops

#ifndef FABRICBENCH_HAVE_NCCL
namespace fabricbench::ops {
std::unique_ptr<CollBackend> make_nccl_backend(const runtime::Communicator&, int, bool) {
  throw Error::usage("--backend nccl: this build has no NCCL");
}
std::unique_ptr<CommSplitter> make_nccl_splitter(const runtime::Communicator&, int, bool, double) {
  throw SplitGivenUp("this build has no NCCL");
}
}  // namespace fabricbench::ops
#endif
