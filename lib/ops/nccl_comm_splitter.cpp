// Pair communicators split from one NCCL communicator over the whole job (ncclCommSplit, NCCL 2.18 and later): the
// parent is created once, and each round every rank of it splits, a pair's ranks with the pair's color, so that a
// round pays one split per rank instead of a unique id, its broadcast and a ncclCommInitRank per pair.
#include <fmt/format.h>
#include <unistd.h>

#include <unordered_map>
#include <utility>

#include "fabricbench/error.hpp"
#include "nccl_comm.hpp"

namespace fabricbench::ops {
namespace {

// Collective: empty when every rank's `mine` is empty, else the message of the lowest rank with one, on every rank.
std::string first_failure(const runtime::Communicator& world, const std::string& mine) {
  const int me = mine.empty() ? world.size() : world.rank();
  int first = 0;
  runtime::check_mpi(MPI_Allreduce(&me, &first, 1, MPI_INT, MPI_MIN, world.get()), "MPI_Allreduce");
  return first == world.size() ? std::string() : world.broadcast(mine, first);
}

#if NCCL_VERSION_CODE >= NCCL_VERSION(2, 18, 0)

class NcclSplitter : public CommSplitter {
 public:
  NcclSplitter(const runtime::Communicator& world, int gpu, bool abortable, double timeout_s)
      : world_(world), abortable_(abortable), timeout_s_(timeout_s) {
    require_a_gpu_each(gpu);
    const auto limit = deadline();
    // Blocking: the children share the parent's resources (cheaper splits). Abortable: they share nothing, since
    // NCCL gives a child that shares resources its parent's abort flag, and aborting one hung pair would then abort
    // the parent and every other pair's communicator (NCCL's init.cc, ncclCommInitChildComm).
    together([&] { parent_ = std::make_unique<NcclComm>(world, abortable, !abortable, abortable ? &limit : nullptr); });
  }

  // A child that NCCL filled in after its split passed the deadline has no other owner.
  ~NcclSplitter() override { drop_pending(); }

  std::unique_ptr<CollBackend> split(int color, int key, const runtime::Communicator* group) override {
    // After a hang nothing more is split: its ranks' state is unknown, and every rank of the parent takes part.
    together([&] {
      if (children_aborted_->load()) throw Error::runtime("a pair communicator was aborted (hung) in an earlier round");
    });
    std::unique_ptr<CollBackend> backend;
    together([&] { backend = split_mine(color, key, group); },
             [&] {
               if (backend) backend->abort();
             });
    return backend;
  }

  std::string sharing() const override {
    return abortable_ ? "splitShare 0: with --timeout a hung pair's communicator is aborted, and a child that shared "
                        "the parent's resources would share its abort flag, aborting every pair"
                      : "splitShare 1: the children share the parent's resources (no --timeout: none is aborted)";
  }

 private:
  // NCCL refuses a communicator with two ranks on one GPU ("Duplicate GPU detected"), and only the ranks that share
  // one fail: the others would wait for them. Pairs may still hold distinct GPUs (rails whose ranks share GPUs), so
  // this is said before any rank tries. Collective.
  void require_a_gpu_each(int gpu) const {
    std::string mine;  // "host bus-id", or "!why" where this rank could not tell
    try {
      check_cuda(cudaSetDevice(gpu), "cudaSetDevice");
      char bus[32] = {}, host[256] = {};
      check_cuda(cudaDeviceGetPCIBusId(bus, sizeof bus, gpu), "cudaDeviceGetPCIBusId");
      gethostname(host, sizeof host - 1);
      mine = fmt::format("{} {}", host, bus);
    } catch (const Error& e) {
      mine = std::string("!") + e.what();
    }
    const auto gpus = world_.all_gather(mine);
    for (std::size_t i = 0; i < gpus.size(); ++i)
      if (gpus[i].rfind('!', 0) == 0) throw SplitGivenUp(fmt::format("rank {}: {}", i, gpus[i].substr(1)));
    std::unordered_map<std::string, std::size_t> first;  // thousands of ranks: no pairwise comparison
    for (std::size_t i = 0; i < gpus.size(); ++i)
      if (const auto [at, fresh] = first.emplace(gpus[i], i); !fresh)
        throw SplitGivenUp(
            fmt::format("ranks {} and {} share the GPU {} (NCCL allows one rank per GPU in the "
                        "parent, which holds every rank)",
                        at->second, i, gpus[i]));
  }

