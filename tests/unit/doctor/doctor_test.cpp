// fabric-doctor's readers and rules on fixtures: a made-up sysfs/procfs tree under a root prefix, the NCCL logs kept
// from the GPU machine (tests/fixtures/gpu-h200x2) plus logs written from NCCL's documented formats, and a fake
// NVML behind GpuInfo.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <memory>
#include <optional>

#include "../fixtures.hpp"
#include "fabricbench/doctor/checks.hpp"
#include "fabricbench/error.hpp"
#include "fabricbench/results/terminal_table.hpp"
#include "fabricbench/test_hooks.hpp"

namespace fs = std::filesystem;
using namespace fabricbench::doctor;
namespace job = fabricbench::job;
using namespace fabricbench::facts;

namespace {

// A sysfs/procfs tree in a temporary folder, written file by file.
class Tree {
 public:
  Tree()
      : root_(fs::temp_directory_path() /
              fs::path("fb-doctor-" + std::to_string(::getpid()) + "-" + std::to_string(counter_++))) {
    fs::remove_all(root_);
    fs::create_directories(root_);
  }
  ~Tree() { fs::remove_all(root_); }
  Tree& file(const std::string& path, const std::string& text) {
    const fs::path p = root_ / path.substr(1);
    fs::create_directories(p.parent_path());
    std::ofstream(p, std::ios::binary) << text;
    return *this;
  }
  Tree& link(const std::string& path, const std::string& target) {
    const fs::path p = root_ / path.substr(1);
    fs::create_directories(p.parent_path());
    fs::create_symlink(target, p);
    return *this;
  }
  // One RDMA port with its state files.
  Tree& port(const std::string& dev, int n, const std::string& state, const std::string& phys, const std::string& layer,
             const std::string& rate, const std::string& gid_type = "", const std::string& netdev = "") {
    const std::string d = "/sys/class/infiniband/" + dev + "/ports/" + std::to_string(n);
    file("/sys/class/infiniband/" + dev + "/fw_ver", "28.39.1002\n");
    file(d + "/state", state + "\n")
        .file(d + "/phys_state", phys + "\n")
        .file(d + "/link_layer", layer + "\n")
        .file(d + "/rate", rate + "\n");
    if (!gid_type.empty()) {
      file(d + "/gids/1", "0000:0000:0000:0000:0000:ffff:0a00:0001\n").file(d + "/gid_attrs/types/1", gid_type + "\n");
      file(d + "/gid_attrs/ndevs/0", netdev + "\n");
    }
    return *this;
  }
  HostFiles files() const { return HostFiles(root_.string()); }
  std::string root() const { return root_.string(); }

 private:
  static inline int counter_ = 0;
  fs::path root_;
};

std::string fixture(const std::string& name) {
  const fs::path folder = fixtures_folder();
  const fs::path here = folder / "gpu-h200x2" / name;
  std::ifstream in(here);
  EXPECT_TRUE(in.good()) << here;
  return std::string(std::istreambuf_iterator<char>(in), {});
}

const Finding* find(const Findings& f, const std::string& check, const std::string& subject) {
  for (const auto& x : f.all())
    if (x.check == check && x.subject == subject) return &x;
  return nullptr;
}

Findings run_named(const std::string& names, const Context& c) {
  Findings out;
  const auto checks = select_checks(names);
  for (auto scope : {Scope::host, Scope::rank}) run_checks(checks, scope, c, out);
  return out;
}

// Two H200s as the GPU machine shows them (nvidia-smi views in the fixtures), with knobs to break things.
class FakeGpus : public GpuInfo {
 public:
  int links_down_on_gpu1 = 0;
  RemappedRows rows{};
  std::uint64_t clocks = 0x1;  // GpuIdle
  unsigned width = 16;
  NvLinkErrors link_errors{};
  bool speed_known = true;
  int count() const override { return 2; }
  std::string name(int) const override { return "NVIDIA H200"; }
  std::string pci_bus_id(int g) const override { return g == 0 ? "0000:00:06.0" : "0000:00:07.0"; }
  std::string driver_version() const override { return "580.95.05"; }
  std::string vbios(int) const override { return "96.00.A5.00.1A"; }
  std::optional<std::string> p2p_status(int, int, P2PKind) const override { return "OK"; }
  int nvlink_count(int) const override { return 18; }
  std::optional<bool> nvlink_active(int g, int link) const override { return !(g == 1 && link < links_down_on_gpu1); }
  std::optional<double> nvlink_speed_gbps(int) const override {
    return speed_known ? std::optional(26.562) : std::nullopt;
  }
  std::optional<NvLinkErrors> nvlink_errors(int, int link) const override {
    return link == 3 ? link_errors : NvLinkErrors{};
  }
  std::optional<RemappedRows> remapped_rows(int) const override { return rows; }
  std::optional<std::uint64_t> ecc_uncorrected(int) const override { return 0; }
  std::optional<Pcie> pcie(int) const override { return Pcie{5, 5, width, 16}; }
  std::optional<std::uint64_t> clock_event_reasons(int) const override { return clocks; }
};

}  // namespace

