#include "fabricbench/results/terminal_table.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

namespace fabricbench::results {

std::string TerminalTable::format(const Value& value, int precision) {
  if (const auto* i = std::get_if<std::int64_t>(&value)) return std::to_string(*i);
  if (const auto* d = std::get_if<double>(&value)) return std::isnan(*d) ? "-" : fmt::format("{:.{}f}", *d, precision);
  return std::get<std::string>(value);
}

void TerminalTable::begin(const RunInfo& info) {
  fmt::print(out_, "# {} {}\n# command: {}\n# started: {}  ranks: {}  hosts: {}\n", info.tool, info.tool_version,
             info.command_line, info.started_at, info.world_size, fmt::join(info.hosts, ","));
  std::fflush(out_);
}

void TerminalTable::section(const TableSpec& table, const std::string& title,
                            const std::vector<TerminalColumn>& shown) {
  table_path_ = table.path();
  shown_ = shown;
  widths_.clear();
  pending_.clear();
  parts_ = 1;
  for (const auto& c : shown_) parts_ = std::max(parts_, c.part + 1);
  std::string header;
  for (const auto& c : shown_) {
    widths_.push_back(std::max<std::size_t>(c.header.size(), 10));
    header += fmt::format(" {:>{}}", c.header, widths_.back());
  }
  fmt::print(out_, "#\n# {}\n#{}\n", title, header);
  std::fflush(out_);
}

void TerminalTable::note(const std::string& line) {
  fmt::print(out_, "# {}\n", line);
  std::fflush(out_);
}

void TerminalTable::row(const Row& row) {
  if (row.spec().path() != table_path_) return;
  pending_.push_back(row);
  if (static_cast<int>(pending_.size()) < parts_) return;
  std::string line = " ";
  for (std::size_t i = 0; i < shown_.size(); ++i)
    line += fmt::format(" {:>{}}", format(pending_[shown_[i].part].get(shown_[i].column), shown_[i].precision), widths_[i]);
  pending_.clear();
  fmt::print(out_, "{}\n", line);
  std::fflush(out_);
}

void TerminalTable::matrix(const std::string&, const std::vector<std::string>& labels,
                           const std::vector<double>& values, const std::string& title) {
  const std::size_t n = labels.size();
  if (n > 16) return;
  std::size_t width = 9;
  for (const auto& l : labels) width = std::max(width, std::min<std::size_t>(l.size(), 16) + 1);
  std::string out = fmt::format("#\n# {}\n# {:>{}}", title, "", width);
  for (const auto& l : labels) out += fmt::format(" {:>{}}", l.substr(0, 16), width);
  out += "\n";
  for (std::size_t r = 0; r < n; ++r) {
    out += fmt::format("  {:>{}}", labels[r].substr(0, 16), width);
    for (std::size_t c = 0; c < n; ++c) out += fmt::format(" {:>{}}", format(Value{values[r * n + c]}, 1), width);
    out += "\n";
  }
  fmt::print(out_, "{}", out);
  std::fflush(out_);
}

void TerminalTable::finish(const std::string& status) {
  fmt::print(out_, "# status: {}\n", status);
  std::fflush(out_);
}

}  // namespace fabricbench::results
