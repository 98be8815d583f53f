// NCCL's RAS client protocol over one TCP connection, every step bounded by one deadline (poll), the socket owned by
// one object that closes it.
#include <fcntl.h>
#include <fmt/format.h>
#include <netdb.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstring>
#include <optional>
#include <utility>

#include "fabricbench/error.hpp"
#include "fabricbench/job/json.hpp"
#include "fabricbench/job/ras.hpp"

namespace fabricbench::job {
namespace {

using Clock = std::chrono::steady_clock;

// The refusal of `option` for what happened talking to `address`.
struct Talk {
  const RasAddress& address;
  const std::string& option;
  Clock::time_point deadline;
  double timeout_s;

  [[noreturn]] void fail(const std::string& what) const {
    throw Error::usage(fmt::format("{} {}: {}", option, address.name(), what));
  }
  int left_ms() const {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now()).count();
    if (left <= 0)
      fail(fmt::format("no answer within {:g} s (--timeout); the process holding the port may be stopped or hung",
                       timeout_s));
    return static_cast<int>(std::min<long long>(left, 1 << 30));
  }
};

// One TCP connection, closed by its owner.
class Connection {
 public:
  explicit Connection(const Talk& talk) : talk_(talk) {
    addrinfo hints{};
    hints.ai_family = AF_UNSPEC;
    hints.ai_socktype = SOCK_STREAM;
    addrinfo* found = nullptr;
    if (const int rc = getaddrinfo(talk.address.host.c_str(), talk.address.port.c_str(), &hints, &found); rc != 0)
      talk.fail(fmt::format("cannot resolve it ({})", gai_strerror(rc)));
    std::string why = "no address";
    for (addrinfo* a = found; a && fd_ < 0; a = a->ai_next) {
      fd_ = ::socket(a->ai_family, a->ai_socktype | SOCK_CLOEXEC | SOCK_NONBLOCK, a->ai_protocol);
      if (fd_ < 0) continue;
      if (::connect(fd_, a->ai_addr, a->ai_addrlen) == 0 || (errno == EINPROGRESS && connected())) break;
      why = std::strerror(errno);
      ::close(fd_);
      fd_ = -1;
    }
    freeaddrinfo(found);
    if (fd_ < 0)
      talk.fail(
          fmt::format("{}: no NCCL RAS service there (NCCL 2.24 or later, NCCL_RAS_ENABLE not 0, and run on "
                      "a node of the job or at its NCCL_RAS_ADDR)",
                      why));
  }
  ~Connection() {
    if (fd_ >= 0) ::close(fd_);
  }
  Connection(const Connection&) = delete;
  Connection& operator=(const Connection&) = delete;

  void send(const std::string& line) {
    std::size_t done = 0;
    while (done < line.size()) {
      wait(POLLOUT);
      const ssize_t n = ::send(fd_, line.data() + done, line.size() - done, MSG_NOSIGNAL);
      if (n < 0 && errno != EAGAIN && errno != EINTR) talk_.fail(fmt::format("sending: {}", std::strerror(errno)));
      if (n > 0) done += static_cast<std::size_t>(n);
    }
  }
  // One line of the server (without its newline); "" at the end of the stream.
  std::string line() {
    for (;;) {
      if (const auto nl = buffer_.find('\n'); nl != std::string::npos) {
        std::string out = buffer_.substr(0, nl);
        buffer_.erase(0, nl + 1);
        return out;
      }
      if (!read_some()) return std::exchange(buffer_, std::string());
    }
  }
  // Everything until the server closes the connection (at most Json::kMaxBytes: 512 MiB, a job of about a million
  // rank entries).
  std::string rest() {
    while (read_some()) {
    }
    return std::exchange(buffer_, std::string());
  }

