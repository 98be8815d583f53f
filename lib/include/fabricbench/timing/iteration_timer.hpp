// Per-iteration timestamps cheap enough for sub-microsecond loops. On x86 a lap reads the TSC (~10 ns here,
// against ~24 ns for steady_clock); the TSC is scaled by the steady_clock span of the same loop, so the total
// is exactly the steady-clock elapsed time, as OSU and nccl-tests measure it.
#pragma once
#include <chrono>
#include <cstdint>
#include <vector>

#if defined(__x86_64__) || defined(__i386__)
#include <x86intrin.h>
#endif

namespace fabricbench::timing {

class IterationTimer {
 public:
  explicit IterationTimer(std::size_t iterations) : ticks_(iterations + 1) {}

  void start() {
    laps_ = 0;
    begin_ = std::chrono::steady_clock::now();
    ticks_[0] = now_ticks();
  }
  // At most `iterations` laps between start() and stop(): no bounds check in the hot loop.
  void lap() noexcept { ticks_[++laps_] = now_ticks(); }
  void stop() {
    end_ticks_ = now_ticks();
    end_ = std::chrono::steady_clock::now();
  }

  double elapsed_s() const { return std::chrono::duration<double>(end_ - begin_).count(); }
  // Duration of each lap in microseconds, scaled so that they add up to the steady-clock span of the laps.
  std::vector<double> laps_us() const;

  // Raw stamps, for loops that time events other than laps (fabric-verbs: each post and each completion), and the
  // seconds one tick is worth over this timer's start()..stop() span.
  static std::uint64_t ticks() noexcept { return now_ticks(); }
  double seconds_per_tick() const {
    const auto span = end_ticks_ - ticks_[0];
    return span > 0 ? elapsed_s() / static_cast<double>(span) : 0.0;
  }

 private:
  static std::uint64_t now_ticks() noexcept {
#if defined(__x86_64__) || defined(__i386__)
    return __rdtsc();
#else
    return static_cast<std::uint64_t>(std::chrono::steady_clock::now().time_since_epoch().count());
#endif
  }

  std::vector<std::uint64_t> ticks_;
  std::size_t laps_ = 0;
  std::uint64_t end_ticks_ = 0;
  std::chrono::steady_clock::time_point begin_, end_;
};

}  // namespace fabricbench::timing
