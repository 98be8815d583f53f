#include "fabricbench/cli/ini_file.hpp"

#include <boost/property_tree/ini_parser.hpp>
#include <fmt/format.h>

#include "fabricbench/error.hpp"

namespace fabricbench::cli {

boost::property_tree::ptree read_ini(const std::string& path, const std::string& option) {
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
    if (used == text.size()) return v;
  } catch (const std::exception&) {
  }
  return std::nullopt;
}

}  // namespace fabricbench::cli
