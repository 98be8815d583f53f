// A size's timed block (a fixed count of iterations) repeated until about a minimum time was timed, as Google
// Benchmark's minimum time or perftest's -D give short operations enough work: one block of 20 all_reduces of
// 8 B or 100 windows of 1 B is over in microseconds, and its figure moves with whatever else the host did then.
// The figure is the median block; the blocks' spread says how far to trust it. fabric-coll and fabric-p2p use it
// when no -n was given (with -n the count is the user's, as in nccl-tests and OSU: one block).
#pragma once
#include <string_view>
#include <vector>

namespace fabricbench::timing {

class TimedBlocks {
 public:
  static constexpr int max_blocks = 100;
  static constexpr double max_min_time_s = 60;

  // `min_time_s` 0: one block. Throws a usage error naming `option` outside 0..max_min_time_s.
  static double checked_min_time(double min_time_s, std::string_view option);

  explicit TimedBlocks(double min_time_s) : min_time_s_(min_time_s) {}

  // Blocks to run: 1 until the first block was added and decide() was called, then the decided count.
  int count() const { return count_; }
  // One block's figure (for example its seconds, or seconds per operation); the caller times the block.
  void add(double value) { values_.push_back(value); }
  // True right after the first block while a minimum time is set: call decide() then, on every rank.
  bool deciding() const { return min_time_s_ > 0 && values_.size() == 1 && !decided_; }
  // The count from the first block's total seconds, so that about min_time_s is timed in all, at most
  // max_blocks. Every rank of a measurement must pass the same figure (one rank's, broadcast).
  void decide(double first_block_s);

  int blocks() const { return static_cast<int>(values_.size()); }
  double median() const;  // of the added figures; NaN when none
  double spread() const;  // (p90 - p10) / median of the added figures; NaN with fewer than two

 private:
  double min_time_s_;
  int count_ = 1;
  bool decided_ = false;
  std::vector<double> values_;
};

}  // namespace fabricbench::timing
