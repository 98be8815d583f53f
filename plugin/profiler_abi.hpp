// NCCL's profiler plugin interface, declared here from its documented layout (NCCL's ext-profiler/README.md and the
// profiler_vN.h headers of its example), for the versions this plugin exports: v3 (NCCL 2.26), v4 (2.27),
// v5 (2.28), v6 (2.29: v5's table and descriptor with copy-engine events added, which this plugin does not ask for).
// Only the parts the plugin reads are spelled out; a union's other arms are left out, which moves nothing (every arm
// starts at the union's start). NCCL's own headers are never needed to build the plugin.
#pragma once
#include <sys/types.h>

#include <cstddef>
#include <cstdint>

namespace fabricbench::profiler::abi {

// ncclResult_t: an int-sized enum; 0 is ncclSuccess, 3 ncclInternalError (what init returns to be disabled).
using Result = int;
inline constexpr Result kSuccess = 0;
inline constexpr Result kInternalError = 3;
// ncclDebugLogger_t
using Logger = void (*)(int level, unsigned long flags, const char* file, int line, const char* fmt, ...);

// Event types (the activation mask's bits and the descriptor's `type`).
enum EventType : std::uint64_t {
  kGroup = 1u << 0,
  kColl = 1u << 1,
  kP2p = 1u << 2,
  kProxyOp = 1u << 3,
  kProxyStep = 1u << 4,
  kProxyCtrl = 1u << 5,
  kKernelCh = 1u << 6,
  kNetPlugin = 1u << 7,
  kGroupApi = 1u << 8,      // v5
  kCollApi = 1u << 9,       // v5
  kP2pApi = 1u << 10,       // v5
  kKernelLaunch = 1u << 11  // v5
};
// Event states: a kernel channel's stop (v4 and later, with its GPU timer), and a proxy step's.
inline constexpr int kKernelChStop = 22;
enum ProxyStepState : int {
  kSendGpuWait = 8,  // the step's buffer handed to the GPU, waiting for its data
  kSendWait = 9,     // posted to the network (isend), waiting for completion
  kRecvWait = 10,    // posted to the network (irecv), waiting for the data
  kRecvFlushWait = 11,
  kRecvGpuWait = 12,
  kSendPeerWait = 20  // v4: data ready, waiting for the receiver's buffer
};
inline bool in_network(int state) { return state == kSendWait || state == kRecvWait; }

struct CollV3 {
  const char* name;
  std::uint64_t comm_hash;
  std::uint64_t seq;
  const char* func;
  const void* send_buff;
  void* recv_buff;
  std::size_t count;
  int root;
  const char* datatype;
  std::uint8_t max_channels;
  std::uint8_t warps;
  const char* algo;
  const char* proto;
};
struct CollV4 {  // v5 adds a `parentGroup` pointer at the end
  std::uint64_t seq;
  const char* func;
  const void* send_buff;
  void* recv_buff;
  std::size_t count;
  int root;
  const char* datatype;
  std::uint8_t channels;
  std::uint8_t warps;
  const char* algo;
  const char* proto;
};
struct ProxyOp {  // the same in v3-v6
  pid_t pid;      // the process whose collective this is (another one's under PXN: its parent is not ours)
  std::uint8_t channel;
  int peer;
  int steps;
  int chunk_size;  // bytes a step carries at most
  int is_send;
};
struct ProxyStep {
  int step;
};
struct KernelChV3 {
  std::uint8_t channel;
};
struct KernelChV4 {
  std::uint8_t channel;
  std::uint64_t ptimer;
};  // the GPU timer at the channel's start

struct DescrV3 {
  std::uint8_t type;
  void* parent;
  int rank;
  union {
    CollV3 coll;
    KernelChV3 kernel_ch;
    ProxyOp proxy_op;
    ProxyStep proxy_step;
  };
};
struct DescrV4 {
  std::uint8_t type;
  void* parent;
  int rank;
  union {
    CollV4 coll;
    KernelChV4 kernel_ch;
    ProxyOp proxy_op;
    ProxyStep proxy_step;
  };
};
struct DescrV5 {
  std::uint64_t type;
  void* parent;
  int rank;
  union {
    CollV4 coll;
    KernelChV4 kernel_ch;
    ProxyOp proxy_op;
    ProxyStep proxy_step;
  };
};

// ncclProfilerEventStateArgs (v4-v6): every arm at offset 0; a proxy step's is its size, a kernel channel's its stop
// timer.
union StateArgsV4 {
  std::size_t trans_size;
  int appended_proxy_ops;
  void* data;
  std::uint64_t kernel_ch_ptimer;
};
union StateArgsV3 {
  struct {
    std::size_t trans_size;
    int steps;
  } proxy_op;
  int appended_proxy_ops;
};

struct ProfilerV3 {
  const char* name;
  Result (*init)(void** context, int* activation_mask);
  Result (*start_event)(void* context, void** handle, DescrV3* descr);
  Result (*stop_event)(void* handle);
  Result (*record_event_state)(void* handle, int state, StateArgsV3* args);
  Result (*finalize)(void* context);
};
struct ProfilerV4 {
  const char* name;
  Result (*init)(void** context, int* activation_mask, const char* comm_name, std::uint64_t comm_hash, int nodes,
                 int nranks, int rank, Logger log);
  Result (*start_event)(void* context, void** handle, DescrV4* descr);
  Result (*stop_event)(void* handle);
  Result (*record_event_state)(void* handle, int state, StateArgsV4* args);
  Result (*finalize)(void* context);
};
struct ProfilerV5 {
  const char* name;
  Result (*init)(void** context, std::uint64_t comm_id, int* activation_mask, const char* comm_name, int nodes,
                 int nranks, int rank, Logger log);
  Result (*start_event)(void* context, void** handle, DescrV5* descr);
  Result (*stop_event)(void* handle);
  Result (*record_event_state)(void* handle, int state, StateArgsV4* args);
  Result (*finalize)(void* context);
};

// v6: v5's table; its descriptor is v5's with copy-engine arms added to the union (never asked for here).
using DescrV6 = DescrV5;
using ProfilerV6 = ProfilerV5;

}  // namespace fabricbench::profiler::abi
