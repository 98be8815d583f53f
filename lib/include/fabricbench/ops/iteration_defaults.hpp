// How many timed and warm-up iterations a test runs when the user gives none: one type for every tool, each
// test table entry (p2p tests, collectives, sweep metrics) holding its own values.
#pragma once
#include <cstdint>

namespace fabricbench::ops {

struct IterationDefaults {
  int small_iterations, large_iterations, small_warmup, large_warmup;
  std::uint64_t large_from_bytes;  // OSU's LARGE_MESSAGE_SIZE: sizes above use the large counts

  // The same counts at every size.
  static constexpr IterationDefaults fixed(int iterations, int warmup) {
    return {iterations, iterations, warmup, warmup, 0};
  }
  // `requested`: --iters (0: not given) and --warmup (-1: not given).
  int iterations(std::uint64_t bytes, int requested) const {
    return requested > 0 ? requested : bytes > large_from_bytes ? large_iterations : small_iterations;
  }
  int warmup(std::uint64_t bytes, int requested) const {
    return requested >= 0 ? requested : bytes > large_from_bytes ? large_warmup : small_warmup;
  }
};

// nccl-tests' defaults (-n 20 -w 5), for every collective.
inline constexpr IterationDefaults nccl_tests_iterations = IterationDefaults::fixed(20, 5);

}  // namespace fabricbench::ops
