// fabric-coll --per-rank: every rank's own kernel time of every NCCL collective of the run, from fabricbench's
// profiler plugin loaded into fabric-coll's own NCCL (docs/slow-ranks.md), judged after the run the way
// fabric-watchdog --slow judges a job: per collective the rank that ran shortest arrived last, and how much longer
// the others ran is what it cost them. What nccl-tests' -I and its straggler analysis give afterwards, named: the
// slow GPU of one big collective over many nodes. Written as /coll/per_rank and a line.
#pragma once
#include <string>
#include <vector>

namespace fabricbench::app {
struct RunContext;
}

namespace fabricbench::tools::coll {

class PerRankView {
 public:
  // On every rank, before NCCL's first communicator: the plugin and a folder of this process's own (0700, under
  // $TMPDIR or /tmp) in the environment. Error::usage when the plugin is missing or NCCL_PROFILER_PLUGIN is set.
  PerRankView();
  ~PerRankView();  // the folder removed
  PerRankView(const PerRankView&) = delete;
  PerRankView& operator=(const PerRankView&) = delete;
  // Collective over the world, after the run: each rank's records to rank 0, judged and written there.
  void write(const app::RunContext& context) const;

 private:
  std::string folder_;
};

}  // namespace fabricbench::tools::coll
