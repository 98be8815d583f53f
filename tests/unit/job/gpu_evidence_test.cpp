// Why a rank is slow, from its GPU, its cgroup's pressure and the RDMA ports it holds open: the host sampler's GPU
// reader against a stand-in for NVML (fake_nvml.cpp), the driver's XID lines as the kernel log prints them, and the
// evidence from recorded samples in the formats NVML and the kernel document, each answer computed by hand.
#include <gtest/gtest.h>
#include <string.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "../fixtures.hpp"
#include "fabricbench/job/host_evidence.hpp"
#include "fabricbench/tools/watchdog/gpu_samples.hpp"

namespace gpu_evidence_test {

namespace slow = fabricbench::job::slow;
using fabricbench::job::HostEvidence;
using fabricbench::tools::watchdog::GpuSamples;

constexpr std::int64_t kSec = 1000000000;
constexpr std::int64_t kStart = 1'700'000'000 * kSec;
const char* const kBus = "0000:1b:00.0";

fabricbench::job::SlowSource gpu_rank(const std::string& host, int pid, const std::string& bus_id = kBus) {
  fabricbench::job::SlowSource s;
  s.host = host, s.pid = pid, s.gpu_bus_id = bus_id, s.boot_id = "boot-a";
  return s;
}

TEST(PciKey, ReadsBothSpellingsOfABusId) {
  EXPECT_EQ(slow::pci_key("0000:1b:00.0"), slow::pci_key("00000000:1B:00.0"));  // CUDA's and NVML's
  EXPECT_EQ(slow::pci_key("0000:1b:00.0"), 0x1bu << 8);
  EXPECT_EQ(slow::pci_key("0001:c3:1f.7"), 0x1u << 16 | 0xc3u << 8 | 0x1fu << 3 | 7u);
  EXPECT_EQ(slow::pci_key(""), 0u);
  EXPECT_EQ(slow::pci_key("GPU-1234"), 0u);
  EXPECT_EQ(slow::pci_key("0000:1b:00.0x"), 0u);
  EXPECT_EQ(slow::pci_key(nullptr), 0u);
}

TEST(XidLine, ReadsTheDriversReportInTheKernelLog) {
  // /dev/kmsg's record ("priority,sequence,usec,flags;text") of the driver's line, as NVIDIA's XID guide shows it.
  const auto x = fabricbench::tools::watchdog::parse_xid_line(
      "4,1870,5122310434,-;NVRM: Xid (PCI:0000:1b:00): 79, pid=2213, name=python3, GPU has fallen off the bus.");
  ASSERT_TRUE(x.has_value());
  EXPECT_EQ(x->first, slow::pci_key(kBus));
  EXPECT_EQ(x->second, 79u);
  const auto y =
      fabricbench::tools::watchdog::parse_xid_line("NVRM: Xid (PCI:0000:c3:00): 48, pid='<unknown>', DBE (0x1,0x2)");
  ASSERT_TRUE(y.has_value());
  EXPECT_EQ(y->second, 48u);
  EXPECT_FALSE(
      fabricbench::tools::watchdog::parse_xid_line("NVRM: loading NVIDIA UNIX x86_64 Kernel Module").has_value());
  EXPECT_FALSE(fabricbench::tools::watchdog::parse_xid_line("NVRM: Xid (PCI:0000:1b:00): , no number").has_value());
  EXPECT_FALSE(fabricbench::tools::watchdog::parse_xid_line("NVRM: Xid (PCI:zz): 79, x").has_value());
}

TEST(GpuSamples, ReadWhatTheDriverSays) {
  std::string why;
  auto missing = fabricbench::facts::load_nvml(&why, "libfabricbench-no-such-nvml.so");
  GpuSamples none(std::move(missing), why, fabricbench::facts::HostFiles());
  EXPECT_FALSE(none.available());
  EXPECT_NE(none.why().find("not found"), std::string::npos);
  EXPECT_TRUE(none.sample({kBus}, {}, kStart).empty());

  // The stand-in lies next to this binary (the build puts it there; a moved tree or a carried prefix take it along).
  const auto fake = std::filesystem::read_symlink("/proc/self/exe").parent_path() / "libfabricbench_fake_nvml.so";
  auto loaded = fabricbench::facts::load_nvml(&why, fake.string());
  ASSERT_TRUE(loaded) << why;
  GpuSamples nvml(std::move(loaded), "", fabricbench::facts::HostFiles());
  EXPECT_EQ(nvml.xid_source(), "NVML's events");
  // Its GPU, one NVML does not know, and its GPU again: one sample of it, its 20 processes.
  const auto records = nvml.sample({kBus, "0000:99:00.0", kBus}, {::getpid()}, kStart);
  ASSERT_EQ(records.size(), 21u);
  ASSERT_TRUE(slow::is_gpu_sample(records[0]));
  const auto g = slow::record_as<slow::GpuSample>(records[0]);
  EXPECT_EQ(g.pci, slow::pci_key(kBus));
  EXPECT_EQ(g.host_ns, kStart);
  EXPECT_EQ(g.sm_mhz, 1410);
  EXPECT_EQ(g.sm_max_mhz, 1980);
  EXPECT_EQ(g.reasons, slow::kReasonPowerCap);
  EXPECT_EQ(g.xids, 1u);
  EXPECT_EQ(g.last_xid, 79u);
  EXPECT_EQ(g.ecc, 6u);            // 5 corrected, 1 uncorrected
  EXPECT_EQ(g.remapped_rows, 3u);  // 2 and 1
  EXPECT_EQ(g.nvlink_errors, 6u);  // 2 links of 18 answer, 3 counters each at 1 (not CRC data)
  EXPECT_EQ(g.power_w, 650u);
  EXPECT_EQ(g.temperature_c, 71);
  EXPECT_EQ(g.processes, 20);
  int own = 0, unseen = 0;
  for (std::size_t i = 1; i < records.size(); ++i) {
    ASSERT_TRUE(slow::is_gpu_process(records[i]));
    const auto p = slow::record_as<slow::GpuProcess>(records[i]);
    EXPECT_EQ(p.pci, g.pci);
    EXPECT_EQ(p.used_bytes, static_cast<std::uint64_t>(i) << 30);
    if (p.pid == ::getpid()) {
      ++own;
      EXPECT_EQ(p.own, 1);
      EXPECT_STREQ(p.name, "fabricbench_unit_tests");
    } else {
      unseen += std::string(p.name) == "?";
    }
  }
  EXPECT_EQ(own, 1);
  EXPECT_EQ(unseen, 19);
  // The XID is counted once; the next sample holds it still.
  const auto again = slow::record_as<slow::GpuSample>(nvml.sample({kBus}, {}, kStart + kSec)[0]);
  EXPECT_EQ(again.xids, 1u);
}

// Its GPU sampled once a second for `n` s from `from`: the SM clock at `mhz` of 1980 with `reasons`; counters at
// `xids`, `ecc`, `nvlink`.
void feed_gpu(HostEvidence& e, std::int64_t from, int n, unsigned mhz, std::uint64_t reasons, std::uint32_t xids = 0,
              std::uint64_t ecc = 0, std::uint32_t nvlink = 0) {
  for (int i = 0; i < n; ++i) {
    slow::GpuSample g{};
    g.pci = slow::pci_key(kBus), g.host_ns = from + i * kSec, g.flags = slow::kGpuSample;
    g.sm_mhz = static_cast<std::uint16_t>(mhz), g.sm_max_mhz = 1980, g.reasons = reasons;
    g.xids = xids, g.last_xid = xids ? 79 : 0, g.ecc = ecc, g.nvlink_errors = nvlink;
    e.add("h2", g);
  }
}

void feed_process(HostEvidence& e, std::int64_t from, int n, int pid, const char* name, std::uint64_t gib,
                  bool own = false) {
  for (int i = 0; i < n; ++i) {
    slow::GpuProcess p{};
    std::snprintf(p.name, sizeof p.name, "%s", name);
    p.pid = pid, p.pci = slow::pci_key(kBus), p.used_bytes = gib << 30, p.own = own;
    p.host_ns = from + i * kSec, p.flags = slow::kGpuProcess;
    e.add("h2", p, "boot-a");
  }
}

TEST(GpuEvidence, AnotherProcessOnItsGpuIsNamedWithItsPidAndName) {
  HostEvidence e;
  feed_gpu(e, kStart, 72, 1980, 0);
  feed_process(e, kStart, 72, 100, "python3", 30, true);  // the rank itself
  feed_process(e, kStart, 72, 200, "python3", 30);        // another host's rank on the same GPU (the job's)
  e.job_process("boot-a", 200);
  feed_process(e, kStart + 50 * kSec, 22, 4242, "python3", 18);  // a neighbour from +50 s
  const auto from = kStart + 62 * kSec, to = kStart + 71 * kSec;
  EXPECT_EQ(e.because(gpu_rank("h2", 100), from, to),
            "because: its GPU runs another process: pid 4242 python3 (18.0 GiB), seen for 21 s");
  // Before the neighbour: nothing; a rank on another GPU of the host: nothing of this one's.
  EXPECT_EQ(e.because(gpu_rank("h2", 100), kStart + 30 * kSec, kStart + 39 * kSec), "no evidence on its host");
  EXPECT_EQ(e.because(gpu_rank("h2", 100, "0000:2c:00.0"), from, to), "");
  // Had it been there all along, it is said as such (and weaker than what changed).
  HostEvidence always;
  feed_gpu(always, kStart, 72, 1980, 0);
  feed_process(always, kStart, 72, 4242, "python3", 18);
  EXPECT_EQ(always.because(gpu_rank("h2", 100), from, to),
            "because: its GPU runs another process: pid 4242 python3 (18.0 GiB), seen for 71 s (there before too)");
}

TEST(GpuEvidence, ClocksXidsAndCountersThatRose) {
  HostEvidence e;
  feed_gpu(e, kStart, 60, 1980, slow::kReasonPowerCap);  // at its cap yet at full clock: not held
  feed_gpu(e, kStart + 60 * kSec, 10, 1100, slow::kReasonHwThermal | slow::kReasonHwSlowdown);
  const auto from = kStart + 60 * kSec, to = kStart + 69 * kSec;
  EXPECT_EQ(e.because(gpu_rank("h2", 100), from, to),
            "because: its GPU's SM clock was held down to 1100 of 1980 MHz by HW slowdown, HW thermal slowdown in "
            "100% of the samples (0% before)");
  // A GPU always at 1400 MHz under its power cap (a busy H100 at its TDP): what it always does is no evidence.
  HostEvidence capped;
  feed_gpu(capped, kStart, 70, 1400, slow::kReasonPowerCap);
  EXPECT_EQ(capped.because(gpu_rank("h2", 100), from, to), "no evidence on its host");
  // An XID in the window, strongest; ECC errors and NVLink errors that rose.
  HostEvidence x;
  feed_gpu(x, kStart, 65, 1980, 0, 0, 10, 4);
  feed_gpu(x, kStart + 65 * kSec, 5, 1980, 0, 1, 12, 9);
  bool sampled = false;
  const auto c = x.causes(gpu_rank("h2", 100), from, to, sampled);
  EXPECT_TRUE(sampled);
  ASSERT_EQ(c.size(), 3u);
  EXPECT_EQ(c[0].words, "its GPU reported XID 79 (1 XID event(s) since the minute before)");
  EXPECT_EQ(c[1].words, "its GPU's ECC error count rose by 2");
  EXPECT_EQ(c[2].words, "its GPU's NVLink error counters rose by 5");
}

TEST(GpuEvidence, PressureOfItsCgroup) {
  HostEvidence e;
  for (int i = 0; i < 70; ++i) {  // PSI "some": 10 ms a second for a minute, then 600 ms a second (and a wrap)
    slow::HostSample s{};
    s.pid = 7, s.host_ns = kStart + i * kSec, s.flags = slow::kHostSample, s.state = 'S';
    s.cpu_pressure_ms = static_cast<std::uint32_t>(0xffffffffu - 30000 + (i < 60 ? 10 * i : 600 + 600 * (i - 60)));
    s.mem_pressure_ms = static_cast<std::uint32_t>(i < 60 ? 0 : 100 * (i - 60));
    e.add("h2", s);
  }
  const auto from = kStart + 60 * kSec, to = kStart + 69 * kSec;
  EXPECT_EQ(e.because(gpu_rank("h2", 7), from, to),
            "because: its cgroup's tasks waited for a CPU 60% of the time (PSI; 1% before); its cgroup's tasks "
            "stalled on memory 10% of the time (PSI; 0% before)");
}

TEST(GpuEvidence, RetransmissionsOfItsConnections) {
  HostEvidence e;
  for (int i = 0; i < 70; ++i) {  // 0.1% of its segments a minute (spurious: no evidence), then 2.5%
    slow::HostSample s{};
    s.pid = 7, s.host_ns = kStart + i * kSec, s.flags = slow::kHostSample, s.state = 'S';
    s.retransmits = i < 60 ? 100 : 2500;
    e.add("h2", s);
  }
  EXPECT_EQ(e.because(gpu_rank("h2", 7), kStart + 60 * kSec, kStart + 69 * kSec),
            "because: its TCP connections retransmitted 2.5% of their segments (0.1% before)");
  EXPECT_EQ(e.because(gpu_rank("h2", 7), kStart + 30 * kSec, kStart + 39 * kSec), "no evidence on its host");
}

TEST(GpuEvidence, ThePortsARankHoldsOpenAreItsOwn) {
  HostEvidence e;
  const auto port = [&](const char* device, std::int16_t uverbs, double errors_per_s) {
    std::uint64_t errors = 0;
    for (int i = 0; i < 70; ++i) {
      slow::NicSample n{};
      std::snprintf(n.device, sizeof n.device, "%s", device);
      n.port = 1, n.active = 1, n.rate_mbps = 400000, n.uverbs = uverbs, n.host_ns = kStart + i * kSec;
      errors += i >= 60 ? static_cast<std::uint64_t>(errors_per_s) : 0;
      n.errors = errors, n.flags = slow::kNicSample;
      e.add("h2", n);
    }
  };
  port("mlx5_0", 0, 0);
  port("mlx5_1", 1, 50);  // errors on the port of uverbs1
  const auto rank_using = [&](int pid, std::uint32_t uverbs) {
    for (int i = 0; i < 70; ++i) {
      slow::HostSample s{};
      s.pid = pid, s.host_ns = kStart + i * kSec, s.flags = slow::kHostSample, s.state = 'S', s.uverbs = uverbs;
      e.add("h2", s);
    }
  };
  rank_using(7, 1u << 0);  // holds mlx5_0 open
  rank_using(8, 1u << 1);  // holds mlx5_1 open
  const auto from = kStart + 60 * kSec, to = kStart + 69 * kSec;
  EXPECT_EQ(e.because(gpu_rank("h2", 7), from, to), "no evidence on its host");
  EXPECT_EQ(e.because(gpu_rank("h2", 8), from, to),
            "because: its mlx5_1 port 1: 450 port errors (0 the minute before)");
  // A rank on sockets (no RDMA device open) hears of any port of its host.
  EXPECT_EQ(e.because(gpu_rank("h2", 9), from, to),
            "because: its host's mlx5_1 port 1: 450 port errors (0 the minute before)");
}

// A run of the multi-host rig on the GPU machine (tests/gpu/hosts_proof.py evidence): each host's sampler file as
// written, each rank's file cut to its header (who it is, on which GPU), and faults.txt: the loop's start (t0) and
// each fault as it ran (kind, host, the rank's pid, start and end in seconds of the loop, the neighbour's pid).
struct RecordedRun {
  struct Fault {
    std::string kind, host;
    int pid = 0, neighbour = 0;
    double start = 0, end = 0;
  };
  HostEvidence evidence;
  std::vector<fabricbench::job::SlowSource> ranks;
  std::vector<Fault> faults;
  double t0 = 0, last = 0;  // the loop's start, the last sample (seconds since the epoch)

