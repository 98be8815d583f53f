#include "fabricbench/results/baseline.hpp"

#include <fmt/format.h>

#include <cmath>
#include <variant>

#include "fabricbench/cli/ini_file.hpp"
#include "fabricbench/error.hpp"
#include "fabricbench/results/printable.hpp"

namespace fabricbench::results {
using cli::parse_number;

double parse_tolerance(const std::string& text, const std::string& where) {
  std::string t = text;
  double scale = 1;
  if (!t.empty() && t.back() == '%') {
    t.pop_back();
    scale = 0.01;
  }
  const auto v = parse_number(t);
  if (!v || !(*v * scale >= 0 && *v * scale < 1))
    throw Error::usage(fmt::format("{} = '{}': allowed values are 0% to 99% (or a fraction 0 to 0.99)", where, text));
  return *v * scale;
}

Baseline Baseline::load(const std::string& path, const TableSpec& table, const std::string& option) {
  const auto tree = cli::read_ini(path, option);
  Baseline b;
  b.path_ = path;
  // [baseline] holds the default tolerance (10% when absent: Boost drops an empty section).
  double tolerance = 0.1;
  if (const auto t = tree.get_optional<std::string>("baseline.tolerance"))
    tolerance = parse_tolerance(*t, path + ": [baseline] tolerance");
  std::size_t ours_count = 0;
  for (const auto& [section, keys] : tree) {
    if (section == "baseline") continue;
    if (keys.empty() && !keys.data().empty())
      throw Error::usage(
          fmt::format("{}: '{}' stands outside a section; entries are [TABLE NAME] sections of "
                      "column = value lines",
                      path, section));
    Entry e;
    e.name = section;
    e.table = section.substr(0, section.find(' '));
    e.tolerance = tolerance;
    const bool ours = e.table == table.path().substr(1);
    ours_count += ours ? 1 : 0;
    for (const auto& [key, value] : keys) {
      const auto text = value.get_value<std::string>();
      const auto where = fmt::format("{}: [{}] {}", path, section, key);
      if (key == "tolerance") {
        e.tolerance = parse_tolerance(text, where);
        continue;
      }
      if (!ours) continue;
      const Column* column = nullptr;
      for (const auto& c : table.columns)
        if (c.name == key) column = &c;
      if (!column) throw Error::usage(fmt::format("{}: table {} has no such column", where, e.table));
      if (column->role == Role::key) {
        const auto n = column->type == ColumnType::text ? std::optional<double>(0) : parse_number(text);
        if (!n || (column->type == ColumnType::integer && *n != std::floor(*n)))
          throw Error::usage(fmt::format("{} = '{}': a {} (a key of {}, which no row could match)", where, text,
                                         column->type == ColumnType::integer ? "whole number" : "number", e.table));
        e.keys[key] = text;
      } else if (const auto v = parse_number(text); v && *v >= 0) {
        e.expected[key] = *v;
      } else {
        throw Error::usage(
            fmt::format("{} = '{}': a number >= 0 (the expected value of a measured column)", where, text));
      }
    }
    b.entries_.push_back(std::move(e));
  }
  if (ours_count == 0)
    throw Error::usage(
        fmt::format("{} {}: no entries for {} (write a baseline with fabric-report baseline RUN.h5 FILE)", option, path,
                    table.path().substr(1)));
  return b;
}

bool Baseline::matches(const Entry& e, const Row& row) {
  if (e.table != row.spec().path().substr(1)) return false;
  for (const auto& [key, text] : e.keys) {
    const auto& v = row.get(key);
    if (std::holds_alternative<std::string>(v)) {
      // fabric-report writes a key as printable() shows it (a host name with a newline would break the file).
      const auto& value = std::get<std::string>(v);
      if (value != text && printable(value) != text) return false;
    } else {
      const auto want = parse_number(text);
      if (!want || *want != row.number(key)) return false;
    }
  }
  return true;
}

std::string Baseline::keys_text(const Entry& e) {
  std::string text;
  for (const auto& [k, t] : e.keys) text += fmt::format("{}{}={}", text.empty() ? "" : ", ", k, t);
  return text;
}

std::vector<std::string> Baseline::check(const Row& row, std::vector<bool>* used) const {
  std::vector<std::string> out;
  for (std::size_t i = 0; i < entries_.size(); ++i) {
    const auto& e = entries_[i];
    if (!matches(e, row)) continue;
    if (used) (*used)[i] = true;
    for (const auto& [column, expected] : e.expected) {
      const auto better = row.spec().column(column).better;
      if (better == Better::none) continue;  // no direction (fabric-sweep's value: its metric rule has it)
      const double value = row.number(column);
      const bool higher = better == Better::higher;
      const double bound = higher ? expected * (1 - e.tolerance) : expected * (1 + e.tolerance);
      if (std::isnan(value) || (higher ? value < bound : value > bound))
        out.push_back(fmt::format("[{}] {} ({}): {:.4g} against {:.4g} ({} is better, tolerance {:g}%)", e.name, column,
                                  keys_text(e), value, expected, higher ? "higher" : "lower", e.tolerance * 100));
    }
  }
  return out;
}

std::vector<std::string> Baseline::unmatched(const std::string& table, const std::vector<bool>& used) const {
  std::vector<std::string> out;
  for (std::size_t i = 0; i < entries_.size(); ++i)
    if (entries_[i].table == table.substr(table.front() == '/' ? 1 : 0) && !used.at(i))
      out.push_back(
          fmt::format("[{}]: no row of {} with {}", entries_[i].name, entries_[i].table, keys_text(entries_[i])));
  return out;
}

std::optional<Baseline::Expectation> Baseline::expected(const std::string& table,
                                                        const std::map<std::string, std::string>& keys,
                                                        const std::string& column) const {
  for (const auto& e : entries_) {
    if (e.table != table || e.keys != keys) continue;
    if (const auto it = e.expected.find(column); it != e.expected.end()) return Expectation{it->second, e.tolerance};
  }
  return std::nullopt;
}

std::size_t Baseline::entries_for(const std::string& table) const {
  std::size_t n = 0;
  for (const auto& e : entries_) n += e.table == table ? 1 : 0;
  return n;
}

}  // namespace fabricbench::results
