// The functions the check table (checks.cpp) runs, one file per group: rdma_checks.cpp, limits_checks.cpp,
// nccl_checks.cpp, gpu_checks.cpp, host_checks.cpp. Each reads only its Context and writes findings. Internal to
// lib/doctor: tests reach them through select_checks and run_checks.
#pragma once
#include "fabricbench/doctor/checks.hpp"

namespace fabricbench::doctor::checks {

// rdma
void rdma_devices(const Context& c, Findings& out);
void rdma_modules(const Context& c, Findings& out);
void rdma_port_state(const Context& c, Findings& out);
void rdma_link(const Context& c, Findings& out);
void rdma_errors(const Context& c, Findings& out);
void rdma_ecn(const Context& c, Findings& out);
void rdma_ibacm(const Context& c, Findings& out);

// limits
void limits_memlock(const Context& c, Findings& out);
void limits_shm(const Context& c, Findings& out);

// nccl
void nccl_variables(const Context& c, Findings& out);
void nccl_transport(const Context& c, Findings& out);  // applies with a log only (c.nccl_log)

// gpu (NVML): apply with c.gpus only
void gpu_p2p(const Context& c, Findings& out);
void gpu_nvlink(const Context& c, Findings& out);
void gpu_nvlink_errors(const Context& c, Findings& out);
void gpu_remapped_rows(const Context& c, Findings& out);
void gpu_ecc(const Context& c, Findings& out);
void gpu_pcie(const Context& c, Findings& out);
void gpu_versions(const Context& c, Findings& out);
void gpu_clocks(const Context& c, Findings& out);

// host
void host_thp(const Context& c, Findings& out);
void host_fragmentation(const Context& c, Findings& out);
void host_numa(const Context& c, Findings& out);
void host_acs(const Context& c, Findings& out);
void host_iommu(const Context& c, Findings& out);

}  // namespace fabricbench::doctor::checks