TEST(DoctorFiles, RdmaPortsFromSysfs) {
  Tree t;
  t.port("mlx5_0", 1, "4: ACTIVE", "5: LinkUp", "InfiniBand", "400 Gb/sec (4X NDR)")
      .file("/sys/class/infiniband/mlx5_0/ports/1/counters/symbol_error", "3\n")
      .file("/sys/class/infiniband/mlx5_0/ports/1/counters/link_downed", "0\n")
      .file("/sys/class/infiniband/mlx5_0/ports/1/counters/port_xmit_wait", "1234\n")
      .file("/sys/class/infiniband/mlx5_0/device/numa_node", "1\n");
  t.port("mlx5_1", 1, "4: ACTIVE", "5: LinkUp", "Ethernet", "200 Gb/sec (2X HDR)", "RoCE v2", "ens1f0");
  t.port("rxe1", 1, "1: DOWN", "3: Disabled", "Ethernet", "10 Gb/sec (1X QDR)", "IB/RoCE v1", "dum1");
  t.port("mlx5_2", 1, "2: INIT", "5: LinkUp", "InfiniBand", "400 Gb/sec (4X NDR)");
  const auto ports = read_rdma_ports(t.files());
  ASSERT_EQ(ports.size(), 4u);
  EXPECT_EQ(ports[0].name(), "mlx5_0/1");
  EXPECT_TRUE(ports[0].active());
  EXPECT_EQ(ports[0].phys_state, "LinkUp");
  EXPECT_DOUBLE_EQ(ports[0].rate_gbps, 400);
  EXPECT_EQ(ports[0].counters.at("symbol_error"), 3u);
  EXPECT_EQ(ports[0].numa_node, 1);
  EXPECT_EQ(ports[0].firmware, "28.39.1002");
  EXPECT_TRUE(ports[1].roce_v2);
  EXPECT_EQ(ports[1].netdev, "ens1f0");
  EXPECT_EQ(ports[2].state, "INIT");
  EXPECT_FALSE(ports[3].roce_v2);  // v1 only
  EXPECT_EQ(ports[3].state, "DOWN");

  Context c;
  c.files = t.files();
  c.host = "h1";
  c.ports = ports;
  const auto f = run_named("rdma", c);
  EXPECT_EQ(find(f, "rdma.port_state", "mlx5_0/1")->status, Status::ok);
  EXPECT_EQ(find(f, "rdma.port_state", "rxe1/1")->status, Status::warn);
  EXPECT_NE(find(f, "rdma.port_state", "rxe1/1")->hint.find("disabled"), std::string::npos);
  EXPECT_NE(find(f, "rdma.port_state", "mlx5_2/1")->hint.find("subnet manager"), std::string::npos);
  const auto* errors = find(f, "rdma.errors", "mlx5_0/1");
  ASSERT_TRUE(errors);
  EXPECT_EQ(errors->status, Status::warn);
  EXPECT_NE(errors->value.find("symbol errors 3"), std::string::npos);
  EXPECT_NE(errors->value.find("transmit wait 1234"), std::string::npos);
  EXPECT_EQ(find(f, "rdma.errors", "mlx5_1/1")->status, Status::skip);  // no counters/ folder
  const auto* roce = find(f, "rdma.link", "mlx5_1/1");
  ASSERT_TRUE(roce);
  EXPECT_EQ(roce->status, Status::ok);
  EXPECT_NE(roce->value.find("RoCE v2 GID"), std::string::npos);
  EXPECT_EQ(find(f, "rdma.ibacm", "ibacm")->status, Status::ok);
}

// The GID table as the kernel shows it: empty entries read as zeros (their type files refuse to be read: here empty).
// A RoCE v2 entry anywhere in the table counts, past empty ones too; a table of v1 entries only does not.
TEST(DoctorFiles, RoceV2GidAnywhereInTheTable) {
  const std::string zero = "0000:0000:0000:0000:0000:0000:0000:0000\n";
  Tree t;
  t.port("rxe0", 1, "4: ACTIVE", "5: LinkUp", "Ethernet", "10 Gb/sec (1X QDR)");
  t.port("rxe1", 1, "4: ACTIVE", "5: LinkUp", "Ethernet", "10 Gb/sec (1X QDR)");
  const std::string a = "/sys/class/infiniband/rxe0/ports/1", b = "/sys/class/infiniband/rxe1/ports/1";
  t.file(a + "/gids/0", "fe80:0000:0000:0000:0000:00ff:fe00:0001\n").file(a + "/gid_attrs/types/0", "IB/RoCE v1\n");
  for (int i = 1; i < 12; ++i) t.file(a + "/gids/" + std::to_string(i), zero);
  t.file(a + "/gids/7", "0000:0000:0000:0000:0000:ffff:0a00:0001\n").file(a + "/gid_attrs/types/7", "RoCE v2\n");
  for (int i = 0; i < 12; ++i) t.file(b + "/gids/" + std::to_string(i), i < 3 ? "fe80::1\n" : zero);
  for (int i = 0; i < 3; ++i) t.file(b + "/gid_attrs/types/" + std::to_string(i), "IB/RoCE v1\n");
  // The listing is of gid_attrs/types: every index of the table has one (unused ones unreadable).
  for (int i = 0; i < 12; ++i)
    for (const auto& port : {a, b})
      if (!fs::exists(t.root() + port + "/gid_attrs/types/" + std::to_string(i)))
        t.file(port + "/gid_attrs/types/" + std::to_string(i), "");
  const auto ports = read_rdma_ports(t.files());
  ASSERT_EQ(ports.size(), 2u);
  EXPECT_TRUE(ports[0].roce_v2);
  EXPECT_FALSE(ports[1].roce_v2);
}

TEST(DoctorFiles, RoceWithoutV2GidFails) {
  Tree t;
  t.port("mlx5_3", 1, "4: ACTIVE", "5: LinkUp", "Ethernet", "100 Gb/sec (4X EDR)", "IB/RoCE v1", "eth3");
  Context c;
  c.files = t.files();
  c.ports = read_rdma_ports(c.files);
  c.active_mtu["mlx5_3/1"] = 1024;
  const auto f = run_named("rdma.link", c);
  const auto* link = find(f, "rdma.link", "mlx5_3/1");
  ASSERT_TRUE(link);
  EXPECT_EQ(link->status, Status::fail);
  EXPECT_NE(link->value.find("MTU 1024"), std::string::npos);
  EXPECT_NE(link->hint.find("eth3"), std::string::npos);
}

TEST(DoctorFiles, IbacmRunningWarns) {
  Tree t;
  t.port("mlx5_0", 1, "4: ACTIVE", "5: LinkUp", "InfiniBand", "400 Gb/sec (4X NDR)").file("/proc/4321/comm", "ibacm\n");
  Context c;
  c.files = t.files();
  c.ports = read_rdma_ports(c.files);
  const auto f = run_named("rdma.ibacm", c);
  EXPECT_EQ(find(f, "rdma.ibacm", "ibacm")->status, Status::warn);
  EXPECT_NE(find(f, "rdma.ibacm", "ibacm")->value.find("4321"), std::string::npos);
}

