// The terminal output: '#'-prefixed header lines and right-aligned columns with units in the headers, the
// shape nccl-tests and OSU users read. Rank 0 only.
#pragma once
#include <cstdio>
#include <string>
#include <utility>
#include <vector>

#include "fabricbench/results/result_sink.hpp"

namespace fabricbench::results {

// Which column a terminal section shows. The header and precision come from the column's declaration; `header`
// overrides it where a section gives the column another meaning (a window's time, not a latency). `part` lets
// one line show several consecutive rows (nccl-tests' out-of-place and in-place side by side): the value comes
// from the part-th row of each group.
// `width` fixes the column's width (0: its header's, at least 10); `left` aligns text to the left (prose such as a
// check's value and hint; numbers stay right-aligned); `blank_negative` shows an integer below 0 as nothing.
struct TerminalColumn {
  TerminalColumn(std::string column_name, std::string header_text = "", int part_index = 0)
      : column(std::move(column_name)), header(std::move(header_text)), part(part_index) {}
  std::string column;
  std::string header;  // empty: the column's own
  int part = 0;
  std::size_t width = 0;
  bool left = false;
  bool blank_negative = false;  // an integer below 0 shown blank (a finding's rank -1: about the host, no rank)
};

class TerminalTable : public ResultSink {
 public:
  explicit TerminalTable(std::FILE* out = stdout) : out_(out) {}
  void begin(const RunInfo& info) override;
  void declare(const TableSpec&) override {}
  void note(const std::string& line) override;
  // Only the rows of the current section's table, in its columns.
  void row(const Row& row) override;
  // Printed for up to 16 hosts (larger sweeps: the verdicts and worst pairs say more than a wall of numbers).
  void matrix(const Matrix& matrix) override;
  void finish(const std::string& status) override;

  // The terminal's own, reached through ResultSet::section: a titled block of rows to come, printed as a heading and
  // column headers. With no columns shown, the rows that follow are not on the terminal (fabric-doctor's ok rows with
  // --problems-only; tables only the file keeps).
  void section(const TableSpec& table, const std::string& title, const std::vector<TerminalColumn>& shown);

  // One value formatted as the terminal shows it (reals with `precision` digits, NaN as "-").
  static std::string format(const Value& value, int precision);

 private:
  std::FILE* out_;
  std::string table_path_;
  std::vector<TerminalColumn> shown_;
  std::vector<int> precision_;
  std::vector<std::size_t> widths_;
  std::vector<Row> pending_;  // rows of the current line, until every part is there
  int parts_ = 1;
};

}  // namespace fabricbench::results
