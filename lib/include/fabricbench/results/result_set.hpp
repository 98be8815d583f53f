// Rank 0's fan-out of the results model: every call goes to each sink at once, and rows are counted per table so
// that samples can name the row they belong to. The terminal, when there is one, is a sink like the others and also
// the one that lays rows out: section() goes to it alone.
#pragma once
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "fabricbench/results/result_sink.hpp"
#include "fabricbench/results/terminal_table.hpp"

namespace fabricbench::results {

class ResultSet {
 public:
  void add(std::unique_ptr<ResultSink> sink) { sinks_.push_back(std::move(sink)); }
  // The terminal: a sink, and the one that section() reaches (a set has at most one).
  void add(std::unique_ptr<TerminalTable> terminal);
  bool empty() const { return sinks_.empty(); }

  void begin(const RunInfo& info);
  void declare(const TableSpec& table);
  // The terminal's heading and columns for the rows to come (TerminalTable::section); without a terminal (--json,
  // a file alone), nothing. The other sinks never see it.
  void section(const TableSpec& table, const std::string& title, const std::vector<TerminalColumn>& shown);
  void note(const std::string& line);
  // Returns the index of the row in its table.
  std::int64_t row(const Row& row);
  // Rows (of any tables) written at once: one flush of the file for all of them.
  void rows(const std::vector<Row>& rows);
  void samples(const TableSpec& samples, const std::vector<Sample>& values);
  void matrix(const Matrix& matrix);
  void attribute(const std::string& name, double value);
  void finish(const std::string& status);

 private:
  std::vector<std::unique_ptr<ResultSink>> sinks_;
  TerminalTable* terminal_ = nullptr;  // one of sinks_, or none
  std::int64_t count(const std::string& path);
  std::vector<std::pair<std::string, std::int64_t>> row_counts_;
};

}  // namespace fabricbench::results
