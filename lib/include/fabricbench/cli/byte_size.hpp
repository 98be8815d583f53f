// Message sizes as users write them ("8", "64K", "4MiB", "1G") and the list of sizes a run measures
// ("8,1K,4M", "8:4G:x2", or -b/-e/-f as in nccl-tests).
#pragma once
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace fabricbench::cli {

// Parses one size with an optional binary suffix K, M, G, T (optionally followed by B or iB).
// Throws Error::usage naming `option` on anything else ("4Q", "-1", "", overflow).
std::uint64_t parse_byte_size(std::string_view text, std::string_view option);

// "4194304" -> "4M"; exact binary multiples get a suffix, other values stay plain numbers.
std::string format_byte_size(std::uint64_t bytes);

class SizeList {
 public:
  // min, min*factor, ... up to max (max itself only when it is on that grid, as in nccl-tests and OSU).
  static SizeList geometric(std::uint64_t min, std::uint64_t max, std::uint64_t factor);
  // "8,1K,4M" (explicit list, kept in the given order) or "MIN:MAX[:xFACTOR]" (geometric, factor 2 by default).
  static SizeList parse(std::string_view text, std::string_view option);

  const std::vector<std::uint64_t>& values() const { return values_; }
  std::uint64_t max() const;
  std::uint64_t min() const;

 private:
  explicit SizeList(std::vector<std::uint64_t> v) : values_(std::move(v)) {}
  std::vector<std::uint64_t> values_;
};

}  // namespace fabricbench::cli
