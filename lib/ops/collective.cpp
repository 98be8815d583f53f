#include "fabricbench/ops/collective.hpp"

#include <algorithm>
#include <iterator>
#include <numeric>
#include <string>

#include "fabricbench/ops/bandwidth.hpp"
#include "fabricbench/runtime/mpi.hpp"
#include "mpi_call.hpp"

namespace fabricbench::ops {
namespace {

using u64 = std::uint64_t;
using runtime::check_mpi;

// Per nccl-tests (src/*.cu, *GetCollByteCount): counts are rounded down to what the operation can split evenly.
// Each block below is one collective: its counts, its bus-bandwidth factor and its MPI call (the NCCL call is in
// nccl_collectives.cpp, its output in coll_data.hpp's ElementRule::expected).
CollCounts same_count(u64 n, int) { return {n, n, n, 0, 0}; }
double one(int) { return 1.0; }
double ring_factor(int n) { return static_cast<double>(n - 1) / n; }

// all_reduce: every rank ends with the reduction of every rank's input.
double all_reduce_factor(int n) { return 2.0 * (n - 1) / n; }
void all_reduce_mpi(const MpiCall& m) {
  check_mpi(MPI_Allreduce(m.in_place ? MPI_IN_PLACE : m.send, m.recv, m.count, m.type, m.op, m.comm), "MPI_Allreduce");
}

// all_gather: every rank ends with every rank's input, in rank order.
CollCounts all_gather_counts(u64 n, int nranks) {
  const u64 per = n / nranks;
  return {per, per * nranks, per, per, 0};  // in place: input at rank * per (offset multiplied by rank later)
}
void all_gather_mpi(const MpiCall& m) {
  if (m.in_place)
    check_mpi(MPI_Allgather(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, m.recv, m.count, m.type, m.comm), "MPI_Allgather");
  else
    check_mpi(MPI_Allgather(m.send, m.count, m.type, m.recv, m.count, m.type, m.comm), "MPI_Allgather");
}

// reduce_scatter: rank r ends with block r of the reduction.
CollCounts reduce_scatter_counts(u64 n, int nranks) {
  const u64 per = n / nranks;
  return {per * nranks, per, per, 0, per};  // in place: output at rank * per of the input buffer
}
void reduce_scatter_mpi(const MpiCall& m) {
  check_mpi(MPI_Reduce_scatter_block(m.in_place ? MPI_IN_PLACE : m.send, m.recv, m.count, m.type, m.op, m.comm),
            "MPI_Reduce_scatter_block");
}

// broadcast: every rank ends with the root's input.
void broadcast_mpi(const MpiCall& m) { check_mpi(MPI_Bcast(m.recv, m.count, m.type, m.root, m.comm), "MPI_Bcast"); }

// reduce: the root ends with the reduction of every rank's input.
void reduce_mpi(const MpiCall& m) {
  if (m.in_place)
    check_mpi(MPI_Reduce(m.rank == m.root ? MPI_IN_PLACE : m.recv, m.recv, m.count, m.type, m.op, m.root, m.comm),
              "MPI_Reduce");
  else
    check_mpi(MPI_Reduce(m.send, m.recv, m.count, m.type, m.op, m.root, m.comm), "MPI_Reduce");
}

// alltoall: block p of rank r's input ends as block r of rank p's output.
CollCounts alltoall_counts(u64 n, int nranks) {
  const u64 per = n / nranks;
  return {per * nranks, per * nranks, per, 0, 0};
}
void alltoall_mpi(const MpiCall& m) {
  if (m.in_place)
    check_mpi(MPI_Alltoall(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, m.recv, m.count, m.type, m.comm), "MPI_Alltoall");
  else
    check_mpi(MPI_Alltoall(m.send, m.count, m.type, m.recv, m.count, m.type, m.comm), "MPI_Alltoall");
}

// sendrecv: each rank sends to the next and receives from the previous (a ring shift).
void sendrecv_mpi(const MpiCall& m) {
  const int next = (m.rank + 1) % m.nranks, prev = (m.rank - 1 + m.nranks) % m.nranks;
  if (m.in_place)
    check_mpi(MPI_Sendrecv_replace(m.recv, m.count, m.type, next, 7, prev, 7, m.comm, MPI_STATUS_IGNORE),
              "MPI_Sendrecv_replace");
  else
    check_mpi(
        MPI_Sendrecv(m.send, m.count, m.type, next, 7, m.recv, m.count, m.type, prev, 7, m.comm, MPI_STATUS_IGNORE),
        "MPI_Sendrecv");
}

// name, kind, reduces, rooted, counts, busbw factor and its text, NCCL's name, MPI's one buffer, MPI call; one row per
// CollKind, in its order.
constexpr CollectiveOp kCollectives[] = {
    {"all_reduce", CollKind::all_reduce, true, false, same_count, all_reduce_factor, "2(n-1)/n", "AllReduce", false,
     all_reduce_mpi},
    {"all_gather", CollKind::all_gather, false, false, all_gather_counts, ring_factor, "(n-1)/n", "AllGather", false,
     all_gather_mpi},
    {"reduce_scatter", CollKind::reduce_scatter, true, false, reduce_scatter_counts, ring_factor, "(n-1)/n",
     "ReduceScatter", false, reduce_scatter_mpi},
    {"broadcast", CollKind::broadcast, false, true, same_count, one, "1", "Broadcast", true, broadcast_mpi},
    {"reduce", CollKind::reduce, true, true, same_count, one, "1", "Reduce", false, reduce_mpi},
    {"alltoall", CollKind::alltoall, false, false, alltoall_counts, ring_factor, "(n-1)/n", "", false, alltoall_mpi},
    {"sendrecv", CollKind::sendrecv, false, false, same_count, one, "1", "", false, sendrecv_mpi},
};
static_assert(indexed_by_kind(kCollectives), "collectives: one row per CollKind, in the enum's order");

}  // namespace

const std::vector<CollectiveOp>& collectives() {
  static const std::vector<CollectiveOp> table(std::begin(kCollectives), std::end(kCollectives));
  return table;
}

const CollectiveOp& collective(CollKind kind) { return collectives()[static_cast<std::size_t>(kind)]; }

const CollectiveOp* find_collective(std::string_view name) {
  for (const auto& c : collectives())
    if (c.name == name) return &c;
  return nullptr;
}

std::string collectives_that(bool (*has)(const CollectiveOp& op)) {
  std::vector<std::string_view> names;
  for (const auto& c : collectives())
    if (has(c)) names.push_back(c.name);
  std::string out;
  for (std::size_t i = 0; i < names.size(); ++i)
    out += std::string(i == 0 ? "" : i + 1 == names.size() ? " and " : ", ") + std::string(names[i]);
  return out;
}

double combine_rank_times(const std::vector<double>& t, RankCombine how) {
  switch (how) {
    case RankCombine::rank0:
      return t.front();
    case RankCombine::min:
      return *std::min_element(t.begin(), t.end());
    case RankCombine::max:
      return *std::max_element(t.begin(), t.end());
    case RankCombine::average:
      break;
  }
  return std::accumulate(t.begin(), t.end(), 0.0) / static_cast<double>(t.size());
}

double CollectiveOp::busbw_gbps(std::uint64_t bytes, double seconds, int nranks) const {
  return algbw_gbps(bytes, seconds) * busbw_factor(nranks);
}

}  // namespace fabricbench::ops
