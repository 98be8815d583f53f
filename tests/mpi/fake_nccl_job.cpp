// A stand-in for a training job on NCCL, for the CPU tests of fabric-watchdog --slow: it loads the profiler plugin
// named by NCCL_PROFILER_PLUGIN as NCCL does (dlopen, the highest ncclProfiler_vN it asks for) and calls it as
// NCCL would for one communicator of --ranks processes, each a fork of this one (a process per rank, as a job has),
// one all-reduce every --period-ms. A healthy rank's kernel runs 0.3-0.5 ms; while rank --slow-rank is slow
// (--slow-from to --slow-to seconds), the others' kernels run --wait-ms longer: they wait for it. --exit-rank R
// --exit-at S: that rank leaves early. --quiet-from to --quiet-to: a pause within the slow time (the rank is well).
// Each proxy step is --net-ms in the network (0.5; a slowed link's --link-ms, 5): at 0.05 a loaded machine's wake-ups
// stretched a healthy connection to 1.3-1.5x its usual, past the 1.25 at which a connection beside a slow one counts
// (CI, 2026-11-29). Without NCCL_PROFILER_PLUGIN it runs unprofiled, as NCCL before 2.23 would.
#include <dlfcn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "../../plugin/profiler_abi.hpp"

namespace abi = fabricbench::profiler::abi;
using Clock = std::chrono::steady_clock;

