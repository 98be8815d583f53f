#include "fabricbench/cli/byte_size.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <limits>

#include "fabricbench/error.hpp"

namespace fabricbench::cli {
namespace {

std::string upper(std::string_view s) {
  std::string out(s);
  std::transform(out.begin(), out.end(), out.begin(), [](unsigned char c) { return std::toupper(c); });
  return out;
}

[[noreturn]] void bad_size(std::string_view text, std::string_view option) {
  throw Error::usage(
      fmt::format("{} '{}': not a size; use a whole number of bytes with an optional K, M, G or T "
                  "suffix (e.g. 8, 64K, 4M, 1G)",
                  option, text));
}

}  // namespace

std::uint64_t parse_byte_size(std::string_view text, std::string_view option) {
  std::size_t digits = 0;
  while (digits < text.size() && std::isdigit(static_cast<unsigned char>(text[digits]))) ++digits;
  if (digits == 0 || digits > 19) bad_size(text, option);
  const std::uint64_t number = std::stoull(std::string(text.substr(0, digits)));
  const std::string suffix = upper(text.substr(digits));
  int shift = 0;
  if (suffix.empty() || suffix == "B") {
    shift = 0;
  } else {
    const std::string_view unit_names = "KMGT";
    const auto pos = unit_names.find(suffix[0]);
    const std::string rest = suffix.substr(1);
    if (pos == std::string_view::npos || !(rest.empty() || rest == "B" || rest == "IB")) bad_size(text, option);
    shift = 10 * static_cast<int>(pos + 1);
  }
  if (shift > 0 && number > (std::numeric_limits<std::uint64_t>::max() >> shift)) bad_size(text, option);
  return number << shift;
}

std::string format_byte_size(std::uint64_t bytes) {
  static constexpr const char* units[] = {"K", "M", "G", "T"};
  std::string suffix;
  for (const char* unit : units) {
    if (bytes == 0 || bytes % 1024 != 0) break;
    bytes /= 1024;
    suffix = unit;
  }
  return fmt::format("{}{}", bytes, suffix);
}

SizeList SizeList::geometric(std::uint64_t min, std::uint64_t max, std::uint64_t factor) {
  // Like nccl-tests and OSU: min, min*f, min*f^2 ... while <= max (max itself only when on the grid).
  std::vector<std::uint64_t> v;
  std::uint64_t s = min;
  if (s == 0) {
    v.push_back(0);
    s = 1;
  }
  while (s <= max) {
    v.push_back(s);
    if (s > max / factor) break;
    s *= factor;
  }
  return SizeList(std::move(v));
}

SizeList SizeList::parse(std::string_view text, std::string_view option) {
  if (text.empty()) throw Error::usage(fmt::format("{} '': empty; give sizes like 8,1K,4M or 8:4M:x2", option));
  if (text.find(':') != std::string_view::npos) {
    std::vector<std::string_view> parts;
    std::size_t start = 0;
    for (std::size_t pos; (pos = text.find(':', start)) != std::string_view::npos; start = pos + 1)
      parts.push_back(text.substr(start, pos - start));
    parts.push_back(text.substr(start));
    if (parts.size() > 3)
      throw Error::usage(fmt::format("{} '{}': a range is MIN:MAX or MIN:MAX:xFACTOR", option, text));
    const auto min = parse_byte_size(parts[0], option);
    const auto max = parse_byte_size(parts[1], option);
    std::uint64_t factor = 2;
    if (parts.size() == 3) {
      std::string_view f = parts[2];
      if (!f.empty() && (f[0] == 'x' || f[0] == 'X')) f.remove_prefix(1);
      factor = parse_byte_size(f, option);
      if (factor < 2 || upper(f) != std::to_string(factor))
        throw Error::usage(fmt::format("{} '{}': the step factor must be a whole number >= 2 (e.g. x2)", option, text));
    }
    if (min > max) throw Error::usage(fmt::format("{} '{}': MIN is larger than MAX", option, text));
    return geometric(min, max, factor);
  }
  std::vector<std::uint64_t> v;
  std::size_t start = 0;
  while (true) {
    const auto pos = text.find(',', start);
    v.push_back(parse_byte_size(text.substr(start, pos == std::string_view::npos ? pos : pos - start), option));
    if (pos == std::string_view::npos) break;
    start = pos + 1;
  }
  return SizeList(std::move(v));
}

std::uint64_t SizeList::max() const { return *std::max_element(values_.begin(), values_.end()); }
std::uint64_t SizeList::min() const { return *std::min_element(values_.begin(), values_.end()); }

}  // namespace fabricbench::cli
