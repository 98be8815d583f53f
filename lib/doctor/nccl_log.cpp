#include "fabricbench/doctor/nccl_log.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <sstream>

namespace fabricbench::doctor {
namespace {

// "[0]mlx5_0:1/IB [1]mlx5_1:1/RoCE [RO]; OOB ..." -> {"mlx5_0:1/IB", "mlx5_1:1/RoCE"}
std::vector<std::string> indexed_list(std::string_view text) {
  std::vector<std::string> out;
  std::istringstream in(std::string(text.substr(0, text.find(';'))));
  for (std::string word; in >> word;) {
    if (word.size() < 4 || word[0] != '[' || !std::isdigit(static_cast<unsigned char>(word[1]))) continue;
    std::string item = word.substr(word.find(']') + 1);
    if (const auto lt = item.find('<'); lt != std::string::npos) item.erase(lt);
    if (!item.empty()) out.push_back(item);
  }
  return out;
}

// The text without trailing blanks and carriage returns.
std::string trimmed(std::string_view text) {
  while (!text.empty() && (text.back() == ' ' || text.back() == '\r')) text.remove_suffix(1);
  return std::string(text);
}

void add_unique(std::vector<std::string>& list, std::vector<std::string> items) {
  for (auto& item : items)
    if (std::find(list.begin(), list.end(), item) == list.end()) list.push_back(std::move(item));
}

constexpr std::string_view set_by_env = " set by environment to ";

bool starts_with(std::string_view s, std::string_view prefix) { return s.substr(0, prefix.size()) == prefix; }

bool is_virtual_interface(const std::string& name) {
  for (std::string_view prefix : {"lo", "docker", "veth", "virbr", "br-", "cni", "flannel", "cali", "vxlan", "tun", "tap"})
    if (starts_with(name, prefix)) return true;
  return false;
}

}  // namespace

std::string NcclLog::channel_summary() const {
  std::vector<std::string> parts;
  for (const auto& [transport, n] : channels) parts.push_back(fmt::format("{} x{}", transport, n));
  return join(parts);
}

bool NcclLog::read(std::string_view m) {
  if (starts_with(m, "NCCL version ")) {
    version = trimmed(m.substr(13));
  } else if (starts_with(m, "Using network ")) {
    network = trimmed(m.substr(14));
  } else if (starts_with(m, "NET/IB : No device found")) {
    ib_none = true;
  } else if (starts_with(m, "NET/IB : Using ")) {
    add_unique(ib_devices, indexed_list(m.substr(15)));
  } else if (starts_with(m, "NET/Socket : Using ")) {
    add_unique(socket_ifaces, indexed_list(m.substr(19)));
  } else if (starts_with(m, "Channel ") && m.find(" via ") != std::string_view::npos) {
    // One count per distinct (channel, peers) line: a log of several ranks repeats nothing then.
    const std::string line = trimmed(m);
    std::string_view transport = std::string_view(line).substr(line.find(" via ") + 5);
    transport = transport.substr(0, transport.find(' '));
    if (channel_lines_.insert(line).second) ++channels[std::string(transport)];
  } else if (const auto at = m.find(set_by_env); at != std::string_view::npos && starts_with(m, "NCCL_")) {
    std::string_view value = m.substr(at + set_by_env.size());
    while (!value.empty() && (value.back() == '.' || value.back() == ' ' || value.back() == '\r')) value.remove_suffix(1);
    variables[std::string(m.substr(0, at))] = std::string(value);
  } else if (m.find("Init COMPLETE") != std::string_view::npos) {
    init_complete = true;
  } else {
    return false;
  }
  return true;
}

NcclLog parse_nccl_log(const std::string& text) {
  NcclLog log;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);)
    if (const auto at = line.find("NCCL INFO "); at != std::string::npos) log.read(std::string_view(line).substr(at + 10));
  return log;
}

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
    const bool found = std::any_of(present.begin(), present.end(), [&](const std::string& p) {
      return exact ? p == name : starts_with(p, name);
    });
    if (!found) missing.push_back(entry);
  }
  return missing;
}

