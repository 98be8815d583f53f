#include "fabricbench/facts/rail_nic.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>

#include "fabricbench/error.hpp"
#include "fabricbench/facts/rail_binding.hpp"

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
  EXPECT_NE(refusal("0 net=eth0\n0 net=eth1\n").find("--rail-map rails.map:2: rail 0 again (first on line 1); allowed"),
            std::string::npos);
  EXPECT_NE(refusal("1 net=eth1\n").find("rails.map:1: rail 1, but the 1 rails of the map must be numbered 0..0 (rail 0 "
                                         "is missing)"),
            std::string::npos);
  EXPECT_NE(refusal("0 nic=eth0\n").find("rails.map:1: unknown key 'nic'"), std::string::npos);
  EXPECT_NE(refusal("x net=eth0\n").find("rails.map:1: rail 'x' is not a whole number 0-63"), std::string::npos);
  EXPECT_NE(refusal("0 net=a\n07 net=b\n").find("rails.map:2: rail '07'"), std::string::npos);
  EXPECT_NE(refusal("0 # a comment\n").find("rail 0 has no keys"), std::string::npos);
  EXPECT_NE(refusal("0 rdma=mlx5_0:0\n").find("rdma='mlx5_0:0' is not DEVICE[:PORT]"), std::string::npos);
  EXPECT_NE(refusal("0 net=a net=b\n").find("key net twice"), std::string::npos);
  EXPECT_NE(refusal("0 net=10.0.0.256/24\n").find("net='10.0.0.256/24' is not a subnet"), std::string::npos);
  EXPECT_NE(refusal("0 net=a/b\n").find("net='a/b' is neither an interface name"), std::string::npos);
  EXPECT_NE(refusal("0 net\n").find("'net' is not KEY=VALUE"), std::string::npos);
  EXPECT_NE(refusal("# nothing\n").find("--rail-map rails.map: no rails; allowed"), std::string::npos);
  EXPECT_EQ(refusal("0 rdma=mlx5_0:255 net=10.0.0.0/8\n1 net=ib_1.2\n"), "accepted");
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

namespace {
// A host of two sockets: GPU 0000:1a and NIC mlx5_1 under switch 0000:18:00.0 on NUMA 0, GPU 0000:9a and NIC mlx5_0
// under switch 0000:98:00.0 on NUMA 1 (so name order and nearness disagree), a NIC mlx5_2 on NUMA 1 under no shared
// switch, and a Soft-RoCE device on no PCI device.
class TwoSocketHost {
 public:
  TwoSocketHost() : root_(std::filesystem::temp_directory_path() / ("rail-port-" + std::to_string(::getpid()))) {
    std::filesystem::remove_all(root_);
    device("0000:1a:00.0", "pci0000:17/0000:17:01.0/0000:18:00.0", 0, "0x10de", "0x030200");
    device("0000:1b:00.0", "pci0000:17/0000:17:01.0/0000:18:00.0", 0, "0x15b3", "0x020700");
    device("0000:9a:00.0", "pci0000:97/0000:97:01.0/0000:98:00.0", 1, "0x10de", "0x030200");
    device("0000:9b:00.0", "pci0000:97/0000:97:01.0/0000:98:00.0", 1, "0x15b3", "0x020700");
    device("0000:c1:00.0", "pci0000:c0/0000:c0:01.0", 1, "0x15b3", "0x020700");
    port("mlx5_0", "0000:9b:00.0", "4: ACTIVE");
    port("mlx5_1", "0000:1b:00.0", "4: ACTIVE");
    port("mlx5_2", "0000:c1:00.0", "4: ACTIVE");
    port("rxe0", "", "4: ACTIVE");
  }
  ~TwoSocketHost() { std::filesystem::remove_all(root_); }
  HostFiles files() const { return HostFiles(root_.string()); }
  void set_state(const std::string& dev, const std::string& state) { write("sys/class/infiniband/" + dev + "/ports/1/state", state); }

 private:
  void write(const std::string& path, const std::string& text) {
    std::filesystem::create_directories((root_ / path).parent_path());
    std::ofstream(root_ / path) << text << "\n";
  }
  void device(const std::string& address, const std::string& above, int numa, const std::string& vendor, const std::string& cls) {
    const auto dir = "sys/devices/" + above + "/" + address;
    write(dir + "/vendor", vendor);
    write(dir + "/class", cls);
    write(dir + "/numa_node", std::to_string(numa));
    std::filesystem::create_directories(root_ / "sys/bus/pci/devices");
    std::filesystem::create_symlink("../../../devices/" + above + "/" + address, root_ / "sys/bus/pci/devices" / address);
  }
  void port(const std::string& dev, const std::string& address, const std::string& state) {
    set_state(dev, state);
    write("sys/class/infiniband/" + dev + "/ports/1/phys_state", "5: LinkUp");
    if (!address.empty())
      std::filesystem::create_symlink("../../../bus/pci/devices/" + address, root_ / "sys/class/infiniband" / dev / "device");
  }
  std::filesystem::path root_;
};
}  // namespace