TEST(DoctorFiles, ThpAndBuddyinfo) {
  EXPECT_EQ(bracketed_choice("always [madvise] never"), "madvise");
  EXPECT_EQ(bracketed_choice("[always] defer defer+madvise madvise never"), "always");
  const std::string thp = fixture("thp.txt");
  const auto first_newline = thp.find('\n');
  EXPECT_EQ(bracketed_choice(thp.substr(0, first_newline)), "madvise");
  const auto free = buddy_free_pages(thp.substr(first_newline + 1));
  // Normal zone order 0 = 2861, DMA32 order 10 = 753, DMA order 10 = 3 (hand-summed from the fixture).
  EXPECT_EQ(free[0], 2861u + 2 + 0);
  EXPECT_EQ(free[10], 119u + 753 + 3);
  // Pages in blocks of order >= 9: 95 x 512 + 875 x 1024 = 944640 of 1070869 free pages in all.
  EXPECT_NEAR(free_share_at_or_above(free, 9), 944640.0 / 1070869.0, 1e-12);

  Tree t;
  t.file("/sys/kernel/mm/transparent_hugepage/enabled", "[always] madvise never\n")
      .file("/sys/kernel/mm/transparent_hugepage/defrag", "[always] defer defer+madvise madvise never\n")
      .file("/proc/buddyinfo", "Node 0, zone   Normal   90000   1000   10   0   0   0   0   0   0   1   0\n");
  Context c;
  c.files = t.files();
  const auto f = run_named("host.thp,host.fragmentation", c);
  EXPECT_EQ(find(f, "host.thp", "enabled")->value, "always");
  EXPECT_EQ(find(f, "host.thp", "defrag")->status, Status::warn);
  EXPECT_EQ(find(f, "host.fragmentation", "free memory")->status, Status::warn);
}

TEST(DoctorFiles, CpuListsAndNuma) {
  EXPECT_EQ(parse_cpu_list("0-3,8,10-11"), (std::set<int>{0, 1, 2, 3, 8, 10, 11}));
  EXPECT_TRUE(parse_cpu_list("").empty());
  Tree t;
  t.file("/sys/devices/system/node/node0/cpulist", "0-3\n").file("/sys/devices/system/node/node1/cpulist", "4-7\n");
  t.file("/sys/bus/pci/devices/0000:17:00.0/numa_node", "1\n");
  t.port("mlx5_0", 1, "4: ACTIVE", "5: LinkUp", "InfiniBand", "400 Gb/sec (4X NDR)")
      .file("/sys/class/infiniband/mlx5_0/device/numa_node", "0\n");
  Context c;
  c.files = t.files();
  c.ports = read_rdma_ports(c.files);
  c.rank = 3;
  c.cpus = {0, 1};
  c.gpu_bus = "0000:17:00.0";
  auto f = run_named("host.numa", c);
  const auto* numa = find(f, "host.numa", "binding");
  ASSERT_TRUE(numa);
  EXPECT_EQ(numa->status, Status::warn);
  EXPECT_EQ(numa->rank, 3);
  EXPECT_NE(numa->hint.find("not on its GPU's node"), std::string::npos);
  c.cpus = {4, 5};  // on the GPU's node, but the only NIC is on node 0
  f = run_named("host.numa", c);
  EXPECT_NE(find(f, "host.numa", "binding")->hint.find("no Active NIC on the same node"), std::string::npos);
  t.file("/sys/class/infiniband/mlx5_0/device/numa_node", "1\n");
  c.ports = read_rdma_ports(c.files);
  f = run_named("host.numa", c);
  EXPECT_EQ(find(f, "host.numa", "binding")->status, Status::ok);
}

TEST(DoctorFiles, PcieAcsBetweenGpuAndNic) {
  // root port 00:01.0 -> switch upstream 01:00.0 -> downstream ports 02:08.0 (GPU 03:00.0) and 02:10.0 (NIC 04:00.0)
  Tree t;
  const std::string base = "/sys/devices/pci0000:00/0000:00:01.0/0000:01:00.0";
  t.file(base + "/0000:02:08.0/0000:03:00.0/vendor", "0x10de\n")
      .file(base + "/0000:02:08.0/0000:03:00.0/class", "0x030200\n");
  t.file(base + "/0000:02:10.0/0000:04:00.0/vendor", "0x15b3\n");
  t.link("/sys/bus/pci/devices/0000:03:00.0", "../../../" + base.substr(5) + "/0000:02:08.0/0000:03:00.0");
  t.link("/sys/bus/pci/devices/0000:04:00.0", "../../../" + base.substr(5) + "/0000:02:10.0/0000:04:00.0");
  for (const char* b : {"0000:00:01.0", "0000:01:00.0"})
    t.link(std::string("/sys/bus/pci/devices/") + b, "../../../devices/pci0000:00");
  t.link("/sys/bus/pci/devices/0000:02:08.0", "../../../" + base.substr(5) + "/0000:02:08.0");
  t.link("/sys/bus/pci/devices/0000:02:10.0", "../../../" + base.substr(5) + "/0000:02:10.0");
  // Config space with an ACS capability at 0x100: header id 0x000d, next 0; control = SV|RR|CR|UF = 0x001d.
  std::string with_acs(4096, '\0');
  with_acs[0x100] = 0x0d;
  with_acs[0x106] = 0x1d;
  std::string without(4096, '\0');
  without[0x100] = 0x0d;
  t.file(base + "/0000:02:08.0/config", with_acs)
      .file(base + "/0000:02:10.0/config", without)
      .file(base + "/config", without);
  t.port("mlx5_0", 1, "4: ACTIVE", "5: LinkUp", "InfiniBand", "400 Gb/sec (4X NDR)");
  t.link("/sys/class/infiniband/mlx5_0/device", "../../../bus/pci/devices/0000:04:00.0");

  const auto files = t.files();
  EXPECT_EQ(pci_devices(files, "0x10de", {"0302"}), std::vector<std::string>{"0000:03:00.0"});
  const auto gpu_up = pci_upstream(files, "0000:03:00.0");
  EXPECT_EQ(gpu_up, (std::vector<std::string>{"0000:00:01.0", "0000:01:00.0", "0000:02:08.0"}));
  const auto between = pci_bridges_between(gpu_up, pci_upstream(files, "0000:04:00.0"));
  EXPECT_EQ(between, (std::vector<std::string>{"0000:01:00.0", "0000:02:08.0", "0000:02:10.0"}));
  EXPECT_FALSE(parse_acs(std::string(256, '\0')).has_value());  // read without root: no extended space
  EXPECT_TRUE(parse_acs(with_acs)->redirects());
  EXPECT_FALSE(parse_acs(without)->redirects());

  Context c;
  c.files = files;
  c.ports = read_rdma_ports(files);
  ASSERT_EQ(c.ports.at(0).pci_address, "0000:04:00.0");
  const auto f = run_named("host.acs", c);
  const auto* acs = find(f, "host.acs", "0000:03:00.0 - mlx5_0");
  ASSERT_TRUE(acs);
  EXPECT_EQ(acs->status, Status::warn);
  EXPECT_NE(acs->value.find("0000:02:08.0"), std::string::npos);
  EXPECT_EQ(acs->value.find("0000:02:10.0"), std::string::npos);
}

