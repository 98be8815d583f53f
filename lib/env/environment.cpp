#include "fabricbench/env/environment.hpp"

#include <fmt/format.h>
#include <sys/utsname.h>

#include <algorithm>
#include <array>
#include <cctype>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <thread>

extern char** environ;

namespace fabricbench::env {
namespace {

constexpr std::array allowed_prefixes{"NCCL_", "UCX_", "OMPI_", "OPAL_", "PMIX_MCA_", "CUDA_", "NVIDIA_",
                                      "SLURM_JOB_", "SLURM_STEP_", "FI_", "MLX5_", "HCOLL_", "NVSHMEM_",
                                      "FABRICBENCH_", "IBV_", "RDMAV_", "UCC_", "TORCH_NCCL_"};
constexpr std::array allowed_names{"SLURM_NNODES", "SLURM_NTASKS", "SLURM_NTASKS_PER_NODE", "SLURM_CLUSTER_NAME",
                                   "SLURM_PARTITION", "OMP_NUM_THREADS", "LD_LIBRARY_PATH", "TORCH_SYMM_MEM_DISABLE_MULTICAST"};
constexpr std::array secret_words{"SECRET", "TOKEN", "PASSWORD", "PASSWD", "CREDENTIAL", "KEY", "AUTH", "COOKIE"};

std::string upper(std::string_view s) {
  std::string out(s);
  std::transform(out.begin(), out.end(), out.begin(), [](unsigned char c) { return std::toupper(c); });
  return out;
}

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

bool is_allowed_variable(std::string_view name) {
  const std::string n = upper(name);
  for (const char* word : secret_words)
    if (n.find(word) != std::string::npos) return false;
  for (const char* exact : allowed_names)
    if (n == exact) return true;
  for (const char* prefix : allowed_prefixes)
    if (n.rfind(prefix, 0) == 0) return true;
  return false;
}

std::vector<std::pair<std::string, std::string>> allowed_variables(char** environ_block) {
  std::vector<std::pair<std::string, std::string>> out;
  for (char** e = environ_block; e && *e; ++e) {
    const std::string entry(*e);
    const auto eq = entry.find('=');
    if (eq == std::string::npos) continue;
    std::string name = entry.substr(0, eq);
    if (is_allowed_variable(name)) out.emplace_back(std::move(name), entry.substr(eq + 1));
  }
  std::sort(out.begin(), out.end());
  return out;
}

std::map<std::string, std::string> describe_host() {
  std::map<std::string, std::string> facts;
  utsname u{};
  if (uname(&u) == 0) facts["kernel"] = fmt::format("{} {} {}", u.sysname, u.release, u.machine);
  facts["mpi"] = runtime::MpiSession::library_version();
  facts["cpu"] = [] {
    std::ifstream in("/proc/cpuinfo");
    for (std::string line; std::getline(in, line);)
      if (line.rfind("model name", 0) == 0) return line.substr(line.find(':') + 2);
    return std::string{};
  }();
  facts["cores"] = std::to_string(std::thread::hardware_concurrency());
  std::string os = read_first_line("/etc/os-release");
  {
    std::ifstream in("/etc/os-release");
    for (std::string line; std::getline(in, line);)
      if (line.rfind("PRETTY_NAME=", 0) == 0) os = line.substr(12);
  }
  os.erase(std::remove(os.begin(), os.end(), '"'), os.end());
  facts["os"] = os;
  facts["driver"] = read_first_line("/sys/module/nvidia/version");
  std::string rdma;
  std::error_code ec;
  for (const auto& dev : std::filesystem::directory_iterator("/sys/class/infiniband", ec)) {
    const auto name = dev.path().filename().string();
    std::string ports;
    for (const auto& port : std::filesystem::directory_iterator(dev.path() / "ports", ec))
      ports += fmt::format("{}{}:{}", ports.empty() ? "" : "/", port.path().filename().string(),
                           read_first_line((port.path() / "state").string()));
    rdma += fmt::format("{}{}[{}]", rdma.empty() ? "" : " ", name, ports);
  }
  facts["rdma_devices"] = rdma;
  return facts;
}

EnvironmentCapture::EnvironmentCapture() {
  using namespace results;
  // Who and what: the rank, host and variable name identify a row; the rest are facts of it (settings).
  ranks_ = {"env", "ranks", {key_int("rank"), setting_text("host", 64), setting_int("local_rank"), setting_int("gpu"),
                             setting_text("gpu_name", 64), setting_text("gpu_uuid", 48), setting_text("pci_bus_id", 24)}};
  hosts_ = {"env", "hosts", {key_text("host", 64), setting_text("os", 64), setting_text("kernel", 96),
                             setting_text("cpu", 96), setting_int("cores"), setting_text("mpi", 96),
                             setting_text("driver", 32), setting_text("cuda", 32), setting_text("nccl", 32),
                             setting_text("rdma_devices", 256)}};
  variables_ = {"env", "variables", {key_text("host", 64), key_text("name", 64), setting_text("value", 512)}};
}

void EnvironmentCapture::gather(const runtime::Communicator& world, const runtime::Placement& placement, int gpu,
                                results::ResultSet* out) const {
  // Every rank describes itself; the first rank of each host also describes the host and its variables.
  auto facts = describe_rank(gpu);
  if (placement.me().local_rank == 0) {
    for (auto& [k, v] : describe_host()) facts["host." + k] = v;
    for (auto& [k, v] : allowed_variables(environ)) facts["var." + k] = v;
  }
  const auto all = world.gather(serialize(facts), 0);
  if (!out) return;
  out->declare(ranks_);
  out->declare(hosts_);
  out->declare(variables_);
  for (std::size_t r = 0; r < all.size(); ++r) {
    const auto f = deserialize(all[r]);
    const auto& place = placement.ranks()[r];
    results::Row row(ranks_);
    row.set("rank", std::int64_t(r)).set("host", place.host).set("local_rank", std::int64_t(place.local_rank));
    row.set("gpu", std::int64_t(std::stoi(get(f, "gpu")))).set("gpu_name", get(f, "gpu_name"));
    row.set("gpu_uuid", get(f, "gpu_uuid")).set("pci_bus_id", get(f, "pci_bus_id"));
    out->row(row);
    if (place.local_rank != 0) continue;
    results::Row host(hosts_);
    host.set("host", place.host);
    for (const char* key : {"os", "kernel", "cpu", "mpi", "driver", "rdma_devices"})
      host.set(key, get(f, std::string("host.") + key));
    host.set("cores", std::int64_t(std::stoi("0" + get(f, "host.cores"))));
    host.set("cuda", get(f, "cuda")).set("nccl", get(f, "nccl"));
    out->row(host);
    for (const auto& [k, v] : f) {
      if (k.rfind("var.", 0) != 0) continue;
      results::Row var(variables_);
      var.set("host", place.host).set("name", k.substr(4)).set("value", v);
      out->row(var);
    }
  }
}

}  // namespace fabricbench::env