TEST(RailRdmaPort, TakesTheActivePortNearestTheRailsGpu) {
  TwoSocketHost host;
  const auto files = host.files();
  auto rail0 = rail_rdma_port(files, 0, nullptr);
  ASSERT_TRUE(rail0);
  EXPECT_EQ(rail0->port.device, "mlx5_1") << "under GPU 0's PCIe switch, though mlx5_0 comes first by name";
  EXPECT_EQ(rail0->why, "nearest GPU 0000:1a:00.0");
  EXPECT_EQ(rail_rdma_port(files, 1, nullptr)->port.device, "mlx5_0") << "the switch beats mlx5_2's NUMA node";
  // CUDA_VISIBLE_DEVICES=1,0: rail 0's GPU is the second in PCI order.
  EXPECT_EQ(rail_rdma_port(files, 0, "1,0")->port.device, "mlx5_0");
  // More rails than GPUs: the rail-th Active port in name order, as without facts.
  const auto rail2 = rail_rdma_port(files, 2, nullptr);
  EXPECT_EQ(rail2->port.device, "mlx5_2");
  EXPECT_EQ(rail2->why, "Active port 2 in name order");
  EXPECT_EQ(rail_rdma_port(files, 0, "GPU-6a1e")->why, "Active port 0 in name order") << "UUIDs: order unknown";
  EXPECT_FALSE(rail_rdma_port(files, 4, nullptr)) << "four Active ports: no fifth rail";
  // With GPU 1's switch NIC down, no NIC shares a bridge with GPU 1: its NUMA node decides (mlx5_2, not mlx5_1 which
  // comes first by name).
  host.set_state("mlx5_0", "1: DOWN");
  EXPECT_EQ(rail_rdma_port(files, 1, nullptr)->port.device, "mlx5_2");
  host.set_state("mlx5_1", "1: DOWN");
  EXPECT_EQ(rail_rdma_port(files, 0, nullptr)->port.device, "mlx5_2") << "the only Active port on a PCI device left";
}

TEST(RailBinding, TheMapsLineElseTheNearestActivePortWithItsInterfaceAndNumaNode) {
  TwoSocketHost host;
  const auto files = host.files();
  std::istringstream in("0 rdma=mlx5_7 net=ib7\n1 net=10.91.0.0/24\n");
  const auto map = RailMap::parse(in, "rails.map");
  const auto mapped = RailBinding::choose(files, 1, &map, nullptr);
  EXPECT_EQ(mapped.source, "from rails.map:2");
  EXPECT_EQ(mapped.numa, 1) << "GPU 1's node, with a map too";
  using Vars = std::vector<std::pair<std::string, std::string>>;
  EXPECT_EQ(mapped.variables(), (Vars{{"OMPI_MCA_btl_tcp_if_include", "10.91.0.0/24"}, {"FABRICBENCH_RAIL", "1"},
                                      {"FABRICBENCH_RAIL_NIC", "10.91.0.0/24"}}))
      << "a subnet sets no NCCL_SOCKET_IFNAME";
  EXPECT_EQ(RailBinding::choose(files, 0, &map, nullptr).variables(),
            (Vars{{"UCX_NET_DEVICES", "mlx5_7:1"}, {"NCCL_IB_HCA", "=mlx5_7"}, {"OMPI_MCA_btl_openib_if_include", "mlx5_7:1"},
                  {"OMPI_MCA_btl_tcp_if_include", "ib7"}, {"NCCL_SOCKET_IFNAME", "=ib7"}, {"FABRICBENCH_RAIL", "0"},
                  {"FABRICBENCH_RAIL_NIC", "mlx5_7:1"}}));
  try {
    RailBinding::choose(files, 2, &map, nullptr);
    ADD_FAILURE() << "rail 2 of a two-rail map";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("local rank 2 has no rail: rails.map has 2 rail(s)"), std::string::npos);
  }
  // No map: facts::rail_rdma_port's choice, the same as fabric-sweep makes.
  const auto nearest = RailBinding::choose(files, 0, nullptr, nullptr);
  EXPECT_EQ(nearest.nic.name(), "mlx5_1:1");
  EXPECT_EQ(nearest.source, "nearest GPU 0000:1a:00.0");
  EXPECT_EQ(nearest.numa, 0);
  EXPECT_EQ(nearest.shown(), "mlx5_1:1");
  try {
    RailBinding::choose(files, 4, nullptr, nullptr);
    ADD_FAILURE() << "four Active ports, two GPUs: no rail 4";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("local rank 4 has no GPU 4 (2 under"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("no Active RDMA port 4 (the host has 4); give --rail-map FILE"),
              std::string::npos);
  }
  // GPUs but no Active port: the message says that, not that the GPU is missing.
  for (const char* dev : {"mlx5_0", "mlx5_1", "mlx5_2", "rxe0"}) host.set_state(dev, "1: DOWN");
  try {
    RailBinding::choose(files, 0, nullptr, nullptr);
    ADD_FAILURE() << "no Active port";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("this host has no Active RDMA port under"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("for local rank 0 (its GPU is 0000:1a:00.0)"), std::string::npos);
  }
}
