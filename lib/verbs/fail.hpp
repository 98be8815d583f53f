// How the verbs files report a failed verbs call: Error::runtime "<what> failed: <the error's text>", from the code
// the call returned or else errno. Internal to lib/verbs.
#pragma once
#include <fmt/format.h>

#include <cerrno>
#include <cstring>
#include <string>

#include "fabricbench/error.hpp"

namespace fabricbench::verbs {

[[noreturn]] inline void fail(const std::string& what, int err) {
  throw Error::runtime(fmt::format("{} failed: {}", what, std::strerror(err ? err : errno)));
}

}  // namespace fabricbench::verbs
