// Where the unit tests find tests/fixtures: the build copies it next to the test binary (<its folder>/fixtures, as a
// moved build tree or a carried prefix keep it); $FABRICBENCH_FIXTURES overrides. No source path is compiled in.
#pragma once
#include <cstdlib>
#include <filesystem>
#include <system_error>

inline std::filesystem::path fixtures_folder() {
  if (const char* dir = std::getenv("FABRICBENCH_FIXTURES"); dir && *dir) return dir;
  std::error_code ec;
  const auto exe = std::filesystem::read_symlink("/proc/self/exe", ec);
  return ec ? std::filesystem::path("fixtures") : exe.parent_path() / "fixtures";
}