TEST(DoctorFiles, SysrootPerHost) {
  EXPECT_EQ(HostFiles::for_host("node7", "/tmp/roots/%h").root(), "/tmp/roots/node7");
  EXPECT_TRUE(HostFiles::for_host("node7", "").real());
}

TEST(TestHooks, EachVariableReadIntoItsField) {
  setenv("FABRICBENCH_TEST_SYSROOT", "/tmp/roots/%h", 1);
  setenv("FABRICBENCH_TEST_HOST_NAMES", "a,,c", 1);
  setenv("FABRICBENCH_TEST_STALL", "3:7", 1);
  setenv("FABRICBENCH_TEST_LATE_RECEIVES", "1:250.5", 1);
  setenv("FABRICBENCH_TEST_FLIP_BYTE", "", 1);
  const auto h = fabricbench::TestHooks::from_environment();
  for (const char* v : {"FABRICBENCH_TEST_SYSROOT", "FABRICBENCH_TEST_HOST_NAMES", "FABRICBENCH_TEST_STALL",
                        "FABRICBENCH_TEST_LATE_RECEIVES", "FABRICBENCH_TEST_FLIP_BYTE"})
    unsetenv(v);
  EXPECT_EQ(h.sysroot, "/tmp/roots/%h");
  EXPECT_EQ(h.host_names, (std::vector<std::string>{"a", "", "c"}));
  EXPECT_EQ(h.stall_rank, 3);
  EXPECT_EQ(h.stall_at, 7);
  EXPECT_EQ(h.late_host, 1);
  EXPECT_DOUBLE_EQ(h.late_ms, 250.5);
  EXPECT_TRUE(h.flip_byte) << "set, even empty";
  EXPECT_EQ(h.stall_nccl_rank, -1) << "unset: inert";
  EXPECT_EQ(h.qp_error_at, -1);
  const auto none = fabricbench::TestHooks::from_environment();
  EXPECT_TRUE(none.sysroot.empty() && none.host_names.empty() && !none.flip_byte && none.stall_rank < 0);
}

TEST(DoctorLimits, MemlockAndShm) {
  Context c;
  c.memlock_bytes = 64ull << 10;  // docker's default
  auto f = run_named("limits", c);
  EXPECT_EQ(find(f, "limits.memlock", "memlock")->status, Status::ok);  // no RDMA here: nothing to pin
  Tree t;
  t.port("mlx5_0", 1, "4: ACTIVE", "5: LinkUp", "InfiniBand", "400 Gb/sec (4X NDR)");
  c.files = t.files();
  c.ports = read_rdma_ports(c.files);
  c.shm_bytes = 64ull << 20;
  FakeGpus gpus;
  c.gpus = &gpus;
  f = run_named("limits", c);
  EXPECT_EQ(find(f, "limits.memlock", "memlock")->status, Status::fail);
  EXPECT_NE(find(f, "limits.memlock", "memlock")->hint.find("memlock=-1"), std::string::npos);
  EXPECT_EQ(find(f, "limits.shm", "/dev/shm")->status, Status::fail);  // 64 MiB with GPUs: docker's default
  c.memlock_bytes.reset();
  c.shm_bytes = 2ull << 30;
  f = run_named("limits", c);
  EXPECT_EQ(find(f, "limits.memlock", "memlock")->value, "unlimited");
  EXPECT_EQ(find(f, "limits.shm", "/dev/shm")->status, Status::ok);
}

TEST(DoctorNccl, LogOfP2PRun) {
  const auto log = job::parse_nccl_log(fixture("nccl-info-p2p.log"));
  EXPECT_EQ(log.version, "2.28.3+cuda13.0");
  EXPECT_EQ(log.network, "Socket");
  EXPECT_TRUE(log.ib_none);
  EXPECT_EQ(log.socket_ifaces, std::vector<std::string>{"eth0:192.0.2.2"});
  ASSERT_EQ(log.channels.size(), 1u);
  EXPECT_EQ(log.channels.begin()->first, "P2P/CUMEM");
  EXPECT_GT(log.channels.begin()->second, 0);
  EXPECT_EQ(log.variables.at("NCCL_NVLS_ENABLE"), "0");
  EXPECT_TRUE(log.init_complete);
  Findings f;
  f.begin_check("gpu1", 0, "nccl.transport");
  NcclContext c;
  c.interfaces = {"eth0", "lo"};
  check_nccl_transport(log, c, f);
  EXPECT_EQ(f.worst(), Status::ok) << join(warning_lines(f.all()), "\n");
  EXPECT_EQ(find(f, "nccl.transport", "network")->value, "Socket");
}

TEST(DoctorNccl, LogWithP2PAndShmDisabled) {
  const auto log = job::parse_nccl_log(fixture("nccl-info-socket.log"));
  EXPECT_EQ(log.network, "Socket");
  ASSERT_EQ(log.channels.count("NET/Socket/0"), 1u);
  EXPECT_EQ(log.variables.at("NCCL_P2P_DISABLE"), "1");
  EXPECT_EQ(log.variables.at("NCCL_SHM_DISABLE"), "1");
  Findings f;
  f.begin_check("gpu1", 0, "nccl.transport");
  NcclContext c;
  c.variables = {{"NCCL_P2P_DISABLE", "1"}, {"NCCL_SHM_DISABLE", "1"}};
  check_nccl_transport(log, c, f);
  const auto* channels = find(f, "nccl.transport", "channels");
  ASSERT_TRUE(channels);
  EXPECT_EQ(channels->status, Status::warn);
  EXPECT_NE(channels->value.find("NET/Socket/0"), std::string::npos);
  EXPECT_NE(channels->hint.find("NCCL_P2P_DISABLE"), std::string::npos);
  EXPECT_NE(channels->hint.find("NCCL_SHM_DISABLE"), std::string::npos);
  Findings vars;
  vars.begin_check("gpu1", 0, "nccl.variables");
  check_nccl_variables(c, vars);
  EXPECT_EQ(find(vars, "nccl.variables", "NCCL_P2P_DISABLE")->status, Status::warn);
}

