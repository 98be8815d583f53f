// The error counters of a host's links, read before and after each measurement so that a row says whether the links
// it used saw errors while it ran: the RDMA port error counters ibcheckerrors reads (summed), transmit wait
// (congestion), and NVLink replay/recovery/CRC counters where NVML has them. Read outside timed regions only.
#pragma once
#include <cmath>
#include <memory>
#include <string>
#include <vector>

#include "fabricbench/facts/gpu_info.hpp"
#include "fabricbench/facts/host_files.hpp"
#include "fabricbench/results/table.hpp"

namespace fabricbench::runtime {
class Communicator;
}

namespace fabricbench::facts {

// NaN where this host has no such counters (no RDMA port with counters/, no NVML).
struct CounterReading {
  double port_errors = NAN, xmit_wait = NAN, nvlink_errors = NAN;
  CounterReading operator-(const CounterReading& before) const {
    return {port_errors - before.port_errors, xmit_wait - before.xmit_wait, nvlink_errors - before.nvlink_errors};
  }
  // Sums of readings of several hosts: NaN only where none had the counter.
  CounterReading& operator+=(const CounterReading& other);
};

class LinkCounters {
 public:
  LinkCounters() = default;  // reads nothing: every value NaN
  // The Active ports of `host` (or only `ports`, "rxe0/1"), from FABRICBENCH_TEST_SYSROOT when set. With `nvlink`,
  // NVML is loaded (where the host has NVIDIA GPUs) for the NVLink counters.
  LinkCounters(const std::string& host, bool nvlink, std::vector<std::string> ports = {});
  ~LinkCounters();
  LinkCounters(LinkCounters&&) noexcept;
  LinkCounters& operator=(LinkCounters&&) noexcept;
  CounterReading read() const;

 private:
  HostFiles files_;
  std::vector<std::string> port_dirs_;
  std::unique_ptr<GpuInfo> gpus_;
};

// The three columns every measuring table adds, and how a delta fills them.
std::vector<results::Column> counter_columns();
void set_counters(results::Row& row, const CounterReading& delta);

// One delta per host of `comm` summed on `root`: ranks with `speaks_for_host` contribute (one per host), the others
// send nothing that counts. Collective over `comm`.
CounterReading sum_over_hosts(const runtime::Communicator& comm, bool speaks_for_host, const CounterReading& mine, int root);

}  // namespace fabricbench::facts
