#include "fabricbench/tools/rail_exec/rail_exec_tool.hpp"

#include <fmt/format.h>
#include <sched.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <boost/program_options.hpp>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <iostream>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

#include "fabricbench/error.hpp"
#include "fabricbench/facts/rail_binding.hpp"

namespace fabricbench::tools::rail_exec {
namespace {

namespace po = boost::program_options;
constexpr const char* kProgram = "fabric-rail-exec";

struct Options {
  std::string rail_map, check_map;
  bool numa = true, dry_run = false;
  std::optional<int> local_rank;
  std::vector<std::string> command;
};

Options parse(int argc, char** argv) {
  int split = argc;
  for (int i = 1; i < argc; ++i)
    if (std::strcmp(argv[i], "--") == 0) {
      split = i;
      break;
    }
  Options o;
  for (int i = split + 1; i < argc; ++i) o.command.emplace_back(argv[i]);
  po::options_description d(
      "fabric-rail-exec [--rail-map FILE] [--no-numa] [--dry-run] [--local-rank N] -- EXE [ARGS]");
  auto add = d.add_options();
  add("help,h", "this help");
  add("rail-map", po::value<std::string>(&o.rail_map),
      "the rail map, the same file on every host: line RAIL names its NIC (rdma=DEVICE[:PORT], net=INTERFACE or "
      "net=A.B.C.D/N). Without one: the Active RDMA port nearest GPU RAIL (the longest shared PCI path, then the "
      "same NUMA node, then the name; a numeric CUDA_VISIBLE_DEVICES picks among the GPUs), else the RAIL-th Active "
      "port in name order");
  add("no-numa", "bind no CPUs and no memory");
  add("dry-run", "print this rank's binding line and exit 0 (FABRICBENCH_RAIL_DRY_RUN=1 does the same)");
  add("local-rank", po::value<int>(), "use N instead of the launcher's local rank");
  add("check-map", po::value<std::string>(&o.check_map), "validate FILE as a rail map, print its number of rails");
  po::variables_map v;
  try {
    po::store(po::command_line_parser(split, argv).options(d).run(), v);
    po::notify(v);
  } catch (const po::error& e) {
    throw Error::usage(fmt::format("{} (see --help)", e.what()));
  }
  if (v.count("help")) {
    std::cout << d;
    std::exit(0);
  }
  o.numa = !v.count("no-numa");
  o.dry_run = v.count("dry-run") ||
              (std::getenv("FABRICBENCH_RAIL_DRY_RUN") && std::string(std::getenv("FABRICBENCH_RAIL_DRY_RUN")) == "1");
  if (v.count("local-rank")) {
    o.local_rank = v["local-rank"].as<int>();
    if (*o.local_rank < 0) throw Error::usage(fmt::format("--local-rank {}: must be 0 or more", *o.local_rank));
  }
  return o;
}

// The first of `names` the launcher set, as a whole number.
std::optional<int> rank_from(const std::vector<const char*>& names, const char* what) {
  for (const char* name : names) {
    const char* value = std::getenv(name);
    if (!value) continue;
    const std::string text(value);
    if (text.empty() || text.size() > 9 || text.find_first_not_of("0123456789") != std::string::npos)
      throw Error::usage(fmt::format("{}='{}' is not a whole number ({})", name, text.substr(0, 64), what));
    return std::stoi(text);
  }
  return std::nullopt;
}

void warn(const std::string& message) { std::fprintf(stderr, "%s: warning: %s\n", kProgram, message.c_str()); }

std::string host_name() {
  char name[256] = {};
  gethostname(name, sizeof name - 1);
  return name;
}

// "rank 3 (host h, local 1): rail 1 nic mlx5_0:1 (net ib0) nearest GPU ..., numa 1 cpus 1, NAME=VALUE ..."
std::string binding_line(const facts::RailBinding& b, std::optional<int> rank, int local, bool numa) {
  const auto who = rank ? fmt::format("rank {} (host {}, local {})", *rank, host_name(), local)
                        : fmt::format("local rank {} (host {})", local, host_name());
  const auto where = !numa               ? std::string("numa off (--no-numa)")
                     : b.numa < 0        ? std::string("numa none (no NUMA node known for the GPU or the NIC)")
                     : b.cpulist.empty() ? fmt::format("numa {} cpus ? (no cpulist: CPUs not bound)", b.numa)
                                         : fmt::format("numa {} cpus {}", b.numa, b.cpulist);
  std::string names;
  for (const auto& [name, value] : b.variables()) {
    const char* before = std::getenv(name.c_str());
    names += names.empty() ? "" : " ";
    names += before && !facts::RailBinding::always_set(name) ? fmt::format("{}={} (set before, kept)", name, before)
                                                             : fmt::format("{}={}", name, value);
  }
  return fmt::format("{}: rail {} nic {} {}, {}, {}", who, b.rail, b.shown(), b.source, where, names);
}

// The CPUs and the memory policy of this process to NUMA node `b.numa`; what fails is a warning.
void bind_numa(const facts::RailBinding& b) {
  const auto cpus = facts::parse_cpu_list(b.cpulist);
  if (!cpus.empty()) {
    cpu_set_t set;
    CPU_ZERO(&set);
    for (int c : cpus)
      if (c >= 0 && c < CPU_SETSIZE) CPU_SET(c, &set);
    if (sched_setaffinity(0, sizeof set, &set) != 0)
      warn(fmt::format("CPUs not bound to NUMA node {} ({}): {}", b.numa, b.cpulist, std::strerror(errno)));
  } else if (!b.cpulist.empty()) {
    warn(fmt::format("CPUs not bound: NUMA node {}'s cpulist '{}' is not a CPU list", b.numa, b.cpulist));
  }
  constexpr int mpol_bind = 2;
  std::vector<unsigned long> mask(static_cast<std::size_t>(b.numa) / 64 + 1, 0);
  mask[static_cast<std::size_t>(b.numa) / 64] = 1ul << (b.numa % 64);
  // The kernel reads maxnode - 1 bits, hence the + 1 (as libnuma does).
  if (syscall(SYS_set_mempolicy, mpol_bind, mask.data(), mask.size() * 64 + 1) != 0)
    warn(fmt::format("memory not bound to NUMA node {}: set_mempolicy: {}", b.numa, std::strerror(errno)));
}

int run(const Options& o) {
  if (!o.check_map.empty()) {
    std::printf("%d\n", facts::RailMap::read(o.check_map).rails());  // the file a --rail-map will name
    return 0;
  }
  if (o.command.empty() && !o.dry_run)
    throw Error::usage("put the command after '--', e.g. fabric-rail-exec --rail-map rails.map -- fabric-p2p");
  std::optional<facts::RailMap> map;
  if (!o.rail_map.empty()) map = facts::RailMap::read(o.rail_map);
  std::optional<int> rank;
  int local = 0;
  if (o.local_rank) {
    local = *o.local_rank;
  } else {
    const auto from_launcher =
        rank_from({"OMPI_COMM_WORLD_LOCAL_RANK", "SLURM_LOCALID", "PMIX_LOCAL_RANK"}, "a local rank");
    if (!from_launcher)
      throw Error::usage(
          "no local rank: none of OMPI_COMM_WORLD_LOCAL_RANK, SLURM_LOCALID, PMIX_LOCAL_RANK is set; start it from "
          "mpirun or srun (or give --local-rank N)");
    local = *from_launcher;
    rank = rank_from({"OMPI_COMM_WORLD_RANK", "SLURM_PROCID", "PMIX_RANK"}, "a rank");
  }
  const auto b = facts::RailBinding::choose(facts::HostFiles::for_host(host_name()), local, map ? &*map : nullptr,
                                            std::getenv("CUDA_VISIBLE_DEVICES"));
  if (o.dry_run) {
    std::printf("%s\n", binding_line(b, rank, local, o.numa).c_str());
    return 0;
  }
  for (const auto& [name, value] : b.variables())
    if (facts::RailBinding::always_set(name) || !std::getenv(name.c_str())) setenv(name.c_str(), value.c_str(), 1);
  if (o.numa && b.numa >= 0) bind_numa(b);
  std::vector<char*> args;
  for (const auto& a : o.command) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  execvp(args[0], args.data());
  throw Error::usage(fmt::format("cannot run '{}': {}", o.command[0].substr(0, 200), std::strerror(errno)));
}

}  // namespace

int main(int argc, char** argv) {
  return main_of(kProgram, [&] { return run(parse(argc, argv)); });
}

}  // namespace fabricbench::tools::rail_exec
