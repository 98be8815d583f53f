#include "fabricbench/cli/choice.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "fabricbench/error.hpp"

namespace fabricbench::cli {

void refuse_choice(std::string_view text, std::string_view option, const std::vector<std::string_view>& names) {
  throw Error::usage(fmt::format("{} '{}': allowed values are {}", option, text, fmt::join(names, ", ")));
}

}  // namespace fabricbench::cli
