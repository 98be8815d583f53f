// Every reader of a user's file against a generated corpus of a few hundred bad files each: random bytes, truncated
// files, NUL bytes, bytes that are not UTF-8, a 10 MB line, huge and negative numbers, duplicate keys and sections.
// Each case is either read (a truncated file can still be a valid one) or refused with Error::usage (exit 2) in one
// line that names the file; never another exception, a crash, a hang or (in the sanitizer build) a report.
// The same readers the executables run: --config (the command line), --baseline and --expected-rule (the harness),
// --rules, --pairs-file, --topology, --rail-map and --resume (fabric-sweep's configure on rank 0), --nccl-log
// (fabric-doctor's configure on rank 0).
#include <execinfo.h>
#include <gtest/gtest.h>

#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <random>
#include <regex>

#include "../argv.hpp"
#include "fabricbench/error.hpp"
#include "fabricbench/facts/expected_curve.hpp"
#include "fabricbench/facts/expected_share.hpp"
#include "fabricbench/results/baseline.hpp"
#include "fabricbench/results/hdf5_sink.hpp"
#include "fabricbench/tools/doctor/doctor_benchmark.hpp"
#include "fabricbench/tools/p2p/p2p_benchmark.hpp"
#include "fabricbench/tools/sweep/sweep_benchmark.hpp"

using namespace fabricbench;
namespace fs = std::filesystem;

