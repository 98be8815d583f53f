// Why a named rank is slow, from its own host: the samples its host's watchdog took of its process (host_sampler.hpp),
// over the naming's window against the minute before it. Each kind of evidence is a share or a rate with a floor it
// must pass and a factor over before; the strongest (most times its floor) are said, "because: ...". Evidence alone
// never names a rank: the judge's rules do; this only says what the rank's host saw meanwhile.
#pragma once
#include <cstdint>
#include <deque>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "fabricbench/job/slow_record.hpp"

namespace fabricbench::job {

struct HostCause {
  std::string kind;            // stopped, cpu_wait, throttled, faults, unsent; nic (one of its host's RDMA ports)
  double now = 0, before = 0;  // over the window, and over the minute before it (shares 0-1, or per second, or bytes)
  double strength = 0;         // now against its floor: the largest is said first
  std::string words;           // "its process was stopped in 48% of the samples (0% before)"
};

class HostEvidence {
 public:
  // A sample of process `pid` on `host` (the sampler file's header host).
  void add(const std::string& host, const slow::HostSample& s);
  // A sample of one of `host`'s RDMA ports. Its rate is held against the best port of every host's.
  void add(const std::string& host, const slow::NicSample& n);
  // What the samples of (host, pid) say over [from_ns, to_ns], strongest first; empty when none passes its floor.
  // `sampled` says whether there were samples of it at all (a host without a sampler says nothing).
  // "Before" is the minute up to `before_ns` (0: from_ns): the judge ends it where the rank may have turned slow.
  std::vector<HostCause> causes(const std::string& host, int pid, std::int64_t from_ns, std::int64_t to_ns,
                                bool& sampled, std::int64_t before_ns = 0) const;
  // "because: A; B" (at most two), "no evidence on its host", or "" when its host took no samples.
  std::string because(const std::string& host, int pid, std::int64_t from_ns, std::int64_t to_ns,
                      std::int64_t before_ns = 0) const;
  // Samples older than `t_ns` go.
  void forget_before(std::int64_t t_ns);
  static constexpr double kBeforeS = 60;

 private:
  std::map<std::pair<std::string, int>, std::deque<slow::HostSample>> samples_;
  std::map<std::pair<std::string, std::string>, std::deque<slow::NicSample>> nics_;  // by (host, "mlx5_3 port 1")
  // Whether the host's ports were sampled in [from_ns, to_ns].
  bool nic_causes(const std::string& host, std::int64_t from_ns, std::int64_t to_ns, std::int64_t before_ns,
                  std::vector<HostCause>& out) const;
};

}  // namespace fabricbench::job
