// Options that take a comma-separated list of a table's names (fabric-p2p --test latency,bw; fabric-coll --op,
// --dtype, --redop; fabric-verbs --test; fabric-doctor --checks; fabric-sweep --metric): one parser, and the --help
// text of the same names, so that neither the error nor the help can drift from the table the tool reads. One word
// of a table, not a list: choice.hpp.
#pragma once
#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

namespace fabricbench::cli {

// A word that stands for several names of the table: "all", a group ("rdma"), "cheap".
struct NameGroup {
  std::string word;
  std::vector<std::size_t> members;  // indices into the names, in the order the word adds them

  // `word` for every one of `count` names, in the table's order.
  static NameGroup all(std::size_t count, std::string word = "all");
};

// The indices into `names` of the items of `text` ("bw,latency"), in the order given, each once (a later duplicate
// is dropped); a group's word adds its members. An unknown or empty item throws Error::usage in one line:
//   --test 'nope': allowed values are latency, bw, bibw, mbw_mr, all (comma-separated)
std::vector<std::size_t> parse_name_list(std::string_view option, std::string_view text,
                                         const std::vector<std::string>& names,
                                         const std::vector<NameGroup>& groups = {});

// What --help says the option takes: "latency, bw, bibw, mbw_mr, or all" (the names, then the groups' words).
std::string name_choices(const std::vector<std::string>& names, const std::vector<NameGroup>& groups = {});

// The names of a table's entries, in its order: names_of(collectives(), [](auto& c) { return c.name; }).
template <typename Table, typename Name>
std::vector<std::string> names_of(const Table& table, Name name) {
  std::vector<std::string> out;
  for (const auto& entry : table) out.emplace_back(name(entry));
  return out;
}

}  // namespace fabricbench::cli
