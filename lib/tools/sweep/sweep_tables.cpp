// fabric-sweep's tables, declared once (sweep_tables.hpp), and their columns' handles.
#include "fabricbench/tools/sweep/sweep_tables.hpp"

#include "fabricbench/facts/expected_share.hpp"
#include "fabricbench/facts/link_counters.hpp"

namespace fabricbench::tools::sweep {

namespace {

// One row per test of a pair: the pair, metric, size and rail, the figure, its timing, and the hosts' counters and
// expected share (the columns their modules declare).
results::TableSpec pairs_table() {
  using namespace results;
  TableSpec pairs{"sweep",
                  "pairs",
                  {key_int("pass"),
                   key_int("round"),
                   key_text("kind", 8),
                   key_text("host_a", 64),
                   key_text("host_b", 64),
                   series(key_text("metric", 16)),
                   key_text("direction", 8, "dir"),
                   key_int("rail"),
                   setting_text("nic_a", 64),
                   setting_text("nic_b", 64),
                   key_int("bytes", Unit::bytes),
                   setting_int("iterations"),
                   setting_int("window"),
                   setting_int("cut"),
                   setting_int("hung"),
                   headline(measured("value", Unit::none, Better::none)),
                   key_text("unit", 8),
                   statistic("time_us_median", Unit::us, Better::lower),
                   statistic("time_us_p99", Unit::us, Better::lower),
                   measured("setup_s", Unit::seconds, Better::lower, "setup"),
                   measured("measure_s", Unit::seconds, Better::lower, "measure"),
                   measured_int("wrong", Unit::bytes, Better::lower, "#wrong")}};
  for (auto& c : facts::counter_columns()) pairs.columns.push_back(std::move(c));
  // Whose error counters grew during the test (the hosts of the pair, comma-separated), so that a --resume keeps them.
  pairs.columns.push_back(results::setting_text("counters_host", 132));
  for (auto& c : facts::ExpectedShare::columns()) pairs.columns.push_back(std::move(c));
  return pairs;
}

}  // namespace

SweepTables::SweepTables() {
  using namespace results;
  pairs = pairs_table();
  verdicts = {"sweep",
              "verdicts",
              {key_text("metric", 16), key_text("kind", 8), key_text("host_a", 64), key_text("host_b", 64),
               key_int("rail"), setting_text("nic", 64), setting_text("switch", 132), setting_text("reason", 320)}};
  nodes = {"sweep",
           "nodes",
           {key_text("host", 64), series(key_text("metric", 16)), key_int("rail"), setting_text("nic", 64),
            headline(measured("median", Unit::none, Better::none)), key_text("unit", 8), setting_int("pairs"),
            measured_int("suspect_pairs", Unit::none, Better::lower, "suspect")}};
  rounds = {
      "sweep",
      "rounds",
      // duplex: 1 where the round ran both ways at once (Round::duplex: each host leading one pair, led in another).
      {key_int("pass"), key_int("round"), key_text("kind", 8), setting_int("pairs"), setting_int("duplex"),
       measured("wall_s", Unit::seconds, Better::lower), measured("longest_test_s", Unit::seconds, Better::lower),
       measured("overhead_s", Unit::seconds, Better::lower), measured("setup_s", Unit::seconds, Better::lower),
       // Rank 0's own round, phase by phase (its pair's): where overhead_s goes.
       measured("r0_split_s", Unit::seconds, Better::lower), measured("r0_test_s", Unit::seconds, Better::lower),
       measured("r0_teardown_s", Unit::seconds, Better::lower), measured("r0_wait_s", Unit::seconds, Better::lower),
       measured("r0_report_s", Unit::seconds, Better::lower)}};
  // --repeat: one row per pass done (its start, UTC and seconds after the first pass's; its wall time; how many rounds,
  // verdicts and changes), and each change: a verdict that appeared or went, with the figure before and after.
  passes = {"sweep",
            "passes",
            {key_int("pass"), setting_text("started", 24), measured("start_s", Unit::seconds, Better::none),
             measured("wall_s", Unit::seconds, Better::lower), setting_int("rounds"), setting_int("pairs"),
             measured_int("verdicts", Unit::none, Better::lower), measured_int("changes", Unit::none, Better::lower)}};
  changes = {"sweep",
             "changes",
             {key_int("pass"), setting_text("started", 24), key_text("change", 10), key_text("kind", 8),
              series(key_text("metric", 16)), key_text("host_a", 64), key_text("host_b", 64), key_int("rail"),
              setting_text("nic", 64), setting_text("switch", 132), measured("before", Unit::none, Better::none),
              headline(measured("after", Unit::none, Better::none)), key_text("unit", 8), setting_text("text", 400)}};
  schedule = {
      "sweep", "schedule", {key_int("round"), key_text("kind", 8), key_text("host_a", 64), key_text("host_b", 64)}};
  // Pairs of the plan that were not tested, and why ("budget").
  untested = {"sweep",
              "untested",
              {key_int("round"), key_text("kind", 8), key_text("host_a", 64), key_text("host_b", 64),
               setting_text("reason", 64)}};
  // Every rank's NICs: as its MPI and NCCL were told (environment), the RDMA port it opened, the one whose counters
  // it read for the data-path check.
  nics = {"sweep",
          "nics",
          {key_text("host", 64), key_int("rail"), key_int("rank"), setting_text("mpi_nic", 64),
           setting_text("nccl_nic", 64), setting_text("rdma_nic", 64), setting_text("counter_nic", 64)}};
  traffic = {"sweep",
             "nic_traffic",
             {key_int("round"), key_text("host", 64), key_int("rail"), key_text("nic", 64),
              measured("bytes", Unit::bytes, Better::none), measured("payload", Unit::bytes, Better::none)}};
  topology = {
      "sweep", "topology", {key_text("host", 64), key_int("rail"), key_text("leaf", 64), key_text("spine", 64)}};
  switches = {"sweep",
              "switches",
              {key_text("switch", 64), key_int("rail"), series(key_text("metric", 16)), key_text("unit", 8),
               setting_int("hosts"), setting_int("inside_pairs"),
               measured_int("inside_suspect", Unit::none, Better::lower, "in-suspect"), setting_int("crossing_pairs"),
               measured_int("crossing_suspect", Unit::none, Better::lower, "x-suspect"),
               measured("inside_median", Unit::none, Better::none, "in-median"),
               headline(measured("crossing_median", Unit::none, Better::none, "x-median"))}};
  pair_col = PairColumns(pairs);
  verdict_col = VerdictColumns(verdicts);
  node_col = NodeColumns(nodes);
  round_col = RoundColumns(rounds);
  change_col = ChangeColumns(changes);
  pass_col = PassColumns(passes);
  untested_col = UntestedColumns(untested);
  topology_col = TopologyColumns(topology);
  switch_col = SwitchColumns(switches);
  schedule_col = ScheduleColumns(schedule);
  traffic_col = TrafficColumns(traffic);
}

SweepTables::PairColumns::PairColumns(const results::TableSpec& t)
    : pass(t.handle<std::int64_t>("pass")),
      round(t.handle<std::int64_t>("round")),
      rail(t.handle<std::int64_t>("rail")),
      bytes(t.handle<std::int64_t>("bytes")),
      iterations(t.handle<std::int64_t>("iterations")),
      window(t.handle<std::int64_t>("window")),
      cut(t.handle<std::int64_t>("cut")),
      hung(t.handle<std::int64_t>("hung")),
      wrong(t.handle<std::int64_t>("wrong")),
      kind(t.handle<std::string>("kind")),
      host_a(t.handle<std::string>("host_a")),
      host_b(t.handle<std::string>("host_b")),
      metric(t.handle<std::string>("metric")),
      direction(t.handle<std::string>("direction")),
      nic_a(t.handle<std::string>("nic_a")),
      nic_b(t.handle<std::string>("nic_b")),
      unit(t.handle<std::string>("unit")),
      counters_host(t.handle<std::string>("counters_host")),
      value(t.handle<double>("value")),
      time_us_median(t.handle<double>("time_us_median")),
      time_us_p99(t.handle<double>("time_us_p99")),
      setup_s(t.handle<double>("setup_s")),
      measure_s(t.handle<double>("measure_s")) {}

SweepTables::VerdictColumns::VerdictColumns(const results::TableSpec& t)
    : metric(t.handle<std::string>("metric")),
      kind(t.handle<std::string>("kind")),
      host_a(t.handle<std::string>("host_a")),
      host_b(t.handle<std::string>("host_b")),
      nic(t.handle<std::string>("nic")),
      switch_name(t.handle<std::string>("switch")),
      reason(t.handle<std::string>("reason")),
      rail(t.handle<std::int64_t>("rail")) {}

SweepTables::NodeColumns::NodeColumns(const results::TableSpec& t)
    : host(t.handle<std::string>("host")),
      metric(t.handle<std::string>("metric")),
      nic(t.handle<std::string>("nic")),
      unit(t.handle<std::string>("unit")),
      rail(t.handle<std::int64_t>("rail")),
      pairs(t.handle<std::int64_t>("pairs")),
      suspect_pairs(t.handle<std::int64_t>("suspect_pairs")),
      median(t.handle<double>("median")) {}

SweepTables::RoundColumns::RoundColumns(const results::TableSpec& t)
    : pass(t.handle<std::int64_t>("pass")),
      round(t.handle<std::int64_t>("round")),
      pairs(t.handle<std::int64_t>("pairs")),
      duplex(t.handle<std::int64_t>("duplex")),
      kind(t.handle<std::string>("kind")),
      wall_s(t.handle<double>("wall_s")),
      longest_test_s(t.handle<double>("longest_test_s")),
      overhead_s(t.handle<double>("overhead_s")),
      setup_s(t.handle<double>("setup_s")),
      r0_split_s(t.handle<double>("r0_split_s")),
      r0_test_s(t.handle<double>("r0_test_s")),
      r0_teardown_s(t.handle<double>("r0_teardown_s")),
      r0_wait_s(t.handle<double>("r0_wait_s")),
      r0_report_s(t.handle<double>("r0_report_s")) {}

SweepTables::ChangeColumns::ChangeColumns(const results::TableSpec& t)
    : pass(t.handle<std::int64_t>("pass")),
      rail(t.handle<std::int64_t>("rail")),
      started(t.handle<std::string>("started")),
      change(t.handle<std::string>("change")),
      kind(t.handle<std::string>("kind")),
      metric(t.handle<std::string>("metric")),
      host_a(t.handle<std::string>("host_a")),
      host_b(t.handle<std::string>("host_b")),
      nic(t.handle<std::string>("nic")),
      switch_name(t.handle<std::string>("switch")),
      unit(t.handle<std::string>("unit")),
      text(t.handle<std::string>("text")),
      before(t.handle<double>("before")),
      after(t.handle<double>("after")) {}

SweepTables::PassColumns::PassColumns(const results::TableSpec& t)
    : pass(t.handle<std::int64_t>("pass")),
      rounds(t.handle<std::int64_t>("rounds")),
      pairs(t.handle<std::int64_t>("pairs")),
      verdicts(t.handle<std::int64_t>("verdicts")),
      changes(t.handle<std::int64_t>("changes")),
      started(t.handle<std::string>("started")),
      start_s(t.handle<double>("start_s")),
      wall_s(t.handle<double>("wall_s")) {}

SweepTables::UntestedColumns::UntestedColumns(const results::TableSpec& t)
    : round(t.handle<std::int64_t>("round")),
      kind(t.handle<std::string>("kind")),
      host_a(t.handle<std::string>("host_a")),
      host_b(t.handle<std::string>("host_b")),
      reason(t.handle<std::string>("reason")) {}

SweepTables::TopologyColumns::TopologyColumns(const results::TableSpec& t)
    : rail(t.handle<std::int64_t>("rail")),
      host(t.handle<std::string>("host")),
      leaf(t.handle<std::string>("leaf")),
      spine(t.handle<std::string>("spine")) {}

SweepTables::SwitchColumns::SwitchColumns(const results::TableSpec& t)
    : rail(t.handle<std::int64_t>("rail")),
      hosts(t.handle<std::int64_t>("hosts")),
      inside_pairs(t.handle<std::int64_t>("inside_pairs")),
      inside_suspect(t.handle<std::int64_t>("inside_suspect")),
      crossing_pairs(t.handle<std::int64_t>("crossing_pairs")),
      crossing_suspect(t.handle<std::int64_t>("crossing_suspect")),
      switch_name(t.handle<std::string>("switch")),
      metric(t.handle<std::string>("metric")),
      unit(t.handle<std::string>("unit")),
      inside_median(t.handle<double>("inside_median")),
      crossing_median(t.handle<double>("crossing_median")) {}

SweepTables::ScheduleColumns::ScheduleColumns(const results::TableSpec& t)
    : round(t.handle<std::int64_t>("round")),
      kind(t.handle<std::string>("kind")),
      host_a(t.handle<std::string>("host_a")),
      host_b(t.handle<std::string>("host_b")) {}

SweepTables::TrafficColumns::TrafficColumns(const results::TableSpec& t)
    : round(t.handle<std::int64_t>("round")),
      rail(t.handle<std::int64_t>("rail")),
      host(t.handle<std::string>("host")),
      nic(t.handle<std::string>("nic")),
      bytes(t.handle<double>("bytes")),
      payload(t.handle<double>("payload")) {}

}  // namespace fabricbench::tools::sweep
