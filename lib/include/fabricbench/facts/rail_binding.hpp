// The rail rule: which NIC and NUMA node local rank `rail` of a host uses. From the rail map when one is given (its
// line `rail`), else from the host's PCI tree (facts::rail_rdma_port: the Active RDMA port nearest GPU `rail`). It is
// the one rule of the suite: fabric-rail-exec (the launchers' binder, before MPI starts) applies it to a rank's
// environment and CPUs, and fabric-sweep --rails follows it for a rank that was given no RDMA device.
#pragma once
#include <string>
#include <utility>
#include <vector>

#include "fabricbench/facts/host_files.hpp"
#include "fabricbench/facts/rail_nic.hpp"

namespace fabricbench::facts {

struct RailBinding {
  int rail = 0;
  RailNic nic;          // without a map: the chosen port and its network interface
  std::string source;   // "from rails.map:4" | "nearest GPU 0000:03:00.0" | "Active port 2 in name order"
  int numa = -1;        // the rail's GPU's NUMA node, else its NIC's; -1 none known
  std::string cpulist;  // that node's CPUs as sysfs lists them ("" none)

  // `cuda_visible`: CUDA_VISIBLE_DEVICES (null when unset). Error::usage when there is no map and nothing to choose
  // from (no GPU `rail` and no rail-th Active port), saying to give --rail-map.
  static RailBinding choose(const HostFiles& files, int rail, const RailMap* map, const char* cuda_visible);

  // The NIC as the binding line shows it: "mlx5_1:1 (net ib1)", "mlx5_1:1", or the net value.
  std::string shown() const;
  // The variables a rank's MPI, UCX and NCCL read for this NIC, in the order the binding line prints them; then
  // FABRICBENCH_RAIL and FABRICBENCH_RAIL_NIC. For rdma=DEV:PORT: UCX_NET_DEVICES=DEV:PORT, NCCL_IB_HCA==DEV,
  // OMPI_MCA_btl_openib_if_include=DEV:PORT; for net=IF: OMPI_MCA_btl_tcp_if_include=IF, NCCL_SOCKET_IFNAME==IF
  // (only the first for a subnet).
  std::vector<std::pair<std::string, std::string>> variables() const;
  // The two that are always set, whatever the environment held before.
  static bool always_set(const std::string& name) { return name.rfind("FABRICBENCH_RAIL", 0) == 0; }
};

}  // namespace fabricbench::facts
