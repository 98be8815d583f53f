// One output of the results model (terminal, HDF5, CSV, JSON). Rank 0 hands every table, row, sample block, matrix,
// note and the final status to each sink through a ResultSet (result_set.hpp), so the outputs never disagree. A sink
// sees the model only: how the terminal lays rows out (sections, columns) is the terminal's own (terminal_table.hpp).
#pragma once
#include <string>
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

class ResultSink {
 public:
  virtual ~ResultSink() = default;
  // What every sink does: the run, its tables, their rows, the final status.
  virtual void begin(const RunInfo& info) = 0;
  virtual void declare(const TableSpec& table) = 0;
  virtual void row(const Row& row) = 0;
  // Several rows at once (a sweep round's): files write them in one go, one flush.
  virtual void rows(const std::vector<Row>& rows) {
    for (const auto& r : rows) row(r);
  }
  // "complete" or "failed: <why>". Must be safe to call from the watchdog thread while the main thread is
  // blocked in MPI (file sinks serialise on their own mutex).
  virtual void finish(const std::string& status) = 0;

  // The rest of the model, which a sink keeps where it has a place for it and drops otherwise.
  // A line about the run (the terminal prints it, JSON keeps it).
  virtual void note(const std::string& /*line*/) {}
  // Per-iteration samples, into a table declared as `samples` (TableSpec::samples() of a results table).
  virtual void samples(const TableSpec& /*samples*/, const std::vector<Sample>& /*samples*/) {}
  virtual void matrix(const Matrix& /*matrix*/) {}
  // A number about the whole run, known only once it ran (HDF5: a root attribute; fabric-sweep's leaf_pair_coverage).
  virtual void attribute(const std::string& /*name*/, double /*value*/) {}
};

}  // namespace fabricbench::results
