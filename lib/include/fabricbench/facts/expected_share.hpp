// "% of expected": each bandwidth row is held against what the hardware the environment capture found should reach
// (/env/expected: NVLink links x per-link speed, PCIe generation x width, RDMA port rates), and a rule from
// configs/expected.ini (default: below 80% at the largest size, the seeds' rule of thumb) turns a result below it
// into a warning. Which figure a measurement is held against:
//   - one stream between two hosts: the slower host's fastest Active RDMA port;
//   - one stream within a host, GPU memory: that host's slowest GPU link (NVLink, else PCIe); host memory: none
//     (a memory copy has no interconnect figure);
//   - every rank at once (collectives' bus bandwidth, aggregate p2p): across hosts each rank's share of the least
//     node's RDMA bandwidth, and never more than its GPU link; within a host with GPU memory the GPU link.
// Bidirectional figures are held against twice the one-way reference.
#pragma once
#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

#include "fabricbench/facts/host.hpp"
#include "fabricbench/results/table.hpp"

namespace fabricbench::facts {

// What a measured bandwidth is held against, GB/s (1e9 B/s), and where the figure came from. NaN: nothing applies.
struct Reference {
  double gbps = NAN;
  std::string basis;  // "rdma_port mlx5_0/1 on node1: 200 Gb/s"
  bool known() const { return std::isfinite(gbps) && gbps > 0; }
  Reference scaled(double factor, const std::string& why) const;
};

// configs/expected.ini, section [expected].
struct ExpectedRule {
  double warn_below_percent = 80;     // warn when a judged row reaches less than this share of its reference
  std::uint64_t min_bytes = 1u << 20;  // rows are judged at the run's largest size, and only from this size up
  // Missing keys keep the defaults; an unreadable file, unknown key or bad value is Error::usage naming the file
  // and the key. `must_exist` false: a missing file gives the defaults (the shipped file of a bare binary).
  static ExpectedRule load(const std::string& path, bool must_exist);
};

class ExpectedShare {
 public:
  ExpectedShare() = default;
  // `found`: every host's /env/expected rows (rank 0). `largest_bytes`: the run's largest size (0: judge every size).
  ExpectedShare(std::vector<Expected> found, ExpectedRule rule, std::uint64_t largest_bytes);

  Reference stream(const std::string& host_a, const std::string& host_b, bool gpu_memory) const;
  Reference per_rank(const std::vector<std::string>& hosts, int ranks_per_host, bool gpu_memory) const;
  Reference port(const std::string& host, const std::string& port) const;

  // A bandwidth in GB/s from a value in `unit` (MB/s, MiB/s, Gb/s, GB/s); NaN for other units.
  static double gbps(double value, results::Unit unit);
  // The two columns of every table that has a bandwidth: expected_gbps and pct_expected.
  static std::vector<results::Column> columns();
  // Fills them from `measured_gbps` and `ref`; returns the warning line when the row is judged (its size is the
  // largest and at least min_bytes) and below the rule, else "". `what` names the row ("bw at 4194304 B").
  std::string stamp(results::Row& row, double measured_gbps, const Reference& ref, std::uint64_t bytes,
                    const std::string& what) const;
  // Whether a value at `bytes` that reaches `percent` of its reference breaks the rule.
  bool below(double percent, std::uint64_t bytes) const;
  const ExpectedRule& rule() const { return rule_; }

 private:
  // The smallest (over `hosts`) of each host's largest (`largest`) or smallest figure of `kind`.
  Reference over_hosts(const std::vector<std::string>& hosts, const std::string& kind, bool largest) const;
  Reference gpu_link(const std::vector<std::string>& hosts) const;

  std::vector<Expected> found_;
  ExpectedRule rule_;
  std::uint64_t largest_ = 0;
};

}  // namespace fabricbench::facts
