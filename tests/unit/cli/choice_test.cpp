#include "fabricbench/cli/choice.hpp"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "fabricbench/error.hpp"
#include "fabricbench/ops/coll_backend.hpp"
#include "fabricbench/verbs/verbs_test.hpp"

using namespace fabricbench;

namespace {

enum class Colour { red, green, blue };
constexpr cli::Choice<Colour> kColours[] = {{"red", Colour::red}, {"green", Colour::green}, {"blue", Colour::blue}};

// The one line a refused word gives (the test fails when the word is taken).
template <typename Table>
std::string choice_refusal(const std::string& text, const std::string& option, const Table& table) {
  try {
    cli::parse_choice(text, option, table);
  } catch (const Error& e) {
    EXPECT_EQ(e.status(), ExitStatus::usage);
    return e.what();
  }
  ADD_FAILURE() << "'" << text << "' was taken";
  return {};
}

// Every word of `table` gives its own value, and its value its word.
template <typename Table>
void expect_every_entry_parses(const Table& table) {
  for (const auto& choice : table) {
    EXPECT_EQ(cli::parse_choice(choice.name, "--x", table), choice.value) << choice.name;
    EXPECT_EQ(cli::choice_name(table, choice.value), choice.name);
  }
}

}  // namespace

TEST(Choice, EveryEntryParsesToItsValue) {
  expect_every_entry_parses(kColours);
  expect_every_entry_parses(ops::kBackendKinds);
  expect_every_entry_parses(ops::kBackendChoices);
  expect_every_entry_parses(verbs::kAtomicOps);
  const std::vector<cli::Choice<int>> numbers{{"one", 1}, {"two", 2}};
  expect_every_entry_parses(numbers);
}

TEST(Choice, AWrongWordIsOneLineNamingTheOptionAndTheWordsInTheTablesOrder) {
  EXPECT_EQ(choice_refusal("purple", "--colour", kColours), "--colour 'purple': allowed values are red, green, blue");
  EXPECT_EQ(choice_refusal("", "--colour", kColours), "--colour '': allowed values are red, green, blue");
  EXPECT_EQ(choice_refusal("Red", "--colour", kColours), "--colour 'Red': allowed values are red, green, blue");
  EXPECT_EQ(choice_refusal("red,green", "--colour", kColours),
            "--colour 'red,green': allowed values are red, green, blue");
}

TEST(Choice, TheToolsRefusalsAreTheirsByteForByte) {
  EXPECT_EQ(choice_refusal("gpu", "--backend", ops::kBackendKinds), "--backend 'gpu': allowed values are mpi, nccl");
  EXPECT_EQ(choice_refusal("gpu", "--backend", ops::kBackendChoices),
            "--backend 'gpu': allowed values are auto, nccl, mpi");
  EXPECT_EQ(choice_refusal("nope", "--atomic-type", verbs::kAtomicOps),
            "--atomic-type 'nope': allowed values are fetch_add, cmp_swap");
}

TEST(Choice, ANameIsEmptyForAValueOutsideTheTable) {
  constexpr cli::Choice<Colour> two[] = {{"red", Colour::red}, {"green", Colour::green}};
  EXPECT_EQ(cli::choice_name(two, Colour::blue), "");
}
