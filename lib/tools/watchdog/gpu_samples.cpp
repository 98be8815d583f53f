#include "fabricbench/tools/watchdog/gpu_samples.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <limits>

namespace fabricbench::tools::watchdog {

namespace slow = job::slow;

std::optional<std::pair<std::uint32_t, std::uint32_t>> parse_xid_line(const std::string& line) {
  static constexpr char kXid[] = "NVRM: Xid (PCI:";
  const auto at = line.find(kXid);
  if (at == std::string::npos) return std::nullopt;
  const auto from = at + sizeof kXid - 1;
  const auto close = line.find(')', from);
  if (close == std::string::npos || close + 2 >= line.size() || line[close + 1] != ':') return std::nullopt;
  // "0000:1b:00" (domain, bus, device): the function is 0.
  const auto pci = slow::pci_key((line.substr(from, close - from) + ".0").c_str());
  const char* number = line.c_str() + close + 2;
  char* end = nullptr;
  const auto xid = std::strtoul(number, &end, 10);
  if (pci == 0 || end == number || xid == 0 || xid > 0xffff) return std::nullopt;
  return std::make_pair(pci, static_cast<std::uint32_t>(xid));
}

GpuSamples::GpuSamples(std::unique_ptr<facts::GpuInfo> gpus, std::string why, facts::HostFiles files,
                       const std::string& kmsg)
    : gpus_(std::move(gpus)), why_(std::move(why)), files_(std::move(files)) {
  if (!gpus_) {
    xid_source_ = "no NVML";
    return;
  }
  for (int g = 0; g < gpus_->count(); ++g)
    if (const auto pci = slow::pci_key(gpus_->pci_bus_id(g).c_str())) by_pci_[pci].index = g;
  if (gpus_->watch_xids()) {
    xid_source_ = "NVML's events";
    return;
  }
  kmsg_ = ::open(kmsg.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC);
  if (kmsg_ >= 0 && ::lseek(kmsg_, 0, SEEK_END) >= 0) {  // (from now on: the log's past is not this job's)
    xid_source_ = "the kernel log";
    return;
  }
  if (kmsg_ >= 0) ::close(kmsg_);
  kmsg_ = -1;
  xid_source_ = "not seen (no NVML events, " + kmsg + " not readable)";
}

GpuSamples::~GpuSamples() {
  if (kmsg_ >= 0) ::close(kmsg_);
}

// The XIDs reported since the last sample, each counted on its GPU.
void GpuSamples::take_xids() {
  const auto count = [this](auto match, std::uint32_t xid) {
    for (auto& [pci, g] : by_pci_)
      if (match(pci, g)) ++g.xids, g.last_xid = xid;
  };
  for (const auto& [gpu, xid] : gpus_->xid_events())
    count([gpu = gpu](std::uint32_t, const Gpu& g) { return g.index == gpu; }, xid);
  char line[2048];
  for (int i = 0; kmsg_ >= 0 && i < 256; ++i) {  // /dev/kmsg: one record a read
    const auto n = ::read(kmsg_, line, sizeof line - 1);
    if (n < 0 && errno == EPIPE) continue;  // records overwritten before they were read: on from the next
    if (n <= 0) break;
    line[n] = 0;
    if (const auto x = parse_xid_line(line))
      count([pci = x->first](std::uint32_t p, const Gpu&) { return p == pci; }, x->second);
  }
}

void GpuSamples::read_counters(Gpu& g) const {
  g.ecc = gpus_->ecc_corrected(g.index).value_or(0) + gpus_->ecc_uncorrected(g.index).value_or(0);
  if (const auto r = gpus_->remapped_rows(g.index)) g.remapped = r->correctable + r->uncorrectable;
  g.nvlink = static_cast<std::uint32_t>(std::min<std::uint64_t>(gpus_->nvlink_errors_total(g.index).value_or(0),
                                                                std::numeric_limits<std::uint32_t>::max()));
}

// argv[0]'s last part ("python3"), else its comm; "?" when the process is not visible here (another PID namespace).
std::string GpuSamples::program(int pid) const {
  const auto dir = "/proc/" + std::to_string(pid);
  auto name = files_.read(dir + "/cmdline").value_or("");
  name = name.substr(0, name.find('\0'));
  if (const auto slash = name.rfind('/'); slash != std::string::npos) name = name.substr(slash + 1);
  if (name.empty()) name = files_.line(dir + "/comm");
  return name.empty() ? "?" : name;
}

std::vector<slow::Record> GpuSamples::sample(const std::vector<std::string>& bus_ids, const std::set<int>& own,
                                             std::int64_t now_ns) {
  std::vector<slow::Record> out;
  if (!gpus_) return out;
  take_xids();
  const bool counters = samples_++ % kCountersEvery == 0;
  std::set<std::uint32_t> done;
  for (const auto& id : bus_ids) {
    const auto pci = slow::pci_key(id.c_str());
    const auto it = by_pci_.find(pci);
    if (it == by_pci_.end() || !done.insert(pci).second) continue;
    Gpu& g = it->second;
    if (g.sm_max_mhz == 0) g.sm_max_mhz = static_cast<std::uint16_t>(gpus_->sm_max_clock_mhz(g.index).value_or(0));
    if (counters) read_counters(g);
    slow::GpuSample s{};
    s.pci = pci, s.host_ns = now_ns, s.flags = slow::kGpuSample;
    s.sm_mhz = static_cast<std::uint16_t>(gpus_->sm_clock_mhz(g.index).value_or(0));
    s.sm_max_mhz = g.sm_max_mhz;
    s.reasons = gpus_->clock_event_reasons(g.index).value_or(0);
    s.power_w = gpus_->power_w(g.index).value_or(0);
    s.temperature_c = static_cast<std::uint8_t>(std::min(255u, gpus_->temperature_c(g.index).value_or(0)));
    s.xids = g.xids, s.last_xid = g.last_xid, s.ecc = g.ecc, s.remapped_rows = g.remapped;
    s.nvlink_errors = g.nvlink;
    const auto procs = gpus_->compute_processes(g.index);
    s.processes = static_cast<std::uint16_t>(std::min<std::size_t>(procs.size(), 65535));
    out.push_back(slow::record_as<slow::Record>(s));
    for (const auto& p : procs) {
      slow::GpuProcess r{};
      r.pid = p.pid, r.pci = pci, r.host_ns = now_ns, r.used_bytes = p.used_bytes;
      r.own = own.count(p.pid) ? 1 : 0;
      r.flags = slow::kGpuProcess;
      std::strncpy(r.name, program(p.pid).c_str(), sizeof r.name - 1);
      out.push_back(slow::record_as<slow::Record>(r));
    }
  }
  return out;
}

}  // namespace fabricbench::tools::watchdog
