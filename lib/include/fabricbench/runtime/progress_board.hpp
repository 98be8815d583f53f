// Which ranks have started and finished each measurement, kept in an MPI window on rank 0. Ranks publish with
// MPI_Put outside timed regions; rank 0's watchdog reads its own window memory (no MPI call) when a step hangs,
// so the failure status can name the ranks that never started or never finished it.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "fabricbench/runtime/mpi.hpp"

namespace fabricbench::runtime {

class ProgressBoard {
 public:
  explicit ProgressBoard(const Communicator& world);  // collective
  ~ProgressBoard();
  ProgressBoard(const ProgressBoard&) = delete;
  ProgressBoard& operator=(const ProgressBoard&) = delete;

  void started(std::int64_t step);
  void finished(std::int64_t step);
  // Rank 0, any thread: "ranks not finished: 0,1,3; not started: 1" for `step` ("" if all finished).
  std::string laggards(std::int64_t step) const;
  // Rank 0: per rank, whether it started `step` (1) or not (0: the rank the others wait for); empty where the board
  // is off.
  std::vector<int> started_step(std::int64_t step) const;
  std::int64_t current_step() const { return current_; }

 private:
  void publish(int slot, std::int64_t value);
  MPI_Win win_ = MPI_WIN_NULL;
  std::int64_t* slots_ = nullptr;  // rank 0: [0, n) started, [n, 2n) finished (step + 1)
  int rank_ = 0, nranks_ = 1;
  std::int64_t current_ = -1;
};

}  // namespace fabricbench::runtime
