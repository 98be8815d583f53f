// What an NCCL INFO log (NCCL_DEBUG=INFO, NCCL_DEBUG_SUBSYS=INIT,NET) says about the transports NCCL chose. The formats
// read (NCCL 2.1x-2.28):
//   "NCCL INFO NCCL version 2.28.3+cuda13.0"
//   "NCCL INFO Using network IB" | "Socket" | "<plugin name>"
//   "NCCL INFO NET/IB : Using [0]mlx5_0:1/IB [1]mlx5_1:1/RoCE [RO]; OOB eth0:10.0.0.1<0>"
//   "NCCL INFO NET/IB : No device found."
//   "NCCL INFO NET/Socket : Using [0]eth0:192.0.2.2<0> [1]eth1:..."
//   "NCCL INFO Channel 00/0 : 0[0] -> 1[1] via P2P/CUMEM" (P2P/IPC, SHM, NET/IB/0, NET/Socket/0 ...)
//   "NCCL INFO NCCL_P2P_DISABLE set by environment to 1"
//   "NCCL INFO NET/IB : GPU Direct RDMA Enabled for HCA 0 'mlx5_0'" (Disabled, "(no module)" in older NCCL)
//   "NCCL INFO DMA-BUF is available on GPU device 0"
// One implementation reads them: NcclLog::read takes one message at a time (the probe's log through parse_nccl_log,
// a job's logs of any size through NcclJobLog, nccl_job_log.hpp). The doctor's rules on it are in
// doctor/nccl_transport.hpp.
#pragma once
#include <map>
#include <set>
#include <string>
#include <string_view>
#include <vector>

namespace fabricbench::job {

struct NcclLog {
  std::string version;                           // "2.28.3+cuda13.0"
  std::string network;                           // "IB", "Socket", or a plugin's name; "" when the log never says
  std::vector<std::string> ib_devices;           // "mlx5_0:1/IB"
  bool ib_none = false;                          // "NET/IB : No device found."
  std::vector<std::string> socket_ifaces;        // "eth0:192.0.2.2"
  std::map<std::string, int> channels;           // transport ("P2P/CUMEM", "SHM", "NET/Socket/0") -> channel count
  std::map<std::string, std::string> variables;  // "set by environment" lines
  // Per RDMA NIC, whether NCCL found it able to reach GPU memory (nvidia-peermem or dma-buf), and the rest of the line
  // ("(no module)"); NET/Socket's lines (always "Disabled") are not kept.
  std::map<std::string, std::pair<bool, std::string>> gdr_support;
  bool dmabuf = false;  // "DMA-BUF is available on GPU device N"
  bool init_complete = false;
  bool empty() const { return version.empty() && network.empty() && channels.empty(); }
  // "P2P/CUMEM x24, NET/Socket/0 x2"
  std::string channel_summary() const;
  // One INFO message (the text after "NCCL INFO "); false when it is none of the lines above.
  bool read(std::string_view message);

 private:
  std::set<std::string, std::less<>> channel_lines_;  // each (channel, peers) line counted once
};

// Every INFO line of `text` (lines of several ranks merged into one view).
NcclLog parse_nccl_log(const std::string& text);

}  // namespace fabricbench::job
