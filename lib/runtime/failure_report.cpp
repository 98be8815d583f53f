#include "fabricbench/runtime/failure_report.hpp"

#include <arpa/inet.h>
#include <fmt/format.h>
#include <ifaddrs.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <csignal>
#include <cstdlib>
#include <cstring>
#include <map>
#include <memory>
#include <sstream>
#include <thread>

#include "fabricbench/error.hpp"

namespace fabricbench::runtime {
namespace {

constexpr const char* request_tag = "FBREQ";
constexpr const char* record_tag = "FBREC\n";
constexpr std::size_t max_datagram = 60000;
constexpr std::size_t secret_size = 16;
constexpr int answers_per_second = 4;   // a run's failure asks each rank twice
constexpr int datagrams_per_poll = 64;  // a flood is drained, not left to fill the socket's buffer

// 16 random bytes (the kernel's generator); Error::runtime where it has none to give.
std::string random_secret() {
  std::string secret(secret_size, '\0');
  std::size_t got = 0;
  while (got < secret.size()) {
    const auto n = getrandom(secret.data() + got, secret.size() - got, 0);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) throw Error::runtime("failure report: no random bytes for the side channel's secret (getrandom)");
    got += static_cast<std::size_t>(n);
  }
  return secret;
}

// The local address this host uses toward `peer` (a UDP connect sends nothing); empty where there is no route.
std::string source_address_toward(const std::string& peer) {
  const int probe = ::socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
  if (probe < 0) return {};
  sockaddr_in to{};
  to.sin_family = AF_INET;
  to.sin_port = htons(9);
  std::string out;
  sockaddr_in local{};
  socklen_t len = sizeof local;
  if (inet_pton(AF_INET, peer.c_str(), &to.sin_addr) == 1 &&
      connect(probe, reinterpret_cast<sockaddr*>(&to), sizeof to) == 0 &&
      getsockname(probe, reinterpret_cast<sockaddr*>(&local), &len) == 0) {
    char text[INET_ADDRSTRLEN] = {};
    inet_ntop(AF_INET, &local.sin_addr, text, sizeof text);
    out = text;
  }
  close(probe);
  return out;
}

// Rank 0's address the other hosts share most of their prefix with (its interface on their network, not a
// container bridge), from every rank's list of addresses.
std::string address_for_the_job(const std::vector<std::string>& own, const std::vector<std::vector<std::string>>& all) {
  std::string best = own.front();
  std::size_t best_score = 0;
  for (const auto& mine : own) {
    std::size_t score = 0;
    for (const auto& theirs : all)
      for (const auto& t : theirs) {
        std::size_t common = 0;
        while (common < mine.size() && common < t.size() && mine[common] == t[common]) ++common;
        if (t != mine) score += common;
      }
    if (score > best_score) best = mine, best_score = score;
  }
  return best;
}

std::vector<std::string> own_addresses() {
  std::vector<std::string> out, loopback;
  ifaddrs* list = nullptr;
  if (getifaddrs(&list) != 0) return {"127.0.0.1"};
  for (auto* a = list; a; a = a->ifa_next) {
    if (!a->ifa_addr || a->ifa_addr->sa_family != AF_INET) continue;
    char text[INET_ADDRSTRLEN] = {};
    inet_ntop(AF_INET, &reinterpret_cast<sockaddr_in*>(a->ifa_addr)->sin_addr, text, sizeof text);
    (std::string(text).rfind("127.", 0) == 0 ? loopback : out).push_back(text);
  }
  freeifaddrs(list);
  return out.empty() ? std::vector<std::string>{"127.0.0.1"} : out;
}

std::vector<std::string> split(const std::string& text, char by) {
  std::vector<std::string> out;
  std::stringstream in(text);
  for (std::string item; std::getline(in, item, by);)
    if (!item.empty()) out.push_back(item);
  return out;
}

void send_to(int socket, const std::string& address, int port, const std::string& payload) {
  sockaddr_in to{};
  to.sin_family = AF_INET;
  to.sin_port = htons(static_cast<std::uint16_t>(port));
  if (inet_pton(AF_INET, address.c_str(), &to.sin_addr) != 1) return;
  sendto(socket, payload.data(), std::min(payload.size(), max_datagram), 0, reinterpret_cast<sockaddr*>(&to),
         sizeof to);
}

std::string one_line(std::string s) {
  std::replace(s.begin(), s.end(), '\n', ' ');
  return s;
}

}  // namespace

std::string RankRecord::serialize() const {
  return fmt::format("{}\n{}\n{}\n{}\n{}\n{}", rank, one_line(host), one_line(step), one_line(doing),
                     one_line(last_call), one_line(backtrace));
}

