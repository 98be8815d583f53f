#include "fabricbench/tools/doctor/doctor_benchmark.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <memory>
#include <sstream>

#include "fabricbench/cli/command_line.hpp"
#include "fabricbench/cli/name_list.hpp"
#include "fabricbench/env/environment.hpp"
#include "fabricbench/results/row_gather.hpp"
#include "fabricbench/runtime/gpu.hpp"

namespace fabricbench::tools::doctor {
using namespace fabricbench::doctor;  // lib/doctor: what this tool runs
namespace {

const char* scope_name(Scope s) { return s == Scope::host ? "host" : s == Scope::rank ? "rank" : "job"; }

bool selected(const std::vector<const Check*>& checks, std::string_view name) {
  for (const auto* c : checks)
    if (c->name == name) return true;
  return false;
}

}  // namespace

std::string list_checks() {
  std::string out =
      fmt::format("{:<20} {:<7} {:<5} {:<5} {}\n", "check", "group", "scope", "cheap", "what it looks at");
  for (const auto& c : all_checks())
    out += fmt::format("{:<20} {:<7} {:<5} {:<5} {}\n", c.name, c.group, scope_name(c.scope), c.cheap ? "yes" : "",
                       c.summary);
  return out;
}

DoctorBenchmark::DoctorBenchmark() : table_(findings_table("doctor", "findings")) {}

std::string DoctorBenchmark::summary() const {
  return "fabric-doctor: RDMA ports and counters, limits, NCCL's transports, GPUs through NVML (P2P, NVLink, remapped "
         "rows, ECC, PCIe), host settings (THP, NUMA, ACS, IOMMU) and versions across hosts, on every host of the "
         "job.\n"
         "With --nccl-log LOG...: a real job's NCCL_DEBUG=INFO logs read instead (transports, calls per collective).\n"
         "Exit status 1 when a check fails (--strict: or warns).";
}

void DoctorBenchmark::add_options(cli::po::options_description& options) {
  std::vector<std::string> groups;  // the table's, in its order
  for (const auto& c : all_checks())
    if (std::find(groups.begin(), groups.end(), c.group) == groups.end()) groups.emplace_back(c.group);
  auto add = options.add_options();
  add("checks", cli::po::value<std::string>()->default_value("all"),
      ("checks to run, comma-separated: all, cheap, a group (" + cli::name_choices(groups) +
       ") or a check's name (see --list)")
          .c_str());
  add("list", "list the checks with one line each and exit");
  add("strict", "exit 1 when a check warns, not only when one fails");
  add("problems-only", "show only warn, fail and skip rows on the terminal (the file keeps all)");
  add("json", "print one JSON document of every table on stdout instead of the terminal tables");
  add("nccl-log", cli::po::value<std::vector<std::string>>()->multitoken(),
      "LOG[,LOG...]: read a job's NCCL_DEBUG=INFO logs (one per rank from NCCL_DEBUG_FILE, or the job's output with "
      "every rank's lines; '-' for stdin) instead of checking this host: network, devices, channels, the transport "
      "rules, and with NCCL_DEBUG_SUBSYS=COLL the calls per collective (see docs/nccl-log.md)");
  add("iteration-marker", cli::po::value<std::string>(),
      "with --nccl-log: a regular expression (ECMAScript) matching the line the job prints once per iteration "
      "('iteration +[0-9]+'): calls are counted per iteration too, as csplit would cut the log");
  add("rank", cli::po::value<int>(), "with --nccl-log: report this rank's processes only");
  add("nccl-ras", cli::po::value<std::string>()->implicit_value("127.0.0.1:28028"),
      "[HOST[:PORT]]: ask a running NCCL job (2.24 or later) through NCCL's RAS service, on any node of the job "
      "(default 127.0.0.1:28028, NCCL_RAS_ADDR): dead processes, ranks behind their communicator (asked twice, 2 s "
      "apart), missing ranks, errors; --timeout bounds each ask (default 30 s); see docs/nccl-ras.md");
  add("stacks",
      "with --nccl-ras: the stacks of the named processes that run on this host into the file (py-spy, "
      "gdb or eu-stack); for those elsewhere, the command to run there");
  add("topology", cli::po::value<std::string>(),
      "with --nccl-ras: FILE[,FILE...] in Slurm's topology.conf format (as fabric-sweep reads it): a named host's "
      "leaf switch");
  add("rail-map", cli::po::value<std::string>(),
      "with --nccl-ras: the rail map (as fabric-rail-exec reads it): the NIC of a named process's GPU");
}

namespace {

// --nccl-log a.log,b.log c.log -> {a.log, b.log, c.log}
std::vector<std::string> log_paths(const std::vector<std::string>& values) {
  std::vector<std::string> out;
  for (const auto& value : values) {
    std::size_t from = 0;
    for (std::size_t comma; (comma = value.find(',', from)) != std::string::npos; from = comma + 1)
      if (comma > from) out.push_back(value.substr(from, comma - from));
    if (from < value.size()) out.push_back(value.substr(from));
  }
  if (out.empty()) throw Error::usage("--nccl-log '': give one or more log files (LOG[,LOG...])");
  return out;
}

}  // namespace

void DoctorBenchmark::configure(const cli::po::variables_map& values, const cli::CommonOptions& common,
                                const runtime::Placement& placement) {
  list_ = values.count("list") > 0;
  // --list prints the table of checks and runs nothing: an option of a run beside it would be ignored.
  if (list_)
    for (const char* option : {"checks", "strict", "problems-only", "json", "nccl-log", "iteration-marker", "rank",
                               "nccl-ras", "stacks", "topology", "rail-map"})
      if (values.count(option) && !values[option].defaulted())
        throw Error::usage(fmt::format("--{} with --list: --list only prints the checks; drop one of them", option));
  strict_ = values.count("strict") > 0;
  show_ok_ = values.count("problems-only") == 0;
  json_ = values.count("json") > 0;
  if (values.count("nccl-ras")) {
    if (values.count("nccl-log"))
      throw Error::usage("--nccl-ras and --nccl-log: one asks a running job, the other reads a job's logs; give one");
    for (const char* option : {"iteration-marker", "rank"})
      if (values.count(option))
        throw Error::usage(fmt::format("--{} reads with --nccl-log only, not --nccl-ras", option));
    if (!values["checks"].defaulted())
      throw Error::usage("--checks with --nccl-ras: it asks the job and checks nothing on this host; drop one of them");
    const auto address = job::RasAddress::parse(values["nccl-ras"].as<std::string>(), "--nccl-ras");
    RasExtras extras;
    extras.stacks = values.count("stacks") > 0;
    if (values.count("topology")) {
      std::istringstream files(values["topology"].as<std::string>());
      for (std::string f; std::getline(files, f, ',');)
        if (!f.empty()) extras.topology.push_back(f);
    }
    if (values.count("rail-map")) extras.rail_map = values["rail-map"].as<std::string>();
    nccl_log_reader_ = true;
    if (placement.me().rank == 0)
      nccl_ras_ = std::make_unique<NcclRasMode>(address, common.timeout_s > 0 ? common.timeout_s : 30.0, 2.0, extras);
    return;
  }
  for (const char* option : {"stacks", "topology", "rail-map"})
    if (values.count(option)) throw Error::usage(fmt::format("--{} goes with --nccl-ras: give --nccl-ras too", option));
  nccl_log_reader_ = values.count("nccl-log") > 0;
  if (!nccl_log_reader_) {
    for (const char* option : {"iteration-marker", "rank"})
      if (values.count(option))
        throw Error::usage(fmt::format("--{} reads with --nccl-log only; give the logs with --nccl-log LOG", option));
  } else {
    if (!values["checks"].defaulted())
      throw Error::usage(
          "--checks with --nccl-log: the log mode reads logs and checks nothing on this host; drop one of them");
    const int rank = values.count("rank") ? values["rank"].as<int>() : -1;
    if (values.count("rank")) cli::require_at_least("--rank", rank, 0);
    const auto paths = log_paths(values["nccl-log"].as<std::vector<std::string>>());
    const std::string marker = values.count("iteration-marker") ? values["iteration-marker"].as<std::string>() : "";
    if (values.count("iteration-marker") && marker.empty())
      throw Error::usage("--iteration-marker '': give a regular expression matching the job's iteration lines");
    if (placement.me().rank == 0) nccl_log_ = std::make_unique<NcclLogMode>(paths, marker, rank);
    return;  // no GPU needed
  }
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
  if (nccl_ras_) return nccl_ras_->write(*ctx.out, table_, show_ok_, strict_);
  if (nccl_log_reader_)
    return ctx.is_root() && nccl_log_ ? nccl_log_->write(*ctx.out, table_, show_ok_, strict_) : ExitStatus::ok;
  const auto& me = ctx.placement.me();
  auto context =
      Context::gather(me.host, ctx.world.rank(), static_cast<int>(ctx.placement.hosts().size()), me.local_rank == 0);
  context.gpu_bus = gpu_bus_;

  // NCCL's own view, when asked for: every rank needs a GPU, or none runs it.
  job::NcclLog nccl_log;
  if (selected(selected_, "nccl.transport")) {
    const bool all_have_gpu = ctx.world.all_sum(gpu_ < 0 ? 1 : 0) == 0;
    if (!all_have_gpu) {
      context.nccl_skip = "not every rank has a GPU";
    } else {
      ctx.measuring("NCCL probe (init + all_reduce with NCCL_DEBUG=INFO)");
      std::string why;
      const std::string text = run_nccl_probe(ctx.world, gpu_, &why);
      ctx.measured();
      if (!why.empty())
        context.nccl_skip = why;
      else {
        nccl_log = job::parse_nccl_log(text);
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
    ctx.out->note(fmt::format("expected {} {} {}: {} ({})", e.host, facts::to_string(e.kind), e.subject,
                              std::isnan(e.gbps) ? std::string("unknown") : fmt::format("{:.2f} GB/s", e.gbps),
                              e.basis));
  ctx.out->note(fmt::format("{} fail, {} warn, {} skip, {} ok", everything.count(Status::fail),
                            everything.count(Status::warn), everything.count(Status::skip),
                            everything.count(Status::ok)));
  const Status worst = everything.worst();
  return worst == Status::fail || (strict_ && worst == Status::warn) ? ExitStatus::measurement_failed : ExitStatus::ok;
}

}  // namespace fabricbench::tools::doctor
