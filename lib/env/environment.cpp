#include "fabricbench/env/environment.hpp"

#include "fabricbench/facts/environment_variables.hpp"
#include "fabricbench/facts/host_files.hpp"

#include <fmt/format.h>
#include <sys/utsname.h>

#include <algorithm>
#include <array>
#include <cctype>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <memory>
#include <thread>

extern char** environ;

namespace fabricbench::env {
namespace {

std::string read_first_line(const std::string& path) {
  std::ifstream in(path);
  std::string line;
  std::getline(in, line);
  return line;
}

// "key=value" lines, one per entry; values never contain newlines (they are replaced by spaces).
std::string serialize(const std::map<std::string, std::string>& facts) {
  std::string out;
  for (auto [k, v] : facts) {
    std::replace(v.begin(), v.end(), '\n', ' ');
    out += k + "=" + v + "\n";
  }
  return out;
}
std::map<std::string, std::string> deserialize(const std::string& text) {
  std::map<std::string, std::string> facts;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);)
    if (auto eq = line.find('='); eq != std::string::npos) facts[line.substr(0, eq)] = line.substr(eq + 1);
  return facts;
}

std::string get(const std::map<std::string, std::string>& m, const std::string& key) {
  auto it = m.find(key);
  return it == m.end() ? std::string{} : it->second;
}

}  // namespace

std::map<std::string, std::string> describe_host(const std::string& host) {
  std::map<std::string, std::string> out;
  utsname u{};
  if (uname(&u) == 0) out["kernel"] = fmt::format("{} {} {}", u.sysname, u.release, u.machine);
  out["mpi"] = runtime::MpiSession::library_version();
  out["cpu"] = [] {
    std::ifstream in("/proc/cpuinfo");
    for (std::string line; std::getline(in, line);)
      if (line.rfind("model name", 0) == 0) return line.substr(line.find(':') + 2);
    return std::string{};
  }();
  out["cores"] = std::to_string(std::thread::hardware_concurrency());
  std::string os = read_first_line("/etc/os-release");
  {
    std::ifstream in("/etc/os-release");
    for (std::string line; std::getline(in, line);)
      if (line.rfind("PRETTY_NAME=", 0) == 0) os = line.substr(12);
  }
  os.erase(std::remove(os.begin(), os.end(), '"'), os.end());
  out["os"] = os;
  out["driver"] = read_first_line("/sys/module/nvidia/version");
  // dev[port:state/...]: every RDMA device of the host and the state of its ports.
  std::map<std::string, std::string> devices;
  for (const auto& port : facts::read_rdma_ports(facts::HostFiles{})) {
    auto& text = devices[port.device];
    text += fmt::format("{}{}:{}", text.empty() ? "" : "/", port.port, port.state);
  }
  std::string rdma;
  for (const auto& [device, ports] : devices) rdma += fmt::format("{}{}[{}]", rdma.empty() ? "" : " ", device, ports);
  out["rdma_devices"] = rdma;
  if (const char* hook = std::getenv("FABRICBENCH_TEST_HOST_FACT")) {  // HOST:key=value
    const std::string h(hook);
    const auto colon = h.find(':'), eq = h.find('=');
    if (colon != std::string::npos && eq != std::string::npos && eq > colon && h.substr(0, colon) == host)
      out[h.substr(colon + 1, eq - colon - 1)] = h.substr(eq + 1);
  }
  return out;
}

EnvironmentCapture::EnvironmentCapture() {
  using namespace results;
  // Who and what: the rank, host and variable name identify a row; the rest are facts of it (settings).
  ranks_ = {"env", "ranks", {key_int("rank"), setting_text("host", 64), setting_int("local_rank"), setting_int("gpu"),
                             setting_text("gpu_name", 64), setting_text("gpu_uuid", 48), setting_text("pci_bus_id", 24)}};
  hosts_ = {"env", "hosts", {key_text("host", 64), setting_text("os", 64), setting_text("kernel", 96),
                             setting_text("cpu", 96), setting_int("cores"), setting_text("mpi", 96),
                             setting_text("driver", 32), setting_text("cuda", 32), setting_text("nccl", 32),
                             setting_text("rdma_devices", 256), setting_text("rdma_core", 48), setting_text("hca_count", 8),
                             setting_text("hca_firmware", 96), setting_text("port_rates", 64), setting_text("mtu", 48),
                             setting_text("gid_type", 32), setting_text("gpu_count", 8), setting_text("gpu_model", 96)}};
  variables_ = {"env", "variables", {key_text("host", 64), key_text("name", 64), setting_text("value", 512)}};
  expected_ = {"env", "expected", {key_text("host", 64), key_text("kind", 16), key_text("subject", 32),
                                   measured("gbps", Unit::gbps, Better::higher, "GB/s"), setting_text("basis", 96)}};
  checks_ = doctor::findings_table("env", "checks");
}

