#include "fabricbench/tools/coll/nccl_path_log.hpp"

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "fabricbench/doctor/nccl_transport.hpp"
#include "fabricbench/job/nccl_log.hpp"

namespace fabricbench::tools::coll {

NcclPathLog::NcclPathLog() {
  if (std::getenv("NCCL_DEBUG") != nullptr) {
    why_ = "NCCL_DEBUG is set by the environment: NCCL's lines go where the user asked";
    return;
  }
  dir_ = std::make_unique<runtime::TempDir>("fabricbench-coll");
  file_ = dir_->path() + "/nccl.log";
  setenv("NCCL_DEBUG", "INFO", 1);
  setenv("NCCL_DEBUG_SUBSYS", "INIT,NET", 1);
  setenv("NCCL_DEBUG_FILE", file_.c_str(), 1);
}

std::string NcclPathLog::path() {
  if (file_.empty()) return {};
  std::error_code ec;
  const auto size = std::filesystem::file_size(file_, ec);
  if (ec || size == read_size_) return text_;  // nothing new connected since the last row
  std::ifstream in(file_);
  std::ostringstream all;
  all << in.rdbuf();
  read_size_ = size;
  text_ = doctor::nccl_path_text(job::parse_nccl_log(all.str()));
  return text_;
}

}  // namespace fabricbench::tools::coll
