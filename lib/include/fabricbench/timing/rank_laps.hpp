// Per-iteration times of every rank, gathered on one rank: the one way laps reach rank 0 and become statistics
// and /samples rows, for fabric-p2p (the leaders' laps) and fabric-coll (every rank's laps) alike.
#pragma once
#include <cstdint>
#include <vector>

#include "fabricbench/results/table.hpp"
#include "fabricbench/runtime/mpi.hpp"
#include "fabricbench/timing/sample_stats.hpp"

namespace fabricbench::timing {

class RankLaps {
 public:
  RankLaps() = default;
  explicit RankLaps(std::vector<std::vector<double>> per_rank) : laps_(std::move(per_rank)) {}
  // Collective over `comm`; the result holds every rank's laps on `root` and nothing elsewhere.
  static RankLaps gather(const runtime::Communicator& comm, const std::vector<double>& mine, int root = 0);

  int ranks() const { return static_cast<int>(laps_.size()); }
  const std::vector<double>& of(int rank) const { return laps_.at(static_cast<std::size_t>(rank)); }
  // Every lap of ranks [0, first_ranks) (all ranks when negative), times `scale`, rank by rank.
  std::vector<double> all(double scale = 1.0, int first_ranks = -1) const;
  SampleStats stats(double scale = 1.0, int first_ranks = -1) const { return SampleStats::of(all(scale, first_ranks)); }
  // The /samples rows of results row `row`. A rank without laps gets one row with iteration -1 holding its entry
  // of `means` (when given): its mean per iteration.
  std::vector<results::Sample> samples(std::int64_t row, double scale = 1.0, int first_ranks = -1,
                                       const std::vector<double>* means = nullptr) const;

 private:
  std::vector<std::vector<double>> laps_;
};

}  // namespace fabricbench::timing
