// One line of an NCCL log as a job leaves it: NCCL's prefix ("host:pid:tid [dev] NCCL INFO ", after an optional
// NCCL_DEBUG_TIMESTAMP_FORMAT stamp; WARN lines add "file.cc:123") behind a launcher's tag when the log is the
// job's output: mpirun --tag-output "[1,3]<stdout>:", torchrun "[default3]:" or "[rank3]:", srun --label "3: ".
#pragma once
#include <string_view>

namespace fabricbench::job {

struct NcclLine {
  enum class Level { none, info, warn };  // none: not a line NCCL wrote
  Level level = Level::none;
  std::string_view host;  // "" when the line carries no host:pid:tid
  long pid = -1;
  int device = -1;           // NCCL's "[N]": the CUDA device of the thread that logged, not the rank
  int tag_rank = -1;         // the global rank a launcher's tag names (mpirun, srun, torchrun's [rankN]), else -1
  std::string_view tag;      // the launcher's first tag as written inside it ("1,0", "default0", "3"), else ""
  std::string_view message;  // after "NCCL INFO " / "NCCL WARN "
};

// Views into `line`, valid as long as it is.
NcclLine split_nccl_line(std::string_view line);
// The launcher's first tag of any line (a job's own output too, such as its iteration marker), else "".
std::string_view launcher_tag(std::string_view line);

}  // namespace fabricbench::job
