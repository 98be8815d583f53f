#include "fabricbench/sweep/verdict.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <boost/property_tree/ptree.hpp>
#include <cmath>
#include <set>

#include "fabricbench/cli/ini_file.hpp"
#include "fabricbench/error.hpp"
#include "fabricbench/timing/sample_stats.hpp"

namespace fabricbench::sweep {

std::string_view kind_name(VerdictKind kind) {
  switch (kind) {
    case VerdictKind::node:
      return "node";
    case VerdictKind::link:
      return "link";
    case VerdictKind::pair:
      return "pair";
    case VerdictKind::hung:
      return "hung";
    case VerdictKind::nic:
      return "nic";
    case VerdictKind::leaf_switch:
      return "switch";
    case VerdictKind::uplink:
      return "uplink";
    case VerdictKind::path:
      return "path";
    case VerdictKind::data:
      return "data";
    case VerdictKind::noise:
      return "noise";
    case VerdictKind::untested:
      return "untested";
  }
  return "?";
}
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
  double intermittent_fraction = MetricRule{}.intermittent_fraction;
  int intermittent_peers = MetricRule{}.intermittent_peers;
  for (const auto& [section, keys] : cli::read_ini(path, "--rules")) {
    if (section != "attribution" && !metrics.empty() &&
        std::find(metrics.begin(), metrics.end(), section) == metrics.end()) {
      std::string allowed = "attribution";
      for (const auto& m : metrics) allowed += ", " + m;
      throw Error::usage(fmt::format("{}: [{}]: unknown section; allowed: {}", path, section, allowed));
    }
    if (section == "attribution") {
      for (const auto& [key, value] : keys) {
        const auto where = "[attribution] " + key;
        if (key == "bad_node_fraction") {
          rules.bad_node_fraction = number(value, path, where, false);
        } else if (key == "noise_gap") {
          rules.noise_gap = number(value, path, where, true);
        } else if (key == "noise_chance") {
          rules.noise_chance = number(value, path, where, false);
        } else if (key == "intermittent_fraction") {
          intermittent_fraction = number(value, path, where, false);
        } else if (key == "intermittent_peers") {
          const auto text = value.get_value<std::string>();
          const auto v = cli::parse_number(text);
          if (!v || !(*v >= 1 && *v <= 1e6) || *v != std::floor(*v))  // checked before the cast to int
            throw Error::usage(fmt::format("{}: {} = '{}': give a whole number from 1 to 1000000", path, where, text));
          intermittent_peers = static_cast<int>(*v);
        } else {
          throw Error::usage(
              fmt::format("{}: {}: unknown key; allowed: bad_node_fraction, intermittent_fraction, "
                          "intermittent_peers, noise_chance, noise_gap",
                          path, where));
        }
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
        throw Error::usage(
            fmt::format("{}: {}: unknown key; allowed: suspect_below_fraction_of_median, "
                        "suspect_above_multiple_of_best (which way is better is the metric's own)",
                        path, where));
      }
    }
    rules.metrics[section] = r;
  }
  for (auto& [metric, rule] : rules.metrics) {
    rule.intermittent_fraction = intermittent_fraction, rule.intermittent_peers = intermittent_peers;
    if (const auto e = baseline.expected("sweep/pairs", {{"metric", metric}}, "value")) {
      rule.baseline = e->value;
      rule.baseline_tolerance = e->tolerance;
    }
  }
  return rules;
}

bool MetricRule::beyond(double v, double reference) const {
  if (higher_is_better)
    return v < below_fraction_of_median * reference ||
           (!std::isnan(baseline) && v < baseline * (1 - baseline_tolerance));
  return v > above_multiple_of_best * reference || (!std::isnan(baseline) && v > baseline * (1 + baseline_tolerance));
}

const MetricRule& Rules::rule(const std::string& metric) const {
  const auto it = metrics.find(metric);
  if (it == metrics.end()) throw Error::usage(fmt::format("the rules file has no [{}] section", metric));
  return it->second;
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

std::vector<HostPair> RetestLedger::due(const std::vector<HostPair>& suspects) {
  std::vector<HostPair> due;
  for (const auto& p : suspects) {
    const auto u = p.unordered();
    auto& done = done_[{u.a, u.b}];
    if (done >= passes_) continue;
    ++done;
    due.push_back(p);
  }
  return due;
}

}  // namespace fabricbench::sweep
