#include "fabricbench/app/shipped_files.hpp"

#include <cstdlib>
#include <filesystem>

namespace fabricbench::app {

std::string data_dir() {
  if (const char* dir = std::getenv("FABRICBENCH_DATA_DIR"); dir && *dir) return dir;
  std::error_code ec;
  const auto exe = std::filesystem::read_symlink("/proc/self/exe", ec);
  if (ec) return "share/fabricbench";
  return (exe.parent_path().parent_path() / "share" / "fabricbench").lexically_normal().string();
}

std::string shipped_config(std::string_view name) { return data_dir() + "/configs/" + std::string(name); }

std::string profiler_plugin() {
  std::error_code ec;
  const auto exe = std::filesystem::read_symlink("/proc/self/exe", ec);
  const auto prefix = ec ? std::filesystem::path("..") : exe.parent_path().parent_path();
  return (prefix / "lib" / "libnccl-profiler-fabricbench.so").lexically_normal().string();
}

}  // namespace fabricbench::app
