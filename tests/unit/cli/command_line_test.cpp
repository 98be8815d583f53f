#include "fabricbench/cli/command_line.hpp"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "../argv.hpp"
#include "fabricbench/error.hpp"

using fabricbench::Error;
using fabricbench::ExitStatus;
using namespace fabricbench::cli;

namespace {

// Parses a command line with the common schema; returns the usage message ("" when accepted).
std::string usage_error(std::vector<std::string> args, CommonOptions* out = nullptr) {
  CommandLine cl("fabric-test", "test", {SizeOptions{{1, 1024, 2}, false}, ""});
  Argv argv("fabric-test", std::move(args));
  try {
    cl.parse(argv.argc(), argv.argv(), false);
    if (out) *out = cl.common();
    return "";
  } catch (const Error& e) {
    EXPECT_EQ(e.status(), ExitStatus::usage);
    return e.what();
  }
}

}  // namespace

TEST(CommandLine, DefaultsComeFromTheExecutable) {
  CommonOptions o;
  ASSERT_EQ(usage_error({}, &o), "");
  EXPECT_EQ(o.sizes.values().front(), 1u);
  EXPECT_EQ(o.sizes.values().back(), 1024u);
  EXPECT_EQ(o.iterations, 0);
  EXPECT_EQ(o.warmup, -1);
  EXPECT_FALSE(o.check);
}

TEST(CommandLine, NcclTestsAndOsuFlagsMeanTheSame) {
  CommonOptions a, b;
  ASSERT_EQ(usage_error({"-b", "8", "-e", "64", "-f", "2", "-n", "7", "-w", "3", "-c", "1"}, &a), "");
  ASSERT_EQ(usage_error({"-m", "8:64", "-i", "7", "-x", "3", "--check"}, &b), "");
  EXPECT_EQ(a.sizes.values(), b.sizes.values());
  EXPECT_EQ(a.iterations, 7);
  EXPECT_EQ(b.iterations, 7);
  EXPECT_EQ(a.warmup, 3);
  EXPECT_EQ(b.warmup, 3);
  EXPECT_TRUE(a.check);
  EXPECT_TRUE(b.check);
  CommonOptions c;
  ASSERT_EQ(usage_error({"-c", "0"}, &c), "");
  EXPECT_FALSE(c.check);
}

TEST(CommandLine, RejectsBadInputNamingTheOption) {
  const std::vector<std::pair<std::vector<std::string>, std::string>> cases{
      {{"--bogus"}, "--bogus"},
      {{"-b", "4Q"}, "--min-bytes"},
      {{"-e", "-1"}, "--max-bytes"},
      {{"--sizes", ""}, "--sizes"},
      {{"-b", "1M", "-e", "1K"}, "--min-bytes"},
      {{"-n", "0"}, "--iters"},
      {{"-i", "0"}, "-i"},
      {{"-w", "-1"}, "--warmup"},
      {{"-f", "1"}, "--step-factor"},
      {{"-c", "2"}, "--check"},
      {{"--timeout", "soon"}, "--timeout"},
      {{"--sizes", "8", "-b", "8"}, "--sizes"},
      {{"--config", "/nonexistent/x.ini"}, "--config"},
      {{"-n", "abc"}, "iters"},
      {{"-n", "2000000000"}, "--iters 2000000000: must be at most 1000000000"},
      {{"-x", "5000000000"}, "-x 5000000000: must be at most 1000000000"},
  };
  for (const auto& [args, option] : cases) {
    const auto message = usage_error(args);
    EXPECT_NE(message.find(option), std::string::npos) << "args " << args[0] << " gave: " << message;
    EXPECT_EQ(message.find('\n'), std::string::npos) << message;
  }
}

TEST(CommandLine, ReadsAConfigFileAndTheCommandLineWins) {
  const auto path =
      std::filesystem::temp_directory_path() / ("fabricbench_cli_test-" + std::to_string(::getpid()) + ".ini");
  std::ofstream(path) << "iters = 11\nwarmup = 2\nsizes = 8,16\n";
  CommonOptions o;
  ASSERT_EQ(usage_error({"--config", path.string(), "-n", "5"}, &o), "");
  EXPECT_EQ(o.iterations, 5);
  EXPECT_EQ(o.warmup, 2);
  EXPECT_EQ(o.sizes.values(), (std::vector<std::uint64_t>{8, 16}));
  std::filesystem::remove(path);
}

