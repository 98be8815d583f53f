// The limits group: the locked-memory limit verbs need and the size of /dev/shm for NCCL and MPI.
#include <fmt/format.h>

#include <cstdint>
#include <string>

#include "check_functions.hpp"

namespace fabricbench::doctor::checks {
using namespace facts;  // the host facts the checks read
namespace {

std::string mib(std::uint64_t bytes) { return fmt::format("{} MiB", bytes >> 20); }

}  // namespace

void limits_memlock(const Context& c, Findings& out) {
  const std::string value = c.memlock_bytes ? mib(*c.memlock_bytes) : "unlimited";
  if (!c.memlock_bytes) {
    out.ok("memlock", value, "unlimited");
  } else if (c.ports.empty()) {
    out.ok("memlock", value, "unlimited where RDMA is used");
  } else {
    const Status s = *c.memlock_bytes < (64ull << 20) ? Status::fail : Status::warn;
    out.add("memlock", s, value, "unlimited",
            "verbs register (pin) every buffer: ulimit -l unlimited (docker: --ulimit memlock=-1, Slurm: "
            "PropagateResourceLimits)");
  }
}

void limits_shm(const Context& c, Findings& out) {
  if (!c.shm_bytes) {
    out.add("/dev/shm", c.any_gpu() ? Status::warn : Status::ok, "not mounted", "a tmpfs of 1 GiB or more",
            "NCCL and MPI shared memory transports need /dev/shm");
    return;
  }
  const std::uint64_t size = *c.shm_bytes;
  Status s = Status::ok;
  if (c.any_gpu() && size < (256ull << 20))
    s = Status::fail;
  else if (c.any_gpu() && size < (1ull << 30))
    s = Status::warn;
  else if (size < (64ull << 20))
    s = Status::warn;
  out.add("/dev/shm", s, mib(size), "1024 MiB or more",
          s == Status::ok
              ? ""
              : "NCCL's shared-memory buffers need about 1 GiB: docker --shm-size=1g, or remount /dev/shm larger");
}

}  // namespace fabricbench::doctor::checks
