// Why a named rank is slow, from its own host: the samples its host's watchdog took of its process (host_sampler.hpp),
// over the naming's window against the minute before it. Each kind of evidence is a share or a rate with a floor it
// must pass and a factor over before; the strongest (most times its floor) are said, "because: ...". Evidence alone
// never names a rank: the judge's rules do; this only says what the rank's host saw meanwhile.
#pragma once
#include <cstdint>
#include <deque>
#include <map>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "fabricbench/job/slow_folder.hpp"
#include "fabricbench/job/slow_record.hpp"

namespace fabricbench::job {

struct HostCause {
  // stopped, cpu_wait, throttled, cpu_pressure, memory_pressure, faults, unsent (its process and cgroup); nic (one of
  // the RDMA ports it uses, or of its host's); neighbour, clocks, xid, ecc, nvlink (its GPU)
  std::string kind;
  double now = 0, before = 0;  // over the window, and over the minute before it (shares 0-1, or per second, or bytes)
  double strength = 0;         // now against its floor: the largest is said first
  std::string words;           // "its process was stopped in 48% of the samples (0% before)"
};

class HostEvidence {
 public:
  // One record of a sampler's file (`sampler`: its header), by its kind.
  void add(const SlowSource& sampler, const slow::Record& r);
  // A sample of process `pid` on `host` (the sampler file's header host).
  void add(const std::string& host, const slow::HostSample& s);
  // A sample of one of `host`'s RDMA ports. Its rate is held against the best port of every host's.
  void add(const std::string& host, const slow::NicSample& n);
  // A sample of a GPU of `host`, and one process on it (`boot_id`: the sampler's machine).
  void add(const std::string& host, const slow::GpuSample& g);
  void add(const std::string& host, const slow::GpuProcess& p, const std::string& boot_id = "");
  // A process of the job (a rank's file): on a GPU it is no neighbour.
  void job_process(const std::string& boot_id, int pid) { job_.emplace(boot_id, pid); }
  // What the samples of `rank`'s process (its host, pid), the ports it uses and its GPU (its bus id) say over
  // [from_ns, to_ns], strongest first; empty when none passes its floor. `sampled` says whether there were samples
  // at all (a host without a sampler says nothing). "Before" is the minute up to `before_ns` (0: from_ns): the judge
  // ends it where the rank may have turned slow.
  std::vector<HostCause> causes(const SlowSource& rank, std::int64_t from_ns, std::int64_t to_ns, bool& sampled,
                                std::int64_t before_ns = 0) const;
  // "because: A; B" (at most two), "no evidence on its host", or "" when its host took no samples.
  std::string because(const SlowSource& rank, std::int64_t from_ns, std::int64_t to_ns,
                      std::int64_t before_ns = 0) const;
  // Samples older than `t_ns` go.
  void forget_before(std::int64_t t_ns);
  static constexpr double kBeforeS = 60;

 private:
  std::map<std::pair<std::string, int>, std::deque<slow::HostSample>> samples_;
  std::map<std::pair<std::string, std::string>, std::deque<slow::NicSample>> nics_;    // by (host, "mlx5_3 port 1")
  std::map<std::pair<std::string, std::uint32_t>, std::deque<slow::GpuSample>> gpus_;  // by (host, pci_key)
  std::map<std::pair<std::string, std::uint32_t>, std::deque<slow::GpuProcess>> gpu_processes_;
  std::map<std::string, std::string> boot_of_;  // a sampler host's machine
  std::set<std::pair<std::string, int>> job_;   // (boot id, pid) of the job's processes
  // Whether the ports were sampled in [from_ns, to_ns]: those of `uverbs` (the devices the rank holds open), else
  // all of its host's.
  bool nic_causes(const std::string& host, std::uint32_t uverbs, std::int64_t from_ns, std::int64_t to_ns,
                  std::int64_t before_ns, std::vector<HostCause>& out) const;
  // Whether its GPU was sampled in [from_ns, to_ns].
  bool gpu_causes(const std::string& host, std::uint32_t pci, std::int64_t from_ns, std::int64_t to_ns,
                  std::int64_t before_ns, std::vector<HostCause>& out) const;
};

}  // namespace fabricbench::job
