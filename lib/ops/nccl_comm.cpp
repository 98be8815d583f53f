// The owner of one NCCL communicator: created over MPI (unique id from rank 0) or adopted from a split, settled
// against a deadline in non-blocking mode, destroyed or aborted once.
#include "nccl_comm.hpp"

#include <fmt/format.h>

#include <thread>

#include "fabricbench/error.hpp"

namespace fabricbench::ops {

void check_cuda(cudaError_t rc, const char* what) {
  if (rc != cudaSuccess) throw Error::runtime(fmt::format("{} failed: {}", what, cudaGetErrorString(rc)));
}
void check_nccl(ncclResult_t rc, const char* what) {
  if (rc != ncclSuccess && rc != ncclInProgress)
    throw Error::runtime(fmt::format("{} failed: {}", what, ncclGetErrorString(rc)));
}

NcclComm::NcclComm(const runtime::Communicator& world, bool nonblocking, bool split_share,
                   const NcclClock::time_point* deadline)
    : nonblocking_(nonblocking) {
  // Rank 0's id, or its failure, goes to every rank: a rank 0 that threw before the broadcast would leave the others
  // in it while it went on to its next MPI call.
  struct {
    ncclResult_t rc;
    ncclUniqueId id;
  } shared{ncclSuccess, {}};
  if (world.rank() == 0) shared.rc = ncclGetUniqueId(&shared.id);
  runtime::check_mpi(MPI_Bcast(&shared, sizeof shared, MPI_BYTE, 0, world.get()), "MPI_Bcast(ncclUniqueId)");
  if (shared.rc != ncclSuccess)
    throw Error::runtime(fmt::format("ncclGetUniqueId failed on rank 0: {}", ncclGetErrorString(shared.rc)));
  const ncclUniqueId& id = shared.id;
  if (!nonblocking && !split_share) {
    check_nccl(ncclCommInitRank(&comm_, world.size(), id, world.rank()), "ncclCommInitRank");
    return;
  }
  ncclConfig_t config = NCCL_CONFIG_INITIALIZER;
  config.blocking = nonblocking ? 0 : 1;
#if NCCL_VERSION_CODE >= NCCL_VERSION(2, 18, 0)
  config.splitShare = split_share ? 1 : 0;
#endif
  const ncclResult_t rc = ncclCommInitRankConfig(&comm_, world.size(), id, world.rank(), &config);
  if (rc != ncclSuccess && rc != ncclInProgress) {
    abort();  // a communicator half made is freed without waiting for its peers
    check_nccl(rc, "ncclCommInitRankConfig");
  }
  try {
    settle(deadline);
  } catch (...) {
    abort();  // no destructor runs for a constructor that throws
    throw;
  }
}

NcclComm::NcclComm(ncclComm_t comm, bool nonblocking, std::shared_ptr<std::atomic<bool>> aborted)
    : comm_(comm), nonblocking_(nonblocking), family_aborted_(std::move(aborted)) {}

NcclComm::~NcclComm() {
  if (comm_ && !aborted_.load()) ncclCommDestroy(comm_);
}

void NcclComm::settle(const NcclClock::time_point* deadline) {
  if (!nonblocking_) return;
  for (;;) {
    ncclResult_t state = ncclInProgress;
    ncclCommGetAsyncError(comm_, &state);
    if (state == ncclSuccess) return;
    if (state != ncclInProgress) check_async();
    if (deadline && NcclClock::now() > *deadline) {
      abort();
      throw Hung("an NCCL call did not take effect by its deadline; its communicator was aborted");
    }
  }
}

void NcclComm::abort() noexcept {
  if (aborted_.exchange(true)) return;
  if (family_aborted_) family_aborted_->store(true);
  if (comm_) ncclCommAbort(comm_);
}

void NcclComm::check_async() const {
  ncclResult_t async = ncclSuccess;
  ncclCommGetAsyncError(comm_, &async);
  if (async != ncclSuccess && async != ncclInProgress)
    throw Error::runtime(
        fmt::format("NCCL asynchronous error: {}: {}", ncclGetErrorString(async), ncclGetLastError(comm_)));
}

void NcclComm::wait(cudaStream_t stream, const NcclClock::time_point* deadline) {
  for (unsigned polls = 0;; ++polls) {
    const cudaError_t rc = cudaStreamQuery(stream);
    if (rc == cudaSuccess) return;
    if (rc != cudaErrorNotReady) check_cuda(rc, "cudaStreamQuery");
    check_async();
    if (deadline && (polls & 1023) == 0 && NcclClock::now() > *deadline) {
      abort();
      throw Hung("an NCCL operation did not finish by its deadline; its communicator was aborted");
    }
  }
}

void NcclComm::stall(const NcclClock::time_point* deadline) {
  while (!deadline || NcclClock::now() <= *deadline) std::this_thread::sleep_for(std::chrono::milliseconds(10));
  abort();
  throw Hung("test hook: this rank's NCCL operation never started");
}

}  // namespace fabricbench::ops
