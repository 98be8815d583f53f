#include "fabricbench/cli/ini_file.hpp"

#include <fmt/format.h>

#include <boost/property_tree/ini_parser.hpp>
#include <cmath>
#include <filesystem>
#include <fstream>

#include "fabricbench/error.hpp"

namespace fabricbench::cli {

std::size_t utf8_length(std::string_view text, std::size_t i) {
  const auto byte = [&](std::size_t k) { return static_cast<unsigned char>(text[k]); };
  const unsigned char c = byte(i);
  std::size_t n = c < 0x80 ? 1 : (c >> 5) == 0x6 ? 2 : (c >> 4) == 0xe ? 3 : (c >> 3) == 0x1e ? 4 : 0;
  if (n == 0 || i + n > text.size()) return 0;
  for (std::size_t k = 1; k < n; ++k)
    if ((byte(i + k) >> 6) != 0x2) return 0;
  return n;
}

void require_text_file(const std::string& path, const std::string& option) {
  std::error_code ec;
  if (std::filesystem::is_directory(path, ec))
    throw Error::usage(fmt::format("{} {}: a directory; give a file", option, path));
  std::ifstream in(path, std::ios::binary);
  if (!in) throw Error::usage(fmt::format("{} {}: cannot read the file", option, path));
  constexpr std::size_t max_bytes = 16u << 20, max_line = 4096;
  // Read in pieces up to one byte past the limit (a buffer of the limit's size, zeroed for every settings file read,
  // cost 16 MiB of memset each time: minutes of the bad-file corpus under AddressSanitizer).
  std::string text;
  char piece[1 << 16];
  while (in && text.size() <= max_bytes) {
    in.read(piece, sizeof piece);
    text.append(piece, static_cast<std::size_t>(in.gcount()));
  }
  if (text.size() > max_bytes)
    throw Error::usage(fmt::format("{} {}: larger than 16 MiB; not a settings file", option, path));
  std::size_t line = 1, line_start = 0;
  for (std::size_t i = 0; i < text.size();) {
    if (text[i] == '\n') {
      ++line, line_start = ++i;
      continue;
    }
    if (text[i] == '\0')
      throw Error::usage(fmt::format("{} {}:{}: a NUL byte; the file must be text", option, path, line));
    const auto n = utf8_length(text, i);
    if (n == 0) throw Error::usage(fmt::format("{} {}:{}: bytes that are not UTF-8 text", option, path, line));
    i += n;
    if (i - line_start > max_line)
      throw Error::usage(fmt::format("{} {}:{}: a line longer than {} characters", option, path, line, max_line));
  }
}

boost::property_tree::ptree read_ini(const std::string& path, const std::string& option) {
  require_text_file(path, option);
  boost::property_tree::ptree tree;
  try {
    boost::property_tree::read_ini(path, tree);
  } catch (const boost::property_tree::ini_parser_error& e) {
    throw Error::usage(fmt::format("{} {}: {}", option, path, e.message()));
  }
  return tree;
}

std::optional<double> parse_number(const std::string& text) {
  std::size_t used = 0;
  try {
    const double v = std::stod(text, &used);
    if (used == text.size() && std::isfinite(v)) return v;
  } catch (const std::exception&) {
  }
  return std::nullopt;
}

}  // namespace fabricbench::cli
