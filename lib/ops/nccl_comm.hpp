// The owner of one NCCL communicator (a back end's, or a splitter's parent), the checks of NCCL's and CUDA's return
// codes, a stream's owner, and the NCCL back end adopting a communicator split from a parent: what
// nccl_coll_backend.cpp, nccl_comm_splitter.cpp and nccl_p2p.cpp share (internal to lib/ops, built only with NCCL).
#pragma once
#include <cuda_runtime.h>
#include <nccl.h>

#include <atomic>
#include <chrono>
#include <memory>

#include "fabricbench/ops/coll_backend.hpp"
#include "fabricbench/ops/p2p_exchange.hpp"

namespace fabricbench::ops {

using NcclClock = std::chrono::steady_clock;

void check_cuda(cudaError_t rc, const char* what);
void check_nccl(ncclResult_t rc, const char* what);

// The owner of one non-blocking CUDA stream (the NCCL back end's, fabric-p2p's over NCCL).
struct Stream {
  cudaStream_t s = nullptr;
  Stream() { check_cuda(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking), "cudaStreamCreate"); }
  ~Stream() { cudaStreamDestroy(s); }
  Stream(const Stream&) = delete;
  Stream& operator=(const Stream&) = delete;
};

// Destroyed normally, or aborted (from the watchdog thread, or past a deadline) when a step hangs. Non-blocking when
// a caller bounds its calls by a deadline: NCCL calls then return at once (ncclInProgress) and settle() polls until
// they took effect, so that not even a connection set up lazily inside ncclAllReduce can hold the thread past the
// deadline. Blocking otherwise (fabric-coll: nothing added to the launch path).
class NcclComm {
 public:
  // A new communicator over every rank of `world`: NCCL's unique id from rank 0 over MPI, then ncclCommInitRank.
  // `split_share`: the communicators split from this one share its resources (config.splitShare). `deadline`
  // (non-blocking only) bounds the creation: past it the communicator is aborted and Hung thrown.
  NcclComm(const runtime::Communicator& world, bool nonblocking, bool split_share = false,
           const NcclClock::time_point* deadline = nullptr);
  // Adopts `comm`, created elsewhere (ncclCommSplit): from here on this owner destroys or aborts it. `aborted`, when
  // given, is set by abort() (the splitter's record that one of its children was aborted).
  NcclComm(ncclComm_t comm, bool nonblocking, std::shared_ptr<std::atomic<bool>> aborted);
  ~NcclComm();
  NcclComm(const NcclComm&) = delete;
  NcclComm& operator=(const NcclComm&) = delete;

  ncclComm_t get() const { return comm_; }
  bool nonblocking() const { return nonblocking_; }
  // Non-blocking mode: wait until the last call took effect; past `deadline` (if given) abort and throw Hung.
  void settle(const NcclClock::time_point* deadline);
  void abort() noexcept;
  bool aborted() const { return aborted_.load(); }
  // A remote failure: NCCL's own words, at once.
  void check_async() const;
  // Until `stream` is idle, polling as nccl-tests does (cudaStreamQuery, then NCCL's asynchronous error), so that a
  // remote failure surfaces instead of a silent hang; past `deadline` (if given) abort and throw Hung.
  void wait(cudaStream_t stream, const NcclClock::time_point* deadline);
  // What a rank stuck as a GPU that never starts its operations does (the test hook FABRICBENCH_TEST_STALL_NCCL):
  // sleeps until `deadline`, or for good without one (until the watchdog ends the process at --timeout), then aborts
  // and throws Hung.
  [[noreturn]] void stall(const NcclClock::time_point* deadline);

 private:
  ncclComm_t comm_ = nullptr;
  bool nonblocking_;
  std::atomic<bool> aborted_{false};
  std::shared_ptr<std::atomic<bool>> family_aborted_;
};

// What bounds one exchange: a deadline (fabric-sweep's pairs with --timeout; a non-blocking communicator) past which
// the communicator is aborted and Hung thrown, and the stall test hook (this rank launches nothing and waits for the
// deadline, as on a stuck GPU).
struct NcclBound {
  const NcclClock::time_point* deadline = nullptr;
  bool stalled = false;
};

// The exchanges of nccl_p2p.hpp on `comm` and `stream` (fabric-p2p's NcclP2P, the NCCL back end's exchange()).
// A non-blocking communicator settles after each call (NcclComm::settle); every wait for the stream is
// NcclComm::wait, under `bound`.
PairMeasurement nccl_exchange(NcclComm& comm, cudaStream_t stream, const P2PTest& test, const Exchanger& x,
                              NcclBound bound = {});

// One side of mpiGraph's steps over NCCL: the communicator and stream a rank's sends, or its receives, go on.
struct NcclLane {
  NcclComm& comm;
  cudaStream_t stream;
};

// mpiGraph's steps over NCCL (Exchanger::mpigraph_steps: fabric-sweep's shift and duplex rounds on GPUs): first the
// connections, lane by lane (`lanes`: the lanes of this rank's sends and receives, of `count`); then each step after
// a barrier of x.comm and the ranks' agreement that none passed the deadline, this rank's window of sends to x.peer on
// `sends` and of receives from x.from on `receives` (either MPI_PROC_NULL: none) in one NCCL group, each lane's stream
// waited for on its own. NCCL ends a rank's operations on one communicator together, so the sends and receives go on
// different ones (Round::lanes): with both on one, a rank's next receive waited for its last send, and one slow link
// paced every link of a ring (6 hosts on the GPU machine, one link shaped to 25 MB/s: all 12 links of its duplex round
// read 23-38 MB/s; docs/fabric-sweep.md). A step to x.peer lasts the later of this rank's sends and x.peer's receives,
// as over MPI. A connection or step past the deadline (its communicators aborted on that rank) ends the steps on every
// rank at the next barrier; m.hung: this rank's sends, or x.peer's receives, did not end.
PairMeasurement nccl_shift_steps(NcclLane sends, NcclLane receives, ShiftLanes lanes, const Exchanger& x,
                                 NcclBound bound);

// The NCCL back end over `group` (the MPI communicator of the same ranks, in the same order) with `comm` adopted.
std::unique_ptr<CollBackend> adopt_nccl_comm(const runtime::Communicator& group, std::unique_ptr<NcclComm> comm);

}  // namespace fabricbench::ops
