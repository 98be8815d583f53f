// The rdma group: devices and firmware, kernel modules, port state, link layer/rate/MTU/GID, error counters, ECN and
// the ibacm service, from the RDMA ports of the host's facts and the files under /sys and /proc.
#include <fmt/format.h>

#include <cctype>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "check_functions.hpp"

namespace fabricbench::doctor::checks {
using namespace facts;  // the host facts the checks read

void rdma_devices(const Context& c, Findings& out) {
  if (c.ports.empty()) {
    out.skip("devices", "no RDMA device (/sys/class/infiniband is empty)");
    return;
  }
  std::map<std::string, std::pair<std::string, int>> devices;
  for (const auto& p : c.ports) {
    devices[p.device].first = p.firmware;
    ++devices[p.device].second;
  }
  for (const auto& [name, d] : devices)
    out.ok(name, fmt::format("{} port(s), firmware {}", d.second, d.first.empty() ? "(not reported)" : d.first));
}

void rdma_modules(const Context& c, Findings& out) {
  const auto modules = loaded_modules(c.files);
  if (modules.empty()) {
    out.skip("modules", "/proc/modules is empty or unreadable (modules built into the kernel?)");
    return;
  }
  for (const char* m : {"ib_core", "ib_uverbs"}) {
    if (modules.count(m))
      out.ok(m, "loaded");
    else
      out.add(m, Status::fail, "not loaded", "loaded",
              fmt::format("modprobe {}: user-space verbs (NCCL, MPI, fabric-verbs) need it", m));
  }
  if (c.any_gpu())
    out.ok("nvidia_peermem", modules.count("nvidia_peermem")
                                 ? "loaded"
                                 : "not loaded: GPUDirect RDMA relies on dma-buf (kernel >= 5.12, open GPU driver)");
}

void rdma_port_state(const Context& c, Findings& out) {
  for (const auto& p : c.ports) {
    const std::string value = p.state + "/" + p.phys_state;
    if (p.active() && p.phys_state == "LinkUp") {
      out.ok(p.name(), value, "ACTIVE/LinkUp");
      continue;
    }
    std::string hint = "check the cable and the switch port";
    if (p.state == "INIT" || p.state == "ARMED")
      hint = "the link is up but no subnet manager configured it: start opensm or check the SM";
    if (p.phys_state == "Disabled") hint = "the port is administratively disabled";
    out.add(p.name(), Status::warn, value, "ACTIVE/LinkUp", hint);
  }
}

void rdma_link(const Context& c, Findings& out) {
  for (const auto& p : c.ports) {
    if (!p.active()) continue;
    std::string value = fmt::format("{}, {}", p.link_layer, p.rate.empty() ? "rate not reported" : p.rate);
    Status status = Status::ok;
    std::string hint;
    if (auto it = c.active_mtu.find(p.name()); it != c.active_mtu.end()) {
      value += fmt::format(", MTU {}", it->second);
      if (it->second < 4096) {
        status = Status::warn;
        hint = p.link_layer == "Ethernet" ? "active MTU below 4096: raise the interface MTU (jumbo frames, 9000)"
                                          : "active MTU below 4096: check the subnet manager's partition MTU";
      }
    } else if (!p.netdev.empty()) {
      value += ", netdev " + p.netdev + " MTU " + c.files.line("/sys/class/net/" + p.netdev + "/mtu");
    }
    if (p.link_layer == "Ethernet") {
      value += p.roce_v2 ? ", RoCE v2 GID" : ", no RoCE v2 GID";
      if (!p.roce_v2) {
        status = Status::fail;
        hint = "no RoCE v2 GID: give " + (p.netdev.empty() ? std::string("the interface") : p.netdev) +
               " an IP address (the GID table is built from them)";
      }
    }
    out.add(p.name(), status, value, p.link_layer == "Ethernet" ? "RoCE v2 GID, MTU 4096" : "MTU 4096", hint);
  }
}

void rdma_errors(const Context& c, Findings& out) {
  for (const auto& p : c.ports) {
    std::vector<std::string> grown;
    bool any = false;
    for (const auto& counter : port_error_counters()) {
      const auto it = p.counters.find(counter.file);
      if (it == p.counters.end()) continue;
      any = true;
      if (it->second > 0) grown.push_back(fmt::format("{} {}", counter.label, it->second));
    }
    if (!any) {
      out.skip(p.name(), "the driver exposes no port error counters (counters/)");
      continue;
    }
    const auto wait = p.counters.find(xmit_wait_counter);
    const std::string wait_text = wait == p.counters.end() ? "" : fmt::format("; transmit wait {}", wait->second);
    if (grown.empty())
      out.ok(p.name(), "0 errors" + wait_text, "0");
    else
      out.add(p.name(), Status::warn, join(grown) + wait_text, "0",
              "errors since the counters were last cleared: reseat or replace the cable/transceiver if they grow");
  }
}

void rdma_ecn(const Context& c, Findings& out) {
  bool any_roce = false;
  for (const auto& p : c.ports) {
    if (p.link_layer != "Ethernet" || p.netdev.empty()) continue;
    any_roce = true;
    const std::string dir = "/sys/class/net/" + p.netdev + "/ecn";
    if (!c.files.exists(dir)) {
      out.skip(p.name(), "the driver exposes no ECN settings (" + dir + ")");
      continue;
    }
    std::vector<std::string> parts;
    bool on = false;
    for (const char* side : {"roce_np", "roce_rp"}) {
      std::vector<std::string> prios;
      for (const auto& prio : c.files.list(dir + "/" + side + "/enable"))
        if (c.files.line(dir + "/" + side + "/enable/" + prio) == "1") prios.push_back(prio);
      on = on || !prios.empty();
      parts.push_back(fmt::format("{} {}", side, prios.empty() ? "off" : "on for priority " + join(prios, ",")));
    }
    if (on)
      out.ok(p.name(), join(parts), "ECN/DCQCN on");
    else
      out.add(p.name(), Status::warn, join(parts), "ECN/DCQCN on",
              "congestion control is off: lossy RoCE under load falls back to retransmits");
  }
  if (!any_roce) out.skip("ecn", "no RoCE (Ethernet) port");
}

void rdma_ibacm(const Context& c, Findings& out) {
  for (const auto& pid : c.files.list("/proc")) {
    if (pid.empty() || !std::isdigit(static_cast<unsigned char>(pid[0]))) continue;
    if (c.files.line("/proc/" + pid + "/comm") == "ibacm") {
      out.add("ibacm", Status::warn, "running (pid " + pid + ")", "not running",
              "ibacm can stall RDMA connection setup (rdma_cm address resolution): systemctl stop ibacm");
      return;
    }
  }
  out.ok("ibacm", "not running", "not running");
}

}  // namespace fabricbench::doctor::checks
