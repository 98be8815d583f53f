// NVML loaded at run time. The few types used are declared here as NVML's ABI defines them (nvml.h is not needed
// to build): handles are opaque pointers, enums are ints, return codes are ints (0 = success).
#include <dlfcn.h>
#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstring>
#include <vector>

#include "fabricbench/facts/gpu_info.hpp"

namespace fabricbench::facts {
namespace {

using Device = void*;

// nvmlFieldValue_t: fieldId, scopeId, timestamp, latencyUsec, valueType, nvmlReturn, value (8-byte union).
struct FieldValue {
  unsigned field_id = 0, scope_id = 0;
  long long timestamp = 0, latency_us = 0;
  int value_type = 0, result = 0;
  union {
    double d;
    unsigned ui;
    unsigned long ul;
    unsigned long long ull;
    long long sll;
  } value{};
};
constexpr unsigned field_nvlink_speed_mbps_common = 90;  // NVML_FI_DEV_NVLINK_SPEED_MBPS_COMMON (MB/s per link)
// NVML_FI_DEV_NVLINK_GET_SPEED (MB/s, scopeId = link). On 2 x H200 with driver 580 field 90 (and the per-link
// fields 84-89) answer NOT_SUPPORTED while this one gives 26562 for every link, as nvidia-smi nvlink -s shows.
constexpr unsigned field_nvlink_get_speed = 164;
// NVML_FI_DEV_NVLINK_ERROR_DL_REPLAY, _RECOVERY, _CRC (scopeId = link; unsigned long long values).
constexpr std::array<unsigned, 3> field_nvlink_errors{161, 162, 163};
constexpr int max_nvlinks = 18;  // NVML_NVLINK_MAX_LINKS (Hopper/Blackwell)

class Nvml final : public GpuInfo {
 public:
  static std::unique_ptr<GpuInfo> load(std::string* why, const std::string& library) {
    void* lib = dlopen(library.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (!lib) {
      *why = "NVML not found (" + library + ": no NVIDIA driver on this host)";
      return nullptr;
    }
    auto nvml = std::unique_ptr<Nvml>(new Nvml(lib));
    if (!nvml->init_ || !nvml->count_ || !nvml->handle_) {
      *why = library + " lacks nvmlInit_v2/nvmlDeviceGetCount_v2";
      return nullptr;
    }
    if (int rc = nvml->init_(); rc != 0) {
      *why = fmt::format("nvmlInit failed ({})", nvml->error(rc));
      return nullptr;
    }
    nvml->initialized_ = true;
    unsigned n = 0;
    if (nvml->count_(&n) != 0) n = 0;
    for (unsigned i = 0; i < n; ++i) {
      Device d = nullptr;
      if (nvml->handle_(i, &d) == 0) nvml->devices_.push_back(d);
    }
    for (int g = 0; g < nvml->count(); ++g) nvml->links_.push_back(nvml->nvlink_count(g));
    nvml->batched_.assign(nvml->devices_.size(), true);
    return nvml;
  }

  ~Nvml() override {
    if (events_ && event_free_) event_free_(events_);
    if (initialized_ && shutdown_) shutdown_();
    dlclose(lib_);
  }

  int count() const override { return static_cast<int>(devices_.size()); }
  std::string name(int gpu) const override { return text(name_fn_, gpu); }
  std::string vbios(int gpu) const override { return text(vbios_fn_, gpu); }
  std::string driver_version() const override {
    std::array<char, 96> buf{};
    return driver_fn_ && driver_fn_(buf.data(), buf.size()) == 0 ? std::string(buf.data()) : std::string();
  }
  std::string pci_bus_id(int gpu) const override {
    // nvmlPciInfo_t (v3): busIdLegacy[16], domain, bus, device, pciDeviceId, pciSubSystemId, busId[32]
    std::array<unsigned char, 256> info{};
    if (!pci_fn_ || pci_fn_(dev(gpu), info.data()) != 0) return {};
    unsigned domain, bus, device;
    std::memcpy(&domain, info.data() + 16, 4);
    std::memcpy(&bus, info.data() + 20, 4);
    std::memcpy(&device, info.data() + 24, 4);
    return fmt::format("{:04x}:{:02x}:{:02x}.0", domain, bus, device);
  }
  std::optional<std::string> p2p_status(int a, int b, P2PKind kind) const override {
    static constexpr std::array<const char*, 7> names{"OK", "CNS", "GNS", "TNS", "DISABLED", "NS", "U"};
    int status = 0;
    if (!p2p_fn_ || p2p_fn_(dev(a), dev(b), static_cast<int>(kind), &status) != 0) return std::nullopt;
    return status >= 0 && status < static_cast<int>(names.size()) ? names[static_cast<std::size_t>(status)] : "U";
  }
  int nvlink_count(int gpu) const override {
    int n = 0;
    for (int link = 0; link < max_nvlinks; ++link)
      if (nvlink_active(gpu, link).has_value()) n = link + 1;
    return n;
  }
  std::optional<bool> nvlink_active(int gpu, int link) const override {
    int state = 0;
    if (!nvlink_state_fn_ || nvlink_state_fn_(dev(gpu), static_cast<unsigned>(link), &state) != 0) return std::nullopt;
    return state == 1;
  }
  std::optional<double> nvlink_speed_gbps(int gpu) const override {
    if (!fields_fn_) return std::nullopt;
    // The slowest active link's speed (per link, field 164), else the common speed (field 90). MB/s -> GB/s.
    std::vector<FieldValue> per_link;
    for (int l = 0, n = nvlink_count(gpu); l < n; ++l) {
      if (!nvlink_active(gpu, l).value_or(false)) continue;
      per_link.emplace_back();
      per_link.back().field_id = field_nvlink_get_speed;
      per_link.back().scope_id = static_cast<unsigned>(l);
    }
    std::optional<double> slowest;
    if (!per_link.empty() && fields_fn_(dev(gpu), static_cast<int>(per_link.size()), per_link.data()) == 0)
      for (const auto& v : per_link)
        if (v.result == 0 && v.value.ui > 0) slowest = std::min(slowest.value_or(INFINITY), v.value.ui / 1000.0);
    if (slowest) return slowest;
    FieldValue v;
    v.field_id = field_nvlink_speed_mbps_common;
    if (fields_fn_(dev(gpu), 1, &v) != 0 || v.result != 0 || v.value.ui == 0) return std::nullopt;
    return v.value.ui / 1000.0;
  }
  std::optional<NvLinkErrors> nvlink_errors(int gpu, int link) const override {
    if (!nvlink_error_fn_) return std::nullopt;
    NvLinkErrors e;
    bool any = false;
    std::uint64_t* slots[] = {&e.replay, &e.recovery, &e.crc_flit, &e.crc_data};
    for (int counter = 0; counter < 4; ++counter) {
      unsigned long long v = 0;
      if (nvlink_error_fn_(dev(gpu), static_cast<unsigned>(link), counter, &v) == 0) {
        *slots[counter] = v;
        any = true;
      }
    }
    return any ? std::optional<NvLinkErrors>(e) : std::nullopt;
  }
  // One nvmlDeviceGetFieldValues call for every link's replay, recovery and CRC counters (fields 161-163, scopeId =
  // link: the three counters of total()). On 4 x H200 (driver 580) asking link by link took 274 ms for the four GPUs,
  // read twice around every metric of a sweep's round (tests/perf/nvml_link_read_cost.py). Where the driver does not
  // answer every field (before the fields existed; Blackwell dropped them), link by link, and never fields again.
  std::optional<std::uint64_t> nvlink_errors_total(int gpu) const override {
    const auto g = static_cast<std::size_t>(gpu);
    if (fields_fn_ && g < batched_.size() && batched_[g]) {
      std::vector<FieldValue> values;
      for (unsigned l = 0, n = static_cast<unsigned>(links_[g]); l < n; ++l)
        for (const unsigned field : field_nvlink_errors) {
          values.emplace_back();
          values.back().field_id = field;
          values.back().scope_id = l;
        }
      // A counter as its valueType says: 1 unsigned int, 2 unsigned long, 3 unsigned long long (H200, driver 580).
      const auto count = [](const FieldValue& v) -> std::optional<std::uint64_t> {
        if (v.result != 0) return std::nullopt;
        if (v.value_type == 1) return v.value.ui;
        if (v.value_type == 2) return v.value.ul;
        if (v.value_type == 3) return v.value.ull;
        return std::nullopt;
      };
      if (!values.empty() && fields_fn_(dev(gpu), static_cast<int>(values.size()), values.data()) == 0 &&
          std::all_of(values.begin(), values.end(), [&](const FieldValue& v) { return count(v).has_value(); })) {
        std::uint64_t sum = 0;
        for (const auto& v : values) sum += *count(v);
        return sum;
      }
      batched_[g] = false;
    }
    return GpuInfo::nvlink_errors_total(gpu);
  }
  std::optional<RemappedRows> remapped_rows(int gpu) const override {
    unsigned corr = 0, unc = 0, pending = 0, failure = 0;
    if (!remapped_fn_ || remapped_fn_(dev(gpu), &corr, &unc, &pending, &failure) != 0) return std::nullopt;
    return RemappedRows{corr, unc, pending != 0, failure != 0};
  }
  std::optional<std::uint64_t> ecc_uncorrected(int gpu) const override {
    unsigned long long n = 0;
    // NVML_MEMORY_ERROR_TYPE_UNCORRECTED = 1, NVML_VOLATILE_ECC = 0
    if (!ecc_fn_ || ecc_fn_(dev(gpu), 1, 0, &n) != 0) return std::nullopt;
    return n;
  }
  std::optional<Pcie> pcie(int gpu) const override {
    Pcie p;
    if (!gen_fn_ || !max_gen_fn_ || !width_fn_ || !max_width_fn_) return std::nullopt;
    if (gen_fn_(dev(gpu), &p.gen) != 0 || max_gen_fn_(dev(gpu), &p.max_gen) != 0 ||
        width_fn_(dev(gpu), &p.width) != 0 || max_width_fn_(dev(gpu), &p.max_width) != 0)
      return std::nullopt;
    return p;
  }
  std::optional<std::uint64_t> clock_event_reasons(int gpu) const override {
    unsigned long long mask = 0;
    if (!clocks_fn_ || clocks_fn_(dev(gpu), &mask) != 0) return std::nullopt;
    return mask;
  }
  std::optional<unsigned> sm_clock_mhz(int gpu) const override { return number(clock_fn_, gpu, clock_sm); }
  // (1.3-1.5 ms of CPU a call on an H200 with driver 580, every other call here 1-6 us: tests/gpu/nvml_cost.py)
  std::optional<unsigned> sm_max_clock_mhz(int gpu) const override { return number(max_clock_fn_, gpu, clock_sm); }
  std::optional<unsigned> power_w(int gpu) const override {
    unsigned mw = 0;
    if (!power_fn_ || power_fn_(dev(gpu), &mw) != 0) return std::nullopt;
    return mw / 1000;
  }
  std::optional<unsigned> temperature_c(int gpu) const override { return number(temperature_fn_, gpu, 0); }
  std::optional<std::uint64_t> ecc_corrected(int gpu) const override {
    unsigned long long n = 0;
    // NVML_MEMORY_ERROR_TYPE_CORRECTED = 0, NVML_VOLATILE_ECC = 0
    if (!ecc_fn_ || ecc_fn_(dev(gpu), 0, 0, &n) != 0) return std::nullopt;
    return n;
  }
  std::vector<Process> compute_processes(int gpu) const override {
    // nvmlProcessInfo_t (v2, v3): pid, usedGpuMemory, gpuInstanceId, computeInstanceId; asked again with room for
    // all when the first guess was short (NVML_ERROR_INSUFFICIENT_SIZE = 7).
    struct Info {
      unsigned pid;
      unsigned long long used;
      unsigned gpu_instance, compute_instance;
    };
    std::vector<Info> infos(16);
    std::vector<Process> out;
    unsigned n = static_cast<unsigned>(infos.size());
    int rc = processes_fn_ ? processes_fn_(dev(gpu), &n, infos.data()) : -1;
    if (rc == 7 && n <= 4096) {
      infos.resize(n + 8);
      n = static_cast<unsigned>(infos.size());
      rc = processes_fn_(dev(gpu), &n, infos.data());
    }
    for (unsigned i = 0; rc == 0 && i < n && i < infos.size(); ++i)  // (NVML_VALUE_NOT_AVAILABLE: all ones)
      out.push_back({static_cast<int>(infos[i].pid), infos[i].used == ~0ull ? 0 : infos[i].used});
    return out;
  }
  bool watch_xids() override {
    constexpr unsigned long long xid_critical_error = 0x8;  // nvmlEventTypeXidCriticalError
    if (events_ || !event_set_ || !register_ || !event_wait_ || event_set_(&events_) != 0) return events_ != nullptr;
    bool any = false;
    for (const Device d : devices_) any |= register_(d, xid_critical_error, events_) == 0;
    return any;
  }
  std::vector<std::pair<int, unsigned>> xid_events() override {
    // nvmlEventData_t: device, eventType, eventData (the XID), gpuInstanceId, computeInstanceId
    struct Event {
      Device device;
      unsigned long long type, data;
      unsigned gpu_instance, compute_instance;
    };
    std::vector<std::pair<int, unsigned>> out;
    Event e{};
    for (int i = 0; events_ && i < 256 && event_wait_(events_, &e, 0) == 0; ++i) {
      const auto at = std::find(devices_.begin(), devices_.end(), e.device);
      if ((e.type & 0x8) && at != devices_.end())
        out.emplace_back(static_cast<int>(at - devices_.begin()), static_cast<unsigned>(e.data));
    }
    return out;
  }

 private:
  explicit Nvml(void* lib) : lib_(lib) {
    bind(init_, "nvmlInit_v2");
    bind(shutdown_, "nvmlShutdown");
    bind(error_fn_, "nvmlErrorString");
    bind(count_, "nvmlDeviceGetCount_v2");
    bind(handle_, "nvmlDeviceGetHandleByIndex_v2");
    bind(name_fn_, "nvmlDeviceGetName");
    bind(vbios_fn_, "nvmlDeviceGetVbiosVersion");
    bind(driver_fn_, "nvmlSystemGetDriverVersion");
    bind(pci_fn_, "nvmlDeviceGetPciInfo_v3");
    bind(p2p_fn_, "nvmlDeviceGetP2PStatus");
    bind(nvlink_state_fn_, "nvmlDeviceGetNvLinkState");
    bind(nvlink_error_fn_, "nvmlDeviceGetNvLinkErrorCounter");
    bind(fields_fn_, "nvmlDeviceGetFieldValues");
    bind(remapped_fn_, "nvmlDeviceGetRemappedRows");
    bind(ecc_fn_, "nvmlDeviceGetTotalEccErrors");
    bind(gen_fn_, "nvmlDeviceGetCurrPcieLinkGeneration");
    bind(max_gen_fn_, "nvmlDeviceGetMaxPcieLinkGeneration");
    bind(width_fn_, "nvmlDeviceGetCurrPcieLinkWidth");
    bind(max_width_fn_, "nvmlDeviceGetMaxPcieLinkWidth");
    bind(clocks_fn_, "nvmlDeviceGetCurrentClocksEventReasons");
    if (!clocks_fn_) bind(clocks_fn_, "nvmlDeviceGetCurrentClocksThrottleReasons");  // before driver 535
    bind(clock_fn_, "nvmlDeviceGetClockInfo");
    bind(max_clock_fn_, "nvmlDeviceGetMaxClockInfo");
    bind(power_fn_, "nvmlDeviceGetPowerUsage");
    bind(temperature_fn_, "nvmlDeviceGetTemperature");
    bind(processes_fn_, "nvmlDeviceGetComputeRunningProcesses_v3");
    if (!processes_fn_) bind(processes_fn_, "nvmlDeviceGetComputeRunningProcesses_v2");
    bind(event_set_, "nvmlEventSetCreate");
    bind(register_, "nvmlDeviceRegisterEvents");
    bind(event_wait_, "nvmlEventSetWait_v2");
    bind(event_free_, "nvmlEventSetFree");
  }
  static constexpr int clock_sm = 1;  // NVML_CLOCK_SM (NVML_TEMPERATURE_GPU is 0)
  std::optional<unsigned> number(int (*fn)(Device, int, unsigned*), int gpu, int which) const {
    unsigned v = 0;
    if (!fn || fn(dev(gpu), which, &v) != 0) return std::nullopt;
    return v;
  }
  template <typename F>
  void bind(F& fn, const char* symbol) {
    fn = reinterpret_cast<F>(dlsym(lib_, symbol));
  }
  Device dev(int gpu) const { return devices_.at(static_cast<std::size_t>(gpu)); }
  std::string error(int rc) const { return error_fn_ ? std::string(error_fn_(rc)) : std::to_string(rc); }
  std::string text(int (*fn)(Device, char*, unsigned), int gpu) const {
    std::array<char, 128> buf{};
    return fn && fn(dev(gpu), buf.data(), buf.size()) == 0 ? std::string(buf.data()) : std::string();
  }

  void* lib_;
  bool initialized_ = false;
  std::vector<Device> devices_;
  std::vector<int> links_;             // nvlink_count of each GPU, asked once (18 calls)
  mutable std::vector<bool> batched_;  // whether the GPU answers nvlink_errors_total's fields
  int (*init_)() = nullptr;
  int (*shutdown_)() = nullptr;
  const char* (*error_fn_)(int) = nullptr;
  int (*count_)(unsigned*) = nullptr;
  int (*handle_)(unsigned, Device*) = nullptr;
  int (*name_fn_)(Device, char*, unsigned) = nullptr;
  int (*vbios_fn_)(Device, char*, unsigned) = nullptr;
  int (*driver_fn_)(char*, unsigned) = nullptr;
  int (*pci_fn_)(Device, void*) = nullptr;
  int (*p2p_fn_)(Device, Device, int, int*) = nullptr;
  int (*nvlink_state_fn_)(Device, unsigned, int*) = nullptr;
  int (*nvlink_error_fn_)(Device, unsigned, int, unsigned long long*) = nullptr;
  int (*fields_fn_)(Device, int, FieldValue*) = nullptr;
  int (*remapped_fn_)(Device, unsigned*, unsigned*, unsigned*, unsigned*) = nullptr;
  int (*ecc_fn_)(Device, int, int, unsigned long long*) = nullptr;
  int (*gen_fn_)(Device, unsigned*) = nullptr;
  int (*max_gen_fn_)(Device, unsigned*) = nullptr;
  int (*width_fn_)(Device, unsigned*) = nullptr;
  int (*max_width_fn_)(Device, unsigned*) = nullptr;
  int (*clocks_fn_)(Device, unsigned long long*) = nullptr;
  int (*clock_fn_)(Device, int, unsigned*) = nullptr;
  int (*max_clock_fn_)(Device, int, unsigned*) = nullptr;
  int (*power_fn_)(Device, unsigned*) = nullptr;
  int (*temperature_fn_)(Device, int, unsigned*) = nullptr;
  int (*processes_fn_)(Device, unsigned*, void*) = nullptr;
  int (*event_set_)(void**) = nullptr;
  int (*register_)(Device, unsigned long long, void*) = nullptr;
  int (*event_wait_)(void*, void*, unsigned) = nullptr;
  int (*event_free_)(void*) = nullptr;
  void* events_ = nullptr;  // nvmlEventSet_t, once watch_xids() made it
};

}  // namespace

const std::vector<ClockReason>& clock_reasons() {
  static const std::vector<ClockReason> reasons{
      {0x1, "GpuIdle", false},
      {0x2, "ApplicationsClocksSetting", false},
      {0x4, "SwPowerCap", true},
      {0x8, "HwSlowdown", true},
      {0x10, "SyncBoost", false},
      {0x20, "SwThermalSlowdown", true},
      {0x40, "HwThermalSlowdown", true},
      {0x80, "HwPowerBrakeSlowdown", true},
      {0x100, "DisplayClockSetting", false},
  };
  return reasons;
}

std::unique_ptr<GpuInfo> load_nvml(std::string* why, const std::string& library) { return Nvml::load(why, library); }

double pcie_gbps(unsigned gen, unsigned width) {
  static constexpr std::array<double, 7> lane_gbps{
      0, 0.25, 0.5, 8.0 * 128 / 130 / 8, 16.0 * 128 / 130 / 8, 32.0 * 128 / 130 / 8, 64.0 * 242 / 256 / 8};
  return gen < lane_gbps.size() ? lane_gbps[gen] * width : 0.0;
}

}  // namespace fabricbench::facts
