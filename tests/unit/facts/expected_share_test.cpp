// "% of expected": which figure a measurement is held against, the rule file, and the stamped columns, on
// hand-computed cases.
#include <gtest/gtest.h>

#include <cstdio>
#include <fstream>

#include "fabricbench/facts/expected_share.hpp"
#include "fabricbench/error.hpp"

namespace fabricbench::facts {
namespace {

// Two hosts: a has two 200 Gb/s ports and 8 GPUs with 18 NVLinks; b has one 100 Gb/s port and PCIe GPUs only.
std::vector<Expected> two_hosts() {
  return {{"a", "nvlink", "GPU0", 18 * 26.5625, "18 links x 26.56 GB/s"},
          {"a", "nvlink", "GPU1", 17 * 26.5625, "17 links x 26.56 GB/s"},
          {"a", "pcie", "GPU0", 63.0, "PCIe gen 5 x16"},
          {"a", "rdma_port", "mlx5_0/1", 25.0, "200 Gb/s"},
          {"a", "rdma_port", "mlx5_1/1", 25.0, "200 Gb/s"},
          {"a", "rdma_node", "node", 50.0, "2 Active port(s), 400 Gb/s in all"},
          {"b", "pcie", "GPU0", 31.5, "PCIe gen 4 x16"},
          {"b", "rdma_port", "mlx5_0/1", 12.5, "100 Gb/s"},
          {"b", "rdma_node", "node", 12.5, "1 Active port(s), 100 Gb/s in all"}};
}

TEST(ExpectedShare, AStreamBetweenHostsIsTheSlowerHostsFastestPort) {
  const ExpectedShare share(two_hosts(), {}, 0);
  EXPECT_TRUE(std::isnan(share.stream("a", "a", false).gbps)) << "host memory on one host: nothing applies";
  const auto across = share.stream("a", "b", false);
  EXPECT_DOUBLE_EQ(across.gbps, 12.5);
  EXPECT_NE(across.basis.find("mlx5_0/1 on b"), std::string::npos) << across.basis;
  EXPECT_FALSE(share.stream("a", "x", false).known()) << "a host with no RDMA port: no reference";
  // GPU memory on one host: the slowest GPU's NVLink; PCIe where there is no NVLink.
  EXPECT_DOUBLE_EQ(share.stream("a", "a", true).gbps, 17 * 26.5625);
  EXPECT_DOUBLE_EQ(share.stream("b", "b", true).gbps, 31.5);
}

TEST(ExpectedShare, EveryRankAtOnceSharesTheNodeAndNeverExceedsItsGpuLink) {
  const ExpectedShare share(two_hosts(), {}, 0);
  // Across a and b, 2 ranks per host: the least node (b, 12.5 GB/s) split over 2 ranks.
  EXPECT_DOUBLE_EQ(share.per_rank({"a", "a", "b", "b"}, 2, true).gbps, 6.25);
  EXPECT_DOUBLE_EQ(share.per_rank({"a", "b"}, 1, false).gbps, 12.5);
  // One host: the GPU link (NVLink), or nothing for host memory.
  EXPECT_DOUBLE_EQ(share.per_rank({"a", "a"}, 2, true).gbps, 17 * 26.5625);
  EXPECT_FALSE(share.per_rank({"a", "a"}, 2, false).known());
  // A fast node over a slow GPU link: the GPU link limits.
  const ExpectedShare fat({{"p", "pcie", "GPU0", 10.0, "PCIe gen 3 x8"}, {"q", "pcie", "GPU0", 10.0, "PCIe gen 3 x8"},
                           {"p", "rdma_node", "node", 100.0, "8 ports"}, {"q", "rdma_node", "node", 100.0, "8 ports"}},
                          {}, 0);
  EXPECT_DOUBLE_EQ(fat.per_rank({"p", "q"}, 2, true).gbps, 10.0);
  EXPECT_DOUBLE_EQ(fat.per_rank({"p", "q"}, 2, false).gbps, 50.0);
}

TEST(ExpectedShare, NvlinkOfUnknownSpeedIsNoReferenceRatherThanPcie) {
  // NVML told the links are up but not their speed: PCIe (what the GPUs' peers do not use) must not stand in.
  const ExpectedShare share({{"h", "nvlink", "GPU0", NAN, "18 links, speed unknown"},
                             {"h", "nvlink", "GPU1", 478.0, "18 links x 26.56 GB/s"},
                             {"h", "pcie", "GPU0", 63.0, "PCIe gen 5 x16"}},
                            {}, 0);
  EXPECT_FALSE(share.stream("h", "h", true).known());
  EXPECT_FALSE(share.per_rank({"h", "h"}, 2, true).known());
}

TEST(ExpectedShare, APortByName) {
  const ExpectedShare share(two_hosts(), {}, 0);
  EXPECT_DOUBLE_EQ(share.port("a", "mlx5_1/1").gbps, 25.0);
  EXPECT_FALSE(share.port("a", "mlx5_9/1").known());
  EXPECT_DOUBLE_EQ(share.port("a", "mlx5_1/1").scaled(2, "both directions of").gbps, 50.0);
}

TEST(ExpectedShare, UnitsToGigabytesPerSecond) {
  EXPECT_DOUBLE_EQ(ExpectedShare::gbps(12000, results::Unit::mbps), 12.0);
  EXPECT_DOUBLE_EQ(ExpectedShare::gbps(1000, results::Unit::mibps), 1.048576);
  EXPECT_DOUBLE_EQ(ExpectedShare::gbps(200, results::Unit::gbitps), 25.0);
  EXPECT_TRUE(std::isnan(ExpectedShare::gbps(3.5, results::Unit::us)));
}

TEST(ExpectedShare, StampFillsTheColumnsAndWarnsOnlyAtTheLargestJudgedSize) {
  const results::TableSpec table{"results", "t", ExpectedShare::columns()};
  const ExpectedShare share(two_hosts(), {80, 1u << 20}, 4u << 20);
  const auto ref = share.stream("a", "b", false);  // 12.5 GB/s
  results::Row row(table);
  EXPECT_EQ(share.stamp(row, 10.0, ref, 4u << 20, "bw"), "") << "80% is not below 80%";
  EXPECT_DOUBLE_EQ(row.number("expected_gbps"), 12.5);
  EXPECT_DOUBLE_EQ(row.number("pct_expected"), 80.0);
  const auto line = share.stamp(row, 5.0, ref, 4u << 20, "bw at 4194304 B");
  EXPECT_DOUBLE_EQ(row.number("pct_expected"), 40.0);
  EXPECT_NE(line.find("bw at 4194304 B: 5.00 GB/s is 40% of the 12.50 GB/s expected"), std::string::npos) << line;
  EXPECT_EQ(share.stamp(row, 5.0, ref, 2u << 20, "smaller"), "") << "only the largest size is judged";
  const ExpectedShare small(two_hosts(), {80, 1u << 20}, 64u << 10);
  EXPECT_EQ(small.stamp(row, 1.0, ref, 64u << 10, "64K"), "") << "below min_bytes: not judged";
  results::Row untouched(table);
  EXPECT_EQ(share.stamp(untouched, 5.0, Reference{}, 4u << 20, "none"), "");
  EXPECT_TRUE(std::isnan(untouched.number("pct_expected")));
}

TEST(ExpectedShare, RuleFile) {
  const std::string path = testing::TempDir() + "expected_rule_test.ini";
  auto write = [&](const char* text) { std::ofstream(path) << text; };
  write("[expected]\nwarn_below_percent = 90\nmin_bytes = 64M\n");
  const auto rule = ExpectedRule::load(path, true);
  EXPECT_DOUBLE_EQ(rule.warn_below_percent, 90);
  EXPECT_EQ(rule.min_bytes, 64u << 20);
  write("[expected]\nwarn_below_percent = 120\n");
  try {
    ExpectedRule::load(path, true);
    FAIL() << "120% accepted";
  } catch (const Error& e) {
    EXPECT_EQ(e.status(), ExitStatus::usage);
    EXPECT_NE(std::string(e.what()).find("warn_below_percent = '120': allowed values are 0 to 100"), std::string::npos) << e.what();
  }
  write("[expected]\nwarn_below = 50\n");
  EXPECT_THROW(ExpectedRule::load(path, true), Error);
  std::remove(path.c_str());
  EXPECT_THROW(ExpectedRule::load(path, true), Error) << "a file the user named must exist";
  EXPECT_DOUBLE_EQ(ExpectedRule::load(path, false).warn_below_percent, 80) << "a missing shipped file: the defaults";
}

}  // namespace
}  // namespace fabricbench::facts