TEST(DoctorNccl, LogOverLoopback) {
  const auto log = job::parse_nccl_log(fixture("nccl-info-socket-lo.log"));
  EXPECT_EQ(log.socket_ifaces, std::vector<std::string>{"lo:127.0.0.1"});
  Findings f;
  f.begin_check("gpu1", 0, "nccl.transport");
  NcclContext c;
  c.hosts = 2;
  check_nccl_transport(log, c, f);
  const auto* lo = find(f, "nccl.transport", "NET/Socket lo");
  ASSERT_TRUE(lo);
  EXPECT_EQ(lo->status, Status::fail);  // loopback between hosts cannot work
}

TEST(DoctorNccl, IbBondAndSocketFallback) {
  // Written from NCCL's documented INFO formats (net_ib.cc / init.cc).
  const std::string ib =
      "n1:100:100 [0] NCCL INFO NCCL version 2.21.5+cuda12.4\n"
      "n1:100:100 [0] NCCL INFO NET/IB : Using [0]mlx5_0:1/IB [1]mlx5_bond_0:1/RoCE [RO]; OOB ib0:10.0.0.1<0>\n"
      "n1:100:100 [0] NCCL INFO Using network IB\n"
      "n1:100:100 [0] NCCL INFO Channel 00/0 : 0[0] -> 8[0] [send] via NET/IB/0/GDRDMA\n"
      "n1:100:100 [0] NCCL INFO Channel 00/0 : 0[0] -> 1[1] via P2P/IPC\n";
  const auto log = job::parse_nccl_log(ib);
  EXPECT_EQ(log.network, "IB");
  EXPECT_EQ(log.ib_devices, (std::vector<std::string>{"mlx5_0:1/IB", "mlx5_bond_0:1/RoCE"}));
  EXPECT_EQ(log.channels.at("NET/IB/0/GDRDMA"), 1);
  Findings f;
  f.begin_check("n1", 0, "nccl.transport");
  NcclContext c;
  c.hosts = 2;
  c.active_rdma_ports = {"mlx5_0/1", "mlx5_bond_0/1"};
  check_nccl_transport(log, c, f);
  const auto* bond = find(f, "nccl.transport", "NET/IB mlx5_bond_0:1/RoCE");
  ASSERT_TRUE(bond);
  EXPECT_EQ(bond->status, Status::warn);
  EXPECT_NE(bond->hint.find("export NCCL_IB_HCA=^mlx5_bond_0"), std::string::npos);
  EXPECT_EQ(find(f, "nccl.transport", "network")->status, Status::ok);

  // Socket chosen on a host with Active RDMA ports, across hosts: a failure.
  const auto socket = job::parse_nccl_log(
      "h:1:1 [0] NCCL INFO NET/Socket : Using [0]eth0:10.1.0.1<0>\nh:1:1 [0] NCCL INFO Using network Socket\n");
  Findings g;
  g.begin_check("n1", 0, "nccl.transport");
  check_nccl_transport(socket, c, g);
  EXPECT_EQ(find(g, "nccl.transport", "network")->status, Status::fail);
  // A plugin's network is reported by name.
  EXPECT_EQ(job::parse_nccl_log("x NCCL INFO Using network AWS Libfabric\n").network, "AWS Libfabric");
}

// Recorded NCCL logs of InfiniBand and RoCE clusters (tests/fixtures/nccl-logs/public/README.md names each source);
// the same logs hold fabric-report import's reading of the path (tests/analysis/test_import.py).
std::string public_log(const std::string& name) {
  std::ifstream in(fixtures_folder() / "nccl-logs" / "public" / name);
  EXPECT_TRUE(in.good()) << name;
  return std::string(std::istreambuf_iterator<char>(in), {});
}

std::optional<Finding> gdr_finding(const std::string& log_text) {
  Findings f;
  f.begin_check("n1", 0, "nccl.transport");
  NcclContext c;
  c.hosts = 2;
  c.host_facts = false;
  check_nccl_transport(job::parse_nccl_log(log_text), c, f);
  const auto* gdr = find(f, "nccl.transport", "gdr");
  return gdr ? std::optional<Finding>(*gdr) : std::nullopt;
}

TEST(DoctorNccl, GpuDirectRdmaOnOrOffAndWhy) {
  const auto on = gdr_finding(public_log("aks-36-gdrdma.log"));
  ASSERT_TRUE(on);
  EXPECT_EQ(on->status, Status::ok);
  EXPECT_EQ(on->value, "on (NIC IB device 0, IB device 4, IB device 6)");  // no "Using" line in it: NICs by index

  const auto off = gdr_finding(public_log("nccl-899-gdr-no-module.log"));
  ASSERT_TRUE(off);
  EXPECT_EQ(off->status, Status::warn);
  EXPECT_EQ(off->value, "off (NIC IB device 0)");
  EXPECT_NE(off->hint.find("'GPU Direct RDMA Disabled' (no module)"), std::string::npos) << off->hint;
  EXPECT_NE(off->hint.find("nvidia_peermem"), std::string::npos);

  const auto roce = gdr_finding(public_log("nccl-1537-gdr-disabled-roce.log"));  // GDR lines, no channel yet
  ASSERT_TRUE(roce);
  EXPECT_EQ(roce->status, Status::warn);
  EXPECT_NE(roce->hint.find("mlx5_0, mlx5_1: 'GPU Direct RDMA Disabled'"), std::string::npos) << roce->hint;

  // Named NICs, one direction without GDR: the NIC's name from the "Using" line, the level named as the reason.
  const auto partly = gdr_finding(
      "n1:1:1 [0] NCCL INFO NET/IB : Using [0]mlx5_0:1/IB [1]mlx5_1:1/IB ; OOB ib0:10.0.0.1<0>\n"
      "n1:1:1 [0] NCCL INFO NCCL_NET_GDR_LEVEL set by environment to LOC\n"
      "n1:1:1 [0] NCCL INFO Channel 00/0 : 0[0] -> 8[0] [send] via NET/IB/1\n"
      "n1:1:1 [0] NCCL INFO Channel 00/0 : 8[0] -> 0[0] [receive] via NET/IB/0/GDRDMA\n");
  ASSERT_TRUE(partly);
  EXPECT_EQ(partly->value, "partly: on (NIC mlx5_0:1/IB), off on mlx5_1:1/IB");
  EXPECT_NE(partly->hint.find("NCCL_NET_GDR_LEVEL=LOC limits it"), std::string::npos) << partly->hint;

  // The path in one line, as fabric-coll names it on its NCCL rows.
  EXPECT_EQ(nccl_path_text(job::parse_nccl_log(public_log("aks-36-gdrdma.log"))),
            "NET/IB x7; GPUDirect RDMA: on (NIC IB device 0, IB device 4, IB device 6)");
  EXPECT_EQ(nccl_path_text(job::parse_nccl_log(fixture("nccl-info-p2p.log"))).rfind("P2P/CUMEM x", 0), 0u);
  EXPECT_EQ(nccl_path_text(job::parse_nccl_log(fixture("nccl-info-socket.log"))).rfind("NET/Socket x", 0), 0u);
  EXPECT_EQ(nccl_path_text(job::parse_nccl_log("")), "");

  // No RDMA: nothing said about GDR (the device's logs: P2P within a host, sockets).
  EXPECT_FALSE(gdr_finding(fixture("nccl-info-p2p.log")));
  EXPECT_FALSE(gdr_finding(fixture("nccl-info-socket.log")));
}