namespace {

constexpr char field_sep = '\x1f', record_sep = '\x1e';

std::string serialize_expected(const std::vector<facts::Expected>& list) {
  std::string out;
  for (const auto& e : list) out += fmt::format("{}{}{}{}{:.6g}{}{}{}", e.kind, field_sep, e.subject, field_sep, e.gbps, field_sep, e.basis, record_sep);
  return out;
}
std::vector<facts::Expected> deserialize_expected(const std::string& host, const std::string& text) {
  std::vector<facts::Expected> out;
  std::istringstream in(text);
  for (std::string record; std::getline(in, record, record_sep);) {
    std::istringstream fields(record);
    facts::Expected e;
    e.host = host;
    std::string gbps;
    std::getline(fields, e.kind, field_sep);
    std::getline(fields, e.subject, field_sep);
    std::getline(fields, gbps, field_sep);
    std::getline(fields, e.basis, field_sep);
    if (!gbps.empty()) out.push_back((e.gbps = std::stod(gbps), e));
  }
  return out;
}

// The host part of the capture, on the first rank of each host: versions, hardware facts, expected bandwidth and,
// with `checks`, the cheap checks (host and rank scope, this rank standing for the host's ranks).
void describe_this_host(const runtime::Placement& placement, bool checks, std::map<std::string, std::string>& out) {
  const auto& me = placement.me();
  for (auto& [k, v] : describe_host(me.host)) out["host." + k] = v;
  for (auto& [k, v] : facts::allowed_variables(environ)) out["var." + k] = v;
  auto context = doctor::Context::gather(me.host, me.rank, static_cast<int>(placement.hosts().size()));
  std::unique_ptr<facts::GpuInfo> nvml;
  if (context.any_gpu()) {
    nvml = facts::load_nvml(&context.gpu_skip);
    context.gpus = nvml.get();
  }
  for (auto& [k, v] : facts::hardware_facts(context))
    if (!out.count("host." + k)) out["host." + k] = v;
  out["expected"] = serialize_expected(facts::expected_bandwidth(context));
  if (!checks) return;
  doctor::Findings found;
  const auto cheap = doctor::select_checks("cheap");
  doctor::run_checks(cheap, doctor::Scope::host, context, found);
  doctor::run_checks(cheap, doctor::Scope::rank, context, found);
  out["checks"] = found.serialize();
}

}  // namespace

EnvReport EnvironmentCapture::gather(const runtime::Communicator& world, const runtime::Placement& placement, int gpu,
                                     results::ResultSet* out, bool checks) const {
  // Every rank describes itself; the first rank of each host also describes the host and its variables.
  auto facts = describe_rank(gpu);
  if (placement.me().local_rank == 0) describe_this_host(placement, checks, facts);
  const auto all = world.gather(serialize(facts), 0);
  EnvReport report;
  if (!out) return report;
  out->declare(ranks_);
  out->declare(hosts_);
  out->declare(variables_);
  out->declare(expected_);
  if (checks) out->declare(checks_);
  std::vector<results::Row> rows;
  for (std::size_t r = 0; r < all.size(); ++r) {
    const auto f = deserialize(all[r]);
    const auto& place = placement.ranks()[r];
    results::Row row(ranks_);
    row.set("rank", std::int64_t(r)).set("host", place.host).set("local_rank", std::int64_t(place.local_rank));
    row.set("gpu", std::int64_t(std::stoi(get(f, "gpu")))).set("gpu_name", get(f, "gpu_name"));
    row.set("gpu_uuid", get(f, "gpu_uuid")).set("pci_bus_id", get(f, "pci_bus_id"));
    rows.push_back(row);
    if (place.local_rank != 0) continue;
    results::Row host(hosts_);
    host.set("host", place.host);
    doctor::HostFacts hf{place.host, {}};
    for (const auto& [k, v] : f)
      if (k.rfind("host.", 0) == 0) hf.facts[k.substr(5)] = v;
    hf.facts["cuda"] = get(f, "cuda");
    hf.facts["nccl"] = get(f, "nccl");
    for (const auto& column : hosts_.columns)
      if (column.name != "host" && column.name != "cores") host.set(column.name, hf.facts[column.name]);
    host.set("cores", std::int64_t(std::stoi("0" + get(f, "host.cores"))));
    rows.push_back(host);
    report.hosts.push_back(std::move(hf));
    for (const auto& [k, v] : f) {
      if (k.rfind("var.", 0) != 0) continue;
      results::Row var(variables_);
      var.set("host", place.host).set("name", k.substr(4)).set("value", v);
      rows.push_back(var);
    }
    for (auto& e : deserialize_expected(place.host, get(f, "expected"))) {
      rows.push_back(results::Row(expected_).set("host", e.host).set("kind", e.kind).set("subject", e.subject)
                         .set("gbps", e.gbps).set("basis", e.basis));
      report.expected.push_back(std::move(e));
    }
    for (auto& finding : doctor::Findings::deserialize(get(f, "checks"))) report.checks.push_back(std::move(finding));
  }
  if (checks) {
    doctor::Findings consistency;
    doctor::check_consistency(report.hosts, consistency);
    for (const auto& finding : consistency.all()) report.checks.push_back(finding);
    for (const auto& finding : report.checks) rows.push_back(doctor::to_row(checks_, finding));
  }
  out->rows(rows);
  return report;
}

}  // namespace fabricbench::env
