#include "fabricbench/runtime/progress_board.hpp"

#include <exception>
#include <vector>

namespace fabricbench::runtime {

ProgressBoard::ProgressBoard(const Communicator& world) : rank_(world.rank()), nranks_(world.size()) {
  const MPI_Aint bytes = rank_ == 0 ? static_cast<MPI_Aint>(2 * nranks_ * sizeof(std::int64_t)) : 0;
  // One-sided MPI is not everywhere: Open MPI 4.1 over btl/tcp between nodes has no window component. Then the
  // board stays off on every rank (they agree), and a timeout names the step but not the ranks.
  int ok = MPI_Win_allocate(bytes, sizeof(std::int64_t), MPI_INFO_NULL, world.get(), &slots_, &win_) == MPI_SUCCESS;
  int all_ok = 0;
  check_mpi(MPI_Allreduce(&ok, &all_ok, 1, MPI_INT, MPI_MIN, world.get()), "MPI_Allreduce");
  if (!all_ok) {
    if (ok) MPI_Win_free(&win_);  // collective over the ranks that have it; with mixed results it is left alone
    win_ = MPI_WIN_NULL;
    slots_ = nullptr;
    return;
  }
  if (rank_ == 0)
    for (int i = 0; i < 2 * nranks_; ++i) slots_[i] = 0;
  world.barrier();
  check_mpi(MPI_Win_lock_all(0, win_), "MPI_Win_lock_all");
}

ProgressBoard::~ProgressBoard() {
  // Freeing the window is collective: only on the normal path, never while an exception unwinds one rank.
  if (win_ == MPI_WIN_NULL || std::uncaught_exceptions() > 0) return;
  MPI_Win_unlock_all(win_);
  MPI_Win_free(&win_);
}

void ProgressBoard::publish(int slot, std::int64_t value) {
  if (win_ == MPI_WIN_NULL) return;
  if (rank_ == 0) {
    __atomic_store_n(&slots_[slot], value, __ATOMIC_RELEASE);
    return;
  }
  check_mpi(MPI_Put(&value, 1, MPI_INT64_T, 0, slot, 1, MPI_INT64_T, win_), "MPI_Put");
  check_mpi(MPI_Win_flush(0, win_), "MPI_Win_flush");
}

void ProgressBoard::started(std::int64_t step) {
  current_ = step;
  publish(rank_, step + 1);
}

void ProgressBoard::finished(std::int64_t step) { publish(nranks_ + rank_, step + 1); }

std::vector<int> ProgressBoard::started_step(std::int64_t step) const {
  std::vector<int> out;
  if (rank_ != 0 || win_ == MPI_WIN_NULL) return out;
  for (int r = 0; r < nranks_; ++r) out.push_back(__atomic_load_n(&slots_[r], __ATOMIC_ACQUIRE) > step ? 1 : 0);
  return out;
}

std::string ProgressBoard::laggards(std::int64_t step) const {
  if (rank_ != 0 || win_ == MPI_WIN_NULL) return {};
  std::string not_finished, not_started;
  for (int r = 0; r < nranks_; ++r) {
    const auto started = __atomic_load_n(&slots_[r], __ATOMIC_ACQUIRE);
    const auto finished = __atomic_load_n(&slots_[nranks_ + r], __ATOMIC_ACQUIRE);
    if (finished <= step) not_finished += (not_finished.empty() ? "" : ",") + std::to_string(r);
    if (started <= step) not_started += (not_started.empty() ? "" : ",") + std::to_string(r);
  }
  if (not_finished.empty()) return {};
  return "ranks not finished: " + not_finished + (not_started.empty() ? "" : "; not started: " + not_started);
}

}  // namespace fabricbench::runtime
