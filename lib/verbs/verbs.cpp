#include "fabricbench/verbs/verbs.hpp"

#include <arpa/inet.h>
#include <fmt/format.h>
#include <unistd.h>

#include <cerrno>
#include <algorithm>
#include <cstring>
#include <fstream>

#include "fabricbench/error.hpp"
#include "fabricbench/facts/host_files.hpp"

#ifdef FABRICBENCH_HAVE_CUDA
#include <cuda.h>
#include <cuda_runtime.h>
#endif

namespace fabricbench::verbs {
namespace {

[[noreturn]] void fail(const std::string& what, int err) {
  throw Error::runtime(fmt::format("{} failed: {}", what, std::strerror(err ? err : errno)));
}

// The port as sysfs describes it (NUMA node, rate): the one reader of RDMA ports the whole suite uses.
facts::RdmaPort sysfs_port(const std::string& device, int port) {
  for (auto& p : facts::read_rdma_ports(facts::HostFiles{}))
    if (p.device == device && p.port == port) return p;
  return {};
}

// The devices libibverbs lists, released when done.
struct DeviceList {
  int count = 0;
  ibv_device** list = ibv_get_device_list(&count);
  ~DeviceList() {
    if (list) ibv_free_device_list(list);
  }
};

std::string link_layer_name(std::uint8_t layer) {
  return layer == IBV_LINK_LAYER_ETHERNET ? "Ethernet" : "InfiniBand";
}

bool ipv4_mapped(const ibv_gid& gid) {
  static const std::uint8_t prefix[12] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff};
  return std::memcmp(gid.raw, prefix, sizeof prefix) == 0;
}

bool all_zero(const ibv_gid& gid) {
  for (auto b : gid.raw)
    if (b) return false;
  return true;
}

// The GID entry `index` of the port: (gid, type), or false when the entry is empty.
bool query_gid(ibv_context* context, int port, int index, ibv_gid& gid, std::string& type, bool ethernet) {
  ibv_gid_entry entry{};
  if (ibv_query_gid_ex(context, port, index, &entry, 0) == 0) {
    if (all_zero(entry.gid)) return false;
    gid = entry.gid;
    type = entry.gid_type == IBV_GID_TYPE_ROCE_V2 ? "RoCE v2" : entry.gid_type == IBV_GID_TYPE_ROCE_V1 ? "RoCE v1" : "IB";
    return true;
  }
  if (ibv_query_gid(context, port, index, &gid) != 0 || all_zero(gid)) return false;
  type = ethernet ? "RoCE" : "IB";
  return true;
}

// For RoCE: the IPv4-mapped RoCE v2 entry (what `ib_write_bw -x N` is usually given), else the first RoCE v2 one,
// else the first entry.
int detect_gid_index(ibv_context* context, int port, int table_len) {
  int first_v2 = -1, first = -1;
  for (int i = 0; i < table_len; ++i) {
    ibv_gid gid;
    std::string type;
    if (!query_gid(context, port, i, gid, type, true)) continue;
    if (first < 0) first = i;
    if (type == "RoCE v2") {
      if (ipv4_mapped(gid)) return i;
      if (first_v2 < 0) first_v2 = i;
    }
  }
  return first_v2 >= 0 ? first_v2 : first;
}


}  // namespace

std::string to_string(ibv_port_state state) {
  switch (state) {
    case IBV_PORT_NOP: return "NOP";
    case IBV_PORT_DOWN: return "DOWN";
    case IBV_PORT_INIT: return "INIT";
    case IBV_PORT_ARMED: return "ARMED";
    case IBV_PORT_ACTIVE: return "ACTIVE";
    case IBV_PORT_ACTIVE_DEFER: return "ACTIVE_DEFER";
  }
  return "UNKNOWN";
}

int mtu_bytes(ibv_mtu mtu) { return 128 << static_cast<int>(mtu); }

ibv_mtu parse_mtu(int bytes) {
  switch (bytes) {
    case 256: return IBV_MTU_256;
    case 512: return IBV_MTU_512;
    case 1024: return IBV_MTU_1024;
    case 2048: return IBV_MTU_2048;
    case 4096: return IBV_MTU_4096;
  }
  throw Error::usage(fmt::format("--mtu {}: allowed values are 256, 512, 1024, 2048, 4096", bytes));
}

std::string gid_text(const ibv_gid& gid) {
  char text[INET6_ADDRSTRLEN] = {};
  inet_ntop(AF_INET6, gid.raw, text, sizeof text);
  return text;
}

std::vector<std::string> device_names() {
  DeviceList devices;
  std::vector<std::string> names;
  for (int i = 0; i < devices.count; ++i) names.emplace_back(ibv_get_device_name(devices.list[i]));
  return names;
}

std::map<std::string, int> active_mtus() {
  DeviceList devices;
  std::map<std::string, int> out;
  for (int i = 0; i < devices.count; ++i) {
    Owned<ibv_context, ibv_close_device> context(ibv_open_device(devices.list[i]));
    if (!context) continue;
    ibv_device_attr attr{};
    if (ibv_query_device(context.get(), &attr) != 0) continue;
    for (int port = 1; port <= attr.phys_port_cnt; ++port) {
      ibv_port_attr pa{};
      if (ibv_query_port(context.get(), static_cast<std::uint8_t>(port), &pa) == 0 && pa.state == IBV_PORT_ACTIVE)
        out[fmt::format("{}/{}", ibv_get_device_name(devices.list[i]), port)] = 128 << static_cast<int>(pa.active_mtu);
    }
  }
  return out;
}

