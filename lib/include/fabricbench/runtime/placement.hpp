// Who is where: each rank's host and local rank, the hosts in order of first appearance, and pairings of
// ranks (rank i with i + N/2, so `--map-by node` puts the two ends of each pair on different nodes).
#pragma once
#include <string>
#include <vector>

#include "fabricbench/runtime/mpi.hpp"

namespace fabricbench::runtime {

struct RankPlace {
  int rank = 0;
  std::string host;
  int local_rank = 0;  // place among the ranks of its host (as grouped: see --emulate-hosts in discover())
  int local_size = 1;
  // Place among the ranks on the same physical machine (MPI_COMM_TYPE_SHARED): what picks the GPU. Equal to
  // local_rank except under --emulate-hosts, where one machine is split into several "hosts".
  int machine_local_rank = 0;
};

class Placement {
 public:
  // Collective over `world`: gathers every rank's host name and local rank.
  // Collective. `emulate_hosts` R > 0: every R consecutive ranks are one host, "node0", "node1"... or the k-th of
  // `names` (--emulate-hosts and the test hook FABRICBENCH_TEST_HOST_NAMES); 0: the hosts' own names.
  static Placement discover(const Communicator& world, int emulate_hosts = 0,
                            const std::vector<std::string>& names = {});
  // For tests and planning without MPI.
  explicit Placement(std::vector<RankPlace> ranks, int my_rank);

  const RankPlace& me() const { return ranks_.at(static_cast<std::size_t>(my_rank_)); }
  const std::vector<RankPlace>& ranks() const { return ranks_; }
  const std::vector<std::string>& hosts() const { return hosts_; }
  int world_size() const { return static_cast<int>(ranks_.size()); }

 private:
  std::vector<RankPlace> ranks_;
  std::vector<std::string> hosts_;
  int my_rank_ = 0;
};

// Rank i pairs with i + N/2; N must be even (throws Error::usage naming the rank count otherwise).
struct RankPairs {
  explicit RankPairs(int world_size);
  int pairs() const { return world_size / 2; }
  int peer_of(int rank) const { return rank < pairs() ? rank + pairs() : rank - pairs(); }
  bool leads(int rank) const { return rank < pairs(); }  // the lower rank of its pair starts each exchange
  int pair_of(int rank) const { return rank % pairs(); }
  int world_size;
};

}  // namespace fabricbench::runtime
