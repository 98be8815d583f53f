// fabric-sim: the sweep's real planner (PairSchedule + cover + plan_retests, or AdaptivePlan) and real judge driven by
// a synthetic fabric with injected faults, over seeds: rounds, simulated wall time, the judge's CPU on rank 0, records
// held, and per verdict kind precision and recall. A benchmark, not a timed test (docs/fabric-sweep.md).
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "fabricbench/error.hpp"
#include "fabricbench/sweep/adaptive_plan.hpp"
#include "fabricbench/sweep/round_budget.hpp"
#include "sim_fabric.hpp"

using namespace fabricbench;
using namespace fabricbench::sweep;

namespace {

const std::vector<std::string> plan_names{"all-pairs", "quick", "shift", "adaptive", "adaptive-duplex"};

struct Options {
  std::vector<int> hosts{256};
  int rails = 8, leaf = 32, seeds = 20, seeds_fixed = -1, retest = 1;
  std::uint64_t seed0 = 1;
  std::vector<std::string> plans{"all-pairs", "quick", "adaptive"};
  double budget_s = 0, pair_s = 0.5, setup_s = 0.3, timeout_s = 10;
  // adaptive-duplex's covering rounds (Round::duplex: each host sends and receives at once, two peers): their pair
  // tests and setup; below 0, --pair-time and --setup-time.
  double duplex_pair_s = -1, duplex_setup_s = -1;
  double noise = 0.03;                                   // the lognormal sigma of every pair value (FabricModel::sigma)
  std::vector<std::string> scenarios{"faults", "hung"};  // "clean": no fault at all
  long long max_records = 20'000'000;
  std::string rules = FABRICBENCH_SIM_RULES;
  bool json = false, explain = false;
};

[[noreturn]] void usage(const std::string& line) {
  std::fprintf(stderr, "fabric-sim: %s\n", line.c_str());
  std::exit(2);
}

double number(const std::string& option, const std::string& text, double lo, double hi, const std::string& allowed) {
  char* end = nullptr;
  const double v = std::strtod(text.c_str(), &end);
  if (text.empty() || *end != '\0' || !(v >= lo && v <= hi))
    usage(fmt::format("{} '{}': give {}", option, text, allowed));
  return v;
}

// A count: a whole number in [lo, hi] (2.5 rails or 64.9 hosts are refused, not truncated).
long long whole(const std::string& option, const std::string& text, double lo, double hi, const std::string& allowed) {
  if (text.find_first_not_of("0123456789") != std::string::npos)
    usage(fmt::format("{} '{}': give {} (digits only)", option, text, allowed));
  return static_cast<long long>(number(option, text, lo, hi, allowed));
}

std::vector<std::string> split(const std::string& text) {
  std::vector<std::string> out;
  std::istringstream in(text);
  for (std::string item; std::getline(in, item, ',');) out.push_back(item);
  return out;
}

Options parse(int argc, char** argv) {
  Options o;
  const std::string known =
      "--hosts, --rails, --leaf, --seeds, --seeds-fixed, --seed0, --plan, --budget, --retest, "
      "--pair-time, --setup-time, --duplex-pair-time, --duplex-setup-time, --timeout, --max-records, --rules, "
      "--noise, --scenarios, --json, --explain";
  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i], value;
    if (arg == "--json") {
      o.json = true;
      continue;
    }
    if (arg == "--explain") {
      o.explain = true;
      continue;
    }
    if (arg == "--help" || arg == "-h") {
      std::printf(
          "fabric-sim [--hosts 256,1024] [--rails 8] [--leaf 32] [--seeds 20] [--seeds-fixed S] [--seed0 1]\n"
          "  [--plan all-pairs,quick,shift,adaptive,adaptive-duplex] [--budget SECONDS] [--retest 1]\n"
          "  [--pair-time 0.5] [--setup-time 0.3] [--duplex-pair-time S] [--duplex-setup-time S] [--timeout 10]\n"
          "  [--max-records 20000000] [--rules FILE]\n"
          "  [--noise 0.03] [--scenarios faults,hung,clean] [--json] [--explain]\n");
      std::exit(0);
    }
    if (const auto eq = arg.find('='); eq != std::string::npos)
      value = arg.substr(eq + 1), arg = arg.substr(0, eq);
    else if (i + 1 < argc)
      value = argv[++i];
    else
      usage(fmt::format("{}: give a value (options: {})", arg, known));
    if (arg == "--hosts") {
      o.hosts.clear();
      for (const auto& h : split(value))
        o.hosts.push_back(
            static_cast<int>(whole("--hosts", h, 4, 100000, "host counts from 4 to 100000, comma-separated")));
      if (o.hosts.empty()) usage("--hosts '': give host counts from 4 to 100000, comma-separated");
    } else if (arg == "--rails")
      o.rails = static_cast<int>(whole(arg, value, 1, 64, "a whole number of rails from 1 to 64"));
    else if (arg == "--leaf")
      o.leaf = static_cast<int>(whole(arg, value, 2, 100000, "hosts per leaf, at least 2"));
    else if (arg == "--seeds")
      o.seeds = static_cast<int>(whole(arg, value, 1, 10000, "seeds from 1 to 10000"));
    else if (arg == "--seeds-fixed")
      o.seeds_fixed =
          static_cast<int>(whole(arg, value, 0, 10000, "seeds from 0 to 10000 for all-pairs, quick and shift"));
    else if (arg == "--seed0")
      o.seed0 = static_cast<std::uint64_t>(whole(arg, value, 0, 1e15, "a whole number from 0"));
    else if (arg == "--retest")
      o.retest = static_cast<int>(whole(arg, value, 0, 10, "re-test passes from 0 to 10"));
    else if (arg == "--budget")
      o.budget_s = number(arg, value, 0, 1e9, "seconds of simulated time (0: none)");
    else if (arg == "--pair-time")
      o.pair_s = number(arg, value, 1e-6, 1e6, "seconds of a round's pair tests, above 0");
    else if (arg == "--setup-time")
      o.setup_s = number(arg, value, 0, 1e6, "seconds of a round's setup, 0 or more");
    else if (arg == "--duplex-pair-time")
      o.duplex_pair_s = number(arg, value, 1e-6, 1e6, "seconds of a duplex round's pair tests, above 0");
    else if (arg == "--duplex-setup-time")
      o.duplex_setup_s = number(arg, value, 0, 1e6, "seconds of a duplex round's setup, 0 or more");
    else if (arg == "--timeout")
      o.timeout_s = number(arg, value, 0, 1e6, "seconds a round with a hung pair takes, 0 or more");
    else if (arg == "--max-records")
      o.max_records = static_cast<long long>(whole(arg, value, 1, 1e12, "a record count above 0"));
    else if (arg == "--rules")
      o.rules = value;
    else if (arg == "--noise")
      o.noise = number(arg, value, 0, 5, "the lognormal sigma of every pair value, 0 to 5");
    else if (arg == "--scenarios") {
      o.scenarios = split(value);
      for (const auto& sc : o.scenarios)
        if (sc != "faults" && sc != "hung" && sc != "clean")
          usage(fmt::format("--scenarios '{}': allowed: faults, hung, clean", sc));
      if (o.scenarios.empty()) usage("--scenarios '': allowed: faults, hung, clean");
    } else if (arg == "--plan") {
      o.plans = split(value);
      for (const auto& p : o.plans)
        if (std::find(plan_names.begin(), plan_names.end(), p) == plan_names.end())
          usage(fmt::format("--plan '{}': allowed: all-pairs, quick, shift, adaptive, adaptive-duplex", p));
      if (o.plans.empty()) usage("--plan '': allowed: all-pairs, quick, shift, adaptive, adaptive-duplex");
    } else
      usage(fmt::format("unknown option {}; allowed: {}", arg, known));
  }
  if (o.seeds_fixed < 0) o.seeds_fixed = o.seeds;
  if (o.duplex_pair_s < 0) o.duplex_pair_s = o.pair_s;
  if (o.duplex_setup_s < 0) o.duplex_setup_s = o.setup_s;
  for (int n : o.hosts)
    if (o.leaf > n) usage(fmt::format("--leaf {}: give at most the smallest --hosts ({})", o.leaf, n));
  if (std::find(o.plans.begin(), o.plans.end(), "shift") != o.plans.end() && o.rails > 1)
    usage("--plan shift: fabric-sweep refuses shift with --rails or --topology; give --rails 1 or another plan");
  return o;
}

