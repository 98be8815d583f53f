#include "fabricbench/facts/expected_curve.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <limits>
#include <map>
#include <tuple>

#include "fabricbench/cli/ini_file.hpp"
#include "fabricbench/error.hpp"

namespace fabricbench::facts {

double Curve::at(std::uint64_t bytes) const {
  if (points.empty() || bytes < points.front().first) return NAN;
  if (bytes >= points.back().first) return points.back().second;
  const auto hi =
      std::upper_bound(points.begin(), points.end(), bytes, [](std::uint64_t b, const auto& p) { return b < p.first; });
  const auto lo = hi - 1;
  if (lo->first == bytes) return lo->second;
  const double t = std::log(double(bytes) / double(lo->first)) / std::log(double(hi->first) / double(lo->first));
  return std::exp(std::log(lo->second) + t * (std::log(hi->second) - std::log(lo->second)));
}

void for_each_reference_row(const std::string& path, const std::string& option, const std::string& header,
                            std::size_t fields,
                            const std::function<void(const std::vector<std::string>&, const std::string&)>& row) {
  cli::require_text_file(path, option);
  std::ifstream in(path);
  std::string line;
  bool seen_header = false;
  for (int number = 1; std::getline(in, line); ++number) {
    if (!line.empty() && line.back() == '\r') line.pop_back();
    if (line.empty() || line[0] == '#') continue;
    const auto where = fmt::format("{} {}:{}", option, path, number);
    if (!seen_header) {
      if (line != header) throw Error::usage(fmt::format("{}: the header must be '{}'", where, header));
      seen_header = true;
      continue;
    }
    std::vector<std::string> f;
    std::size_t start = 0;
    while (f.size() + 1 < fields) {
      const auto comma = line.find(',', start);
      if (comma == std::string::npos) break;
      f.push_back(line.substr(start, comma - start));
      start = comma + 1;
    }
    f.push_back(line.substr(start));  // the source: the rest of the line, commas and all
    if (f.size() != fields) throw Error::usage(fmt::format("{}: {} fields wanted ({})", where, fields, header));
    auto& last = f.back();
    if (last.size() >= 2 && last.front() == '"' && last.back() == '"') last = last.substr(1, last.size() - 2);
    row(f, where);
  }
  if (!seen_header) throw Error::usage(fmt::format("{} {}: no header line '{}'", option, path, header));
}

CurveBook CurveBook::load(const std::string& path) {
  std::map<std::tuple<std::string, double, int, std::string>, Curve> by_key;
  const std::string header = "path,link_gbps,ranks,op,bytes,gbps,source";
  for_each_reference_row(path, "--expected-rule curves", header, 7, [&](const auto& f, const std::string& where) {
    const auto positive = [&](const std::string& text, const char* name) {
      const auto v = cli::parse_number(text);
      if (!v || !(*v > 0))
        throw Error::usage(fmt::format("{}: {} '{}': allowed values are numbers above 0", where, name, text));
      return *v;
    };
    const double link = positive(f[1], "link_gbps"), ranks = positive(f[2], "ranks");
    const double bytes = positive(f[4], "bytes"), gbps = positive(f[5], "gbps");
    // Bounded before the conversions below: a double past int's or uint64's range does not convert (undefined).
    if (ranks != std::floor(ranks) || bytes != std::floor(bytes) || ranks > std::numeric_limits<int>::max() ||
        bytes >= 0x1p63)
      throw Error::usage(fmt::format("{}: ranks and bytes are whole numbers (ranks up to {}, bytes below 2^63)", where,
                                     std::numeric_limits<int>::max()));
    if (f[0].empty() || f[3].empty()) throw Error::usage(fmt::format("{}: path and op must not be empty", where));
    auto& c = by_key[{f[0], link, int(ranks), f[3]}];
    c.path = f[0], c.link_gbps = link, c.ranks = int(ranks), c.op = f[3], c.source = f[6];
    const auto b = static_cast<std::uint64_t>(bytes);
    if (std::any_of(c.points.begin(), c.points.end(), [&](const auto& p) { return p.first == b; }))
      throw Error::usage(fmt::format("{}: {} {} ranks={} at {} B is given twice", where, c.path, c.op, c.ranks, b));
    c.points.emplace_back(b, gbps);
  });
  CurveBook book;
  for (auto& [key, c] : by_key) {
    std::sort(c.points.begin(), c.points.end());
    book.curves_.push_back(std::move(c));
  }
  return book;
}

const Curve* CurveBook::find(std::string_view path, double link_gbps, int ranks, std::string_view op) const {
  for (const auto& c : curves_)
    if (c.path == path && c.ranks == ranks && c.op == op && std::abs(c.link_gbps - link_gbps) <= 0.02 * c.link_gbps)
      return &c;
  return nullptr;
}

}  // namespace fabricbench::facts