TEST(DoctorNccl, Selectors) {
  const std::set<std::string> hcas{"mlx5_0", "mlx5_1"};
  EXPECT_EQ(unmatched_selectors("mlx5_0:1,mlx5_9", hcas), std::vector<std::string>{"mlx5_9"});
  EXPECT_TRUE(unmatched_selectors("mlx5", hcas).empty());  // a prefix
  EXPECT_TRUE(unmatched_selectors("^mlx5_bond_0", hcas).empty());
  EXPECT_EQ(unmatched_selectors("=mlx5", hcas), std::vector<std::string>{"mlx5"});
  NcclContext c;
  c.interfaces = {"eth0", "lo"};
  c.rdma_devices = hcas;
  c.variables = {{"NCCL_SOCKET_IFNAME", "ib9"}, {"NCCL_IB_HCA", "mlx5_0"}};
  Findings f;
  f.begin_check("h", 0, "nccl.variables");
  check_nccl_variables(c, f);
  EXPECT_EQ(find(f, "nccl.variables", "NCCL_SOCKET_IFNAME")->status, Status::fail);
  EXPECT_NE(find(f, "nccl.variables", "NCCL_SOCKET_IFNAME")->hint.find("eth0, lo"), std::string::npos);
  EXPECT_EQ(find(f, "nccl.variables", "NCCL_IB_HCA")->status, Status::ok);
}

TEST(DoctorGpu, HealthyH200Pair) {
  FakeGpus gpus;
  Context c;
  c.host = "gpu1";
  c.gpus = &gpus;
  const auto f = run_named("gpu", c);
  EXPECT_EQ(f.worst(), Status::ok) << join(warning_lines(f.all()), "\n");
  EXPECT_EQ(find(f, "gpu.p2p", "GPU0-GPU1")->value, "read OK, write OK, nvlink OK");
  EXPECT_EQ(find(f, "gpu.nvlink", "GPU1")->value, "18/18 links active, 26.56 GB/s each");
  EXPECT_EQ(find(f, "gpu.pcie", "GPU0")->value, "gen 5 x16");
  const auto expected = expected_bandwidth(c);
  ASSERT_EQ(expected.size(), 4u);  // nvlink and pcie for each GPU
  EXPECT_EQ(expected[0].kind, HardwarePath::nvlink);
  EXPECT_NEAR(expected[0].gbps, 18 * 26.562, 1e-9);
  EXPECT_EQ(expected[0].basis, "18 links x 26.56 GB/s");
  EXPECT_NEAR(expected[1].gbps, 16 * 32.0 * 128 / 130 / 8, 1e-9);  // gen 5 x16 after 128b/130b
}

TEST(DoctorGpu, BrokenGpusAreNamed) {
  FakeGpus gpus;
  gpus.links_down_on_gpu1 = 2;
  gpus.rows.failure = true;
  gpus.clocks = 0x1 | 0x40;  // idle + HW thermal slowdown
  gpus.width = 8;
  Context c;
  c.gpus = &gpus;
  const auto f = run_named("gpu", c);
  EXPECT_EQ(find(f, "gpu.nvlink", "GPU1")->status, Status::warn);
  EXPECT_NE(find(f, "gpu.nvlink", "GPU1")->hint.find("0,1"), std::string::npos);
  EXPECT_EQ(find(f, "gpu.remapped_rows", "GPU0")->status, Status::fail);
  EXPECT_EQ(find(f, "gpu.clocks", "GPU0")->value, "HwThermalSlowdown");
  EXPECT_EQ(find(f, "gpu.pcie", "GPU0")->status, Status::warn);
  gpus.rows = {0, 0, true, false};
  const auto g = run_named("gpu.remapped_rows", c);
  EXPECT_EQ(find(g, "gpu.remapped_rows", "GPU0")->status, Status::warn);
  EXPECT_NEAR(expected_bandwidth(c)[2].gbps, 16 * 26.562, 1e-9);  // GPU1 with 2 links down
}

TEST(DoctorGpu, NvlinkErrorsCountWhatNvidiaSmiShowsNotCorrectedDataCrc) {
  FakeGpus gpus;
  Context c;
  c.gpus = &gpus;
  // What NVML gave on a healthy H200 link: data CRC grows with the lane ECC corrections; nvidia-smi shows CRC 0.
  gpus.link_errors.crc_data = 27;
  auto f = run_named("gpu.nvlink_errors", c);
  EXPECT_EQ(find(f, "gpu.nvlink_errors", "GPU0")->status, Status::ok);
  EXPECT_EQ(find(f, "gpu.nvlink_errors", "GPU0")->value,
            "replay 0, recovery 0, CRC 0 (data CRC 27, corrected: not counted)");
  gpus.link_errors.crc_flit = 2;
  gpus.link_errors.replay = 1;
  f = run_named("gpu.nvlink_errors", c);
  EXPECT_EQ(find(f, "gpu.nvlink_errors", "GPU1")->status, Status::warn);
  EXPECT_NE(find(f, "gpu.nvlink_errors", "GPU1")->value.find("replay 1, recovery 0, CRC 2 (data CRC 27"),
            std::string::npos);
  EXPECT_NE(find(f, "gpu.nvlink_errors", "GPU1")->value.find("on links 3"), std::string::npos);
}

