// fabric-sweep's options that the asked-for mode does not use, refused by name rather than dropped without a word
// (issue 48: --output beside --resume was ignored). Measurement options stay accepted with --dry-run: they are checked
// as in a run, so that a command line or a --config preset (quick.ini sets sizes, iters, warmup, check) takes
// --dry-run as it is; what a dry run cannot do is write files, resume or repeat.
#include <fmt/format.h>

#include <algorithm>

#include "fabricbench/tools/sweep/sweep_benchmark.hpp"

namespace fabricbench::tools::sweep {
using namespace fabricbench::sweep;  // lib/sweep: what this tool runs

void SweepBenchmark::refuse_unused(const cli::po::variables_map& v) const {
  const auto given = [&](const char* name) { return v.count(name) > 0 && !v[name].defaulted(); };
  if (opt_.dry_run)
    for (const char* name :
         {"output", "csv", "force", "prometheus", "baseline", "resume", "exclude", "repeat", "every", "bw-every"})
      if (given(name))
        throw Error::usage(fmt::format(
            "--{}: --dry-run prints the plan of one sweep and measures, writes and resumes nothing; drop one of them",
            name));
  if (given("pair-time-estimate") && !opt_.dry_run && !budget_.limited())
    throw Error::usage(
        "--pair-time-estimate: it is the time of a round before any is measured, for --dry-run and --budget; give "
        "one of them");
  if (given("force") && !opt_.resume.empty() && !given("csv"))
    throw Error::usage(
        fmt::format("--force: --resume {} appends to its file and overwrites nothing; drop --force", opt_.resume));
  const auto any = [&](auto&& pred) { return std::any_of(opt_.metrics.begin(), opt_.metrics.end(), pred); };
  if (given("qp-timeout") && !any([](const SweepMetric* m) { return m->family == MetricFamily::rdma; }))
    throw Error::usage("--qp-timeout: it sets the rdma metrics' ACK timeout; give --metric rdma_bw or rdma_lat");
  // Latency metrics (lower is better) send --lat-bytes. (--window stays accepted without p2p_bw/p2p_bibw: scripts
  // pass -W with every metric, as the tests' own sweeps do.)
  if (given("lat-bytes") && !any([](const SweepMetric* m) { return m->better == results::Better::lower; }))
    throw Error::usage("--lat-bytes: the message size of the latency metrics; give one (--metric p2p_latency)");
}

}  // namespace fabricbench::tools::sweep
