// fabric-sweep's rails and switches: --rails, --rail-map and --topology read; each rail's RDMA device; a rail's
// tests with its NIC's byte counters read around them; every rank's NICs gathered to rank 0 (as its MPI and NCCL were
// told, as its rdma test opened, as its counters are read); the Fabric the judge reads; the switch tree's rows and
// per-leaf summaries.
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>

#include "fabricbench/error.hpp"
#include "fabricbench/results/row_gather.hpp"
#include "fabricbench/tools/sweep/sweep_benchmark.hpp"

namespace fabricbench::sweep {

void SweepBenchmark::configure_rails(const cli::po::variables_map& v, const runtime::Placement& placement) {
  local_rank_ = opt_.planned ? 0 : placement.me().local_rank;
  opt_.rails = 1;
  opt_.rail_map.reset();
  if (v.count("rails")) {
    std::vector<int> per_host(hosts_.size(), 0);
    for (std::size_t rank = 0; rank < host_of_rank_.size(); ++rank)
      ++per_host[static_cast<std::size_t>(host_of_rank_[rank])];
    for (std::size_t h = 0; h < hosts_.size(); ++h)
      if (per_host[h] != per_host[0])
        throw Error::usage(
            fmt::format("--rails: every host needs the same number of ranks (one per rail); {} has {}, "
                        "{} has {}",
                        hosts_[0], per_host[0], hosts_[h], per_host[h]));
    opt_.rails = per_host[0];
    if (const int given = v["rails"].as<int>(); given > 0 && given != opt_.rails)
      throw Error::usage(fmt::format("--rails={}: the job has {} ranks per host (one per rail)", given, opt_.rails));
    if (v.count("rail-map")) {
      opt_.rail_map = facts::RailMap::read(v["rail-map"].as<std::string>());
      if (opt_.rail_map->rails() < opt_.rails)
        throw Error::usage(fmt::format("--rail-map {}: {} rails, and the job has {} ranks per host (one per rail)",
                                       v["rail-map"].as<std::string>(), opt_.rail_map->rails(), opt_.rails));
    }
  } else if (v.count("rail-map")) {
    throw Error::usage("--rail-map: give --rails too (the map names the NIC of each local rank)");
  }
  opt_.topology.reset();
  if (v.count("topology")) {
    std::vector<std::string> files;
    std::string list = v["topology"].as<std::string>();
    for (std::size_t start = 0; start <= list.size();) {
      const auto comma = std::min(list.find(',', start), list.size());
      files.push_back(list.substr(start, comma - start));
      start = comma + 1;
    }
    if (files.size() > 1 && static_cast<int>(files.size()) != opt_.rails)
      throw Error::usage(
          fmt::format("--topology: {} files are one per rail, and the sweep has {} rail(s)", files.size(), opt_.rails));
    opt_.topology = Topology::read(files, hosts_, opt_.rails);
  }
}

std::unique_ptr<PairTest> SweepBenchmark::make_rail_rdma_test(const std::string& host, int qp_timeout) const {
  RdmaPairSettings settings;
  settings.rail = opt_.rails > 1 ? local_rank_ : -1;
  settings.bw_bytes = opt_.bw_bytes, settings.lat_bytes = opt_.lat_bytes, settings.qp_timeout = qp_timeout;
  if (opt_.rail_map && !opt_.rail_map->rail(local_rank_).rdma.empty()) {
    settings.device = opt_.rail_map->rail(local_rank_).rdma, settings.port = opt_.rail_map->rail(local_rank_).port;
  } else if (const char* given = std::getenv("FABRICBENCH_RAIL_NIC"); opt_.rails > 1 && given) {
    const std::string g = given;
    if (const auto colon = g.find(':'); colon != std::string::npos && colon > 0) {
      settings.device = g.substr(0, colon);
      settings.port = std::atoi(g.c_str() + colon + 1);
    }
  }
  return make_rdma_pair_test(host, settings);
}

Fabric SweepBenchmark::fabric() const {
  Fabric f;
  f.hosts = hosts_, f.rails = opt_.rails, f.topology = opt_.topology ? &*opt_.topology : nullptr;
  return f;
}

const std::vector<std::string>& SweepBenchmark::nics_of(const SweepMetric& m) const {
  return nics_.of(m, on_gpus(m) && opt_.backend == ops::BackendKind::nccl);
}

void SweepBenchmark::write_topology(const app::RunContext& context, const Judgement& judgement) {
  if (!opt_.topology) return;
  const auto& switches = opt_.topology->switches();
  context.out->declare(tables_.topology);
  std::vector<results::Row> rows;
  for (std::size_t h = 0; h < hosts_.size(); ++h)
    for (int r = 0; r < opt_.rails; ++r) {
      const int leaf = opt_.topology->leaf_of(static_cast<int>(h), r);
      rows.push_back(results::Row(tables_.topology)
                         .set(tables_.topology_col.host, hosts_[h])
                         .set(tables_.topology_col.rail, std::int64_t(r))
                         .set(tables_.topology_col.leaf, switches[static_cast<std::size_t>(leaf)].name)
                         .set(tables_.topology_col.spine, opt_.topology->parent_name(leaf)));
    }
  context.out->rows(rows);
  context.out->declare(tables_.switches);
  context.out->section(tables_.switches, "per leaf switch and rail (pairs inside the leaf, pairs crossing it)",
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
                       .set(tables_.switch_col.unit, std::string(opt_.metrics[s.metric]->unit))
                       .set(tables_.switch_col.hosts, s.hosts)
                       .set(tables_.switch_col.inside_pairs, s.inside_pairs)
                       .set(tables_.switch_col.inside_suspect, s.inside_suspect)
                       .set(tables_.switch_col.crossing_pairs, s.crossing_pairs)
                       .set(tables_.switch_col.crossing_suspect, s.crossing_suspect)
                       .set(tables_.switch_col.inside_median, s.inside_median)
                       .set(tables_.switch_col.crossing_median, s.crossing_median));
  context.out->rows(rows);
  const double coverage = judgement.leaf_pair_coverage;
  context.out->attribute("leaf_pair_coverage", coverage);
  std::size_t wanted = 0;
  for (int r = 0; r < opt_.rails; ++r) {
    const auto leaves = opt_.topology->leaves(r).size();
    wanted += leaves * (leaves - 1) / 2;
  }
  context.out->note(std::isnan(coverage)
                        ? "coverage: no rail has two leaves; nothing to cross"
                        : fmt::format("coverage: {:.0f}% of leaf pairs x rails crossed by a measured pair ({} of {})",
                                      100 * coverage, static_cast<std::size_t>(std::lround(coverage * wanted)),
                                      wanted));
}

}  // namespace fabricbench::sweep
