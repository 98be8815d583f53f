// The unsent bytes of a process's TCP connections: its network namespace's table read (the format of proc(5)'s
// /proc/net/tcp), and the same connections looked up through the kernel's socket diagnostics, on a real connection
// of this test whose receiver does not read.
#include "fabricbench/job/tcp_queues.hpp"

#include <arpa/inet.h>
#include <fcntl.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <fstream>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

namespace tcp_queues_test {

using fabricbench::job::TcpConnection;

std::string slurp(const std::string& path) {
  std::ifstream in(path);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

TEST(TcpTable, ReadsTheConnectionsOfItsSocketsAndNotTheListeners) {
  const std::string table =
      "  sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode\n"
      "   0: 0100007F:1F90 00000000:0000 0A 00000000:00000000 00:00000000 00000000  0 0 100 1\n"
      "   1: 0100007F:1F91 0100007F:C350 01 00001000:00000000 00:00000000 00000000  0 0 111 1\n"
      "   2: 0100007F:1F92 0100007F:C351 01 00000500:00000000 00:00000000 00000000  0 0 333 1\n";
  const auto c = fabricbench::job::parse_tcp_table(table, AF_INET, {"100", "111"});
  ASSERT_EQ(c.size(), 1u);
  const auto& x = c.at("111");
  EXPECT_EQ(x.unsent, 0x1000u);
  EXPECT_EQ(x.local_port, htons(0x1F91));
  EXPECT_EQ(x.remote_port, htons(0xC350));
  EXPECT_EQ(x.local[0], 0x0100007Fu);  // 127.0.0.1 as the kernel's word prints it
  const auto v6 = fabricbench::job::parse_tcp_table(
      "header\n   0: 00000000000000000000000001000000:1F90 00000000000000000000000001000000:C352 01 "
      "00000020:00000000 00:00000000 00000000 0 0 222 1\n",
      AF_INET6, {"222"});
  ASSERT_EQ(v6.size(), 1u);
  EXPECT_EQ(v6.at("222").local[3], 0x01000000u);
  EXPECT_EQ(v6.at("222").unsent, 0x20u);
}

TEST(TcpQueues, LookUpWhatTheTableSays) {
  const int server = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in at{};
  at.sin_family = AF_INET;
  at.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof at;
  ASSERT_EQ(::bind(server, reinterpret_cast<sockaddr*>(&at), sizeof at), 0);
  ASSERT_EQ(::listen(server, 4), 0);
  ASSERT_EQ(::getsockname(server, reinterpret_cast<sockaddr*>(&at), &len), 0);
  const int client = ::socket(AF_INET, SOCK_STREAM, 0);
  ASSERT_EQ(::connect(client, reinterpret_cast<sockaddr*>(&at), sizeof at), 0);
  const int peer = ::accept(server, nullptr, nullptr);
  ASSERT_GE(peer, 0);
  // The peer never reads: the client's queue fills.
  ::fcntl(client, F_SETFL, O_NONBLOCK);
  const std::vector<char> chunk(1 << 16, 'x');
  while (::send(client, chunk.data(), chunk.size(), 0) > 0) {
  }
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  struct stat st {};
  ASSERT_EQ(::fstat(client, &st), 0);
  const auto table =
      fabricbench::job::parse_tcp_table(slurp("/proc/self/net/tcp"), AF_INET, {std::to_string(st.st_ino)});
  ASSERT_EQ(table.size(), 1u);
  const auto& c = table.begin()->second;
  EXPECT_GT(c.unsent, 0u);
  fabricbench::job::TcpQueues q;
  ASSERT_TRUE(q.usable());
  const auto t = q.look({c});
  ASSERT_TRUE(t.has_value());
  EXPECT_EQ(t->unsent, c.unsent);
  ASSERT_EQ(t->segments.size(), 1u);  // its tcp_info came with it, for this very connection
  EXPECT_EQ(t->segments.begin()->first.local_port, c.local_port);
  // Segments sent: what the peer's receive buffer took, in the loopback's 64 KiB segments (a probe of its full
  // window may count as one retransmission).
  EXPECT_GE(t->segments.begin()->second.second, 1u);
  EXPECT_EQ(q.look({})->unsent, 0u);
  ::close(client);
  ::close(peer);
  ::close(server);
  // Gone: counted as nothing, not an error.
  const auto gone = q.look({c});
  ASSERT_TRUE(gone.has_value());
  EXPECT_EQ(gone->unsent, 0u);
  EXPECT_TRUE(gone->segments.empty());
}

}  // namespace tcp_queues_test
