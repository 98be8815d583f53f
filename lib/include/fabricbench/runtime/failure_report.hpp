// When a run fails (a timeout, a signal), every rank says where it is: host, rank, the step and what it was doing,
// the MPI/NCCL call it is in and a backtrace of its main thread taken inside the process (no debugger). Watchdog
// threads may not call MPI (thread level SINGLE), so the reports travel over a small UDP side channel set up at
// start: rank 0 asks every rank, each rank's watchdog answers with its record, and rank 0 names the ranks that did
// not answer (dead or unreachable). Nothing outside the job may use the channel: rank 0 makes a secret of 16 random
// bytes at start and shares it over MPI; every request and reply carries it, and a datagram without it (compared in
// constant time) is counted and dropped: no answer, no signal to the main thread, never a row of /failure/ranks.
// Each rank binds one address, the one it uses toward rank 0's host (loopback when the whole job is on one
// machine), not every interface, and answers at most a few requests a second. The progress board, where it exists, says
// who finished; this says where the others are, also where the board is missing (Open MPI over TCP between nodes has no
// one-sided MPI).
#pragma once
#include <atomic>
#include <chrono>
#include <cstdint>
#include <mutex>
#include <string>
#include <vector>

#include "fabricbench/runtime/main_thread_backtrace.hpp"
#include "fabricbench/runtime/mpi.hpp"

namespace fabricbench::runtime {

// One rank's account of itself.
struct RankRecord {
  int rank = -1;
  std::string host;
  std::string step;       // the measurement in progress ("sweep round 2 (2 pairs)")
  std::string doing;      // finer: "pair h1 - h3, p2p_bw a->b"
  std::string last_call;  // the innermost MPI_/PMPI_/nccl/cuda frame of the backtrace ("" if none)
  std::string backtrace;  // frames, innermost first, separated by " | "
  bool answered = false;  // false: rank 0 got no record (the rank is dead or unreachable)

  std::string serialize() const;
  static RankRecord parse(const std::string& text);
  // "MPI_Waitall" from frames such as "libmpi.so.40(MPI_Waitall+0x5d) [0x7f..]" (innermost such frame).
  static std::string last_call_of(const std::vector<std::string>& frames);
};

class FailureReport {
 public:
  // Collective over `world`: every rank opens a UDP socket; rank 0 learns every rank's addresses.
  FailureReport(const Communicator& world, std::string host);
  ~FailureReport();
  FailureReport(const FailureReport&) = delete;
  FailureReport& operator=(const FailureReport&) = delete;

  // What this rank is doing (any thread; outside timed loops).
  void set_step(const std::string& step);
  void set_doing(const std::string& doing);
  RankRecord own_record() const;

  // Rank 0's watchdog: ask every rank and collect records for up to `wait`; ranks that did not answer are in the
  // result with answered == false. Every other rank's watchdog: answer() until `wait` has passed.
  std::vector<RankRecord> collect(std::chrono::milliseconds wait);
  void answer(std::chrono::milliseconds wait);
  // Any thread: answer a request if one is waiting (the watchdog polls this while the run goes well).
  void poll();

  // "rank 2 (h3): sweep round 2 ...; pair h3 - h4 ... in MPI_Recv" lines grouped by what they say, for the status.
  static std::string summary(const std::vector<RankRecord>& records);

  // What reached this rank's socket: requests answered and datagrams refused (without the job's secret, or over the
  // rate). The address the socket is bound to ("10.0.0.3:41234").
  struct Counts {
    std::uint64_t answered = 0, refused = 0;
  };
  Counts counts() const { return {answered_.load(), refused_.load()}; }
  const std::string& bound_to() const { return bound_to_; }

 private:
  int rank_, size_;
  std::string host_;
  int socket_ = -1;
  std::string secret_;                  // 16 random bytes from rank 0
  std::string bound_to_;                // "ip:port"
  std::vector<std::string> addresses_;  // rank 0: "ip:port" of every rank ("" where a rank has no socket)
  std::atomic<std::uint64_t> answered_{0}, refused_{0};
  std::chrono::steady_clock::time_point window_start_{};  // the rate limit's current second
  int answers_in_window_ = 0;
  bool has_secret(const char* data, std::size_t size, std::size_t at) const;
  mutable std::mutex mutex_;
  std::string step_, doing_;
};

}  // namespace fabricbench::runtime
