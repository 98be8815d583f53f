#include "fabricbench/results/terminal_table.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "fabricbench/results/printable.hpp"

namespace fabricbench::results {

std::string TerminalTable::format(const Value& value, int precision) {
  if (const auto* i = std::get_if<std::int64_t>(&value)) return std::to_string(*i);
  if (const auto* d = std::get_if<double>(&value)) return std::isnan(*d) ? "-" : fmt::format("{:.{}f}", *d, precision);
  return printable(std::get<std::string>(value));
}

void TerminalTable::begin(const RunInfo& info) {
  fmt::print(out_, "# {} {}\n# command: {}\n# started: {}  ranks: {}  hosts: {}\n", info.tool, info.tool_version,
             printable(info.command_line), info.started_at, info.world_size,
             printable(fmt::format("{}", fmt::join(info.hosts, ","))));
  std::fflush(out_);
}

void TerminalTable::section(const TableSpec& table, const std::string& title,
                            const std::vector<TerminalColumn>& shown) {
  table_path_ = table.path();
  shown_ = shown;
  widths_.clear();
  precision_.clear();
  pending_.clear();
  parts_ = 1;
  if (shown_.empty()) return;  // rows not on the terminal
  for (const auto& c : shown_) parts_ = std::max(parts_, c.part + 1);
  std::string header;
  for (const auto& c : shown_) {
    const auto& column = table.column(c.column);
    const auto& title_of_column = c.header.empty() ? column.header() : c.header;
    precision_.push_back(column.precision);
    widths_.push_back(c.width ? std::max(c.width, title_of_column.size())
                              : std::max<std::size_t>(title_of_column.size(), 10));
    header += c.left ? fmt::format(" {:<{}}", title_of_column, widths_.back())
                     : fmt::format(" {:>{}}", title_of_column, widths_.back());
  }
  fmt::print(out_, "#\n# {}\n#{}\n", printable(title), printable(header));
  std::fflush(out_);
}

void TerminalTable::note(const std::string& line) {
  fmt::print(out_, "# {}\n", printable(line));
  std::fflush(out_);
}

void TerminalTable::row(const Row& row) {
  if (row.spec().path() != table_path_ || shown_.empty()) return;
  pending_.push_back(row);
  if (static_cast<int>(pending_.size()) < parts_) return;
  std::string line = " ";
  for (std::size_t i = 0; i < shown_.size(); ++i) {
    const auto& value = pending_[shown_[i].part].get(shown_[i].column);
    const auto* integer = std::get_if<std::int64_t>(&value);
    const auto text =
        shown_[i].blank_negative && integer && *integer < 0 ? std::string() : format(value, precision_[i]);
    line += shown_[i].left ? fmt::format(" {:<{}}", text, widths_[i]) : fmt::format(" {:>{}}", text, widths_[i]);
  }
  while (!line.empty() && line.back() == ' ') line.pop_back();
  pending_.clear();
  fmt::print(out_, "{}\n", line);
  std::fflush(out_);
}

void TerminalTable::matrix(const Matrix& m) {
  const std::size_t rows = m.row_labels.size(), columns = m.column_labels.size();
  if (rows > 16 || columns > 16) return;
  std::size_t width = 9;
  for (const auto* labels : {&m.row_labels, &m.column_labels})
    for (const auto& l : *labels) width = std::max(width, std::min<std::size_t>(l.size(), 16) + 1);
  std::string out = fmt::format("#\n# {}\n# {:>{}}", printable(m.title), "", width);
  for (const auto& l : m.column_labels) out += fmt::format(" {:>{}}", printable(l.substr(0, 16)), width);
  out += "\n";
  const auto values = m.rows(0, static_cast<int>(rows));
  for (std::size_t r = 0; r < rows; ++r) {
    out += fmt::format("  {:>{}}", printable(m.row_labels[r].substr(0, 16)), width);
    for (std::size_t c = 0; c < columns; ++c)
      out += fmt::format(" {:>{}}", format(Value{values[r * columns + c]}, 1), width);
    out += "\n";
  }
  fmt::print(out_, "{}", out);
  std::fflush(out_);
}

void TerminalTable::finish(const std::string& status) {
  fmt::print(out_, "# status: {}\n", printable(status));
  std::fflush(out_);
}

}  // namespace fabricbench::results
