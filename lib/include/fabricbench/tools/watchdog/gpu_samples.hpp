// --slow's host sampler's view of the GPUs the job's ranks use (host_sampler.hpp takes it as a function), through
// facts' NVML (gpu_info.hpp, the driver's library loaded at run time): for each GPU a rank's header names by its bus
// id, once a second, its SM clock against its maximum and the clock event reasons, its power and temperature, the
// compute processes on it (pid, program, memory), the XIDs reported for it since the sampler began, and every tenth
// sample the counters that only rise (ECC errors, remapped rows, NVLink errors). XIDs come from NVML's event API;
// where that cannot be had, from the kernel log's "NVRM: Xid (PCI:...): N" lines where this user may read it.
#pragma once
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "fabricbench/facts/gpu_info.hpp"
#include "fabricbench/facts/host_files.hpp"
#include "fabricbench/job/slow_record.hpp"

namespace fabricbench::tools::watchdog {

// A kernel log line of the NVIDIA driver's XID report ("NVRM: Xid (PCI:0000:1b:00): 79, pid=..., ..."): its GPU's
// pci_key() and the XID's number; empty for any other line.
std::optional<std::pair<std::uint32_t, std::uint32_t>> parse_xid_line(const std::string& line);

class GpuSamples {
 public:
  // `gpus`: facts::load_nvml()'s (nullptr where it could not: `why` says why); `files`: where /proc is read (the
  // processes' programs); `kmsg`: the kernel log, read only where NVML's events cannot be had.
  GpuSamples(std::unique_ptr<facts::GpuInfo> gpus, std::string why, facts::HostFiles files,
             const std::string& kmsg = "/dev/kmsg");
  ~GpuSamples();
  GpuSamples(const GpuSamples&) = delete;
  GpuSamples& operator=(const GpuSamples&) = delete;
  bool available() const { return gpus_ != nullptr; }
  const std::string& why() const { return why_; }
  const std::string& xid_source() const { return xid_source_; }  // "NVML's events", "the kernel log", or why none
  // A GpuSample for each GPU of `bus_ids` NVML knows, and a GpuProcess for each compute process on it (`own`: this
  // host's ranks, marked); records with their flags set, at `now_ns`.
  std::vector<job::slow::Record> sample(const std::vector<std::string>& bus_ids, const std::set<int>& own,
                                        std::int64_t now_ns);
  static constexpr int kCountersEvery = 10;  // samples between two readings of the error counters

 private:
  struct Gpu {
    int index = -1;
    std::uint16_t sm_max_mhz = 0;  // asked once
    std::uint32_t xids = 0, last_xid = 0, remapped = 0, nvlink = 0;
    std::uint64_t ecc = 0;
  };
  void take_xids();
  void read_counters(Gpu& g) const;
  std::string program(int pid) const;
  std::unique_ptr<facts::GpuInfo> gpus_;
  std::string why_, xid_source_;
  facts::HostFiles files_;
  std::map<std::uint32_t, Gpu> by_pci_;  // every GPU NVML knows, by pci_key()
  int kmsg_ = -1;                        // the kernel log, when XIDs come from it
  std::uint64_t samples_ = 0;
};

}  // namespace fabricbench::tools::watchdog
