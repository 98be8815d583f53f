// What one host is, as every tool sees it: its files (under a root prefix for tests), its RDMA ports, the RDMA MTUs
// libibverbs reported, its GPUs through NVML; the facts the across-host consistency compares, and the bandwidth its
// hardware should reach (/env/expected). The doctor's check context extends this with what only checks read.
#pragma once
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "fabricbench/facts/gpu_info.hpp"
#include "fabricbench/facts/host_files.hpp"

namespace fabricbench::facts {

struct Host {
  HostFiles files;
  std::string host;
  std::vector<RdmaPort> ports;
  std::map<std::string, int> active_mtu;  // "mlx5_0/1" -> bytes, where libibverbs told us
  const GpuInfo* gpus = nullptr;
  std::string gpu_skip = "NVML not loaded";
  bool any_gpu() const;  // NVIDIA GPUs on the host (NVML or PCI)

  // This host's files (under FABRICBENCH_TEST_SYSROOT when set) and ports; no NVML (the caller loads it).
  static Host read(const std::string& host);
};

// The facts of a host the consistency check compares beyond /env/hosts' versions: HCA count and firmware, port
// rates, MTU, GID type, rdma-core, GPU count and model.
std::map<std::string, std::string> hardware_facts(const Host& host);

// Bandwidth the hardware should reach, from what was found (GB/s, 10^9 B/s, per direction).
// The hardware a figure is of: a GPU's NVLink or PCIe (per GPU), one RDMA port, or a node's Active ports together.
enum class HardwarePath { none, nvlink, pcie, rdma_port, rdma_node };
std::string_view to_string(HardwarePath path);      // "nvlink", "pcie", "rdma_port", "rdma_node"; "" for none
HardwarePath hardware_path(std::string_view name);  // the inverse; none for any other name
inline bool is_gpu_link(HardwarePath path) { return path == HardwarePath::nvlink || path == HardwarePath::pcie; }

struct Expected {
  std::string host;
  HardwarePath kind = HardwarePath::none;  // the /env/expected kind column: to_string(kind)
  std::string subject;                     // "GPU0" / "mlx5_0/1" / "node"
  double gbps = 0;
  std::string basis;  // "18 links x 26.56 GB/s"
};
std::vector<Expected> expected_bandwidth(const Host& host);

}  // namespace fabricbench::facts
