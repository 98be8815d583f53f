// Across hosts: each fact every host reports, the value most hosts have, and the hosts that differ.
#include <fmt/format.h>

#include "fabricbench/doctor/checks.hpp"

namespace fabricbench::doctor {
namespace {

std::string most_common(const std::vector<HostFacts>& hosts, const std::string& key, int* count) {
  std::map<std::string, int> votes;
  for (const auto& h : hosts)
    if (auto it = h.facts.find(key); it != h.facts.end()) ++votes[it->second];
  std::string best;
  *count = 0;
  for (const auto& [value, n] : votes)
    if (n > *count) best = value, *count = n;
  return best;
}

}  // namespace

const std::vector<std::string>& consistency_keys() {
  static const std::vector<std::string> keys{"driver",       "cuda",   "nccl",      "mpi",       "rdma_core",
                                             "hca_firmware", "kernel", "gpu_count", "gpu_model", "hca_count",
                                             "port_rates",   "mtu",    "gid_type"};
  return keys;
}

void check_consistency(const std::vector<HostFacts>& hosts, Findings& out) {
  out.begin_check("", -1, "job.consistency");
  if (hosts.size() < 2) {
    out.ok("hosts", fmt::format("{} host: nothing to compare", hosts.size()));
    return;
  }
  for (const auto& key : consistency_keys()) {
    int votes = 0;
    const std::string common = most_common(hosts, key, &votes);
    std::vector<std::string> differ;
    for (const auto& h : hosts) {
      const auto it = h.facts.find(key);
      const std::string v = it == h.facts.end() ? "" : it->second;
      if (v != common) differ.push_back(fmt::format("{} has '{}'", h.host, v));
    }
    const std::string shown = common.empty() ? "(none)" : common;
    if (differ.empty()) {
      out.ok(key, fmt::format("{} on all {} hosts", shown, hosts.size()));
      continue;
    }
    const bool must_match = key == "nccl" || key == "driver";
    out.add(key, must_match ? Status::fail : Status::warn, join(differ, "; "),
            fmt::format("'{}' (on {} of {} hosts)", shown, votes, hosts.size()),
            must_match
                ? "mismatched NCCL or driver versions break or slow collectives: install the same version everywhere"
                : "a host unlike the others: update or exclude it");
  }
}

}  // namespace fabricbench::doctor
