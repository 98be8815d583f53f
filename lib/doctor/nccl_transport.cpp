#include "fabricbench/doctor/nccl_transport.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <map>
#include <optional>
#include <sstream>

namespace fabricbench::doctor {
namespace {

bool starts_with(std::string_view s, std::string_view prefix) { return s.substr(0, prefix.size()) == prefix; }

bool is_virtual_interface(const std::string& name) {
  for (std::string_view prefix :
       {"lo", "docker", "veth", "virbr", "br-", "cni", "flannel", "cali", "vxlan", "tun", "tap"})
    if (starts_with(name, prefix)) return true;
  return false;
}

// A channel's transport through a network plugin: "NET/IB/0/GDRDMA", "NET/IB/1(3)/GDRDMA/Shared" (PXN: proxied by
// rank 3), "NET/Socket/0". The NIC is the plugin's device index, as in its "Using [0]mlx5_0:1/IB ..." line.
struct NetChannel {
  std::string plugin;
  std::size_t device = 0;
  bool gdr = false;
};

std::optional<NetChannel> net_channel(std::string_view transport) {
  if (!starts_with(transport, "NET/")) return std::nullopt;
  transport.remove_prefix(4);
  const auto slash = transport.find('/');
  if (slash == std::string_view::npos) return std::nullopt;
  NetChannel ch{std::string(transport.substr(0, slash)), 0, transport.find("/GDRDMA") != std::string_view::npos};
  std::string_view rest = transport.substr(slash + 1);
  if (rest.empty() || !std::isdigit(static_cast<unsigned char>(rest[0]))) return std::nullopt;
  for (; !rest.empty() && std::isdigit(static_cast<unsigned char>(rest[0])); rest.remove_prefix(1))
    ch.device = ch.device * 10 + static_cast<std::size_t>(rest[0] - '0');
  return ch;
}

// Why GPUDirect RDMA is off on `nics` (names as the log's "Using" line gives them, or "IB device N").
std::string why_gdr_off(const job::NcclLog& log, const std::set<std::string>& nics, const NcclContext& c) {
  std::vector<std::string> disabled;
  std::set<std::string> rest;
  const auto nic_of = [](const std::string& name) { return name.substr(0, name.find(':')); };
  for (const auto& gdr : log.gdr_support) {
    const std::string& hca = gdr.first;  // a name of its own: C++17 lambdas do not capture structured bindings
    if (!gdr.second.first && std::any_of(nics.begin(), nics.end(), [&](const auto& n) { return nic_of(n) == hca; }))
      disabled.push_back(hca);
  }
  const bool every_nic_refuses =
      !log.gdr_support.empty() &&
      std::none_of(log.gdr_support.begin(), log.gdr_support.end(), [](const auto& g) { return g.second.first; });
  if (disabled.empty() && every_nic_refuses)  // NICs named only by index here: every NIC the log names refuses GDR
    for (const auto& [hca, support] : log.gdr_support) disabled.push_back(hca);
  for (const auto& hca : disabled)
    if (!log.gdr_support.at(hca).second.empty()) rest.insert(log.gdr_support.at(hca).second);
  if (!disabled.empty())
    return fmt::format(
        "the NIC cannot reach GPU memory ({}: 'GPU Direct RDMA Disabled'{}; load nvidia_peermem, or use a kernel, "
        "driver and NCCL with dma-buf{})",
        join(disabled), rest.empty() ? "" : " " + join({rest.begin(), rest.end()}),
        log.dmabuf ? ": the GPU has dma-buf" : "");
  auto level = c.variables.find("NCCL_NET_GDR_LEVEL");
  if (level == c.variables.end()) level = log.variables.find("NCCL_NET_GDR_LEVEL");
  if (level != c.variables.end() && level != log.variables.end())
    return fmt::format("NCCL_NET_GDR_LEVEL={} limits it", level->second);
  if (!log.gdr_support.empty())
    return "the NIC can, but NCCL judged the GPU too far from it (PCIe distance above its GDR level; "
           "NCCL_NET_GDR_LEVEL raises it) or GDR reads are off for sends (NCCL_NET_GDR_READ)";
  return "no 'GPU Direct RDMA' line in the log (NCCL_DEBUG_SUBSYS without NET?)";
}

}  // namespace

GdrState gdr_state(const job::NcclLog& log, const NcclContext& c) {
  std::set<std::string> on, off;
  for (const auto& [transport, n] : log.channels) {
    const auto ch = net_channel(transport);
    if (!ch || ch->plugin == "Socket") continue;
    const std::string nic = ch->plugin == "IB" && ch->device < log.ib_devices.size()
                                ? log.ib_devices[ch->device]
                                : fmt::format("{} device {}", ch->plugin, ch->device);
    (ch->gdr ? on : off).insert(nic);
  }
  const auto list = [](const std::set<std::string>& s) { return join({s.begin(), s.end()}); };
  GdrState state;
  if (on.empty() && off.empty()) {
    if (log.gdr_support.empty()) return state;  // no RDMA in this log: nothing to say about GDR
    std::set<std::string> able;
    for (const auto& [hca, support] : log.gdr_support)
      if (support.first) able.insert(hca);
    state.known = true;
    if (!able.empty()) {
      state.value = fmt::format("possible (NIC {}); no channel through the network in the log", list(able));
    } else {
      state.off = true;
      state.value = "off";
      state.why = why_gdr_off(log, {}, c);
    }
    return state;
  }
  state.known = true;
  if (off.empty()) {
    state.value = fmt::format("on (NIC {})", list(on));
    return state;
  }
  state.off = true;
  state.value = on.empty() ? fmt::format("off (NIC {})", list(off))
                           : fmt::format("partly: on (NIC {}), off on {}", list(on), list(off));
  state.why = why_gdr_off(log, off, c);
  return state;
}

std::string nccl_path_text(const job::NcclLog& log) {
  // Each transport once, with its channels: "P2P/CUMEM x24", "NET/IB x16" (a NIC's index and /GDRDMA folded in).
  std::map<std::string, int> kinds;
  for (const auto& [transport, n] : log.channels) {
    const auto ch = net_channel(transport);
    kinds[ch ? "NET/" + ch->plugin : transport.substr(0, transport.find('/', transport.find('/') + 1))] += n;
  }
  std::vector<std::string> parts;
  for (const auto& [kind, n] : kinds) parts.push_back(fmt::format("{} x{}", kind, n));
  std::string text = join(parts);
  const auto gdr = gdr_state(log, NcclContext{});
  if (gdr.known) text += (text.empty() ? "" : "; ") + fmt::format("GPUDirect RDMA: {}", gdr.value);
  return text;
}

namespace {

// nccl.transport gdr: "on (NIC mlx5_0:1/IB)" or "off ...: why", for the channels through an RDMA network plugin.
void check_gdr(const job::NcclLog& log, const NcclContext& c, Findings& out) {
  const auto gdr = gdr_state(log, c);
  if (!gdr.known) return;
  if (!gdr.off)
    out.ok("gdr", gdr.value);
  else if (gdr.value == "off")
    out.add("gdr", Status::warn, "off", "on", gdr.why);
  else
    out.add("gdr", Status::warn, gdr.value, "on", "GPUDirect RDMA " + gdr.value + ": " + gdr.why);
}

}  // namespace

std::vector<std::string> unmatched_selectors(const std::string& value, const std::set<std::string>& present) {
  std::string list = value;
  if (starts_with(list, "^")) return {};  // an exclusion list names what not to use: nothing has to exist
  bool exact = false;
  if (starts_with(list, "=")) {
    exact = true;
    list.erase(0, 1);
  }
  std::vector<std::string> missing;
  std::istringstream in(list);
  for (std::string entry; std::getline(in, entry, ',');) {
    if (entry.empty()) continue;
    const std::string name = entry.substr(0, entry.find(':'));
    const bool found = std::any_of(present.begin(), present.end(),
                                   [&](const std::string& p) { return exact ? p == name : starts_with(p, name); });
    if (!found) missing.push_back(entry);
  }
  return missing;
}

void check_nccl_variables(const NcclContext& c, Findings& out) {
  auto var = [&](const std::string& name) {
    const auto it = c.variables.find(name);
    return it == c.variables.end() ? std::string() : it->second;
  };
  auto names = [](const std::set<std::string>& s) {
    return s.empty() ? std::string("none") : join({s.begin(), s.end()});
  };
  const std::string hca = var("NCCL_IB_HCA");
  if (!hca.empty()) {
    const auto missing = unmatched_selectors(hca, c.rdma_devices);
    if (missing.empty())
      out.ok("NCCL_IB_HCA", hca);
    else
      out.add(
          "NCCL_IB_HCA", Status::fail, hca, "RDMA devices of this host",
          fmt::format("names {} which this host does not have (devices: {})", join(missing), names(c.rdma_devices)));
  }
  const std::string ifname = var("NCCL_SOCKET_IFNAME");
  if (!ifname.empty()) {
    const auto missing = unmatched_selectors(ifname, c.interfaces);
    if (missing.empty())
      out.ok("NCCL_SOCKET_IFNAME", ifname);
    else
      out.add(
          "NCCL_SOCKET_IFNAME", Status::fail, ifname, "interfaces of this host",
          fmt::format("names {} which this host does not have (interfaces: {})", join(missing), names(c.interfaces)));
  }
  for (const char* name : {"NCCL_P2P_DISABLE", "NCCL_SHM_DISABLE", "NCCL_IB_DISABLE", "NCCL_NET_GDR_LEVEL"}) {
    const std::string v = var(name);
    if (v.empty()) continue;
    const bool disables = std::string(name).find("DISABLE") != std::string::npos && v != "0";
    if (disables)
      out.add(name, Status::warn, v, "unset",
              fmt::format("{} turns a fast transport off: unset it unless on purpose", name));
    else
      out.ok(name, v);
  }
  bool any = !hca.empty() || !ifname.empty();
  for (const char* name : {"NCCL_P2P_DISABLE", "NCCL_SHM_DISABLE", "NCCL_IB_DISABLE", "NCCL_NET_GDR_LEVEL"})
    any = any || !var(name).empty();
  if (!any) out.ok("NCCL_*", "no transport variables set");  // the healthy default, shown so the check is seen to run
}

void check_nccl_transport(const job::NcclLog& log, const NcclContext& c, Findings& out) {
  if (log.empty() && !c.host_facts) {
    out.skip("log",
             "no INIT/NET lines from this process: log them with NCCL_DEBUG=INFO and NCCL_DEBUG_SUBSYS unset "
             "or including INIT,NET");
    return;
  }
  if (log.empty()) {
    out.add("log", Status::warn, "NCCL wrote no INFO lines", "NCCL_DEBUG=INFO output",
            "NCCL_DEBUG_FILE could not be written or NCCL failed before init; run with NCCL_DEBUG=INFO to see why");
    return;
  }
  // The network NCCL chose.
  const bool socket = log.network == "Socket";
  if (socket && !c.host_facts && c.hosts > 1)
    out.add("network", Status::warn, "Socket", "IB or a net plugin between hosts",
            std::string("NCCL used TCP sockets between hosts; whether they had Active RDMA ports is not in the log") +
                (log.ib_none ? " (NET/IB : No device found: NCCL saw no RDMA device)" : "") +
                ": run fabric-doctor --checks rdma,nccl on them, and check NCCL_IB_DISABLE, NCCL_NET, NCCL_IB_HCA");
  else if (socket && !c.active_rdma_ports.empty())
    out.add(
        "network", c.hosts > 1 ? Status::fail : Status::warn, "Socket",
        "IB (Active RDMA ports: " + join(c.active_rdma_ports) + ")",
        "NCCL fell back to TCP sockets although RDMA ports are Active: check NCCL_IB_DISABLE, NCCL_NET, NCCL_IB_HCA "
        "and that libibverbs and the HCA driver load in this container");
  else
    out.ok("network", log.network.empty() ? "(not reported)" : log.network, c.active_rdma_ports.empty() ? "" : "IB");
  // Devices NCCL listed.
  for (const auto& dev : log.ib_devices) {
    const std::string name = dev.substr(0, dev.find(':'));
    if (name.find("bond") != std::string::npos)
      out.add("NET/IB " + dev, Status::warn, dev, "a physical HCA port",
              fmt::format("a bonded device carries NCCL traffic; export NCCL_IB_HCA=^{}", name));
    else
      out.ok("NET/IB " + dev, dev);
  }
  for (const auto& iface : log.socket_ifaces) {
    const std::string name = iface.substr(0, iface.find(':'));
    if (is_virtual_interface(name))
      out.add("NET/Socket " + name, c.hosts > 1 ? Status::fail : Status::warn, iface, "a physical interface",
              fmt::format("{} is a loopback or virtual interface; set NCCL_SOCKET_IFNAME to the host's data interface",
                          name));
    else
      out.ok("NET/Socket " + name, iface);
  }
  // How the channels travel. Within one host, channels through the network mean P2P and SHM were not used.
  bool through_net = false;
  for (const auto& [transport, n] : log.channels) through_net = through_net || starts_with(transport, "NET/");
  // The variables that turn P2P or SHM off, from the environment or as the log reports them.
  std::vector<std::string> disabled;
  for (const std::string name : {"NCCL_P2P_DISABLE", "NCCL_SHM_DISABLE"}) {
    auto it = c.variables.find(name);
    const bool in_env = it != c.variables.end();
    if (!in_env) it = log.variables.find(name);
    if ((in_env || it != log.variables.end()) && it->second != "0") disabled.push_back(name);
  }
  const std::string summary = log.channels.empty() ? "no channel lines" : log.channel_summary();
  if (c.hosts == 1 && through_net)
    out.add(
        "channels", Status::warn, summary, "P2P or SHM within one host",
        disabled.empty()
            ? std::string("NCCL routes GPUs of one host through the network: check the P2P matrix and NCCL_P2P_LEVEL")
            : fmt::format("{} set: unset to use NVLink/PCIe P2P and shared memory", join(disabled)));
  else if (!disabled.empty())
    out.add("channels", Status::warn, summary, "P2P and SHM enabled", fmt::format("{} set", join(disabled)));
  else
    out.ok("channels", summary);
  check_gdr(log, c, out);
}

}  // namespace fabricbench::doctor
