// The loop of a measuring tool, written once for fabric-p2p, fabric-verbs and fabric-coll: the progress line of each
// test, the notes naming each pair of ranks, one measured step at a time (the watchdog armed and the progress board
// told, the links' error counters read around the measurement under the one LinkWatch policy and summed on rank 0,
// then the tool's report: its gathers and its row), the row written with its counters and samples, and the
// wrong-data total that decides the exit status.
#pragma once
#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "fabricbench/app/run_context.hpp"
#include "fabricbench/error.hpp"
#include "fabricbench/facts/link_counters.hpp"

namespace fabricbench::app {

class ToolLoop {
 public:
  // `links`: what this rank watches (default: nothing; fabric-coll's table has no counter columns).
  explicit ToolLoop(const RunContext& context, facts::LinkWatch links = {});

  // "[progress] test 2 of 3: bw (20 sizes)" (rank 0, not with --quiet).
  void begin(std::string_view noun, std::size_t k, std::size_t total, std::string_view name, std::size_t sizes) const;
  // Rank 0: "pair 0: rank 0 (h1) <-> rank 2 (h2)" per pair, with `detail[rank]` after each host where given.
  void note_pairs(const runtime::RankPairs& pairs, const std::vector<std::string>& detail = {}) const;

  // One measured step (collective over the world): `measure()` runs with the links read around it; `report(value,
  // grown)` gets its result and the links' growth summed on rank 0 (NaN elsewhere), still inside the step.
  template <typename Measure, typename Report>
  void step(std::string what, Measure&& measure, Report&& report) {
    context_.measuring(std::move(what));
    auto [value, grown] = links_.around(measure);
    report(value, facts::LinkWatch::sum(context_.world, grown, 0));
    context_.measured();
  }
  // Rank 0: writes `row` (with `grown` in its counter columns where the table has them) and then the samples
  // `samples_of(index of the row)` into `samples`.
  void write(results::Row& row, const facts::CounterReading& grown, const results::TableSpec& samples,
             const std::function<std::vector<results::Sample>(std::int64_t)>& samples_of) const;

  // Wrong data this rank counted (bytes or elements); finish() adds them over the world.
  void count_wrong(std::uint64_t n) { wrong_ += n; }
  // Collective: the world's wrong total, a note "N <unit> failed the check" where it is not 0, and the status it
  // gives (1 when any data was wrong).
  ExitStatus finish(std::string_view unit);
  std::uint64_t wrong_total() const { return wrong_total_; }

 private:
  const RunContext& context_;
  facts::LinkWatch links_;
  std::uint64_t wrong_ = 0, wrong_total_ = 0;
};

}  // namespace fabricbench::app
