#include "fabricbench/job/tcp_queues.hpp"

#include <arpa/inet.h>
#include <linux/inet_diag.h>
#include <linux/netlink.h>
#include <linux/rtnetlink.h>
#include <linux/sock_diag.h>
#include <linux/tcp.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstddef>
#include <cstring>
#include <sstream>
#include <tuple>

namespace fabricbench::job {

bool TcpConnection::operator<(const TcpConnection& o) const {
  return std::tie(family, local_port, remote_port, local, remote) <
         std::tie(o.family, o.local_port, o.remote_port, o.local, o.remote);
}

// A line: "sl local_address rem_address st tx_queue:rx_queue tr:when retrnsmt uid timeout inode ...", addresses
// as the kernel's words in hex (each 32-bit word as it lies in memory, network order inside), ports in host order.
std::map<std::string, TcpConnection> parse_tcp_table(const std::string& text, std::uint8_t family,
                                                     const std::set<std::string>& inodes) {
  std::map<std::string, TcpConnection> out;
  std::istringstream lines(text);
  std::string line;
  std::getline(lines, line);  // the header
  const auto address = [](const std::string& hex, std::array<std::uint32_t, 4>& words, std::uint16_t& port) {
    const auto colon = hex.find(':');
    if (colon == std::string::npos || colon % 8 != 0 || colon > 32) return false;
    for (std::size_t w = 0; w < colon / 8; ++w)
      words[w] = static_cast<std::uint32_t>(std::stoul(hex.substr(w * 8, 8), nullptr, 16));
    port = htons(static_cast<std::uint16_t>(std::stoul(hex.substr(colon + 1), nullptr, 16)));
    return true;
  };
  while (std::getline(lines, line)) {
    std::istringstream in(line);
    std::vector<std::string> f;
    for (std::string w; f.size() < 10 && in >> w;) f.push_back(w);
    // (A listening socket, state 0A, sends nothing; the diagnostics would say its backlog.)
    if (f.size() < 10 || !inodes.count(f[9]) || f[3] == "0A") continue;
    TcpConnection c;
    c.family = family;
    try {
      if (!address(f[1], c.local, c.local_port) || !address(f[2], c.remote, c.remote_port)) continue;
      c.unsent = std::stoull(f[4].substr(0, f[4].find(':')), nullptr, 16);
    } catch (const std::exception&) {  // not a number: not a line of the table
      continue;
    }
    out[f[9]] = c;
  }
  return out;
}

TcpQueues::TcpQueues() { fd_ = ::socket(AF_NETLINK, SOCK_DGRAM | SOCK_CLOEXEC, NETLINK_SOCK_DIAG); }

TcpQueues::~TcpQueues() {
  if (fd_ >= 0) ::close(fd_);
}

std::optional<TcpQueues::Totals> TcpQueues::look(const std::vector<TcpConnection>& connections) {
  if (fd_ < 0) return std::nullopt;
  Totals out;
  if (connections.empty()) return out;
  struct Request {
    nlmsghdr header;
    inet_diag_req_v2 body;
  };
  std::vector<Request> requests(connections.size());
  for (std::size_t i = 0; i < connections.size(); ++i) {
    const auto& c = connections[i];
    auto& r = requests[i];
    std::memset(&r, 0, sizeof r);
    r.header.nlmsg_len = sizeof r;
    r.header.nlmsg_type = SOCK_DIAG_BY_FAMILY;
    r.header.nlmsg_flags = NLM_F_REQUEST;  // an exact lookup, not a dump
    r.header.nlmsg_seq = static_cast<std::uint32_t>(i + 1);
    r.body.sdiag_family = c.family;
    r.body.sdiag_protocol = IPPROTO_TCP;
    r.body.idiag_states = ~0u;
    r.body.idiag_ext = 1u << (INET_DIAG_INFO - 1);  // with its tcp_info
    r.body.id.idiag_sport = c.local_port;
    r.body.id.idiag_dport = c.remote_port;
    std::memcpy(r.body.id.idiag_src, c.local.data(), sizeof r.body.id.idiag_src);
    std::memcpy(r.body.id.idiag_dst, c.remote.data(), sizeof r.body.id.idiag_dst);
    r.body.id.idiag_cookie[0] = r.body.id.idiag_cookie[1] = INET_DIAG_NOCOOKIE;
  }
  sockaddr_nl kernel{};
  kernel.nl_family = AF_NETLINK;
  const auto bytes = requests.size() * sizeof(Request);
  if (::sendto(fd_, requests.data(), bytes, 0, reinterpret_cast<sockaddr*>(&kernel), sizeof kernel) !=
      static_cast<ssize_t>(bytes))
    return std::nullopt;
  // One answer each: the socket (inet_diag_msg, then its attributes: tcp_info among them), or an error (ENOENT: gone
  // since). The sequence number says which connection.
  std::size_t answered = 0;
  alignas(nlmsghdr) char buf[32768];
  while (answered < connections.size()) {
    const auto n = ::recv(fd_, buf, sizeof buf, 0);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return std::nullopt;
    auto len = static_cast<unsigned>(n);
    for (auto* h = reinterpret_cast<nlmsghdr*>(buf); NLMSG_OK(h, len); h = NLMSG_NEXT(h, len)) {
      ++answered;
      if (h->nlmsg_type != SOCK_DIAG_BY_FAMILY || h->nlmsg_len < NLMSG_LENGTH(sizeof(inet_diag_msg))) continue;
      const auto* m = static_cast<const inet_diag_msg*>(NLMSG_DATA(h));
      out.unsent += m->idiag_wqueue;
      if (h->nlmsg_seq == 0 || h->nlmsg_seq > connections.size()) continue;
      auto attr_len = static_cast<int>(h->nlmsg_len - NLMSG_LENGTH(sizeof *m));
      for (auto* a = reinterpret_cast<const rtattr*>(m + 1); RTA_OK(a, attr_len); a = RTA_NEXT(a, attr_len))
        if (a->rta_type == INET_DIAG_INFO &&
            RTA_PAYLOAD(a) >= offsetof(tcp_info, tcpi_segs_out) + sizeof(std::uint32_t)) {
          const auto* info = static_cast<const tcp_info*>(RTA_DATA(a));
          out.segments[connections[h->nlmsg_seq - 1]] = {info->tcpi_total_retrans, info->tcpi_segs_out};
        }
    }
  }
  return out;
}

}  // namespace fabricbench::job
