// --slow's host sampler's view of the host's RDMA ports (host_sampler.hpp takes them as a function): each port's
// state, rate and counters from sysfs, read through facts' one RDMA port reader (a test's made-up tree through
// FABRICBENCH_TEST_SYSROOT, as every tool's).
#pragma once
#include <vector>

#include "fabricbench/facts/host_files.hpp"
#include "fabricbench/job/slow_record.hpp"

namespace fabricbench::tools::watchdog {

std::vector<job::slow::NicSample> nic_samples(const facts::HostFiles& files);

}  // namespace fabricbench::tools::watchdog
