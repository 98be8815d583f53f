#include "fabricbench/cli/line_reader.hpp"

#include <fmt/format.h>

#include <cerrno>
#include <cstring>
#include <filesystem>

#include "fabricbench/error.hpp"

namespace fabricbench::cli {
namespace {

constexpr std::size_t block_bytes = 1u << 20;

}  // namespace

LineReader::LineReader(const std::string& path, const std::string& option, std::size_t max_line)
    : max_line_(max_line), buffer_(block_bytes) {
  if (path == "-") {
    file_.reset(stdin);
  } else {
    std::error_code ec;
    if (std::filesystem::is_directory(path, ec))
      throw Error::usage(fmt::format("{} {}: a directory; give a file", option, path));
    file_.reset(std::fopen(path.c_str(), "rb"));
    if (!file_) throw Error::usage(fmt::format("{} {}: cannot read the file ({})", option, path, std::strerror(errno)));
  }
  fill();
}

bool LineReader::fill() {
  if (at_end_) return false;
  begin_ = 0;
  end_ = std::fread(buffer_.data(), 1, buffer_.size(), file_.get());
  bytes_ += end_;
  if (end_ == 0) {
    if (std::ferror(file_.get())) throw Error::runtime(fmt::format("reading a log failed: {}", std::strerror(errno)));
    at_end_ = true;
  }
  return end_ > 0;
}

bool LineReader::next(std::string_view& line) {
  carry_.clear();
  carry_cut_ = false;
  for (;;) {
    const char* start = buffer_.data() + begin_;
    const auto* newline = static_cast<const char*>(std::memchr(start, '\n', end_ - begin_));
    const std::size_t length = newline ? static_cast<std::size_t>(newline - start) : end_ - begin_;
    if (newline && carry_.empty() && !carry_cut_) {  // the usual case: the whole line inside the block
      line = std::string_view(start, std::min(length, max_line_));
      if (length > max_line_) ++cut_;
      begin_ += length + 1;
      break;
    }
    const std::size_t room = max_line_ - carry_.size();
    carry_.append(start, std::min(length, room));
    carry_cut_ = carry_cut_ || length > room;
    if (newline) {
      begin_ += length + 1;
    } else {
      begin_ = end_;
      if (!fill() && carry_.empty() && !carry_cut_) return false;
      if (end_ > 0) continue;
    }
    line = carry_;
    if (carry_cut_) ++cut_;
    break;
  }
  if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
  ++lines_;
  return true;
}

}  // namespace fabricbench::cli
