// The GPUs of this host as NVML shows them, for fabric-watchdog --slow's host sampler (host_sampler.hpp): each GPU a
// rank uses, by its bus id, once a second: its SM clock against its maximum and why it is held (NVML's clock event
// reasons), the compute processes on it (pid, program, memory), the XID events reported for it, its ECC errors,
// remapped rows and NVLink error counters (every tenth sample: they are counters that only rise).
//
// NVML is the driver's library (libnvidia-ml.so.1), loaded at run time: a host without the driver has none, and the
// watchdog runs there as before, its GPUs unsampled. Its functions are declared here from NVML's documented
// interface (no header of the toolkit is needed). XIDs come from NVML's event API; where that cannot be had, from
// the kernel's log (/dev/kmsg's "NVRM: Xid (PCI:...): N" lines) where this user may read it.
#pragma once
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "fabricbench/job/slow_record.hpp"

namespace fabricbench::job {

// A kernel log line of the NVIDIA driver's XID report ("NVRM: Xid (PCI:0000:1b:00): 79, pid=..., ..."): its GPU's
// pci_key() and the XID's number; empty for any other line.
std::optional<std::pair<std::uint32_t, std::uint32_t>> parse_xid_line(const std::string& line);

class NvmlGpus {
 public:
  // Loads `library` and initialises NVML; available() says whether that worked, why() why not.
  explicit NvmlGpus(const std::string& library = "libnvidia-ml.so.1", std::string proc = "/proc");
  ~NvmlGpus();
  NvmlGpus(const NvmlGpus&) = delete;
  NvmlGpus& operator=(const NvmlGpus&) = delete;
  bool available() const { return api_ != nullptr; }
  const std::string& why() const { return why_; }
  // Where XIDs come from: "NVML's events", "the kernel log", or why they are not seen.
  const std::string& xid_source() const { return xid_source_; }
  // A GpuSample for each of `bus_ids` NVML knows, and a GpuProcess for each compute process on it (`own`: this
  // host's ranks, marked). Records with flags set, host_ns `now_ns`.
  std::vector<slow::Record> sample(const std::vector<std::string>& bus_ids, const std::set<int>& own,
                                   std::int64_t now_ns);

 private:
  struct Api;
  struct Gpu {
    void* handle = nullptr;
    std::uint32_t pci = 0;
    std::uint16_t sm_max_mhz = 0;
    std::uint32_t xids = 0, last_xid = 0;
    std::uint64_t ecc = 0;
    std::uint32_t remapped = 0, nvlink = 0;
    bool registered = false;
  };
  Gpu* gpu(const std::string& bus_id);
  void drain_xids();
  void read_counters(Gpu& g);
  std::string program(int pid) const;
  std::unique_ptr<Api> api_;
  std::string why_, xid_source_, proc_;
  std::map<std::string, Gpu> gpus_;  // by bus id as the ranks' headers give it
  void* events_ = nullptr;           // NVML's event set, when XIDs come from it
  int kmsg_ = -1;                    // /dev/kmsg, when they come from the kernel's log
  std::uint64_t samples_ = 0;
};

}  // namespace fabricbench::job
