// perftest's per-test rules (depths, completion moderation, inline) and fabric-verbs' option validation. The
// validation runs before any device is opened, so these pass on machines without RDMA devices.
#include <gtest/gtest.h>

#include "../argv.hpp"
#include "fabricbench/error.hpp"
#include "fabricbench/tools/verbs/verbs_benchmark.hpp"
#include "fabricbench/verbs/verbs_link.hpp"

using namespace fabricbench;
using namespace fabricbench::verbs;

namespace {

const VerbsTest& test(const char* name) {
  const auto* t = find_verbs_test(name);
  EXPECT_NE(t, nullptr) << name;
  return *t;
}

// Configures fabric-verbs as rank 0 of 2; returns the usage message, "" if accepted (reaching the device).
std::string configure(std::vector<std::string> args) {
  tools::verbs::VerbsBenchmark b;
  cli::CommandLine cl(b.program(), b.summary(), b.option_groups());
  b.add_options(cl.tool_options());
  Argv argv("fabric-verbs", std::move(args));
  try {
    cl.parse(argv.argc(), argv.argv(), false);
    b.configure(cl.values(), cl.common(), runtime::Placement({{0, "h0", 0, 1}, {1, "h1", 0, 1}}, 0));
    return "";
  } catch (const Error& e) {
    EXPECT_EQ(e.status(), ExitStatus::usage) << e.what();
    return e.what();
  }
}

}  // namespace

TEST(VerbsTests, PerftestDefaults) {
  EXPECT_EQ(test("write_bw").defaults.iterations(65536, 0), 5000);
  for (const char* t : {"read_bw", "send_bw", "atomic_bw", "write_lat", "read_lat", "send_lat", "atomic_lat"}) {
    EXPECT_EQ(test(t).defaults.iterations(2, 0), 1000) << t;
    EXPECT_EQ(test(t).defaults.warmup(2, -1), 0) << t;
  }
  EXPECT_EQ(test("write_bw").default_bytes, 65536u);
  EXPECT_EQ(test("send_lat").default_bytes, 2u);
  EXPECT_TRUE(test("atomic_lat").fixed_size());
  EXPECT_EQ(test("write_lat").latency_divisor, 2);
  EXPECT_EQ(test("send_lat").latency_divisor, 2);
  EXPECT_EQ(test("read_lat").latency_divisor, 1);
  EXPECT_EQ(test("atomic_lat").latency_divisor, 1);
}

TEST(VerbsTests, DepthModerationAndInlineAsPerftest) {
  VerbsSettings s;
  EXPECT_EQ(VerbsLink::tx_depth_for(test("write_bw"), s, 5000), 128);
  EXPECT_EQ(VerbsLink::tx_depth_for(test("write_bw"), s, 50), 50) << "capped to the iterations";
  EXPECT_EQ(VerbsLink::tx_depth_for(test("write_lat"), s, 1000), 1);
  EXPECT_EQ(VerbsLink::cq_mod_for(test("write_bw"), s, 65536, 128), 1) << "above 8 KiB: every message";
  EXPECT_EQ(VerbsLink::cq_mod_for(test("write_bw"), s, 8192, 128), 100);
  EXPECT_EQ(VerbsLink::cq_mod_for(test("write_bw"), s, 8192, 50), 50) << "capped to the TX depth";
  EXPECT_EQ(VerbsLink::cq_mod_for(test("write_lat"), s, 2, 1), 1);
  s.events = true;
  EXPECT_EQ(VerbsLink::cq_mod_for(test("write_bw"), s, 65536, 128), 100) << "-e keeps 100 (perftest)";
  s.events = false;
  s.all_sizes = true;
  EXPECT_EQ(VerbsLink::cq_mod_for(test("write_bw"), s, 65536, 128), 100) << "-a keeps 100";
  s.cq_mod = 10;
  EXPECT_EQ(VerbsLink::cq_mod_for(test("write_bw"), s, 65536, 128), 10);
  EXPECT_EQ(VerbsLink::inline_for(test("write_lat"), s), 220);
  EXPECT_EQ(VerbsLink::inline_for(test("send_lat"), s), 236);
  EXPECT_EQ(VerbsLink::inline_for(test("read_lat"), s), 0);
  EXPECT_EQ(VerbsLink::inline_for(test("write_bw"), s), 0);
  s.inline_bytes = 64;
  EXPECT_EQ(VerbsLink::inline_for(test("write_bw"), s), 64);
}

