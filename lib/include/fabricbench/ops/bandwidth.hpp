// The formulas of the peer tools, in one place and unit-tested on hand-computed cases.
// OSU: latency is half the round trip; bandwidth counts every message of the window (and of both directions
// for bibw) over the sender's elapsed time; MB/s is 1e6 B/s. nccl-tests: algbw = bytes / time in 1e9 B/s,
// busbw = algbw x the operation's factor.
// A bandwidth or rate from no time or from no bytes is no measurement: these throw Error::internal (exit 3)
// rather than hand a figure that no link can carry to the outputs.
#pragma once
#include <cmath>
#include <cstdint>
#include <string>

#include "fabricbench/error.hpp"

namespace fabricbench::ops {

namespace detail {
inline void require_measured(double elapsed_s, double amount, const char* what) {
  if (!(elapsed_s > 0) || !std::isfinite(elapsed_s))
    throw Error::internal(std::string(what) + " from an elapsed time of " + std::to_string(elapsed_s) + " s");
  if (!(amount > 0)) throw Error::internal(std::string(what) + " of nothing moved (0 bytes or messages)");
}
}  // namespace detail

// One-way latency in microseconds from `iterations` round trips that took `elapsed_s` in all.
inline double pingpong_latency_us(double elapsed_s, std::int64_t iterations) {
  detail::require_measured(elapsed_s, static_cast<double>(iterations), "a latency");
  return elapsed_s * 1e6 / (2.0 * static_cast<double>(iterations));
}

// Bytes of `iterations` windows of `window` messages of `bytes`, in `directions` directions, per second, in MB/s.
inline double window_bandwidth_mbps(std::uint64_t bytes, int window, std::int64_t iterations, int directions,
                                    double elapsed_s) {
  const double moved = static_cast<double>(bytes) * window * static_cast<double>(iterations) * directions;
  detail::require_measured(elapsed_s, moved, "a bandwidth");
  return moved / elapsed_s / 1e6;
}

// Messages per second, in millions (OSU's message rate divided by 1e6).
inline double message_rate_mps(int window, std::int64_t iterations, int directions, double elapsed_s) {
  const double messages = static_cast<double>(window) * static_cast<double>(iterations) * directions;
  detail::require_measured(elapsed_s, messages, "a message rate");
  return messages / elapsed_s / 1e6;
}

// nccl-tests' algorithm bandwidth: bytes / time, in GB/s (1e9 B/s).
inline double algbw_gbps(std::uint64_t bytes, double seconds) {
  detail::require_measured(seconds, static_cast<double>(bytes), "a bandwidth");
  return static_cast<double>(bytes) / seconds / 1e9;
}

}  // namespace fabricbench::ops