 private:
  bool connected() {
    wait(POLLOUT);
    int error = 0;
    socklen_t length = sizeof error;
    getsockopt(fd_, SOL_SOCKET, SO_ERROR, &error, &length);
    errno = error;
    return error == 0;
  }
  void wait(short events) {
    pollfd p{fd_, events, 0};
    for (;;) {
      const int rc = ::poll(&p, 1, talk_.left_ms());
      if (rc > 0) return;
      if (rc < 0 && errno != EINTR) talk_.fail(fmt::format("poll: {}", std::strerror(errno)));
    }
  }
  bool read_some() {
    char chunk[65536];
    for (;;) {
      wait(POLLIN);
      const ssize_t n = ::recv(fd_, chunk, sizeof chunk, 0);
      if (n == 0) return false;
      if (n < 0) {
        if (errno == EAGAIN || errno == EINTR) continue;
        talk_.fail(fmt::format("reading: {}", std::strerror(errno)));
      }
      buffer_.append(chunk, static_cast<std::size_t>(n));
      if (buffer_.size() > Json::kMaxBytes)
        talk_.fail(fmt::format("a reply of more than {} MiB: not NCCL's RAS service", Json::kMaxBytes >> 20));
      return true;
    }
  }

  const Talk& talk_;
  int fd_ = -1;
  std::string buffer_;
};

// The reply to one status request, in JSON if `json`; nothing where the server refused JSON.
std::optional<std::string> status(const Talk& talk, bool json, std::string& server) {
  Connection c(talk);
  c.send("CLIENT PROTOCOL 2\n");
  server = c.line();
  if (server.rfind("SERVER PROTOCOL ", 0) != 0)
    talk.fail(fmt::format("not an NCCL RAS service (it answered '{}' to CLIENT PROTOCOL 2)", server.substr(0, 80)));
  // NCCL's collection from the job's other processes: NCCL's own client allows it TIMEOUT + 5 s (a collective leg),
  // so it gets half of what is left less those 5 s (30 s: 12 s; NCCL's default leg is 5 s).
  const int nccl_timeout = std::max(1, (static_cast<int>(talk.left_ms() / 1000) - 5) / 2);
  c.send(fmt::format("TIMEOUT {}\n", nccl_timeout));
  if (const auto ok = c.line(); ok != "OK") talk.fail(fmt::format("TIMEOUT refused ('{}')", ok.substr(0, 80)));
  if (json) {
    c.send("SET FORMAT json\n");
    if (c.line() != "OK") return std::nullopt;  // before NCCL 2.28.7: this connection is done
  }
  c.send("VERBOSE STATUS\n");
  std::string text = c.rest();
  if (text.empty()) talk.fail("the connection closed without a reply to VERBOSE STATUS");
  return text;
}

}  // namespace

RasAddress RasAddress::parse(const std::string& text, const std::string& option) {
  RasAddress a;
  std::string port;
  if (!text.empty() && text.front() == '[') {
    const auto close = text.find(']');
    if (close == std::string::npos)
      throw Error::usage(fmt::format("{} '{}': an IPv6 address ends with ']'", option, text));
    a.host = text.substr(1, close - 1);
    if (close + 1 < text.size()) {
      if (text[close + 1] != ':') throw Error::usage(fmt::format("{} '{}': give [ADDRESS]:PORT", option, text));
      port = text.substr(close + 2);
    }
  } else if (const auto colon = text.rfind(':'); colon != std::string::npos) {
    if (colon > 0) a.host = text.substr(0, colon);
    port = text.substr(colon + 1);
  } else if (!text.empty()) {
    a.host = text;
  }
  if (!port.empty()) {
    char* end = nullptr;
    const long p = std::strtol(port.c_str(), &end, 10);
    if (*end != '\0' || p < 1 || p > 65535)
      throw Error::usage(fmt::format("{} '{}': the port must be a number from 1 to 65535", option, text));
    a.port = port;
  }
  if (a.host.empty())
    throw Error::usage(fmt::format("{} '{}': give HOST[:PORT] (default 127.0.0.1:28028)", option, text));
  return a;
}

std::string RasAddress::name() const {
  return host.find(':') != std::string::npos ? fmt::format("[{}]:{}", host, port) : fmt::format("{}:{}", host, port);
}

RasReply query_ras(const RasAddress& address, double timeout_s, const std::string& option) {
  const Talk talk{address, option,
                  Clock::now() + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(timeout_s)),
                  timeout_s};
  RasReply reply;
  auto text = status(talk, true, reply.server);
  reply.json = text.has_value();
  if (!text) text = status(talk, false, reply.server);  // asked again for text
  reply.text = std::move(*text);
  return reply;
}

}  // namespace fabricbench::job
