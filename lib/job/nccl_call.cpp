#include "fabricbench/job/nccl_call.hpp"

#include <fmt/format.h>

#include <array>
#include <cctype>
#include <charconv>

namespace fabricbench::job {
namespace {

struct DataType {
  const char* name;
  int size;
};
constexpr std::array<DataType, 12> data_types{{{"int8", 1},
                                               {"uint8", 1},
                                               {"int32", 4},
                                               {"uint32", 4},
                                               {"int64", 8},
                                               {"uint64", 8},
                                               {"float16", 2},
                                               {"float32", 4},
                                               {"float64", 8},
                                               {"bfloat16", 2},
                                               {"float8e4m3", 1},
                                               {"float8e5m2", 1}}};

template <typename T>
bool number(std::string_view text, T& value, int base = 10) {
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value, base);
  return ec == std::errc() && end == text.data() + text.size();
}

// The next blank-separated word of `text`, taken off its front.
std::string_view next_word(std::string_view& text) {
  while (!text.empty() && text.front() == ' ') text.remove_prefix(1);
  const auto space = text.find(' ');
  const auto word = text.substr(0, space);
  text = space == std::string_view::npos ? std::string_view() : text.substr(space + 1);
  return word;
}

}  // namespace

std::optional<NcclCall> parse_nccl_call(std::string_view m) {
  const auto colon = m.find(": opCount ");
  if (colon == std::string_view::npos || colon == 0 || colon > 32) return std::nullopt;
  NcclCall call;
  call.kind = m.substr(0, colon);
  for (char c : call.kind)
    if (!std::isalnum(static_cast<unsigned char>(c))) return std::nullopt;
  std::string_view rest = m.substr(colon + 2);
  bool have_count = false, have_type = false;
  while (!rest.empty()) {
    const auto key = next_word(rest);
    if (key.substr(0, 8) == "[nranks=") {
      int n = 0;
      if (key.size() > 9 && number(key.substr(8, key.size() - 9), n)) call.nranks = n;
      continue;
    }
    const auto value = next_word(rest);
    if (key == "count")
      have_count = number(value, call.count);
    else if (key == "datatype")
      have_type = number(value, call.datatype);
    else if (key == "op")
      number(value, call.op);
    else if (key == "root")
      number(value, call.root);
    else if (key == "comm")
      call.comm = value;
  }
  if (!have_count || !have_type) return std::nullopt;
  return call;
}

int datatype_size(int datatype) {
  return datatype >= 0 && datatype < static_cast<int>(data_types.size())
             ? data_types[static_cast<std::size_t>(datatype)].size
             : 0;
}

std::string datatype_name(int datatype) {
  return datatype_size(datatype) ? data_types[static_cast<std::size_t>(datatype)].name
                                 : fmt::format("type {}", datatype);
}

int size_bin(std::uint64_t bytes) {
  int bin = -1;
  for (; bytes; bytes >>= 1) ++bin;
  return bin;
}

std::string size_bin_label(int bin) {
  if (bin < 0) return "0";
  const auto edge = [](int b) {
    constexpr std::array<const char*, 7> units{"", "K", "M", "G", "T", "P", "E"};
    return fmt::format("{}{}", std::uint64_t(1) << (b % 10), units[static_cast<std::size_t>(b / 10)]);
  };
  return fmt::format("{}-{}", edge(bin), edge(bin + 1));
}

}  // namespace fabricbench::job
