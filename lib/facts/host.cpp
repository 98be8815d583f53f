#include "fabricbench/facts/host.hpp"

#include <dlfcn.h>
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <cmath>
#include <filesystem>
#include <set>

namespace fabricbench::facts {

bool Host::any_gpu() const {
  if (gpus && gpus->count() > 0) return true;
  return !pci_devices(files, "0x10de", {"0302", "0300"}).empty();
}

Host Host::read(const std::string& host) {
  Host h;
  h.files = HostFiles::for_host(host);
  h.host = host;
  h.ports = read_rdma_ports(h.files);
  return h;
}

std::map<std::string, std::string> hardware_facts(const Host& c) {
  std::map<std::string, std::string> f;
  std::set<std::string> devices, firmware, rates, mtus, gid;
  for (const auto& p : c.ports) {
    devices.insert(p.device);
    if (!p.firmware.empty()) firmware.insert(p.firmware);
    if (!p.active()) continue;
    rates.insert(p.rate.empty() ? "?" : fmt::format("{:g} Gb/s", p.rate_gbps));
    if (auto it = c.active_mtu.find(p.name()); it != c.active_mtu.end())
      mtus.insert(std::to_string(it->second));
    else if (const auto mtu = p.netdev.empty() ? std::string() : c.files.line("/sys/class/net/" + p.netdev + "/mtu");
             !mtu.empty())
      mtus.insert("netdev " + mtu);
    gid.insert(p.link_layer == "Ethernet" ? (p.roce_v2 ? "RoCE v2" : "RoCE v1 only") : "IB");
  }
  auto list = [](const std::set<std::string>& s) { return fmt::format("{}", fmt::join(s, ", ")); };
  f["hca_count"] = std::to_string(devices.size());
  f["hca_firmware"] = list(firmware);
  f["port_rates"] = list(rates);
  f["mtu"] = list(mtus);
  f["gid_type"] = list(gid);
  // rdma-core's version is the minor of libibverbs' file name (libibverbs.so.1.14.44.0 -> 44).
  if (void* lib = dlopen("libibverbs.so.1", RTLD_LAZY | RTLD_LOCAL)) {
    Dl_info info{};
    if (void* sym = dlsym(lib, "ibv_get_device_list"); sym && dladdr(sym, &info) && info.dli_fname) {
      std::error_code ec;
      const auto real = std::filesystem::canonical(info.dli_fname, ec).filename().string();  // libibverbs.so.1.14.44.0
      const auto parts = real.substr(std::min(real.size(), std::string("libibverbs.so.").size()));
      f["rdma_core"] = parts.empty() ? real : "libibverbs " + parts;
    }
    dlclose(lib);
  }
  if (c.gpus) {
    f["gpu_count"] = std::to_string(c.gpus->count());
    std::set<std::string> models;
    for (int i = 0; i < c.gpus->count(); ++i) models.insert(c.gpus->name(i));
    f["gpu_model"] = list(models);
  } else {
    f["gpu_count"] = std::to_string(pci_devices(c.files, "0x10de", {"0302", "0300"}).size());
  }
  return f;
}

std::string_view to_string(HardwarePath path) {
  switch (path) {
    case HardwarePath::none:
      return "";
    case HardwarePath::nvlink:
      return "nvlink";
    case HardwarePath::pcie:
      return "pcie";
    case HardwarePath::rdma_port:
      return "rdma_port";
    case HardwarePath::rdma_node:
      return "rdma_node";
  }
  return "";
}

HardwarePath hardware_path(std::string_view name) {
  for (const auto p : {HardwarePath::nvlink, HardwarePath::pcie, HardwarePath::rdma_port, HardwarePath::rdma_node})
    if (to_string(p) == name) return p;
  return HardwarePath::none;
}

std::vector<Expected> expected_bandwidth(const Host& c) {
  std::vector<Expected> out;
  if (c.gpus) {
    for (int i = 0; i < c.gpus->count(); ++i) {
      int active = 0;
      for (int l = 0; l < c.gpus->nvlink_count(i); ++l) active += c.gpus->nvlink_active(i, l).value_or(false) ? 1 : 0;
      const auto speed = c.gpus->nvlink_speed_gbps(i);
      // Links up but no speed from NVML: an unknown figure (NaN), so that nothing falls back to the PCIe one.
      if (active > 0)
        out.push_back({c.host, HardwarePath::nvlink, fmt::format("GPU{}", i), speed ? active * *speed : NAN,
                       speed ? fmt::format("{} links x {:.2f} GB/s", active, *speed)
                             : fmt::format("{} links, speed unknown", active)});
      if (const auto p = c.gpus->pcie(i); p && p->max_gen > 0)
        out.push_back({c.host, HardwarePath::pcie, fmt::format("GPU{}", i), pcie_gbps(p->max_gen, p->max_width),
                       fmt::format("PCIe gen {} x{}", p->max_gen, p->max_width)});
    }
  }
  double node = 0;
  int ports = 0;
  for (const auto& p : c.ports) {
    if (!p.active() || p.rate_gbps <= 0) continue;
    out.push_back({c.host, HardwarePath::rdma_port, p.name(), p.rate_gbps / 8, fmt::format("{:g} Gb/s", p.rate_gbps)});
    node += p.rate_gbps / 8;
    ++ports;
  }
  if (ports > 0)
    out.push_back({c.host, HardwarePath::rdma_node, "node", node,
                   fmt::format("{} Active port(s), {:g} Gb/s in all", ports, node * 8)});
  return out;
}

}  // namespace fabricbench::facts
