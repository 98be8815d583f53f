#include "fabricbench/results/table.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <stdexcept>

namespace fabricbench::results {

std::string_view to_string(Unit unit) {
  switch (unit) {
    case Unit::none:
      return "";
    case Unit::bytes:
      return "B";
    case Unit::elements:
      return "elements";
    case Unit::us:
      return "us";
    case Unit::seconds:
      return "s";
    case Unit::mbps:
      return "MB/s";
    case Unit::gbps:
      return "GB/s";
    case Unit::mibps:
      return "MiB/s";
    case Unit::gbitps:
      return "Gb/s";
    case Unit::mega_per_s:
      return "M/s";
    case Unit::percent:
      return "%";
  }
  return "";
}

std::string_view to_string(Role role) {
  switch (role) {
    case Role::key:
      return "key";
    case Role::setting:
      return "setting";
    case Role::measured:
      return "measured";
    case Role::statistic:
      return "statistic";
    case Role::reference:
      return "reference";
  }
  return "";
}

std::string_view to_string(Better better) {
  switch (better) {
    case Better::none:
      return "";
    case Better::higher:
      return "higher";
    case Better::lower:
      return "lower";
  }
  return "";
}

Column key_text(std::string name, std::size_t width, std::string label) {
  return {std::move(name), ColumnType::text, width, Unit::none, Role::key, Better::none, std::move(label)};
}
Column key_int(std::string name, Unit unit, std::string label) {
  return {std::move(name), ColumnType::integer, 0, unit, Role::key, Better::none, std::move(label)};
}
Column setting_int(std::string name, std::string label) {
  return {std::move(name), ColumnType::integer, 0, Unit::none, Role::setting, Better::none, std::move(label)};
}
Column setting_text(std::string name, std::size_t width, std::string label) {
  return {std::move(name), ColumnType::text, width, Unit::none, Role::setting, Better::none, std::move(label)};
}
Column measured(std::string name, Unit unit, Better better, std::string label, int precision) {
  return {std::move(name), ColumnType::real, 0, unit, Role::measured, better, std::move(label), precision};
}
Column measured_int(std::string name, Unit unit, Better better, std::string label) {
  return {std::move(name), ColumnType::integer, 0, unit, Role::measured, better, std::move(label)};
}
Column statistic(std::string name, Unit unit, Better better, std::string label, int precision) {
  return {std::move(name), ColumnType::real, 0, unit, Role::statistic, better, std::move(label), precision};
}

Column reference(std::string name, Unit unit, std::string label, int precision) {
  return {std::move(name), ColumnType::real, 0, unit, Role::reference, Better::none, std::move(label), precision};
}

Column headline(Column column) {
  if (column.role != Role::measured) throw std::logic_error("headline column '" + column.name + "' is not measured");
  column.headline = true;
  return column;
}
Column series(Column column) {
  if (column.role != Role::key) throw std::logic_error("series column '" + column.name + "' is not a key");
  column.series = true;
  return column;
}

std::size_t TableSpec::index_of(const std::string& column) const {
  for (std::size_t i = 0; i < columns.size(); ++i)
    if (columns[i].name == column) return i;
  throw std::logic_error("table " + path() + " has no column '" + column + "'");
}

TableSpec TableSpec::samples() const {
  return {"samples",
          name,
          {key_int("row"), key_int("iteration"), key_int("rank"), measured("time_us", Unit::us, Better::lower)},
          true};
}

Row::Row(const TableSpec& spec) : spec_(&spec) {
  values_.reserve(spec.columns.size());
  for (const auto& c : spec.columns) {
    switch (c.type) {
      case ColumnType::integer:
        values_.emplace_back(std::int64_t{0});
        break;
      case ColumnType::real:
        values_.emplace_back(std::numeric_limits<double>::quiet_NaN());
        break;
      case ColumnType::text:
        values_.emplace_back(std::string{});
        break;
    }
  }
}

Row& Row::set(const std::string& column, Value value) {
  const auto i = spec_->index_of(column);
  const auto type = spec_->columns[i].type;
  const bool ok = (type == ColumnType::integer && std::holds_alternative<std::int64_t>(value)) ||
                  (type == ColumnType::real && std::holds_alternative<double>(value)) ||
                  (type == ColumnType::text && std::holds_alternative<std::string>(value));
  if (!ok) throw std::logic_error("column '" + column + "' of " + spec_->path() + " given a value of another type");
  values_[i] = std::move(value);
  return *this;
}

double Row::number(const std::string& column) const {
  const auto& v = get(column);
  if (const auto* i = std::get_if<std::int64_t>(&v)) return static_cast<double>(*i);
  return std::get<double>(v);
}

namespace {
bool before(const MatrixCell& x, int row, int column) { return x.row < row || (x.row == row && x.column < column); }
}  // namespace

double Matrix::at(int row, int column) const {
  const auto it =
      std::lower_bound(cells.begin(), cells.end(), 0, [&](const MatrixCell& c, int) { return before(c, row, column); });
  return it != cells.end() && it->row == row && it->column == column ? it->value : NAN;
}

std::vector<double> Matrix::rows(int first, int count) const {
  const auto columns = column_labels.size();
  std::vector<double> out(static_cast<std::size_t>(std::max(count, 0)) * columns, NAN);
  auto it =
      std::lower_bound(cells.begin(), cells.end(), 0, [&](const MatrixCell& c, int) { return before(c, first, 0); });
  for (; it != cells.end() && it->row < first + count; ++it)
    out[static_cast<std::size_t>(it->row - first) * columns + static_cast<std::size_t>(it->column)] = it->value;
  return out;
}

bool Matrix::valid() const {
  const auto rows = static_cast<std::int64_t>(row_labels.size()),
             columns = static_cast<std::int64_t>(column_labels.size());
  for (std::size_t i = 0; i < cells.size(); ++i) {
    const auto& c = cells[i];
    if (c.row < 0 || c.row >= rows || c.column < 0 || c.column >= columns) return false;
    if (i > 0 && !before(cells[i - 1], c.row, c.column)) return false;
  }
  return true;
}

}  // namespace fabricbench::results
