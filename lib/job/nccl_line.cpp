#include "fabricbench/job/nccl_line.hpp"

#include <cctype>

namespace fabricbench::job {
namespace {

bool is_digit(char c) { return std::isdigit(static_cast<unsigned char>(c)) != 0; }
// 1 to 9 decimal digits: a pid, a device, a rank (more is not one of those, and would not fit an int).
bool all_digits(std::string_view s) {
  if (s.empty() || s.size() > 9) return false;
  for (char c : s)
    if (!is_digit(c)) return false;
  return true;
}
long to_number(std::string_view s) {
  long v = 0;
  for (char c : s) v = v * 10 + (c - '0');
  return v;
}

// Takes one launcher tag off the front of `line` (what is inside it into `tag`); false when it starts with none.
bool strip_tag(std::string_view& line, int& tag_rank, std::string_view& tag) {
  std::size_t i = 0;
  if (!line.empty() && line[0] == '[') {
    const auto close = line.find(']');
    if (close == std::string_view::npos || close > 32) return false;
    const std::string_view inside = line.substr(1, close - 1);
    tag = inside;
    std::string_view rest = line.substr(close + 1);
    if (const auto comma = inside.find(','); comma != std::string_view::npos) {  // mpirun: [job,rank]<stdout>:
      const auto rank = inside.substr(comma + 1);
      const bool tagged = rest.substr(0, 9) == "<stdout>:" || rest.substr(0, 9) == "<stderr>:";
      if (!tagged || !all_digits(inside.substr(0, comma)) || !all_digits(rank)) return false;
      tag_rank = static_cast<int>(to_number(rank));
      rest.remove_prefix(9);
    } else {  // torchrun: [default3]: (a local rank) or [rank3]:
      std::size_t letters = 0;
      while (letters < inside.size() && std::isalpha(static_cast<unsigned char>(inside[letters]))) ++letters;
      if (letters == 0 || !all_digits(inside.substr(letters)) || rest.empty() || rest[0] != ':') return false;
      if (inside.substr(0, letters) == "rank") tag_rank = static_cast<int>(to_number(inside.substr(letters)));
      rest.remove_prefix(1);
    }
    if (!rest.empty() && rest[0] == ' ') rest.remove_prefix(1);
    line = rest;
    return true;
  }
  while (i < line.size() && line[i] == ' ') ++i;  // srun --label: "3: ", right-aligned
  const std::size_t digits = i;
  while (i < line.size() && is_digit(line[i])) ++i;
  if (!all_digits(line.substr(digits, i - digits)) || line.substr(i, 2) != ": ") return false;
  tag = line.substr(digits, i - digits);
  tag_rank = static_cast<int>(to_number(tag));
  line.remove_prefix(i + 2);
  return true;
}

// The last blank-separated word of `text` (trailing blanks dropped); `text` keeps what is before it.
std::string_view last_word(std::string_view& text) {
  while (!text.empty() && text.back() == ' ') text.remove_suffix(1);
  const auto space = text.rfind(' ');
  const std::string_view word = space == std::string_view::npos ? text : text.substr(space + 1);
  text = space == std::string_view::npos ? std::string_view() : text.substr(0, space);
  return word;
}

}  // namespace

NcclLine split_nccl_line(std::string_view line) {
  NcclLine out;
  constexpr std::string_view info = "NCCL INFO ", warn = "NCCL WARN ";
  auto at = line.find(info);
  out.level = NcclLine::Level::info;
  if (at == std::string_view::npos) {
    at = line.find(warn);
    out.level = NcclLine::Level::warn;
    if (at == std::string_view::npos) return {};
  }
  out.message = line.substr(at + info.size());
  for (int n = 0; n < 3; ++n) {  // up to 3 tags (srun's label inside mpirun's, ...); the first names the line
    std::string_view tag;
    if (!strip_tag(line, out.tag_rank, tag)) break;
    if (out.tag.empty()) out.tag = tag;
    at = line.find(out.level == NcclLine::Level::info ? info : warn);
  }
  std::string_view prefix = line.substr(0, at);
  if (out.level == NcclLine::Level::warn) last_word(prefix);  // file.cc:123
  const auto device = last_word(prefix);
  if (device.size() >= 3 && device.front() == '[' && device.back() == ']' &&
      all_digits(device.substr(1, device.size() - 2)))
    out.device = static_cast<int>(to_number(device.substr(1, device.size() - 2)));
  else
    return out;
  const auto where = last_word(prefix);  // host:pid:tid
  const auto tid_colon = where.rfind(':');
  if (tid_colon == std::string_view::npos || tid_colon == 0) return out;
  const auto pid_colon = where.rfind(':', tid_colon - 1);
  if (pid_colon == std::string_view::npos) return out;
  const auto pid = where.substr(pid_colon + 1, tid_colon - pid_colon - 1);
  if (!all_digits(pid) || !all_digits(where.substr(tid_colon + 1))) return out;
  out.host = where.substr(0, pid_colon);
  out.pid = to_number(pid);
  return out;
}

std::string_view launcher_tag(std::string_view line) {
  int rank = -1;
  std::string_view tag;
  return strip_tag(line, rank, tag) ? tag : std::string_view();
}

}  // namespace fabricbench::job
