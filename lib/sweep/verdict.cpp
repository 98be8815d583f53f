#include "fabricbench/sweep/verdict.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <boost/property_tree/ptree.hpp>
#include <set>

#include "fabricbench/cli/ini_file.hpp"
#include "fabricbench/error.hpp"
#include "fabricbench/timing/sample_stats.hpp"

namespace fabricbench::sweep {
namespace {

// A fraction in (0, 1] or (`multiple`) a factor of at least 1.
double number(const boost::property_tree::ptree& node, const std::string& file, const std::string& key, bool multiple) {
  const auto text = node.get_value<std::string>();
  if (const auto v = cli::parse_number(text); v && (multiple ? *v >= 1 : *v > 0 && *v <= 1)) return *v;
  throw Error::usage(fmt::format("{}: {} = '{}': give {}", file, key, text,
                                 multiple ? "a multiple of at least 1" : "a fraction above 0 and at most 1"));
}

}  // namespace

Rules Rules::load(const std::string& path, const results::Baseline& baseline, const std::vector<std::string>& metrics) {
  Rules rules;
  for (const auto& [section, keys] : cli::read_ini(path, "--rules")) {
    if (section != "attribution" && !metrics.empty() && std::find(metrics.begin(), metrics.end(), section) == metrics.end()) {
      std::string allowed = "attribution";
      for (const auto& m : metrics) allowed += ", " + m;
      throw Error::usage(fmt::format("{}: [{}]: unknown section; allowed: {}", path, section, allowed));
    }
    if (section == "attribution") {
      for (const auto& [key, value] : keys) {
        if (key != "bad_node_fraction")
          throw Error::usage(fmt::format("{}: [attribution] {}: unknown key; allowed: bad_node_fraction", path, key));
        rules.bad_node_fraction = number(value, path, "[attribution] " + key, false);
      }
      continue;
    }
    MetricRule r;
    for (const auto& [key, value] : keys) {
      const auto where = fmt::format("[{}] {}", section, key);
      if (key == "suspect_below_fraction_of_median") {
        r.below_fraction_of_median = number(value, path, where, false);
      } else if (key == "suspect_above_multiple_of_best") {
        r.above_multiple_of_best = number(value, path, where, true);
      } else {
        throw Error::usage(fmt::format("{}: {}: unknown key; allowed: suspect_below_fraction_of_median, "
                                       "suspect_above_multiple_of_best (which way is better is the metric's own)", path, where));
      }
    }
    rules.metrics[section] = r;
  }
  for (auto& [metric, rule] : rules.metrics)
    if (const auto e = baseline.expected("sweep/pairs", {{"metric", metric}}, "value")) {
      rule.baseline = e->value;
      rule.baseline_tolerance = e->tolerance;
    }
  return rules;
}

const MetricRule& Rules::rule(const std::string& metric) const {
  const auto it = metrics.find(metric);
  if (it == metrics.end()) throw Error::usage(fmt::format("the rules file has no [{}] section", metric));
  return it->second;
}

Assessment assess(const std::string& metric, const MetricRule& rule, double bad_node_fraction, int hosts,
                  const std::vector<PairValue>& values, const std::vector<std::string>& names) {
  // The best value of each unordered pair: the one reduction of a pair's values (directions, re-tests).
  Assessment out;
  auto& best = out.best;
  for (const auto& v : values) {
    if (std::isnan(v.value)) continue;
    const auto key = std::minmax(v.a, v.b);
    auto [it, fresh] = best.emplace(key, v.value);
    if (!fresh) it->second = rule.higher_is_better ? std::max(it->second, v.value) : std::min(it->second, v.value);
  }
  out.suspect.assign(values.size(), false);
  if (best.empty()) return out;
  // Higher is better: the reference is the median over nodes of each node's median pair. The median pair itself is
  // not robust: a bad node is in half the pairs of a 4-node sweep, and re-tests add more of its pairs (seen on the
  // emulated cluster: 3 of 5 pairs slow, the median pair slow, nothing flagged). One bad node cannot move the
  // median of node medians. Lower is better: the best pair.
  std::vector<double> pair_values, node_medians;
  for (const auto& [pair, v] : best) pair_values.push_back(v);
  for (int h = 0; h < hosts; ++h) {
    std::vector<double> mine;
    for (const auto& [pair, v] : best)
      if (pair.first == h || pair.second == h) mine.push_back(v);
    if (!mine.empty()) node_medians.push_back(timing::SampleStats::of(mine).median);
  }
  out.reference = rule.higher_is_better ? timing::SampleStats::of(node_medians).median
                                        : timing::SampleStats::of(pair_values).min;
  auto is_suspect = [&](double v) {
    if (rule.higher_is_better) {
      if (v < rule.below_fraction_of_median * out.reference) return true;
      return !std::isnan(rule.baseline) && v < rule.baseline * (1 - rule.baseline_tolerance);
    }
    if (v > rule.above_multiple_of_best * out.reference) return true;
    return !std::isnan(rule.baseline) && v > rule.baseline * (1 + rule.baseline_tolerance);
  };
  std::set<std::pair<int, int>> suspects;
  std::vector<int> tested(hosts, 0), bad(hosts, 0);
  for (const auto& [pair, v] : best) {
    ++tested[pair.first];
    ++tested[pair.second];
    if (!is_suspect(v)) continue;
    suspects.insert(pair);
    ++bad[pair.first];
    ++bad[pair.second];
  }
  for (std::size_t i = 0; i < values.size(); ++i)
    out.suspect[i] = suspects.count(std::minmax(values[i].a, values[i].b)) > 0;
  const char* unit_word = rule.higher_is_better ? "median node" : "best pair";
  std::vector<bool> bad_node(hosts, false);
  for (int h = 0; h < hosts; ++h) {
    if (tested[h] < 2 || bad[h] < bad_node_fraction * tested[h]) continue;
    bad_node[h] = true;
    out.verdicts.push_back({metric, "node", h, -1,
                            fmt::format("{}: {} of its {} pairs suspect ({} {:.4g})", names[h], bad[h], tested[h],
                                        unit_word, out.reference)});
  }
  for (const auto& pair : suspects) {
    if (bad_node[pair.first] || bad_node[pair.second]) continue;
    const bool attributable = tested[pair.first] >= 2 && tested[pair.second] >= 2;
    out.verdicts.push_back({metric, attributable ? "link" : "pair", pair.first, pair.second,
                            fmt::format("{} - {}: {:.4g} against {} {:.4g}{}", names[pair.first], names[pair.second],
                                        best[pair], unit_word, out.reference,
                                        attributable ? "; both nodes fine with other peers"
                                                     : "; too few other pairs to tell node from link (use --retest)")});
  }
  return out;
}

std::vector<Round> plan_retests(int hosts, const std::vector<HostPair>& suspects) {
  std::set<int> in_suspect;
  for (const auto& p : suspects) in_suspect.insert({p.a, p.b});
  std::vector<int> good;
  for (int h = 0; h < hosts; ++h)
    if (!in_suspect.count(h)) good.push_back(h);
  std::vector<HostPair> wanted;
  std::size_t next_good = 0;
  for (const auto& p : suspects) {
    wanted.push_back(p);
    for (int h : {p.a, p.b}) {
      if (good.empty()) break;
      wanted.push_back({h, good[next_good++ % good.size()]});
    }
  }
  // Greedy packing: each pair goes into the first round where neither host is busy.
  std::vector<std::vector<HostPair>> packed;
  std::vector<std::set<int>> busy;
  for (const auto& p : wanted) {
    std::size_t r = 0;
    while (r < packed.size() && (busy[r].count(p.a) || busy[r].count(p.b))) ++r;
    if (r == packed.size()) {
      packed.emplace_back();
      busy.emplace_back();
    }
    packed[r].push_back(p);
    busy[r].insert({p.a, p.b});
  }
  std::vector<Round> rounds;
  for (auto& pairs : packed) rounds.push_back(Round::of(hosts, std::move(pairs)));
  return rounds;
}

}  // namespace fabricbench::sweep
