#include "fabricbench/results/printable.hpp"

#include <fmt/format.h>

#include <cstdint>

namespace fabricbench::results {
namespace {

// The length of the well-formed UTF-8 sequence at `s[i]` (RFC 3629: no overlong forms, no surrogates, nothing past
// U+10FFFF) and its code point; 0 where the byte starts none.
std::size_t sequence_at(std::string_view s, std::size_t i, std::uint32_t& code) {
  const auto byte = [&](std::size_t k) { return static_cast<unsigned char>(s[i + k]); };
  const unsigned char b = byte(0);
  if (b < 0x80) return code = b, 1;
  std::size_t n = 0;
  unsigned char lo = 0x80, hi = 0xbf;  // the second byte's range, narrower after E0, ED, F0, F4
  if (b >= 0xc2 && b <= 0xdf) {
    n = 2, code = b & 0x1f;
  } else if (b >= 0xe0 && b <= 0xef) {
    n = 3, code = b & 0x0f;
    if (b == 0xe0) lo = 0xa0;
    if (b == 0xed) hi = 0x9f;
  } else if (b >= 0xf0 && b <= 0xf4) {
    n = 4, code = b & 0x07;
    if (b == 0xf0) lo = 0x90;
    if (b == 0xf4) hi = 0x8f;
  } else {
    return 0;
  }
  if (i + n > s.size()) return 0;
  for (std::size_t k = 1; k < n; ++k) {
    const unsigned char c = byte(k);
    if (c < (k == 1 ? lo : 0x80) || c > (k == 1 ? hi : 0xbf)) return 0;
    code = code << 6 | (c & 0x3f);
  }
  return n;
}

bool acted_on(std::uint32_t code) {
  return code < 0x20 || code == 0x7f || (code >= 0x80 && code <= 0x9f) || (code >= 0x202a && code <= 0x202e) ||
         (code >= 0x2066 && code <= 0x2069);
}

}  // namespace

std::string printable(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (std::size_t i = 0; i < text.size();) {
    std::uint32_t code = 0;
    const std::size_t n = sequence_at(text, i, code);
    if (n == 0) {
      out += fmt::format("\\x{:02x}", static_cast<unsigned char>(text[i]));
      ++i;
      continue;
    }
    if (!acted_on(code))
      out.append(text.substr(i, n));
    else if (code == '\n')
      out += "\\n";
    else if (code == '\r')
      out += "\\r";
    else if (code == '\t')
      out += "\\t";
    else
      out += code < 0x80 ? fmt::format("\\x{:02x}", code) : fmt::format("\\u{:04x}", code);
    i += n;
  }
  return out;
}

}  // namespace fabricbench::results
