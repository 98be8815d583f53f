#include "fabricbench/tools/coll/per_rank_view.hpp"

#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <map>
#include <thread>

#include "fabricbench/app/run_context.hpp"
#include "fabricbench/app/slow_recording.hpp"
#include "fabricbench/error.hpp"
#include "fabricbench/job/slow_folder.hpp"
#include "fabricbench/job/straggler.hpp"
#include "fabricbench/results/result_set.hpp"
#include "fabricbench/timing/sample_stats.hpp"

namespace fabricbench::tools::coll {
namespace {

namespace slow = job::slow;
using results::Better;
using results::Unit;

double median(const std::vector<double>& v) { return v.empty() ? 0 : timing::median_of(v); }

}  // namespace

PerRankView::PerRankView() {
  const auto recording = app::SlowRecording::check("--per-rank");
  const char* tmp = std::getenv("TMPDIR");
  std::string name = std::string(tmp && *tmp ? tmp : "/tmp") + "/fabric-coll-per-rank-XXXXXX";
  if (!::mkdtemp(name.data())) throw Error::runtime(fmt::format("--per-rank: cannot make a folder {}", name));
  folder_ = name;
  recording.arm_this_process(folder_);
}

PerRankView::~PerRankView() {
  std::error_code ec;
  std::filesystem::remove_all(folder_, ec);
}

void PerRankView::write(const app::RunContext& context) const {
  // The plugin's writer takes finished collectives out every 100 ms: three of its turns.
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  std::vector<std::pair<std::size_t, slow::Record>> mine;
  std::vector<std::string> problems;
  job::SlowFolder(folder_, "--per-rank").poll(mine, problems);
  std::vector<slow::Record> records;
  for (const auto& [source, r] : mine) records.push_back(r);
  const auto gathered = context.world.gather_arrays(records, 0);
  if (!context.is_root()) return;

  // Every collective of the run in one window; each rank a source of its own. A benchmark's slow GPU arrives last at
  // most of its collectives: the few where a rank comes late out of a check or a barrier between sizes (16 ms, 2% of
  // them, once 59% of a short run's waiting on healthy H100s) name nobody.
  job::StragglerSettings rules;
  rules.window_s = 1e9, rules.late = 0.5, rules.inside_ratio = 1e9;
  job::StragglerFinder finder(rules);
  std::size_t total = 0;
  for (std::size_t rank = 0; rank < gathered.size(); ++rank)
    for (const auto& r : gathered[rank]) finder.add(rank, r), ++total;
  std::int64_t last_ns = 0;
  for (const auto& g : gathered)
    for (const auto& r : g) last_ns = std::max(last_ns, r.host_ns);
  finder.close();
  const auto w = finder.find(last_ns + 1);

  std::map<int, std::vector<double>> kernels;
  std::map<int, std::size_t> collectives;
  for (const auto& row : finder.rows()) kernels[row.rank].push_back(row.kernel_s * 1e3), ++collectives[row.rank];
  double all_waiting = 0;
  for (const auto& r : w.ranks) all_waiting += r.cost_s;
  std::map<int, const job::RankWindow*> late;
  for (const auto& r : w.ranks) late[r.rank] = &r;

  const results::TableSpec t{
      "coll",
      "per_rank",
      {results::key_int("rank"), results::setting_text("host", 64), results::setting_int("collectives"),
       results::measured_int("last", Unit::none, Better::none),
       results::measured("caused_ms", Unit::none, Better::lower, "caused ms", 3),
       results::measured("caused_pct", Unit::percent, Better::lower, "of waiting %", 0),
       results::measured("wait_median_ms", Unit::none, Better::lower, "wait ms", 3),
       results::measured("kernel_median_ms", Unit::none, Better::none, "kernel ms", 3)}};
  context.out->declare(t);
  context.out->section(t, "per rank: its kernel time in each collective, and the waiting it caused (--per-rank)",
                       {{"rank"},
                        {"host"},
                        {"collectives"},
                        {"last"},
                        {"caused_ms"},
                        {"caused_pct"},
                        {"wait_median_ms"},
                        {"kernel_median_ms"}});
  std::vector<results::Row> rows;
  const auto& ranks = context.placement.ranks();
  for (int rank = 0; rank < static_cast<int>(gathered.size()); ++rank) {
    const auto* r = late.count(rank) ? late[rank] : nullptr;
    rows.push_back(results::Row(t)
                       .set("rank", std::int64_t{rank})
                       .set("host", rank < static_cast<int>(ranks.size()) ? ranks[rank].host : std::string())
                       .set("collectives", static_cast<std::int64_t>(collectives[rank]))
                       .set("last", static_cast<std::int64_t>(r ? r->late : 0))
                       .set("caused_ms", r ? r->cost_s * 1e3 : 0.0)
                       .set("caused_pct", r && all_waiting > 0 ? 100 * r->cost_s / all_waiting : 0.0)
                       .set("wait_median_ms", r ? r->wait_median_s * 1e3 : 0.0)
                       .set("kernel_median_ms", median(kernels[rank])));
  }
  context.out->rows(rows);
  if (total == 0) {
    context.out->note(
        "per rank: NCCL wrote no profiler records (NCCL before 2.26 does not load the plugin; "
        "NCCL_DEBUG=INFO shows 'PROFILER/Plugin')");
    return;
  }
  const auto share = [&](const job::RankWindow& r) { return all_waiting > 0 ? 100 * r.cost_s / all_waiting : 0.0; };
  for (const auto& f : w.findings) {
    if (f.kind != job::SlowFinding::Kind::late) continue;
    const auto host = f.rank < static_cast<int>(ranks.size()) ? ranks[f.rank].host : std::string("?");
    context.out->note(fmt::format(
        "per rank: rank {} on host {} arrived last at {:.0f}% of the {} collectives; the others waited {:.3f} ms for "
        "it on median, {:.0f}% of all the waiting: its GPU or host is slower than the others'",
        f.rank, host, 100 * f.late_fraction, f.collectives, f.wait_median_s * 1e3, share(*late[f.rank])));
  }
  if (w.findings.empty())
    context.out->note(fmt::format("per rank: no rank made the others wait ({} collectives judged{})", finder.judged(),
                                  w.ranks.empty() ? ""
                                                  : fmt::format("; the most: rank {}, {:.0f}% of the waiting",
                                                                w.ranks[0].rank, share(w.ranks[0]))));
}

}  // namespace fabricbench::tools::coll
