// The results model: a table is a typed list of columns; a row is one value per column; samples are
// per-iteration times tied to a row. Every output (terminal, HDF5, CSV) is written from these alone.
#pragma once
#include <cstdint>
#include <string>
#include <variant>
#include <vector>

namespace fabricbench::results {

enum class ColumnType { integer, real, text };

struct Column {
  std::string name;     // HDF5/CSV name; units in the name (_us, _gbps, bytes)
  ColumnType type;
  std::size_t width = 0;  // text columns: fixed width in HDF5 (longer values are cut)
};

struct TableSpec {
  std::string group;  // "results", "env", "sweep"
  std::string name;   // "p2p", "ranks", ...
  std::vector<Column> columns;

  std::string path() const { return "/" + group + "/" + name; }
  std::size_t index_of(const std::string& column) const;  // throws std::logic_error for unknown names
};

using Value = std::variant<std::int64_t, double, std::string>;

// One row of a table; unset values are 0, NaN or "" by type.
class Row {
 public:
  explicit Row(const TableSpec& spec);
  Row& set(const std::string& column, Value value);
  const Value& operator[](std::size_t i) const { return values_[i]; }
  const Value& get(const std::string& column) const { return values_[spec_->index_of(column)]; }
  double number(const std::string& column) const;  // integer or real as double
  const TableSpec& spec() const { return *spec_; }

 private:
  const TableSpec* spec_;
  std::vector<Value> values_;
};

struct Sample {
  std::int64_t row;       // index of the row in its results table
  std::int32_t iteration;
  std::int32_t rank;      // the rank that timed it
  double time_us;
};

}  // namespace fabricbench::results
