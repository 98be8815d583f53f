#include <fmt/format.h>

#include "fabricbench/error.hpp"
#include "fabricbench/ops/coll_backend.hpp"
#include "fabricbench/timing/iteration_timer.hpp"

namespace fabricbench::ops {

CaseTiming CollBackend::time_on_device(const CollCase&, const TimingPlan&) {
  throw Error::usage(fmt::format("the {} back end has no device timing (--per-iter/--graph need --backend nccl)", name()));
}

CaseTiming time_case(CollBackend& backend, const CollCase& c, const TimingPlan& plan, const runtime::Communicator& world) {
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
  world.barrier();
  timer.start();
  for (int i = 0; i < iterations; ++i) {
    backend.launch(c);
    if (mode == TimingMode::blocking) backend.wait();
    timer.lap();
  }
  backend.wait();
  timer.stop();
  CaseTiming t;
  t.seconds_per_op = timer.elapsed_s() / iterations;
  if (laps) t.laps_us = timer.laps_us();
  return t;
}

}  // namespace fabricbench::ops

#ifndef FABRICBENCH_HAVE_NCCL
namespace fabricbench::ops {
std::unique_ptr<CollBackend> make_nccl_backend(const runtime::Communicator&, int) {
  throw Error::usage("--backend nccl: this build has no NCCL");
}
}  // namespace fabricbench::ops
#endif
