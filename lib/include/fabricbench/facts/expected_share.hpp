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
// How a row is judged depends on what its figure is (Reference::Kind):
//   - rated: a port's line rate, which one stream of large messages reaches (perftest, OSU): judged at the run's
//     largest size from min_bytes up, below warn_below_percent (80);
//   - calibrated: on a GPU link, the healthy curve of the row's op and rank count measured on this link figure
//     (expected_curve.hpp): judged at every size from min_bytes up, below calibrated_warn_below_percent;
//   - uncalibrated: a GPU link with no such curve: the link's figure is shown, and never judged.
#pragma once
#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

#include "fabricbench/facts/expected_curve.hpp"
#include "fabricbench/facts/host.hpp"
#include "fabricbench/results/table.hpp"

namespace fabricbench::facts {

// What a measured bandwidth is held against, GB/s (1e9 B/s), and where the figure came from. NaN: nothing applies.
struct Reference {
  // network: a healthy fabric's busbw per NIC x the node's NICs, for NCCL collectives across nodes (judged at the
  // largest size from 1 GiB); not_network: a row above what those NICs carry (never judged: NVLS/Tree reduced inside
  // the nodes first).
  enum class Kind { rated, calibrated, uncalibrated, network, not_network };
  double gbps = NAN;
  std::string basis;                       // "rdma_port mlx5_0/1 on node1: 200 Gb/s"
  HardwarePath path = HardwarePath::none;  // the hardware the figure is of
  Kind kind = Kind::rated;
  double line_gbps = NAN;  // network: what the node's NICs carry at line rate (above it: not a network measurement)
  bool known() const { return std::isfinite(gbps) && gbps > 0; }
  Reference scaled(double factor, const std::string& why) const;
  static const char* name(Kind kind);  // the expected_from column: "rated", "calibrated", "uncalibrated", ...
};

// configs/expected-network.csv: a healthy ring's busbw per NIC across nodes, by the NIC's line rate, with its source
// (NVIDIA's statements in nccl-tests' issues). A rate without a row has no reference.
class NetworkBook {
 public:
  struct Entry {
    double nic_gbitps = 0, busbw_gbps_per_nic = 0;
    std::string source;
  };
  // Error::usage naming the file and line for a bad header or value.
  static NetworkBook load(const std::string& path);
  const Entry* find(double nic_gbitps) const;

 private:
  std::vector<Entry> entries_;
};

// configs/expected.ini, section [expected].
struct ExpectedRule {
  double warn_below_percent = 80;             // rated rows: warn below this share of the line rate, at the largest size
  std::uint64_t min_bytes = 1u << 20;         // rows are judged only from this size up
  double calibrated_warn_below_percent = 70;  // calibrated rows: warn below this share of the healthy curve
  CurveBook curves;     // key `curves`: a CSV, relative to the rule file; none: GPU links uncalibrated
  NetworkBook network;  // key `network`: a CSV, relative to the rule file; none: NCCL across nodes uncalibrated
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
  // NCCL collectives across 2 or more of `hosts`: the node's Active RDMA ports (the host with the fewest) x the
  // healthy busbw per NIC at their rate (kind network), or their line rate marked uncalibrated where the book has no
  // such rate; unknown where a host has no Active port.
  Reference across_nodes(const std::vector<std::string>& hosts) const;
  // A sum over `pairs` concurrent pairs (OSU's mbw_mr), each held to `slowest_pair` (stream() of the slowest pair;
  // `hosts` every pair's two hosts): pairs x that. Pairs between hosts share those hosts' NICs, so the sum is at most
  // one node's RDMA share; pairs inside one host each have their own GPUs' links (NVLink, PCIe), which no node figure
  // bounds (capping them by one GPU's link read 155% on 4 x H200).
  Reference pairs_sum(const Reference& slowest_pair, int pairs, const std::vector<std::string>& hosts) const;
  Reference port(const std::string& host, const std::string& port) const;
  // The figure a row of `op` over `ranks` GPUs at `bytes` is held against, from its hardware reference: on a GPU
  // link the calibrated curve's value there (kind calibrated), or the link's figure marked uncalibrated where no
  // curve matches; other references as they are (rated).
  Reference at_size(const Reference& hardware, std::string_view op, int ranks, std::uint64_t bytes) const;

  // A bandwidth in GB/s from a value in `unit` (MB/s, MiB/s, Gb/s, GB/s); NaN for other units.
  static double gbps(double value, results::Unit unit);
  // The three columns of every table that has a bandwidth: expected_gbps, pct_expected and expected_from.
  static std::vector<results::Column> columns();
  // Fills them from `measured_gbps` and `ref`; returns the warning line when the row is judged and below the rule,
  // else "". `what` names the row ("bw at 4194304 B").
  std::string stamp(results::Row& row, double measured_gbps, const Reference& ref, std::uint64_t bytes,
                    const std::string& what) const;
  // Whether a value at `bytes` that reaches `percent` of a reference of `kind` breaks the rule.
  bool below(double percent, std::uint64_t bytes, Reference::Kind kind) const;
  // The rule's threshold for a reference of `kind` (NaN: never judged).
  double threshold(Reference::Kind kind) const;
  const ExpectedRule& rule() const { return rule_; }

 private:
  // The smallest (over `hosts`) of each host's largest (`largest`) or smallest figure of `kind`.
  Reference over_hosts(const std::vector<std::string>& hosts, HardwarePath kind, bool largest) const;
  Reference gpu_link(const std::vector<std::string>& hosts) const;

  std::vector<Expected> found_;
  ExpectedRule rule_;
  std::uint64_t largest_ = 0;
};

}  // namespace fabricbench::facts
