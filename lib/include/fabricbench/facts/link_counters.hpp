// The error counters of a host's links, read before and after each measurement so that a row says whether the links
// it used saw errors while it ran: the RDMA port error counters ibcheckerrors reads (summed), transmit wait
// (congestion), and NVLink replay/recovery/CRC counters where NVML has them. Read outside timed regions only.
#pragma once
#include <cmath>
#include <memory>
#include <string>
#include <utility>
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

// Who reads which links, the one policy of every tool and the sweep: among the ranks of a communicator, the first
// rank of each host that watches the same links reads them and the others read nothing (NaN), so that a sum over
// ranks counts each host's links once. fabric-p2p and fabric-sweep watch all of a host's Active ports (one reader per
// host, NVLink too where GPU memory or NCCL moves the data); fabric-verbs watches the port each rank opened (one
// reader per host and port).
class LinkWatch {
 public:
  LinkWatch() = default;  // watches nothing: every reading NaN
  // Collective over `comm`.
  LinkWatch(const runtime::Communicator& comm, const std::string& host, bool nvlink,
            std::vector<std::string> ports = {});
  bool reads() const { return reads_; }
  CounterReading read() const { return counters_.read(); }
  // `work()`'s result and the growth of the links while it ran (NaN on ranks that do not read).
  template <typename Work>
  auto around(Work&& work) const {
    const auto before = read();
    auto value = work();
    return std::make_pair(std::move(value), read() - before);
  }
  // The readers' growth summed on `root`. Collective over `comm`.
  static CounterReading sum(const runtime::Communicator& comm, const CounterReading& mine, int root);

 private:
  LinkCounters counters_;
  bool reads_ = false;
};

// The election, pure: for each rank (in order) whether it is the first with its key ("host" or "host port").
std::vector<bool> first_of_each(const std::vector<std::string>& keys);

}  // namespace fabricbench::facts
