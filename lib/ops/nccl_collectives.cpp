// The NCCL call of each collective, indexed by CollKind as collectives() is (collective.cpp has the rest of each one:
// counts, factor, MPI).
#include "nccl_collectives.hpp"

#include "nccl_comm.hpp"

namespace fabricbench::ops {
namespace {

void all_reduce_nccl(const NcclCall& c) {
  check_nccl(ncclAllReduce(c.send, c.recv, c.count, c.type, c.op, c.comm, c.stream), "ncclAllReduce");
}

void all_gather_nccl(const NcclCall& c) {
  check_nccl(ncclAllGather(c.send, c.recv, c.count, c.type, c.comm, c.stream), "ncclAllGather");
}

void reduce_scatter_nccl(const NcclCall& c) {
  check_nccl(ncclReduceScatter(c.send, c.recv, c.count, c.type, c.op, c.comm, c.stream), "ncclReduceScatter");
}

void broadcast_nccl(const NcclCall& c) {
  check_nccl(ncclBroadcast(c.send, c.recv, c.count, c.type, c.root, c.comm, c.stream), "ncclBroadcast");
}

void reduce_nccl(const NcclCall& c) {
  check_nccl(ncclReduce(c.send, c.recv, c.count, c.type, c.op, c.root, c.comm, c.stream), "ncclReduce");
}

// Grouped point-to-point, as nccl-tests does (portable to NCCL versions without ncclAlltoAll).
void alltoall_nccl(const NcclCall& c) {
  const std::size_t block = c.count * c.type_size;
  check_nccl(ncclGroupStart(), "ncclGroupStart");
  for (int p = 0; p < c.nranks; ++p) {
    check_nccl(ncclSend(static_cast<const char*>(c.send) + p * block, c.count, c.type, p, c.comm, c.stream),
               "ncclSend");
    check_nccl(ncclRecv(static_cast<char*>(c.recv) + p * block, c.count, c.type, p, c.comm, c.stream), "ncclRecv");
  }
  check_nccl(ncclGroupEnd(), "ncclGroupEnd");
}

void sendrecv_nccl(const NcclCall& c) {
  check_nccl(ncclGroupStart(), "ncclGroupStart");
  check_nccl(ncclSend(c.send, c.count, c.type, (c.rank + 1) % c.nranks, c.comm, c.stream), "ncclSend");
  check_nccl(ncclRecv(c.recv, c.count, c.type, (c.rank - 1 + c.nranks) % c.nranks, c.comm, c.stream), "ncclRecv");
  check_nccl(ncclGroupEnd(), "ncclGroupEnd");
}

struct Row {
  CollKind kind;
  NcclLaunch launch;
};
constexpr Row kCalls[] = {{CollKind::all_reduce, all_reduce_nccl},
                          {CollKind::all_gather, all_gather_nccl},
                          {CollKind::reduce_scatter, reduce_scatter_nccl},
                          {CollKind::broadcast, broadcast_nccl},
                          {CollKind::reduce, reduce_nccl},
                          {CollKind::alltoall, alltoall_nccl},
                          {CollKind::sendrecv, sendrecv_nccl}};
static_assert(indexed_by_kind(kCalls), "kCalls: one NCCL call per CollKind, in the enum's order");

}  // namespace

NcclLaunch nccl_launch(CollKind kind) { return kCalls[static_cast<std::size_t>(kind)].launch; }

}  // namespace fabricbench::ops
