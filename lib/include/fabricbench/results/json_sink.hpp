// The results model as one JSON document: the run's description, its notes and status, and every table's rows as
// objects keyed by column name ({"run": {...}, "notes": [...], "tables": {"/doctor/findings": [{...}, ...]}}).
// Written at finish(), so the document is whole or absent; NaN becomes null. Rows wait in a temporary file per table,
// not in memory (a job's log gives millions of rows).
#pragma once
#include <cstdio>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "fabricbench/results/result_sink.hpp"

namespace fabricbench::results {

class JsonSink : public ResultSink {
 public:
  explicit JsonSink(std::FILE* out = stdout) : out_(out) {}
  void begin(const RunInfo& info) override;
  void declare(const TableSpec& table) override;
  void note(const std::string& line) override { notes_.push_back(line); }
  void row(const Row& row) override;
  void finish(const std::string& status) override;

  // `text` as a JSON string, quotes included.
  static std::string quoted(const std::string& text);

 private:
  std::FILE* out_;
  bool finished_ = false;
  RunInfo info_;
  std::vector<std::string> notes_;
  struct Close {
    void operator()(std::FILE* f) const { std::fclose(f); }
  };
  struct Spill {
    std::unique_ptr<std::FILE, Close> file;  // the rows as JSON objects, ",\n      " between them
    std::size_t rows = 0;
  };
  Spill& spill(const std::string& path);

  std::vector<std::string> order_;  // tables as declared
  std::map<std::string, Spill> rows_;
};

}  // namespace fabricbench::results
