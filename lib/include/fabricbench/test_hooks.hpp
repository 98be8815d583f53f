// The test hooks: FABRICBENCH_TEST_* environment variables that make a failure happen on purpose, so that the tests
// can prove what a tool does when a rank stalls, a byte is wrong or a queue pair breaks. Read from the environment
// once, in one place (TestHooks::current(), first called by run_benchmark before any measurement), and handed down
// as this value: RunContext::hooks for the tools; the floors below the tools, which have no RunContext, ask
// current() (the same value). No hook is read inside a timed region. docs/testing.md lists them; each is
// inert when unset. Emulated hosts are not a hook: they are the --emulate-hosts option.
#pragma once
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

namespace fabricbench {

struct TestHooks {
  // FABRICBENCH_TEST_SYSROOT=DIR: /sys, /proc and /etc are read under DIR ("%h" becomes the host's name).
  std::string sysroot;
  // FABRICBENCH_TEST_HOST_FACT=HOST:key=value: that host describes itself with key=value (hosts unlike each other).
  std::string host_fact;
  // FABRICBENCH_TEST_HOST_NAMES=a,b,...: with --emulate-hosts, emulated host k is named after the k-th entry.
  std::vector<std::string> host_names;
  // FABRICBENCH_TEST_STALL=RANK:K: that rank stalls forever at its K-th measurement (from 0).
  int stall_rank = -1, stall_at = -1;
  // FABRICBENCH_TEST_STALL_NCCL=RANK: that world rank's NCCL operations never start (a stuck GPU or link).
  int stall_nccl_rank = -1;
  // FABRICBENCH_TEST_FLIP_BYTE (any value): fabric-coll and fabric-p2p corrupt one output byte before the check.
  bool flip_byte = false;
  // FABRICBENCH_TEST_QP_ERROR=N: fabric-verbs moves its queue pair to the error state after N iterations.
  int qp_error_at = -1;
  // FABRICBENCH_TEST_LATE_RECEIVES=HOST:MS: in fabric-sweep's p2p tests, host HOST (its index) posts its receives MS
  // milliseconds late (a receiver that falls behind).
  int late_host = -1;
  double late_ms = 0;
  // FABRICBENCH_TEST_OSU_POLL=1|sync: the NCCL p2p wait as OSU's (cudaStreamQuery and MPI_Iprobe in turn) or with
  // cudaStreamSynchronize, to measure what the wait costs (docs/measurements/perf-p2p-nccl-osu.md).
  std::string osu_poll;

  // The hooks of this process's environment, read at the first call.
  static const TestHooks& current() {
    static const TestHooks hooks = from_environment();
    return hooks;
  }

  // The environment read now (current() reads it once; the unit tests read it after setting it).
  static TestHooks from_environment() {
    const auto text = [](const char* name) {
      const char* v = std::getenv(name);
      return std::string(v ? v : "");
    };
    TestHooks h;
    h.sysroot = text("FABRICBENCH_TEST_SYSROOT");
    h.host_fact = text("FABRICBENCH_TEST_HOST_FACT");
    const auto names = text("FABRICBENCH_TEST_HOST_NAMES");
    for (std::size_t begin = 0; !names.empty() && begin <= names.size();) {
      const auto comma = std::min(names.find(',', begin), names.size());
      h.host_names.push_back(names.substr(begin, comma - begin));
      begin = comma + 1;
    }
    if (const auto stall = text("FABRICBENCH_TEST_STALL"); !stall.empty())
      std::sscanf(stall.c_str(), "%d:%d", &h.stall_rank, &h.stall_at);
    if (const auto rank = text("FABRICBENCH_TEST_STALL_NCCL"); !rank.empty())
      h.stall_nccl_rank = std::atoi(rank.c_str());
    h.flip_byte = std::getenv("FABRICBENCH_TEST_FLIP_BYTE") != nullptr;
    if (const auto at = text("FABRICBENCH_TEST_QP_ERROR"); !at.empty()) h.qp_error_at = std::atoi(at.c_str());
    if (const auto late = text("FABRICBENCH_TEST_LATE_RECEIVES"); !late.empty()) {
      int host = -1;
      double ms = 0;
      if (std::sscanf(late.c_str(), "%d:%lf", &host, &ms) == 2) h.late_host = host, h.late_ms = ms;
    }
    h.osu_poll = text("FABRICBENCH_TEST_OSU_POLL");
    return h;
  }
};

}  // namespace fabricbench
