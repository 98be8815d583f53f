#include "fabricbench/cli/name_list.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>

#include "fabricbench/error.hpp"

namespace fabricbench::cli {
namespace {

// Every word the option accepts: the names, then the groups' words.
std::vector<std::string> accepted(const std::vector<std::string>& names, const std::vector<NameGroup>& groups) {
  std::vector<std::string> out = names;
  for (const auto& g : groups) out.push_back(g.word);
  return out;
}

}  // namespace

NameGroup NameGroup::all(std::size_t count, std::string word) {
  NameGroup g{std::move(word), {}};
  for (std::size_t i = 0; i < count; ++i) g.members.push_back(i);
  return g;
}

std::vector<std::size_t> parse_name_list(std::string_view option, std::string_view text,
                                         const std::vector<std::string>& names, const std::vector<NameGroup>& groups) {
  std::vector<std::size_t> out;
  const auto add = [&](std::size_t index) {
    if (std::find(out.begin(), out.end(), index) == out.end()) out.push_back(index);
  };
  std::size_t begin = 0;
  while (true) {
    const auto comma = text.find(',', begin);
    const auto item = text.substr(begin, comma == std::string_view::npos ? std::string_view::npos : comma - begin);
    const auto name = std::find(names.begin(), names.end(), item);
    const auto group = std::find_if(groups.begin(), groups.end(), [&](const NameGroup& g) { return g.word == item; });
    if (item.empty() || (name == names.end() && group == groups.end()))
      throw Error::usage(fmt::format("{} '{}': allowed values are {} (comma-separated)", option, item,
                                     fmt::join(accepted(names, groups), ", ")));
    if (name != names.end())
      add(static_cast<std::size_t>(name - names.begin()));
    else
      for (const auto index : group->members) add(index);
    if (comma == std::string_view::npos) return out;
    begin = comma + 1;
  }
}

std::string name_choices(const std::vector<std::string>& names, const std::vector<NameGroup>& groups) {
  const auto words = accepted(names, groups);
  if (words.size() < 2) return words.empty() ? std::string() : words.front();
  const std::vector<std::string> head(words.begin(), words.end() - 1);
  return fmt::format("{}{} or {}", fmt::join(head, ", "), words.size() > 2 ? "," : "", words.back());
}

}  // namespace fabricbench::cli
