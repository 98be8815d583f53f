// Collectives through NCCL: one rank per GPU, a communicator of its own (unique id shared over MPI) or one split
// from a parent (nccl_comm_splitter.cpp), every operation on one stream. Fill and check run as kernels on the device
// (coll_kernels.cu).
#include <cuda_runtime.h>
#include <fmt/format.h>
#include <nccl.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <optional>
#include <thread>
#include <vector>

#include "coll_kernels.hpp"
#include "fabricbench/error.hpp"
#include "fabricbench/memory/buffer.hpp"
#include "fabricbench/ops/coll_backend.hpp"
#include "fabricbench/test_hooks.hpp"
#include "fabricbench/timing/iteration_timer.hpp"
#include "nccl_collectives.hpp"
#include "nccl_comm.hpp"

namespace fabricbench::ops {
namespace {

ncclDataType_t nccl_type(DataType t) {
  static constexpr ncclDataType_t types[] = {ncclInt8,   ncclUint8,   ncclInt32,   ncclUint32,  ncclInt64,
                                             ncclUint64, ncclFloat16, ncclFloat32, ncclFloat64, ncclBfloat16};
  return types[static_cast<int>(t)];
}
ncclRedOp_t nccl_op(RedOp op) {
  static constexpr ncclRedOp_t ops[] = {ncclSum, ncclProd, ncclMin, ncclMax, ncclAvg};
  return ops[static_cast<int>(op)];
}

// Owners of CUDA objects (the stream's is in nccl_comm.hpp).
struct Event {
  cudaEvent_t e = nullptr;
  Event() { check_cuda(cudaEventCreate(&e), "cudaEventCreate"); }
  ~Event() {
    if (e) cudaEventDestroy(e);
  }
  Event(Event&& o) noexcept : e(o.e) { o.e = nullptr; }
  Event(const Event&) = delete;
};
struct Graph {
  cudaGraph_t graph = nullptr;
  cudaGraphExec_t exec = nullptr;
  ~Graph() {
    if (exec) cudaGraphExecDestroy(exec);
    if (graph) cudaGraphDestroy(graph);
  }
};

using Clock = NcclClock;

class NcclCollBackend : public CollBackend {
 public:
  // Over `world` (every rank of it, in its order) with `comm`, a new communicator or one split from a parent; the GPU
  // is already current (make_nccl_backend, make_nccl_splitter).
  NcclCollBackend(const runtime::Communicator& world, std::unique_ptr<NcclComm> comm)
      : world_(world), rank_(world.rank()), nranks_(world.size()), comm_(std::move(comm)) {
    check_cuda(cudaMalloc(&wrong_, sizeof(unsigned long long)), "cudaMalloc");
    // Test hook FABRICBENCH_TEST_STALL_NCCL=RANK: that world rank's operations never start, as on a stuck GPU or
    // link: its peers wait for it, and it waits until its own deadline (if any) like they do.
    if (const int stalled = TestHooks::current().stall_nccl_rank; stalled >= 0) {
      int me = -1;
      MPI_Comm_rank(MPI_COMM_WORLD, &me);
      skip_launches_ = stalled == me;
    }
  }
  ~NcclCollBackend() override { cudaFree(wrong_); }

  std::string name() const override { return "nccl"; }
  bool supports(DataType, RedOp) const override { return true; }
  bool synchronous() const override { return false; }
  bool in_place_defined(const CollectiveOp& op) const override { return !op.nccl_name.empty(); }

  void allocate(std::size_t send_bytes, std::size_t recv_bytes) override {
    send_.emplace(memory::MemoryKind::device, send_bytes);
    recv_.emplace(memory::MemoryKind::device, recv_bytes);
  }

