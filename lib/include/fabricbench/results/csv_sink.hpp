// CSV of one results table for Excel and pandas: a header row, one line per row as it is measured, no padding,
// NaN as an empty field, text quoted only when it must be.
#pragma once
#include <fstream>
#include <mutex>
#include <string>

#include "fabricbench/results/result_sink.hpp"

namespace fabricbench::results {

class CsvSink : public ResultSink {
 public:
  // Writes the rows of the table at `table_path` (e.g. "/results/p2p") to `file_path` (created or truncated).
  CsvSink(const std::string& file_path, std::string table_path);
  void begin(const RunInfo&) override {}
  void declare(const TableSpec& table) override;
  void row(const Row& row) override;
  void finish(const std::string&) override;

  static std::string field(const Value& value);

 private:
  std::mutex mutex_;
  std::ofstream out_;
  std::string path_;
  std::string table_path_;
};

}  // namespace fabricbench::results
