#include <gtest/gtest.h>

#include "../argv.hpp"
#include "fabricbench/error.hpp"
#include "fabricbench/tools/p2p/p2p_benchmark.hpp"

using namespace fabricbench;

namespace {

runtime::Placement placement_of(int ranks) {
  std::vector<runtime::RankPlace> places;
  for (int r = 0; r < ranks; ++r) places.push_back({r, "h" + std::to_string(r % 2), r / 2, (ranks + 1) / 2});
  return runtime::Placement(places, 0);
}

// Configures fabric-p2p as rank 0 of `ranks`; returns the usage message, "" if accepted.
std::string configure(std::vector<std::string> args, int ranks) {
  tools::p2p::P2PBenchmark b;
  cli::CommandLine cl(b.program(), b.summary(), b.option_groups());
  b.add_options(cl.tool_options());
  Argv argv("fabric-p2p", std::move(args));
  try {
    cl.parse(argv.argc(), argv.argv(), false);
    b.configure(cl.values(), cl.common(), placement_of(ranks));
    return "";
  } catch (const Error& e) {
    EXPECT_EQ(e.status(), ExitStatus::usage);
    return e.what();
  }
}

}  // namespace

TEST(P2POptions, AcceptsEveryTestAndMemoryHost) {
  for (const char* t : {"latency", "bw", "bibw", "mbw_mr", "all", "latency,bw", "bw,all"})
    EXPECT_EQ(configure({"--test", t}, 2), "") << t;
  EXPECT_EQ(configure({"--memory", "host", "-W", "1"}, 4), "");
}

TEST(P2POptions, RejectsBadValuesNamingTheOption) {
  EXPECT_EQ(configure({"--test", "pingpong"}, 2),
            "--test 'pingpong': allowed values are latency, bw, bibw, mbw_mr, all (comma-separated)");
  EXPECT_EQ(configure({"--test", "latency,,bw"}, 2),
            "--test '': allowed values are latency, bw, bibw, mbw_mr, all (comma-separated)");
  EXPECT_NE(configure({"--window", "0"}, 2).find("--window 0: must be at least 1"), std::string::npos);
  EXPECT_NE(configure({"-W", "-3"}, 2).find("--window"), std::string::npos);
  EXPECT_EQ(configure({"--window", "1000000000"}, 2), "--window 1000000000: must be at most 100000");
  EXPECT_EQ(configure({"--test", "bw", "--sizes", "0,8"}, 2),
            "--sizes 0: bw measures bandwidth, which needs messages of at least 1 byte (latency takes 0)");
  EXPECT_EQ(configure({"--test", "latency", "--sizes", "0,8"}, 2), "");
  EXPECT_NE(configure({"--memory", "gpu"}, 2).find("--memory 'gpu': allowed values are host, pinned, device"),
            std::string::npos);
}

TEST(P2POptions, PairingNeedsAnEvenNumberOfRanks) {
  EXPECT_NE(configure({}, 3).find("even number of ranks"), std::string::npos);
  EXPECT_NE(configure({}, 1).find("got 1"), std::string::npos);
  EXPECT_EQ(configure({}, 6), "");
}

TEST(P2POptions, DeviceMemoryNeedsAGpu) {
  if (memory::unavailable_reason(memory::MemoryKind::device).empty()) GTEST_SKIP() << "a GPU is visible here";
  EXPECT_NE(configure({"--memory", "device"}, 2).find("--memory device: not available here"), std::string::npos);
}
