#include "fabricbench/facts/rail_nic.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>

#include "fabricbench/error.hpp"

using namespace fabricbench;
using namespace fabricbench::facts;

namespace {
std::string refusal(const std::string& text) {
  std::istringstream in(text);
  try {
    RailMap::parse(in, "rails.map");
  } catch (const Error& e) {
    return e.what();
  }
  return "accepted";
}
}  // namespace

TEST(RailMap, ReadsRailsInAnyOrder) {
  std::istringstream in("# rails\n1 rdma=mlx5_1:2 net=ib1\n0 net=10.91.0.0/24  # rail 0\n");
  const auto m = RailMap::parse(in, "rails.map");
  ASSERT_EQ(m.rails(), 2);
  EXPECT_EQ(m.rail(1).rdma, "mlx5_1");
  EXPECT_EQ(m.rail(1).port, 2);
  EXPECT_EQ(m.rail(1).name(), "mlx5_1:2");
  EXPECT_EQ(m.rail(0).name(), "10.91.0.0/24");
}

TEST(RailMap, RefusesBadLinesNamingFileAndLine) {
  EXPECT_NE(refusal("0 net=eth0\n0 net=eth1\n").find("rails.map:2: rail 0 was given at line 1"), std::string::npos);
  EXPECT_NE(refusal("1 net=eth1\n").find("rail 0 is missing"), std::string::npos);
  EXPECT_NE(refusal("0 nic=eth0\n").find("rails.map:1: 'nic=eth0'"), std::string::npos);
  EXPECT_NE(refusal("x net=eth0\n").find("rails.map:1"), std::string::npos);
  EXPECT_NE(refusal("0\n").find("names no NIC"), std::string::npos);
  EXPECT_NE(refusal("0 rdma=mlx5_0:0\n").find("port 1-255"), std::string::npos);
  EXPECT_NE(refusal("0 net=a net=b\n").find("net= given twice"), std::string::npos);
  EXPECT_NE(refusal("# nothing\n").find("no rails"), std::string::npos);
}

TEST(GivenNics, FollowsWhatTheTransportReads) {
  std::map<std::string, std::string> env{{"OMPI_MCA_btl_tcp_if_include", "10.91.0.0/24"}, {"UCX_NET_DEVICES", "mlx5_1:1"},
                                         {"NCCL_IB_HCA", "=mlx5_1"}};
  const auto lookup = [&](const char* n) { return env.count(n) ? env[n] : std::string(); };
  const auto resolve = [](const std::string& v) { return v == "10.91.0.0/24" ? std::string("eth1") : std::string(); };
  auto g = GivenNics::from(lookup, resolve);
  EXPECT_EQ(g.mpi, "eth1 (10.91.0.0/24)");
  EXPECT_EQ(g.nccl, "=mlx5_1");
  env["OMPI_MCA_pml"] = "ucx";
  EXPECT_EQ(GivenNics::from(lookup, resolve).mpi, "mlx5_1:1");
  EXPECT_EQ(counter_device("eth1 (10.91.0.0/24)"), "eth1");
  EXPECT_EQ(counter_device("=mlx5_1:1,mlx5_2:1"), "mlx5_1:1");
}

TEST(NicBytes, ReadsProcNetDevAndRdmaPortCounters) {
  const auto root = std::filesystem::temp_directory_path() / ("nic-bytes-" + std::to_string(::getpid()));
  std::filesystem::create_directories(root / "proc/net");
  std::filesystem::create_directories(root / "sys/class/infiniband/mlx5_0/ports/1/counters");
  std::ofstream(root / "proc/net/dev") << "Inter-|   Receive |  Transmit\n face |bytes packets errs drop fifo frame compressed multicast|bytes\n"
                                          "    lo: 10 1 0 0 0 0 0 0 10 1 0 0 0 0 0 0\n"
                                          "  eth1: 5000 7 0 0 0 0 0 0 2500 3 0 0 0 0 0 0\n";
  std::ofstream(root / "sys/class/infiniband/mlx5_0/ports/1/counters/port_xmit_data") << "100\n";
  std::ofstream(root / "sys/class/infiniband/mlx5_0/ports/1/counters/port_rcv_data") << "50\n";
  const HostFiles files(root.string());
  EXPECT_DOUBLE_EQ(nic_bytes(files, "eth1"), 7500);
  EXPECT_DOUBLE_EQ(nic_bytes(files, "mlx5_0:1"), 600) << "4-byte words";
  EXPECT_TRUE(std::isnan(nic_bytes(files, "eth9")));
  EXPECT_TRUE(std::isnan(nic_bytes(files, "10.91.0.0/24")));
  std::filesystem::remove_all(root);
}
