#include "fabricbench/job/nvml_gpus.hpp"

#include <dlfcn.h>
#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <limits>

namespace fabricbench::job {
namespace {

// NVML's types and values as its documentation gives them (nvml.h is not needed to build).
using Result = int;  // nvmlReturn_t: 0 success
constexpr Result kSuccess = 0, kInsufficientSize = 7;
using Device = void*;                            // nvmlDevice_t
using EventSet = void*;                          // nvmlEventSet_t
constexpr int kClockSm = 1;                      // NVML_CLOCK_SM
constexpr int kTemperatureGpu = 0;               // NVML_TEMPERATURE_GPU
constexpr int kCorrected = 0, kUncorrected = 1;  // nvmlMemoryErrorType_t
constexpr int kVolatile = 0;                     // nvmlEccCounterType_t
constexpr unsigned long long kEventXid = 0x8;    // nvmlEventTypeXidCriticalError
constexpr unsigned kMaxLinks = 18;               // NVML_NVLINK_MAX_LINKS
// Replay, recovery, CRC flit (nvidia-smi nvlink -e's). Not CRC data: on NVLink 4 (H200, driver 580) it grows with
// a healthy link's lane ECC corrections (facts/gpu_info.hpp's NvLinkErrors found it): it would blame good links.
constexpr int kLinkCounters[] = {0, 1, 2};
struct ProcessInfo {  // nvmlProcessInfo_t (v2 and v3)
  unsigned pid;
  unsigned long long used_bytes;
  unsigned gpu_instance, compute_instance;
};
struct EventData {  // nvmlEventData_t
  Device device;
  unsigned long long type, data;
  unsigned gpu_instance, compute_instance;
};

constexpr int kCountersEvery = 10;  // samples between two readings of the error counters

}  // namespace

// The library and the functions the sampler calls (each may be missing in an older driver: then not called).
struct NvmlGpus::Api {
  void* lib = nullptr;
  Result (*init)() = nullptr;
  Result (*shutdown)() = nullptr;
  Result (*by_bus_id)(const char*, Device*) = nullptr;
  Result (*clock)(Device, int, unsigned*) = nullptr;
  Result (*max_clock)(Device, int, unsigned*) = nullptr;
  Result (*reasons)(Device, unsigned long long*) = nullptr;
  Result (*processes)(Device, unsigned*, ProcessInfo*) = nullptr;
  Result (*ecc)(Device, int, int, unsigned long long*) = nullptr;
  Result (*remapped)(Device, unsigned*, unsigned*, unsigned*, unsigned*) = nullptr;
  Result (*link_state)(Device, unsigned, int*) = nullptr;
  Result (*link_errors)(Device, unsigned, int, unsigned long long*) = nullptr;
  Result (*power)(Device, unsigned*) = nullptr;
  Result (*temperature)(Device, int, unsigned*) = nullptr;
  Result (*event_set)(EventSet*) = nullptr;
  Result (*register_events)(Device, unsigned long long, EventSet) = nullptr;
  Result (*event_wait)(EventSet, EventData*, unsigned) = nullptr;
  Result (*event_free)(EventSet) = nullptr;

