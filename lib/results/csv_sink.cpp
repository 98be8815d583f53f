#include "fabricbench/results/csv_sink.hpp"

#include <fmt/format.h>

#include <cmath>

#include "fabricbench/error.hpp"

namespace fabricbench::results {

CsvSink::CsvSink(const std::string& file_path, std::string table_path)
    : out_(file_path, std::ios::out | std::ios::trunc), path_(file_path), table_path_(std::move(table_path)) {
  if (!out_) throw Error::runtime(fmt::format("cannot write CSV file {}", file_path));
}

std::string CsvSink::field(const Value& value) {
  if (const auto* i = std::get_if<std::int64_t>(&value)) return std::to_string(*i);
  if (const auto* d = std::get_if<double>(&value)) return std::isfinite(*d) ? fmt::format("{}", *d) : std::string{};
  const auto& s = std::get<std::string>(value);
  if (s.find_first_of(",\"\r\n") == std::string::npos) return s;
  std::string quoted = "\"";
  for (char c : s) quoted += c == '"' ? std::string("\"\"") : std::string(1, c);
  return quoted + "\"";
}

void CsvSink::declare(const TableSpec& table) {
  if (table.path() != table_path_) return;
  std::lock_guard lock(mutex_);
  for (std::size_t i = 0; i < table.columns.size(); ++i) out_ << (i ? "," : "") << table.columns[i].name;
  out_ << "\n" << std::flush;
}

void CsvSink::row(const Row& row) {
  if (row.spec().path() != table_path_) return;
  std::lock_guard lock(mutex_);
  for (std::size_t i = 0; i < row.spec().columns.size(); ++i) out_ << (i ? "," : "") << field(row[i]);
  out_ << "\n" << std::flush;
  if (!out_) throw Error::runtime(fmt::format("writing CSV file {} failed (disk full?)", path_));
}

void CsvSink::finish(const std::string&) {
  std::lock_guard lock(mutex_);
  out_.close();
}

}  // namespace fabricbench::results
