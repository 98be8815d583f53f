// The proof of the data path with rails: while a round's tests ran, each rank read the byte counters of its rail's
// NIC (the rail map's, else the one it was given); rank 0 holds them beside what each rail's tests moved. A rail
// whose NIC carried less than half of its tests' bytes sent them elsewhere: by the NIC of another rail that carried
// that much more than its own tests ("rail 1 traffic of node7 left by mlx5_0"), or by none that we read. Two rails
// of one host given the same NIC is a finding too. Pure: unit-tested with made-up readings.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "fabricbench/sweep/verdict.hpp"

namespace fabricbench::sweep {

struct NicTraffic {
  std::int32_t round = 0, host = 0, rail = 0;
  double bytes = 0;    // what the rail's NIC counters grew by during the round's tests (NaN: no counters)
  double payload = 0;  // what this rank's tests moved through it (timed part, sent + received)
};

// `nics`: per host * rails + rail, the NIC each rank read ("" unknown).
std::vector<Verdict> check_data_path(const std::vector<NicTraffic>& traffic, const Fabric& fabric,
                                     const std::vector<std::string>& nics);

}  // namespace fabricbench::sweep
