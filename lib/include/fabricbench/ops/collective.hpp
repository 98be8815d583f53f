// The collectives of fabric-coll as one table: per operation its element counts and bus-bandwidth factor exactly as
// nccl-tests defines them, its MPI call and NCCL's name for it; both tables are indexed by CollKind. A collective lives
// in one block of lib/ops/collective.cpp (counts, factor, MPI call, table row), one block of
// lib/ops/nccl_collectives.cpp (its NCCL call: the file CMake adds when NCCL is found) and one case of
// ElementRule::expected (coll_data.hpp: the output both back ends check, on the host and in CUDA kernels). Types and
// reductions: datatype.hpp.
#pragma once
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "fabricbench/ops/bandwidth.hpp"
#include "fabricbench/ops/coll_data.hpp"
#include "fabricbench/ops/iteration_defaults.hpp"

namespace fabricbench::ops {

// Element counts of one operation for a requested size, as nccl-tests' getCollByteCount computes them.
struct CollCounts {
  std::uint64_t send;                 // elements in each rank's send buffer
  std::uint64_t recv;                 // elements in each rank's receive buffer
  std::uint64_t param;                // the count passed to the library call (per rank / per peer)
  std::uint64_t send_inplace_offset;  // in-place: where the input sits in the receive buffer (elements)
  std::uint64_t recv_inplace_offset;  // in-place: where the output sits in the (shared) buffer (elements)
  std::uint64_t bytes(int type_size) const {
    return (send > recv ? send : recv) * static_cast<std::uint64_t>(type_size);
  }
};

struct MpiCall;  // one operation's arguments for MPI (lib/ops/mpi_call.hpp)

struct CollectiveOp {
  std::string_view name;
  CollKind kind;
  bool reduces;
  bool rooted;
  CollCounts (*counts)(std::uint64_t elements, int nranks);  // elements = requested bytes / type size
  double (*busbw_factor)(int nranks);
  std::string_view factor_text;  // busbw_factor as --help writes it: "2(n-1)/n"
  // NCCL's name of the operation ("AllReduce": its logs, the counts of its RAS); empty where NCCL has no such call
  // and the back end groups sends and receives (alltoall, sendrecv), which NCCL does not define in place.
  std::string_view nccl_name;
  bool mpi_one_buffer;  // MPI's call has one buffer (MPI_Bcast): the root's input sits where every rank receives
  void (*mpi)(const MpiCall& call);  // the MPI call, throwing Error::runtime on an MPI error
  // nccl-tests' bus bandwidth (GB/s) of `bytes` in `seconds` per operation on `nranks`: the figure fabric-coll
  // reports and fabric-sweep's collective metrics judge.
  double busbw_gbps(std::uint64_t bytes, double seconds, int nranks) const;
};

// Every collective, indexed by CollKind (collectives()[k].kind == k).
const std::vector<CollectiveOp>& collectives();
const CollectiveOp& collective(CollKind kind);
const CollectiveOp* find_collective(std::string_view name);
// The names of the collectives for which `has` holds, in the table's order, as a message says them: "broadcast and
// reduce", "all_reduce, all_gather and alltoall".
std::string collectives_that(bool (*has)(const CollectiveOp& op));

// Whether `rows` holds one row per CollKind in the enum's order (rows[k].kind == k): every table indexed by CollKind
// says so in a static_assert, so that a kind without its row, or rows out of order, fail the build.
template <typename Row, std::size_t N>
constexpr bool indexed_by_kind(const Row (&rows)[N]) {
  if (N != static_cast<std::size_t>(kCollKindCount)) return false;
  for (std::size_t k = 0; k < N; ++k)
    if (rows[k].kind != static_cast<CollKind>(k)) return false;
  return true;
}

// How per-rank times combine into the reported time (nccl-tests -a): fabric-coll's rows, fabric-sweep's collectives.
enum class RankCombine { rank0 = 0, average = 1, min = 2, max = 3 };
double combine_rank_times(const std::vector<double>& per_rank, RankCombine how);

}  // namespace fabricbench::ops