// What LinkCounters reads around every measurement: the same counters as the check, every link of the GPU summed.
TEST(DoctorGpu, NvlinkErrorsTotalSumsEveryLinksCountedErrors) {
  FakeGpus gpus;
  gpus.link_errors = {1, 2, 3, 27};  // replay, recovery, flit CRC; data CRC not counted
  EXPECT_EQ(gpus.nvlink_errors_total(0), 6u);
  struct NoCounters : FakeGpus {
    std::optional<NvLinkErrors> nvlink_errors(int, int) const override { return std::nullopt; }
  } none;
  EXPECT_FALSE(none.nvlink_errors_total(0).has_value());
}

TEST(DoctorGpu, NvlinkUpWithoutASpeedIsAnUnknownFigure) {
  FakeGpus gpus;
  gpus.speed_known = false;
  Context c;
  c.gpus = &gpus;
  const auto expected = expected_bandwidth(c);
  ASSERT_EQ(expected[0].kind, HardwarePath::nvlink);
  EXPECT_TRUE(std::isnan(expected[0].gbps));
  EXPECT_EQ(expected[0].basis, "18 links, speed unknown");
}

TEST(DoctorGpu, WithoutNvmlEveryGpuCheckSkips) {
  Context c;
  c.gpu_skip = "NVML not found";
  const auto f = run_named("gpu", c);
  EXPECT_EQ(f.count(Status::skip), f.all().size());
  EXPECT_EQ(f.all().at(0).hint, "NVML not found");
}

TEST(DoctorJob, ConsistencyNamesTheOddHost) {
  std::vector<HostFacts> hosts;
  for (const char* h : {"n1", "n2", "n3"})
    hosts.push_back({h, {{"nccl", "2.28.3"}, {"driver", "580.95"}, {"kernel", "6.1"}, {"gpu_count", "8"}}});
  Findings ok;
  check_consistency(hosts, ok);
  EXPECT_EQ(ok.worst(), Status::ok);
  hosts[1].facts["nccl"] = "2.27.7";
  hosts[2].facts["kernel"] = "6.8";
  Findings f;
  check_consistency(hosts, f);
  const auto* nccl = find(f, "job.consistency", "nccl");
  ASSERT_TRUE(nccl);
  EXPECT_EQ(nccl->status, Status::fail);
  EXPECT_EQ(nccl->value, "n2 has '2.27.7'");
  EXPECT_EQ(nccl->expected, "'2.28.3' (on 2 of 3 hosts)");
  EXPECT_EQ(find(f, "job.consistency", "kernel")->status, Status::warn);
  EXPECT_EQ(find(f, "job.consistency", "gpu_count")->status, Status::ok);
}

TEST(DoctorTable, SelectionFindingsAndTerminal) {
  EXPECT_EQ(select_checks("gpu").size(), 8u);
  EXPECT_EQ(select_checks("gpu.ecc,gpu").size(), 8u);
  // Names and groups in any order run in the table's order.
  const auto picked = select_checks("host.thp,rdma.port_state,limits");
  ASSERT_EQ(picked.size(), 4u);
  EXPECT_EQ(std::string(picked[0]->name), "rdma.port_state");
  EXPECT_EQ(std::string(picked[1]->name), "limits.memlock");
  EXPECT_EQ(std::string(picked[3]->name), "host.thp");
  std::size_t cheap = 0;
  for (const auto& c : all_checks()) cheap += c.cheap ? 1 : 0;
  EXPECT_EQ(select_checks("cheap").size(), cheap);
  try {
    select_checks("rdma,bogus");
    FAIL() << "no error";
  } catch (const fabricbench::Error& e) {
    EXPECT_EQ(e.status(), fabricbench::ExitStatus::usage);
    const std::string what = e.what();
    EXPECT_EQ(what.rfind("--checks 'bogus': allowed values are rdma.devices, rdma.modules, ", 0), 0u) << what;
    EXPECT_NE(what.find(", job.consistency, all, cheap, rdma, limits, nccl, gpu, host, job (comma-separated)"),
              std::string::npos)
        << what;
  }
  Findings f;
  f.begin_check("h2", -1, "host.thp");
  f.ok("enabled", "madvise");
  f.begin_check("h1", 4, "rdma.port_state");
  f.add("mlx5_0/1", Status::fail, "DOWN/Polling", "ACTIVE/LinkUp", "check the cable");
  f.ok("mlx5_1/1", "ACTIVE/LinkUp");
  // Findings travel between ranks as rows of their table: every field comes back.
  const auto table = findings_table("doctor", "findings");
  std::vector<Finding> back;
  for (const auto& finding : f.all()) back.push_back(from_row(to_row(table, finding)));
  ASSERT_EQ(back.size(), 3u);
  EXPECT_EQ(back[1].rank, 4);
  EXPECT_EQ(back[1].status, Status::fail);
  EXPECT_EQ(back[1].hint, "check the cable");
  // The terminal view goes through the terminal sink: a section per host, failures first, ok rows left out.
  std::FILE* file = std::tmpfile();
  fabricbench::results::ResultSet out;
  out.add(std::make_unique<fabricbench::results::TerminalTable>(file));
  write_findings(out, table, back, false);
  std::rewind(file);
  std::string text;
  for (int c; (c = std::fgetc(file)) != EOF;) text += static_cast<char>(c);
  std::fclose(file);
  EXPECT_LT(text.find("# host h1: 1 fail, 0 warn, 0 skip, 1 ok"), text.find("# host h2"));
  EXPECT_NE(text.find("  fail   rdma.port_state    4 mlx5_0/1 DOWN/Polling ACTIVE/LinkUp check the cable\n"),
            std::string::npos)
      << text;
  EXPECT_EQ(text.find("mlx5_1/1"), std::string::npos) << text;  // ok rows left out
  EXPECT_EQ(text.find("madvise"), std::string::npos) << text;
  const auto lines = warning_lines(back);
  ASSERT_EQ(lines.size(), 1u);
  EXPECT_EQ(lines[0],
            "check failed: host h1: rank 4: rdma.port_state mlx5_0/1: DOWN/Polling (expected ACTIVE/LinkUp); check the "
            "cable");
}

TEST(DoctorJob, HardwareFactsTakeTheNetdevMtuOnlyWhereItIsReadable) {
  Tree t;
  t.port("mlx5_1", 1, "4: ACTIVE", "5: LinkUp", "Ethernet", "200 Gb/sec (2X HDR)", "RoCE v2", "ens1f0")
      .file("/sys/class/net/ens1f0/mtu", "9000\n");
  Context c;
  c.files = t.files();
  c.ports = read_rdma_ports(c.files);
  auto facts = hardware_facts(c);
  EXPECT_EQ(facts["mtu"], "netdev 9000");
  EXPECT_EQ(facts["gid_type"], "RoCE v2");
  Tree bare;  // the netdev has no mtu file: nothing, not "netdev " with an empty value
  bare.port("mlx5_1", 1, "4: ACTIVE", "5: LinkUp", "Ethernet", "200 Gb/sec (2X HDR)", "RoCE v2", "ens1f0");
  c.files = bare.files();
  c.ports = read_rdma_ports(c.files);
  facts = hardware_facts(c);
  EXPECT_EQ(facts["mtu"], "");
}

