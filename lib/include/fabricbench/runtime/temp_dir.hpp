// A private temporary folder (mkdtemp), removed with everything in it when its owner goes: where a tool asks NCCL to
// write its INFO log (fabric-doctor's probe, fabric-coll's NCCL path).
#pragma once
#include <stdlib.h>

#include <filesystem>
#include <string>

#include "fabricbench/error.hpp"

namespace fabricbench::runtime {

class TempDir {
 public:
  explicit TempDir(const std::string& prefix) {
    std::string pattern = (std::filesystem::temp_directory_path() / (prefix + "-XXXXXX")).string();
    if (!mkdtemp(pattern.data())) throw Error::runtime("cannot create a temporary folder (" + prefix + ")");
    path_ = pattern;
  }
  ~TempDir() {
    std::error_code ec;
    std::filesystem::remove_all(path_, ec);
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

}  // namespace fabricbench::runtime
