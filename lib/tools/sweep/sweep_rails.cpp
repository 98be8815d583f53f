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

namespace fabricbench::tools::sweep {
using namespace fabricbench::sweep;  // lib/sweep: what this tool runs

void SweepBenchmark::configure_rails(const cli::po::variables_map& v, const runtime::Placement& placement) {
  job_.local_rank = opt_.planned ? 0 : placement.me().local_rank;
  opt_.rails = 1;
  opt_.rail_map.reset();
  if (v.count("rails")) {
    std::vector<int> per_host(job_.hosts.size(), 0);
    for (std::size_t rank = 0; rank < job_.host_of_rank.size(); ++rank)
      ++per_host[static_cast<std::size_t>(job_.host_of_rank[rank])];
    for (std::size_t h = 0; h < job_.hosts.size(); ++h)
      if (per_host[h] != per_host[0])
        throw Error::usage(
            fmt::format("--rails: every host needs the same number of ranks (one per rail); {} has {}, "
                        "{} has {}",
                        job_.hosts[0], per_host[0], job_.hosts[h], per_host[h]));
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
    opt_.topology = Topology::read(files, job_.hosts, opt_.rails);
  }
}

std::unique_ptr<PairTest> SweepBenchmark::make_rail_rdma_test(const std::string& host, int qp_timeout) const {
  RdmaPairSettings settings;
  settings.rail = opt_.rails > 1 ? job_.local_rank : -1;
  settings.bw_bytes = opt_.bw_bytes, settings.lat_bytes = opt_.lat_bytes, settings.qp_timeout = qp_timeout;
  if (opt_.rail_map && !opt_.rail_map->rail(job_.local_rank).rdma.empty()) {
    settings.device = opt_.rail_map->rail(job_.local_rank).rdma,
    settings.port = opt_.rail_map->rail(job_.local_rank).port;
  } else if (const char* given = std::getenv("FABRICBENCH_RAIL_NIC"); opt_.rails > 1 && given) {
    const std::string g = given;
    if (const auto colon = g.find(':'); colon != std::string::npos && colon > 0) {
      settings.device = g.substr(0, colon);
      settings.port = std::atoi(g.c_str() + colon + 1);
    }
  }
  return make_rdma_pair_test(host, settings);
}

}  // namespace fabricbench::tools::sweep
