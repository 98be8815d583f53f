#include "fabricbench/cli/name_list.hpp"

#include <gtest/gtest.h>

#include "fabricbench/error.hpp"

using namespace fabricbench;
using Indices = std::vector<std::size_t>;

namespace {

const std::vector<std::string> tests{"latency", "bw", "bibw", "mbw_mr"};

// The one line a refused list gives (the test fails when the list is taken).
std::string refusal(const std::string& text, const std::vector<cli::NameGroup>& groups) {
  try {
    cli::parse_name_list("--test", text, tests, groups);
  } catch (const Error& e) {
    EXPECT_EQ(e.status(), ExitStatus::usage);
    return e.what();
  }
  ADD_FAILURE() << "'" << text << "' was taken";
  return {};
}

}  // namespace

TEST(NameList, KeepsTheOrderGiven) {
  EXPECT_EQ(cli::parse_name_list("--test", "bw", tests), Indices({1}));
  EXPECT_EQ(cli::parse_name_list("--test", "mbw_mr,latency,bw", tests), Indices({3, 0, 1}));
}

TEST(NameList, DropsDuplicatesKeepingTheFirst) {
  EXPECT_EQ(cli::parse_name_list("--test", "bw,latency,bw,bw", tests), Indices({1, 0}));
  const auto all = cli::NameGroup::all(tests.size());
  EXPECT_EQ(cli::parse_name_list("--test", "bibw,all,latency", tests, {all}), Indices({2, 0, 1, 3}));
}

TEST(NameList, AllAndGroupsStandForTheirMembers) {
  EXPECT_EQ(cli::parse_name_list("--test", "all", tests, {cli::NameGroup::all(tests.size())}), Indices({0, 1, 2, 3}));
  const std::vector<cli::NameGroup> groups{{"all", {0, 1, 2}}, {"bandwidth", {1, 2, 3}}};
  EXPECT_EQ(cli::parse_name_list("--test", "all", tests, groups), Indices({0, 1, 2}));
  EXPECT_EQ(cli::parse_name_list("--test", "mbw_mr,bandwidth", tests, groups), Indices({3, 1, 2}));
  // Without the word, "all" is a name like any other: unknown.
  EXPECT_EQ(refusal("all", {}), "--test 'all': allowed values are latency, bw, bibw, mbw_mr (comma-separated)");
}

TEST(NameList, AnUnknownNameIsOneLineNamingTheOptionAndEveryValue) {
  const std::vector<cli::NameGroup> all{cli::NameGroup::all(tests.size())};
  EXPECT_EQ(refusal("latency,pingpong", all),
            "--test 'pingpong': allowed values are latency, bw, bibw, mbw_mr, all (comma-separated)");
  EXPECT_EQ(refusal("Latency", all),
            "--test 'Latency': allowed values are latency, bw, bibw, mbw_mr, all (comma-separated)");
  EXPECT_EQ(refusal(" bw", all), "--test ' bw': allowed values are latency, bw, bibw, mbw_mr, all (comma-separated)");
}

TEST(NameList, AnEmptyItemIsRefused) {
  const std::vector<cli::NameGroup> all{cli::NameGroup::all(tests.size())};
  const std::string empty = "--test '': allowed values are latency, bw, bibw, mbw_mr, all (comma-separated)";
  for (const char* text : {"", ",", "bw,", ",bw", "bw,,latency"}) EXPECT_EQ(refusal(text, all), empty) << text;
}

TEST(NameList, HelpTextComesFromTheSameNames) {
  EXPECT_EQ(cli::name_choices(tests, {cli::NameGroup::all(tests.size())}), "latency, bw, bibw, mbw_mr, or all");
  EXPECT_EQ(cli::name_choices(tests), "latency, bw, bibw, or mbw_mr");
  EXPECT_EQ(cli::name_choices({"sum", "prod"}), "sum or prod");
  EXPECT_EQ(cli::name_choices({"sum"}), "sum");
  struct Entry {
    const char* name;
  };
  const std::vector<Entry> table{{"a"}, {"b"}};
  EXPECT_EQ(cli::names_of(table, [](const Entry& e) { return e.name; }), std::vector<std::string>({"a", "b"}));
}