  template <typename F>
  void find(F& f, std::initializer_list<const char*> names) {
    for (const char* n : names)
      if (void* p = ::dlsym(lib, n)) {
        f = reinterpret_cast<F>(p);
        return;
      }
  }
  ~Api() {
    if (lib) ::dlclose(lib);
  }
};

std::optional<std::pair<std::uint32_t, std::uint32_t>> parse_xid_line(const std::string& line) {
  const auto at = line.find("NVRM: Xid (PCI:");
  if (at == std::string::npos) return std::nullopt;
  const auto close = line.find(')', at);
  if (close == std::string::npos || close + 2 >= line.size() || line[close + 1] != ':') return std::nullopt;
  // "0000:1b:00" (domain, bus, device): the function is 0.
  const auto pci = slow::pci_key((line.substr(at + 15, close - at - 15) + ".0").c_str());
  char* end = nullptr;
  const auto xid = std::strtoul(line.c_str() + close + 2, &end, 10);
  if (pci == 0 || end == line.c_str() + close + 2 || xid == 0 || xid > 0xffff) return std::nullopt;
  return std::make_pair(pci, static_cast<std::uint32_t>(xid));
}

NvmlGpus::NvmlGpus(const std::string& library, std::string proc) : proc_(std::move(proc)) {
  auto api = std::make_unique<Api>();
  api->lib = ::dlopen(library.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!api->lib) {
    why_ = "NVML (" + library + ") not found: no NVIDIA driver on this host";
    xid_source_ = "no NVML";
    return;
  }
  api->find(api->init, {"nvmlInit_v2", "nvmlInit"});
  api->find(api->shutdown, {"nvmlShutdown"});
  api->find(api->by_bus_id, {"nvmlDeviceGetHandleByPciBusId_v2", "nvmlDeviceGetHandleByPciBusId"});
  api->find(api->clock, {"nvmlDeviceGetClockInfo"});
  api->find(api->max_clock, {"nvmlDeviceGetMaxClockInfo"});
  api->find(api->reasons, {"nvmlDeviceGetCurrentClocksEventReasons", "nvmlDeviceGetCurrentClocksThrottleReasons"});
  api->find(api->processes, {"nvmlDeviceGetComputeRunningProcesses_v3", "nvmlDeviceGetComputeRunningProcesses_v2"});
  api->find(api->ecc, {"nvmlDeviceGetTotalEccErrors"});
  api->find(api->remapped, {"nvmlDeviceGetRemappedRows"});
  api->find(api->link_state, {"nvmlDeviceGetNvLinkState"});
  api->find(api->link_errors, {"nvmlDeviceGetNvLinkErrorCounter"});
  api->find(api->power, {"nvmlDeviceGetPowerUsage"});
  api->find(api->temperature, {"nvmlDeviceGetTemperature"});
  api->find(api->event_set, {"nvmlEventSetCreate"});
  api->find(api->register_events, {"nvmlDeviceRegisterEvents"});
  api->find(api->event_wait, {"nvmlEventSetWait_v2", "nvmlEventSetWait"});
  api->find(api->event_free, {"nvmlEventSetFree"});
  if (!api->init || !api->by_bus_id || api->init() != kSuccess) {
    why_ = "NVML (" + library + ") did not start";
    xid_source_ = "no NVML";
    return;
  }
  api_ = std::move(api);
  if (api_->event_set && api_->register_events && api_->event_wait && api_->event_set(&events_) == kSuccess) {
    xid_source_ = "NVML's events";
    return;
  }
  events_ = nullptr;
  kmsg_ = ::open("/dev/kmsg", O_RDONLY | O_NONBLOCK | O_CLOEXEC);
  if (kmsg_ >= 0 && ::lseek(kmsg_, 0, SEEK_END) >= 0) {
    xid_source_ = "the kernel log";
  } else {
    if (kmsg_ >= 0) ::close(kmsg_);
    kmsg_ = -1;
    xid_source_ = "not seen (no NVML events, /dev/kmsg not readable)";
  }
}

NvmlGpus::~NvmlGpus() {
  if (kmsg_ >= 0) ::close(kmsg_);
  if (!api_) return;
  if (events_ && api_->event_free) api_->event_free(events_);
  if (api_->shutdown) api_->shutdown();
}

NvmlGpus::Gpu* NvmlGpus::gpu(const std::string& bus_id) {
  if (const auto it = gpus_.find(bus_id); it != gpus_.end()) return it->second.handle ? &it->second : nullptr;
  Gpu& g = gpus_[bus_id];  // (one that NVML does not know is asked once)
  Device d = nullptr;
  if (api_->by_bus_id(bus_id.c_str(), &d) != kSuccess || !d) return nullptr;
  g.handle = d;
  g.pci = slow::pci_key(bus_id.c_str());
  // Its maximum once (it does not change, and NVML takes 1.3-1.5 ms of CPU to say it on an H200: measured).
  unsigned mhz = 0;
  if (api_->max_clock && api_->max_clock(d, kClockSm, &mhz) == kSuccess) g.sm_max_mhz = static_cast<std::uint16_t>(mhz);
  if (events_) g.registered = api_->register_events(d, kEventXid, events_) == kSuccess;
  read_counters(g);  // where they stand when the sampler first sees it
  return &g;
}

// XIDs since the last sample, each to its GPU: NVML's event set (waited for 0 ms), else the kernel log's new lines.
void NvmlGpus::drain_xids() {
  const auto count = [this](const auto& match, std::uint32_t xid) {
    for (auto& [id, g] : gpus_)
      if (g.handle && match(g)) ++g.xids, g.last_xid = xid;
  };
  if (events_) {
    EventData e{};
    for (int i = 0; i < 256 && api_->event_wait(events_, &e, 0) == kSuccess; ++i)
      if (e.type & kEventXid)
        count([&](const Gpu& g) { return g.handle == e.device; }, static_cast<std::uint32_t>(e.data));
    return;
  }
  if (kmsg_ < 0) return;
  char line[2048];
  for (int i = 0; i < 256; ++i) {
    const auto n = ::read(kmsg_, line, sizeof line - 1);
    if (n < 0 && errno == EPIPE) continue;  // records overwritten before they were read: go on from the next
    if (n <= 0) break;
    line[n] = 0;
    if (const auto x = parse_xid_line(line)) count([&](const Gpu& g) { return g.pci == x->first; }, x->second);
  }
}

// The counters that only rise: ECC errors, remapped rows, NVLink errors (what is not supported stays 0).
void NvmlGpus::read_counters(Gpu& g) {
  unsigned long long v = 0;
  g.ecc = 0;
  for (int type : {kCorrected, kUncorrected})
    if (api_->ecc && api_->ecc(g.handle, type, kVolatile, &v) == kSuccess) g.ecc += v;
  unsigned corrected = 0, uncorrected = 0, pending = 0, failed = 0;
  if (api_->remapped && api_->remapped(g.handle, &corrected, &uncorrected, &pending, &failed) == kSuccess)
    g.remapped = corrected + uncorrected;
  std::uint64_t links = 0;
  for (unsigned link = 0; api_->link_state && api_->link_errors && link < kMaxLinks; ++link) {
    int active = 0;
    if (api_->link_state(g.handle, link, &active) != kSuccess || !active) continue;
    for (int c : kLinkCounters)
      if (api_->link_errors(g.handle, link, c, &v) == kSuccess) links += v;
  }
  g.nvlink = static_cast<std::uint32_t>(std::min<std::uint64_t>(links, std::numeric_limits<std::uint32_t>::max()));
}

// argv[0]'s last part ("python3"), else its comm; "?" when the process is not visible here (another PID namespace).
std::string NvmlGpus::program(int pid) const {
  char buf[256];
  const auto read = [&](const char* file) {
    const int fd = ::open((proc_ + "/" + std::to_string(pid) + file).c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) return std::string();
    const auto n = ::read(fd, buf, sizeof buf - 1);
    ::close(fd);
    return n > 0 ? std::string(buf, std::strlen((buf[n] = 0, buf))) : std::string();
  };
  auto name = read("/cmdline");
  if (const auto slash = name.rfind('/'); slash != std::string::npos) name = name.substr(slash + 1);
  if (name.empty()) name = read("/comm");
  while (!name.empty() && name.back() == '\n') name.pop_back();
  return name.empty() ? "?" : name;
}

std::vector<slow::Record> NvmlGpus::sample(const std::vector<std::string>& bus_ids, const std::set<int>& own,
                                           std::int64_t now_ns) {
  std::vector<slow::Record> out;
  if (!api_) return out;
  std::vector<Gpu*> gpus;
  for (const auto& id : bus_ids)
    if (Gpu* g = gpu(id); g && std::find(gpus.begin(), gpus.end(), g) == gpus.end()) gpus.push_back(g);
  drain_xids();
  const bool counters = samples_++ % kCountersEvery == 0;
  for (Gpu* g : gpus) {
    slow::GpuSample s{};
    s.pci = g->pci, s.host_ns = now_ns, s.flags = slow::kGpuSample;
    unsigned v = 0;
    unsigned long long reasons = 0;
    if (api_->clock && api_->clock(g->handle, kClockSm, &v) == kSuccess) s.sm_mhz = static_cast<std::uint16_t>(v);
    s.sm_max_mhz = g->sm_max_mhz;
    if (api_->reasons && api_->reasons(g->handle, &reasons) == kSuccess) s.reasons = reasons;
    if (api_->power && api_->power(g->handle, &v) == kSuccess) s.power_w = v / 1000;
    if (api_->temperature && api_->temperature(g->handle, kTemperatureGpu, &v) == kSuccess)
      s.temperature_c = static_cast<std::uint8_t>(std::min(v, 255u));
    if (counters) read_counters(*g);
    s.xids = g->xids, s.last_xid = g->last_xid, s.ecc = g->ecc, s.remapped_rows = g->remapped;
    s.nvlink_errors = g->nvlink;
    std::vector<ProcessInfo> procs(16);
    unsigned n = static_cast<unsigned>(procs.size());
    Result r = api_->processes ? api_->processes(g->handle, &n, procs.data()) : kSuccess + 1;
    if (r == kInsufficientSize && n <= 1024) {
      procs.resize(n + 8);
      n = static_cast<unsigned>(procs.size());
      r = api_->processes(g->handle, &n, procs.data());
    }
    if (r != kSuccess) n = 0;
    s.processes = static_cast<std::uint16_t>(std::min(n, 65535u));
    out.push_back(slow::record_as<slow::Record>(s));
    for (unsigned i = 0; i < n && i < procs.size(); ++i) {
      slow::GpuProcess p{};
      p.pid = static_cast<std::int32_t>(procs[i].pid), p.pci = g->pci, p.host_ns = now_ns;
      p.used_bytes = procs[i].used_bytes == std::numeric_limits<unsigned long long>::max() ? 0 : procs[i].used_bytes;
      p.own = own.count(p.pid) ? 1 : 0;
      p.flags = slow::kGpuProcess;
      const auto name = program(p.pid);
      std::strncpy(p.name, name.c_str(), sizeof p.name - 1);
      out.push_back(slow::record_as<slow::Record>(p));
    }
  }
  return out;
}

}  // namespace fabricbench::job