namespace {

runtime::Placement four_hosts() {
  std::vector<runtime::RankPlace> places;
  for (int r = 0; r < 4; ++r) places.push_back({r, "h" + std::to_string(r), 0, 1});
  return runtime::Placement(places, 0);
}

// Parses `args` for `tool` and configures it as rank 0 of four hosts (what every rank does before any output).
template <typename Tool>
void configure(std::vector<std::string> args) {
  Tool tool;
  cli::CommandLine line(tool.program(), tool.summary(), tool.option_groups());
  tool.add_options(line.tool_options());
  Argv argv(tool.program(), std::move(args));
  if (!line.parse(argv.argc(), argv.argv(), false)) return;
  try {
    tool.configure(line.values(), line.common(), four_hosts());
  } catch (const Error& e) {
    throw line.attributed(e);  // as the harness does
  }
}

struct Reader {
  std::string option;
  std::string seed;  // a valid file the corpus is made from
  std::function<void(const std::string& path)> read;
};

std::vector<Reader> readers() {
  return {
      {"--config", "sizes = 8,4K,64K\niters = 200\nwarmup = 20\ncheck = 1\ntest = latency,bw\nwindow = 16\n",
       [](const std::string& path) {
         configure<tools::p2p::P2PBenchmark>({"--config", path});
       }},
      {"--baseline",
       "[baseline]\ntolerance = 10%\n[results/p2p 1]\ntest = bw\nbytes = 65536\nbw_mbps = 1000\n"
       "tolerance = 5%\n[results/p2p 2]\ntest = latency\nbytes = 8\nlatency_us = 2.5\n",
       [](const std::string& path) { results::Baseline::load(path, tools::p2p::P2PBenchmark::make_table()); }},
      {"--expected-rule", "[expected]\nwarn_below_percent = 80\nmin_bytes = 1M\n",
       [](const std::string& path) { facts::ExpectedRule::load(path, true); }},
      {"--rules",
       "[p2p_bw]\nsuspect_below_fraction_of_median = 0.5\n[p2p_latency]\nsuspect_above_multiple_of_best = 3.0\n"
       "[attribution]\nbad_node_fraction = 0.75\n",
       [](const std::string& path) {
         configure<tools::sweep::SweepBenchmark>({"--metric", "p2p_bw", "--rules", path});
       }},
      {"--pairs-file", "# ROUND HOST_A HOST_B\n0 h0 h1\n0 h2 h3\n1 h0 h2\n1 h1 h3\n",
       [](const std::string& path) {
         configure<tools::sweep::SweepBenchmark>({"--metric", "p2p_bw", "--pairs-file", path});
       }},
      {"--topology",
       "# two leaves\nSwitchName=leaf1 Nodes=h[0-1] LinkSpeed=400\nSwitchName=leaf2 Nodes=h[2-3]\n"
       "SwitchName=spine Switches=leaf[1-2]\n",
       [](const std::string& path) {
         configure<tools::sweep::SweepBenchmark>({"--metric", "p2p_bw", "--topology", path});
       }},
      {"--hostfile", "# the hosts of a dry run\nh0\nh1 slots=8\nh2\nh3\n",
       [](const std::string& path) {
         configure<tools::sweep::SweepBenchmark>({"--dry-run", "--hostfile", path});
       }},
      {"--expected-rule curves",
       "path,link_gbps,ranks,op,bytes,gbps,source\nnvlink,478.116,2,all_reduce,1048576,80.5,test\n"
       "nvlink,478.116,2,all_reduce,1073741824,331,test\n",
       [](const std::string& path) { facts::CurveBook::load(path); }},
      {"--rail-map", "# RAIL NIC\n0 rdma=mlx5_0:1 net=10.91.0.0/24\n",
       [](const std::string& path) {
         configure<tools::sweep::SweepBenchmark>({"--metric", "p2p_bw", "--rails", "--rail-map", path});
       }},
      {"--nccl-log",
       "[1,0]<stdout>:n1:10:10 [0] NCCL INFO NCCL version 2.21.5+cuda12.4\n"
       "[1,0]<stdout>:n1:10:10 [0] NCCL INFO NET/IB : Using [0]mlx5_0:1/IB [RO]; OOB ib0:10.0.0.1<0>\n"
       "[1,0]<stdout>:n1:10:10 [0] NCCL INFO comm 0x5a rank 0 nranks 2 cudaDev 0 busId 1000 - Init COMPLETE\n"
       "[1,0]<stdout>:n1:10:10 [0] NCCL INFO Channel 00/0 : 0[0] -> 1[0] [send] via NET/IB/0\n"
       "[1,0]<stdout>: iteration 1\n"
       "[1,0]<stdout>:n1:10:10 [0] NCCL INFO AllReduce: opCount 0 sendbuff 0x7f00 recvbuff 0x7f00 count 262144 "
       "datatype 7 op 0 root 0 comm 0x5a [nranks=2] stream 0x1\n"
       "[1,0]<stdout>: iteration 2\n"
       "[1,0]<stdout>:n1:10:10 [0] misc/socket.cc:50 NCCL WARN socket closed\n",
       [](const std::string& path) {
         configure<tools::doctor::DoctorBenchmark>({"--nccl-log", path, "--iteration-marker", "iteration [0-9]+"});
       }},
      // Greedy markers, which std::regex matched by recursion: a 40 KB line ended in a segmentation fault.
      {"--nccl-log (--iteration-marker '.*iteration.*')",
       "[1,0]<stdout>:n1:10:10 [0] NCCL INFO comm 0x5a rank 0 nranks 2 cudaDev 0 busId 1000 - Init COMPLETE\n"
       "[1,0]<stdout>: iteration 1 " +
           std::string(40000, 'x') +
           "\n"
           "[1,0]<stdout>:n1:10:10 [0] NCCL INFO AllReduce: opCount 0 sendbuff 0x7f00 recvbuff 0x7f00 count 262144 "
           "datatype 7 op 0 root 0 comm 0x5a [nranks=2] stream 0x1\n",
       [](const std::string& path) {
         configure<tools::doctor::DoctorBenchmark>({"--nccl-log", path, "--iteration-marker", ".*iteration.*"});
         configure<tools::doctor::DoctorBenchmark>({"--nccl-log", path, "--iteration-marker", "(a|b)*iteration"});
       }},
  };
}

std::string read_all(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

// The corpus of one reader, from its valid seed: (name, bytes).
std::vector<std::pair<std::string, std::string>> corpus(const std::string& seed, std::uint32_t salt) {
  std::mt19937 random(12345 + salt);
  std::vector<std::pair<std::string, std::string>> out{{"empty", ""}, {"seed", seed}};
  for (int k = 0; k < 40; ++k) {  // random bytes of every size class
    std::string bytes(1 + random() % (k < 30 ? 512 : 65536), '\0');
    for (auto& c : bytes) c = static_cast<char>(random());
    out.push_back({"random " + std::to_string(k), bytes});
  }
  for (std::size_t k = 1; k < 41; ++k)
    out.push_back({"truncated " + std::to_string(k), seed.substr(0, seed.size() * k / 41)});
  for (int k = 0; k < 20; ++k) {
    std::string with_nul = seed;
    with_nul.insert(random() % seed.size(), 1, '\0');
    out.push_back({"NUL " + std::to_string(k), with_nul});
    std::string not_utf8 = seed;
    not_utf8.insert(random() % seed.size(), k % 2 ? "\xff\xfe" : "\xc3");
    out.push_back({"not UTF-8 " + std::to_string(k), not_utf8});
  }
  out.push_back({"10 MB line", std::string(10u << 20, 'x') + "\n" + seed});
  out.push_back({"10 MB value", std::regex_replace(seed, std::regex("= [^\n]*"), "= " + std::string(10u << 20, '7'),
                                                   std::regex_constants::format_first_only)});
  // Every number in turn: huge, negative, not a number, beyond a double.
  const std::regex number("[0-9][0-9.]*[%KM]?");
  const auto begin = std::sregex_iterator(seed.begin(), seed.end(), number);
  for (auto it = begin; it != std::sregex_iterator(); ++it)
    for (const char* other : {"99999999999999999999999999", "1e400", "-1", "-0", "nan", "inf", "0x10", "1e-400", ""}) {
      std::string changed = seed;
      changed.replace(static_cast<std::size_t>(it->position()), static_cast<std::size_t>(it->length()), other);
      out.push_back({std::string("number ") + other + " at " + std::to_string(it->position()), changed});
    }
  // Duplicates: the whole file twice, its first line twice, and a line repeated with another value.
  out.push_back({"twice", seed + seed});
  const auto first_line = seed.substr(0, seed.find('\n') + 1);
  out.push_back({"first line twice", first_line + seed});
  std::string lines = seed;
  for (std::size_t at = lines.find(" = "); at != std::string::npos; at = lines.find(" = ", at + 1)) {
    const auto start = lines.rfind('\n', at) + 1;
    const auto key = lines.substr(start, at - start);
    out.push_back({"duplicate key " + key, seed + key + " = 1\n"});
  }
  out.push_back({"only a section", "[baseline]\n"});
  out.push_back({"unclosed section", "[p2p_bw\nsuspect_below_fraction_of_median = 0.5\n"});
  out.push_back({"key without value", "tolerance\n"});
  out.push_back({"binary zeros", std::string(4096, '\0')});
  out.push_back({"a directory", ""});  // made a directory below
  return out;
}

struct Tally {
  int read = 0, refused = 0;
};

// Runs one case: read, or refused in one line naming `path`; any other outcome is a failure of the test.
void one_case(const Reader& r, const std::string& name, const fs::path& path, Tally& tally) {
  try {
    r.read(path.string());
    ++tally.read;
  } catch (const Error& e) {
    const std::string what = e.what();
    EXPECT_EQ(e.status(), ExitStatus::usage) << r.option << " " << name << ": " << what;
    EXPECT_NE(what.find(path.string()), std::string::npos)
        << r.option << " " << name << ": names no file: " << what.substr(0, 300);
    EXPECT_EQ(what.find('\n'), std::string::npos) << r.option << " " << name << ": more than one line";
    EXPECT_LT(what.size(), 600u) << r.option << " " << name << ": " << what.substr(0, 300);
    ++tally.refused;
  } catch (const std::exception& e) {
    ADD_FAILURE() << r.option << " " << name << ": " << typeid(e).name() << ": "
                  << std::string(e.what()).substr(0, 300);
  }
}

}  // namespace

TEST(BadFiles, EveryReaderReadsOrRefusesInOneLineNamingTheFile) {
  const auto dir = fs::temp_directory_path() / ("fabricbench-bad-files-" + std::to_string(::getpid()));
  fs::create_directories(dir);
  std::uint32_t salt = 0;
  for (const auto& r : readers()) {
    Tally tally;
    const auto cases = corpus(r.seed, ++salt);
    for (std::size_t k = 0; k < cases.size(); ++k) {
      const auto path = dir / ("case-" + std::to_string(k) + ".ini");
      if (cases[k].first == "a directory")
        fs::create_directories(path);
      else
        std::ofstream(path, std::ios::binary) << cases[k].second;
      const int before = tally.read;
      one_case(r, cases[k].first, path, tally);
      if (tally.read > before) std::printf("%s: read %s\n", r.option.c_str(), cases[k].first.c_str());
      fs::remove_all(path);
    }
    // The seed is a valid file: a reader that refuses everything would pass the rest.
    const auto seed = dir / "seed.ini";
    std::ofstream(seed) << r.seed;
    EXPECT_NO_THROW(r.read(seed.string())) << r.option;
    EXPECT_GE(cases.size(), 150u) << r.option;
    std::printf("%s: %zu files, %d read, %d refused\n", r.option.c_str(), cases.size(), tally.read, tally.refused);
  }
  fs::remove_all(dir);
}

TEST(BadFiles, ResumeReadsOrRefusesAnyFile) {
  // --resume takes an HDF5 file: the corpus is random bytes, a fabricbench file of another tool, and a real
  // fabric-sweep file cut at many lengths.
  const auto dir = fs::temp_directory_path() / ("fabricbench-bad-resume-" + std::to_string(::getpid()));
  fs::create_directories(dir);
  const auto whole = dir / "whole.h5";
  {
    results::Hdf5Sink sink(whole.string(), true);
    sink.begin({"fabric-sweep", "0.1.0", "fabric-sweep", "2026-01-01T00:00:00Z", 4, {"h0", "h1", "h2", "h3"}});
    const results::TableSpec t{"sweep", "pairs", {results::key_int("round"), results::key_text("host_a", 64)}};
    sink.declare(t);
    sink.row(results::Row(t).set("round", std::int64_t{0}).set("host_a", std::string("h0")));
    sink.finish("failed: killed");
  }
  const auto bytes = read_all(whole);
  ASSERT_GT(bytes.size(), 1000u);
  std::vector<std::pair<std::string, std::string>> cases{{"empty", ""}, {"text", "not an HDF5 file\n"}};
  std::mt19937 random(7);
  for (int k = 0; k < 40; ++k) {
    std::string noise(1 + random() % 8192, '\0');
    for (auto& c : noise) c = static_cast<char>(random());
    cases.push_back({"random " + std::to_string(k), noise});
  }
  for (std::size_t k = 1; k < 120; ++k)
    cases.push_back({"truncated " + std::to_string(k), bytes.substr(0, bytes.size() * k / 120)});
  for (int k = 0; k < 40; ++k) {
    std::string flipped = bytes;
    flipped[random() % flipped.size()] ^= static_cast<char>(1 + random() % 255);
    cases.push_back({"flipped " + std::to_string(k), flipped});
  }
  Tally tally;
  const Reader r{"--resume", "", [](const std::string& path) {
                   configure<tools::sweep::SweepBenchmark>({"--metric", "p2p_bw", "--resume", path});
                 }};
  const char* keep = std::getenv("FABRICBENCH_TEST_KEEP_CASE");  // writes that case's file here and reads only it
  if (keep)                                                      // where a crash was: the frames on stderr
    std::signal(SIGSEGV, [](int) {
      void* frames[64];
      backtrace_symbols_fd(frames, backtrace(frames, 64), 2);
      std::_Exit(139);
    });
  for (std::size_t k = 0; k < cases.size(); ++k) {
    if (keep && cases[k].first != keep) continue;
    const auto path = keep ? fs::path("resume-case.h5") : dir / ("case-" + std::to_string(k) + ".h5");
    std::ofstream(path, std::ios::binary) << cases[k].second;
    const int before = tally.read;
    std::fprintf(stderr, "--resume: %s\n", cases[k].first.c_str());  // the case a crash inside HDF5 stopped at
    one_case(r, cases[k].first, path, tally);
    if (tally.read > before) std::printf("--resume: read %s\n", cases[k].first.c_str());
    if (!keep) fs::remove(path);
  }
  std::printf("--resume: %zu files, %d read, %d refused\n", cases.size(), tally.read, tally.refused);
  EXPECT_GE(cases.size(), 150u);
  if (keep) return;
  fs::remove_all(dir);
}