// The three checks no test asserted before (issue 47): their findings on made-up trees, each way they can go.
TEST(DoctorFiles, RdmaModulesNameTheOneMissing) {
  Tree t;
  t.port("mlx5_0", 1, "4: ACTIVE", "5: LinkUp", "InfiniBand", "400 Gb/sec (4X NDR)")
      .file("/proc/modules",
            "ib_core 425984 8 ib_uverbs,mlx5_ib, Live 0x0000000000000000\n"
            "mlx5_core 2052096 1 mlx5_ib, Live 0x0000000000000000\n");
  Context c;
  c.files = t.files();
  c.ports = read_rdma_ports(c.files);
  auto f = run_named("rdma.modules", c);
  ASSERT_TRUE(find(f, "rdma.modules", "ib_core"));
  EXPECT_EQ(find(f, "rdma.modules", "ib_core")->status, Status::ok);
  const auto* uverbs = find(f, "rdma.modules", "ib_uverbs");
  ASSERT_TRUE(uverbs);
  EXPECT_EQ(uverbs->status, Status::fail);
  EXPECT_NE(uverbs->hint.find("modprobe ib_uverbs"), std::string::npos);
  EXPECT_FALSE(find(f, "rdma.modules", "nvidia_peermem"));  // no GPU here
  Tree empty;
  empty.port("mlx5_0", 1, "4: ACTIVE", "5: LinkUp", "InfiniBand", "400 Gb/sec (4X NDR)").file("/proc/modules", "");
  c.files = empty.files();
  f = run_named("rdma.modules", c);
  ASSERT_TRUE(find(f, "rdma.modules", "modules"));
  EXPECT_EQ(find(f, "rdma.modules", "modules")->status, Status::skip);
}

TEST(DoctorFiles, RdmaEcnOnOffAndNotExposed) {
  Tree t;
  t.port("mlx5_0", 1, "4: ACTIVE", "5: LinkUp", "Ethernet", "100 Gb/sec (4X EDR)", "RoCE v2", "eth0")
      .port("mlx5_1", 1, "4: ACTIVE", "5: LinkUp", "Ethernet", "100 Gb/sec (4X EDR)", "RoCE v2", "eth1")
      .port("mlx5_2", 1, "4: ACTIVE", "5: LinkUp", "Ethernet", "100 Gb/sec (4X EDR)", "RoCE v2", "eth2");
  for (int prio = 0; prio < 8; ++prio) {
    const auto p = std::to_string(prio);
    t.file("/sys/class/net/eth0/ecn/roce_np/enable/" + p, prio == 3 ? "1\n" : "0\n")
        .file("/sys/class/net/eth0/ecn/roce_rp/enable/" + p, prio == 3 ? "1\n" : "0\n")
        .file("/sys/class/net/eth1/ecn/roce_np/enable/" + p, "0\n")
        .file("/sys/class/net/eth1/ecn/roce_rp/enable/" + p, "0\n");
  }
  Context c;
  c.files = t.files();
  c.ports = read_rdma_ports(c.files);
  const auto f = run_named("rdma.ecn", c);
  const auto* on = find(f, "rdma.ecn", "mlx5_0/1");
  ASSERT_TRUE(on);
  EXPECT_EQ(on->status, Status::ok);
  EXPECT_EQ(on->value, "roce_np on for priority 3, roce_rp on for priority 3");
  const auto* off = find(f, "rdma.ecn", "mlx5_1/1");
  ASSERT_TRUE(off);
  EXPECT_EQ(off->status, Status::warn);
  EXPECT_EQ(off->value, "roce_np off, roce_rp off");
  const auto* hidden = find(f, "rdma.ecn", "mlx5_2/1");
  ASSERT_TRUE(hidden);
  EXPECT_EQ(hidden->status, Status::skip);
  Tree ib;
  ib.port("mlx5_0", 1, "4: ACTIVE", "5: LinkUp", "InfiniBand", "400 Gb/sec (4X NDR)");
  c.files = ib.files();
  c.ports = read_rdma_ports(c.files);
  const auto g = run_named("rdma.ecn", c);
  ASSERT_TRUE(find(g, "rdma.ecn", "ecn"));
  EXPECT_EQ(find(g, "rdma.ecn", "ecn")->status, Status::skip);
}

TEST(DoctorFiles, HostIommuOffPassthroughOrTranslating) {
  Context c;
  Tree off;
  off.file("/proc/cmdline", "BOOT_IMAGE=/vmlinuz root=/dev/sda1\n");
  c.files = off.files();
  auto f = run_named("host.iommu", c);
  ASSERT_TRUE(find(f, "host.iommu", "iommu"));
  EXPECT_EQ(find(f, "host.iommu", "iommu")->status, Status::ok);
  EXPECT_EQ(find(f, "host.iommu", "iommu")->value, "off");
  Tree on;
  on.file("/proc/cmdline", "BOOT_IMAGE=/vmlinuz intel_iommu=on\n")
      .file("/sys/class/iommu/dmar0/uevent", "")
      .file("/sys/class/iommu/dmar1/uevent", "");
  c.files = on.files();
  f = run_named("host.iommu", c);
  EXPECT_EQ(find(f, "host.iommu", "iommu")->status, Status::warn);
  EXPECT_EQ(find(f, "host.iommu", "iommu")->value, "on (2 units), translating");
  EXPECT_NE(find(f, "host.iommu", "iommu")->hint.find("iommu=pt"), std::string::npos);
  Tree pt;
  pt.file("/proc/cmdline", "BOOT_IMAGE=/vmlinuz intel_iommu=on iommu=pt\n").file("/sys/class/iommu/dmar0/uevent", "");
  c.files = pt.files();
  f = run_named("host.iommu", c);
  EXPECT_EQ(find(f, "host.iommu", "iommu")->status, Status::ok);
  EXPECT_EQ(find(f, "host.iommu", "iommu")->value, "on, passthrough");
}
