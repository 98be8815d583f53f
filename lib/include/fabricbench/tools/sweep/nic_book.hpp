// fabric-sweep's book of NICs: which NIC each host-rail used, per family of traffic (MPI's and NCCL's as their
// environment gave them, the RDMA port the rdma pair test opened) and the one whose byte counters prove the data
// path. Every rank says its own (`Mine`); rank 0 holds the book, per host * rails + rail, and names a metric's NICs in
// its rows, verdicts and the data-path check.
#pragma once
#include <string>
#include <vector>

#include "fabricbench/app/run_context.hpp"
#include "fabricbench/facts/rail_nic.hpp"
#include "fabricbench/results/table.hpp"
#include "fabricbench/tools/sweep/pair_test.hpp"

namespace fabricbench::tools::sweep {

class NicBook {
 public:
  // The columns of /sweep/nics.
  struct Columns {
    explicit Columns(const results::TableSpec& t);
    results::ColumnHandle<std::string> host, mpi_nic, nccl_nic, rdma_nic, counter_nic;
    results::ColumnHandle<std::int64_t> rail, rank;
  };
  // This rank's NICs.
  struct Mine {
    std::string mpi, nccl, rdma, counter;
  };
  // What this rank's environment gave its MPI and NCCL, the RDMA port its pair test opened (`rdma_opened`, "" none),
  // and the NIC whose counters prove the data path: the rail map's (its RDMA port, else its interface), else the RDMA
  // port opened, else MPI's. `rail_map` may be null.
  static Mine of_this_rank(const facts::RailMap* rail_map, int rail, const std::string& rdma_opened);
  // Collective over the world: every rank's NICs as rows of `table` (/sweep/nics); rank 0 keeps those of each
  // host-rail (without rails the host's first rank speaks for it), writes the rows and returns the book; the other
  // ranks return an empty book.
  static NicBook gather(const app::RunContext& context, const results::TableSpec& table, const Mine& mine, int rail,
                        const std::vector<int>& host_of_rank, std::size_t hosts, int rails);
  // The NICs metric `m`'s traffic went through: the RDMA ports for the rdma family; NCCL's where `nccl_traffic` (the
  // metric runs over NCCL) and any rank named one; else MPI's.
  const std::vector<std::string>& of(const SweepMetric& m, bool nccl_traffic) const;
  // The NICs whose counters were read around each round (--rails), for the data-path check and /sweep/traffic.
  const std::vector<std::string>& counters() const { return counter_; }

 private:
  std::vector<std::string> mpi_, nccl_, rdma_, counter_;
};

}  // namespace fabricbench::tools::sweep
