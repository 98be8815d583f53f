// The path NCCL took in fabric-coll's own run (issue 46), named on every NCCL row: NCCL is asked for its INIT and NET
// INFO lines in a private file (NCCL_DEBUG=INFO, NCCL_DEBUG_SUBSYS=INIT,NET, NCCL_DEBUG_FILE), which is read as NCCL
// connects (it connects at a collective's first use), so a row says what its own operation went through. Where the
// environment already sets NCCL_DEBUG, NCCL's lines are the user's: nothing is changed and the path stays unnamed.
#pragma once
#include <cstdint>
#include <memory>
#include <string>

#include "fabricbench/runtime/temp_dir.hpp"

namespace fabricbench::tools::coll {

class NcclPathLog {
 public:
  // Before NCCL's first call in this process (it reads NCCL_DEBUG once).
  NcclPathLog();
  NcclPathLog(const NcclPathLog&) = delete;
  NcclPathLog& operator=(const NcclPathLog&) = delete;
  // "P2P/CUMEM x24", "NET/IB x16; GPUDirect RDMA: on (NIC mlx5_0:1/IB)"; "" while NCCL has connected nothing, or
  // when the user's NCCL_DEBUG keeps the log from us (why_unnamed says so).
  std::string path();
  const std::string& why_unnamed() const { return why_; }

 private:
  std::unique_ptr<runtime::TempDir> dir_;
  std::string file_, why_, text_;
  std::uintmax_t read_size_ = 0;
};

}  // namespace fabricbench::tools::coll
