// The nccl group: the rules of nccl_log.cpp (NCCL variables, the transports of a probe run's INFO log) on what this
// host and process show them.
#include "check_functions.hpp"

namespace fabricbench::doctor::checks {
namespace {

// What the NCCL rules compare with: the RDMA devices and interfaces here, NCCL_* of this process.
NcclContext nccl_context(const Context& c) {
  NcclContext n;
  for (const auto& p : c.ports) {
    n.rdma_devices.insert(p.device);
    if (p.active()) n.active_rdma_ports.push_back(p.name());
  }
  for (const auto& iface : c.files.list("/sys/class/net")) n.interfaces.insert(iface);
  for (const auto& [k, v] : c.variables)
    if (k.rfind("NCCL_", 0) == 0) n.variables[k] = v;
  n.hosts = c.hosts;
  return n;
}

}  // namespace

void nccl_variables(const Context& c, Findings& out) { check_nccl_variables(nccl_context(c), out); }
void nccl_transport(const Context& c, Findings& out) { check_nccl_transport(*c.nccl_log, nccl_context(c), out); }

}  // namespace fabricbench::doctor::checks
