// The tables fabric-sweep writes (/sweep/pairs, verdicts, nodes, rounds, schedule, nics, nic_traffic, topology,
// switches, untested, passes, changes), declared once in sweep_tables.cpp with what each column is (unit, role, which
// way is better: what the terminal, the HDF5 file and fabric-report read), and a typed handle of every column the
// tool sets: each name and type checked once, when the tool is made, and each value's type by the compiler.
#pragma once
#include <cstdint>
#include <string>

#include "fabricbench/results/table.hpp"

namespace fabricbench::tools::sweep {

struct SweepTables {
  SweepTables();

  // The handles of each table's columns (the *_col members below).
  using Int = results::ColumnHandle<std::int64_t>;
  using Real = results::ColumnHandle<double>;
  using Text = results::ColumnHandle<std::string>;
  struct PairColumns {
    PairColumns() = default;
    explicit PairColumns(const results::TableSpec& t);
    Int pass, round, rail, bytes, iterations, window, cut, hung, wrong;
    Text kind, host_a, host_b, metric, direction, nic_a, nic_b, unit, counters_host;
    Real value, time_us_median, time_us_p99, setup_s, measure_s;
  };
  struct VerdictColumns {
    VerdictColumns() = default;
    explicit VerdictColumns(const results::TableSpec& t);
    Text metric, kind, host_a, host_b, nic, switch_name, reason;
    Int rail;
  };
  struct NodeColumns {
    NodeColumns() = default;
    explicit NodeColumns(const results::TableSpec& t);
    Text host, metric, nic, unit;
    Int rail, pairs, suspect_pairs;
    Real median;
  };
  struct RoundColumns {
    RoundColumns() = default;
    explicit RoundColumns(const results::TableSpec& t);
    Int pass, round, pairs, duplex;
    Text kind;
    Real wall_s, longest_test_s, overhead_s, setup_s, r0_split_s, r0_test_s, r0_teardown_s, r0_wait_s, r0_report_s;
  };

  struct ChangeColumns {
    ChangeColumns() = default;
    explicit ChangeColumns(const results::TableSpec& t);
    Int pass, rail;
    Text started, change, kind, metric, host_a, host_b, nic, switch_name, unit, text;
    Real before, after;
  };
  struct PassColumns {
    PassColumns() = default;
    explicit PassColumns(const results::TableSpec& t);
    Int pass, rounds, pairs, verdicts, changes;
    Text started;
    Real start_s, wall_s;
  };
  struct UntestedColumns {
    UntestedColumns() = default;
    explicit UntestedColumns(const results::TableSpec& t);
    Int round;
    Text kind, host_a, host_b, reason;
  };
  struct TopologyColumns {
    TopologyColumns() = default;
    explicit TopologyColumns(const results::TableSpec& t);
    Int rail;
    Text host, leaf, spine;
  };
  struct SwitchColumns {
    SwitchColumns() = default;
    explicit SwitchColumns(const results::TableSpec& t);
    Int rail, hosts, inside_pairs, inside_suspect, crossing_pairs, crossing_suspect;
    Text switch_name, metric, unit;
    Real inside_median, crossing_median;
  };
  struct ScheduleColumns {
    ScheduleColumns() = default;
    explicit ScheduleColumns(const results::TableSpec& t);
    Int round;
    Text kind, host_a, host_b;
  };
  struct TrafficColumns {
    TrafficColumns() = default;
    explicit TrafficColumns(const results::TableSpec& t);
    Int round, rail;
    Text host, nic;
    Real bytes, payload;
  };

  results::TableSpec pairs, verdicts, nodes, schedule, rounds, nics, traffic, topology, switches, untested, passes,
      changes;
  PairColumns pair_col;
  VerdictColumns verdict_col;
  NodeColumns node_col;
  RoundColumns round_col;
  ChangeColumns change_col;
  PassColumns pass_col;
  UntestedColumns untested_col;
  TopologyColumns topology_col;
  SwitchColumns switch_col;
  ScheduleColumns schedule_col;
  TrafficColumns traffic_col;
};

}  // namespace fabricbench::tools::sweep
