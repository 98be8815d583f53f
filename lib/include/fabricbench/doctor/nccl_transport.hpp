// The doctor's rules on what an NCCL INFO log says (job::NcclLog, job/nccl_log.hpp) and on the NCCL_* variables:
// the network and devices NCCL chose against what the hosts have.
#pragma once
#include <map>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "fabricbench/doctor/findings.hpp"
#include "fabricbench/job/nccl_log.hpp"

namespace fabricbench::doctor {

// What the transport rules compare the log with.
struct NcclContext {
  std::vector<std::string> active_rdma_ports;    // "mlx5_0/1"
  std::set<std::string> rdma_devices;            // every RDMA device name on the host
  std::set<std::string> interfaces;              // network interfaces on the host (/sys/class/net)
  std::map<std::string, std::string> variables;  // NCCL_* from the process environment
  int hosts = 1;                                 // hosts in the job: a single host needs no network
  // false: the context comes from a log alone (fabric-doctor --nccl-log), and what the hosts have (RDMA ports,
  // interfaces) is unknown; the rules that need it say so instead of judging.
  bool host_facts = true;
};

// nccl.variables: NCCL_IB_HCA / NCCL_SOCKET_IFNAME naming what does not exist, P2P/SHM disabled.
void check_nccl_variables(const NcclContext& context, Findings& out);
// nccl.transport: the network chosen and the devices and channel transports of the log.
void check_nccl_transport(const job::NcclLog& log, const NcclContext& context, Findings& out);

// Whether the log's channels through an RDMA network went GPUDirect RDMA, per NIC, and why not.
struct GdrState {
  bool known = false;  // the log has channels through an RDMA plugin, or NCCL's per-NIC GDR lines
  bool off = false;    // some channel without it, or no NIC able to
  std::string value;   // "on (NIC mlx5_0:1/IB)", "off (NIC ...)", "partly: on (...), off on ...", "off"
  std::string why;     // where off: the NIC cannot reach GPU memory, NCCL_NET_GDR_LEVEL, the GPU's distance
};
GdrState gdr_state(const job::NcclLog& log, const NcclContext& context);
// The path in one line, as fabric-coll's rows name it: "P2P/CUMEM x24", "NET/IB x16; GPUDirect RDMA: on (NIC
// mlx5_0:1/IB)", "SHM/direct x8"; "" for a log without channel or GDR lines.
std::string nccl_path_text(const job::NcclLog& log);

// NCCL_SOCKET_IFNAME / NCCL_IB_HCA syntax: comma-separated prefixes, "=" exact names, "^" excludes; IB entries may
// carry ":port". The entries of an include list that match none of `present` ("" when all match or it excludes).
std::vector<std::string> unmatched_selectors(const std::string& value, const std::set<std::string>& present);

}  // namespace fabricbench::doctor
