// The plugin's two clocks, in nanoseconds: CLOCK_MONOTONIC for durations on one host (v3 channels' times, proxy
// steps), CLOCK_REALTIME to place a record in time (job/slow_record.hpp's host_ns).
#pragma once
#include <cstdint>
#include <ctime>

namespace fabricbench::profiler {

inline std::int64_t clock_ns(clockid_t clock) {
  timespec t{};
  ::clock_gettime(clock, &t);
  return static_cast<std::int64_t>(t.tv_sec) * 1000000000 + t.tv_nsec;
}
inline std::int64_t monotonic_ns() { return clock_ns(CLOCK_MONOTONIC); }
inline std::int64_t realtime_ns() { return clock_ns(CLOCK_REALTIME); }

}  // namespace fabricbench::profiler