  void prepare(const CollCase& c) override {
    launches_ = 0;  // the next launch works on the prepared (unshifted) data: the check's launch
    check_cuda(cudaMemsetAsync(recv_->data(), 0xff, recv_->size(), stream_.s), "cudaMemsetAsync");
    launch_fill(input(c), c.dtype, c.counts.send, c.rule(nranks_, rank_), rank_, stream_.s);
    check_cuda(cudaGetLastError(), "fill kernel");
    wait();
  }

  void launch(const CollCase& c) override {
    // Stuck as a GPU that never starts the operation. Returning at once instead let a one-rank job (no peer left
    // waiting) finish as if nothing had stalled.
    if (skip_launches_) comm_->stall(deadline());
    const auto t = nccl_type(c.dtype);
    const auto n = c.counts.param;
    const auto ts = static_cast<std::size_t>(type_size(c.dtype));
    // As nccl-tests: each launch moves both buffers on by one message across the allocation, so that a message the
    // GPU's L2 cache could hold (H200: 60 MB) is not read hot from it every iteration. Without this, 1-8 MiB
    // figures read 5-20% above nccl-tests' (tests/perf/nccl_cache_rotation.sh).
    const std::size_t total = c.counts.bytes(static_cast<int>(ts));
    const std::size_t steps = total > 0 ? std::max<std::size_t>(1, std::min(send_->size(), recv_->size()) / total) : 1;
    const std::size_t shift = total * (launches_++ % steps);
    const void* s = static_cast<const char*>(input(c)) + shift;
    void* r = static_cast<char*>(output(c)) + shift;
    nccl_launch(c.op->kind)({s, r, n, t, ts, nccl_op(c.redop), c.root, rank_, nranks_, comm_->get(), stream_.s});
    comm_->settle(deadline());
  }

  void wait() override {
    // Past a deadline (fabric-sweep's pair tests) the communicator is aborted and the pair reported as hung.
    comm_->wait(stream_.s, deadline());
  }

  bool set_deadline(std::chrono::steady_clock::time_point deadline) override {
    if (!comm_->nonblocking()) return false;  // a blocking communicator cannot be bounded from this thread
    deadline_ = deadline;
    has_deadline_ = true;
    return true;
  }

  std::uint64_t count_wrong(const CollCase& c) override {
    check_cuda(cudaMemsetAsync(wrong_, 0, sizeof(unsigned long long), stream_.s), "cudaMemsetAsync");
    launch_check(output(c), c.dtype, c.counts.recv, c.rule(nranks_, rank_), wrong_, stream_.s);
    check_cuda(cudaGetLastError(), "check kernel");
    unsigned long long wrong = 0;
    check_cuda(cudaMemcpyAsync(&wrong, wrong_, sizeof wrong, cudaMemcpyDeviceToHost, stream_.s), "cudaMemcpyAsync");
    check_cuda(cudaStreamSynchronize(stream_.s), "cudaStreamSynchronize");
    return wrong;
  }

  void flip_output_byte(const CollCase& c) override {
    std::uint8_t b = 0;
    check_cuda(cudaMemcpy(&b, output(c), 1, cudaMemcpyDeviceToHost), "cudaMemcpy");
    b ^= 0xff;
    check_cuda(cudaMemcpy(output(c), &b, 1, cudaMemcpyHostToDevice), "cudaMemcpy");
  }

