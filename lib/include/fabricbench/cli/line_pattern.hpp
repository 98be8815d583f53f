// A user's regular expression (an --iteration-marker) looked for in lines of a log, at a bounded cost: std::regex
// matches by recursion and overflowed the stack on one 40 KB line, so the match is glibc's POSIX engine (no
// recursion, no exponential backtracking) over at most the first `window` bytes of a line.
#pragma once
#include <regex.h>

#include <cstddef>
#include <string>
#include <string_view>

namespace fabricbench::cli {

class LinePattern {
 public:
  // Where a marker is looked for: the head of a line (a marker such as "step 12" sits near its start). At 4 KiB the
  // worst patterns tried ("((a|aa)*)*c", "x*y*z*.*.*.*q") cost 30-55 ms a line; ordinary ones a few microseconds.
  static constexpr std::size_t window = 4u << 10;

  // An extended regular expression (grep -E), with \d and \D as [0-9] and [^0-9]; "" matches nothing. Throws
  // Error::usage "OPTION 'PATTERN': not a regular expression (why); give one such as 'step [0-9]+'".
  LinePattern(const std::string& pattern, const std::string& option);
  LinePattern() = default;
  LinePattern(LinePattern&& other) noexcept;
  LinePattern& operator=(LinePattern&& other) noexcept;
  LinePattern(const LinePattern&) = delete;
  LinePattern& operator=(const LinePattern&) = delete;
  ~LinePattern();

  bool empty() const { return !compiled_; }
  // Whether the pattern occurs in the first `window` bytes of `line`.
  bool found_in(std::string_view line) const;

 private:
  regex_t regex_{};
  bool compiled_ = false;
  mutable std::string head_;  // the window of the line in hand, NUL-terminated
};

}  // namespace fabricbench::cli
