// RDMA verbs as fabricbench uses them: one owner per verbs object (device context, protection domain, completion
// channel, completion queue, queue pair, memory region), the port a rank measures on, and the endpoint two ranks
// exchange over MPI to connect their Reliable Connected queue pairs. Present when libibverbs is found.
#pragma once
#include <infiniband/verbs.h>

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "fabricbench/memory/buffer.hpp"

namespace fabricbench::verbs {

// unique_ptr with the verbs destroy function as deleter: every verbs object below is held in one of these.
template <typename T, int (*Destroy)(T*)>
struct Destroyer {
  void operator()(T* p) const noexcept {
    if (p) Destroy(p);
  }
};
template <typename T, int (*Destroy)(T*)>
using Owned = std::unique_ptr<T, Destroyer<T, Destroy>>;

// A port as found, with what the results name.
struct Port {
  std::string device;
  int port = 0;
  ibv_port_state state = IBV_PORT_NOP;
  std::string link_layer;  // "InfiniBand" or "Ethernet"
  ibv_mtu active_mtu = IBV_MTU_1024;
  std::uint16_t lid = 0;
  int gid_index = -1;  // -1: none needed (InfiniBand without --gid-index)
  ibv_gid gid{};
  std::string gid_type;  // "IB", "RoCE v1", "RoCE v2"
  std::string rate;      // as sysfs reads it ("100 Gb/sec (4X EDR)")
  int numa_node = -1;
  bool ethernet() const { return link_layer == "Ethernet"; }
};

std::string to_string(ibv_port_state state);
int mtu_bytes(ibv_mtu mtu);
// "256".."4096" -> the enum; throws Error::usage naming --mtu.
ibv_mtu parse_mtu(int bytes);
std::string gid_text(const ibv_gid& gid);

// What the user asked for: an empty device or port 0 means "choose" (the HCA on the rank's NUMA node, else the first
// device with an Active port); gid_index -1 means "detect" (for RoCE the IPv4 RoCE v2 entry, else 0 on Ethernet).
struct PortRequest {
  std::string device;
  int port = 0;
  int gid_index = -1;
  int numa_node = -1;  // the rank's, for the choice
};

// An open device and protection domain on the chosen port.
class Device {
 public:
  // Throws Error::usage (exit 2): no RDMA device on `host`, an unknown --ib-dev (naming the devices there), a port
  // that is not Active (naming device, port and state), a GID index with no entry.
  static Device open(const PortRequest& request, const std::string& host);

  ibv_context* context() const { return context_.get(); }
  ibv_pd* pd() const { return pd_.get(); }
  const Port& port() const { return port_; }
  const ibv_device_attr& attributes() const { return attributes_; }

 private:
  Device() = default;
  Owned<ibv_context, ibv_close_device> context_;
  Owned<ibv_pd, ibv_dealloc_pd> pd_;  // declared after the context: released before it
  Port port_;
  ibv_device_attr attributes_{};
};

// A registered buffer. Host memory with ibv_reg_mr; device memory with ibv_reg_dmabuf_mr from the CUDA
// allocation's dma-buf, else ibv_reg_mr on the device pointer (nvidia-peermem); throws Error::runtime saying why.
class MemoryRegion {
 public:
  MemoryRegion(const Device& device, memory::Buffer& buffer, int access);
  ibv_mr* get() const { return mr_.get(); }
  std::uint32_t lkey() const { return mr_->lkey; }
  std::uint32_t rkey() const { return mr_->rkey; }
  std::uint64_t address() const { return reinterpret_cast<std::uintptr_t>(mr_->addr); }
  const std::string& how() const { return how_; }  // "ibv_reg_mr", "ibv_reg_dmabuf_mr", ...

 private:
  Owned<ibv_mr, ibv_dereg_mr> mr_;
  std::string how_;
};

// A completion queue and its completion channel. poll() spins (perftest's default); with events (perftest -e) it
// sleeps on the channel when the queue is empty.
class CompletionQueue {
 public:
  CompletionQueue(const Device& device, int entries, bool events);
  // Acknowledges the events it took (ibv_destroy_cq waits for every event to be acknowledged).
  ~CompletionQueue();
  CompletionQueue(const CompletionQueue&) = delete;
  CompletionQueue& operator=(const CompletionQueue&) = delete;
  ibv_cq* get() const { return cq_.get(); }
  // Up to `max` completions into `out`; returns how many (0 when none yet and not waiting on events). A failed
  // completion throws Error::runtime naming its status string and the QP's state.
  int poll(ibv_wc* out, int max);

 private:
  Owned<ibv_comp_channel, ibv_destroy_comp_channel> channel_;
  Owned<ibv_cq, ibv_destroy_cq> cq_;  // after the channel: released before it
  bool events_;
  unsigned unacked_ = 0;
};

// What the other side needs to reach one of our queue pairs and buffers (exchanged over MPI).
struct Endpoint {
  std::uint32_t qpn = 0, psn = 0, rkey = 0;
  std::uint16_t lid = 0;
  std::uint8_t mtu = 0;  // ibv_mtu
  ibv_gid gid{};
  std::uint64_t address = 0;  // remote buffer for RDMA write/read/atomics
};

struct QueuePairLimits {
  int send_depth = 128, receive_depth = 512, inline_bytes = 0, reads_in_flight = 16;
  int ack_timeout = 14;  // local ACK timeout, 4.096 us x 2^ack_timeout (perftest -u; 0: none)
};

// A Reliable Connected queue pair, moved RESET -> INIT -> RTR -> RTS by connect().
class QueuePair {
 public:
  QueuePair(const Device& device, const CompletionQueue& send_cq, const CompletionQueue& receive_cq,
            const QueuePairLimits& limits);
  ibv_qp* get() const { return qp_.get(); }
  std::uint32_t number() const { return qp_->qp_num; }
  int inline_bytes() const { return inline_bytes_; }
  // Our side's endpoint for `psn` and the buffer `mr`.
  Endpoint endpoint(const Device& device, std::uint32_t psn, const MemoryRegion& mr) const;
  // INIT, RTR towards `remote` (path MTU: the smaller of ours and theirs, or `mtu` when given), RTS with `psn`.
  void connect(const Device& device, const Endpoint& remote, std::uint32_t psn, ibv_mtu mtu);
  // Into the error state (from the watchdog thread on --timeout): outstanding work completes flushed.
  void to_error() noexcept;
  std::string state() const;

 private:
  Owned<ibv_qp, ibv_destroy_qp> qp_;
  int inline_bytes_ = 0, reads_in_flight_ = 1, ack_timeout_ = 14;
};

// Every device and its ports as libibverbs sees them (for errors, the environment and the doctor).
std::vector<std::string> device_names();
// The active MTU in bytes of every Active port ("rxe0/1" -> 1024).
std::map<std::string, int> active_mtus();

}  // namespace fabricbench::verbs
