#include "fabricbench/job/host_sampler.hpp"

#include <dirent.h>
#include <fcntl.h>
#include <fmt/format.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <set>
#include <sstream>

#include "fabricbench/error.hpp"
#include "fabricbench/job/child_process.hpp"

namespace fabricbench::job {
namespace {

namespace slow = job::slow;

std::int64_t realtime_ns() {
  timespec t{};
  ::clock_gettime(CLOCK_REALTIME, &t);
  return static_cast<std::int64_t>(t.tv_sec) * 1000000000 + t.tv_nsec;
}

// A whole small file (procfs, sysfs), "" when it cannot be read. Plain read(2): ten looks a second at each process.
std::string read_text(const std::string& path) {
  std::string out;
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return out;
  char buf[4096];
  for (ssize_t n; (n = ::read(fd, buf, sizeof buf)) > 0 && out.size() < (1u << 20);)
    out.append(buf, static_cast<std::size_t>(n));
  ::close(fd);
  return out;
}

std::vector<std::string> entries(const std::string& folder) {
  std::vector<std::string> out;
  if (DIR* d = ::opendir(folder.c_str())) {
    while (const dirent* e = ::readdir(d))
      if (e->d_name[0] != '.') out.emplace_back(e->d_name);
    ::closedir(d);
  }
  return out;
}

// /proc/PID/stat: the fields after the command's closing parenthesis (a command may hold spaces and parentheses).
bool read_stat(const std::string& text, slow::HostSample& s) {
  const auto close = text.rfind(')');
  if (close == std::string::npos) return false;
  std::istringstream in(text.substr(close + 1));
  std::vector<std::string> f;
  for (std::string w; in >> w;) f.push_back(w);
  if (f.size() < 18) return false;
  // After the command: state (field 3), ... majflt (12), utime (14), stime (15).
  static const double tick_ns = 1e9 / static_cast<double>(::sysconf(_SC_CLK_TCK));
  s.state = f[0].empty() ? '?' : f[0][0];
  s.majflt = static_cast<std::uint32_t>(std::stoull(f[9]));
  s.cpu_ns = static_cast<std::uint64_t>(static_cast<double>(std::stoull(f[11]) + std::stoull(f[12])) * tick_ns);
  return true;
}

// A PSI file's "some ... total=USEC" in ms (wrapping as the record's 32 bits do); 0 when there is none.
std::uint32_t pressure_ms(const std::string& text) {
  const auto at = text.rfind("some ", 0) == 0 ? text.find("total=") : std::string::npos;
  return at == std::string::npos ? 0 : static_cast<std::uint32_t>(std::stoull(text.substr(at + 6)) / 1000);
}

// The process's cgroup (v2: "0::/path"): its cpu.stat's throttled_usec and its CPU and memory pressure.
void read_cgroup(const std::string& proc_pid, const std::string& cgroup, slow::HostSample& s) {
  std::istringstream lines(read_text(proc_pid + "/cgroup"));
  for (std::string line; std::getline(lines, line);)
    if (line.rfind("0::", 0) == 0) {
      const auto dir = cgroup + line.substr(3);
      std::istringstream stat(read_text(dir + "/cpu.stat"));
      for (std::string key, value; stat >> key >> value;)
        if (key == "throttled_usec") s.throttled_us = std::stoull(value);
      s.cpu_pressure_ms = pressure_ms(read_text(dir + "/cpu.pressure"));
      s.mem_pressure_ms = pressure_ms(read_text(dir + "/memory.pressure"));
    }
}

// Its fds: the RDMA devices it holds open (/dev/infiniband/uverbsN: bit N of the sample's mask) and its sockets,
// whose TCP connections (its network namespace's net/tcp and tcp6, by inode) say the bytes it holds unsent
// (tx_queue) and, looked up through `queues`, the segments they retransmitted. Listed with `list` only; between
// listings the connections known are looked up.
void read_fds(const std::string& proc, const std::string& proc_pid, ProcessMemory& m, bool list, TcpQueues* queues,
              slow::HostSample& s) {
  char target[128];
  static constexpr char kUverbs[] = "/dev/infiniband/uverbs";
  // Between listings, the connections known are looked up (unsent bytes, retransmissions); else the table is read.
  const auto look = [&] {
    const auto t = queues && queues->usable() && m.same_net ? queues->look(m.tcp) : std::nullopt;
    if (!t) return false;
    s.tcp_unsent = t->unsent;
    // Of the segments its connections sent since the sample before, the share retransmitted (per 100,000); not of a
    // trickle (under 1000 segments a second: an idle connection's one probe would read as a share).
    std::uint64_t again = 0, sent = 0;
    for (const auto& [c, n] : t->segments)
      if (const auto b = m.segments.find(c);
          b != m.segments.end() && n.first >= b->second.first && n.second >= b->second.second)
        again += n.first - b->second.first, sent += n.second - b->second.second;
    s.retransmits =
        static_cast<std::uint16_t>(sent >= 1000 ? std::min<std::uint64_t>(100000 * again / sent, 65535) : 0);
    m.segments = t->segments;
    return true;
  };
  s.uverbs = m.uverbs;
  if (!list && look()) return;
  std::set<std::string> sockets;
  m.uverbs = 0;
  for (const auto& fd : entries(proc_pid + "/fd")) {
    const auto n = ::readlink((proc_pid + "/fd/" + fd).c_str(), target, sizeof target - 1);
    if (n <= 0) continue;
    target[n] = 0;
    if (n > 9 && std::strncmp(target, "socket:[", 8) == 0) sockets.emplace(target + 8, static_cast<std::size_t>(n) - 9);
    if (std::strncmp(target, kUverbs, sizeof kUverbs - 1) == 0) {
      const int index = std::atoi(target + sizeof kUverbs - 1);
      if (index >= 0 && index < 16) m.uverbs = static_cast<std::uint16_t>(m.uverbs | 1u << index);
    }
  }
  s.uverbs = m.uverbs;
  m.tcp.clear();
  std::uint64_t unsent = 0;
  if (!sockets.empty())
    for (const auto& [table, family] : {std::pair{"/net/tcp", AF_INET}, std::pair{"/net/tcp6", AF_INET6}})
      for (const auto& [inode, c] :
           parse_tcp_table(read_text(proc_pid + table), static_cast<std::uint8_t>(family), sockets)) {
        unsent += c.unsent;
        m.tcp.push_back(c);
      }
  // Its connections are looked up from the sampler's own namespace only where they live there.
  const auto ns = [](const std::string& link) {
    char t[64];
    const auto n = ::readlink(link.c_str(), t, sizeof t - 1);
    return n > 0 ? std::string(t, static_cast<std::size_t>(n)) : std::string();
  };
  m.same_net = !ns(proc_pid + "/ns/net").empty() && ns(proc_pid + "/ns/net") == ns(proc + "/self/ns/net");
  if (!look()) s.tcp_unsent = unsent;  // (the table's, where the connections cannot be looked up)
}

}  // namespace

namespace {
std::atomic<int> g_kept{0};  // KeptFiles open in this process
}  // namespace

KeptFile KeptFile::open(const std::string& path) {
  KeptFile f;
  if (g_kept.fetch_add(1) >= kMaxKept) {
    --g_kept;
    return f;
  }
  f.fd_ = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (f.fd_ < 0) --g_kept;
  return f;
}

KeptFile& KeptFile::operator=(KeptFile&& o) noexcept {
  if (this != &o) {
    this->~KeptFile();
    fd_ = o.fd_;
    o.fd_ = -1;
  }
  return *this;
}

KeptFile::~KeptFile() {
  if (fd_ < 0) return;
  ::close(fd_);
  fd_ = -1;
  --g_kept;
}

std::string KeptFile::read() const {
  char buf[512];
  const auto n = fd_ < 0 ? -1 : ::pread(fd_, buf, sizeof buf, 0);
  return n > 0 ? std::string(buf, static_cast<std::size_t>(n)) : std::string();
}

std::optional<slow::HostSample> read_process(const std::string& proc, const std::string& cgroup, int pid,
                                             ProcessMemory& memory, bool list_fds, TcpQueues* queues) {
  auto& waits = memory.waits;
  const std::string dir = proc + "/" + std::to_string(pid);
  slow::HostSample s{};
  try {
    if (!read_stat(read_text(dir + "/stat"), s)) return std::nullopt;
    std::map<int, std::uint64_t> now;
    std::map<int, KeptFile> kept;
    for (const auto& task : entries(dir + "/task")) {
      const int tid = std::stoi(task);
      auto& file = kept[tid];
      if (const auto it = memory.schedstat.find(tid); it != memory.schedstat.end()) file = std::move(it->second);
      if (!file.is_open()) file = KeptFile::open(dir + "/task/" + task + "/schedstat");
      const auto text = file.is_open() ? file.read() : read_text(dir + "/task/" + task + "/schedstat");
      // "time on a CPU, time waiting for one (run delay), timeslices" in ns
      char* end = nullptr;
      std::strtoull(text.c_str(), &end, 10);
      const char* at = end;
      const std::uint64_t delay = std::strtoull(at, &end, 10);
      if (text.empty() || end == at) continue;
      now[tid] = delay;
      const auto before = waits.find(tid);
      if (before != waits.end() && delay >= before->second)
        s.busiest_wait_ns = std::max(s.busiest_wait_ns, delay - before->second);
    }
    waits = std::move(now);
    memory.schedstat = std::move(kept);  // (the threads gone close theirs)
    read_cgroup(dir, cgroup, s);
    read_fds(proc, dir, memory, list_fds, queues, s);
  } catch (const std::exception&) {  // a number that is not one: a file of another kind, or a process gone mid-read
    return std::nullopt;
  }
  s.pid = pid;
  s.flags = slow::kHostSample;
  return s;
}

HostSampler::HostSampler(const std::string& folder, pid_t root, Devices devices, std::string proc, std::string cgroup)
    : devices_(std::move(devices)), proc_(std::move(proc)), cgroup_(std::move(cgroup)) {
  std::memcpy(header_.magic, slow::kMagic, sizeof header_.magic);
  header_.version = slow::kSamplerVersion;
  header_.record_size = sizeof(slow::Record);
  header_.pid = static_cast<std::int32_t>(::getpid());
  header_.cuda_device = -1;
  header_.writer = slow::kWriterSampler;
  header_.start_ns = started_ns_ = realtime_ns();
  ::gethostname(header_.host, sizeof header_.host - 1);
  const auto boot = read_text("/proc/sys/kernel/random/boot_id");
  std::memcpy(header_.boot_id, boot.data(), std::min(boot.size(), sizeof header_.boot_id));
  folder_ = folder;
  path_ = fmt::format("{}/{}.{}{}", folder, header_.host, header_.pid, slow::kFileSuffix);
  if (!open_file()) throw Error::runtime(fmt::format("--slow: cannot write {}: {}", path_, std::strerror(errno)));
  thread_ = std::thread([this, root] { loop(root); });
}

HostSampler::~HostSampler() {
  stop_.store(true);
  if (thread_.joinable()) thread_.join();
  if (fd_ >= 0) ::close(fd_);
}

double HostSampler::wall_s() const { return static_cast<double>(realtime_ns() - started_ns_) * 1e-9; }

bool HostSampler::open_file() {
  fd_ = ::open(path_.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_APPEND | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK, 0600);
  struct stat st {};
  if (fd_ < 0 || ::fstat(fd_, &st) != 0 || !S_ISREG(st.st_mode) ||
      ::write(fd_, &header_, sizeof header_) != static_cast<ssize_t>(sizeof header_)) {
    if (fd_ >= 0) ::close(fd_);
    fd_ = -1;
    return false;
  }
  written_ = sizeof header_;
  return true;
}

// Ten looks a second at each process's state (one small read each), a whole sample at every tenth.
void HostSampler::loop(pid_t root) {
  std::vector<int> pids;
  std::map<int, std::pair<int, int>> polls;  // per process: (stopped, looked)
  for (int tick = 0; !stop_.load(); ++tick) {
    timespec a{}, b{};
    ::clock_gettime(CLOCK_THREAD_CPUTIME_ID, &a);
    // The tree (all of /proc read) each second of the first ten, while the job starts its processes, then every
    // kTreeEvery seconds.
    if (tick % ((tick < 10 * kPollsPerSample ? 1 : kTreeEvery) * kPollsPerSample) == 0) {
      pids.clear();
      bus_ids_.clear();
      const auto ranks = this->ranks();
      for (pid_t p : process_tree(root)) {
        const auto r = ranks.find(p);
        if (pids.size() >= kMaxProcesses || r == ranks.end()) continue;
        pids.push_back(p);
        if (!r->second.empty() && std::find(bus_ids_.begin(), bus_ids_.end(), r->second) == bus_ids_.end())
          bus_ids_.push_back(r->second);
      }
    }
    for (int pid : pids) {
      const auto stat = read_text(proc_ + "/" + std::to_string(pid) + "/stat");
      const auto close = stat.rfind(')');
      if (close == std::string::npos || close + 2 >= stat.size()) continue;
      auto& p = polls[pid];
      p.first += stat[close + 2] == 'T' || stat[close + 2] == 't';
      ++p.second;
    }
    bool ok = true;
    if (tick % kPollsPerSample == kPollsPerSample - 1) {
      // The ranks' fds listed again with the tree (each second of the first ten, then every kTreeEvery).
      const int second = tick / kPollsPerSample;
      ok = write(pids, polls, realtime_ns(), second < 10 || second % kTreeEvery == 0);
      polls.clear();
    }
    ::clock_gettime(CLOCK_THREAD_CPUTIME_ID, &b);
    cpu_ns_ += static_cast<std::uint64_t>((b.tv_sec - a.tv_sec) * 1000000000 + (b.tv_nsec - a.tv_nsec));
    if (!ok) return;
    for (int i = 0; i < 10 && !stop_.load(); ++i) std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
}

// The processes of this host that write ranks' records to the folder ("<host>.<pid>.fbslow", the plugin's name for
// them): the job's NCCL ranks, not its launcher or its data loaders; each with its GPU's bus id from its header.
std::map<int, std::string> HostSampler::ranks() const {
  std::map<int, std::string> out;
  const std::string prefix = std::string(header_.host) + ".";
  for (const auto& name : entries(folder_)) {
    if (name.rfind(prefix, 0) != 0 || name.size() <= prefix.size() + std::strlen(slow::kFileSuffix) ||
        name.compare(name.size() - std::strlen(slow::kFileSuffix), std::string::npos, slow::kFileSuffix) != 0)
      continue;
    const auto digits = name.substr(prefix.size(), name.size() - prefix.size() - std::strlen(slow::kFileSuffix));
    if (digits.empty() || digits.find_first_not_of("0123456789") != std::string::npos || digits.size() >= 10) continue;
    const int pid = std::stoi(digits);
    if (pid == header_.pid) continue;
    slow::FileHeader h{};
    const int fd = ::open((folder_ + "/" + name).c_str(), O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
    const bool whole = fd >= 0 && ::pread(fd, &h, sizeof h, 0) == static_cast<ssize_t>(sizeof h);
    if (fd >= 0) ::close(fd);
    out[pid] = whole && std::memcmp(h.magic, slow::kMagic, sizeof h.magic) == 0
                   ? std::string(h.gpu_bus_id, strnlen(h.gpu_bus_id, sizeof h.gpu_bus_id))
                   : std::string();
  }
  return out;
}

bool HostSampler::write(const std::vector<int>& pids, const std::map<int, std::pair<int, int>>& polls,
                        std::int64_t now_ns, bool list_fds) {
  std::vector<slow::HostSample> out;
  std::map<int, ProcessMemory> memory;
  for (int pid : pids) {
    const auto known = memory_.find(pid);
    auto& m = memory[pid];
    if (known != memory_.end()) m = std::move(known->second);
    auto s = read_process(proc_, cgroup_, pid, m, list_fds || known == memory_.end(), &queues_);
    if (!s) continue;
    s->host_ns = now_ns;
    if (const auto p = polls.find(pid); p != polls.end())
      s->stopped_polls = static_cast<std::uint8_t>(p->second.first),
      s->polls = static_cast<std::uint8_t>(p->second.second);
    out.push_back(*s);
  }
  memory_ = std::move(memory);  // (the processes gone are forgotten)
  std::vector<slow::Record> more;
  if (devices_.nics)
    for (auto n : devices_.nics()) {
      n.host_ns = now_ns, n.flags = slow::kNicSample;
      more.push_back(slow::record_as<slow::Record>(n));
    }
  if (devices_.gpus && !bus_ids_.empty()) {
    const auto gpus = devices_.gpus(bus_ids_, std::set<int>(pids.begin(), pids.end()), now_ns);
    more.insert(more.end(), gpus.begin(), gpus.end());
  }
  if (written_ >= slow::kRotateBytes) {
    ::close(fd_);
    fd_ = -1;
    const auto old = path_.substr(0, path_.size() - std::strlen(slow::kFileSuffix)) + slow::kOldSuffix;
    if (::rename(path_.c_str(), old.c_str()) != 0 || !open_file()) return false;
  }
  for (const auto& h : out) more.push_back(slow::record_as<slow::Record>(h));
  const auto bytes = more.size() * sizeof(slow::Record);
  if (bytes > 0 && ::write(fd_, more.data(), bytes) != static_cast<ssize_t>(bytes)) {
    std::fprintf(stderr, "fabric-watchdog: --slow: cannot write %s: %s; the host's samples stop, the job goes on\n",
                 path_.c_str(), std::strerror(errno ? errno : ENOSPC));
    return false;
  }
  written_ += bytes;
  samples_ += out.size();
  return true;
}

}  // namespace fabricbench::job
