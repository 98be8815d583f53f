// Rank 0's fan-out of the results model: every call goes to each sink at once, and rows are counted per table so
// that samples can name the row they belong to.
#pragma once
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "fabricbench/results/result_sink.hpp"

namespace fabricbench::results {

class ResultSet {
 public:
  void add(std::unique_ptr<ResultSink> sink) { sinks_.push_back(std::move(sink)); }
  bool empty() const { return sinks_.empty(); }

  void begin(const RunInfo& info);
  void declare(const TableSpec& table);
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
  std::int64_t count(const std::string& path);
  std::vector<std::pair<std::string, std::int64_t>> row_counts_;
};

}  // namespace fabricbench::results