  explicit RecordedRun(const std::string& name) {
    const auto dir = fixtures_folder() / "slow" / "evidence" / name;
    std::ifstream plan(dir / "faults.txt");
    std::string word;
    plan >> word >> t0;
    for (Fault f; plan >> f.kind >> f.host >> f.pid >> f.start >> f.end;) {
      std::string rest;
      std::getline(plan, rest);
      f.neighbour = rest.empty() ? 0 : std::stoi(rest);
      faults.push_back(f);
    }
    for (const auto& entry : std::filesystem::directory_iterator(dir)) {
      if (entry.path().extension() != ".fbslow") continue;
      std::ifstream in(entry.path(), std::ios::binary);
      slow::FileHeader h{};
      in.read(reinterpret_cast<char*>(&h), sizeof h);
      fabricbench::job::SlowSource s;
      s.host = h.host, s.pid = h.pid, s.version = h.version, s.sampler = h.writer == slow::kWriterSampler;
      s.gpu_bus_id = std::string(h.gpu_bus_id, strnlen(h.gpu_bus_id, sizeof h.gpu_bus_id));
      s.boot_id = std::string(h.boot_id, strnlen(h.boot_id, sizeof h.boot_id));
      if (!s.sampler) {
        ranks.push_back(s);
        evidence.job_process(s.boot_id, s.pid);
      }
      for (slow::Record r{}; in.read(reinterpret_cast<char*>(&r), sizeof r);) {
        evidence.add(s, r);
        last = std::max(last, static_cast<double>(r.host_ns) * 1e-9);
      }
    }
  }
  // What the rank says at `t` s of the loop over the 5 s before (the judge's at a naming), "before" ending 15 s back.
  std::string at(const fabricbench::job::SlowSource& rank, double t) const {
    const auto ns = [&](double s) { return static_cast<std::int64_t>((t0 + s) * 1e9); };
    return evidence.because(rank, ns(t - 5), ns(t), ns(t - 15));
  }
};

// Four runs: the first set the unsent rule, the others (other ranks) were held out. The fourth run's samplers (and
// the neighbour's below) counted retransmitted segments a second in the field that now holds their share of the
// segments sent: zeroed in those fixtures (tests/fixtures/slow/evidence/README).
const char* const kRuns[] = {"", "-2", "-3", "-4"};

TEST(RecordedEvidence, EachFaultOnTheGpuMachineSaysWhatItWas) {
  const std::map<std::string, std::string> expected = {{"stall", "its process was found stopped"},
                                                       {"starve", "its busiest thread waited for a CPU"},
                                                       {"quota", "its cgroup's CPU quota throttled it"},
                                                       {"nic-send", "its sockets held"}};
  for (const char* run_name : kRuns) {
    const RecordedRun run(std::string("ddp") + run_name);
    ASSERT_EQ(run.ranks.size(), 4u);
    ASSERT_EQ(run.faults.size(), 5u);
    for (const auto& f : run.faults) {
      for (const auto& rank : run.ranks) {
        // Said by 12 s into the fault (the judge named each 3.4-13.3 s in on the rig; evidence that comes later
        // than the naming is said when it comes), over the 5 s before that second.
        std::string said;
        bool right = false;
        for (double t = f.start + 5; t <= f.start + 12 && !right; ++t) {
          said = run.at(rank, t);
          if (f.kind == "neighbour")  // one GPU: every host's rank has the neighbour on its GPU
            right = said.find("because: its GPU runs another process: pid " + std::to_string(f.neighbour) +
                              " python3") != std::string::npos;
          else
            right = rank.pid != f.pid || said.find("because: " + expected.at(f.kind)) != std::string::npos;
        }
        EXPECT_TRUE(right) << "ddp" << run_name << " " << f.kind << ", pid " << rank.pid << ": " << said;
      }
    }
  }
}

TEST(RecordedEvidence, HealthyStretchesSayNoEvidence) {
  for (const char* run_name : kRuns)
    for (const std::string job : {"healthy", "ddp"}) {
      const RecordedRun run(job + run_name);
      ASSERT_EQ(run.ranks.size(), 4u);
      int looked = 0;
      for (double t = 5; run.t0 + t <= run.last; t += 5) {
        // Away from every fault: from 1 s before it to 20 s after it (its window and the 15 s that end "before").
        bool quiet = true;
        for (const auto& f : run.faults) quiet &= t < f.start - 1 || t > f.end + 20;
        if (!quiet) continue;
        for (const auto& rank : run.ranks) {
          EXPECT_EQ(run.at(rank, t), "no evidence on its host")
              << job << run_name << " at +" << t << " s, pid " << rank.pid;
          ++looked;
        }
      }
      // 120 s healthy: 23 looks at each of 4 ranks; the injected run's faults leave its first 20 s alone.
      EXPECT_GE(looked, job == "healthy" ? 4 * 20 : 4 * 3) << job << run_name;
    }
}

// Two hosts on two H200s, each rank on a GPU of its own; another process's matmuls on the second's from +24 s: the
// judge named rank 1 at +32 s, "because: its GPU runs another process: pid 815 python3 (1.2 GiB), seen for 7 s".
TEST(RecordedEvidence, ANeighbourOnARanksOwnGpu) {
  const RecordedRun run("neighbour");
  ASSERT_EQ(run.ranks.size(), 2u);
  ASSERT_EQ(run.faults.size(), 1u);
  const auto& f = run.faults[0];
  for (const auto& rank : run.ranks) {
    const auto said = run.at(rank, f.start + 8);
    if (rank.pid == f.pid)
      EXPECT_NE(said.find("because: its GPU runs another process: pid 815 python3"), std::string::npos) << said;
    else  // the other host's GPU had none (its sockets wait on the slow one: that it may say)
      EXPECT_EQ(said.find("another process"), std::string::npos) << said;
    // Before it (its process began 4 s before its matmuls: its CUDA context already slowed the GPU).
    EXPECT_EQ(run.at(rank, f.start - 6), "no evidence on its host");
  }
}

}  // namespace gpu_evidence_test
