// The port a rank measures on: the devices libibverbs lists, the one chosen (named, or the Active port on the
// rank's NUMA node), its GID index (given, or detected: the IPv4 RoCE v2 entry), and the Device that holds its
// context and protection domain. Also the port facts other modules ask for (device names, active MTUs).
#include <arpa/inet.h>
#include <fmt/format.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "fabricbench/error.hpp"
#include "fabricbench/facts/host_files.hpp"
#include "fabricbench/verbs/verbs.hpp"
#include "fail.hpp"

namespace fabricbench::verbs {
namespace {

// The port as sysfs describes it (NUMA node, rate): the one reader of RDMA ports the whole suite uses.
facts::RdmaPort sysfs_port(const std::string& device, int port) {
  for (auto& p : facts::read_rdma_ports(facts::HostFiles{}))
    if (p.device == device && p.port == port) return p;
  return {};
}

// The devices libibverbs lists, released when done.
struct DeviceList {
  int count = 0;
  ibv_device** list = ibv_get_device_list(&count);
  ~DeviceList() {
    if (list) ibv_free_device_list(list);
  }
};

std::string link_layer_name(std::uint8_t layer) { return layer == IBV_LINK_LAYER_ETHERNET ? "Ethernet" : "InfiniBand"; }

bool ipv4_mapped(const ibv_gid& gid) {
  static const std::uint8_t prefix[12] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff};
  return std::memcmp(gid.raw, prefix, sizeof prefix) == 0;
}

bool all_zero(const ibv_gid& gid) {
  for (auto b : gid.raw)
    if (b) return false;
  return true;
}

// The GID entry `index` of the port: (gid, type), or false when the entry is empty.
bool query_gid(ibv_context* context, int port, int index, ibv_gid& gid, std::string& type, bool ethernet) {
  ibv_gid_entry entry{};
  if (ibv_query_gid_ex(context, port, index, &entry, 0) == 0) {
    if (all_zero(entry.gid)) return false;
    gid = entry.gid;
    type = entry.gid_type == IBV_GID_TYPE_ROCE_V2   ? "RoCE v2"
           : entry.gid_type == IBV_GID_TYPE_ROCE_V1 ? "RoCE v1"
                                                    : "IB";
    return true;
  }
  if (ibv_query_gid(context, port, index, &gid) != 0 || all_zero(gid)) return false;
  type = ethernet ? "RoCE" : "IB";
  return true;
}

// For RoCE: the IPv4-mapped RoCE v2 entry (what `ib_write_bw -x N` is usually given), else the first RoCE v2 one,
// else the first entry.
int detect_gid_index(ibv_context* context, int port, int table_len) {
  int first_v2 = -1, first = -1;
  for (int i = 0; i < table_len; ++i) {
    ibv_gid gid;
    std::string type;
    if (!query_gid(context, port, i, gid, type, true)) continue;
    if (first < 0) first = i;
    if (type == "RoCE v2") {
      if (ipv4_mapped(gid)) return i;
      if (first_v2 < 0) first_v2 = i;
    }
  }
  return first_v2 >= 0 ? first_v2 : first;
}

}  // namespace

std::string to_string(ibv_port_state state) {
  switch (state) {
    case IBV_PORT_NOP:
      return "NOP";
    case IBV_PORT_DOWN:
      return "DOWN";
    case IBV_PORT_INIT:
      return "INIT";
    case IBV_PORT_ARMED:
      return "ARMED";
    case IBV_PORT_ACTIVE:
      return "ACTIVE";
    case IBV_PORT_ACTIVE_DEFER:
      return "ACTIVE_DEFER";
  }
  return "UNKNOWN";
}

int mtu_bytes(ibv_mtu mtu) { return 128 << static_cast<int>(mtu); }

ibv_mtu parse_mtu(int bytes) {
  switch (bytes) {
    case 256:
      return IBV_MTU_256;
    case 512:
      return IBV_MTU_512;
    case 1024:
      return IBV_MTU_1024;
    case 2048:
      return IBV_MTU_2048;
    case 4096:
      return IBV_MTU_4096;
  }
  throw Error::usage(fmt::format("--mtu {}: allowed values are 256, 512, 1024, 2048, 4096", bytes));
}

std::string gid_text(const ibv_gid& gid) {
  char text[INET6_ADDRSTRLEN] = {};
  inet_ntop(AF_INET6, gid.raw, text, sizeof text);
  return text;
}

std::vector<std::string> device_names() {
  DeviceList devices;
  std::vector<std::string> names;
  for (int i = 0; i < devices.count; ++i) names.emplace_back(ibv_get_device_name(devices.list[i]));
  return names;
}

