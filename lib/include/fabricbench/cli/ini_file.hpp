// The tools' INI inputs (--baseline, fabric-sweep --rules, --expected-rule): read in one place, so that an unreadable
// file and a value that is not a number are refused alike, as usage errors that name the option and the file.
#pragma once
#include <boost/property_tree/ptree.hpp>

#include <optional>
#include <string>

namespace fabricbench::cli {

// The file's sections and keys; Error::usage "OPTION PATH: what the parser said" when it cannot be read.
boost::property_tree::ptree read_ini(const std::string& path, const std::string& option);

// The whole of `text` as a number, or nothing: "12abc", "", "fast" and " " are not numbers.
std::optional<double> parse_number(const std::string& text);

}  // namespace fabricbench::cli
