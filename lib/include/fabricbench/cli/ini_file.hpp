// The tools' INI inputs (--baseline, fabric-sweep --rules, --expected-rule): read in one place, so that an unreadable
// file and a value that is not a number are refused alike, as usage errors that name the option and the file.
#pragma once
#include <boost/property_tree/ptree.hpp>
#include <optional>
#include <string>
#include <string_view>

namespace fabricbench::cli {

// What every file a user hands a tool must be before a parser sees it: readable, a regular file, at most 16 MiB,
// text (UTF-8, no NUL byte) in lines of at most 4096 characters. Error::usage "OPTION PATH:LINE: ..." otherwise.
// --config and --pairs-file are checked with it; read_ini checks its files with it.
void require_text_file(const std::string& path, const std::string& option);

// The length of the UTF-8 sequence starting at text[i], or 0 where none starts there (the text checks of
// require_text_file and of the logs fabric-doctor --nccl-log reads).
std::size_t utf8_length(std::string_view text, std::size_t i);

// The file's sections and keys; Error::usage "OPTION PATH: what the parser said" when it cannot be read.
boost::property_tree::ptree read_ini(const std::string& path, const std::string& option);

// The whole of `text` as a finite number, or nothing: "12abc", "", "fast", " ", "nan", "inf" and 1e400 are not
// numbers.
std::optional<double> parse_number(const std::string& text);

}  // namespace fabricbench::cli
