#include "fabricbench/tools/doctor/doctor_benchmark.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include <memory>

#include "fabricbench/cli/name_list.hpp"
#include "fabricbench/env/environment.hpp"
#include "fabricbench/results/row_gather.hpp"
#include "fabricbench/runtime/gpu.hpp"

namespace fabricbench::doctor {
namespace {

const char* scope_name(Scope s) { return s == Scope::host ? "host" : s == Scope::rank ? "rank" : "job"; }

bool selected(const std::vector<const Check*>& checks, std::string_view name) {
  for (const auto* c : checks)
    if (c->name == name) return true;
  return false;
}

}  // namespace

std::string list_checks() {
  std::string out = fmt::format("{:<20} {:<7} {:<5} {:<5} {}\n", "check", "group", "scope", "cheap", "what it looks at");
  for (const auto& c : all_checks())
    out += fmt::format("{:<20} {:<7} {:<5} {:<5} {}\n", c.name, c.group, scope_name(c.scope), c.cheap ? "yes" : "", c.summary);
  return out;
}

DoctorBenchmark::DoctorBenchmark() : table_(findings_table("doctor", "findings")) {}

std::string DoctorBenchmark::summary() const {
  return "fabric-doctor: RDMA ports and counters, limits, NCCL's transports, GPUs through NVML (P2P, NVLink, remapped "
         "rows, ECC, PCIe), host settings (THP, NUMA, ACS, IOMMU) and versions across hosts, on every host of the job.\n"
         "Exit status 1 when a check fails (--strict: or warns).";
}

void DoctorBenchmark::add_options(cli::po::options_description& options) {
  std::vector<std::string> groups;  // the table's, in its order
  for (const auto& c : all_checks())
    if (std::find(groups.begin(), groups.end(), c.group) == groups.end()) groups.emplace_back(c.group);
  options.add_options()
      ("checks", cli::po::value<std::string>()->default_value("all"),
       ("checks to run, comma-separated: all, cheap, a group (" + cli::name_choices(groups) +
        ") or a check's name (see --list)").c_str())
      ("list", "list the checks with one line each and exit")
      ("strict", "exit 1 when a check warns, not only when one fails")
      ("problems-only", "show only warn, fail and skip rows on the terminal (the file keeps all)");
}

void DoctorBenchmark::configure(const cli::po::variables_map& values, const cli::CommonOptions&,
                                const runtime::Placement& placement) {
  list_ = values.count("list") > 0;
  strict_ = values.count("strict") > 0;
  show_ok_ = values.count("problems-only") == 0;
  selected_ = select_checks(values["checks"].as<std::string>());
#ifdef FABRICBENCH_HAVE_CUDA
  try {
    gpu_ = runtime::bind_gpu(placement.me().machine_local_rank);
    gpu_bus_ = env::describe_rank(gpu_)["pci_bus_id"];
  } catch (const Error&) {
    gpu_ = -1;  // no GPU here: the GPU checks skip
  }
#else
  (void)placement;
#endif
}

ExitStatus DoctorBenchmark::run(const app::RunContext& ctx) {
  const auto& me = ctx.placement.me();
  auto context = Context::gather(me.host, ctx.world.rank(), static_cast<int>(ctx.placement.hosts().size()),
                                 me.local_rank == 0);
  context.gpu_bus = gpu_bus_;

  // NCCL's own view, when asked for: every rank needs a GPU, or none runs it.
  NcclLog nccl_log;
  if (selected(selected_, "nccl.transport")) {
    const bool all_have_gpu = ctx.world.all_sum(gpu_ < 0 ? 1 : 0) == 0;
    if (!all_have_gpu) {
      context.nccl_skip = "not every rank has a GPU";
    } else {
      ctx.measuring("NCCL probe (init + all_reduce with NCCL_DEBUG=INFO)");
      std::string why;
      const std::string text = run_nccl_probe(ctx.world, gpu_, &why);
      ctx.measured();
      if (!why.empty()) context.nccl_skip = why;
      else {
        nccl_log = parse_nccl_log(text);
        context.nccl_log = &nccl_log;
      }
    }
  }

  ctx.measuring("checks");
  Findings found;
  if (me.local_rank == 0) run_checks(selected_, Scope::host, context, found);
  run_checks(selected_, Scope::rank, context, found);
  std::vector<results::Row> mine;
  for (const auto& f : found.all()) mine.push_back(to_row(table_, f));
  const auto all = results::gather_rows(ctx.world, table_, mine, 0);
  ctx.measured();
  if (!ctx.is_root()) return ExitStatus::ok;

  Findings everything;
  for (const auto& row : all) everything.all().push_back(from_row(row));
  if (selected(selected_, "job.consistency")) check_consistency(ctx.environment.hosts, everything);
  write_findings(*ctx.out, table_, everything.all(), show_ok_);
  for (const auto& e : ctx.environment.expected)
    ctx.out->note(fmt::format("expected {} {} {}: {} ({})", e.host, e.kind, e.subject,
                              std::isnan(e.gbps) ? std::string("unknown") : fmt::format("{:.2f} GB/s", e.gbps), e.basis));
  ctx.out->note(fmt::format("{} fail, {} warn, {} skip, {} ok", everything.count(Status::fail),
                            everything.count(Status::warn), everything.count(Status::skip), everything.count(Status::ok)));
  const Status worst = everything.worst();
  return worst == Status::fail || (strict_ && worst == Status::warn) ? ExitStatus::measurement_failed : ExitStatus::ok;
}

}  // namespace fabricbench::doctor