void check_nccl_variables(const NcclContext& c, Findings& out) {
  auto var = [&](const std::string& name) {
    const auto it = c.variables.find(name);
    return it == c.variables.end() ? std::string() : it->second;
  };
  auto names = [](const std::set<std::string>& s) { return s.empty() ? std::string("none") : join({s.begin(), s.end()}); };
  const std::string hca = var("NCCL_IB_HCA");
  if (!hca.empty()) {
    const auto missing = unmatched_selectors(hca, c.rdma_devices);
    if (missing.empty()) out.ok("NCCL_IB_HCA", hca);
    else
      out.add("NCCL_IB_HCA", Status::fail, hca, "RDMA devices of this host",
              fmt::format("names {} which this host does not have (devices: {})", join(missing), names(c.rdma_devices)));
  }
  const std::string ifname = var("NCCL_SOCKET_IFNAME");
  if (!ifname.empty()) {
    const auto missing = unmatched_selectors(ifname, c.interfaces);
    if (missing.empty()) out.ok("NCCL_SOCKET_IFNAME", ifname);
    else
      out.add("NCCL_SOCKET_IFNAME", Status::fail, ifname, "interfaces of this host",
              fmt::format("names {} which this host does not have (interfaces: {})", join(missing), names(c.interfaces)));
  }
  for (const char* name : {"NCCL_P2P_DISABLE", "NCCL_SHM_DISABLE", "NCCL_IB_DISABLE", "NCCL_NET_GDR_LEVEL"}) {
    const std::string v = var(name);
    if (v.empty()) continue;
    const bool disables = std::string(name).find("DISABLE") != std::string::npos && v != "0";
    if (disables)
      out.add(name, Status::warn, v, "unset", fmt::format("{} turns a fast transport off: unset it unless on purpose", name));
    else out.ok(name, v);
  }
  bool any = !hca.empty() || !ifname.empty();
  for (const char* name : {"NCCL_P2P_DISABLE", "NCCL_SHM_DISABLE", "NCCL_IB_DISABLE", "NCCL_NET_GDR_LEVEL"})
    any = any || !var(name).empty();
  if (!any) out.ok("NCCL_*", "no transport variables set");  // the healthy default, shown so the check is seen to run
}

void check_nccl_transport(const NcclLog& log, const NcclContext& c, Findings& out) {
  if (log.empty() && !c.host_facts) {
    out.skip("log", "no INIT/NET lines from this process: log them with NCCL_DEBUG=INFO and NCCL_DEBUG_SUBSYS unset "
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
    out.add("network", c.hosts > 1 ? Status::fail : Status::warn, "Socket", "IB (Active RDMA ports: " + join(c.active_rdma_ports) + ")",
            "NCCL fell back to TCP sockets although RDMA ports are Active: check NCCL_IB_DISABLE, NCCL_NET, NCCL_IB_HCA "
            "and that libibverbs and the HCA driver load in this container");
  else
    out.ok("network", log.network.empty() ? "(not reported)" : log.network,
           c.active_rdma_ports.empty() ? "" : "IB");
  // Devices NCCL listed.
  for (const auto& dev : log.ib_devices) {
    const std::string name = dev.substr(0, dev.find(':'));
    if (name.find("bond") != std::string::npos)
      out.add("NET/IB " + dev, Status::warn, dev, "a physical HCA port",
              fmt::format("a bonded device carries NCCL traffic; export NCCL_IB_HCA=^{}", name));
    else out.ok("NET/IB " + dev, dev);
  }
  for (const auto& iface : log.socket_ifaces) {
    const std::string name = iface.substr(0, iface.find(':'));
    if (is_virtual_interface(name))
      out.add("NET/Socket " + name, c.hosts > 1 ? Status::fail : Status::warn, iface, "a physical interface",
              fmt::format("{} is a loopback or virtual interface; set NCCL_SOCKET_IFNAME to the host's data interface", name));
    else out.ok("NET/Socket " + name, iface);
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
    out.add("channels", Status::warn, summary, "P2P or SHM within one host",
            disabled.empty() ? std::string("NCCL routes GPUs of one host through the network: check the P2P matrix and NCCL_P2P_LEVEL")
                             : fmt::format("{} set: unset to use NVLink/PCIe P2P and shared memory", join(disabled)));
  else if (!disabled.empty())
    out.add("channels", Status::warn, summary, "P2P and SHM enabled", fmt::format("{} set", join(disabled)));
  else out.ok("channels", summary);
}

}  // namespace fabricbench::doctor
