// The terminal output: '#'-prefixed header lines and right-aligned columns with units in the headers, the
// shape nccl-tests and OSU users read. Rank 0 only.
#pragma once
#include <cstdio>
#include <string>
#include <vector>

#include "fabricbench/results/result_sink.hpp"

namespace fabricbench::results {

class TerminalTable : public ResultSink {
 public:
  explicit TerminalTable(std::FILE* out = stdout) : out_(out) {}
  void begin(const RunInfo& info) override;
  void declare(const TableSpec&) override {}
  void section(const TableSpec& table, const std::string& title, const std::vector<TerminalColumn>& shown) override;
  void note(const std::string& line) override;
  void row(const Row& row) override;
  // Printed for up to 16 hosts (larger sweeps: the verdicts and worst pairs say more than a wall of numbers).
  void matrix(const Matrix& matrix) override;
  void finish(const std::string& status) override;

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
