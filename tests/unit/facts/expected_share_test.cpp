// "% of expected": which figure a measurement is held against, the rule file, and the stamped columns, on
// hand-computed cases.
#include "fabricbench/facts/expected_share.hpp"

#include <fmt/format.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <cmath>
#include <cstdio>
#include <fstream>
#include <map>
#include <sstream>
#include <tuple>

#include "../fixtures.hpp"
#include "fabricbench/app/shipped_files.hpp"
#include "fabricbench/error.hpp"
#include "fabricbench/runtime/temp_dir.hpp"

namespace fabricbench::facts {
namespace {

// Two hosts: a has two 200 Gb/s ports and 8 GPUs with 18 NVLinks; b has one 100 Gb/s port and PCIe GPUs only.
std::vector<Expected> two_hosts() {
  return {{"a", HardwarePath::nvlink, "GPU0", 18 * 26.5625, "18 links x 26.56 GB/s"},
          {"a", HardwarePath::nvlink, "GPU1", 17 * 26.5625, "17 links x 26.56 GB/s"},
          {"a", HardwarePath::pcie, "GPU0", 63.0, "PCIe gen 5 x16"},
          {"a", HardwarePath::rdma_port, "mlx5_0/1", 25.0, "200 Gb/s"},
          {"a", HardwarePath::rdma_port, "mlx5_1/1", 25.0, "200 Gb/s"},
          {"a", HardwarePath::rdma_node, "node", 50.0, "2 Active port(s), 400 Gb/s in all"},
          {"b", HardwarePath::pcie, "GPU0", 31.5, "PCIe gen 4 x16"},
          {"b", HardwarePath::rdma_port, "mlx5_0/1", 12.5, "100 Gb/s"},
          {"b", HardwarePath::rdma_node, "node", 12.5, "1 Active port(s), 100 Gb/s in all"}};
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
  const ExpectedShare fat({{"p", HardwarePath::pcie, "GPU0", 10.0, "PCIe gen 3 x8"},
                           {"q", HardwarePath::pcie, "GPU0", 10.0, "PCIe gen 3 x8"},
                           {"p", HardwarePath::rdma_node, "node", 100.0, "8 ports"},
                           {"q", HardwarePath::rdma_node, "node", 100.0, "8 ports"}},
                          {}, 0);
  EXPECT_DOUBLE_EQ(fat.per_rank({"p", "q"}, 2, true).gbps, 10.0);
  EXPECT_DOUBLE_EQ(fat.per_rank({"p", "q"}, 2, false).gbps, 50.0);
}

// mbw_mr: pairs between two hosts share their NICs (at most the least node's RDMA); pairs of GPUs inside one host each
// have their own links (2 x H200 pairs read 742 GB/s against one NVLink's 478: 155% when capped by it).
TEST(ExpectedShare, ASumOverPairsIsCappedByTheNodeOnlyBetweenHosts) {
  const ExpectedShare share(two_hosts(), {}, 0);
  const auto nvlink = share.stream("a", "a", true);
  const auto inside = share.pairs_sum(nvlink, 2, {"a", "a", "a", "a"});
  EXPECT_DOUBLE_EQ(inside.gbps, 2 * 17 * 26.5625);
  EXPECT_NE(inside.basis.find("2 pairs x"), std::string::npos) << inside.basis;
  EXPECT_EQ(inside.path, HardwarePath::nvlink) << "a calibrated curve can still be looked up";
  // a -> b over host memory: 2 pairs of the 12.5 GB/s port, capped by b's node (12.5 GB/s in all).
  EXPECT_DOUBLE_EQ(share.pairs_sum(share.stream("a", "b", false), 2, {"a", "b", "a", "b"}).gbps, 12.5);
  // GPU memory between hosts: the NICs bound the sum as for host memory, not one GPU's link.
  EXPECT_DOUBLE_EQ(share.pairs_sum({20.0, "x", HardwarePath::rdma_port}, 2, {"a", "b", "a", "b"}).gbps, 12.5);
  EXPECT_DOUBLE_EQ(share.pairs_sum({5.0, "x", HardwarePath::rdma_port}, 2, {"a", "b", "a", "b"}).gbps, 10.0);
  EXPECT_DOUBLE_EQ(share.pairs_sum(nvlink, 1, {"a", "a"}).gbps, nvlink.gbps) << "one pair: its stream";
  EXPECT_FALSE(share.pairs_sum({}, 2, {"a", "a"}).known());
}

TEST(ExpectedShare, NvlinkOfUnknownSpeedIsNoReferenceRatherThanPcie) {
  // NVML told the links are up but not their speed: PCIe (what the GPUs' peers do not use) must not stand in.
  const ExpectedShare share({{"h", HardwarePath::nvlink, "GPU0", NAN, "18 links, speed unknown"},
                             {"h", HardwarePath::nvlink, "GPU1", 478.0, "18 links x 26.56 GB/s"},
                             {"h", HardwarePath::pcie, "GPU0", 63.0, "PCIe gen 5 x16"}},
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
  const std::string path = testing::TempDir() + "expected_rule_test-" + std::to_string(::getpid()) + ".ini";
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
    EXPECT_NE(std::string(e.what()).find("warn_below_percent = '120': allowed values are 0 to 100"), std::string::npos)
        << e.what();
  }
  write("[expected]\nwarn_below = 50\n");
  EXPECT_THROW(ExpectedRule::load(path, true), Error);
  std::remove(path.c_str());
  EXPECT_THROW(ExpectedRule::load(path, true), Error) << "a file the user named must exist";
  EXPECT_DOUBLE_EQ(ExpectedRule::load(path, false).warn_below_percent, 80) << "a missing shipped file: the defaults";
}

// A curve between measured sizes: straight on log-log axes (hand-computed: halfway between 100 and 200 GB/s in
// log size is sqrt(100 x 200)); flat past its largest size; nothing below its smallest.
TEST(ExpectedCurve, LogLogBetweenPointsFlatAboveNothingBelow) {
  Curve c;
  c.points = {{1u << 20, 100.0}, {4u << 20, 200.0}};
  EXPECT_DOUBLE_EQ(c.at(1u << 20), 100.0);
  EXPECT_NEAR(c.at(2u << 20), std::sqrt(100.0 * 200.0), 1e-9);
  EXPECT_DOUBLE_EQ(c.at(4u << 20), 200.0);
  EXPECT_DOUBLE_EQ(c.at(1u << 30), 200.0);
  EXPECT_TRUE(std::isnan(c.at(512u << 10)));
  EXPECT_TRUE(std::isnan(Curve{}.at(1u << 20)));
}

// The files these tests write, in a folder of the process's own that goes with it (every run left them in /tmp).
std::string write_file(const std::string& name, const std::string& text) {
  static const runtime::TempDir folder("fb-expected-test");
  const std::string path = folder.path() + "/" + name;
  std::ofstream(path) << text;
  return path;
}

const char* kHeader = "path,link_gbps,ranks,op,bytes,gbps,source\n";

TEST(ExpectedCurve, BookReadsCurvesAndFindsThemByLinkWithinTwoPercent) {
  const auto path = write_file("curves_ok.csv", std::string("# comment\n") + kHeader +
                                                    "nvlink,478.12,2,all_reduce,4194304,116,\"2 x H200, NCCL 2.28.3\"\n"
                                                    "nvlink,478.12,2,all_reduce,1048576,40,\"2 x H200, NCCL 2.28.3\"\n"
                                                    "nvlink,478.12,4,all_reduce,1048576,30,4 x H200\n");
  const auto book = CurveBook::load(path);
  ASSERT_EQ(book.curves().size(), 2u);
  const auto* two = book.find("nvlink", 470, 2, "all_reduce");  // within 2% of 478.12
  ASSERT_NE(two, nullptr);
  EXPECT_EQ(two->source, "2 x H200, NCCL 2.28.3");
  ASSERT_EQ(two->points.size(), 2u);
  EXPECT_EQ(two->points[0].first, 1u << 20) << "sorted by size";
  EXPECT_EQ(book.find("nvlink", 460, 2, "all_reduce"), nullptr) << "3.8% off: another link";
  EXPECT_EQ(book.find("nvlink", 478.12, 8, "all_reduce"), nullptr);
  EXPECT_EQ(book.find("pcie", 478.12, 2, "all_reduce"), nullptr);
  EXPECT_EQ(book.find("nvlink", 478.12, 2, "all_gather"), nullptr);
  for (const auto& [name, text, said] : std::vector<std::tuple<std::string, std::string, std::string>>{
           {"h.csv", "path,gbps\nnvlink,1\n", "the header must be 'path,link_gbps,ranks,op,bytes,gbps,source'"},
           {"n.csv", std::string(kHeader) + "nvlink,478,2,all_reduce,1M,40,x\n", "bytes '1M': allowed values are"},
           {"z.csv", std::string(kHeader) + "nvlink,478,2,all_reduce,1048576,0,x\n", "gbps '0': allowed values"},
           {"d.csv", std::string(kHeader) + "nvlink,478,2,all_reduce,8,1,x\nnvlink,478,2,all_reduce,8,2,x\n",
            "given twice"},
           {"f.csv", std::string(kHeader) + "nvlink,478,2\n", "7 fields wanted"},
           // Past int's or uint64's range: refused, not converted (undefined; clang's UBSan saw 1e+26 -> int).
           {"r.csv", std::string(kHeader) + "nvlink,478,1e26,all_reduce,8,1,x\n", "ranks up to 2147483647"},
           {"b.csv", std::string(kHeader) + "nvlink,478,2,all_reduce,1e20,1,x\n", "bytes below 2^63"},
           {"e.csv", "# nothing\n", "no header line"}}) {
    try {
      CurveBook::load(write_file(name, text));
      FAIL() << name << " accepted";
    } catch (const Error& e) {
      EXPECT_EQ(e.status(), ExitStatus::usage);
      EXPECT_NE(std::string(e.what()).find(said), std::string::npos) << e.what();
    }
  }
}

// On a GPU link the figure is the healthy curve's at the row's size (calibrated); without a curve the link's figure,
// uncalibrated and never judged; an RDMA port stays rated, judged at the largest size only.
TEST(ExpectedShare, GpuRowsAreHeldAgainstTheirCurveAtEverySizeAndUncalibratedOnesNeverWarn) {
  const auto path = write_file("curves_share.csv", std::string(kHeader) +
                                                       "nvlink,478.125,2,all_reduce,1048576,40,test\n"
                                                       "nvlink,478.125,2,all_reduce,1073741824,326,test\n");
  ExpectedRule rule;
  rule.curves = CurveBook::load(path);
  const ExpectedShare share(two_hosts(), rule, 1u << 30);
  const auto link = share.per_rank({"a"}, 2, true);  // the slowest GPU's 17 links: 451.6 GB/s, no curve
  EXPECT_EQ(link.path, HardwarePath::nvlink);
  const auto uncal = share.at_size(link, "all_reduce", 2, 1u << 30);
  EXPECT_EQ(uncal.kind, Reference::Kind::uncalibrated);
  EXPECT_DOUBLE_EQ(uncal.gbps, link.gbps);
  EXPECT_NE(uncal.basis.find("uncalibrated: no healthy curve of all_reduce for 2 GPUs over nvlink"), std::string::npos)
      << uncal.basis;
  const results::TableSpec table{"results", "t", ExpectedShare::columns()};
  results::Row row(table);
  EXPECT_EQ(share.stamp(row, 1.0, uncal, 1u << 30, "x"), "") << "uncalibrated: shown, never judged";
  EXPECT_EQ(std::get<std::string>(row.get("expected_from")), "uncalibrated");
  EXPECT_NEAR(row.number("pct_expected"), 100.0 / link.gbps, 1e-9);

  const Reference eighteen{18 * 26.5625, "18 links", HardwarePath::nvlink};  // 478.125 GB/s: the curve's link
  const auto at_1g = share.at_size(eighteen, "all_reduce", 2, 1u << 30);
  EXPECT_EQ(at_1g.kind, Reference::Kind::calibrated);
  EXPECT_DOUBLE_EQ(at_1g.gbps, 326);
  EXPECT_NEAR(share.at_size(eighteen, "all_reduce", 2, 32u << 20).gbps, 40 * std::pow(326.0 / 40, 0.5), 1e-9);
  EXPECT_EQ(share.at_size(eighteen, "all_reduce", 4, 1u << 30).kind, Reference::Kind::uncalibrated);
  EXPECT_EQ(share.at_size(eighteen, "all_reduce", 2, 4096).kind, Reference::Kind::uncalibrated)
      << "below the curve's smallest size";
  // Judged at a size that is not the run's largest: 27 GB/s at 1 MiB is 67.5% of 40.
  const auto at_1m = share.at_size(eighteen, "all_reduce", 2, 1u << 20);
  const auto line = share.stamp(row, 27.0, at_1m, 1u << 20, "all_reduce busbw at 1048576 B");
  EXPECT_EQ(std::get<std::string>(row.get("expected_from")), "calibrated");
  EXPECT_NE(line.find("27.00 GB/s is 68% of the 40.00 GB/s expected from a healthy all_reduce of 2 GPUs over nvlink"),
            std::string::npos)
      << line;
  EXPECT_NE(line.find("rule: below 70% from 1M up"), std::string::npos) << line;
  EXPECT_EQ(share.stamp(row, 28.0, at_1m, 1u << 20, "x"), "") << "70% is not below 70%";
  EXPECT_EQ(share.stamp(row, 1.0, share.at_size(eighteen, "all_reduce", 2, 512u << 10), 512u << 10, "x"), "")
      << "below min_bytes: not judged";
  // A port's rate: only the largest size.
  const auto port = share.at_size(share.stream("a", "b", false), "all_reduce", 2, 1u << 20);
  EXPECT_EQ(port.kind, Reference::Kind::rated);
  EXPECT_FALSE(share.below(10, 1u << 20, Reference::Kind::rated));
  EXPECT_TRUE(share.below(10, 1u << 30, Reference::Kind::rated));
  EXPECT_TRUE(share.below(69, 1u << 20, Reference::Kind::calibrated));
  EXPECT_FALSE(share.below(1, 1u << 30, Reference::Kind::uncalibrated));
}

TEST(ExpectedShare, RuleFileNamesItsCurvesRelativeToItself) {
  const auto csv = write_file("rule_curves.csv", std::string(kHeader) + "pcie,63,2,sendrecv,8,0.01,t\n");
  // Named by its file name alone: the rule's folder is where it is looked for.
  const auto ini = write_file("rule_curves.ini", "[expected]\ncurves = " + csv.substr(csv.rfind('/') + 1) +
                                                     "\ncalibrated_warn_below_percent = 60\n");
  const auto rule = ExpectedRule::load(ini, true);
  EXPECT_DOUBLE_EQ(rule.calibrated_warn_below_percent, 60);
  ASSERT_NE(rule.curves.find("pcie", 63, 2, "sendrecv"), nullptr);
  const auto missing = write_file("rule_missing.ini", "[expected]\ncurves = nowhere.csv\n");
  try {
    ExpectedRule::load(missing, true);
    FAIL() << "a missing curves file accepted";
  } catch (const Error& e) {
    EXPECT_EQ(e.status(), ExitStatus::usage);
    EXPECT_NE(std::string(e.what()).find("curves = 'nowhere.csv': no file"), std::string::npos) << e.what();
  }
  EXPECT_THROW(ExpectedRule::load(write_file("rule_bad.ini", "[expected]\ncalibrated_warn_below_percent = -1\n"), true),
               Error);
}

// NCCL across nodes (issue 46): the nodes' NICs x the healthy busbw per NIC of the shipped references (8 x 400 Gb/s:
// 8 x 46 = 368 GB/s, NVIDIA in nccl-tests#290), judged at the largest size from 1 GiB; above the NICs' line rate
// (8 x 50 = 400 GB/s) a row is not a network measurement: named, never judged; a rate without a reference is
// uncalibrated; one host, or a host without an Active port, is no network case.
TEST(ExpectedShare, AcrossNodesTheNicsTimesAHealthyBusbwPerNic) {
  std::vector<Expected> found;
  for (const char* host : {"n1", "n2"})
    for (int k = 0; k < 8; ++k)
      found.push_back({host, HardwarePath::rdma_port, fmt::format("mlx5_{}/1", k), 50.0, "400 Gb/s"});
  auto rule = ExpectedRule::load(app::shipped_config("expected.ini"), true);
  const ExpectedShare share(found, rule, 8ull << 30);
  const auto ref = share.across_nodes({"n1", "n1", "n2", "n2"});
  ASSERT_TRUE(ref.known());
  EXPECT_EQ(ref.kind, Reference::Kind::network);
  EXPECT_DOUBLE_EQ(ref.gbps, 8 * 46.0);
  EXPECT_DOUBLE_EQ(ref.line_gbps, 400.0);
  EXPECT_NE(ref.basis.find("nccl-tests#290"), std::string::npos) << ref.basis;
  const results::TableSpec table{"results", "t", ExpectedShare::columns()};
  results::Row row(table);
  EXPECT_EQ(share.stamp(row, 370.0, ref, 8ull << 30, "healthy"), "");
  EXPECT_EQ(std::get<std::string>(row.get("expected_from")), "network");
  const auto slow = share.stamp(row, 200.0, ref, 8ull << 30, "all_reduce busbw at 8 GiB");
  EXPECT_NE(slow.find("200.00 GB/s is 54% of the 368.00 GB/s expected"), std::string::npos) << slow;
  EXPECT_EQ(share.stamp(row, 200.0, ref, 512u << 20, "smaller"), "") << "only the largest size is judged";
  const ExpectedShare small(found, rule, 512u << 20);
  EXPECT_EQ(small.stamp(row, 100.0, ref, 512u << 20, "512M"), "") << "below 1 GiB: latency and protocol decide";
  const auto above = share.stamp(row, 470.0, ref, 8ull << 30, "all_reduce busbw at 8 GiB");
  EXPECT_EQ(std::get<std::string>(row.get("expected_from")), "not_network");
  EXPECT_DOUBLE_EQ(row.number("expected_gbps"), 400.0);
  EXPECT_EQ(above.rfind("note: ", 0), 0u) << above;
  EXPECT_NE(above.find("not a network measurement"), std::string::npos);
  EXPECT_NE(above.find("NCCL_ALGO=RING"), std::string::npos);

  for (auto& e : found) e.gbps = 100.0;  // 800 Gb/s: no reference shipped
  const auto xdr = ExpectedShare(found, rule, 0).across_nodes({"n1", "n2"});
  EXPECT_EQ(xdr.kind, Reference::Kind::uncalibrated);
  EXPECT_DOUBLE_EQ(xdr.gbps, 800.0);
  EXPECT_FALSE(share.across_nodes({"n1", "n1"}).known()) << "one host";
  EXPECT_FALSE(share.across_nodes({"n1", "n3"}).known()) << "a host without an Active port";
}

TEST(ExpectedShare, NetworkReferencesFileIsChecked) {
  const auto ok = write_file("net_ok.csv", "# c\nnic_gbitps,busbw_gbps_per_nic,source\n400,46,\"a, b\"\n");
  const auto book = NetworkBook::load(ok);
  ASSERT_NE(book.find(400), nullptr);
  EXPECT_EQ(book.find(400)->source, "a, b");
  EXPECT_EQ(book.find(200), nullptr);
  for (const auto& [name, text, message] : std::vector<std::tuple<std::string, std::string, std::string>>{
           {"net_h.csv", "rate,busbw,source\n", "the header must be"},
           {"net_big.csv", "nic_gbitps,busbw_gbps_per_nic,source\n400,60,x\n", "at most the line rate / 8"},
           {"net_few.csv", "nic_gbitps,busbw_gbps_per_nic,source\n400\n", "3 fields wanted"}}) {
    try {
      NetworkBook::load(write_file(name, text));
      FAIL() << name;
    } catch (const Error& e) {
      EXPECT_EQ(e.status(), ExitStatus::usage);
      EXPECT_NE(std::string(e.what()).find(message), std::string::npos) << e.what();
      EXPECT_NE(std::string(e.what()).find(name + ":"), std::string::npos) << e.what();
    }
  }
}

// The shipped curves against what the GPU machine measured (tests/fixtures/expected: fabric-coll on 4 x H200, 2 and 4
// GPUs, tests/perf/expected_gpu.py): every healthy row from 1 MiB up is within the rule, and every degraded path is
// judged below it: NVLink P2P off (through host memory), P2P and SHM off (the socket), one channel at every size;
// NCCL_PROTO=LL from 64 MiB up for all_reduce, all_gather and reduce_scatter, while sendrecv (not LL there) is not.
TEST(ExpectedShare, ShippedCurvesPassHealthyGpuRowsAndCatchEveryDegradedPath) {
  const auto rule = ExpectedRule::load(app::shipped_config("expected.ini"), true);
  ASSERT_FALSE(rule.curves.empty());
  const ExpectedShare share({}, rule, 0);
  const Reference nvlink{478.116, "18 links x 26.56 GB/s", HardwarePath::nvlink};
  std::ifstream in(fixtures_folder() / "expected" / "h200x4-rows.csv");
  ASSERT_TRUE(in) << "tests/fixtures/expected/h200x4-rows.csv";
  std::string line;
  std::getline(in, line);
  ASSERT_EQ(line, "case,tool,ranks,run,op,in_place,bytes,busbw_gbps");
  std::map<std::string, int> rows, judged_below;
  double lowest_healthy = INFINITY, highest_degraded = 0;
  while (std::getline(in, line)) {
    std::vector<std::string> f;
    std::stringstream fields(line);
    for (std::string x; std::getline(fields, x, ',');) f.push_back(x);
    ASSERT_EQ(f.size(), 8u) << line;
    if (f[1] != "fabric-coll") continue;
    const std::string& kind = f[0];
    const std::string& op = f[4];
    const int ranks = std::stoi(f[2]);
    const auto bytes = std::stoull(f[6]);
    const auto ref = share.at_size(nvlink, op, ranks, bytes);
    ASSERT_EQ(ref.kind, Reference::Kind::calibrated) << line;
    const double percent = 100 * std::stod(f[7]) / ref.gbps;
    const bool below = share.below(percent, bytes, ref.kind);
    const bool large = bytes >= (64u << 20);
    const bool ll_exempt = kind == "proto_ll" && (op == "sendrecv" || !large);
    const std::string key = kind + " " + op;
    ++rows[key];
    if (kind == "healthy") {
      EXPECT_FALSE(below) << line << ": " << percent << "%";
      lowest_healthy = std::min(lowest_healthy, percent);
    } else if (!ll_exempt) {
      EXPECT_TRUE(below) << line << ": " << percent << "%";
      highest_degraded = std::max(highest_degraded, percent);
    } else if (op == "sendrecv" && large) {
      EXPECT_FALSE(below) << line << ": sendrecv does not use LL, " << percent << "%";
    }
    judged_below[key] += below;
  }
  for (const auto* kind : {"healthy", "p2p_disabled", "p2p_shm_disabled", "one_channel", "proto_ll"})
    for (const auto* op : {"all_reduce", "all_gather", "reduce_scatter", "sendrecv"})
      EXPECT_GT(rows[std::string(kind) + " " + op], 0) << kind << " " << op << ": no rows in the fixture";
  // The margins docs/expected.md states: healthy rows at 92% or more, degraded ones at 50% or less.
  EXPECT_GE(lowest_healthy, 90);
  EXPECT_LE(highest_degraded, 52);
}

}  // namespace
}  // namespace fabricbench::facts
