// fabric-watchdog --slow's host sampler: once a second, each process of the job on this host as the kernel sees it
// (slow::HostSample), appended to <folder>/<host>.<watchdog pid>.fbslow beside the ranks' own records: a header like
// the plugin's (writer kWriterSampler), rotated like theirs at 16 MiB (at most two segments). The judge joins the
// samples to each naming (host_evidence.hpp). It reads, never writes, /proc: a process's stat (its state, faults and
// CPU time), each thread's schedstat (its time waiting for a CPU), its cgroup's cpu.stat (throttling; cgroup v2) and
// pressure (PSI: cpu.pressure, memory.pressure), its fds (the RDMA devices it holds open; its sockets' unsent bytes,
// by their inodes in its own network namespace's net/tcp and tcp6). A process that ended between the listing and the
// reading is skipped. Beside them, once a second, the host's devices as the watchdog reads them: its RDMA ports
// (slow::NicSample) and the GPUs its ranks use (slow::GpuSample, slow::GpuProcess: tools/watchdog/gpu_samples.hpp).
#pragma once
#include <sys/types.h>

#include <atomic>
#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "fabricbench/job/slow_record.hpp"
#include "fabricbench/job/tcp_queues.hpp"

namespace fabricbench::job {

// A /proc file kept open to be read again from its start (pread): a thread's schedstat each second without
// opening it again (1.6 us a read against 7.6 us on this machine). At most kMaxKept at once in the process.
class KeptFile {
 public:
  static KeptFile open(const std::string& path);  // not open() when the budget is spent or it cannot be opened
  KeptFile() = default;
  KeptFile(KeptFile&& o) noexcept : fd_(o.fd_) { o.fd_ = -1; }
  KeptFile& operator=(KeptFile&& o) noexcept;
  KeptFile(const KeptFile&) = delete;
  KeptFile& operator=(const KeptFile&) = delete;
  ~KeptFile();
  bool is_open() const { return fd_ >= 0; }
  std::string read() const;  // the whole (small) file from its start; "" when it is gone
  static constexpr int kMaxKept = 512;

 private:
  int fd_ = -1;
};

// What the sampler keeps of a process between its samples.
struct ProcessMemory {
  std::map<int, KeptFile> schedstat;   // its threads' schedstat files, by thread id
  std::map<int, std::uint64_t> waits;  // each thread's run delay at the sample before, for busiest_wait_ns
  // As its fds were when last listed: the RDMA devices it holds open (bit N: uverbsN), its TCP connections, and
  // whether those are in the sampler's own network namespace (then looked up through `queues`).
  std::uint16_t uverbs = 0;
  std::vector<TcpConnection> tcp;
  bool same_net = false;
  // Each connection's segments retransmitted and sent at the sample before.
  std::map<TcpConnection, std::pair<std::uint32_t, std::uint32_t>> segments;
};
// One process read from `proc` (a /proc) and `cgroup` (a cgroup v2 mount); `memory` updated. Its fds (and its network
// namespace's TCP table) are read again with `list_fds` only (a job's process holds hundreds, and opens its sockets
// and devices at its start); between listings its connections' unsent bytes come from `queues` (where given, usable
// and in its namespace; else the table is read). Empty when the process is gone.
std::optional<slow::HostSample> read_process(const std::string& proc, const std::string& cgroup, int pid,
                                             ProcessMemory& memory, bool list_fds = true, TcpQueues* queues = nullptr);

class HostSampler {
 public:
  // Samples the processes of `root`'s tree that write ranks' records to the folder (the job's NCCL ranks on this
  // host), on a thread of its own from now to its destruction: each process's state ten
  // times a second (a stop of a fraction of a second shows; one look a second would see a periodic stop at one phase
  // only), the rest once a second. Throws Error::runtime when the file cannot be made (the folder was checked before:
  // it is this user's).
  // `devices`: what is read of the host's devices with each second's sample.
  struct Devices {
    // This host's RDMA ports now (the watchdog reads them from sysfs).
    std::function<std::vector<slow::NicSample>()> nics;
    // The GPUs of `bus_ids` (the ranks' headers say which) and the processes on them; `own`: this host's ranks.
    std::function<std::vector<slow::Record>(const std::vector<std::string>& bus_ids, const std::set<int>& own,
                                            std::int64_t now_ns)>
        gpus;
  };
  HostSampler(const std::string& folder, pid_t root, Devices devices = {}, std::string proc = "/proc",
              std::string cgroup = "/sys/fs/cgroup");
  ~HostSampler();
  HostSampler(const HostSampler&) = delete;
  HostSampler& operator=(const HostSampler&) = delete;
  double cpu_s() const { return static_cast<double>(cpu_ns_.load()) * 1e-9; }  // its thread's CPU time
  std::size_t samples() const { return samples_.load(); }
  double wall_s() const;  // since it began
  static constexpr std::size_t kMaxProcesses = 64;
  static constexpr int kPollsPerSample = 10;
  static constexpr int kTreeEvery = 5;  // samples between two readings of the process tree

 private:
  void loop(pid_t root);
  // One second's sample of `pids` (their states' polls in `polls`) to the file; false when the file failed.
  bool write(const std::vector<int>& pids, const std::map<int, std::pair<int, int>>& polls, std::int64_t now_ns,
             bool list_fds);
  bool open_file();
  // This host's ranks writing to the folder: pid -> the GPU bus id its header gives ("" before it has one).
  std::map<int, std::string> ranks() const;
  Devices devices_;
  std::vector<std::string> bus_ids_;  // the ranks' GPUs, read with the tree
  std::string folder_, path_, proc_, cgroup_;
  slow::FileHeader header_{};
  int fd_ = -1;
  std::uint64_t written_ = 0;
  std::map<int, ProcessMemory> memory_;  // per process
  TcpQueues queues_;
  std::atomic<std::uint64_t> cpu_ns_{0};
  std::atomic<std::size_t> samples_{0};
  std::atomic<bool> stop_{false};
  std::int64_t started_ns_ = 0;
  std::thread thread_;
};

}  // namespace fabricbench::job
