// The host sampler's reading of /proc (a fake tree in the formats the kernel documents, proc(5) and cgroup v2) and
// the evidence joined to a naming, on samples whose answer is computed by hand.
#include "fabricbench/job/host_evidence.hpp"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "fabricbench/job/host_sampler.hpp"
#include "fabricbench/tools/watchdog/nic_samples.hpp"

namespace host_evidence_test {

namespace fs = std::filesystem;
namespace slow = fabricbench::job::slow;
using fabricbench::job::HostEvidence;

// A rank's process as its file's header names it.
fabricbench::job::SlowSource rank(const std::string& host, int pid = 7, const std::string& bus_id = "") {
  fabricbench::job::SlowSource s;
  s.host = host, s.pid = pid, s.gpu_bus_id = bus_id;
  return s;
}

void write(const fs::path& p, const std::string& text) {
  fs::create_directories(p.parent_path());
  std::ofstream(p) << text;
}

TEST(HostSampler, ReadsAProcessAsTheKernelShowsIt) {
  const fs::path root = fs::temp_directory_path() / ("fbproc-" + std::to_string(::getpid()));
  const auto proc = root / "proc", cg = root / "cg";
  const auto p = proc / "4242";
  // A command with a space and a parenthesis; state T (stopped); majflt 17; utime 300 and stime 100 ticks.
  write(p / "stat", "4242 (py thon) x) T 1 4242 4242 0 -1 4194560 900 0 17 0 300 100 0 0 20 0 2 0 55 0 0\n");
  write(p / "task/4242/schedstat", "1000 5000000 10\n");
  write(p / "task/4243/schedstat", "2000 7000000 12\n");
  write(p / "cgroup", "0::/job/step_0\n");
  write(cg / "job/step_0/cpu.stat", "usage_usec 99\nnr_periods 10\nnr_throttled 4\nthrottled_usec 250000\n");
  // Its cgroup's pressure (Documentation/accounting/psi.rst): "some" totals in microseconds.
  write(cg / "job/step_0/cpu.pressure",
        "some avg10=1.00 avg60=0.50 avg300=0.10 total=7654321\nfull avg10=0.00 avg60=0.00 avg300=0.00 total=0\n");
  write(cg / "job/step_0/memory.pressure",
        "some avg10=0.00 avg60=0.00 avg300=0.00 total=2500\nfull avg10=0.00 avg60=0.00 avg300=0.00 total=1000\n");
  // Two sockets of its own (inodes 111, 222), one of another process (333): 0x1000 + 0x20 bytes unsent.
  fs::create_directories(p / "fd");
  fs::create_symlink("socket:[111]", p / "fd/3");
  fs::create_symlink("socket:[222]", p / "fd/4");
  fs::create_symlink("/dev/null", p / "fd/5");
  fs::create_symlink("/dev/infiniband/uverbs3", p / "fd/6");  // an RDMA device it uses
  fs::create_symlink("/dev/infiniband/rdma_cm", p / "fd/7");
  const std::string head =
      "  sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode\n";
  write(p / "net/tcp", head +
                           "   0: 0100007F:1F90 0100007F:C350 01 00001000:00000000 00:00000000 00000000  0 0 111 1\n" +
                           "   1: 0100007F:1F91 0100007F:C351 01 00000500:00000000 00:00000000 00000000  0 0 333 1\n");
  write(p / "net/tcp6", head +
                            "   0: 00000000000000000000000001000000:1F90 00000000000000000000000001000000:C352 01 "
                            "00000020:00000000 00:00000000 00000000 0 0 222 1\n");
  fabricbench::job::ProcessMemory memory;
  memory.waits = {{4242, 4000000}, {4243, 1000000}};
  const auto s = fabricbench::job::read_process(proc.string(), cg.string(), 4242, memory);
  ASSERT_TRUE(s.has_value());
  EXPECT_EQ(s->state, 'T');
  EXPECT_EQ(s->majflt, 17u);
  EXPECT_EQ(s->cpu_ns, static_cast<std::uint64_t>(400 * 1e9 / static_cast<double>(::sysconf(_SC_CLK_TCK))));
  EXPECT_EQ(s->cpu_pressure_ms, 7654u);
  EXPECT_EQ(s->mem_pressure_ms, 2u);
  EXPECT_EQ(s->uverbs, 1u << 3);
  EXPECT_EQ(s->busiest_wait_ns, 6000000u);  // thread 4243: 7 ms now, 1 ms before
  EXPECT_EQ(memory.waits.at(4243), 7000000u);
  EXPECT_EQ(s->throttled_us, 250000u);
  EXPECT_EQ(s->tcp_unsent, 0x1020u);
  EXPECT_EQ(s->pid, 4242);
  EXPECT_EQ(s->flags, slow::kHostSample);
  // A socket closed since: not counted at the next listing (without the kernel's diagnostics, every sample lists).
  fs::remove(p / "fd/4");
  const auto again = fabricbench::job::read_process(proc.string(), cg.string(), 4242, memory, false);
  ASSERT_TRUE(again.has_value());
  EXPECT_EQ(again->tcp_unsent, 0x1000u);
  EXPECT_EQ(again->uverbs, 1u << 3);
  EXPECT_EQ(memory.tcp.size(), 1u);
  EXPECT_FALSE(fabricbench::job::read_process(proc.string(), cg.string(), 99, memory).has_value());  // gone
  fs::remove_all(root);
}

constexpr std::int64_t kS = 1000000000;
constexpr std::int64_t kT0 = 1'700'000'000 * kS;

// Samples once a second from `from` for `n` seconds: stopped at every `stop_every`-th (0: never), the busiest thread
// waiting `wait_ms` a second, throttled `thr_ms` a second, `unsent` bytes.
void feed(HostEvidence& e, std::int64_t from, int n, int stop_every, double wait_ms, double thr_ms,
          std::uint64_t unsent, std::uint64_t& throttled_us) {
  for (int i = 0; i < n; ++i) {
    slow::HostSample s{};
    s.pid = 7, s.host_ns = from + i * kS, s.flags = slow::kHostSample;
    s.state = stop_every && i % stop_every == 0 ? 'T' : 'S';
    s.busiest_wait_ns = static_cast<std::uint64_t>(wait_ms * 1e6);
    throttled_us += static_cast<std::uint64_t>(thr_ms * 1e3);
    s.throttled_us = throttled_us;
    s.tcp_unsent = unsent;
    e.add("h2", s);
  }
}

TEST(HostEvidence, SaysWhatTheHostSawAgainstTheMinuteBefore) {
  HostEvidence e;
  std::uint64_t thr = 0;
  feed(e, kT0, 60, 0, 2, 0, 1000, thr);              // a minute healthy: 0.2% waiting, nothing stopped
  feed(e, kT0 + 60 * kS, 10, 2, 700, 0, 1000, thr);  // 10 s: stopped at every second sample, waiting 70%
  const auto from = kT0 + 60 * kS, to = kT0 + 69 * kS;
  bool sampled = false;
  const auto c = e.causes(rank("h2"), from, to, sampled);
  EXPECT_TRUE(sampled);
  ASSERT_EQ(c.size(), 2u);
  EXPECT_EQ(c[0].kind, "cpu_wait");  // 70% against a floor of 10%: 7x; stopped 50% against 10%: 5x
  // 9 intervals of 0.7 s waiting over the 9 s the samples span.
  EXPECT_NEAR(c[0].now, 0.7, 1e-9);
  EXPECT_NEAR(c[0].before, 0.002, 1e-9);
  EXPECT_EQ(c[1].kind, "stopped");
  EXPECT_NEAR(c[1].now, 0.5, 1e-9);
  EXPECT_EQ(e.because(rank("h2"), from, to),
            "because: its busiest thread waited for a CPU 70% of the time (0% before); its process was found "
            "stopped at 50% of the looks (0% before)");
  EXPECT_EQ(e.because(rank("h9"), from, to), "");  // no sampler there: nothing said
}

TEST(HostEvidence, AHealthyHostOrOneAlwaysSoSaysNoEvidence) {
  HostEvidence e;
  std::uint64_t thr = 0;
  feed(e, kT0, 70, 0, 2, 0, 1000, thr);
  EXPECT_EQ(e.because(rank("h2"), kT0 + 60 * kS, kT0 + 69 * kS), "no evidence on its host");
  // Throttled 40% of the time, and sockets holding 3.9 MB, for the window only.
  HostEvidence t;
  thr = 0;
  feed(t, kT0, 60, 0, 2, 0, 0, thr);
  feed(t, kT0 + 60 * kS, 10, 0, 2, 400, 3900000, thr);
  EXPECT_EQ(t.because(rank("h2"), kT0 + 60 * kS, kT0 + 69 * kS),
            "because: its cgroup's CPU quota throttled it 40% of the time (0% before); its sockets held 3.9 MB unsent "
            "(the median of its looks; up to 3.9 MB, 0.0 MB on average before)");
  t.forget_before(kT0 + 80 * kS);
  EXPECT_EQ(t.because(rank("h2"), kT0 + 60 * kS, kT0 + 69 * kS), "");
}

// A port of `host` sampled once a second for `n` seconds from `from`: its errors growing by `errors_per_s`.
void feed_nic(HostEvidence& e, const std::string& host, const char* device, std::int64_t from, int n,
              std::uint32_t rate_gbps, double errors_per_s, std::uint64_t& errors, bool active = true) {
  for (int i = 0; i < n; ++i) {
    slow::NicSample s{};
    std::snprintf(s.device, sizeof s.device, "%s", device);
    s.port = 1, s.active = active, s.rate_mbps = rate_gbps * 1000, s.host_ns = from + i * kS;
    errors += static_cast<std::uint64_t>(errors_per_s);
    s.errors = errors;
    s.flags = slow::kNicSample;
    e.add(host, s);
  }
}

TEST(HostEvidence, AHostsPortsSayWhatChanged) {
  HostEvidence e;
  std::uint64_t a = 0, b = 0, c = 0;
  feed_nic(e, "h2", "mlx5_3", kT0, 60, 400, 0, a);              // healthy a minute
  feed_nic(e, "h2", "mlx5_3", kT0 + 60 * kS, 10, 400, 120, a);  // then 120 errors a second
  feed_nic(e, "h1", "mlx5_0", kT0, 70, 400, 0, b);
  feed_nic(e, "h3", "mlx5_0", kT0, 70, 200, 0, c);  // trained at half the rate all along
  const auto from = kT0 + 60 * kS, to = kT0 + 69 * kS;
  // 9 intervals of 120 errors in the window; none the minute before.
  EXPECT_EQ(e.because(rank("h2"), from, to),
            "because: its host's mlx5_3 port 1: 1080 port errors (0 the minute before)");
  EXPECT_EQ(e.because(rank("h3"), from, to),
            "because: its host's mlx5_0 port 1 runs at 200 of 400 Gb/s (the best port's)");
  EXPECT_EQ(e.because(rank("h1"), from, to), "no evidence on its host");
  HostEvidence down;
  std::uint64_t d = 0;
  feed_nic(down, "h4", "mlx5_1", kT0, 10, 400, 0, d, false);
  EXPECT_EQ(down.because(rank("h4"), kT0, kT0 + 9 * kS), "because: its host's mlx5_1 port 1 is not active");
}

// The ports as sysfs shows them (the files facts' reader reads), under a made-up root.
TEST(NicSamples, ReadFromSysfs) {
  const fs::path root = fs::temp_directory_path() / ("fbsys-" + std::to_string(::getpid()));
  const auto port = root / "sys/class/infiniband/mlx5_0/ports/1";
  write(port / "state", "4: ACTIVE\n");
  write(port / "phys_state", "5: LinkUp\n");
  write(port / "rate", "200 Gb/sec (4X HDR)\n");
  write(port / "link_layer", "InfiniBand\n");
  write(port / "counters/symbol_error", "7\n");
  write(port / "counters/port_rcv_errors", "3\n");
  write(port / "counters/link_downed", "1\n");
  write(port / "counters/port_xmit_wait", "123456\n");
  write(port / "counters/port_xmit_data", "999\n");  // not an error
  write(root / "sys/class/infiniband/mlx5_0/device/infiniband_verbs/uverbs2/ibdev", "mlx5_0\n");
  const auto n = fabricbench::tools::watchdog::nic_samples(fabricbench::facts::HostFiles(root.string()));
  ASSERT_EQ(n.size(), 1u);
  EXPECT_STREQ(n[0].device, "mlx5_0");
  EXPECT_EQ(n[0].port, 1);
  EXPECT_EQ(n[0].active, 1);
  EXPECT_EQ(n[0].rate_mbps, 200000u);
  EXPECT_EQ(n[0].errors, 11u);  // symbol errors, receive errors, link downed
  EXPECT_EQ(n[0].link_downed, 1u);
  EXPECT_EQ(n[0].xmit_wait, 123456u);
  EXPECT_EQ(n[0].uverbs, 2);
  fs::remove_all(root);
}

}  // namespace host_evidence_test
