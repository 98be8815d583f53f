// A collective back end (MPI or NCCL): owns its buffers and library handles, fills inputs, runs one operation,
// waits, and counts wrong output elements. What every tool shares is here too: the choice of back end
// (--backend: kBackendKinds, kBackendChoices), the one timing loop (time_case) and one measured case, prepare -> time
// -> check (run_case), used by fabric-coll and fabric-sweep alike.
#pragma once
#include <chrono>
#include <cmath>
#include <cstdint>
#include <limits>
#include <memory>
#include <string>
#include <string_view>
#include <type_traits>
#include <vector>

#include "fabricbench/cli/choice.hpp"
#include "fabricbench/error.hpp"
#include "fabricbench/ops/collective.hpp"
#include "fabricbench/ops/datatype.hpp"
#include "fabricbench/runtime/mpi.hpp"

namespace fabricbench::ops {

// One measured case: which operation, on what data, at which size.
struct CollCase {
  const CollectiveOp* op;
  DataType dtype;
  RedOp redop;
  int root;
  bool in_place;
  CollCounts counts;
  ElementRule rule(int nranks, int rank) const {
    return {op->kind, redop, nranks, rank, root, counts.param, op->reduces};
  }
};

// A wait() passed its deadline: the back end aborted its communicator (fabric-sweep records the pair as hung).
struct Hung : Error {
  explicit Hung(const std::string& what) : Error(ExitStatus::runtime, what) {}
};

enum class TimingMode {
  host,      // host clock around back-to-back operations, then one wait (nccl-tests' default)
  blocking,  // wait after every operation: per-iteration samples from the host clock
  events,    // CUDA events around every operation (NCCL): per-iteration samples
  graph      // the timed operations captured in one CUDA graph and launched once (NCCL)
};

struct TimingPlan {
  TimingMode mode = TimingMode::host;
  int warmup = 5;
  int iterations = 20;
  int graph_launches = 0;  // graph mode: how often the captured iterations are launched
  // Host and blocking modes: repeat the timed block of `iterations` until about `min_time_s` was timed (rank 0's
  // first block decides the count for all; timing::TimedBlocks); the figure is the median block. 0: one block.
  double min_time_s = 0;
};

struct CaseTiming {
  double seconds_per_op = 0;    // this rank's mean time per operation (the median block's)
  std::vector<double> laps_us;  // per-iteration times, when the mode gives them
  int blocks = 1;               // timed blocks of `iterations`
  double spread = NAN;          // (p90 - p10) / median of the blocks' mean times; NaN with one block
};

struct P2PTest;
struct Exchanger;
struct PairMeasurement;

// Of a ring step's communicators (one per lane, fabric-sweep's Round::lanes): the lane of a rank's sends, of its
// receives, and how many there are.
struct ShiftLanes {
  int send = 0, receive = 0, count = 1;
};

class CollBackend {
 public:
  virtual ~CollBackend() = default;
  virtual std::string name() const = 0;
  virtual bool supports(DataType t, RedOp op) const = 0;
  // Whether the library defines this operation in place. NCCL's point-to-point (alltoall, sendrecv: no nccl_name)
  // does not: sending and receiving the same region at once is a race (seen on H200: wrong elements in-place only).
  virtual bool in_place_defined(const CollectiveOp& op) const = 0;
  // True when the library call returns only once the operation is complete (MPI).
  virtual bool synchronous() const = 0;
  virtual void allocate(std::size_t send_bytes, std::size_t recv_bytes) = 0;
  // Fills this rank's input for the case and poisons the output (outside any timed region).
  virtual void prepare(const CollCase& c) = 0;
  virtual void launch(const CollCase& c) = 0;
  virtual void wait() = 0;
  // Number of output elements of this rank that differ from ElementRule::expected, after prepare+launch+wait.
  virtual std::uint64_t count_wrong(const CollCase& c) = 0;
  // Test hook (FABRICBENCH_TEST_FLIP_BYTE): corrupt the first byte of this rank's output before the check.
  virtual void flip_output_byte(const CollCase& c) = 0;
  // events/graph timing (NCCL only); the host modes use the shared loop.
  virtual CaseTiming time_on_device(const CollCase& c, const TimingPlan& plan);
  // Called from the watchdog thread when a step hangs: abort library communicators so that nothing stays stuck.
  virtual void abort() noexcept {}
  // A back end that can abort one communicator (NCCL) ends a wait() that passes `deadline` by aborting it and
  // throwing Hung; the others (MPI cannot abort one communicator) ignore it and return false.
  virtual bool set_deadline(std::chrono::steady_clock::time_point /*deadline*/) { return false; }
  // Point-to-point between two ranks of this back end's communicator over its library, device buffers (NCCL: the
  // exchanges of nccl_p2p.hpp on its communicator and stream; fabric-sweep's GPU p2p metrics). `x.me` and `x.peer`
  // are ranks of this communicator, `x.comm` the MPI communicator of just the two. Error::internal elsewhere.
  virtual PairMeasurement exchange(const P2PTest& test, const Exchanger& x);
  // mpiGraph's steps (x.mpigraph_steps; x.comm the MPI communicator of every rank of this one, in the same order):
  // this rank's sends to x.peer on this back end's communicator and its receives from x.from on `receives`' (another
  // of the same kind over the same ranks; this one where the rank does only one of them), so that neither waits for
  // the other; `lanes` which of the ring's communicators they are (NCCL: nccl_shift_steps connects lane by lane).
  // Error::internal elsewhere.
  virtual PairMeasurement shift_steps(const Exchanger& x, CollBackend& receives, ShiftLanes lanes);
};

// The one timing loop: warm-up, barrier, `iterations` timed operations, mean time per op and laps.
CaseTiming time_case(CollBackend& backend, const CollCase& c, const TimingPlan& plan,
                     const runtime::Communicator& world);

struct CaseResult {
  CaseTiming timing;
  std::uint64_t wrong = 0;  // this rank's wrong output elements (0 without the check)
};
// One measured case: inputs prepared, timed, then with `check` one more prepared run whose output is checked
// (`flip_byte`: the test hook corrupts one output byte first).
CaseResult run_case(CollBackend& backend, const CollCase& c, const TimingPlan& plan, const runtime::Communicator& comm,
                    bool check, bool flip_byte = false);

// The one --backend of every tool. fabric-p2p takes a kind (kBackendKinds); fabric-coll and fabric-sweep a choice
// (kBackendChoices), where auto is NCCL when this build has it and a GPU is visible (choose_backend).
enum class BackendKind { mpi, nccl };
inline constexpr cli::Choice<BackendKind> kBackendKinds[] = {{"mpi", BackendKind::mpi}, {"nccl", BackendKind::nccl}};
std::string_view to_string(BackendKind kind);
enum class BackendChoice { automatic, nccl, mpi };
inline constexpr cli::Choice<BackendChoice> kBackendChoices[] = {
    {"auto", BackendChoice::automatic}, {"nccl", BackendChoice::nccl}, {"mpi", BackendChoice::mpi}};
// The kind `choice` stands for here; Error::usage naming `option` for nccl in a build without NCCL.
BackendKind choose_backend(BackendChoice choice, std::string_view option = "--backend");

// What MPI's predefined datatypes and reductions cover (no half, bfloat16 or average): the MPI back end supports
// these alone, and fabric-coll's --backend mpi refuses or leaves out the others by this.
bool mpi_has(DataType t);
bool mpi_has(RedOp op);
// The back end of `kind` over `comm`; `gpu` for NCCL, `device_memory` for MPI (CUDA-aware MPI). `abortable`: NCCL
// builds a non-blocking communicator so that set_deadline() can bound every call (fabric-sweep's pairs).
std::unique_ptr<CollBackend> make_backend(BackendKind kind, const runtime::Communicator& comm, int gpu,
                                          bool device_memory = false, bool abortable = false);
std::unique_ptr<CollBackend> make_mpi_backend(const runtime::Communicator& world, bool device_memory);
std::unique_ptr<CollBackend> make_nccl_backend(const runtime::Communicator& world, int gpu, bool abortable = false);

// The splits were given up (every rank of the parent throws it at once): the parent could not be created, a split
// failed, or a child was aborted since the last split. The message says why; the caller goes on with make_backend.
struct SplitGivenUp : Error {
  explicit SplitGivenUp(const std::string& what) : Error(ExitStatus::runtime, what) {}
};

// One library communicator over a whole job, from which each round's small groups (fabric-sweep's pairs) split
// their own, instead of each group creating one from nothing. It owns the parent; each split's back end owns its
// child (destroyed with it, or aborted on a hang). NCCL's ncclCommSplit, 2.18 and later.
class CommSplitter {
 public:
  virtual ~CommSplitter() = default;
  // Collective over every rank of the parent. The back end of this rank's group: the ranks that gave the same
  // `color`, ordered by `key`, exactly as MPI splits `group` (the same ranks' MPI communicator, which the back end
  // uses for its barriers); null for color < 0 (this rank rests). Throws SplitGivenUp on every rank at once when a
  // child was aborted since the last split (a hung group: no split after one), or when any rank's split failed (or,
  // abortable, passed the deadline); the parent is then aborted.
  virtual std::unique_ptr<CollBackend> split(int color, int key, const runtime::Communicator* group) = 0;
  // What the children share with the parent ("splitShare 1: ...") and why, for a note.
  virtual std::string sharing() const = 0;
};
// NCCL's, over every rank of `world` on `gpu`; collective. `abortable`: non-blocking parent and children, each
// call bounded by `timeout_s`, children that share nothing with the parent (an aborted child would abort every
// communicator it shares resources with). Throws SplitGivenUp on every rank when any rank could not create it, or
// where this build cannot split (no NCCL, or NCCL older than 2.18).
std::unique_ptr<CommSplitter> make_nccl_splitter(const runtime::Communicator& world, int gpu, bool abortable,
                                                 double timeout_s);

// MPI's counts are ints and its predefined reductions take no derived datatypes: throws Error::usage (naming
// `option`, the limit and the largest size that fits) when an operation of `ops` with a type of `types` at
// `max_bytes` on `nranks` ranks would pass a count above INT_MAX.
void require_mpi_counts(const std::vector<const CollectiveOp*>& ops, const std::vector<DataType>& types,
                        std::uint64_t max_bytes, int nranks, std::string_view option);

// Host-side element check shared by back ends that can read the output on the host.
template <typename T>
bool element_matches(T got, const Expected& e, RedOp op, int nranks) {
  if constexpr (std::is_integral_v<T>) {
    return got == static_cast<T>(e.bits);
  } else {
    if (op == RedOp::avg)
      return std::fabs(static_cast<double>(got) - e.real) <= 4.0 * nranks * std::numeric_limits<T>::epsilon() * 2.0;
    return got == static_cast<T>(e.real);
  }
}

}  // namespace fabricbench::ops
