// cli::LinePattern: a user's regular expression looked for in log lines at a bounded cost, whatever the line and
// the pattern (std::regex overflowed its stack on one 40 KB line).
#include "fabricbench/cli/line_pattern.hpp"

#include <gtest/gtest.h>

#include <random>
#include <string>

#include "fabricbench/error.hpp"

using fabricbench::Error;
using fabricbench::cli::LinePattern;

namespace {

std::string usage_error(const std::string& pattern) {
  try {
    LinePattern(pattern, "--iteration-marker");
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

}  // namespace

TEST(LinePattern, FindsMarkersAsGrepEDoes) {
  const LinePattern step("step [0-9]+", "--iteration-marker");
  EXPECT_TRUE(step.found_in("[default0]: step 12 loss 2.3"));
  EXPECT_FALSE(step.found_in("[default0]: step x"));
  const LinePattern digits("iteration \\d+", "--iteration-marker");  // ECMAScript's \d, as users type it
  EXPECT_TRUE(digits.found_in("iteration 7"));
  EXPECT_FALSE(digits.found_in("iteration d"));
  const LinePattern words("^\\w+ \\s*done$", "--iteration-marker");
  EXPECT_TRUE(words.found_in("epoch   done"));
  EXPECT_FALSE(LinePattern().found_in("anything"));
  EXPECT_TRUE(LinePattern().empty());
}

TEST(LinePattern, LongLinesOfTheIssueDoNotCrashAndTheWindowIsTheHead) {
  // One ordinary 40 KB line (a config dump), and the 64 KiB the line reader keeps: each pattern that crashed before.
  for (const std::size_t length : {std::size_t(40000), std::size_t(64u << 10)}) {
    std::string line(length, 'a');
    line.replace(100, 9, "iteration");
    for (const char* p : {".*iteration.*", "iteration.*", "(a|b)*iteration"})
      EXPECT_TRUE(LinePattern(p, "--iteration-marker").found_in(line)) << p << " " << length;
  }
  std::string late(20000, 'a');
  late += "iteration";
  EXPECT_FALSE(LinePattern("iteration", "--iteration-marker").found_in(late));  // past the window: not looked at
  EXPECT_TRUE(LinePattern("iteration", "--iteration-marker").found_in(late.substr(late.size() - LinePattern::window)));
}

TEST(LinePattern, RefusesWhatIsNotARegularExpressionInOneLine) {
  EXPECT_EQ(
      usage_error("iteration (").rfind("--iteration-marker 'iteration (': not a regular expression (Unmatched (", 0),
      0u);
  EXPECT_NE(usage_error("step [0-9").find("give an extended regular expression (grep -E) such as 'step [0-9]+'"),
            std::string::npos);
  EXPECT_EQ(usage_error("step [0-9]+"), "");
}

// Fuzz: random patterns over an alphabet of operators, on random lines up to the reader's 64 KiB limit; every one
// either compiles and matches without crashing, or is refused as usage. (The unit tests also run under ASan.)
TEST(LinePattern, FuzzedPatternsAndLinesNeverCrash) {
  std::mt19937 random(20261126);
  const std::string atoms = "ab.()|*+?[]^$\\{}0-9 ";
  int compiled = 0, refused = 0;
  for (int round = 0; round < 300; ++round) {
    std::string pattern;
    for (int i = 0, n = 1 + int(random() % 12); i < n; ++i) pattern += atoms[random() % atoms.size()];
    std::string line(std::size_t(random() % (64u << 10)), 'a');
    for (auto& c : line)
      if (random() % 7 == 0) c = "b \t9{"[random() % 5];
    try {
      const LinePattern p(pattern, "--iteration-marker");
      (void)p.found_in(line);
      ++compiled;
    } catch (const Error& e) {
      EXPECT_EQ(std::string(e.what()).rfind("--iteration-marker '", 0), 0u) << e.what();
      ++refused;
    }
  }
  EXPECT_GT(compiled, 50);
  EXPECT_GT(refused, 10);
}

// Error::one_line cuts a long quoted value; the closing quote of a short one opened a "value" of everything up to the
// next quote, which was then cut ("... not a regular expression (Unmatched [, [^, [:,...' (115 characters)").
TEST(ErrorOneLine, TwoQuotedValuesFarApartAreBothKept) {
  const std::string message = "--iteration-marker 'step [0-9': not a regular expression (" + std::string(70, 'x') +
                              "); give one such as 'step [0-9]+'";
  EXPECT_EQ(Error::one_line(message), message);
  const std::string long_value = "--x '" + std::string(100, 'v') + "': bad";
  EXPECT_EQ(Error::one_line(long_value), "--x '" + std::string(48, 'v') + "...' (100 characters): bad");
}
