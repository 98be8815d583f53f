#include "fabricbench/tools/doctor/nccl_log_mode.hpp"

#include <fmt/format.h>

#include <chrono>
#include <map>

#include "fabricbench/results/terminal_table.hpp"

namespace fabricbench::tools::doctor {
using namespace fabricbench::doctor;  // lib/doctor: what this tool runs
namespace {

// The terminal columns of a section, each as wide as its widest shown value; text to the left.
std::vector<results::TerminalColumn> view(const results::TableSpec& table, const std::vector<results::Row>& rows,
                                          std::initializer_list<const char*> columns) {
  std::vector<results::TerminalColumn> out;
  for (const char* c : columns) {
    out.emplace_back(c);
    const auto& column = table.column(c);
    std::size_t width = column.header().size();
    for (const auto& row : rows)
      width = std::max(width, results::TerminalTable::format(row.get(c), column.precision).size());
    out.back().width = std::min<std::size_t>(width, 64);
    out.back().left = column.type == results::ColumnType::text;
  }
  return out;
}

void write_rows(results::ResultSet& out, const results::TableSpec& table, const ReportRows& rows,
                const std::string& title, std::initializer_list<const char*> columns) {
  out.section(table, "", {});  // every other rank's rows: the file's, not the terminal's
  out.rows(rows.hidden);
  out.section(table, title, view(table, rows.shown, columns));
  out.rows(rows.shown);
}

}  // namespace

NcclLogMode::NcclLogMode(const std::vector<std::string>& paths, const std::string& marker, int rank)
    : job_(marker), has_marker_(!marker.empty()) {
  const auto start = std::chrono::steady_clock::now();
  for (const auto& path : paths) job_.read_file(path);
  job_.finish();
  seconds_ = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  for (const auto* p : job_.processes())
    if (rank < 0 || p->rank() == rank) processes_.push_back(p);
  if (processes_.empty())
    throw Error::usage(
        fmt::format("--rank {}: no process of the logs has that rank (ranks: {})", rank, rank_label(job_.processes())));
}

ExitStatus NcclLogMode::write(results::ResultSet& out, const results::TableSpec& findings_table, bool show_ok,
                              bool strict) const {
  const NcclLogTables tables;
  for (const auto* t : {&tables.ranks, &tables.calls, &tables.sizes, &tables.iterations}) out.declare(*t);
  std::uint64_t bytes = 0, lines = 0, nccl = 0, coll = 0;
  for (const auto& f : job_.files()) {
    bytes += f.bytes, lines += f.lines, nccl += f.nccl_lines, coll += f.coll_lines;
    if (has_marker_ && f.markers == 0) out.note(fmt::format("--iteration-marker matched no line of {}", f.path));
    if (f.cut_lines) out.note(fmt::format("{}: {} line(s) longer than 64 KiB cut there", f.path, f.cut_lines));
  }
  out.note(
      fmt::format("read {} file(s): {:.1f} MB, {} lines ({} NCCL, {} COLL) in {:.2f} s ({:.0f} MB/s); {} process(es) "
                  "on {} host(s)",
                  job_.files().size(), bytes / 1e6, lines, nccl, coll, seconds_,
                  seconds_ > 0 ? bytes / 1e6 / seconds_ : 0.0, processes_.size(), job_.host_count()));
  const auto report = report_rows(tables, job_, processes_);
  if (has_marker_) {
    std::vector<const job::NcclProcess*> by_position, impossible;
    for (const auto* p : processes_)
      (p->cut == job::NcclProcess::Cut::position     ? by_position
       : p->cut == job::NcclProcess::Cut::impossible ? impossible
                                                     : by_position)
          .push_back(p);
    std::size_t placed = 0;
    for (const auto* p : processes_) placed += p->cut == job::NcclProcess::Cut::position;
    if (placed)
      out.note(
          fmt::format("iterations: a marker cuts only the process whose launcher tag it carries; the other "
                      "processes' calls are placed by their position in each communicator ({} process(es))",
                      placed));
    if (!impossible.empty())
      out.note(
          fmt::format("iterations: ranks {} are not counted per iteration: some of their calls are on a "
                      "communicator no process that printed a marker belongs to (or whose Init line the log "
                      "lacks)",
                      rank_label(impossible)));
  }

  write_rows(out, tables.ranks, report.ranks,
             "processes: one row per group of ranks whose INIT/NET lines agree (host: the first rank's)",
             {"alike", "host", "nranks", "version", "network", "ib_devices", "socket_interfaces", "channels", "calls",
              "warnings"});

  // nccl.transport: every rank's findings in the file; the terminal shows one rank's for each group that agrees.
  const auto found = transport_findings(job_, processes_);
  std::map<const job::NcclProcess*, const std::vector<Finding>*> of;
  Findings verdict;
  for (std::size_t i = 0; i < processes_.size(); ++i) {
    of[processes_[i]] = &found[i];
    verdict.append(found[i]);
  }
  std::vector<results::Row> hidden;
  std::vector<std::pair<std::vector<const Finding*>, std::string>> shown;  // findings, title
  for (const auto& group : report.transport_groups) {
    std::vector<const Finding*> first, visible;
    for (const auto& f : *of[group.front()]) {
      first.push_back(&f);
      if (show_ok || f.status != Status::ok)
        visible.push_back(&f);
      else
        hidden.push_back(to_row(findings_table, f));
    }
    for (std::size_t i = 1; i < group.size(); ++i)
      for (const auto& f : *of[group[i]]) hidden.push_back(to_row(findings_table, f));
    shown.emplace_back(visible, fmt::format("nccl.transport of ranks {} (shown: rank {} on {}): {}", rank_label(group),
                                            process_name(*group.front()), group.front()->host, status_counts(first)));
  }
  out.section(findings_table, "", {});
  out.rows(hidden);
  for (const auto& [visible, title] : shown) {
    out.section(findings_table, title, findings_view(visible));
    std::vector<results::Row> rows;
    for (const auto* f : visible) rows.push_back(to_row(findings_table, *f));
    out.rows(rows);
  }

  out.section(tables.calls, "", {});
  piece_rows(tables, job_, processes_, [&](const std::vector<results::Row>& rows) { out.rows(rows); });
  write_rows(out, tables.calls, report.calls, "calls per kind over the whole log (bytes: count x type size)",
             {"alike", "kind", "calls", "bytes"});
  write_rows(out, tables.sizes, report.sizes, "message sizes per kind, power-of-two bins of bytes",
             {"alike", "kind", "range", "calls", "bytes"});
  if (has_marker_)
    write_rows(out, tables.iterations, report.iterations,
               "per iteration (between two marker lines): the median iteration and the iterations that differ from it",
               {"alike", "kind", "iterations", "median_calls", "min_calls", "max_calls", "median_bytes", "differing",
                "differing_iterations"});
  out.note(fmt::format("{} fail, {} warn, {} skip, {} ok", verdict.count(Status::fail), verdict.count(Status::warn),
                       verdict.count(Status::skip), verdict.count(Status::ok)));
  const Status worst = verdict.worst();
  return worst == Status::fail || (strict && worst == Status::warn) ? ExitStatus::measurement_failed : ExitStatus::ok;
}

}  // namespace fabricbench::tools::doctor
