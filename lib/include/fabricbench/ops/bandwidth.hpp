// The formulas of the peer tools, in one place and unit-tested on hand-computed cases.
// OSU: latency is half the round trip; bandwidth counts every message of the window (and of both directions
// for bibw) over the sender's elapsed time; MB/s is 1e6 B/s. nccl-tests: algbw = bytes / time in 1e9 B/s,
// busbw = algbw x the operation's factor. perftest: see the perftest section below.
// A bandwidth or rate from no time or from no bytes is no measurement: these throw Error::internal (exit 3)
// rather than hand a figure that no link can carry to the outputs.
#pragma once
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

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

// ---- perftest (ib_*_bw, ib_*_lat; read from perftest 4.5-0.17, Debian 12's, and unchanged in 6.x) ----
// perftest's "MB/sec" is 2^20 bytes per second; --report_gbits is 1e9 bits per second.
inline constexpr double perftest_mb = 1048576.0;

struct PerftestBandwidth {
  double avg_mibps = 0, peak_mibps = 0, avg_gbitps = 0, peak_gbitps = 0, msg_rate_mps = 0;
};

// One side's figures of a bandwidth test: `posted_s[k]` is when message k was posted and `completed_s[k]` when its
// completion was polled, for the k = cq_mod-1, 2 cq_mod-1, ... and the last (the only ones signaled; other entries
// are ignored); messages = iterations x QPs. Average: bytes x messages over last completion - first post. Peak
// (computed when `peak`): the best average over any run of messages from a post to a later signaled completion,
// perftest's opt_delta. Message rate in millions per second.
inline PerftestBandwidth perftest_bandwidth(std::uint64_t bytes, const std::vector<double>& posted_s,
                                            const std::vector<double>& completed_s, int cq_mod, bool peak) {
  const std::size_t n = posted_s.size();
  if (n == 0 || completed_s.size() != n || cq_mod < 1) throw Error::internal("a perftest bandwidth of no messages");
  const double span = completed_s[n - 1] - posted_s[0];
  detail::require_measured(span, static_cast<double>(bytes) * static_cast<double>(n), "a bandwidth");
  PerftestBandwidth out;
  const double moved = static_cast<double>(bytes) * static_cast<double>(n);
  out.avg_mibps = moved / span / perftest_mb;
  out.avg_gbitps = moved * 8 / span / 1e9;
  out.msg_rate_mps = static_cast<double>(n) / span / 1e6;
  if (peak) {
    // perftest starts from tcompleted[0] - tposted[0], which with cq_mod > 1 is an unset stamp and wraps to a huge
    // unsigned value: in effect no start. Only the signaled j enter.
    double best = INFINITY;
    for (std::size_t i = 0; i < n; ++i)
      for (std::size_t j = i; j < n; ++j) {
        if ((j + 1) % static_cast<std::size_t>(cq_mod) != 0 && j != n - 1) continue;
        best = std::min(best, (completed_s[j] - posted_s[i]) / static_cast<double>(j - i + 1));
      }
    if (best > 0 && std::isfinite(best)) {
      out.peak_mibps = static_cast<double>(bytes) / best / perftest_mb;
      out.peak_gbitps = static_cast<double>(bytes) * 8 / best / 1e9;
    }
  }
  return out;
}

// perftest turns the peak off above this many messages (it is quadratic in them).
inline constexpr std::size_t perftest_peak_limit = 20000;

struct PerftestLatency {
  double min_us = 0, max_us = 0, typical_us = 0, avg_us = 0, stdev_us = 0, p99_us = 0, p999_us = 0;
  std::size_t count = 0;  // deltas the statistics cover
};

// perftest's latency statistics from the round trips between consecutive posts, `divisor` 2 for a ping-pong (half
// the round trip) and 1 for read and atomics. The two largest round trips are dropped (LAT_MEASURE_TAIL); typical
// is the median of the rest; 99% and 99.9% are the entries at ceil(q n) of the sorted rest; max is the largest
// kept. stdev is the population standard deviation of the kept values (perftest truncates each deviation to
// whole microseconds before squaring, which reads 0 for sub-microsecond jitter; fabricbench does not).
inline PerftestLatency perftest_latency(std::vector<double> round_trips_us, int divisor) {
  if (round_trips_us.size() < 3) throw Error::internal("perftest latency statistics need at least 3 round trips");
  std::sort(round_trips_us.begin(), round_trips_us.end());
  const std::size_t n = round_trips_us.size() - 2;
  const auto at = [&](std::size_t i) { return round_trips_us[std::min(i, round_trips_us.size() - 1)] / divisor; };
  PerftestLatency out;
  out.count = n;
  out.min_us = at(0);
  out.max_us = at(n);
  out.typical_us = n % 2 == 0 ? (at(n / 2) + at(n / 2 - 1)) / 2 : at(n / 2);
  double sum = 0;
  for (std::size_t i = 0; i < n; ++i) sum += at(i);
  out.avg_us = sum / static_cast<double>(n);
  double squares = 0;
  for (std::size_t i = 0; i < n; ++i) squares += (at(i) - out.avg_us) * (at(i) - out.avg_us);
  out.stdev_us = std::sqrt(squares / static_cast<double>(n));
  out.p99_us = at(static_cast<std::size_t>(std::ceil(0.99 * static_cast<double>(n))));
  out.p999_us = at(static_cast<std::size_t>(std::ceil(0.999 * static_cast<double>(n))));
  return out;
}

}  // namespace fabricbench::ops
