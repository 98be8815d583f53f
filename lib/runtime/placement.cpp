#include "fabricbench/runtime/placement.hpp"

#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <sstream>
#include <string>
#include <vector>

#include "fabricbench/error.hpp"

namespace fabricbench::runtime {

Placement::Placement(std::vector<RankPlace> ranks, int my_rank) : ranks_(std::move(ranks)), my_rank_(my_rank) {
  for (const auto& r : ranks_)
    if (std::find(hosts_.begin(), hosts_.end(), r.host) == hosts_.end()) hosts_.push_back(r.host);
}

Placement Placement::discover(const Communicator& world, int emulate_hosts, const std::vector<std::string>& names) {
  char name[256] = {};
  gethostname(name, sizeof(name) - 1);
  const Communicator local = world.split_by_host();
  const int machine_local_rank = local.rank();
  int local_rank = machine_local_rank, local_size = local.size();
  // --emulate-hosts R splits the job into hosts "node0", "node1", ... of R ranks each, so that node-level logic
  // (fabric-sweep) runs without a cluster; the test hook's names (FABRICBENCH_TEST_HOST_NAMES) name emulated host k
  // after its k-th entry instead (a job on some of an earlier job's hosts).
  if (emulate_hosts > 0) {
    const int per = emulate_hosts;
    const auto k = static_cast<std::size_t>(world.rank() / per);
    std::snprintf(name, sizeof name, "node%d", world.rank() / per);
    if (k < names.size() && !names[k].empty()) std::snprintf(name, sizeof name, "%s", names[k].c_str());
    local_rank = world.rank() % per;
    local_size = per;
  }
  const std::string mine = fmt::format("{}\n{} {} {}", name, local_rank, local_size, machine_local_rank);
  const auto all = world.all_gather(mine);
  std::vector<RankPlace> ranks;
  for (std::size_t r = 0; r < all.size(); ++r) {
    const auto& s = all[r];
    const auto newline = s.find('\n');
    RankPlace place{static_cast<int>(r), s.substr(0, newline)};
    std::sscanf(s.c_str() + newline + 1, "%d %d %d", &place.local_rank, &place.local_size, &place.machine_local_rank);
    ranks.push_back(std::move(place));
  }
  return Placement(std::move(ranks), world.rank());
}

RankPairs::RankPairs(int n) : world_size(n) {
  if (n < 2 || n % 2 != 0)
    throw Error::usage(
        fmt::format("this test pairs rank i with rank i+N/2 and needs an even number of ranks "
                    ">= 2; got {} (launch with -np 2, 4, 6, ...)",
                    n));
}

}  // namespace fabricbench::runtime
