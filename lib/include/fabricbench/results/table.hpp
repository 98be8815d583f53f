// The results model: a table is a typed list of columns, each declared once with its unit, its role and (for what
// is measured) which direction is better; a row is one value per column; samples are per-iteration times tied to a
// row; a matrix is a labelled N x M grid. Every output (terminal, HDF5, CSV) is written from these alone.
#pragma once
#include <cstdint>
#include <stdexcept>
#include <string>
#include <string_view>
#include <type_traits>
#include <variant>
#include <vector>

namespace fabricbench::results {

enum class ColumnType { integer, real, text };

// Units as HDF5 stores them ("" for none). MB/s and GB/s are 1e6 and 1e9 B/s; M/s is 1e6 per second.
// mbps: 1e6 B/s (OSU); gbps: 1e9 B/s (nccl-tests); mibps: 2^20 B/s (perftest's "MB/sec"); gbitps: 1e9 bit/s.
enum class Unit { none, bytes, elements, us, seconds, mbps, gbps, mibps, gbitps, mega_per_s, percent };
// key: identifies the row (op, bytes ...); setting: how it was measured (iterations, warm-up); measured: a value
// the run produced; statistic: a statistic of a measured value (min, median, p99 ...); reference: a figure the
// measurement is held against, not measured (the bandwidth the hardware should reach).
enum class Role { key, setting, measured, statistic, reference };
enum class Better { none, higher, lower };

std::string_view to_string(Unit unit);
std::string_view to_string(Role role);
std::string_view to_string(Better better);

struct Column {
  std::string name;  // HDF5/CSV name; units also in the name (_us, _gbps, bytes) for readers without attributes
  ColumnType type;
  std::size_t width = 0;  // text columns: fixed width in HDF5 (longer values are cut)
  Unit unit = Unit::none;
  Role role = Role::key;
  Better better = Better::none;
  std::string label;  // terminal header; empty: the name
  int precision = 2;  // terminal digits after the point (reals)
  // What a reader looks at first. headline: a measured value a person reads first (plots and charts draw it
  // against size); a table may have several (p2p latency_us for its latency tests, bw_mbps for the others).
  // series: the key whose values name the curves of those plots (op, test, metric); at most one per table.
  bool headline = false;
  bool series = false;

  const std::string& header() const { return label.empty() ? name : label; }
};

// Declarations read like the table they build: key_text("op", 16), measured("busbw_gbps", Unit::gbps, ...).
Column key_text(std::string name, std::size_t width, std::string label = "");
Column key_int(std::string name, Unit unit = Unit::none, std::string label = "");
Column setting_int(std::string name, std::string label = "");
Column setting_text(std::string name, std::size_t width, std::string label = "");
Column measured(std::string name, Unit unit, Better better, std::string label = "", int precision = 2);
Column measured_int(std::string name, Unit unit, Better better, std::string label = "");
Column statistic(std::string name, Unit unit, Better better, std::string label = "", int precision = 2);
Column reference(std::string name, Unit unit, std::string label = "", int precision = 2);
// Marks around a declaration: headline(measured("busbw_gbps", ...)), series(key_text("op", 16)). headline takes a
// measured column, series a key column (std::logic_error otherwise).
Column headline(Column column);
Column series(Column column);

// A column of one table by position, with its value type (std::int64_t, double or std::string): Row::set(handle,
// value) is checked by the compiler, and the column's name and type once, when the handle is made
// (TableSpec::handle, std::logic_error for a name the table lacks or another type), not row by row. A tool makes
// its handles beside its table, so a typo stops every run and every test of the tool at its start.
template <typename T>
struct ColumnHandle;
template <typename T>
struct NoDeduction {  // std::type_identity (C++20): a value converts to the handle's type
  using type = T;
};

template <typename T>
struct ColumnHandle {
  static_assert(std::is_same_v<T, std::int64_t> || std::is_same_v<T, double> || std::is_same_v<T, std::string>);
  std::size_t index;
};

struct TableSpec {
  std::string group;  // "results", "env", "sweep", "samples"
  std::string name;   // "p2p", "ranks", ...
  std::vector<Column> columns;
  bool bulk = false;  // many small rows (samples): files chunk and compress it

  std::string path() const { return "/" + group + "/" + name; }
  std::size_t index_of(const std::string& column) const;  // throws std::logic_error for unknown names
  const Column& column(const std::string& name) const { return columns[index_of(name)]; }
  // The per-iteration samples of this table: /samples/<name> with row, iteration, rank, time_us.
  TableSpec samples() const;
  template <typename T>
  ColumnHandle<T> handle(const std::string& column) const {
    const auto i = index_of(column);
    const auto type = columns[i].type;
    const bool ok = std::is_same_v<T, std::int64_t> ? type == ColumnType::integer
                    : std::is_same_v<T, double>     ? type == ColumnType::real
                                                    : type == ColumnType::text;
    if (!ok) throw std::logic_error("column '" + column + "' of " + path() + " holds another type");
    return {i};
  }
};

using Value = std::variant<std::int64_t, double, std::string>;

// One row of a table; unset values are 0, NaN or "" by type.
class Row {
 public:
  explicit Row(const TableSpec& spec);
  Row& set(const std::string& column, Value value);
  template <typename T>
  Row& set(ColumnHandle<T> column, typename NoDeduction<T>::type value) {
    values_[column.index] = std::move(value);
    return *this;
  }
  const Value& operator[](std::size_t i) const { return values_[i]; }
  const Value& get(const std::string& column) const { return values_[spec_->index_of(column)]; }
  template <typename T>
  const T& get(ColumnHandle<T> column) const {
    return std::get<T>(values_[column.index]);
  }
  double number(const std::string& column) const;  // integer or real as double
  const TableSpec& spec() const { return *spec_; }

 private:
  const TableSpec* spec_;
  std::vector<Value> values_;
};

// One timed iteration; the columns of TableSpec::samples() in order.
struct Sample {
  std::int64_t row;        // index of the row in its results table
  std::int32_t iteration;  // -1: the value is a mean over iterations (no per-iteration time exists)
  std::int32_t rank;       // the rank that timed it
  double time_us;
};

// One measured cell of a matrix.
struct MatrixCell {
  std::int32_t row, column;
  double value;
};

// An N x M grid of one metric (row -> column), NaN where nothing was measured, with its own labels. Sparse: only the
// measured cells are held, so that a sweep of thousands of hosts that tests a few pairs each (the adaptive plan,
// a --budget) does not hold N x N doubles per rail (4096 hosts, 8 rails: 1 GiB, and most of the judge's time to
// fill). Writers expand it a block of rows at a time.
struct Matrix {
  std::string path;  // "/sweep/matrices/p2p_bw"
  std::string title;
  Unit unit = Unit::none;
  Better better = Better::none;
  std::vector<std::string> row_labels, column_labels;
  std::vector<MatrixCell> cells;  // sorted by (row, column), each cell at most once

  // The value at (row, column); NaN where not measured.
  double at(int row, int column) const;
  // Rows [first, first + count) as a dense row-major block (count x columns), NaN where not measured.
  std::vector<double> rows(int first, int count) const;
  // The cells in order and within the labels (a writer refuses a matrix that is not).
  bool valid() const;
};

}  // namespace fabricbench::results