RankRecord RankRecord::parse(const std::string& text) {
  RankRecord r;
  std::istringstream in(text);
  std::string rank;
  std::getline(in, rank);
  r.rank = std::atoi(rank.c_str());
  std::getline(in, r.host);
  std::getline(in, r.step);
  std::getline(in, r.doing);
  std::getline(in, r.last_call);
  std::getline(in, r.backtrace);
  r.answered = true;
  return r;
}

std::string RankRecord::last_call_of(const std::vector<std::string>& frames) {
  for (const auto& f : frames) {
    const auto open = f.find('(');
    if (open == std::string::npos) continue;
    const auto end = f.find_first_of("+)", open);
    const auto name = f.substr(open + 1, end - open - 1);
    for (const char* prefix : {"MPI_", "PMPI_", "nccl", "cuda", "ibv_"})
      if (name.rfind(prefix, 0) == 0) return name;
  }
  return {};
}

FailureReport::FailureReport(const Communicator& world, std::string host)
    : rank_(world.rank()), size_(world.size()), host_(std::move(host)) {
  // Rank 0 learns every rank's addresses and chooses its own for the job (loopback when every rank has the same
  // addresses: one machine); it shares that and the secret. Each rank binds the address it uses toward rank 0's.
  const auto own = own_addresses();
  std::string text;
  for (const auto& a : own) text += a + ",";
  std::string choice;
  if (rank_ == 0) {
    std::vector<std::vector<std::string>> all;
    bool one_machine = true;
    for (const auto& entry : world.gather(text, 0)) {
      all.push_back(split(entry, ','));
      one_machine = one_machine && entry == text;
    }
    choice = random_secret() + (one_machine ? std::string("127.0.0.1") : address_for_the_job(own, all));
  } else {
    world.gather(text, 0);
  }
  choice = world.broadcast(choice, 0);
  secret_ = choice.substr(0, secret_size);
  const std::string job_address = choice.substr(secret_size);
  std::string bind_address =
      rank_ == 0 || job_address == "127.0.0.1" ? job_address : source_address_toward(job_address);
  if (bind_address.empty()) bind_address = own.front();

  socket_ = ::socket(AF_INET, SOCK_DGRAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  if (socket_ >= 0) {
    sockaddr_in at{};
    at.sin_family = AF_INET;
    socklen_t len = sizeof at;
    if (inet_pton(AF_INET, bind_address.c_str(), &at.sin_addr) == 1 &&
        bind(socket_, reinterpret_cast<sockaddr*>(&at), sizeof at) == 0 &&
        getsockname(socket_, reinterpret_cast<sockaddr*>(&at), &len) == 0) {
      bound_to_ = fmt::format("{}:{}", bind_address, ntohs(at.sin_port));
    } else {
      close(socket_);
      socket_ = -1;
    }
  }
  addresses_ = world.gather(bound_to_, 0);
}

bool FailureReport::has_secret(const char* data, std::size_t size, std::size_t at) const {
  if (size < at + secret_size) return false;
  unsigned char differ = 0;  // constant time: every byte is compared whatever the first difference
  for (std::size_t i = 0; i < secret_size; ++i) differ |= static_cast<unsigned char>(data[at + i] ^ secret_[i]);
  return differ == 0;
}

FailureReport::~FailureReport() {
  if (socket_ >= 0) close(socket_);
}

void FailureReport::set_step(const std::string& step) {
  std::lock_guard lock(mutex_);
  step_ = step;
  doing_.clear();
}

void FailureReport::set_doing(const std::string& doing) {
  std::lock_guard lock(mutex_);
  doing_ = doing;
}

RankRecord FailureReport::own_record() const {
  RankRecord r;
  {
    std::lock_guard lock(mutex_);
    r.step = step_;
    r.doing = doing_;
  }
  r.rank = rank_;
  r.host = host_;
  const auto frames = MainThreadBacktrace::capture();
  r.last_call = RankRecord::last_call_of(frames);
  for (const auto& f : frames) r.backtrace += (r.backtrace.empty() ? "" : " | ") + f;
  r.answered = true;
  return r;
}

void FailureReport::poll() {
  if (socket_ < 0) return;
  char buffer[256];
  const std::size_t tag = std::strlen(request_tag);
  for (int k = 0; k < datagrams_per_poll; ++k) {
    sockaddr_in from{};
    socklen_t len = sizeof from;
    const auto n = recvfrom(socket_, buffer, sizeof buffer, 0, reinterpret_cast<sockaddr*>(&from), &len);
    if (n <= 0) return;
    const auto size = static_cast<std::size_t>(n);
    if (size != tag + secret_size || std::memcmp(buffer, request_tag, tag) != 0 || !has_secret(buffer, size, tag)) {
      ++refused_;
      continue;
    }
    const auto now = std::chrono::steady_clock::now();
    if (now - window_start_ >= std::chrono::seconds(1)) window_start_ = now, answers_in_window_ = 0;
    if (answers_in_window_ >= answers_per_second) {
      ++refused_;
      continue;
    }
    ++answers_in_window_;
    ++answered_;
    const auto reply = record_tag + secret_ + own_record().serialize();
    sendto(socket_, reply.data(), std::min(reply.size(), max_datagram), 0, reinterpret_cast<sockaddr*>(&from), len);
  }
}

void FailureReport::answer(std::chrono::milliseconds wait) {
  const auto deadline = std::chrono::steady_clock::now() + wait;
  while (std::chrono::steady_clock::now() < deadline) {
    pollfd p{socket_, POLLIN, 0};
    if (socket_ < 0 || ::poll(&p, 1, 20) < 0) std::this_thread::sleep_for(std::chrono::milliseconds(20));
    poll();
  }
}

std::vector<RankRecord> FailureReport::collect(std::chrono::milliseconds wait) {
  std::map<int, RankRecord> got;
  got[rank_] = own_record();
  const std::string request = request_tag + secret_;
  const auto ask = [&] {
    for (int r = 0; r < static_cast<int>(addresses_.size()); ++r) {
      const auto& a = addresses_[static_cast<std::size_t>(r)];
      if (got.count(r) || a.empty()) continue;
      const auto colon = a.rfind(':');
      send_to(socket_, a.substr(0, colon), std::atoi(a.c_str() + colon + 1), request);
    }
  };
  const auto start = std::chrono::steady_clock::now();
  bool asked_again = false;
  if (socket_ >= 0) ask();
  std::vector<char> buffer(max_datagram + 1);
  while (socket_ >= 0 && static_cast<int>(got.size()) < size_) {
    const auto now = std::chrono::steady_clock::now();
    if (now - start >= wait) break;
    if (!asked_again && now - start >= wait / 2) {  // UDP may drop one: ask those still silent once more
      ask();
      asked_again = true;
    }
    pollfd p{socket_, POLLIN, 0};
    ::poll(&p, 1, 20);
    for (;;) {
      const auto n = recv(socket_, buffer.data(), max_datagram, 0);
      if (n <= 0) break;
      const std::string text(buffer.data(), static_cast<std::size_t>(n));
      const std::size_t tag = std::strlen(record_tag);
      if (text.rfind(record_tag, 0) != 0 || !has_secret(text.data(), text.size(), tag)) {
        ++refused_;  // a forged or stray record never reaches /failure/ranks
        continue;
      }
      auto r = RankRecord::parse(text.substr(tag + secret_size));
      if (r.rank >= 0 && r.rank < size_) got[r.rank] = std::move(r);
    }
  }
  std::vector<RankRecord> out;
  for (int r = 0; r < size_; ++r) {
    if (got.count(r)) {
      out.push_back(got[r]);
    } else {
      RankRecord silent;
      silent.rank = r;
      out.push_back(silent);
    }
  }
  return out;
}

std::string FailureReport::summary(const std::vector<RankRecord>& records) {
  // Ranks that say the same are listed together: "ranks 2,3 (h3,h4): <what>".
  std::vector<std::pair<std::string, std::vector<const RankRecord*>>> groups;
  for (const auto& r : records) {
    std::string what = !r.answered ? "no answer (dead or unreachable)"
                                   : (r.doing.empty() ? r.step : r.step + ": " + r.doing) +
                                         (r.last_call.empty() ? "" : " in " + r.last_call);
    auto it = std::find_if(groups.begin(), groups.end(), [&](auto& g) { return g.first == what; });
    if (it == groups.end())
      groups.push_back({what, {&r}});
    else
      it->second.push_back(&r);
  }
  std::string out;
  for (const auto& [what, ranks] : groups) {
    std::string ids, hosts;
    for (const auto* r : ranks) {
      ids += (ids.empty() ? "" : ",") + std::to_string(r->rank);
      if (!r->host.empty() && hosts.find(r->host) == std::string::npos) hosts += (hosts.empty() ? "" : ",") + r->host;
    }
    out += fmt::format("{}{} {}{}: {}", out.empty() ? "" : "; ", ranks.size() > 1 ? "ranks" : "rank", ids,
                       hosts.empty() ? "" : " (" + hosts + ")", what);
  }
  return out;
}

}  // namespace fabricbench::runtime
