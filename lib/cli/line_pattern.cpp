#include "fabricbench/cli/line_pattern.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <utility>

#include "fabricbench/error.hpp"

namespace fabricbench::cli {
namespace {

// ECMAScript's \d and \D, which users type out of habit, in POSIX bracket form (glibc knows \w, \s and \b itself).
std::string posix_form(const std::string& pattern) {
  std::string out;
  for (std::size_t i = 0; i < pattern.size(); ++i) {
    if (pattern[i] == '\\' && i + 1 < pattern.size()) {
      const char next = pattern[i + 1];
      if (next == 'd' || next == 'D') {
        out += next == 'd' ? "[0-9]" : "[^0-9]";
        ++i;
        continue;
      }
      out += pattern[i];
      out += next;
      ++i;
      continue;
    }
    out += pattern[i];
  }
  return out;
}

}  // namespace

LinePattern::LinePattern(const std::string& pattern, const std::string& option) {
  if (pattern.empty()) return;
  const int error = regcomp(&regex_, posix_form(pattern).c_str(), REG_EXTENDED | REG_NOSUB);
  if (error != 0) {
    char why[256];
    regerror(error, &regex_, why, sizeof why);
    throw Error::usage(
        fmt::format("{} '{}': not a regular expression ({}); give an extended regular expression "
                    "(grep -E) such as 'step [0-9]+'",
                    option, pattern, why));
  }
  compiled_ = true;
}

LinePattern::LinePattern(LinePattern&& other) noexcept : regex_(other.regex_), compiled_(other.compiled_) {
  other.compiled_ = false;
}

LinePattern& LinePattern::operator=(LinePattern&& other) noexcept {
  if (this != &other) {
    if (compiled_) regfree(&regex_);
    regex_ = other.regex_;
    compiled_ = std::exchange(other.compiled_, false);
  }
  return *this;
}

LinePattern::~LinePattern() {
  if (compiled_) regfree(&regex_);
}

bool LinePattern::found_in(std::string_view line) const {
  if (!compiled_) return false;
  // A NUL-terminated copy of the window: the line is a view into the reader's buffer, and REG_STARTEND alone would
  // still have ASan's regexec interceptor read past it looking for the NUL.
  head_.assign(line.data(), std::min(line.size(), window));
  return regexec(&regex_, head_.c_str(), 0, nullptr, 0) == 0;
}

}  // namespace fabricbench::cli
