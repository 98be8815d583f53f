// fabric-watchdog's modes: which one a command line makes, what each refuses, and the judge --slow starts, whose
// command line its settings make (and parse back to the same settings).
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <algorithm>
#include <variant>

#include "../argv.hpp"
#include "fabricbench/error.hpp"
#include "fabricbench/runtime/temp_dir.hpp"
#include "fabricbench/tools/watchdog/watchdog_options.hpp"

using namespace fabricbench;
using tools::watchdog::Options;

namespace {

Options parse(std::vector<std::string> args) {
  Argv argv("fabric-watchdog", std::move(args));
  return Options::parse(argv.argc(), argv.argv());
}

// The usage message a command line is refused with, "" if accepted.
std::string refusal(std::vector<std::string> args) {
  try {
    parse(std::move(args));
    return "";
  } catch (const Error& e) {
    EXPECT_EQ(e.status(), ExitStatus::usage);
    return e.what();
  }
}

class WatchdogModes : public ::testing::Test {
 protected:
  WatchdogModes() : dir_("fabricbench-watchdog-modes") {
    folder_ = dir_.path() + "/slow";
    ::mkdir(folder_.c_str(), 0700);
  }
  runtime::TempDir dir_;
  std::string folder_;
};

}  // namespace

TEST_F(WatchdogModes, EachCommandLineMakesItsMode) {
  const auto report = dir_.path() + "/hang.h5";
  EXPECT_TRUE(std::holds_alternative<tools::watchdog::RunMode>(parse({"--report", report, "--", "true"}).mode));
  const auto prom = dir_.path() + "/ras.prom";
  const auto monitor = parse({"--watch", "30s", "--prometheus", prom});
  ASSERT_TRUE(std::holds_alternative<tools::watchdog::MonitorMode>(monitor.mode));
  EXPECT_EQ(std::get<tools::watchdog::MonitorMode>(monitor.mode).ras.watch_s, 30);
  const auto judge = parse({"--judge", folder_, "--slow-loss", "7"});
  ASSERT_TRUE(std::holds_alternative<tools::watchdog::JudgeMode>(judge.mode));
  EXPECT_DOUBLE_EQ(std::get<tools::watchdog::JudgeMode>(judge.mode).loss(), 0.07);
}

TEST_F(WatchdogModes, EachModeRefusesWhatItDoesNotTakeByName) {
  const auto prom = dir_.path() + "/ras.prom";
  EXPECT_EQ(refusal({"--judge", folder_, "--ras-timeout", "5s"}),
            "--ras-timeout: --judge only judges the folder; drop --ras-timeout");
  EXPECT_EQ(refusal({"--watch", "1m", "--prometheus", prom, "--action-timeout", "5s"}),
            "--action-timeout: there is no command to watch (--watch alone keeps --prometheus up to date); drop "
            "--action-timeout or give the command after --");
  EXPECT_EQ(refusal({"--replay", "--", "true"}),
            "--replay belongs to --slow DIR (or --judge DIR): give one, or drop --replay");
  // What the judge takes beside its own: the bound of --slow-exec, and --force for its report.
  EXPECT_EQ(refusal({"--judge", folder_, "--action-timeout", "5s", "--force"}), "");
}

TEST_F(WatchdogModes, TheJudgeSlowStartsParsesBackToItsSettings) {
  const auto prom = dir_.path() + "/slow.prom", report = dir_.path() + "/r.h5";
  const auto o =
      parse({"--judge", folder_, "--slow-window", "3s", "--slow-settle", "2s", "--slow-loss", "7", "--slow-report",
             report, "--slow-prometheus", prom, "--slow-exec", "/bin/true", "--action-timeout", "9s", "--force"});
  const auto& j = std::get<tools::watchdog::JudgeMode>(o.mode);
  auto argv = j.argv("fabric-watchdog");
  ASSERT_EQ(argv.front(), "fabric-watchdog");
  argv.erase(argv.begin());
  // The percent as given, not through a fraction and back (7 / 100 * 100 is 7.000000000000001).
  EXPECT_EQ(argv[std::find(argv.begin(), argv.end(), "--slow-loss") - argv.begin() + 1], "7");
  const auto again = std::get<tools::watchdog::JudgeMode>(parse(argv).mode);
  EXPECT_EQ(again.folder, j.folder);
  EXPECT_EQ(again.report, report);
  EXPECT_EQ(again.prometheus, prom);
  EXPECT_EQ(again.exec, "/bin/true");
  EXPECT_EQ(again.window_s, 3);
  EXPECT_EQ(again.settle_s, 2);
  EXPECT_EQ(again.loss_pct, 7);
  EXPECT_EQ(again.action_timeout_s, 9);
  EXPECT_TRUE(again.force);
  EXPECT_FALSE(again.replay);
}
