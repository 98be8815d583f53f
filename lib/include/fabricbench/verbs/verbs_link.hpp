// One rank's side of a verbs pair: its registered buffers, completion queues and Reliable Connected queue pairs,
// connected to the peer's over MPI (no TCP side channel), and the perftest loops that run a test on them. fabric-verbs
// runs one link per rank on MPI_COMM_WORLD (rank i with i + N/2); fabric-sweep's rdma metrics run one on each node
// pair's communicator.
#pragma once
#include <mpi.h>

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "fabricbench/memory/buffer.hpp"
#include "fabricbench/ops/bandwidth.hpp"
#include "fabricbench/verbs/verbs.hpp"
#include "fabricbench/verbs/verbs_test.hpp"

namespace fabricbench::verbs {

// perftest's knobs; -1 or 0 means perftest's default for the test at hand.
struct VerbsSettings {
  int qps = 1;            // -q
  int tx_depth = -1;      // -t: 128 for bandwidth, 1 for latency
  int rx_depth = 512;     // -r: receives kept posted for send tests
  int cq_mod = -1;        // -Q: a completion every cq_mod messages (100; 1 above 8 KiB unless -Q or -a)
  int inline_bytes = -1;  // -I: 220 write_lat, 236 send_lat, 0 otherwise
  int mtu = 0;            // --mtu: 0 takes the smaller active MTU of the two ports
  int qp_timeout = 14;    // -u: local ACK timeout exponent, 4.096 us x 2^N before a retransmission
  bool bidirectional = false, events = false, all_sizes = false;
  AtomicOp atomic = AtomicOp::fetch_add;
};

// What one rank measured for one test and size.
struct VerbsMeasurement {
  bool timed = false;                  // this rank timed (the leader; both ranks with --bidirectional)
  ops::PerftestBandwidth bandwidth;    // bandwidth tests
  std::vector<double> round_trips_us;  // latency tests: between consecutive posts (perftest's deltas)
  std::vector<double> samples_us;      // bandwidth: between successive completions (each of cq_mod messages)
  std::uint64_t wrong = 0;             // bytes that failed the check on this rank
  int iterations = 0, cq_mod = 1, tx_depth = 1, inline_bytes = 0;

  // The figure of one timed rank, as perftest prints it and fabric-sweep judges it: the typical latency (us) of a
  // latency test, the average bandwidth (MiB/s) of a bandwidth test; NaN on a rank that did not time.
  double figure(const VerbsTest& test) const {
    if (!timed) return NAN;
    return test.pattern == Pattern::latency ? ops::perftest_latency(round_trips_us, test.latency_divisor).typical_us
                                            : bandwidth.avg_mibps;
  }
};

class VerbsLink {
 public:
  // Collective over the pair: buffers of `max_bytes` (at least 8) registered, `settings.qps` queue pairs connected
  // to the peer's. `leader` posts (the client of perftest).
  VerbsLink(const Device& device, memory::MemoryKind memory, std::uint64_t max_bytes, const VerbsSettings& settings,
            MPI_Comm comm, int peer, bool leader);
  ~VerbsLink();
  VerbsLink(const VerbsLink&) = delete;
  VerbsLink& operator=(const VerbsLink&) = delete;

  // Collective over the pair: `warmup` untimed iterations, then `iterations` timed, then the check.
  VerbsMeasurement run(const VerbsTest& test, std::uint64_t bytes, int iterations, int warmup, bool check);
  // Seconds one iteration takes (a short untimed run), for -D; collective, the larger of the two sides' values.
  double probe_iteration_s(const VerbsTest& test, std::uint64_t bytes);
  // From the watchdog thread: every queue pair to the error state, so posted work completes flushed.
  void abort() noexcept;
  // "QP 0x12 ERR, QP 0x13 RTS": for errors.
  std::string states() const;
  const std::string& registration() const;  // how the buffers were registered
  int path_mtu_bytes() const { return path_mtu_; }

  // The counts a test runs with under these settings (perftest's rules).
  static int tx_depth_for(const VerbsTest& test, const VerbsSettings& settings, int iterations);
  static int cq_mod_for(const VerbsTest& test, const VerbsSettings& settings, std::uint64_t bytes, int tx_depth);
  static int inline_for(const VerbsTest& test, const VerbsSettings& settings);

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
  int path_mtu_ = 0;
};

}  // namespace fabricbench::verbs
