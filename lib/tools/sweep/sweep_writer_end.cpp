// fabric-sweep's rank-0 writer (sweep_writer.hpp) at the end of the run: what the records tested of the plan (the
// coverage), the switch tree (/sweep/topology, /sweep/switches), what was not tested (/sweep/untested and the budget's
// note), and what the judge returned (matrices, per-node medians, verdicts, the values below expected, the answer).
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <set>

#include "fabricbench/results/printable.hpp"
#include "fabricbench/timing/sample_stats.hpp"
#include "fabricbench/tools/sweep/sweep_writer.hpp"

namespace fabricbench::tools::sweep {
using namespace fabricbench::sweep;  // lib/sweep: what this tool runs

bool Untested::budget_cut() const {
  return std::any_of(pairs.begin(), pairs.end(),
                     [](const UntestedPair& u) { return u.reason == UntestedReason::budget; });
}

void SweepWriter::judgement(const std::vector<PairRecord>& records, const Judgement& judgement,
                            const Coverage& coverage) {
  context_.out->declare(tables_.nodes);
  context_.out->declare(tables_.verdicts);
  nodes(judgement);
  verdicts(judgement);
  below_expected(records);
  // The last line: the answer. No verdict is a pass only where the plan's every host and pair was tested.
  if (!coverage.complete())
    context_.out->note(fmt::format("verdict: NOT A PASS: {}", coverage.text()));
  else if (!judgement.verdicts.empty())
    return;
  else if (coverage.pairs_tested == coverage.hosts_planned * (coverage.hosts_planned - 1) / 2)
    context_.out->note(fmt::format("verdict: all {} hosts and their pairs pass", coverage.hosts_planned));
  else
    context_.out->note(fmt::format("verdict: all {} hosts pass, in the {} of {} pairs tested", coverage.hosts_planned,
                                   coverage.pairs_tested, coverage.hosts_planned * (coverage.hosts_planned - 1) / 2));
}

void SweepWriter::nodes(const Judgement& judgement) {
  const int n = static_cast<int>(job_.hosts.size());
  for (auto matrix : judgement.matrices) context_.out->matrix(std::move(matrix));
  if (n > 16)  // no matrix on the terminal: the worst pairs instead
    for (const auto& w : judgement.worst)
      context_.out->note(fmt::format(
          "worst {} pairs: {} - {}{}: {:.4g} {}", opt_.metrics[w.metric]->name, job_.hosts[w.a], job_.hosts[w.b],
          opt_.rails > 1 ? fmt::format(" rail {}", w.rail) : "", w.value, opt_.metrics[w.metric]->unit()));
  if (opt_.rails > 1) {
    // Per rail: one line per metric, the median of its host medians and its suspect pairs (the terminal's summary
    // instead of N x N per rail).
    for (std::size_t k = 0; k < opt_.metrics.size(); ++k)
      for (int r = 0; r < opt_.rails; ++r) {
        std::vector<double> medians;
        std::int64_t suspect = 0, pairs = 0;
        for (const auto& s : judgement.nodes)
          if (s.metric == static_cast<int>(k) && s.rail == r) {
            if (!std::isnan(s.median)) medians.push_back(s.median);
            suspect += s.suspect_pairs, pairs += s.pairs;
          }
        context_.out->note(fmt::format("rail {} {}: median host {:.4g} {}, {} of {} pairs suspect", r,
                                       opt_.metrics[k]->name,
                                       medians.empty() ? NAN : timing::SampleStats::of(medians).median,
                                       opt_.metrics[k]->unit(), suspect / 2, pairs / 2));
      }
  }
  if (n * opt_.rails <= 64)
    context_.out->section(tables_.nodes, "per-node medians (over the pairs of each node; best of re-tests)",
                          opt_.rails > 1
                              ? std::vector<results::TerminalColumn>{{"host"},
                                                                     {"rail"},
                                                                     {"nic"},
                                                                     {"metric"},
                                                                     {"median"},
                                                                     {"unit"},
                                                                     {"pairs"},
                                                                     {"suspect_pairs"}}
                              : std::vector<results::TerminalColumn>{
                                    {"host"}, {"metric"}, {"median"}, {"unit"}, {"pairs"}, {"suspect_pairs"}});
  else
    context_.out->section(tables_.nodes, "", {});  // too many for the terminal: the file has them
  std::vector<results::Row> node_rows;
  for (const auto& s : judgement.nodes)
    node_rows.push_back(results::Row(tables_.nodes)
                            .set(tables_.node_col.host, job_.hosts[s.host])
                            .set(tables_.node_col.metric, std::string(opt_.metrics[s.metric]->name))
                            .set(tables_.node_col.rail, std::int64_t(s.rail))
                            .set(tables_.node_col.nic, job_.nic_of(opt_, *opt_.metrics[s.metric], s.host, s.rail))
                            .set(tables_.node_col.median, s.median)
                            .set(tables_.node_col.unit, std::string(opt_.metrics[s.metric]->unit()))
                            .set(tables_.node_col.pairs, s.pairs)
                            .set(tables_.node_col.suspect_pairs, s.suspect_pairs));
  context_.out->rows(node_rows);
}

void SweepWriter::verdicts(const Judgement& judgement) {
  for (const auto& v : judgement.verdicts) {
    if (v.kind == VerdictKind::data) continue;  // the wrong-data line below says it
    const std::string kind(kind_name(v.kind));
    context_.out->row(results::Row(tables_.verdicts)
                          .set(tables_.verdict_col.metric, v.metric)
                          .set(tables_.verdict_col.kind, kind)
                          .set(tables_.verdict_col.host_a, v.a >= 0 ? job_.hosts[v.a] : std::string())
                          .set(tables_.verdict_col.host_b, v.b >= 0 ? job_.hosts[v.b] : std::string())
                          .set(tables_.verdict_col.rail, std::int64_t(v.rail))
                          .set(tables_.verdict_col.nic, v.nic)
                          .set(tables_.verdict_col.switch_name, v.switch_name)
                          .set(tables_.verdict_col.reason, v.reason));
    if (v.kind == VerdictKind::untested || v.kind == VerdictKind::noise)  // about the run, not a bad part of the fabric
      context_.out->note(fmt::format("VERDICT {}{}{}: {}", kind, v.metric.empty() ? "" : " (" + v.metric + ")",
                                     v.a >= 0 ? " " + job_.hosts[v.a] : "", v.reason));
    else
      context_.out->note(fmt::format("VERDICT bad {} ({}): {}", kind, v.metric, v.reason));
  }
  if (judgement.wrong > 0) context_.out->note(fmt::format("{} bytes failed the check", judgement.wrong));
}

void SweepWriter::below_expected(const std::vector<PairRecord>& records) {
  // The pair values below the "% of expected" rule: one summary line, with the lowest.
  int below = 0;
  double lowest = INFINITY, threshold = NAN;
  bool healthy_curve = false;
  std::string lowest_text;
  for (const auto& r : records) {
    const auto& m = *opt_.metrics[r.metric];
    const double value = facts::ExpectedShare::gbps(r.value, m.value_unit);
    const auto ref = reference_of(r);
    if (!std::isfinite(value) || !ref.known()) continue;
    const double percent = 100 * value / ref.gbps;
    if (!context_.expected.below(percent, static_cast<std::uint64_t>(r.bytes), ref.kind)) continue;
    threshold = context_.expected.threshold(ref.kind);
    healthy_curve = ref.kind == facts::Reference::Kind::calibrated;
    ++below;
    if (percent < lowest) {
      lowest = percent;
      lowest_text = fmt::format("{} - {} {} {:.0f}% of {:.2f} GB/s ({})", job_.hosts[r.a], job_.hosts[r.b], m.name,
                                percent, ref.gbps, ref.basis);
    }
  }
  if (below > 0) {
    const auto line =
        fmt::format("warning: {} pair value(s) below {:g}% of {}; lowest: {} (configs/expected.ini)", below, threshold,
                    healthy_curve ? "a healthy system's at their size" : "what the hardware should reach", lowest_text);
    context_.out->note(line);
    if (context_.options.quiet) fmt::print(stderr, "{}: {}\n", context_.program, results::printable(line));
  }
}

Coverage SweepWriter::coverage(const std::vector<PairRecord>& records, const RoundTally& tally,
                               const Untested& untested) const {
  std::vector<HostPair> planned;
  if (!opt_.adaptive)
    for (const auto& r : job_.schedule->rounds()) planned.insert(planned.end(), r.pairs.begin(), r.pairs.end());
  auto c = Coverage::of(records, static_cast<int>(job_.hosts.size()), planned, !opt_.adaptive);
  if (opt_.adaptive) c.hosts_judged = tally.adaptive_hosts_judged;
  if (untested.budget.limited() && (untested.budget_cut() || opt_.adaptive)) c.why = "--budget " + opt_.budget_given;
  if (!untested.resting.empty()) c.why += std::string(c.why.empty() ? "" : "; ") + "the hosts of a hung pair rested";
  return c;
}

void SweepWriter::topology(const Judgement& judgement) {
  if (!opt_.topology) return;
  const auto& switches = opt_.topology->switches();
  context_.out->declare(tables_.topology);
  std::vector<results::Row> rows;
  for (std::size_t h = 0; h < job_.hosts.size(); ++h)
    for (int r = 0; r < opt_.rails; ++r) {
      const int leaf = opt_.topology->leaf_of(static_cast<int>(h), r);
      rows.push_back(results::Row(tables_.topology)
                         .set(tables_.topology_col.host, job_.hosts[h])
                         .set(tables_.topology_col.rail, std::int64_t(r))
                         .set(tables_.topology_col.leaf, switches[static_cast<std::size_t>(leaf)].name)
                         .set(tables_.topology_col.spine, opt_.topology->parent_name(leaf)));
    }
  context_.out->rows(rows);
  context_.out->declare(tables_.switches);
  context_.out->section(tables_.switches, "per leaf switch and rail (pairs inside the leaf, pairs crossing it)",
                        {{"switch"},
                         {"rail"},
                         {"metric"},
                         {"hosts"},
                         {"inside_pairs"},
                         {"inside_suspect"},
                         {"inside_median"},
                         {"crossing_pairs"},
                         {"crossing_suspect"},
                         {"crossing_median"},
                         {"unit"}});
  rows.clear();
  for (const auto& s : judgement.leaves)
    rows.push_back(results::Row(tables_.switches)
                       .set(tables_.switch_col.switch_name, switches[static_cast<std::size_t>(s.leaf)].name)
                       .set(tables_.switch_col.rail, std::int64_t(s.rail))
                       .set(tables_.switch_col.metric, std::string(opt_.metrics[s.metric]->name))
                       .set(tables_.switch_col.unit, std::string(opt_.metrics[s.metric]->unit()))
                       .set(tables_.switch_col.hosts, s.hosts)
                       .set(tables_.switch_col.inside_pairs, s.inside_pairs)
                       .set(tables_.switch_col.inside_suspect, s.inside_suspect)
                       .set(tables_.switch_col.crossing_pairs, s.crossing_pairs)
                       .set(tables_.switch_col.crossing_suspect, s.crossing_suspect)
                       .set(tables_.switch_col.inside_median, s.inside_median)
                       .set(tables_.switch_col.crossing_median, s.crossing_median));
  context_.out->rows(rows);
  const double coverage = judgement.leaf_pair_coverage;
  context_.out->attribute("leaf_pair_coverage", coverage);
  std::size_t wanted = 0;
  for (int r = 0; r < opt_.rails; ++r) {
    const auto leaves = opt_.topology->leaves(r).size();
    wanted += leaves * (leaves - 1) / 2;
  }
  context_.out->note(std::isnan(coverage)
                         ? "coverage: no rail has two leaves; nothing to cross"
                         : fmt::format("coverage: {:.0f}% of leaf pairs x rails crossed by a measured pair ({} of {})",
                                       100 * coverage, static_cast<std::size_t>(std::lround(coverage * wanted)),
                                       wanted));
}

void SweepWriter::untested(const RoundTally& tally, const Untested& untested) {
  std::set<std::pair<std::string, std::string>> sweep_pairs;
  std::size_t retests = 0;
  for (const auto& u : untested.pairs) {
    if (u.kind == RoundKind::sweep)
      sweep_pairs.insert(std::minmax(u.host_a, u.host_b));
    else
      ++retests;
  }
  const auto n = static_cast<long long>(job_.hosts.size());
  const auto not_covered =
      opt_.adaptive ? n * (n - 1) / 2 - tally.adaptive_pairs_tested : static_cast<long long>(sweep_pairs.size());
  if (untested.budget.limited() || !untested.pairs.empty())
    context_.out->attribute("pairs_not_covered", static_cast<double>(not_covered));
  if (!job_.excluded.empty())
    context_.out->note(fmt::format("resumed without {}: their pairs the earlier part had not measured are not tested",
                                   job_.excluded_text()));
  if (untested.budget.limited()) {
    context_.out->attribute("budget_s", untested.budget.budget_s());
    const auto spent = std::chrono::duration<double>(std::chrono::steady_clock::now() - untested.started).count();
    std::string note;
    if (opt_.adaptive) {  // no schedule: what the plan reached of every pair and host
      note = fmt::format(
          "--budget {}: {} rounds run in {} (a round: {}); the adaptive plan judged {} of {} hosts and "
          "tested {} of {} pairs{}; not covered: {} pairs",
          opt_.budget_given, tally.sweep_rounds, human_duration(spent),
          human_duration(untested.budget.round_estimate_s()), tally.adaptive_hosts_judged, n,
          tally.adaptive_pairs_tested, n * (n - 1) / 2,
          opt_.rails > 1 ? fmt::format(" (on all {} rails)", opt_.rails) : "", not_covered);
    } else {
      note = fmt::format("--budget {}: {} of {} rounds run in {} (a round: {})", opt_.budget_given, tally.sweep_rounds,
                         rounds_planned_, human_duration(spent), human_duration(untested.budget.round_estimate_s()));
      std::size_t planned = 0;
      for (const auto& r : job_.schedule->rounds()) planned += r.pairs.size();
      const auto by_budget = static_cast<std::size_t>(std::count_if(
          untested.pairs.begin(), untested.pairs.end(),
          [](const UntestedPair& u) { return u.kind == RoundKind::sweep && u.reason == UntestedReason::budget; }));
      if (by_budget == 0 && retests == 0)
        note += "; every pair covered";
      else
        note += fmt::format("; not covered: {} of {} pairs{}{}", by_budget, planned,
                            opt_.rails > 1 ? fmt::format(" (on all {} rails)", opt_.rails) : "",
                            retests ? fmt::format(", {} re-tests", retests) : "");
    }
    context_.out->note(note);
  }
  if (untested.pairs.empty()) return;
  context_.out->note(fmt::format("{} pairs not tested: /sweep/untested", sweep_pairs.size()));
  context_.out->declare(tables_.untested);
  std::vector<results::Row> rows;
  for (const auto& u : untested.pairs)
    rows.push_back(results::Row(tables_.untested)
                       .set(tables_.untested_col.round, std::int64_t(u.round))
                       .set(tables_.untested_col.kind, std::string(kind_name(u.kind)))
                       .set(tables_.untested_col.host_a, u.host_a)
                       .set(tables_.untested_col.host_b, u.host_b)
                       .set(tables_.untested_col.reason, std::string(reason_name(u.reason))));
  context_.out->rows(rows);
}

}  // namespace fabricbench::tools::sweep
