// The NCCL profiler plugin driven through its exported tables with synthetic events, as NCCL would call it. Each
// case runs in a child process (the plugin keeps one recorder per process) with its own folder; the parent reads
// what the child left.
#include <dlfcn.h>
#include <gtest/gtest.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <string>
#include <thread>
#include <type_traits>
#include <vector>

#include "../../../plugin/profiler_abi.hpp"
#include "fabricbench/job/slow_record.hpp"

namespace {

namespace abi = fabricbench::profiler::abi;
namespace slow = fabricbench::job::slow;
namespace fs = std::filesystem;

fs::path plugin_path() {
  return fs::read_symlink("/proc/self/exe").parent_path().parent_path() / "lib" / "libnccl-profiler-fabricbench.so";
}

// A build tree moved without its lib/ (tests/install) has no plugin beside the tests: said as a skip.
#define NEEDS_PLUGIN() \
  if (!fs::exists(plugin_path())) GTEST_SKIP() << "no plugin at " << plugin_path() << " (a moved build tree)"

struct Folder {
  fs::path path;
  Folder() {
    char name[] = "/tmp/fbslow-test-XXXXXX";
    path = ::mkdtemp(name);
  }
  ~Folder() { fs::remove_all(path); }
};

bool g_forked_child = false;

// Runs `body` in a child with FABRICBENCH_SLOW_DIR=folder (unset when empty); the child's exit status.
int in_child(const std::string& folder, const std::function<int(void*)>& body) {
  std::fflush(nullptr);
  const pid_t pid = ::fork();
  if (pid == 0) {
    g_forked_child = true;
    if (folder.empty())
      ::unsetenv("FABRICBENCH_SLOW_DIR");
    else
      ::setenv("FABRICBENCH_SLOW_DIR", folder.c_str(), 1);
    void* lib = ::dlopen(plugin_path().c_str(), RTLD_NOW | RTLD_LOCAL);
    if (!lib) std::_Exit(100);
    std::exit(body(lib));  // exit, not _exit: the plugin writes what it holds at the process's end
  }
  int status = 0;
  ::waitpid(pid, &status, 0);
  return WIFEXITED(status) ? WEXITSTATUS(status) : 200 + WTERMSIG(status);
}

struct ReadBack {
  slow::FileHeader header{};
  std::vector<slow::Record> records;
};

ReadBack read_back(const fs::path& folder) {
  ReadBack out;
  for (const auto& e : fs::directory_iterator(folder)) {
    if (e.path().extension() != ".fbslow") continue;
    std::ifstream in(e.path(), std::ios::binary);
    in.read(reinterpret_cast<char*>(&out.header), sizeof out.header);
    slow::Record r;
    while (in.read(reinterpret_cast<char*>(&r), sizeof r)) out.records.push_back(r);
  }
  return out;
}

// The v5 table and a communicator of 4 ranks (this one rank 1) made through it; {nullptr, nullptr} when init fails.
struct V5 {
  const abi::ProfilerV5* t = nullptr;
  void* ctx = nullptr;
};
V5 open_v5(void* lib, std::uint64_t comm) {
  V5 v{static_cast<const abi::ProfilerV5*>(::dlsym(lib, "ncclProfiler_v5")), nullptr};
  int mask = 0;
  if (!v.t || v.t->init(&v.ctx, comm, &mask, "comm", 1, 4, 1, nullptr) != 0) return {};
  return v;
}

template <typename Descr>
Descr coll(std::uint64_t seq, const char* func, std::size_t count, const char* type, std::uint8_t channels, int rank) {
  Descr d{};
  d.type = abi::kColl;
  d.rank = rank;
  d.coll.seq = seq, d.coll.func = func, d.coll.count = count, d.coll.datatype = type, d.coll.channels = channels;
  d.coll.algo = "RING", d.coll.proto = "SIMPLE";
  return d;
}

// One collective of two channels through a v4/v5 table: starts 1000 and 900, stops 2000 and 2500 (GPU ns).
template <typename Table, typename Descr>
int one_collective(const Table* t, void* ctx, std::uint64_t seq) {
  auto d = coll<Descr>(seq, "AllReduce", 1024, "ncclFloat32", 2, 1);
  void* h = nullptr;
  if (t->start_event(ctx, &h, &d) != 0 || !h) return 10;
  t->stop_event(h);  // NCCL enqueued it; the kernel runs after
  void* ch[2] = {};
  const std::uint64_t starts[2] = {1000, 900}, stops[2] = {2000, 2500};
  for (int i = 0; i < 2; ++i) {
    Descr k{};
    k.type = abi::kKernelCh, k.parent = h, k.rank = 1;
    k.kernel_ch.channel = static_cast<std::uint8_t>(i), k.kernel_ch.ptimer = starts[i];
    if (t->start_event(ctx, &ch[i], &k) != 0 || !ch[i]) return 11;
  }
  for (int i = 0; i < 2; ++i) {
    abi::StateArgsV4 a{};
    a.kernel_ch_ptimer = stops[i];
    t->record_event_state(ch[i], abi::kKernelChStop, &a);
    t->stop_event(ch[i]);
  }
  return 0;
}

void expect_collective(const slow::Record& r, std::uint64_t comm, std::uint64_t seq) {
  EXPECT_EQ(r.comm, comm);
  EXPECT_EQ(r.seq, seq);
  EXPECT_EQ(r.bytes, 4096u);
  EXPECT_EQ(r.kernel_ns(), 1600u);  // latest stop 2500 - earliest start 900
  EXPECT_EQ(r.rank, 1);
  EXPECT_EQ(r.nranks, 4);
  EXPECT_STREQ(slow::name_of(slow::kOps, r.op), "AllReduce");
  EXPECT_STREQ(slow::name_of(slow::kAlgos, r.algo), "RING");
  EXPECT_STREQ(slow::name_of(slow::kProtos, r.proto), "SIMPLE");
  EXPECT_EQ(r.channels, 2);
  EXPECT_EQ(r.flags, 0);
}

TEST(ProfilerPlugin, V5RecordsEveryCollectiveWithItsKernelSpan) {
  NEEDS_PLUGIN();
  Folder f;
  const int rc = in_child(f.path, [](void* lib) {
    auto* t = static_cast<const abi::ProfilerV5*>(::dlsym(lib, "ncclProfiler_v5"));
    if (!t) return 1;
    void* ctx = nullptr;
    int mask = 0;
    if (t->init(&ctx, 0x3f00aa, &mask, "comm", 1, 4, 1, nullptr) != 0 || !ctx) return 2;
    if (mask != (abi::kColl | abi::kKernelCh | abi::kProxyOp | abi::kProxyStep)) return 3;
    for (std::uint64_t seq = 0; seq < 3; ++seq)
      if (int e = one_collective<abi::ProfilerV5, abi::DescrV5>(t, ctx, seq)) return e;
    // A kernel channel whose parent is not one of ours is ignored.
    struct {
      std::uint32_t magic = 0;
    } foreign;
    abi::DescrV5 k{};
    k.type = abi::kKernelCh, k.parent = &foreign;
    void* h = reinterpret_cast<void*>(1);
    t->start_event(ctx, &h, &k);
    if (h) return 12;
    // A collective whose channel never stops: written at the end, marked incomplete.
    auto d = coll<abi::DescrV5>(3, "AllGather", 10, "ncclBfloat16", 1, 1);
    void* c = nullptr;
    t->start_event(ctx, &c, &d);
    t->stop_event(c);
    abi::DescrV5 k2{};
    k2.type = abi::kKernelCh, k2.parent = c, k2.kernel_ch.ptimer = 5;
    void* ch = nullptr;
    t->start_event(ctx, &ch, &k2);
    std::this_thread::sleep_for(std::chrono::milliseconds(300));  // the writer's looks pass
    return 0;  // no finalize: as PyTorch, the process ends with the communicator alive
  });
  ASSERT_EQ(rc, 0);
  const auto back = read_back(f.path);
  EXPECT_EQ(std::string(back.header.magic, 8), std::string(slow::kMagic, 8));
  EXPECT_EQ(back.header.profiler_api, 5);
  EXPECT_EQ(back.header.record_size, sizeof(slow::Record));
  EXPECT_EQ(back.header.cuda_device, -1);  // no CUDA in this process
  ASSERT_EQ(back.records.size(), 4u);
  std::vector<std::uint64_t> seqs;
  for (const auto& r : back.records) seqs.push_back(r.seq);
  std::sort(seqs.begin(), seqs.end());
  EXPECT_EQ(seqs, (std::vector<std::uint64_t>{0, 1, 2, 3}));
  for (const auto& r : back.records)
    if (r.seq < 3)
      expect_collective(r, 0x3f00aa, r.seq);
    else {
      EXPECT_EQ(r.flags & slow::kIncomplete, slow::kIncomplete);
      EXPECT_EQ(r.bytes, 20u);  // 10 bfloat16
      EXPECT_STREQ(slow::name_of(slow::kOps, r.op), "AllGather");
    }
}

TEST(ProfilerPlugin, V4TableAndFinalizeWriteTheSame) {
  NEEDS_PLUGIN();
  Folder f;
  const int rc = in_child(f.path, [](void* lib) {
    auto* t = static_cast<const abi::ProfilerV4*>(::dlsym(lib, "ncclProfiler_v4"));
    if (!t) return 1;
    void* ctx = nullptr;
    int mask = 0;
    if (t->init(&ctx, &mask, "comm", 0x77, 1, 4, 1, nullptr) != 0) return 2;
    if (int e = one_collective<abi::ProfilerV4, abi::DescrV4>(t, ctx, 41)) return e;
    t->finalize(ctx);
    return 0;
  });
  ASSERT_EQ(rc, 0);
  const auto back = read_back(f.path);
  EXPECT_EQ(back.header.profiler_api, 4);
  ASSERT_EQ(back.records.size(), 1u);
  expect_collective(back.records[0], 0x77, 41);
}

TEST(ProfilerPlugin, V6TableIsV5s) {
  NEEDS_PLUGIN();
  Folder f;
  const int rc = in_child(f.path, [](void* lib) {
    auto* t = static_cast<const abi::ProfilerV6*>(::dlsym(lib, "ncclProfiler_v6"));
    if (!t) return 1;
    void* ctx = nullptr;
    int mask = 0;
    if (t->init(&ctx, 0x66, &mask, "comm", 1, 4, 1, nullptr) != 0) return 2;
    if (mask & ~(abi::kColl | abi::kKernelCh | abi::kProxyOp | abi::kProxyStep)) return 3;  // no copy-engine events
    if (int e = one_collective<abi::ProfilerV6, abi::DescrV6>(t, ctx, 7)) return e;
    t->finalize(ctx);
    return 0;
  });
  ASSERT_EQ(rc, 0);
  const auto back = read_back(f.path);
  EXPECT_EQ(back.header.profiler_api, 6);
  EXPECT_EQ(back.header.version, slow::kVersion);
  ASSERT_EQ(back.records.size(), 1u);
  expect_collective(back.records[0], 0x66, 7);
}

// One proxy operation of `steps` steps as NCCL's network transport drives it, each step `net_ms` in the network:
// a send goes GPU wait -> peer wait -> network (with its size) -> stop; a receive network -> flush (with its size)
// -> GPU wait -> stop.
template <typename Table, typename Descr, typename StateArgs>
void* proxy_op(const Table* t, void* ctx, void* parent, pid_t pid, bool send, int peer, int steps, double net_ms,
               std::size_t size) {
  Descr d{};
  d.type = abi::kProxyOp, d.parent = parent, d.rank = 1;
  d.proxy_op.pid = pid, d.proxy_op.channel = 3, d.proxy_op.peer = peer, d.proxy_op.steps = steps;
  d.proxy_op.chunk_size = 4096, d.proxy_op.is_send = send;
  void* op = nullptr;
  t->start_event(ctx, &op, &d);
  if (!op) return nullptr;
  for (int i = 0; i < steps; ++i) {
    Descr s{};
    s.type = abi::kProxyStep, s.parent = op, s.rank = 1, s.proxy_step.step = i;
    void* h = nullptr;
    t->start_event(ctx, &h, &s);
    if (!h) return nullptr;
    StateArgs a{};
    if constexpr (std::is_same_v<StateArgs, abi::StateArgsV4>) a.trans_size = size;
    const auto wait = std::chrono::microseconds(static_cast<long>(net_ms * 1000));
    if (send) {
      t->record_event_state(h, abi::kSendGpuWait, &a);
      std::this_thread::sleep_for(std::chrono::milliseconds(1));  // not network time
      t->record_event_state(h, abi::kSendPeerWait, &a);
      t->record_event_state(h, abi::kSendWait, &a);
      std::this_thread::sleep_for(wait);
      t->record_event_state(h, abi::kSendWait, &a);  // repeated: still the same stay in the network
    } else {
      t->record_event_state(h, abi::kRecvWait, &a);
      std::this_thread::sleep_for(wait);
      t->record_event_state(h, abi::kRecvFlushWait, &a);
      t->record_event_state(h, abi::kRecvGpuWait, &a);
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
    t->stop_event(h);
  }
  t->stop_event(op);
  return op;
}

std::vector<slow::ProxyRecord> proxies_of(const ReadBack& b) {
  std::vector<slow::ProxyRecord> out;
  for (const auto& r : b.records)
    if (slow::is_proxy(r)) out.push_back(slow::as_proxy(r));
  std::sort(out.begin(), out.end(), [](const auto& x, const auto& y) { return x.peer < y.peer; });
  return out;
}

TEST(ProfilerPlugin, ProxyOperationsKeepTheirNetworkTimePerPeer) {
  NEEDS_PLUGIN();
  Folder f;
  const int rc = in_child(f.path, [](void* lib) {
    auto [t, ctx] = open_v5(lib, 0x51);
    if (!t) return 1;
    auto d = coll<abi::DescrV5>(9, "AllReduce", 1024, "ncclFloat32", 1, 1);
    void* c = nullptr;
    t->start_event(ctx, &c, &d);
    using P = abi::ProfilerV5;
    using D = abi::DescrV5;
    if (!proxy_op<P, D, abi::StateArgsV4>(t, ctx, c, ::getpid(), true, 2, 3, 4, 1000)) return 2;
    if (!proxy_op<P, D, abi::StateArgsV4>(t, ctx, c, ::getpid(), false, 0, 2, 2, 700)) return 3;
    // Another process's collective (PXN): its parent pointer is not ours and never read (misaligned on purpose).
    alignas(64) char foreign[128] = {};
    if (!proxy_op<P, D, abi::StateArgsV4>(t, ctx, foreign + 3, ::getpid() + 1, true, 3, 1, 0, 10)) return 4;
    t->stop_event(c);
    t->finalize(ctx);
    return 0;
  });
  ASSERT_EQ(rc, 0);
  const auto p = proxies_of(read_back(f.path));
  ASSERT_EQ(p.size(), 3u);
  const auto& recv = p[0];
  const auto& send = p[1];
  const auto& pxn = p[2];
  EXPECT_EQ(send.comm, 0x51u);
  EXPECT_EQ(send.seq, 9u);
  EXPECT_EQ(send.rank, 1);
  EXPECT_EQ(send.channel, 3);
  EXPECT_EQ(send.is_send, 1);
  EXPECT_EQ(send.steps, 3);
  EXPECT_EQ(send.bytes, 3000u);
  EXPECT_GE(send.net_ns, 12000000u);  // 3 x 4 ms in the network; the 1 ms GPU waits not counted
  EXPECT_LT(send.net_ns, send.op_ns - 2500000);
  EXPECT_EQ(recv.is_send, 0);
  EXPECT_EQ(recv.peer, 0);
  EXPECT_EQ(recv.bytes, 1400u);
  EXPECT_GE(recv.net_ns, 4000000u);
  EXPECT_LT(recv.net_ns, recv.op_ns - 1500000);
  EXPECT_EQ(pxn.seq, slow::ProxyRecord::kNoSeq);
  EXPECT_EQ(pxn.comm, 0x51u);  // the communicator's own hash
  EXPECT_EQ(pxn.bytes, 10u);
}

TEST(ProfilerPlugin, StepsInFlightTogetherCountTheirWallTimeOnce) {
  NEEDS_PLUGIN();
  Folder f;
  // The child's own clock over the steps' time in the network (a loaded machine sleeps 10 ms for 30 and more: CI's
  // sanitizer run read 34 ms), handed back through a shared page.
  auto* in_network_ns = static_cast<std::int64_t*>(
      ::mmap(nullptr, sizeof(std::int64_t), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0));
  ASSERT_NE(in_network_ns, MAP_FAILED);
  *in_network_ns = 0;
  const int rc = in_child(f.path, [in_network_ns](void* lib) {
    auto [t, ctx] = open_v5(lib, 0x52);
    if (!t) return 1;
    abi::DescrV5 d{};
    d.type = abi::kProxyOp, d.proxy_op.pid = ::getpid(), d.proxy_op.peer = 2, d.proxy_op.is_send = 1;
    d.proxy_op.steps = 3, d.proxy_op.chunk_size = 100;
    void* op = nullptr;
    t->start_event(ctx, &op, &d);
    void* steps[3] = {};
    abi::StateArgsV4 a{};
    a.trans_size = 100;
    // Three steps in the network together for 10 ms (summed, 30 ms), then 5 ms with none.
    const auto first = std::chrono::steady_clock::now();
    for (int i = 0; i < 3; ++i) {
      abi::DescrV5 sd{};
      sd.type = abi::kProxyStep, sd.parent = op, sd.proxy_step.step = i;
      t->start_event(ctx, &steps[i], &sd);
      t->record_event_state(steps[i], abi::kSendWait, &a);
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
    for (auto* h : steps) t->stop_event(h);
    *in_network_ns =
        std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now() - first).count();
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
    t->stop_event(op);
    t->finalize(ctx);
    return 0;
  });
  ASSERT_EQ(rc, 0);
  const auto p = proxies_of(read_back(f.path));
  ASSERT_EQ(p.size(), 1u);
  EXPECT_EQ(p[0].steps, 3);
  EXPECT_EQ(p[0].bytes, 300u);
  const auto once = static_cast<std::uint64_t>(*in_network_ns);
  ::munmap(in_network_ns, sizeof(std::int64_t));
  EXPECT_GE(p[0].net_ns, 10000000u);  // the 10 ms (or what the sleep took) once, not three times
  EXPECT_LE(p[0].net_ns, once) << "three steps in flight together, " << once << " ns";
  EXPECT_GE(p[0].op_ns, 15000000u);
}

TEST(ProfilerPlugin, V3ProxyStepsCountChunks) {
  NEEDS_PLUGIN();
  Folder f;
  const int rc = in_child(f.path, [](void* lib) {
    auto* t = static_cast<const abi::ProfilerV3*>(::dlsym(lib, "ncclProfiler_v3"));
    void* ctx = nullptr;
    int mask = 0;
    if (t->init(&ctx, &mask) != 0) return 1;
    abi::DescrV3 d{};
    d.type = abi::kColl, d.rank = 1;
    d.coll.comm_hash = 0x33, d.coll.seq = 4, d.coll.func = "AllReduce", d.coll.count = 8;
    d.coll.datatype = "ncclFloat32", d.coll.max_channels = 1, d.coll.algo = "RING", d.coll.proto = "SIMPLE";
    void* c = nullptr;
    t->start_event(ctx, &c, &d);
    if (!proxy_op<abi::ProfilerV3, abi::DescrV3, abi::StateArgsV3>(t, ctx, c, ::getpid(), true, 2, 2, 1, 0)) return 2;
    t->stop_event(c);
    t->finalize(ctx);
    return 0;
  });
  ASSERT_EQ(rc, 0);
  const auto p = proxies_of(read_back(f.path));
  ASSERT_EQ(p.size(), 1u);
  EXPECT_EQ(p[0].comm, 0x33u);  // the collective's, as v3 gives it
  EXPECT_EQ(p[0].seq, 4u);
  EXPECT_EQ(p[0].bytes, 2u * 4096u);  // 2 steps of the 4096-byte chunk: v3 gives no step sizes
  EXPECT_GE(p[0].net_ns, 2000000u);
}

TEST(ProfilerPlugin, AFullProxyRingDropsWhatItCannotHold) {
  NEEDS_PLUGIN();
  Folder f;
  const int rc = in_child(f.path, [](void* lib) {
    auto [t, ctx] = open_v5(lib, 5);
    if (!t) return 1;
    int handles = 0;
    for (int i = 0; i < 2100; ++i) {  // started, never stopped: 2048 slots
      abi::DescrV5 d{};
      d.type = abi::kProxyOp, d.proxy_op.pid = ::getpid(), d.proxy_op.peer = 1, d.proxy_op.is_send = 1;
      void* h = nullptr;
      t->start_event(ctx, &h, &d);
      handles += h != nullptr;
    }
    if (handles != 2048) return 2;
    t->finalize(ctx);
    return 0;
  });
  ASSERT_EQ(rc, 0);
  EXPECT_TRUE(proxies_of(read_back(f.path)).empty());  // none stopped: nothing partial written
}

TEST(ProfilerPlugin, V3TakesTheCommunicatorFromTheEventAndHostTimes) {
  NEEDS_PLUGIN();
  Folder f;
  const int rc = in_child(f.path, [](void* lib) {
    auto* t = static_cast<const abi::ProfilerV3*>(::dlsym(lib, "ncclProfiler_v3"));
    if (!t) return 1;
    void* ctx = nullptr;
    int mask = 0;
    if (t->init(&ctx, &mask) != 0) return 2;
    abi::DescrV3 d{};
    d.type = abi::kColl, d.rank = 2;
    d.coll.comm_hash = 0x99, d.coll.seq = 5, d.coll.func = "ReduceScatter", d.coll.count = 8;
    d.coll.datatype = "ncclFloat64", d.coll.max_channels = 4, d.coll.algo = "TREE", d.coll.proto = "LL";
    void* h = nullptr;
    t->start_event(ctx, &h, &d);
    t->stop_event(h);
    abi::DescrV3 k{};
    k.type = abi::kKernelCh, k.parent = h;
    void* ch = nullptr;
    t->start_event(ctx, &ch, &k);
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
    t->stop_event(ch);  // one channel of at most 4: settled after two looks without change
    std::this_thread::sleep_for(std::chrono::milliseconds(600));
    return 0;
  });
  ASSERT_EQ(rc, 0);
  const auto back = read_back(f.path);
  ASSERT_EQ(back.records.size(), 1u);
  const auto& r = back.records[0];
  EXPECT_EQ(r.comm, 0x99u);
  EXPECT_EQ(r.nranks, 0);
  EXPECT_EQ(r.bytes, 64u);
  EXPECT_EQ(r.flags, slow::kHostTimer);  // complete, not marked incomplete
  EXPECT_GE(r.kernel_ns(), 4000000u);
  EXPECT_LT(r.kernel_ns(), 1000000000u);
  EXPECT_STREQ(slow::name_of(slow::kAlgos, r.algo), "TREE");
}

TEST(ProfilerPlugin, InitFailsWithoutAFolderOfOurs) {
  NEEDS_PLUGIN();
  // Not named: NCCL is told to go on without the plugin.
  EXPECT_EQ(in_child("",
                     [](void* lib) {
                       auto* t = static_cast<const abi::ProfilerV5*>(::dlsym(lib, "ncclProfiler_v5"));
                       void* ctx = nullptr;
                       int mask = 0;
                       return t->init(&ctx, 1, &mask, "c", 1, 2, 0, nullptr) == abi::kInternalError && !ctx ? 0 : 1;
                     }),
            0);
  // A folder others can write: refused (others could feed the judge).
  Folder f;
  ::chmod(f.path.c_str(), 0777);
  EXPECT_EQ(in_child(f.path,
                     [](void* lib) {
                       auto* t = static_cast<const abi::ProfilerV5*>(::dlsym(lib, "ncclProfiler_v5"));
                       void* ctx = nullptr;
                       int mask = 0;
                       return t->init(&ctx, 1, &mask, "c", 1, 2, 0, nullptr) == abi::kInternalError ? 0 : 1;
                     }),
            0);
  EXPECT_TRUE(fs::is_empty(f.path));
}

TEST(ProfilerPlugin, AFullRingDropsWhatItCannotHold) {
  NEEDS_PLUGIN();
  Folder f;
  const int rc = in_child(f.path, [](void* lib) {
    auto [t, ctx] = open_v5(lib, 5);
    if (!t) return 1;
    // 1100 collectives started, none finished: the ring holds 1024, the rest get no handle.
    int handles = 0;
    for (std::uint64_t seq = 0; seq < 1100; ++seq) {
      auto d = coll<abi::DescrV5>(seq, "AllReduce", 1, "ncclInt8", 1, 1);
      void* h = nullptr;
      t->start_event(ctx, &h, &d);
      handles += h != nullptr;
    }
    if (handles != 1024) return 2;
    t->finalize(ctx);
    return 0;
  });
  ASSERT_EQ(rc, 0);
  const auto back = read_back(f.path);
  EXPECT_EQ(back.records.size(), 0u);  // none had a kernel channel: dropped, nothing partial written
}

TEST(ProfilerPlugin, AWriteThatFailsIsSaidOnceAndTheProcessGoesOn) {
  NEEDS_PLUGIN();
  Folder f;
  const int rc = in_child(f.path, [](void* lib) {
    auto [t, ctx] = open_v5(lib, 5);
    if (!t) return 1;
    std::signal(SIGXFSZ, SIG_IGN);
    const rlimit lim{sizeof(slow::FileHeader) + 10 * sizeof(slow::Record), RLIM_INFINITY};
    ::setrlimit(RLIMIT_FSIZE, &lim);
    for (std::uint64_t seq = 0; seq < 200; ++seq)
      if (int e = one_collective<abi::ProfilerV5, abi::DescrV5>(t, ctx, seq)) return e;
    std::this_thread::sleep_for(std::chrono::milliseconds(300));
    // Recording is off: a new communicator's init fails (NCCL goes on without the plugin), events are harmless.
    void* ctx2 = nullptr;
    int mask = 0;
    if (t->init(&ctx2, 6, &mask, "c", 1, 4, 1, nullptr) != abi::kInternalError) return 3;
    if (int e = one_collective<abi::ProfilerV5, abi::DescrV5>(t, ctx, 500)) return e;
    return 0;
  });
  ASSERT_EQ(rc, 0);
  const auto back = read_back(f.path);
  EXPECT_LE(back.records.size(), 10u);
}

// A FIFO where the process's record file goes: init fails at once (before, the open waited for a reader: NCCL's init
// hung), nothing is written, NCCL goes on without the plugin. The child is stopped after 10 s if it hangs.
TEST(ProfilerPlugin, AFifoAtTheRecordPathFailsInitAtOnce) {
  NEEDS_PLUGIN();
  Folder f;
  const std::string folder = f.path;
  const int rc = in_child(folder, [folder](void* lib) {
    ::alarm(10);
    char host[64] = {};
    ::gethostname(host, sizeof host - 1);
    const auto path = folder + "/" + host + "." + std::to_string(::getpid()) + slow::kFileSuffix;
    if (::mkfifo(path.c_str(), 0600) != 0) return 1;
    auto* t = static_cast<const abi::ProfilerV5*>(::dlsym(lib, "ncclProfiler_v5"));
    void* ctx = nullptr;
    int mask = 0;
    return t->init(&ctx, 1, &mask, "c", 1, 2, 0, nullptr) == abi::kInternalError && !ctx ? 0 : 2;
  });
  EXPECT_EQ(rc, 0);  // 200 + SIGALRM: the init hung
}

// Events NCCL sends after a communicator's finalize (it should not) are ignored: the ring stays the recorder's, so
// they touch no freed memory (AddressSanitizer's tree: heap-use-after-free before), and nothing of them is written.
// A communicator made later gets a ring of its own.
TEST(ProfilerPlugin, EventsAfterFinalizeAreIgnored) {
  NEEDS_PLUGIN();
  Folder f;
  const int rc = in_child(f.path, [](void* lib) {
    auto v = open_v5(lib, 0x51);
    if (!v.ctx) return 1;
    if (int e = one_collective<abi::ProfilerV5, abi::DescrV5>(v.t, v.ctx, 1)) return e;
    auto d = coll<abi::DescrV5>(2, "AllReduce", 1024, "ncclFloat32", 2, 1);
    void* late = nullptr;
    v.t->start_event(v.ctx, &late, &d);
    v.t->finalize(v.ctx);
    std::this_thread::sleep_for(std::chrono::milliseconds(300));  // the writer has taken the ring out
    v.t->stop_event(late);
    abi::DescrV5 k{};
    k.type = abi::kKernelCh, k.parent = late, k.rank = 1, k.kernel_ch.ptimer = 5;
    void* ch = nullptr;
    v.t->start_event(v.ctx, &ch, &k);
    abi::StateArgsV4 a{};
    a.kernel_ch_ptimer = 9;
    v.t->record_event_state(ch, abi::kKernelChStop, &a);
    v.t->stop_event(ch);
    void* after = reinterpret_cast<void*>(1);
    auto d3 = coll<abi::DescrV5>(3, "AllReduce", 1024, "ncclFloat32", 2, 1);
    v.t->start_event(v.ctx, &after, &d3);
    if (after) return 20;  // a finalized communicator takes no collective
    auto w = open_v5(lib, 0x52);
    if (!w.ctx || w.ctx == v.ctx) return 21;
    if (int e = one_collective<abi::ProfilerV5, abi::DescrV5>(w.t, w.ctx, 4)) return e;
    w.t->finalize(w.ctx);
    return 0;
  });
  ASSERT_EQ(rc, 0);
  const auto back = read_back(f.path);
  std::vector<std::pair<std::uint64_t, std::uint64_t>> got;
  for (const auto& r : back.records) got.emplace_back(r.comm, r.seq);
  std::sort(got.begin(), got.end());
  // Collective 2 went out, incomplete, at the finalize (its channels never started: dropped, as NCCL's would be).
  EXPECT_EQ(got, (std::vector<std::pair<std::uint64_t, std::uint64_t>>{{0x51, 1}, {0x52, 4}}));
}

}  // namespace

// LeakSanitizer's check at a forked child's exit (AddressSanitizer's tree): the child holds a copy of the parent's
// heap, so what it "leaks" is the parent's, and LeakSanitizer's tracer, which stops every thread the runtime knows
// of, crashed there ("Tracer caught signal 11") once the parent had run threads of its own: a child's exit is not
// leak-checked. Memory errors in the child are still caught (AddressSanitizer itself stays on).
extern "C" __attribute__((visibility("default"))) int __lsan_is_turned_off() { return g_forked_child ? 1 : 0; }
