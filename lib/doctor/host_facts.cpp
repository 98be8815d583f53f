// Across hosts: the facts each host reports beyond /env/hosts' versions, the consistency check over them, and the
// bandwidth the hardware found should reach (/env/expected).
#include <dlfcn.h>
#include <fmt/format.h>

#include <cmath>
#include <filesystem>
#include <set>

#include "fabricbench/doctor/checks.hpp"

namespace fabricbench::doctor {
namespace {

std::string most_common(const std::vector<HostFacts>& hosts, const std::string& key, int* count) {
  std::map<std::string, int> votes;
  for (const auto& h : hosts)
    if (auto it = h.facts.find(key); it != h.facts.end()) ++votes[it->second];
  std::string best;
  *count = 0;
  for (const auto& [value, n] : votes)
    if (n > *count) best = value, *count = n;
  return best;
}

}  // namespace

const std::vector<std::string>& consistency_keys() {
  static const std::vector<std::string> keys{"driver", "cuda", "nccl", "mpi", "rdma_core", "hca_firmware", "kernel",
                                             "gpu_count", "gpu_model", "hca_count", "port_rates", "mtu", "gid_type"};
  return keys;
}

void check_consistency(const std::vector<HostFacts>& hosts, Findings& out) {
  out.begin_check("", -1, "job.consistency");
  if (hosts.size() < 2) {
    out.ok("hosts", fmt::format("{} host: nothing to compare", hosts.size()));
    return;
  }
  for (const auto& key : consistency_keys()) {
    int votes = 0;
    const std::string common = most_common(hosts, key, &votes);
    std::vector<std::string> differ;
    for (const auto& h : hosts) {
      const auto it = h.facts.find(key);
      const std::string v = it == h.facts.end() ? "" : it->second;
      if (v != common) differ.push_back(fmt::format("{} has '{}'", h.host, v));
    }
    const std::string shown = common.empty() ? "(none)" : common;
    if (differ.empty()) {
      out.ok(key, fmt::format("{} on all {} hosts", shown, hosts.size()));
      continue;
    }
    const bool must_match = key == "nccl" || key == "driver";
    out.add(key, must_match ? Status::fail : Status::warn, join(differ, "; "), fmt::format("'{}' (on {} of {} hosts)", shown, votes, hosts.size()),
            must_match ? "mismatched NCCL or driver versions break or slow collectives: install the same version everywhere"
                       : "a host unlike the others: update or exclude it");
  }
}

std::map<std::string, std::string> hardware_facts(const Context& c) {
  std::map<std::string, std::string> f;
  std::set<std::string> devices, firmware, rates, mtus, gid;
  for (const auto& p : c.ports) {
    devices.insert(p.device);
    if (!p.firmware.empty()) firmware.insert(p.firmware);
    if (!p.active()) continue;
    rates.insert(p.rate.empty() ? "?" : fmt::format("{:g} Gb/s", p.rate_gbps));
    if (auto it = c.active_mtu.find(p.name()); it != c.active_mtu.end()) mtus.insert(std::to_string(it->second));
    else if (const auto mtu = p.netdev.empty() ? std::string() : c.files.line("/sys/class/net/" + p.netdev + "/mtu"); !mtu.empty())
      mtus.insert("netdev " + mtu);
    gid.insert(p.link_layer == "Ethernet" ? (p.roce_v2 ? "RoCE v2" : "RoCE v1 only") : "IB");
  }
  auto list = [](const std::set<std::string>& s) { return join({s.begin(), s.end()}); };
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

std::vector<Expected> expected_bandwidth(const Context& c) {
  std::vector<Expected> out;
  if (c.gpus) {
    for (int i = 0; i < c.gpus->count(); ++i) {
      int active = 0;
      for (int l = 0; l < c.gpus->nvlink_count(i); ++l) active += c.gpus->nvlink_active(i, l).value_or(false) ? 1 : 0;
      const auto speed = c.gpus->nvlink_speed_gbps(i);
      // Links up but no speed from NVML: an unknown figure (NaN), so that nothing falls back to the PCIe one.
      if (active > 0)
        out.push_back({c.host, "nvlink", gpu_name(i), speed ? active * *speed : NAN,
                       speed ? fmt::format("{} links x {:.2f} GB/s", active, *speed) : fmt::format("{} links, speed unknown", active)});
      if (const auto p = c.gpus->pcie(i); p && p->max_gen > 0)
        out.push_back({c.host, "pcie", gpu_name(i), pcie_gbps(p->max_gen, p->max_width),
                       fmt::format("PCIe gen {} x{}", p->max_gen, p->max_width)});
    }
  }
  double node = 0;
  int ports = 0;
  for (const auto& p : c.ports) {
    if (!p.active() || p.rate_gbps <= 0) continue;
    out.push_back({c.host, "rdma_port", p.name(), p.rate_gbps / 8, fmt::format("{:g} Gb/s", p.rate_gbps)});
    node += p.rate_gbps / 8;
    ++ports;
  }
  if (ports > 0) out.push_back({c.host, "rdma_node", "node", node, fmt::format("{} Active port(s), {:g} Gb/s in all", ports, node * 8)});
  return out;
}

}  // namespace fabricbench::doctor