struct RunResult {
  int rounds = 0;
  double sim_s = 0, judge_cpu_s = 0, judge_cpu_total_s = 0, plan_cpu_s = 0;
  long long records = 0;
  sim::Score score;
};

double cpu_now() { return static_cast<double>(std::clock()) / CLOCKS_PER_SEC; }

const std::vector<JudgedMetric> metrics{{"p2p_bw", results::Unit::mbps, results::Better::higher, true}};

// One plan on one scenario of one seed, as fabric-sweep runs it: rounds while the budget fits, hosts of a hung pair
// resting for the rest of a fixed plan (the pass loop's rest_hung_hosts; the adaptive plan decides that itself),
// --retest passes after a fixed plan, then the judge over every record.
RunResult run(const std::string& plan, const sim::FabricModel& model, const Topology& topo, const sim::Faults& faults,
              std::uint64_t seed, const Options& o, const Rules& rules, const Fabric& fabric) {
  RunResult out;
  std::mt19937_64 rng(seed * 1000003ull + 7);
  std::vector<PairRecord> records;
  RoundBudget budget = o.budget_s > 0 ? RoundBudget(o.budget_s, o.setup_s + o.pair_s) : RoundBudget();
  std::set<int> resting;
  const bool fixed = plan.rfind("adaptive", 0) != 0;
  const auto round = [&](const Round& r) {
    if (!budget.fits(out.sim_s)) return false;
    std::vector<HostPair> pairs;
    for (const auto& p : r.pairs)
      if (!fixed || (!resting.count(p.a) && !resting.count(p.b))) pairs.push_back(p);
    if (pairs.empty()) return true;
    const auto before = records.size();
    for (const auto& p : pairs) model.measure(out.rounds, p, faults, rng, records);
    bool hung = false;
    for (auto i = before; i < records.size(); ++i)
      if (records[i].hung) hung = true, fixed ? (void)resting.insert({records[i].a, records[i].b}) : (void)0;
    const double pair_s = r.duplex ? o.duplex_pair_s : o.pair_s;
    const double t = (r.duplex ? o.duplex_setup_s : o.setup_s) + (hung ? std::max(pair_s, o.timeout_s) : pair_s);
    out.sim_s += t;
    budget.measured(t);
    ++out.rounds;
    return true;
  };
  const auto judged = [&] {
    const double t0 = cpu_now();
    auto j = judge(records, metrics, rules, fabric);
    out.judge_cpu_s = cpu_now() - t0;
    out.judge_cpu_total_s += out.judge_cpu_s;
    return j;
  };
  if (fixed) {
    auto schedule = plan == "all-pairs" ? PairSchedule::all_pairs(model.hosts)
                    : plan == "quick"   ? PairSchedule::quick(model.hosts)
                                        : PairSchedule::shift(model.hosts);
    if (plan != "shift") schedule.cover(topo, model.rails);
    bool in_budget = true;
    for (const auto& r : schedule.rounds())
      if (!(in_budget = round(r))) break;
    for (int pass = 0; pass < o.retest && in_budget; ++pass) {
      const auto suspects = judged().suspects;
      if (suspects.empty()) break;
      for (const auto& r : plan_retests(model.hosts, suspects))
        if (!(in_budget = round(r))) break;
    }
  } else {
    AdaptiveOptions options;
    options.cover_pairs = o.budget_s > 0;  // as fabric-sweep: with a budget, the rest of it covers untested pairs
    options.duplex_cover = plan == "adaptive-duplex";
    AdaptivePlan adaptive(model.hosts, model.rails, &topo, metrics, rules, seed, options);
    for (;;) {
      const double t0 = cpu_now();
      const auto r = adaptive.next(records);
      out.plan_cpu_s += cpu_now() - t0;
      if (!r || !round(*r)) break;
    }
  }
  out.records = static_cast<long long>(records.size());
  const auto judgement = judged();
  out.score = sim::score(judgement, faults, model);
  if (o.explain) {  // every verdict and the faults, for reading why a kind fell short
    std::fprintf(stderr,
                 "%s seed %llu: faults node %d nic %d/r%d uplink leaf %d/r%d link %d-%d/r%d hung %d flaky %d; "
                 "%d rounds\n",
                 plan.c_str(), static_cast<unsigned long long>(seed), faults.node, faults.nic, faults.nic_rail,
                 faults.uplink_leaf, faults.uplink_rail, faults.link_a, faults.link_b, faults.link_rail, faults.hung,
                 faults.flaky, out.rounds);
    for (const auto& v : judgement.verdicts)
      std::fprintf(stderr, "  %s %d %d r%d %s: %s\n", std::string(sweep::kind_name(v.kind)).c_str(), v.a, v.b, v.rail,
                   v.switch_name.c_str(), v.reason.c_str());
  }
  return out;
}

