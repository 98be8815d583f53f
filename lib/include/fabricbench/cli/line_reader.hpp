// A text file read line by line through one fixed buffer, however large: the logs of a long job (a few GB) are
// streamed, never held whole. A line longer than the limit is cut there and the rest of it skipped.
#pragma once
#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace fabricbench::cli {

class LineReader {
 public:
  // `path` "-" reads standard input. Throws Error::usage "OPTION PATH: ..." for a directory or an unreadable file.
  LineReader(const std::string& path, const std::string& option, std::size_t max_line = 64u << 10);

  // The first block of the file (up to 64 KiB), for a check before any line is taken; valid until next().
  std::string_view head() const { return {buffer_.data(), std::min<std::size_t>(end_, 64u << 10)}; }
  // The next line without its "\n" or "\r\n", valid until the next call; false at the end of the file.
  bool next(std::string_view& line);

  std::uint64_t bytes() const { return bytes_; }    // read so far
  std::uint64_t lines() const { return lines_; }    // returned so far
  std::uint64_t cut_lines() const { return cut_; }  // longer than the limit

 private:
  struct Close {
    void operator()(std::FILE* f) const {
      if (f != stdin) std::fclose(f);
    }
  };
  bool fill();  // the next block into buffer_; false at the end

  std::unique_ptr<std::FILE, Close> file_;
  std::size_t max_line_;
  std::vector<char> buffer_;
  std::size_t begin_ = 0, end_ = 0;
  std::string carry_;  // a line that spans blocks (at most max_line_ characters kept)
  bool carry_cut_ = false, at_end_ = false;
  std::uint64_t bytes_ = 0, lines_ = 0, cut_ = 0;
};

}  // namespace fabricbench::cli
