#include "fabricbench/runtime/temp_dir.hpp"

#include <stdlib.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <mutex>
#include <set>

#include "fabricbench/error.hpp"

namespace fabricbench::runtime {
namespace {

// The folders of the TempDirs alive in this process.
struct AliveFolders {
  std::mutex mutex;
  std::set<std::string> paths;
};

AliveFolders& alive_folders() {
  static AliveFolders a;
  return a;
}

void remove_folder(const std::string& path) {
  std::error_code ec;
  std::filesystem::remove_all(path, ec);
}

}  // namespace

TempDir::TempDir(const std::string& prefix) {
  std::string pattern = (std::filesystem::temp_directory_path() / (prefix + "-XXXXXX")).string();
  if (!mkdtemp(pattern.data()))
    throw Error::runtime("cannot create a temporary folder " + pattern + ": " + std::strerror(errno));
  path_ = pattern;
  std::lock_guard lock(alive_folders().mutex);
  alive_folders().paths.insert(path_);
}

TempDir::~TempDir() {
  {
    std::lock_guard lock(alive_folders().mutex);
    alive_folders().paths.erase(path_);
  }
  remove_folder(path_);
}

void TempDir::remove_all_alive() {
  std::lock_guard lock(alive_folders().mutex);
  for (const auto& path : alive_folders().paths) remove_folder(path);
}

}  // namespace fabricbench::runtime
