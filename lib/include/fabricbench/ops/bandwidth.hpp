// The formulas of the peer tools, in one place and unit-tested on hand-computed cases.
// OSU: latency is half the round trip; bandwidth counts every message of the window (and of both directions
// for bibw) over the sender's elapsed time; MB/s is 1e6 B/s.
#pragma once
#include <cstdint>

namespace fabricbench::ops {

// One-way latency in microseconds from `iterations` round trips that took `elapsed_s` in all.
inline double pingpong_latency_us(double elapsed_s, std::int64_t iterations) {
  return elapsed_s * 1e6 / (2.0 * static_cast<double>(iterations));
}

// Bytes of `iterations` windows of `window` messages of `bytes`, in `directions` directions, per second, in MB/s.
inline double window_bandwidth_mbps(std::uint64_t bytes, int window, std::int64_t iterations, int directions,
                                    double elapsed_s) {
  return static_cast<double>(bytes) * window * static_cast<double>(iterations) * directions / elapsed_s / 1e6;
}

// Messages per second, in millions (OSU's message rate divided by 1e6).
inline double message_rate_mps(int window, std::int64_t iterations, int directions, double elapsed_s) {
  return static_cast<double>(window) * static_cast<double>(iterations) * directions / elapsed_s / 1e6;
}

}  // namespace fabricbench::ops