std::map<std::string, int> active_mtus() {
  DeviceList devices;
  std::map<std::string, int> out;
  for (int i = 0; i < devices.count; ++i) {
    Owned<ibv_context, ibv_close_device> context(ibv_open_device(devices.list[i]));
    if (!context) continue;
    ibv_device_attr attr{};
    if (ibv_query_device(context.get(), &attr) != 0) continue;
    for (int port = 1; port <= attr.phys_port_cnt; ++port) {
      ibv_port_attr pa{};
      if (ibv_query_port(context.get(), static_cast<std::uint8_t>(port), &pa) == 0 && pa.state == IBV_PORT_ACTIVE)
        out[fmt::format("{}/{}", ibv_get_device_name(devices.list[i]), port)] = 128 << static_cast<int>(pa.active_mtu);
    }
  }
  return out;
}

Device Device::open(const PortRequest& request, const std::string& host) {
  DeviceList devices;
  if (!devices.list || devices.count == 0)
    throw Error::usage(
        fmt::format("no RDMA device on host {}: libibverbs lists none (looked for /sys/class/infiniband "
                    "devices with a user-space provider)",
                    host));
  std::vector<std::string> names, states;
  struct Candidate {
    ibv_device* device;
    int port;
    int numa;
  };
  std::vector<Candidate> active;
  for (int i = 0; i < devices.count; ++i) {
    const std::string name = ibv_get_device_name(devices.list[i]);
    names.push_back(name);
    if (!request.device.empty() && name != request.device) continue;
    Owned<ibv_context, ibv_close_device> context(ibv_open_device(devices.list[i]));
    if (!context) fail("ibv_open_device(" + name + ")", errno);
    ibv_device_attr attr{};
    if (int rc = ibv_query_device(context.get(), &attr)) fail("ibv_query_device(" + name + ")", rc);
    if (request.port > attr.phys_port_cnt)
      throw Error::usage(fmt::format("--ib-port {}: device {} on host {} has ports 1-{}", request.port, name, host,
                                     int(attr.phys_port_cnt)));
    for (int p = request.port > 0 ? request.port : 1; p <= (request.port > 0 ? request.port : attr.phys_port_cnt);
         ++p) {
      ibv_port_attr port{};
      if (int rc = ibv_query_port(context.get(), p, &port)) fail(fmt::format("ibv_query_port({}, {})", name, p), rc);
      if (port.state == IBV_PORT_ACTIVE) {
        active.push_back({devices.list[i], p, sysfs_port(name, p).numa_node});
        break;
      }
      states.push_back(fmt::format("{} port {} {}", name, p, to_string(port.state)));
    }
  }
  if (!request.device.empty() && std::find(names.begin(), names.end(), request.device) == names.end())
    throw Error::usage(fmt::format("--ib-dev {}: no such RDMA device on host {} (devices: {})", request.device, host,
                                   fmt::join(names, ", ")));
  if (active.empty()) {
    if (!request.device.empty())
      throw Error::usage(
          fmt::format("--ib-dev {}: {} on host {} is not Active", request.device, fmt::join(states, ", "), host));
    throw Error::usage(fmt::format("no Active RDMA port on host {} ({})", host, fmt::join(states, ", ")));
  }
  // The HCA on the rank's NUMA node when there is one, else the first Active port.
  Candidate chosen = active.front();
  for (const auto& c : active)
    if (request.numa_node >= 0 && c.numa == request.numa_node) {
      chosen = c;
      break;
    }

  Device d;
  d.port_.device = ibv_get_device_name(chosen.device);
  d.port_.port = chosen.port;
  d.port_.numa_node = chosen.numa;
  d.context_.reset(ibv_open_device(chosen.device));
  if (!d.context_) fail("ibv_open_device(" + d.port_.device + ")", errno);
  if (int rc = ibv_query_device(d.context(), &d.attributes_)) fail("ibv_query_device", rc);
  ibv_port_attr port{};
  if (int rc = ibv_query_port(d.context(), chosen.port, &port)) fail("ibv_query_port", rc);
  d.port_.state = port.state;
  d.port_.link_layer = link_layer_name(port.link_layer);
  d.port_.active_mtu = port.active_mtu;
  d.port_.lid = port.lid;
  d.port_.rate = sysfs_port(d.port_.device, chosen.port).rate;
  int index = request.gid_index;
  if (index < 0 && d.port_.ethernet()) index = detect_gid_index(d.context(), chosen.port, port.gid_tbl_len);
  if (index >= 0) {
    if (index >= port.gid_tbl_len ||
        !query_gid(d.context(), chosen.port, index, d.port_.gid, d.port_.gid_type, d.port_.ethernet()))
      throw Error::usage(fmt::format("--gid-index {}: {} port {} on host {} has no GID entry there (table of {})",
                                     index, d.port_.device, chosen.port, host, port.gid_tbl_len));
    d.port_.gid_index = index;
  } else {
    d.port_.gid_type = "IB";
  }
  d.pd_.reset(ibv_alloc_pd(d.context()));
  if (!d.pd_) fail("ibv_alloc_pd", errno);
  return d;
}

}  // namespace fabricbench::verbs
