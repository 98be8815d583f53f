// The capture: every rank describes itself as a row of /env/ranks; the first rank of each host adds the host's row,
// its allowlisted variables, the bandwidth its hardware should reach and the cheap checks' findings, as rows of their
// tables. Rank 0 gathers the rows (results::gather_rows) and hands them to the outputs.
#include "fabricbench/env/environment.hpp"

#include <fmt/format.h>
#include <unistd.h>  // environ (with C linkage, as every other file of a unity batch sees it)

#include <memory>

#include "fabricbench/facts/environment_variables.hpp"
#include "fabricbench/results/row_gather.hpp"

namespace fabricbench::env {
namespace {

std::string get(const std::map<std::string, std::string>& m, const std::string& key) {
  auto it = m.find(key);
  return it == m.end() ? std::string{} : it->second;
}

// What the first rank of a host sends: one row per table.
struct HostRows {
  std::vector<results::Row> host, variables, expected, checks;
};

}  // namespace

EnvironmentCapture::EnvironmentCapture() {
  using namespace results;
  // Who and what: the rank, host and variable name identify a row; the rest are facts of it (settings).
  ranks_ = {"env",
            "ranks",
            {key_int("rank"), setting_text("host", 64), setting_int("local_rank"), setting_int("gpu"),
             setting_text("gpu_name", 64), setting_text("gpu_uuid", 48), setting_text("pci_bus_id", 24)}};
  hosts_ = {"env",
            "hosts",
            {key_text("host", 64), setting_text("os", 64), setting_text("kernel", 96), setting_text("cpu", 96),
             setting_int("cores"), setting_text("mpi", 96), setting_text("driver", 32), setting_text("cuda", 32),
             setting_text("nccl", 32), setting_text("rdma_devices", 256), setting_text("rdma_core", 48),
             setting_text("hca_count", 8), setting_text("hca_firmware", 96), setting_text("port_rates", 64),
             setting_text("mtu", 48), setting_text("gid_type", 32), setting_text("gpu_count", 8),
             setting_text("gpu_model", 96)}};
  variables_ = {"env", "variables", {key_text("host", 64), key_text("name", 64), setting_text("value", 512)}};
  expected_ = {"env",
               "expected",
               {key_text("host", 64), key_text("kind", 16), key_text("subject", 32),
                measured("gbps", Unit::gbps, Better::higher, "GB/s"), setting_text("basis", 96)}};
  checks_ = doctor::findings_table("env", "checks");
  const auto text = [](const TableSpec& t, const char* name) { return t.handle<std::string>(name); };
  host_col_.host = text(hosts_, "host"), host_col_.cores = hosts_.handle<std::int64_t>("cores");
  for (const auto& column : hosts_.columns)
    if (column.name != "host" && column.name != "cores")
      host_col_.facts.emplace_back(column.name, hosts_.handle<std::string>(column.name));
  rank_col_ = {ranks_.handle<std::int64_t>("rank"),
               ranks_.handle<std::int64_t>("local_rank"),
               ranks_.handle<std::int64_t>("gpu"),
               text(ranks_, "host"),
               text(ranks_, "gpu_name"),
               text(ranks_, "gpu_uuid"),
               text(ranks_, "pci_bus_id")};
  variable_col_ = {text(variables_, "host"), text(variables_, "name"), text(variables_, "value")};
  expected_col_ = {text(expected_, "host"), text(expected_, "kind"), text(expected_, "subject"),
                   text(expected_, "basis"), expected_.handle<double>("gbps")};
}

EnvReport EnvironmentCapture::gather(const runtime::Communicator& world, const runtime::Placement& placement, int gpu,
                                     results::ResultSet* out, bool checks) const {
  const auto& me = placement.me();
  const auto rank = describe_rank(gpu);
  std::vector<results::Row> mine{results::Row(ranks_)
                                     .set(rank_col_.rank, me.rank)
                                     .set(rank_col_.host, me.host)
                                     .set(rank_col_.local_rank, me.local_rank)
                                     .set(rank_col_.gpu, gpu)
                                     .set(rank_col_.gpu_name, get(rank, "gpu_name"))
                                     .set(rank_col_.gpu_uuid, get(rank, "gpu_uuid"))
                                     .set(rank_col_.pci_bus_id, get(rank, "pci_bus_id"))};
  HostRows host;
  if (me.local_rank == 0) {
    // Versions, hardware facts (what describe_host has not said), this rank's CUDA and NCCL for the host.
    auto facts = describe_host(me.host);
    const auto context = doctor::Context::gather(me.host, me.rank, static_cast<int>(placement.hosts().size()), true);
    for (auto& [k, v] : facts::hardware_facts(context)) facts.emplace(k, v);
    for (const char* k : {"cuda", "nccl"}) facts.emplace(k, get(rank, k));
    results::Row row(hosts_);
    row.set(host_col_.host, me.host).set(host_col_.cores, std::atoll(get(facts, "cores").c_str()));
    for (const auto& [name, column] : host_col_.facts) row.set(column, get(facts, name));
    host.host.push_back(std::move(row));
    for (auto& [k, v] : facts::allowed_variables(environ))
      host.variables.push_back(results::Row(variables_)
                                   .set(variable_col_.host, me.host)
                                   .set(variable_col_.name, k)
                                   .set(variable_col_.value, v));
    for (const auto& e : facts::expected_bandwidth(context))
      host.expected.push_back(results::Row(expected_)
                                  .set(expected_col_.host, me.host)
                                  .set(expected_col_.kind, std::string(facts::to_string(e.kind)))
                                  .set(expected_col_.subject, e.subject)
                                  .set(expected_col_.gbps, e.gbps)
                                  .set(expected_col_.basis, e.basis));
    if (checks) {
      // The cheap checks, host and rank scope, this rank standing for the host's ranks.
      doctor::Findings found;
      const auto cheap = doctor::select_checks("cheap");
      doctor::run_checks(cheap, doctor::Scope::host, context, found);
      doctor::run_checks(cheap, doctor::Scope::rank, context, found);
      for (const auto& f : found.all()) host.checks.push_back(doctor::to_row(checks_, f));
    }
  }
  const auto ranks = results::gather_rows(world, ranks_, mine, 0);
  const auto hosts = results::gather_rows(world, hosts_, host.host, 0);
  const auto variables = results::gather_rows(world, variables_, host.variables, 0);
  const auto expected = results::gather_rows(world, expected_, host.expected, 0);
  const auto found = results::gather_rows(world, checks_, host.checks, 0);
  EnvReport report;
  if (!out) return report;
  for (const auto& row : hosts) {
    doctor::HostFacts hf{std::get<std::string>(row.get("host")), {}};
    for (const auto& column : hosts_.columns)
      if (column.name != "host")
        hf.facts[column.name] = column.type == results::ColumnType::integer
                                    ? std::to_string(std::get<std::int64_t>(row.get(column.name)))
                                    : std::get<std::string>(row.get(column.name));
    report.hosts.push_back(std::move(hf));
  }
  for (const auto& row : expected)
    report.expected.push_back(
        {std::get<std::string>(row.get("host")), facts::hardware_path(std::get<std::string>(row.get("kind"))),
         std::get<std::string>(row.get("subject")), row.number("gbps"), std::get<std::string>(row.get("basis"))});
  for (const auto& row : found) report.checks.push_back(doctor::from_row(row));
  out->declare(ranks_);
  out->declare(hosts_);
  out->declare(variables_);
  out->declare(expected_);
  std::vector<results::Row> rows;
  for (const auto* part : {&ranks, &hosts, &variables, &expected}) rows.insert(rows.end(), part->begin(), part->end());
  if (checks) {
    out->declare(checks_);
    doctor::Findings consistency;
    doctor::check_consistency(report.hosts, consistency);
    for (const auto& finding : consistency.all()) report.checks.push_back(finding);
    for (const auto& finding : report.checks) rows.push_back(doctor::to_row(checks_, finding));
  }
  out->rows(rows);
  return report;
}

}  // namespace fabricbench::env