namespace {

struct Args {
  int ranks = 4, slow_rank = -1, exit_rank = -1, api = 5, link_rank = -1, nic_rank = -1;
  bool one_rank = false;
  double slow_from = 0, slow_to = 0, quiet_from = 0, quiet_to = 0, seconds = 10, period_ms = 50, wait_ms = 20,
         exit_at = 0, link_ms = 5, net_ms = 0.5;
};

double number(const char* text) { return std::strtod(text, nullptr); }

// Whether the slow rank or link is slow at `s` seconds of the job.
bool slow_at(const Args& a, double s) {
  return s >= a.slow_from && s < a.slow_to && !(s >= a.quiet_from && s < a.quiet_to);
}

std::uint64_t now_ns() {
  return static_cast<std::uint64_t>(
      std::chrono::duration_cast<std::chrono::nanoseconds>(Clock::now().time_since_epoch()).count());
}

// One proxy operation of 2 steps, each `net_ms` in the network, as NCCL's proxy thread reports it.
template <typename Table, typename Descr>
void proxy_op(const Table* t, void* ctx, void* coll, int rank, int peer, int channel, bool send, double net_ms) {
  Descr d{};
  d.type = abi::kProxyOp, d.parent = coll, d.rank = rank;
  d.proxy_op.pid = ::getpid(), d.proxy_op.channel = static_cast<std::uint8_t>(channel), d.proxy_op.peer = peer;
  d.proxy_op.steps = 2, d.proxy_op.chunk_size = 512 << 10, d.proxy_op.is_send = send;
  void* op = nullptr;
  t->start_event(ctx, &op, &d);
  for (int step = 0; step < 2; ++step) {
    Descr sd{};
    sd.type = abi::kProxyStep, sd.parent = op, sd.rank = rank, sd.proxy_step.step = step;
    void* h = nullptr;
    t->start_event(ctx, &h, &sd);
    abi::StateArgsV4 a{};
    a.trans_size = 512 << 10;
    const auto in_net = std::chrono::microseconds(static_cast<long>(net_ms * 1000));
    if (send) {
      t->record_event_state(h, abi::kSendGpuWait, &a);
      t->record_event_state(h, abi::kSendPeerWait, &a);
      t->record_event_state(h, abi::kSendWait, &a);
      std::this_thread::sleep_for(in_net);
    } else {
      t->record_event_state(h, abi::kRecvWait, &a);
      std::this_thread::sleep_for(in_net);
      t->record_event_state(h, abi::kRecvFlushWait, &a);
      t->record_event_state(h, abi::kRecvGpuWait, &a);
    }
    t->stop_event(h);
  }
  t->stop_event(op);
}

template <typename Table, typename Descr>
int run_rank(const Table* t, void* ctx, const Args& a, int rank, Clock::time_point t0) {
  for (std::uint64_t seq = 0;; ++seq) {
    const auto at = t0 + std::chrono::microseconds(static_cast<long>(seq * a.period_ms * 1000));
    const double s = std::chrono::duration<double>(at - t0).count();
    if (s >= a.seconds) break;
    if (rank == a.exit_rank && s >= a.exit_at) std::_Exit(0);  // gone without a word, as a crashed rank
    std::this_thread::sleep_until(at);
    Descr d{};
    d.type = abi::kColl, d.rank = rank;
    d.coll.seq = seq, d.coll.func = "AllReduce", d.coll.count = 16 << 20, d.coll.datatype = "ncclFloat32";
    d.coll.channels = 2, d.coll.algo = "RING", d.coll.proto = "SIMPLE";
    void* h = nullptr;
    t->start_event(ctx, &h, &d);
    t->stop_event(h);
    const bool slow_now = a.slow_rank >= 0 && slow_at(a, s);
    // Rank r's base time varies by collective, so that healthy ranks take turns being last.
    std::uint64_t kernel = 300000 + ((seq * 7 + static_cast<std::uint64_t>(rank) * 13) % 5) * 50000;
    if (slow_now && rank != a.slow_rank) kernel += static_cast<std::uint64_t>(a.wait_ms * 1e6);
    const std::uint64_t start = now_ns();
    for (int c = 0; c < 2; ++c) {
      Descr k{};
      k.type = abi::kKernelCh, k.parent = h, k.rank = rank;
      k.kernel_ch.channel = static_cast<std::uint8_t>(c), k.kernel_ch.ptimer = start;
      void* ch = nullptr;
      t->start_event(ctx, &ch, &k);
      abi::StateArgsV4 st{};
      st.kernel_ch_ptimer = start + kernel;
      t->record_event_state(ch, abi::kKernelChStop, &st);
      t->stop_event(ch);
    }
    const int next = (rank + 1) % a.ranks, prev = (rank + a.ranks - 1) % a.ranks;
    const bool in_time = slow_at(a, s);
    const bool slow_send = in_time && (rank == a.link_rank || rank == a.nic_rank || next == a.nic_rank);
    for (int c = 0; c < 2; ++c) {
      proxy_op<Table, Descr>(t, ctx, h, rank, next, c, true, slow_send ? a.link_ms : a.net_ms);
      proxy_op<Table, Descr>(t, ctx, h, rank, prev, c, false, a.net_ms);
    }
  }
  t->finalize(ctx);
  return 0;
}

int rank_main(const Args& a, int rank, Clock::time_point t0) {
  const char* path = std::getenv("NCCL_PROFILER_PLUGIN");
  void* lib = path && *path ? ::dlopen(path, RTLD_NOW | RTLD_LOCAL) : nullptr;
  if (path && *path && !lib) std::fprintf(stderr, "fake job: %s\n", ::dlerror());
  int mask = 0;
  void* ctx = nullptr;
  if (lib && a.api == 5) {
    auto* t = static_cast<const abi::ProfilerV5*>(::dlsym(lib, "ncclProfiler_v5"));
    if (t && t->init(&ctx, 0xabc0fb, &mask, "fake", 1, a.ranks, rank, nullptr) == abi::kSuccess)
      return run_rank<abi::ProfilerV5, abi::DescrV5>(t, ctx, a, rank, t0);
  } else if (lib && a.api == 4) {
    auto* t = static_cast<const abi::ProfilerV4*>(::dlsym(lib, "ncclProfiler_v4"));
    if (t && t->init(&ctx, &mask, "fake", 0xabc0fb, 1, a.ranks, rank, nullptr) == abi::kSuccess)
      return run_rank<abi::ProfilerV4, abi::DescrV4>(t, ctx, a, rank, t0);
  }
  // No plugin (or init refused): the job runs unprofiled.
  std::this_thread::sleep_until(t0 + std::chrono::milliseconds(static_cast<long>(a.seconds * 1000)));
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  Args a;
  for (int i = 1; i < argc; ++i)
    if (std::string(argv[i]) == "--one-rank") {
      a.one_rank = true;
      for (int j = i; j + 1 < argc; ++j) argv[j] = argv[j + 1];
      --argc;
      break;
    }
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string k = argv[i];
    const double v = number(argv[i + 1]);
    if (k == "--ranks")
      a.ranks = static_cast<int>(v);
    else if (k == "--slow-rank")
      a.slow_rank = static_cast<int>(v);
    else if (k == "--slow-from")
      a.slow_from = v;
    else if (k == "--slow-to")
      a.slow_to = v;
    else if (k == "--quiet-from")
      a.quiet_from = v;
    else if (k == "--quiet-to")
      a.quiet_to = v;
    else if (k == "--seconds")
      a.seconds = v;
    else if (k == "--period-ms")
      a.period_ms = v;
    else if (k == "--wait-ms")
      a.wait_ms = v;
    else if (k == "--exit-rank")
      a.exit_rank = static_cast<int>(v);
    else if (k == "--exit-at")
      a.exit_at = v;
    else if (k == "--api")
      a.api = static_cast<int>(v);
    else if (k == "--link-rank")
      a.link_rank = static_cast<int>(v);
    else if (k == "--nic-rank")
      a.nic_rank = static_cast<int>(v);
    else if (k == "--link-ms")
      a.link_ms = v;
    else if (k == "--net-ms")
      a.net_ms = v;
    else {
      std::fprintf(stderr, "fake_nccl_job: unknown option %s\n", argv[i]);
      return 2;
    }
  }
  if (a.one_rank) {
    const char* rank = nullptr;
    for (const char* name : {"SLURM_PROCID", "OMPI_COMM_WORLD_RANK", "PMI_RANK"})
      if ((rank = std::getenv(name))) break;
    if (!rank) {
      std::fprintf(stderr, "fake_nccl_job: --one-rank needs SLURM_PROCID, OMPI_COMM_WORLD_RANK or PMI_RANK\n");
      return 2;
    }
    const auto wall = std::chrono::system_clock::now().time_since_epoch();
    const auto next = std::chrono::duration_cast<std::chrono::seconds>(wall) + std::chrono::seconds(2);
    const auto t0 = Clock::now() + std::chrono::duration_cast<Clock::duration>(next - wall);
    const int r = std::atoi(rank);
    const int rc = rank_main(a, r, t0);
    std::printf("fake job: rank %d done\n", r);
    return rc;
  }
  const auto t0 = Clock::now() + std::chrono::milliseconds(200);
  std::vector<pid_t> kids;
  for (int r = 0; r < a.ranks; ++r) {
    const pid_t pid = ::fork();
    if (pid == 0) std::exit(rank_main(a, r, t0));
    kids.push_back(pid);
  }
  int worst = 0;
  for (pid_t k : kids) {
    int status = 0;
    ::waitpid(k, &status, 0);
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) worst = 1;
  }
  std::printf("fake job: %d ranks done\n", a.ranks);
  return worst;
}
