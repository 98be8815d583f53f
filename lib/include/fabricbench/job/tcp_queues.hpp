// The bytes a process's TCP sockets hold unsent and the segments they retransmitted, for fabric-watchdog --slow's host
// sampler (host_sampler.hpp), at a cost that does not grow with the host's memory. Reading /proc/PID/net/tcp walks the
// kernel's whole hash table of connections (sized by the host's memory): 0.9 ms of CPU for each of tcp and tcp6 on this
// 24 GiB machine with a handful of sockets, most of the sampler's time. So the table is read only to learn which
// connections the process's socket inodes are (with its fds, every 5 s), and each second every known connection is
// looked up by its addresses and ports through the kernel's socket diagnostics (NETLINK_SOCK_DIAG, one exact lookup
// each: a hash lookup), all in one message each way.
#pragma once
#include <array>
#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

namespace fabricbench::job {

// One TCP connection by its ends (as the kernel's diagnostics name it: addresses and ports in network order).
struct TcpConnection {
  std::uint8_t family = 0;  // AF_INET, AF_INET6
  std::uint16_t local_port = 0, remote_port = 0;
  std::array<std::uint32_t, 4> local{}, remote{};
  std::uint64_t unsent = 0;  // tx_queue when the table was read
  bool operator<(const TcpConnection& o) const;
};

// The connections of `text` (a /proc/PID/net/tcp or tcp6, `family` its) whose inode is in `inodes`, by inode.
std::map<std::string, TcpConnection> parse_tcp_table(const std::string& text, std::uint8_t family,
                                                     const std::set<std::string>& inodes);

class TcpQueues {
 public:
  TcpQueues();  // a NETLINK_SOCK_DIAG socket; where none can be had, lookups answer nothing
  ~TcpQueues();
  TcpQueues(const TcpQueues&) = delete;
  TcpQueues& operator=(const TcpQueues&) = delete;
  bool usable() const { return fd_ >= 0; }
  struct Totals {
    std::uint64_t unsent = 0;  // bytes, now, summed
    // Each connection's segments retransmitted and sent since it began (tcp_info's tcpi_total_retrans, tcpi_segs_out).
    std::map<TcpConnection, std::pair<std::uint32_t, std::uint32_t>> segments;
  };
  // `connections` now (the ones gone since count nothing); empty when the lookups could not be made (then the caller
  // reads the table).
  std::optional<Totals> look(const std::vector<TcpConnection>& connections);

 private:
  int fd_ = -1;
};

}  // namespace fabricbench::job
