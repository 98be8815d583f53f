// Outputs of the results model. Rank 0 owns a ResultSet that hands every table, row, sample block and the final
// status to each sink at once, so the terminal, HDF5 and CSV never disagree.
#pragma once
#include <memory>
#include <string>
#include <vector>

#include "fabricbench/results/table.hpp"

namespace fabricbench::results {

// Now, as ISO 8601 UTC ("2026-11-21T13:37:26Z"), for started_at/finished_at.
std::string utc_timestamp();

// What a run is, written once at its start (HDF5 root attributes, terminal header).
struct RunInfo {
  std::string tool;          // "fabric-p2p"
  std::string tool_version;
  std::string command_line;
  std::string started_at;    // ISO 8601 UTC
  int world_size = 0;
  std::vector<std::string> hosts;
};

// How a results table is shown on the terminal: which columns, with which headers and precision. `part` lets
// one line show several consecutive rows (nccl-tests' out-of-place and in-place side by side): the value comes
// from the part-th row of each group.
struct TerminalColumn {
  std::string column;
  std::string header;
  int precision = 2;  // digits after the point for reals
  int part = 0;
};

class ResultSink {
 public:
  virtual ~ResultSink() = default;
  virtual void begin(const RunInfo& info) = 0;
  virtual void declare(const TableSpec& table) = 0;
  // A titled block of rows to come (terminal prints a heading and column headers; files ignore it).
  virtual void section(const TableSpec& /*table*/, const std::string& /*title*/,
                       const std::vector<TerminalColumn>& /*shown*/) {}
  virtual void note(const std::string& /*line*/) {}
  virtual void row(const Row& row) = 0;
  virtual void samples(const TableSpec& /*table*/, const std::vector<Sample>& /*samples*/) {}
  // An N x N matrix (row-major, NaN where nothing was measured) with row/column labels, e.g. /sweep/matrices/p2p_bw.
  virtual void matrix(const std::string& /*path*/, const std::vector<std::string>& /*labels*/,
                      const std::vector<double>& /*values*/, const std::string& /*title*/) {}
  // "complete" or "failed: <why>". Must be safe to call from the watchdog thread while the main thread is
  // blocked in MPI (file sinks serialise on their own mutex).
  virtual void finish(const std::string& status) = 0;
};

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
  void samples(const TableSpec& table, const std::vector<Sample>& samples);
  void matrix(const std::string& path, const std::vector<std::string>& labels, const std::vector<double>& values,
              const std::string& title);
  void finish(const std::string& status);

 private:
  std::vector<std::unique_ptr<ResultSink>> sinks_;
  std::vector<std::pair<std::string, std::int64_t>> row_counts_;
};

}  // namespace fabricbench::results
