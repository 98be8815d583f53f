#include "fabricbench/sweep/mesh_history.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <tuple>

#include "fabricbench/timing/sample_stats.hpp"

namespace fabricbench::sweep {
namespace {

auto key(const Verdict& v) { return std::tie(v.metric, v.kind, v.a, v.b, v.rail, v.nic, v.switch_name); }

bool contains(const std::vector<Verdict>& list, const Verdict& v) {
  return std::any_of(list.begin(), list.end(), [&](const Verdict& w) { return key(w) == key(v); });
}

std::string value_text(double v) { return std::isnan(v) ? std::string("-") : fmt::format("{:.4g}", v); }

}  // namespace

double MeshHistory::figure(const Verdict& v, const Judgement& j) const {
  const auto k =
      std::find_if(metrics_.begin(), metrics_.end(), [&](const JudgedMetric& m) { return m.name == v.metric; }) -
      metrics_.begin();
  if (k == static_cast<long>(metrics_.size())) return NAN;
  const bool higher = metrics_[static_cast<std::size_t>(k)].better != results::Better::lower;
  if (v.kind == VerdictKind::node || v.kind == VerdictKind::nic) {
    std::vector<double> medians;
    for (const auto& s : j.nodes)
      if (s.metric == k && s.host == v.a && (v.kind == VerdictKind::node || s.rail == std::max(v.rail, 0)) &&
          !std::isnan(s.median))
        medians.push_back(s.median);
    return medians.empty() ? NAN : timing::SampleStats::of(medians).median;
  }
  if ((v.kind == VerdictKind::link || v.kind == VerdictKind::pair) && v.b >= 0) {
    const auto index = static_cast<std::size_t>(k * fabric_.rails + std::max(v.rail, 0));
    if (index >= j.matrices.size()) return NAN;
    const auto& m = j.matrices[index];
    const double ab = m.at(v.a, v.b), ba = m.at(v.b, v.a);
    if (std::isnan(ab) || std::isnan(ba)) return std::isnan(ab) ? ba : ab;
    return higher ? std::min(ab, ba) : std::max(ab, ba);
  }
  return NAN;
}

std::vector<MeshChange> MeshHistory::add(int pass, const std::string& started, const Judgement& judgement) {
  std::vector<MeshChange> out;
  const auto subject = [&](const Verdict& v) {
    std::string s = v.a < 0 ? v.switch_name : fabric_.hosts[static_cast<std::size_t>(v.a)];
    if (v.b >= 0) s += " - " + fabric_.hosts[static_cast<std::size_t>(v.b)];
    if (v.rail >= 0 && fabric_.rails > 1) s += fmt::format(" rail {}", v.rail);
    if (!v.nic.empty()) s += " (" + v.nic + ")";
    return s;
  };
  const auto unit_of = [&](const Verdict& v) {
    for (const auto& m : metrics_)
      if (m.name == v.metric) return std::string(results::to_string(m.value_unit));
    return std::string();
  };
  const auto when = started.size() >= 20 ? started.substr(11) : started;  // 14:02:30Z
  for (const auto& v : judgement.verdicts) {
    if (!first_ && contains(last_, v)) continue;
    MeshChange c{pass,       started, v, false, first_ ? NAN : figure(v, last_judgement_), figure(v, judgement),
                 unit_of(v), {}};
    const std::string scope = v.kind == VerdictKind::node ? " to every peer" : "";
    c.text = fmt::format("{} {}: {}{} {}{} {} from pass {}, {} ({})", kind_name(v.kind), subject(v), v.metric, scope,
                         std::isnan(c.before) ? "" : value_text(c.before) + " -> ", value_text(c.after), c.unit, pass,
                         when, v.reason);
    out.push_back(std::move(c));
  }
  for (const auto& v : last_) {
    if (contains(judgement.verdicts, v)) continue;
    MeshChange c{pass, started, v, true, figure(v, last_judgement_), figure(v, judgement), unit_of(v), {}};
    c.text = fmt::format("{} {}: {} back to {} {} from pass {}, {} (was {})", kind_name(v.kind), subject(v), v.metric,
                         value_text(c.after), c.unit, pass, when, value_text(c.before));
    out.push_back(std::move(c));
  }
  first_ = false;
  last_ = judgement.verdicts;
  last_judgement_ = judgement;
  return out;
}

}  // namespace fabricbench::sweep
