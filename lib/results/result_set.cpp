#include "fabricbench/results/result_set.hpp"

#include <chrono>
#include <ctime>
#include <stdexcept>

namespace fabricbench::results {

std::string utc_timestamp() {
  const auto t = std::chrono::system_clock::to_time_t(std::chrono::system_clock::now());
  std::tm tm{};
  gmtime_r(&t, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &tm);
  return buf;
}

void ResultSet::begin(const RunInfo& info) {
  for (auto& s : sinks_) s->begin(info);
}
void ResultSet::declare(const TableSpec& table) {
  for (auto& s : sinks_) s->declare(table);
}
void ResultSet::add(std::unique_ptr<TerminalTable> terminal) {
  if (terminal_) throw std::logic_error("a result set has one terminal");
  terminal_ = terminal.get();
  sinks_.push_back(std::move(terminal));
}
void ResultSet::section(const TableSpec& table, const std::string& title, const std::vector<TerminalColumn>& shown) {
  if (terminal_) terminal_->section(table, title, shown);
}
void ResultSet::note(const std::string& line) {
  for (auto& s : sinks_) s->note(line);
}
std::int64_t ResultSet::count(const std::string& path) {
  for (auto& [name, count] : row_counts_)
    if (name == path) return count++;
  row_counts_.emplace_back(path, 1);
  return 0;
}
std::int64_t ResultSet::row(const Row& row) {
  for (auto& s : sinks_) s->row(row);
  return count(row.spec().path());
}
void ResultSet::rows(const std::vector<Row>& rows) {
  if (rows.empty()) return;
  for (auto& s : sinks_) s->rows(rows);
  for (const auto& r : rows) count(r.spec().path());
}
void ResultSet::samples(const TableSpec& samples, const std::vector<Sample>& values) {
  for (auto& s : sinks_) s->samples(samples, values);
}
void ResultSet::matrix(const Matrix& matrix) {
  // Checked once, before any sink reads a cell (the terminal's and the file's writers index by the cells).
  if (!matrix.valid()) throw std::logic_error("matrix " + matrix.path + ": cells out of order or outside its labels");
  for (auto& s : sinks_) s->matrix(matrix);
}
void ResultSet::attribute(const std::string& name, double value) {
  for (auto& s : sinks_) s->attribute(name, value);
}
void ResultSet::finish(const std::string& status) {
  for (auto& s : sinks_) s->finish(status);
}

}  // namespace fabricbench::results