TEST(VerbsTests, MtuValues) {
  EXPECT_EQ(mtu_bytes(parse_mtu(4096)), 4096);
  EXPECT_EQ(mtu_bytes(IBV_MTU_256), 256);
  try {
    parse_mtu(1500);
    FAIL();
  } catch (const Error& e) {
    EXPECT_EQ(std::string(e.what()), "--mtu 1500: allowed values are 256, 512, 1024, 2048, 4096");
    EXPECT_EQ(e.status(), ExitStatus::usage);
  }
}

TEST(VerbsOptions, RejectsBadValuesNamingTheOption) {
  EXPECT_EQ(configure({"--test", "write"}),
            "--test 'write': allowed values are write_bw, read_bw, send_bw, atomic_bw, write_lat, read_lat, send_lat, "
            "atomic_lat, all (comma-separated)");
  EXPECT_EQ(configure({"--test", "write_bw,"}),
            "--test '': allowed values are write_bw, read_bw, send_bw, atomic_bw, write_lat, read_lat, send_lat, "
            "atomic_lat, all (comma-separated)");
  EXPECT_EQ(configure({"-s", "64K", "-a"}),
            "--size, --all-sizes and --sizes each give the sizes: use only one of them");
  EXPECT_EQ(configure({"-s", "0"}), "--size 0: write_bw needs messages of at least 1 byte");
  EXPECT_EQ(configure({"-s", "4G"}), "--size 4G: at most 2G (one verbs message)");
  EXPECT_EQ(configure({"-q", "0"}), "--qps 0: must be at least 1");
  EXPECT_EQ(configure({"-m", "1500"}), "--mtu 1500: allowed values are 256, 512, 1024, 2048, 4096");
  EXPECT_EQ(configure({"-A", "swap"}), "--atomic-type 'swap': allowed values are fetch_add, cmp_swap");
  EXPECT_EQ(configure({"-D", "0"}), "--duration 0: must be more than 0 and at most 3600 seconds");
  EXPECT_EQ(configure({"-D", "2", "-n", "10"}), "--duration and --iters both set the length: give one");
  EXPECT_EQ(configure({"-n", "4"}), "--iters 4: must be at least 5");
  EXPECT_EQ(configure({"-t", "0"}), "--tx-depth 0: must be at least 1");
  EXPECT_EQ(configure({"-r", "100000"}), "--rx-depth 100000: must be at most 16384");
  EXPECT_EQ(configure({"-Q", "0"}), "--cq-mod 0: must be at least 1");
  EXPECT_EQ(configure({"-I", "2000"}), "--inline 2000: must be at most 1024");
  EXPECT_EQ(configure({"-i", "0"}), "--ib-port 0: must be at least 1");
  EXPECT_EQ(configure({"-x", "-1"}), "--gid-index -1: must be at least 0");
  EXPECT_NE(configure({"--memory", "gpu"}).find("--memory 'gpu': allowed values are host"), std::string::npos);
}

TEST(VerbsOptions, PerftestLettersBelongToVerbs) {
  // -b, -q, -x, -m, -i, -e are perftest's here; the common options keep their long names.
  tools::verbs::VerbsBenchmark b;
  cli::CommandLine cl(b.program(), b.summary(), b.option_groups());
  b.add_options(cl.tool_options());
  Argv argv("fabric-verbs", {"-b", "-q", "4", "-x", "3", "-m", "2048", "-i", "1", "-e", "--max-bytes", "1M"});
  cl.parse(argv.argc(), argv.argv(), false);
  EXPECT_TRUE(cl.values()["bidirectional"].as<bool>());
  EXPECT_EQ(cl.values()["qps"].as<int>(), 4);
  EXPECT_EQ(cl.values()["gid-index"].as<int>(), 3);
  EXPECT_EQ(cl.values()["mtu"].as<int>(), 2048);
  EXPECT_EQ(cl.values()["ib-port"].as<int>(), 1);
  EXPECT_TRUE(cl.values()["events"].as<bool>());
  EXPECT_EQ(cl.common().sizes.max(), 1u << 20);
}

TEST(VerbsOptions, NoDeviceIsAUsageErrorNamingTheHost) {
  if (!device_names().empty()) GTEST_SKIP() << "this machine has RDMA devices";
  EXPECT_EQ(configure({}),
            "no RDMA device on host h0: libibverbs lists none (looked for /sys/class/infiniband "
            "devices with a user-space provider)");
}
