#include "fabricbench/timing/rank_laps.hpp"

namespace fabricbench::timing {

RankLaps RankLaps::gather(const runtime::Communicator& comm, const std::vector<double>& mine, int root) {
  return RankLaps(comm.gather_arrays(mine, root));
}

std::vector<double> RankLaps::all(double scale, int first_ranks) const {
  const int n = first_ranks < 0 ? ranks() : std::min(first_ranks, ranks());
  std::vector<double> out;
  for (int r = 0; r < n; ++r)
    for (double lap : of(r)) out.push_back(lap * scale);
  return out;
}

std::vector<results::Sample> RankLaps::samples(std::int64_t row, double scale, int first_ranks,
                                               const std::vector<double>* means) const {
  const int n = first_ranks < 0 ? ranks() : std::min(first_ranks, ranks());
  std::vector<results::Sample> out;
  for (int r = 0; r < n; ++r) {
    const auto& laps = of(r);
    if (laps.empty() && means) out.push_back({row, -1, r, means->at(static_cast<std::size_t>(r))});
    for (std::size_t i = 0; i < laps.size(); ++i)
      out.push_back({row, static_cast<std::int32_t>(i), r, laps[i] * scale});
  }
  return out;
}

}  // namespace fabricbench::timing
