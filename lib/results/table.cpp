#include "fabricbench/results/table.hpp"

#include <limits>
#include <stdexcept>

namespace fabricbench::results {

std::size_t TableSpec::index_of(const std::string& column) const {
  for (std::size_t i = 0; i < columns.size(); ++i)
    if (columns[i].name == column) return i;
  throw std::logic_error("table " + path() + " has no column '" + column + "'");
}

Row::Row(const TableSpec& spec) : spec_(&spec) {
  values_.reserve(spec.columns.size());
  for (const auto& c : spec.columns) {
    switch (c.type) {
      case ColumnType::integer: values_.emplace_back(std::int64_t{0}); break;
      case ColumnType::real: values_.emplace_back(std::numeric_limits<double>::quiet_NaN()); break;
      case ColumnType::text: values_.emplace_back(std::string{}); break;
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

}  // namespace fabricbench::results
