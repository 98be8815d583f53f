// What a check found: one row per (host, rank, check, subject) with a status, the value seen, what was expected and
// a hint for the fix. fabric-doctor writes them to /doctor/findings; every other tool keeps its cheap checks' rows
// in /env/checks. The same table shape serves both.
#pragma once
#include <string>
#include <string_view>
#include <vector>

#include "fabricbench/results/result_set.hpp"
#include "fabricbench/results/table.hpp"

namespace fabricbench::doctor {

// Ordered by severity: worse compares greater.
enum class Status { ok, skip, warn, fail };
std::string_view to_string(Status status);
Status status_from_string(std::string_view text);  // throws std::invalid_argument

struct Finding {
  std::string host;
  int rank = -1;        // -1: the finding is about the host (or the job), not one rank
  std::string check;    // "rdma.port_state"
  std::string subject;  // "mlx5_0/1", "GPU0-GPU1", "NCCL_IB_HCA"
  Status status = Status::ok;
  std::string value;     // what was seen
  std::string expected;  // what a healthy system shows
  std::string hint;      // what to do (warn/fail), or why it was skipped
};

// Findings as a check writes them: the runner sets host, rank and check; a check adds subject, status and text.
class Findings {
 public:
  void begin_check(std::string host, int rank, std::string check);
  Finding& add(std::string subject, Status status, std::string value, std::string expected = "", std::string hint = "");
  Finding& ok(std::string subject, std::string value, std::string expected = "") {
    return add(std::move(subject), Status::ok, std::move(value), std::move(expected));
  }
  Finding& skip(std::string subject, std::string why) {
    return add(std::move(subject), Status::skip, "", "", std::move(why));
  }
  void append(const std::vector<Finding>& more) { all_.insert(all_.end(), more.begin(), more.end()); }

  const std::vector<Finding>& all() const { return all_; }
  std::vector<Finding>& all() { return all_; }
  Status worst() const;
  std::size_t count(Status status) const;

 private:
  std::string host_, check_;
  int rank_ = -1;
  std::vector<Finding> all_;
};

// The table both /doctor/findings and /env/checks use.
results::TableSpec findings_table(std::string group, std::string name);
results::Row to_row(const results::TableSpec& table, const Finding& finding);
// And back (how findings travel between ranks: as rows, results::gather_rows).
Finding from_row(const results::Row& row);

// Rank 0: every finding as a row of `table` (findings_table) through `out`, whose terminal shows one section per host
// (the job's first), titled with its counts: failures first, then warnings, skips and ok (ok rows written to the
// files but not shown unless `show_ok`), each with its hint.
void write_findings(results::ResultSet& out, const results::TableSpec& table, std::vector<Finding> findings,
                    bool show_ok);
// The terminal columns of findings (status, check, rank, subject, value, expected, hint), sized to `shown`.
std::vector<results::TerminalColumn> findings_view(const std::vector<const Finding*>& shown);
// "1 fail, 2 warn, 0 skip, 5 ok": the title of a block of findings.
std::string status_counts(const std::vector<const Finding*>& findings);

// "a, b, c": the text of lists in values and hints.
std::string join(const std::vector<std::string>& items, std::string_view sep = ", ");
// "GPU3": how findings name a GPU (NVML's index).
std::string gpu_name(int index);

// One line per warn/fail (what the tools print at start): "warning: host h1: rdma.port_state mlx5_0/1: DOWN ...".
std::vector<std::string> warning_lines(const std::vector<Finding>& findings);

}  // namespace fabricbench::doctor
