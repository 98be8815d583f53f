// Which NIC a rank uses on its rail: the rail map a user hands the sweep and the launcher (`--rail-map FILE`), the
// NIC a rank was given through its environment (what its MPI or NCCL was told before MPI_Init), and how many bytes a
// NIC moved (its counters: netdev tx/rx bytes, RDMA port_xmit_data/port_rcv_data), the proof of the data path.
//
// Rail map format (fabric-rail-exec and fabric-sweep read it with RailMap):
//   # one line per rail, the same on every host
//   0 rdma=mlx5_0:1 net=ib0
//   1 rdma=mlx5_1:1 net=ib1        (net= is an interface name or A.B.C.D/N, the subnet of one)
#pragma once
#include <cmath>
#include <functional>
#include <istream>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "fabricbench/facts/host_files.hpp"

namespace fabricbench::facts {

struct RailNic {
  std::string rdma;  // "mlx5_0" ("" none)
  int port = 1;
  std::string net;  // "ib0" or "10.91.0.0/24" ("" none)
  // What a row names: the RDMA device and port, else the interface.
  std::string name() const { return !rdma.empty() ? rdma + ":" + std::to_string(port) : net; }
};

class RailMap {
 public:
  // Error::usage naming the option, the file and line and what a line allows: a bad line, a rail given twice or
  // missing (rails are 0..R-1), an unknown key, a line with no NIC; a file that is no text (cli::require_text_file).
  static RailMap read(const std::string& path, const std::string& option = "--rail-map");
  static RailMap parse(std::istream& in, std::string_view source, std::string_view option = "--rail-map");
  int rails() const { return static_cast<int>(rails_.size()); }
  const RailNic& rail(int r) const { return rails_.at(static_cast<std::size_t>(r)); }
  // Where rail `r` was given: "rails.map:4".
  const std::string& source() const { return source_; }
  std::string origin(int r) const { return source_ + ":" + std::to_string(lines_.at(static_cast<std::size_t>(r))); }

 private:
  std::vector<RailNic> rails_;
  std::vector<int> lines_;
  std::string source_;
};

// The NICs a rank was given, per family of traffic, from its environment (`env` looks a variable up; "" unset).
// MPI: UCX_NET_DEVICES where Open MPI's pml is ucx, else OMPI_MCA_btl_tcp_if_include, else UCX_NET_DEVICES, else
// FABRICBENCH_RAIL_NIC (what fabric-rail-exec set). NCCL: NCCL_IB_HCA, else NCCL_SOCKET_IFNAME (the exact-match
// '=' and the exclude '^' prefixes shown as given). A subnet (A.B.C.D/N) is shown with the interface holding an
// address in it ("eth1 (10.91.0.0/24)") when `interface_of` finds one.
struct GivenNics {
  std::string mpi, nccl;
  static GivenNics from(const std::function<std::string(const char*)>& env,
                        const std::function<std::string(const std::string&)>& interface_of);
};

// The interface of this host (network namespace) with an IPv4 address inside `cidr` ("10.91.0.0/24"), "" when none
// or when `cidr` is not a subnet.
std::string interface_in_subnet(const std::string& cidr);

// The interface or RDMA port behind a NIC name as a row shows it: "eth1 (10.91.0.0/24)" -> "eth1", "mlx5_0:1" ->
// "mlx5_0:1". Used to read its counters.
std::string counter_device(const std::string& nic);

// The PCI address of GPU `index` as CUDA numbers them: PCI address order, or the entries of a numeric
// CUDA_VISIBLE_DEVICES given as `cuda_visible` (null when unset). "" when there is none or the order is unknown
// (UUIDs).
std::string cuda_gpu(const HostFiles& files, int index, const char* cuda_visible);

// The RDMA port of rail `rail` from the host's facts (RailBinding's rule without a map): the Active port nearest
// GPU `rail` (GPUs as CUDA numbers them: PCI address order, or the entries of a numeric CUDA_VISIBLE_DEVICES given
// as `cuda_visible`, null when unset), nearest meaning the longest run of PCI bridges the two share, then the same
// NUMA node, then the name; where the host has no such GPU or no Active port on a PCI device (Soft-RoCE), the
// rail-th Active port in name order. nullopt when there is neither. `why` says which rule chose.
struct RailPort {
  RdmaPort port;
  std::string why;  // "nearest GPU 0000:17:00.0" | "Active port 1 in name order"
};
std::optional<RailPort> rail_rdma_port(const HostFiles& files, int rail, const char* cuda_visible);

// Bytes the NIC moved so far, both directions: a network interface's statistics/{tx,rx}_bytes, or an RDMA port's
// counters/port_{xmit,rcv}_data (in 4-byte words) for "device:port". NaN where there are no such counters.
double nic_bytes(const HostFiles& files, const std::string& device);

}  // namespace fabricbench::facts
