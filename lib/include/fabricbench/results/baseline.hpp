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
  // `used` (one flag per entry, sized by entry_count()): set for every entry that applies to `row`.
  std::vector<std::string> check(const Row& row, std::vector<bool>* used = nullptr) const;
  std::size_t entry_count() const { return entries_.size(); }
  // One line per entry of `table` (e.g. "/results/p2p") not flagged in `used`: a baseline entry that no row of the run
  // matched is a failure, as in `fabric-report check` (a baseline of 1 GiB does not pass a run that stopped at 512
  // MiB).
  std::vector<std::string> unmatched(const std::string& table, const std::vector<bool>& used) const;
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
  static std::string keys_text(const Entry& e);  // "op=all_reduce, bytes=1024", as fabric-report check writes them
  std::string path_;
  std::vector<Entry> entries_;
};

// "10%" or "0.1" -> 0.1; Error::usage naming `where` outside [0, 1).
double parse_tolerance(const std::string& text, const std::string& where);

}  // namespace fabricbench::results
