// The one baseline format (docs/analysis.md), written by `fabric-report baseline` and read here and by
// `fabric-report check`:
//   [baseline]
//   tolerance = 10%
//   [results/coll 1]          <table> <name>: one entry
//   op = all_reduce           key columns: the rows it applies to (a key left out matches any value)
//   bytes = 1073741824
//   busbw_gbps = 329.8        measured columns: expected values
//   tolerance = 5%            optional, this entry's own
// A value fails when worse than expected by more than the tolerance, in the column's better direction.
#pragma once
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "fabricbench/results/table.hpp"

namespace fabricbench::results {

class Baseline {
 public:
  Baseline() = default;
  // Error::usage naming `option`, the file and the key on an unreadable file, a bad tolerance or an entry without a
  // table. Entries of other tables than `table` are kept but never applied; names unknown to `table` are refused.
  static Baseline load(const std::string& path, const TableSpec& table, const std::string& option = "--baseline");

  bool empty() const { return entries_.empty(); }
  const std::string& path() const { return path_; }
  // One line per value of `row` worse than an entry that applies to it (empty: it passes or nothing applies).
  std::vector<std::string> check(const Row& row) const;
  // The expected value of `column` in the entries of `row`'s table whose keys all match `keys` (exactly: an entry
  // applies to the key values given). fabric-sweep: the expected value of one metric for every pair.
  struct Expectation {
    double value;
    double tolerance;
  };
  std::optional<Expectation> expected(const std::string& table, const std::map<std::string, std::string>& keys,
                                      const std::string& column) const;
  // How many entries apply to `table`.
  std::size_t entries_for(const std::string& table) const;

 private:
  struct Entry {
    std::string table, name;
    std::map<std::string, std::string> keys;
    std::map<std::string, double> expected;
    double tolerance = 0.1;
  };
  static bool matches(const Entry& e, const Row& row);
  std::string path_;
  std::vector<Entry> entries_;
};

// "10%" or "0.1" -> 0.1; Error::usage naming `where` outside [0, 1).
double parse_tolerance(const std::string& text, const std::string& where);

}  // namespace fabricbench::results