  CaseTiming time_on_device(const CollCase& c, const TimingPlan& plan) override {
    CaseTiming t;
    if (plan.mode == TimingMode::events) {
      std::vector<Event> marks(static_cast<std::size_t>(plan.iterations) + 1);
      check_cuda(cudaEventRecord(marks[0].e, stream_.s), "cudaEventRecord");
      for (int i = 0; i < plan.iterations; ++i) {
        launch(c);
        check_cuda(cudaEventRecord(marks[i + 1].e, stream_.s), "cudaEventRecord");
      }
      wait();
      float total_ms = 0;
      for (int i = 0; i < plan.iterations; ++i) {
        float ms = 0;
        check_cuda(cudaEventElapsedTime(&ms, marks[i].e, marks[i + 1].e), "cudaEventElapsedTime");
        t.laps_us.push_back(ms * 1e3);
        total_ms += ms;
      }
      t.seconds_per_op = total_ms * 1e-3 / plan.iterations;
      return t;
    }
    Graph g;
    check_cuda(cudaStreamBeginCapture(stream_.s, cudaStreamCaptureModeThreadLocal), "cudaStreamBeginCapture");
    for (int i = 0; i < plan.iterations; ++i) launch(c);
    check_cuda(cudaStreamEndCapture(stream_.s, &g.graph), "cudaStreamEndCapture");
    check_cuda(cudaGraphInstantiate(&g.exec, g.graph, 0), "cudaGraphInstantiate");
    check_cuda(cudaGraphLaunch(g.exec, stream_.s), "cudaGraphLaunch");  // untimed: first launch uploads the graph
    wait();
    runtime::check_mpi(MPI_Barrier(world_.get()), "MPI_Barrier");
    timing::IterationTimer timer(1);
    timer.start();
    for (int l = 0; l < plan.graph_launches; ++l) check_cuda(cudaGraphLaunch(g.exec, stream_.s), "cudaGraphLaunch");
    wait();
    timer.stop();
    t.seconds_per_op = timer.elapsed_s() / (static_cast<double>(plan.iterations) * plan.graph_launches);
    return t;
  }

  void abort() noexcept override { comm_->abort(); }
  PairMeasurement exchange(const P2PTest& test, const Exchanger& x) override {
    return nccl_exchange(*comm_, stream_.s, test, x, {deadline(), skip_launches_});
  }
  PairMeasurement shift_steps(const Exchanger& x, CollBackend& receives, ShiftLanes lanes) override {
    auto* other = dynamic_cast<NcclCollBackend*>(&receives);
    if (!other) throw Error::internal("nccl back end: a shift step's receives on a back end of another kind");
    return nccl_shift_steps({*comm_, stream_.s}, {*other->comm_, other->stream_.s}, lanes, x,
                            {deadline(), skip_launches_});
  }

 private:
  const Clock::time_point* deadline() const { return has_deadline_ ? &deadline_ : nullptr; }
  // nccl-tests' placement: in place, input at recv + send_inplace_offset * rank, output at
  // recv + recv_inplace_offset * rank.
  void* input(const CollCase& c) {
    const auto ts = static_cast<std::size_t>(type_size(c.dtype));
    return c.in_place ? static_cast<char*>(recv_->data()) + c.counts.send_inplace_offset * rank_ * ts : send_->data();
  }
  void* output(const CollCase& c) {
    const auto ts = static_cast<std::size_t>(type_size(c.dtype));
    return c.in_place ? static_cast<char*>(recv_->data()) + c.counts.recv_inplace_offset * rank_ * ts : recv_->data();
  }

  const runtime::Communicator& world_;
  int rank_, nranks_;
  std::size_t launches_ = 0;  // since prepare(): picks each launch's buffer offset
  bool skip_launches_ = false;
  bool has_deadline_ = false;
  Clock::time_point deadline_;
  Stream stream_;
  std::unique_ptr<NcclComm> comm_;
  std::optional<memory::Buffer> send_, recv_;
  unsigned long long* wrong_ = nullptr;
};

}  // namespace

std::unique_ptr<CollBackend> make_nccl_backend(const runtime::Communicator& world, int gpu, bool abortable) {
  check_cuda(cudaSetDevice(gpu), "cudaSetDevice");
  return std::make_unique<NcclCollBackend>(world, std::make_unique<NcclComm>(world, abortable));
}

std::unique_ptr<CollBackend> adopt_nccl_comm(const runtime::Communicator& group, std::unique_ptr<NcclComm> comm) {
  return std::make_unique<NcclCollBackend>(group, std::move(comm));
}

}  // namespace fabricbench::ops
