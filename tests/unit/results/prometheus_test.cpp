#include "fabricbench/results/prometheus.hpp"

#include <gtest/gtest.h>
#include <unistd.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "fabricbench/error.hpp"

using fabricbench::results::Exposition;

TEST(Exposition, OneHelpAndTypePerFamilyEscapedLabelsAndTheToolOnEverySeries) {
  Exposition e("fabric-sweep");
  e.add("sweep_pair_latency_seconds", "a pair's latency", {{"host_a", "h\"1\\"}, {"host_b", "h2"}, {"rail", ""}},
        2.5e-05);
  e.add("sweep_pair_latency_seconds", "a pair's latency", {{"host_a", "h3"}, {"host_b", "h4"}}, 3e-05);
  e.add("sweep_pair_latency_seconds", "a pair's latency", {{"host_a", "h3"}, {"host_b", "h4"}}, 4e-05);  // replaces
  e.add("sweep_verdicts", "how many\nverdicts", {}, 0);
  e.add("sweep_pass", "left out", {}, NAN);
  EXPECT_EQ(
      e.text(),
      "# HELP fabricbench_sweep_pair_latency_seconds a pair's latency\n"
      "# TYPE fabricbench_sweep_pair_latency_seconds gauge\n"
      "fabricbench_sweep_pair_latency_seconds{tool=\"fabric-sweep\",host_a=\"h\\\"1\\\\\",host_b=\"h2\"} 2.5e-05\n"
      "fabricbench_sweep_pair_latency_seconds{tool=\"fabric-sweep\",host_a=\"h3\",host_b=\"h4\"} 4e-05\n"
      "# HELP fabricbench_sweep_verdicts how many\\nverdicts\n"
      "# TYPE fabricbench_sweep_verdicts gauge\n"
      "fabricbench_sweep_verdicts{tool=\"fabric-sweep\"} 0\n");
}

TEST(Exposition, NumbersReadBackAsTheSameDouble) {
  for (double v : {1.801e-06, 12.0, 0.1, 123456789.125, -3.5, 1e300})
    EXPECT_EQ(std::stod(Exposition::number(v)), v) << Exposition::number(v);
  EXPECT_EQ(Exposition::number(12), "12");
  EXPECT_EQ(Exposition::number(INFINITY), "+Inf");
  EXPECT_EQ(Exposition::number(NAN), "NaN");
}

TEST(Exposition, WriteReplacesTheFileWholeAndLeavesNoTemporary) {
  const auto dir = std::filesystem::temp_directory_path() / ("fb_prom_test-" + std::to_string(::getpid()));
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  const auto path = (dir / "mesh.prom").string();
  std::ofstream(path) << "old\n";
  Exposition e("fabric-sweep");
  e.add("sweep_pass", "the pass", {}, 3);
  e.write(path);
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  EXPECT_EQ(text.str(), e.text());
  EXPECT_EQ(std::distance(std::filesystem::directory_iterator(dir), std::filesystem::directory_iterator()), 1);
  EXPECT_THROW(e.write((dir / "missing" / "x.prom").string()), fabricbench::Error);
  std::filesystem::remove_all(dir);
}

TEST(Exposition, LabelValuesAreValidUtf8WhateverAServerSent) {
  // A communicator hash with bytes that are not UTF-8 made the whole textfile invalid to the collector (promtool:
  // invalid label value); a newline or an escape from a server is shown as text, not written raw.
  Exposition e("fabric-watchdog");
  e.add("nccl_ras_op_spread", "spread", {{"communicator", "0x\xff\xfe\x1b[2J\n"}}, 1);
  const auto text = e.text();
  EXPECT_NE(text.find("communicator=\"0x\\\\xff\\\\xfe\\\\x1b[2J\\\\n\"} 1\n"), std::string::npos) << text;
  for (char c : text) EXPECT_TRUE(c == '\n' || (static_cast<unsigned char>(c) >= 0x20 && c != 0x7f)) << text;
}
