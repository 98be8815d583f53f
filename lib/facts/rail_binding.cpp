#include "fabricbench/facts/rail_binding.hpp"

#include <fmt/format.h>

#include "fabricbench/error.hpp"

namespace fabricbench::facts {
namespace {

int numa_of(const HostFiles& files, const std::string& sysfs_dir) {
  const auto v = files.number(sysfs_dir + "/numa_node");  // "-1" (none) does not read as a number
  return v ? static_cast<int>(*v) : -1;
}

}  // namespace

RailBinding RailBinding::choose(const HostFiles& files, int rail, const RailMap* map, const char* cuda_visible) {
  RailBinding b;
  b.rail = rail;
  const auto gpu = cuda_gpu(files, rail, cuda_visible);
  if (map) {
    if (rail >= map->rails())
      throw Error::usage(fmt::format("local rank {} has no rail: {} has {} rail(s), 0..{}; run {} rank(s) per node",
                                     rail, map->source(), map->rails(), map->rails() - 1, map->rails()));
    b.nic = map->rail(rail);
    b.source = "from " + map->origin(rail);
  } else {
    const auto chosen = rail_rdma_port(files, rail, cuda_visible);
    if (!chosen) {
      std::size_t active = 0;
      for (const auto& p : read_rdma_ports(files)) active += p.active() ? 1 : 0;
      const auto root = files.root() + "/sys";
      throw Error::usage(
          !gpu.empty() || active == 0
              ? fmt::format("no rail map, and this host has no Active RDMA port under {}/class/infiniband to choose "
                            "for local rank {}{}; give --rail-map FILE",
                            root, rail, gpu.empty() ? "" : " (its GPU is " + gpu + ")")
              : fmt::format("no rail map, and local rank {} has no GPU {} ({} under {}) and no Active RDMA port {} "
                            "(the host has {}); give --rail-map FILE or fewer ranks per node",
                            rail, rail, pci_devices(files, "0x10de", {"0300", "0302"}).size(), root, rail, active));
    }
    b.nic.rdma = chosen->port.device, b.nic.port = chosen->port.port;
    b.nic.net = chosen->port.netdev;
    if (b.nic.net.empty()) {  // an InfiniBand port: the IPoIB interface of its PCI function
      const auto nets = files.list("/sys/class/infiniband/" + b.nic.rdma + "/device/net");
      if (!nets.empty()) b.nic.net = nets.front();
    }
    b.source = chosen->why;
  }
  if (!gpu.empty()) b.numa = pci_numa_node(files, gpu);
  if (b.numa < 0 && !b.nic.rdma.empty()) b.numa = numa_of(files, "/sys/class/infiniband/" + b.nic.rdma + "/device");
  if (b.numa < 0 && !b.nic.net.empty() && b.nic.net.find('/') == std::string::npos)
    b.numa = numa_of(files, "/sys/class/net/" + b.nic.net + "/device");
  if (b.numa >= 0) b.cpulist = files.line(fmt::format("/sys/devices/system/node/node{}/cpulist", b.numa));
  return b;
}

std::string RailBinding::shown() const {
  if (nic.rdma.empty()) return nic.net;
  return nic.name() + (nic.net.empty() ? "" : " (net " + nic.net + ")");
}

std::vector<std::pair<std::string, std::string>> RailBinding::variables() const {
  std::vector<std::pair<std::string, std::string>> v;
  if (!nic.rdma.empty()) {
    v.emplace_back("UCX_NET_DEVICES", nic.name());
    v.emplace_back("NCCL_IB_HCA", "=" + nic.rdma);
    v.emplace_back("OMPI_MCA_btl_openib_if_include", nic.name());
  }
  if (!nic.net.empty()) {
    v.emplace_back("OMPI_MCA_btl_tcp_if_include", nic.net);
    if (nic.net.find('/') == std::string::npos) v.emplace_back("NCCL_SOCKET_IFNAME", "=" + nic.net);
  }
  v.emplace_back("FABRICBENCH_RAIL", std::to_string(rail));
  v.emplace_back("FABRICBENCH_RAIL_NIC", nic.name());
  return v;
}

}  // namespace fabricbench::facts
