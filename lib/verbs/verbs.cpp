// The verbs objects a link is built of, each with one owner: a registered buffer (host memory, or GPU memory through
// dma-buf or peer memory), a completion queue with its optional completion channel, and a Reliable Connected queue
// pair moved to RTS towards its peer.
#include "fabricbench/verbs/verbs.hpp"

#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "fabricbench/error.hpp"
#include "fail.hpp"

#ifdef FABRICBENCH_HAVE_CUDA
#include <cuda.h>
#include <cuda_runtime.h>
#endif

namespace fabricbench::verbs {

MemoryRegion::MemoryRegion(const Device& device, memory::Buffer& buffer, int access) {
  if (buffer.kind() != memory::MemoryKind::device) {
    mr_.reset(ibv_reg_mr(device.pd(), buffer.data(), buffer.size(), access));
    if (!mr_) fail(fmt::format("ibv_reg_mr of {} B (locked-memory limit: ulimit -l)", buffer.size()), errno);
    how_ = "ibv_reg_mr";
    return;
  }
#ifdef FABRICBENCH_HAVE_CUDA
  // dma-buf first (no kernel module needed beyond the GPU driver's), then the peer-memory path.
  using GetHandle = CUresult (*)(void*, CUdeviceptr, size_t, CUmemRangeHandleType, unsigned long long);
  void* symbol = nullptr;
  cudaDriverEntryPointQueryResult found{};
  std::string why;
  if (cudaGetDriverEntryPointByVersion("cuMemGetHandleForAddressRange", &symbol, 12000, cudaEnableDefault, &found) ==
          cudaSuccess &&
      found == cudaDriverEntryPointSuccess && symbol) {
    int fd = -1;
    const auto rc = reinterpret_cast<GetHandle>(symbol)(&fd, reinterpret_cast<CUdeviceptr>(buffer.data()),
                                                        buffer.size(), CU_MEM_RANGE_HANDLE_TYPE_DMA_BUF_FD, 0);
    if (rc == CUDA_SUCCESS && fd >= 0) {
      mr_.reset(ibv_reg_dmabuf_mr(device.pd(), 0, buffer.size(), reinterpret_cast<std::uintptr_t>(buffer.data()), fd,
                                  access));
      const int err = errno;
      ::close(fd);
      if (mr_) {
        how_ = "ibv_reg_dmabuf_mr";
        return;
      }
      why = fmt::format("ibv_reg_dmabuf_mr: {}", std::strerror(err));
    } else {
      why = fmt::format("cuMemGetHandleForAddressRange(DMA_BUF_FD): CUresult {}", int(rc));
    }
  } else {
    why = "the CUDA driver has no cuMemGetHandleForAddressRange";
  }
  mr_.reset(ibv_reg_mr(device.pd(), buffer.data(), buffer.size(), access));
  if (mr_) {
    how_ = "ibv_reg_mr (peer memory)";
    return;
  }
  throw Error::runtime(
      fmt::format("--memory device: cannot register GPU memory with {}: {}; ibv_reg_mr: {} (needs "
                  "dma-buf support in the GPU driver and HCA driver, or nvidia-peermem loaded)",
                  device.port().device, why, std::strerror(errno)));
#else
  throw Error::usage("--memory device: this build has no CUDA");
#endif
}

CompletionQueue::CompletionQueue(const Device& device, int entries, bool events) : events_(events) {
  if (events) {
    channel_.reset(ibv_create_comp_channel(device.context()));
    if (!channel_) fail("ibv_create_comp_channel", errno);
  }
  cq_.reset(ibv_create_cq(device.context(), entries, nullptr, channel_.get(), 0));
  if (!cq_) fail(fmt::format("ibv_create_cq({} entries)", entries), errno);
  if (events && ibv_req_notify_cq(cq_.get(), 0)) fail("ibv_req_notify_cq", errno);
}

CompletionQueue::~CompletionQueue() {
  if (cq_ && unacked_ > 0) ibv_ack_cq_events(cq_.get(), unacked_);
}

int CompletionQueue::poll(ibv_wc* out, int max) {
  int n = ibv_poll_cq(cq_.get(), max, out);
  if (n == 0 && events_) {
    // Sleep until the next completion: re-arm, look again (one may have come before the arm), then wait.
    ibv_cq* cq = nullptr;
    void* context = nullptr;
    if (ibv_get_cq_event(channel_.get(), &cq, &context)) fail("ibv_get_cq_event", errno);
    if (++unacked_ >= 64) {
      ibv_ack_cq_events(cq_.get(), unacked_);
      unacked_ = 0;
    }
    if (ibv_req_notify_cq(cq_.get(), 0)) fail("ibv_req_notify_cq", errno);
    n = ibv_poll_cq(cq_.get(), max, out);
  }
  if (n < 0) throw Error::runtime("ibv_poll_cq failed");
  for (int i = 0; i < n; ++i)
    if (out[i].status != IBV_WC_SUCCESS)
      throw Error::runtime(fmt::format("work completion failed on QP {:#x}: {} (status {}, vendor error {:#x})",
                                       out[i].qp_num, ibv_wc_status_str(out[i].status), int(out[i].status),
                                       out[i].vendor_err));
  return n;
}

QueuePair::QueuePair(const Device& device, const CompletionQueue& send_cq, const CompletionQueue& receive_cq,
                     const QueuePairLimits& limits) {
  ibv_qp_init_attr init{};
  init.send_cq = send_cq.get();
  init.recv_cq = receive_cq.get();
  init.qp_type = IBV_QPT_RC;
  init.cap.max_send_wr = limits.send_depth;
  init.cap.max_recv_wr = limits.receive_depth;
  init.cap.max_send_sge = 1;
  init.cap.max_recv_sge = 1;
  init.cap.max_inline_data = limits.inline_bytes;
  qp_.reset(ibv_create_qp(device.pd(), &init));
  if (!qp_)
    fail(fmt::format("ibv_create_qp (send depth {}, receive depth {}, inline {} B)", limits.send_depth,
                     limits.receive_depth, limits.inline_bytes),
         errno);
  inline_bytes_ = static_cast<int>(init.cap.max_inline_data);
  ack_timeout_ = limits.ack_timeout;
  reads_in_flight_ = std::max(1, std::min({limits.reads_in_flight, device.attributes().max_qp_rd_atom,
                                           device.attributes().max_qp_init_rd_atom}));
}

Endpoint QueuePair::endpoint(const Device& device, std::uint32_t psn, const MemoryRegion& mr) const {
  Endpoint e;
  e.qpn = number();
  e.psn = psn;
  e.lid = device.port().lid;
  e.mtu = static_cast<std::uint8_t>(device.port().active_mtu);
  e.gid = device.port().gid;
  e.rkey = mr.rkey();
  e.address = mr.address();
  return e;
}

void QueuePair::connect(const Device& device, const Endpoint& remote, std::uint32_t psn, ibv_mtu mtu) {
  const auto& port = device.port();
  ibv_qp_attr a{};
  a.qp_state = IBV_QPS_INIT;
  a.pkey_index = 0;
  a.port_num = port.port;
  a.qp_access_flags =
      IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_ATOMIC;
  if (int rc = ibv_modify_qp(qp_.get(), &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS))
    fail("ibv_modify_qp(INIT)", rc);

  a = {};
  a.qp_state = IBV_QPS_RTR;
  a.path_mtu = mtu != 0 ? mtu : std::min(port.active_mtu, static_cast<ibv_mtu>(remote.mtu));
  a.dest_qp_num = remote.qpn;
  a.rq_psn = remote.psn;
  a.max_dest_rd_atomic = reads_in_flight_;
  a.min_rnr_timer = 12;
  a.ah_attr.dlid = remote.lid;
  a.ah_attr.port_num = port.port;
  if (port.gid_index >= 0) {
    a.ah_attr.is_global = 1;
    a.ah_attr.grh.dgid = remote.gid;
    a.ah_attr.grh.sgid_index = port.gid_index;
    a.ah_attr.grh.hop_limit = 64;
  }
  if (int rc = ibv_modify_qp(qp_.get(), &a,
                             IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN | IBV_QP_RQ_PSN |
                                 IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER))
    fail(fmt::format("ibv_modify_qp(RTR) towards QP {} (path MTU {})", remote.qpn, mtu_bytes(a.path_mtu)), rc);

  a = {};
  a.qp_state = IBV_QPS_RTS;
  a.timeout = ack_timeout_;
  a.retry_cnt = 7;
  a.rnr_retry = 7;
  a.sq_psn = psn;
  a.max_rd_atomic = reads_in_flight_;
  if (int rc = ibv_modify_qp(qp_.get(), &a,
                             IBV_QP_STATE | IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY | IBV_QP_SQ_PSN |
                                 IBV_QP_MAX_QP_RD_ATOMIC))
    fail("ibv_modify_qp(RTS)", rc);
}

void QueuePair::to_error() noexcept {
  ibv_qp_attr a{};
  a.qp_state = IBV_QPS_ERR;
  ibv_modify_qp(qp_.get(), &a, IBV_QP_STATE);
}

std::string QueuePair::state() const {
  ibv_qp_attr a{};
  ibv_qp_init_attr init{};
  if (ibv_query_qp(qp_.get(), &a, IBV_QP_STATE, &init)) return "unknown";
  switch (a.qp_state) {
    case IBV_QPS_RESET:
      return "RESET";
    case IBV_QPS_INIT:
      return "INIT";
    case IBV_QPS_RTR:
      return "RTR";
    case IBV_QPS_RTS:
      return "RTS";
    case IBV_QPS_SQD:
      return "SQD";
    case IBV_QPS_SQE:
      return "SQE";
    case IBV_QPS_ERR:
      return "ERR";
    default:
      return "UNKNOWN";
  }
}

}  // namespace fabricbench::verbs
