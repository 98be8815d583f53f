// An option that takes one word of a small table (--backend, --memory, --in-place, --plan, --nccl-comms,
// --atomic-type): the table of {word, value} is the one place the words live, and parse_choice is the one way a word
// becomes its enum value, with the one usage error every tool gives for a word outside the table.
#pragma once
#include <iterator>
#include <string_view>
#include <vector>

namespace fabricbench::cli {

template <typename E>
struct Choice {
  std::string_view name;  // the word the option takes
  E value;
};

// Throws Error::usage in one line, the table's words in its order:
//   --memory 'gpu': allowed values are host, pinned, device
[[noreturn]] void refuse_choice(std::string_view text, std::string_view option,
                                const std::vector<std::string_view>& names);

// The value of the entry of `table` (Choice<E> entries: an array or a vector) whose word is `text`; otherwise
// refuse_choice naming `option`.
template <typename Table>
auto parse_choice(std::string_view text, std::string_view option, const Table& table)
    -> decltype(std::begin(table)->value) {
  std::vector<std::string_view> names;
  for (const auto& choice : table) {
    if (choice.name == text) return choice.value;
    names.push_back(choice.name);
  }
  refuse_choice(text, option, names);
}

// The word of `value` in `table` ("" where it has none).
template <typename Table, typename E>
std::string_view choice_name(const Table& table, E value) {
  for (const auto& choice : table)
    if (choice.value == value) return choice.name;
  return {};
}

}  // namespace fabricbench::cli