  // Collective: `attempt` on this rank; when it throws here or on any other rank, every rank undoes its part,
  // aborts the parent (if any) and throws SplitGivenUp with the words of the lowest rank that failed.
  template <typename Attempt, typename Undo = void (*)()>
  void together(
      Attempt&& attempt, Undo&& undo = [] {}) {
    std::string failure;
    try {
      attempt();
    } catch (const Error& e) {
      failure = fmt::format("rank {}: {}", world_.rank(), e.what());
    }
    const auto why = first_failure(world_, failure);
    if (why.empty()) return;
    undo();
    if (parent_) parent_->abort();
    throw SplitGivenUp(why);
  }

  void drop_pending() noexcept {
    if (pending_) ncclCommAbort(std::exchange(pending_, nullptr));
  }

  NcclClock::time_point deadline() const {
    return NcclClock::now() +
           std::chrono::duration_cast<NcclClock::duration>(std::chrono::duration<double>(timeout_s_));
  }

  std::unique_ptr<CollBackend> split_mine(int color, int key, const runtime::Communicator* group) {
    const auto limit = deadline();
    const auto* bound = abortable_ ? &limit : nullptr;
    ncclConfig_t config = NCCL_CONFIG_INITIALIZER;
    config.blocking = abortable_ ? 0 : 1;
    config.splitShare = 0;  // the children are never split themselves
    drop_pending();
    check_nccl(ncclCommSplit(parent_->get(), color >= 0 ? color : NCCL_SPLIT_NOCOLOR, key, &pending_, &config),
               "ncclCommSplit");
    // Non-blocking, the split is the parent's operation until it completes; NCCL fills the child in then (so
    // `pending_` is a member: written after a deadline passed, it is still there).
    parent_->settle(bound);
    if (color < 0) return nullptr;
    if (!pending_) throw Error::runtime("ncclCommSplit gave this rank no communicator");
    auto child = std::make_unique<NcclComm>(std::exchange(pending_, nullptr), abortable_, children_aborted_);
    child->settle(bound);
    int rank = -1, count = 0;
    check_nccl(ncclCommUserRank(child->get(), &rank), "ncclCommUserRank");
    check_nccl(ncclCommCount(child->get(), &count), "ncclCommCount");
    if (!group || rank != group->rank() || count != group->size())
      throw Error::internal(fmt::format("ncclCommSplit made rank {} of {} where MPI's split made rank {} of {}", rank,
                                        count, group ? group->rank() : -1, group ? group->size() : 0));
    return adopt_nccl_comm(*group, std::move(child));
  }

  const runtime::Communicator& world_;
  bool abortable_;
  double timeout_s_;
  std::shared_ptr<std::atomic<bool>> children_aborted_ = std::make_shared<std::atomic<bool>>(false);
  ncclComm_t pending_ = nullptr;
  std::unique_ptr<NcclComm> parent_;
};

#endif

}  // namespace

std::unique_ptr<CommSplitter> make_nccl_splitter(const runtime::Communicator& world, int gpu, bool abortable,
                                                 double timeout_s) {
#if NCCL_VERSION_CODE >= NCCL_VERSION(2, 18, 0)
  return std::make_unique<NcclSplitter>(world, gpu, abortable, timeout_s);
#else
  (void)first_failure, (void)world, (void)gpu, (void)abortable, (void)timeout_s;
  throw SplitGivenUp(fmt::format("this build's NCCL ({}) has no ncclCommSplit (2.18 and later)", NCCL_VERSION_CODE));
#endif
}

}  // namespace fabricbench::ops