TEST(CommandLine, OutputPathsAreCheckedBeforeAnythingIsWritten) {
  const auto dir = std::filesystem::temp_directory_path() / ("fabricbench_cli_out-" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  const auto existing = dir / "exists.h5";
  std::ofstream(existing) << "x";
  auto resolve = [](std::vector<std::string> args) -> std::string {
    CommandLine cl("fabric-test", "test", {SizeOptions{{1, 2, 2}, false}, ""});
    Argv argv("fabric-test", std::move(args));
    try {
      cl.parse(argv.argc(), argv.argv(), false);
      cl.resolve_outputs();
      return "";
    } catch (const Error& e) {
      return e.what();
    }
  };
  EXPECT_NE(resolve({"--output", existing.string()}).find("--force"), std::string::npos);
  EXPECT_EQ(resolve({"--output", existing.string(), "--force"}), "");
  EXPECT_NE(resolve({"--output", "/nonexistent-dir/x.h5"}).find("does not exist"), std::string::npos);
  EXPECT_NE(resolve({"--output", dir.string()}).find("directory"), std::string::npos);
  EXPECT_NE(resolve({"--output", (dir / "a.h5").string(), "--csv", existing.string()}).find("--csv"),
            std::string::npos);
  EXPECT_TRUE(std::filesystem::exists(existing));
  EXPECT_FALSE(std::filesystem::exists(dir / "a.h5")) << "validation creates nothing";
  std::filesystem::remove_all(dir);
}

TEST(ParseDuration, AcceptsUnits) {
  EXPECT_DOUBLE_EQ(parse_duration("60", "--timeout"), 60);
  EXPECT_DOUBLE_EQ(parse_duration("60s", "--timeout"), 60);
  EXPECT_DOUBLE_EQ(parse_duration("5m", "--timeout"), 300);
  EXPECT_DOUBLE_EQ(parse_duration("1h", "--timeout"), 3600);
  EXPECT_DOUBLE_EQ(parse_duration("1.5", "--timeout"), 1.5);
  for (const char* bad : {"", "0", "-5", "5d", "s", "1.2.3"})
    EXPECT_THROW(parse_duration(bad, "--timeout"), Error) << bad;
}

TEST(CommandLine, LimitsAreStatedAsLimitsWithTheValueGiven) {
  auto message = [](auto&& f) -> std::string {
    try {
      f();
    } catch (const Error& e) {
      return e.what();
    }
    return "";
  };
  EXPECT_EQ(message([] { require_in_range("--window", 1000000000, 1, 100000); }),
            "--window 1000000000: must be at most 100000");
  EXPECT_EQ(message([] { require_in_range("--window", 0, 1, 100000); }), "--window 0: must be at least 1");
  EXPECT_EQ(message([] { require_in_range("--window", 64, 1, 100000); }), "");
}

TEST(CommandLine, AToolWithoutMessageSizesShowsNoneOfTheirOptions) {
  CommandLine cl("fabric-doc", "a tool that measures no message sizes", OptionGroups{});
  const auto help = cl.help();
  for (const char* absent : {"--min-bytes", "--max-bytes", "--step-factor", "--sizes", "--iters", "--warmup", "--check",
                             "OSU", "-b [", "-n ["})
    EXPECT_EQ(help.find(absent), std::string::npos) << absent << " in:\n" << help;
  for (const char* present : {"--output", "--csv", "--config", "--timeout", "--quiet", "--force", "--help"})
    EXPECT_NE(help.find(present), std::string::npos) << present;
  Argv refused("fabric-doc", {"-b", "8"});
  EXPECT_THROW(cl.parse(refused.argc(), refused.argv(), false), Error);
  Argv accepted("fabric-doc", {"--timeout", "5s", "-q"});
  CommandLine ok("fabric-doc", "x", OptionGroups{});
  ASSERT_TRUE(ok.parse(accepted.argc(), accepted.argv(), false));
  EXPECT_FALSE(ok.common().has_sizes);
  EXPECT_TRUE(ok.common().quiet);
  EXPECT_DOUBLE_EQ(ok.common().timeout_s, 5);
}

TEST(CommandLine, AToolMayClaimShortFlagsForItsOwnOptions) {
  // perftest's habits: -b bidirectional, -q queue pairs. The common options keep their long names.
  CommandLine cl("fabric-x", "x", {SizeOptions{{2, 8, 2}, false}, "bq"});
  cl.tool_options().add_options()("bidirectional,b", "both ways")("qps,q", po::value<int>(), "QPs");
  Argv argv("fabric-x", {"-b", "-q", "4", "--min-bytes", "4", "--quiet"});
  ASSERT_TRUE(cl.parse(argv.argc(), argv.argv(), false));
  EXPECT_TRUE(cl.values().count("bidirectional"));
  EXPECT_EQ(cl.values()["qps"].as<int>(), 4);
  EXPECT_EQ(cl.common().sizes.values().front(), 4u);
  EXPECT_TRUE(cl.common().quiet);
  const auto help = cl.help();
  EXPECT_NE(help.find("--min-bytes"), std::string::npos);
  EXPECT_EQ(help.find("-b [ --min-bytes ]"), std::string::npos) << help;
  EXPECT_NE(help.find("-e [ --max-bytes ]"), std::string::npos) << help;
}
