// The GPUs of a host as NVML reports them, behind an interface so that the checks run on a fake in tests. The real
// one loads libnvidia-ml.so.1 at run time (dlopen): no link-time dependency, and a host without the driver gets
// nothing (the GPU checks are skipped with the reason).
#pragma once
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace fabricbench::facts {

enum class P2PKind { read = 0, write = 1, nvlink = 2, atomics = 3 };

// The counters nvidia-smi nvlink -e shows (replay, recovery, CRC = flit CRC) make total(). crc_data is kept apart:
// on NVLink 4 (2 x H200, driver 580) it grows with the lane ECC corrections of a healthy link (27 on link 0 beside
// 43 corrections, while nvidia-smi reports 0 CRC errors), so counting it would blame good links.
struct NvLinkErrors {
  std::uint64_t replay = 0, recovery = 0, crc_flit = 0, crc_data = 0;
  std::uint64_t total() const { return replay + recovery + crc_flit; }
};

struct RemappedRows {
  unsigned correctable = 0, uncorrectable = 0;
  bool pending = false, failure = false;
};

class GpuInfo {
 public:
  virtual ~GpuInfo() = default;
  virtual int count() const = 0;
  virtual std::string name(int gpu) const = 0;
  virtual std::string pci_bus_id(int gpu) const = 0;  // "0000:00:06.0"
  virtual std::string driver_version() const = 0;
  virtual std::string vbios(int gpu) const = 0;
  // nullopt: NVML does not support the query on this GPU.
  virtual std::optional<std::string> p2p_status(int a, int b, P2PKind kind) const = 0;  // "OK", "NS", "CNS" ...
  virtual int nvlink_count(int gpu) const = 0;  // links NVML knows for the GPU (active or not)
  virtual std::optional<bool> nvlink_active(int gpu, int link) const = 0;
  virtual std::optional<double> nvlink_speed_gbps(int gpu) const = 0;  // GB/s per link and direction (10^9 B/s)
  virtual std::optional<NvLinkErrors> nvlink_errors(int gpu, int link) const = 0;
  // The total() of every link of the GPU, summed; nullopt where no link has counters. Read around every measurement,
  // so it should be cheap: this default asks link by link (one call per link and counter), NVML's override asks
  // for all the links' counters at once.
  virtual std::optional<std::uint64_t> nvlink_errors_total(int gpu) const {
    std::optional<std::uint64_t> sum;
    for (int l = 0, n = nvlink_count(gpu); l < n; ++l)
      if (const auto e = nvlink_errors(gpu, l)) sum = sum.value_or(0) + e->total();
    return sum;
  }
  virtual std::optional<RemappedRows> remapped_rows(int gpu) const = 0;
  virtual std::optional<std::uint64_t> ecc_uncorrected(int gpu) const = 0;  // volatile
  struct Pcie {
    unsigned gen = 0, max_gen = 0, width = 0, max_width = 0;
  };
  virtual std::optional<Pcie> pcie(int gpu) const = 0;
  virtual std::optional<std::uint64_t> clock_event_reasons(int gpu) const = 0;  // NVML's bit mask

  // What fabric-watchdog --slow's sampler reads of a rank's GPU once a second (tools/watchdog/gpu_samples.hpp); by
  // default nothing (a fake that does not say).
  virtual std::optional<unsigned> sm_clock_mhz(int) const { return std::nullopt; }
  virtual std::optional<unsigned> sm_max_clock_mhz(int) const { return std::nullopt; }
  virtual std::optional<unsigned> power_w(int) const { return std::nullopt; }
  virtual std::optional<unsigned> temperature_c(int) const { return std::nullopt; }
  virtual std::optional<std::uint64_t> ecc_corrected(int) const { return std::nullopt; }  // volatile
  struct Process {
    int pid = 0;                   // as the driver sees it (the host's PID namespace)
    std::uint64_t used_bytes = 0;  // 0 when not known
  };
  virtual std::vector<Process> compute_processes(int) const { return {}; }
  // XID events: watch_xids() asks for them on every GPU (false where that cannot be had); xid_events() takes those
  // reported since, without waiting, as (GPU, XID).
  virtual bool watch_xids() { return false; }
  virtual std::vector<std::pair<int, unsigned>> xid_events() { return {}; }
};

// NVML's clocks-event reasons that slow a GPU down for a reason other than idling or an application setting.
struct ClockReason {
  std::uint64_t bit;
  const char* name;
  bool slows;  // a warning when set
};
const std::vector<ClockReason>& clock_reasons();

// libnvidia-ml.so.1 (or `library`: a test's stand-in) through the loader. nullptr with `why` set when it cannot be
// loaded or initialized.
std::unique_ptr<GpuInfo> load_nvml(std::string* why, const std::string& library = "libnvidia-ml.so.1");

// "%d.%d GB/s" of PCIe: per direction after encoding (gen 1-2: 8b/10b, gen 3+: 128b/130b), 10^9 B/s.
double pcie_gbps(unsigned gen, unsigned width);

}  // namespace fabricbench::facts
