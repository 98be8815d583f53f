#include "fabricbench/app/tool_loop.hpp"

#include <fmt/format.h>

#include <algorithm>

namespace fabricbench::app {

ToolLoop::ToolLoop(const RunContext& context, facts::LinkWatch links) : context_(context), links_(std::move(links)) {}

void ToolLoop::begin(std::string_view noun, std::size_t k, std::size_t total, std::string_view name,
                     std::size_t sizes) const {
  context_.progress(fmt::format("{} {} of {}: {} ({} sizes)", noun, k + 1, total, name, sizes));
}

void ToolLoop::note_pairs(const runtime::RankPairs& pairs, const std::vector<std::string>& detail) const {
  if (!context_.is_root()) return;
  const auto& ranks = context_.placement.ranks();
  const auto side = [&](int rank) {
    const auto& r = ranks[static_cast<std::size_t>(rank)];
    return detail.empty() ? fmt::format("rank {} ({})", r.rank, r.host)
                          : fmt::format("rank {} ({}: {})", r.rank, r.host, detail[static_cast<std::size_t>(rank)]);
  };
  for (int p = 0; p < pairs.pairs(); ++p)
    context_.out->note(fmt::format("pair {}: {} <-> {}", p, side(p), side(pairs.peer_of(p))));
}

void ToolLoop::write(results::Row& row, const facts::CounterReading& grown, const results::TableSpec& samples,
                     const std::function<std::vector<results::Sample>(std::int64_t)>& samples_of) const {
  const auto& columns = row.spec().columns;
  if (std::any_of(columns.begin(), columns.end(), [](const results::Column& c) { return c.name == "port_errors"; }))
    facts::set_counters(row, grown);
  const auto index = context_.out->row(row);
  context_.out->samples(samples, samples_of(index));
}

ExitStatus ToolLoop::finish(std::string_view unit) {
  wrong_total_ = context_.world.all_sum(wrong_);
  if (wrong_total_ > 0 && context_.is_root())
    context_.out->note(fmt::format("{} {} failed the check", wrong_total_, unit));
  return wrong_total_ > 0 ? ExitStatus::measurement_failed : ExitStatus::ok;
}

}  // namespace fabricbench::app
