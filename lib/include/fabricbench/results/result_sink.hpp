// One output of the results model (terminal, HDF5, CSV). Rank 0 hands every table, row, sample block, matrix and
// the final status to each sink through a ResultSet (result_set.hpp), so the outputs never disagree.
#pragma once
#include <string>
#include <utility>
#include <vector>

#include "fabricbench/results/table.hpp"

namespace fabricbench::results {

// Now, as ISO 8601 UTC ("2026-11-21T13:37:26Z"), for started_at/finished_at.
std::string utc_timestamp();

// What a run is, written once at its start (HDF5 root attributes, terminal header).
struct RunInfo {
  std::string tool;  // "fabric-p2p"
  std::string tool_version;
  std::string command_line;
  std::string started_at;  // ISO 8601 UTC
  int world_size = 0;
  std::vector<std::string> hosts;
};

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

class ResultSink {
 public:
  virtual ~ResultSink() = default;
  virtual void begin(const RunInfo& info) = 0;
  virtual void declare(const TableSpec& table) = 0;
  // A titled block of rows to come (terminal prints a heading and column headers; files ignore it). With no
  // columns shown, the rows that follow are not on the terminal (fabric-doctor's ok rows with --problems-only).
  virtual void section(const TableSpec& /*table*/, const std::string& /*title*/,
                       const std::vector<TerminalColumn>& /*shown*/) {}
  virtual void note(const std::string& /*line*/) {}
  virtual void row(const Row& row) = 0;
  // Several rows at once (a sweep round's): files write them in one go, one flush.
  virtual void rows(const std::vector<Row>& rows) {
    for (const auto& r : rows) row(r);
  }
  // Per-iteration samples, into a table declared as `samples` (TableSpec::samples() of a results table).
  virtual void samples(const TableSpec& /*samples*/, const std::vector<Sample>& /*samples*/) {}
  virtual void matrix(const Matrix& /*matrix*/) {}
  // A number about the whole run, known only once it ran (HDF5: a root attribute; fabric-sweep's leaf_pair_coverage).
  virtual void attribute(const std::string& /*name*/, double /*value*/) {}
  // "complete" or "failed: <why>". Must be safe to call from the watchdog thread while the main thread is
  // blocked in MPI (file sinks serialise on their own mutex).
  virtual void finish(const std::string& status) = 0;
};

}  // namespace fabricbench::results