Device Device::open(const PortRequest& request, const std::string& host) {
  DeviceList devices;
  if (!devices.list || devices.count == 0)
    throw Error::usage(fmt::format("no RDMA device on host {}: libibverbs lists none (looked for /sys/class/infiniband "
                                   "devices with a user-space provider)", host));
  std::vector<std::string> names, states;
  struct Candidate {
    ibv_device* device;
    int port;
    int numa;
  };
  std::vector<Candidate> active;
  for (int i = 0; i < devices.count; ++i) {
    const std::string name = ibv_get_device_name(devices.list[i]);
    names.push_back(name);
    if (!request.device.empty() && name != request.device) continue;
    Owned<ibv_context, ibv_close_device> context(ibv_open_device(devices.list[i]));
    if (!context) fail("ibv_open_device(" + name + ")", errno);
    ibv_device_attr attr{};
    if (int rc = ibv_query_device(context.get(), &attr)) fail("ibv_query_device(" + name + ")", rc);
    if (request.port > attr.phys_port_cnt)
      throw Error::usage(fmt::format("--ib-port {}: device {} on host {} has ports 1-{}", request.port, name, host,
                                     int(attr.phys_port_cnt)));
    for (int p = request.port > 0 ? request.port : 1; p <= (request.port > 0 ? request.port : attr.phys_port_cnt); ++p) {
      ibv_port_attr port{};
      if (int rc = ibv_query_port(context.get(), p, &port)) fail(fmt::format("ibv_query_port({}, {})", name, p), rc);
      if (port.state == IBV_PORT_ACTIVE) {
        active.push_back({devices.list[i], p, sysfs_port(name, p).numa_node});
        break;
      }
      states.push_back(fmt::format("{} port {} {}", name, p, to_string(port.state)));
    }
  }
  if (!request.device.empty() && std::find(names.begin(), names.end(), request.device) == names.end())
    throw Error::usage(fmt::format("--ib-dev {}: no such RDMA device on host {} (devices: {})", request.device, host,
                                   fmt::join(names, ", ")));
  if (active.empty()) {
    if (!request.device.empty())
      throw Error::usage(fmt::format("--ib-dev {}: {} on host {} is not Active", request.device,
                                     fmt::join(states, ", "), host));
    throw Error::usage(fmt::format("no Active RDMA port on host {} ({})", host, fmt::join(states, ", ")));
  }
  // The HCA on the rank's NUMA node when there is one, else the first Active port.
  Candidate chosen = active.front();
  for (const auto& c : active)
    if (request.numa_node >= 0 && c.numa == request.numa_node) {
      chosen = c;
      break;
    }

  Device d;
  d.port_.device = ibv_get_device_name(chosen.device);
  d.port_.port = chosen.port;
  d.port_.numa_node = chosen.numa;
  d.context_.reset(ibv_open_device(chosen.device));
  if (!d.context_) fail("ibv_open_device(" + d.port_.device + ")", errno);
  if (int rc = ibv_query_device(d.context(), &d.attributes_)) fail("ibv_query_device", rc);
  ibv_port_attr port{};
  if (int rc = ibv_query_port(d.context(), chosen.port, &port)) fail("ibv_query_port", rc);
  d.port_.state = port.state;
  d.port_.link_layer = link_layer_name(port.link_layer);
  d.port_.active_mtu = port.active_mtu;
  d.port_.lid = port.lid;
  d.port_.rate = sysfs_port(d.port_.device, chosen.port).rate;
  int index = request.gid_index;
  if (index < 0 && d.port_.ethernet()) index = detect_gid_index(d.context(), chosen.port, port.gid_tbl_len);
  if (index >= 0) {
    if (index >= port.gid_tbl_len || !query_gid(d.context(), chosen.port, index, d.port_.gid, d.port_.gid_type,
                                                d.port_.ethernet()))
      throw Error::usage(fmt::format("--gid-index {}: {} port {} on host {} has no GID entry there (table of {})",
                                     index, d.port_.device, chosen.port, host, port.gid_tbl_len));
    d.port_.gid_index = index;
  } else {
    d.port_.gid_type = "IB";
  }
  d.pd_.reset(ibv_alloc_pd(d.context()));
  if (!d.pd_) fail("ibv_alloc_pd", errno);
  return d;
}

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
          cudaSuccess && found == cudaDriverEntryPointSuccess && symbol) {
    int fd = -1;
    const auto rc = reinterpret_cast<GetHandle>(symbol)(&fd, reinterpret_cast<CUdeviceptr>(buffer.data()), buffer.size(),
                                                         CU_MEM_RANGE_HANDLE_TYPE_DMA_BUF_FD, 0);
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
  throw Error::runtime(fmt::format("--memory device: cannot register GPU memory with {}: {}; ibv_reg_mr: {} (needs "
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
                     limits.receive_depth, limits.inline_bytes), errno);
  inline_bytes_ = static_cast<int>(init.cap.max_inline_data);
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
  a.qp_access_flags = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_ATOMIC;
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
  a.timeout = 14;
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
    case IBV_QPS_RESET: return "RESET";
    case IBV_QPS_INIT: return "INIT";
    case IBV_QPS_RTR: return "RTR";
    case IBV_QPS_RTS: return "RTS";
    case IBV_QPS_SQD: return "SQD";
    case IBV_QPS_SQE: return "SQE";
    case IBV_QPS_ERR: return "ERR";
    default: return "UNKNOWN";
  }
}

}  // namespace fabricbench::verbs