struct Row {
  std::string plan;
  int hosts = 0, seeds = 0;
  bool simulated = true;
  std::string note;
  std::vector<RunResult> runs;  // per seed and scenario
  sim::Score score;
  double analytic_rounds = 0, analytic_s = 0;
};

double mean(const std::vector<RunResult>& runs, double RunResult::*field) {
  double sum = 0;
  for (const auto& r : runs) sum += r.*field;
  return runs.empty() ? 0 : sum / static_cast<double>(runs.size());
}
double most(const std::vector<RunResult>& runs, double RunResult::*field) {
  double m = 0;
  for (const auto& r : runs) m = std::max(m, r.*field);
  return m;
}
std::string ratio(long long num, long long den) {
  return den ? fmt::format("{:.3f}", static_cast<double>(num) / den) : "null";
}

}  // namespace

int main(int argc, char** argv) try {
  const auto o = parse(argc, argv);
  const auto rules = Rules::load(o.rules);
  std::vector<Row> rows;
  for (int n : o.hosts) {
    sim::FabricModel model{n, o.rails, o.leaf};
    model.sigma = o.noise;
    const auto topo = model.topology();
    Fabric fabric;
    fabric.hosts = model.names(), fabric.rails = o.rails, fabric.topology = &topo;
    for (const auto& plan : o.plans) {
      Row row;
      row.plan = plan, row.hosts = n;
      const bool fixed = plan.rfind("adaptive", 0) != 0;
      row.seeds = fixed ? o.seeds_fixed : o.seeds;
      if (fixed) {  // too many records to hold: rounds and time from the schedule alone
        auto schedule = plan == "all-pairs" ? PairSchedule::all_pairs(n)
                        : plan == "quick"   ? PairSchedule::quick(n)
                                            : PairSchedule::shift(n);
        if (plan != "shift") schedule.cover(topo, o.rails);
        long long pairs = 0;
        for (const auto& r : schedule.rounds()) pairs += static_cast<long long>(r.pairs.size());
        row.analytic_rounds = static_cast<double>(schedule.rounds().size());
        row.analytic_s = row.analytic_rounds * (o.setup_s + o.pair_s);
        if (pairs * o.rails * 2 > o.max_records || row.seeds == 0) {
          row.simulated = false;
          row.note =
              fmt::format("not simulated: {} records a seed (--max-records {}); rounds and time from the schedule",
                          pairs * o.rails * 2, o.max_records);
          rows.push_back(row);
          continue;
        }
      }
      for (int s = 0; s < row.seeds; ++s) {
        const std::uint64_t seed = o.seed0 + static_cast<std::uint64_t>(s);
        for (const auto& scenario : o.scenarios) {
          const auto faults = model.place(scenario, seed);
          auto r = run(plan, model, topo, faults, seed * 2 + (scenario[0] == 'h'), o, rules, fabric);
          row.score.add(r.score);
          row.runs.push_back(std::move(r));
        }
        if (!o.json) std::fprintf(stderr, "\r%s, %d hosts: seed %d of %d", plan.c_str(), n, s + 1, row.seeds);
      }
      if (!o.json) std::fprintf(stderr, "\n");
      rows.push_back(std::move(row));
    }
  }
  const std::vector<std::string> kinds{"node", "nic", "uplink", "link", "hung"};
  std::string json = fmt::format(
      "{{\"options\": {{\"rails\": {}, \"leaf\": {}, \"seeds\": {}, \"seeds_fixed\": {}, "
      "\"seed0\": {}, \"retest\": {}, \"budget_s\": {}, \"pair_time_s\": {}, "
      "\"setup_time_s\": {}, \"duplex_pair_time_s\": {}, \"duplex_setup_time_s\": {}, \"timeout_s\": {}, \"noise\": "
      "{}, \"scenarios\": [\"{}\"]}},\n \"results\": [",
      o.rails, o.leaf, o.seeds, o.seeds_fixed, o.seed0, o.retest, o.budget_s, o.pair_s, o.setup_s, o.duplex_pair_s,
      o.duplex_setup_s, o.timeout_s, o.noise, fmt::join(o.scenarios, "\", \""));
  std::string table =
      fmt::format("{:<15} {:>6} {:>5} {:>8} {:>10} {:>9} {:>9} {:>9} {:>10}  {}\n", "plan", "hosts", "seeds", "rounds",
                  "sim time", "judge s", "judge max", "plan s", "records", "recall/precision per kind; flaky host");
  for (std::size_t i = 0; i < rows.size(); ++i) {
    const auto& r = rows[i];
    json += fmt::format(
        "{}\n  {{\"plan\": \"{}\", \"hosts\": {}, \"rails\": {}, \"leaf\": {}, \"seeds\": {}, "
        "\"simulated\": {}, \"note\": \"{}\", ",
        i ? "," : "", r.plan, r.hosts, o.rails, o.leaf, r.seeds, r.simulated ? "true" : "false", r.note);
    if (!r.simulated) {
      json += fmt::format("\"rounds\": {}, \"sim_time_s\": {:.1f}}}", r.analytic_rounds, r.analytic_s);
      table += fmt::format("{:<15} {:>6} {:>5} {:>8} {:>10} {:>9} {:>9} {:>9} {:>10}  {}\n", r.plan, r.hosts, "-",
                           r.analytic_rounds, human_duration(r.analytic_s), "-", "-", "-", "-", r.note);
      continue;
    }
    double rounds = 0, rounds_max = 0;
    long long peak = 0;
    for (const auto& x : r.runs)
      rounds += x.rounds, rounds_max = std::max<double>(rounds_max, x.rounds), peak = std::max(peak, x.records);
    rounds /= static_cast<double>(std::max<std::size_t>(1, r.runs.size()));
    json += fmt::format(
        "\"rounds\": {:.2f}, \"rounds_max\": {}, \"sim_time_s\": {:.1f}, \"sim_time_max_s\": {:.1f}, "
        "\"judge_cpu_s\": {:.4f}, \"judge_cpu_max_s\": {:.4f}, \"judge_cpu_total_s\": {:.4f}, "
        "\"plan_cpu_s\": {:.4f}, \"peak_records\": {}, \"peak_record_bytes\": {}, ",
        rounds, rounds_max, mean(r.runs, &RunResult::sim_s), most(r.runs, &RunResult::sim_s),
        mean(r.runs, &RunResult::judge_cpu_s), most(r.runs, &RunResult::judge_cpu_s),
        mean(r.runs, &RunResult::judge_cpu_total_s), mean(r.runs, &RunResult::plan_cpu_s), peak,
        peak * static_cast<long long>(sizeof(PairRecord)));
    if (r.plan == "all-pairs" || r.plan == "quick")
      json += fmt::format("\"schedule_rounds\": {}, \"schedule_time_s\": {:.1f}, ", r.analytic_rounds, r.analytic_s);
    std::string per_kind, other;
    json += "\"kinds\": {";
    bool first = true;
    for (const auto& [kind, k] : r.score.kinds) {
      json += fmt::format(
          "{}\"{}\": {{\"injected\": {}, \"found\": {}, \"recall\": {}, \"verdicts\": {}, "
          "\"true_positives\": {}, \"precision\": {}}}",
          first ? "" : ", ", kind, k.injected, k.found, ratio(k.found, k.injected), k.verdicts, k.true_positives,
          ratio(k.true_positives, k.verdicts));
      first = false;
      if (std::find(kinds.begin(), kinds.end(), kind) != kinds.end())
        per_kind += fmt::format(" {} {}/{}", kind, ratio(k.found, k.injected), ratio(k.true_positives, k.verdicts));
      else if (k.verdicts)
        other += fmt::format(" {} x{}", kind, k.verdicts);
    }
    std::string flaky;
    for (const auto& [kind, c] : r.score.flaky_verdicts)
      flaky += fmt::format("{}\"{}\": {}", flaky.empty() ? "" : ", ", kind, c);
    json += fmt::format("}}, \"flaky\": {{\"injected\": {}, \"named_node\": {}, \"verdicts_naming_it\": {{{}}}}}}}",
                        r.score.flaky_injected, r.score.flaky_named_node, flaky);
    std::string flaky_text;
    for (const auto& [kind, c] : r.score.flaky_verdicts) flaky_text += fmt::format(" {} x{}", kind, c);
    table += fmt::format(
        "{:<15} {:>6} {:>5} {:>8.1f} {:>10} {:>9.3f} {:>9.3f} {:>9.3f} {:>10} {}{}; flaky: node {}/{},"
        " verdicts{}\n",
        r.plan, r.hosts, r.seeds, rounds, human_duration(mean(r.runs, &RunResult::sim_s)),
        mean(r.runs, &RunResult::judge_cpu_s), most(r.runs, &RunResult::judge_cpu_s),
        mean(r.runs, &RunResult::plan_cpu_s), peak, per_kind, other.empty() ? "" : ";" + other,
        r.score.flaky_named_node, r.score.flaky_injected, flaky_text.empty() ? " none" : flaky_text);
  }
  json += "\n]}\n";
  std::fputs(o.json ? json.c_str() : table.c_str(), stdout);
  return 0;
} catch (const Error& e) {
  std::fprintf(stderr, "fabric-sim: %s\n", e.what());
  return 2;
}
