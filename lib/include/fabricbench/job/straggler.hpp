// The slow-rank judge of fabric-watchdog --slow: the records of the job's ranks (slow_record.hpp) matched by
// communicator, op and sequence number (NCCL numbers each function's collectives apart), and per collective how long
// each rank waited inside it. A rank's kernel that starts while the others' have been waiting runs shortest: the rank
// that waits least arrived last, and how much longer the others ran is what its lateness cost them. No clock is
// compared between ranks (only each rank's own kernel duration).
//
// Over a window (10 s): per rank, the collectives of its communicator it arrived last at (by at least 50 us) and
// the time the others waited for it there, as a share of the window: the job's time lost to it. A rank is named when
// it causes >= `share` of all the waiting in its communicator and costs >= `loss` of the time ("slow before the
// collective": compute, input, the host or its GPU), and is named no more once it costs < `loss_gone`. (The share of
// the waiting, not of the collectives it was last at: healthy ranks take turns being last, so that share starts at
// 1/n and reaches one half only once the slow part fills a third of the window; the waiting is the slow rank's from
// its first second.) A collective that every rank runs alike but several times slower than this job ran it before
// (same communicator, op and size) is named as slow inside (a link or NIC), when no rank of its communicator is named
// late. A communicator's first seconds and the first collectives of each kind are left out (settling).
//
// Where NCCL's proxy moves data over the network, its proxy operations (slow_record.hpp) say where inside: the
// network rule (network_rule.hpp) compares the connections' sends like with like and places a slow one on a link, a
// rank's network, a receiver that does not take its data or a sender. The kernels and the sends are then read
// together: a rank the kernels name that the network does not implicate is not named. A finding is named from its
// `confirm_looks`-th look in a row (a link three more); no finding's loss is above the whole window.
//
// Ranks of one communicator on one physical GPU (the same machine's boot id and bus id, whatever their host names)
// take turns on it: a kernel's time holds the others' time slices, and which rank's runs shortest is the order the
// GPU serves them in (on the GPU machine's rig, one rank last at ~38% of the all-gathers, ~15% of the time "lost",
// while the steps stayed as they were). The kernels' rule does not name such ranks; the network's still does.
#pragma once
#include <algorithm>
#include <bitset>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <iterator>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <tuple>
#include <unordered_map>
#include <vector>

#include "fabricbench/job/network_rule.hpp"
#include "fabricbench/job/slow_record.hpp"

namespace fabricbench::job {

struct StragglerSettings {
  double window_s = 10;
  double share = 0.5;  // share of the communicator's waiting this rank causes
  double late = 0;     // share of the collectives it must have arrived last at (fabric-coll --per-rank: 0.5)
  double loss = 0.10;  // share of the window the others waited for it
  double loss_gone = 0.05;
  std::size_t min_collectives = 10;
  double inside_ratio = 3;    // the collective's own time against the best this job had for it
  double min_wait_s = 50e-6;  // a last arrival by less is a tie
  double link_ratio = 2.5;    // a connection's time per byte against its usual (healthy on the GPU machine: <= 2.32)
  std::size_t min_link_ops = 10;
  // The connections are judged over the window's last seconds: a healthy connection's ratio over 5 s stayed <= 1.35
  // on the GPU machine (3 s: 1.47, 2 s: 1.66), a slowed one shows there sooner than over the whole window.
  double link_window_s = 5;
  // Each connection is also compared with itself before: its time per byte over each link_window_s of the last
  // `own_history_s` (one reading per link_window_s), the lower quartile of at least `own_min_readings` (a healthy
  // connection's ratio to it stayed <= 1.37 on the GPU machine's rig). 0: the others alone.
  double own_history_s = 120;
  std::size_t own_min_readings = 4;
  // Proxy operations below this many bytes are left out of the link judgement: their time is the network's latency
  // and the peer's, not the link's bandwidth (a job's tiny all_reduce of a flag or a loss moves a few hundred bytes
  // a connection, ~10^6 us per MiB: beside the big collectives they filled the lower half of the median).
  std::uint64_t small_op_bytes = 64 << 10;
  // A communicator's first `settle_s` (from its first record) and the first `settle_ops` collectives of each kind
  // (op, algorithm, protocol) are left out: NCCL sets up the connections there, and over a network some ranks take
  // longer. 0 in a benchmark, which warms up itself; the watchdog's judge sets them (kSettle in slow_judge.cpp).
  double settle_s = 0;
  std::size_t settle_ops = 0;
  // A finding is named from this many looks in a row on (the watchdog looks every second: 2); 1: at once.
  std::size_t confirm_looks = 1;
};

// A share of a span of time, never above the whole of it (waits and network times of collectives in flight at once
// add up past their span).
inline double part_of(double seconds, double span_s) { return span_s > 0 ? std::min(1.0, seconds / span_s) : 0; }

// One connection's network time (sends, or receives), over the whole run (the report's table): its operations of
// small_op_bytes or more; the smaller ones only counted.
struct ConnectionTotal {
  std::size_t ops = 0;
  std::size_t small_ops = 0;
  std::uint64_t bytes = 0;
  double net_s = 0;
  std::bitset<256> channels;  // a bit per channel it used
  std::size_t channel_count() const { return channels.count(); }
};
struct ConnectionKey {
  std::uint64_t comm;
  int rank, peer;
  bool is_send;
  bool operator<(const ConnectionKey& o) const {
    return std::tie(comm, rank, peer, is_send) < std::tie(o.comm, o.rank, o.peer, o.is_send);
  }
};

// One rank of one communicator over a window.
struct RankWindow {
  std::uint64_t comm = 0;
  int rank = -1;
  std::size_t source = 0;       // the file (process) its records came from
  std::size_t collectives = 0;  // of its communicator, in the window
  std::size_t late = 0;         // arrived last at
  double wait_median_s = 0;     // the others' median wait at those (at those that stand out, where some do)
  double cost_s = 0;            // the others' wait summed over those
  double loss = 0;              // cost_s / the window's span
  double share = 0;             // cost_s / all the waiting in its communicator
  double kernel_median_s = 0;   // its own kernel time, median
  std::string op;               // the op it was most often last at
};

struct SlowFinding {
  // late: a rank arrives late; inside: a collective slower than before on every rank; link: the connection from
  // `rank` to `peer` is slow in the network; network: every slow connection touches `rank`.
  enum class Kind { late, inside, link, network };
  Kind kind = Kind::late;
  std::uint64_t comm = 0;
  int rank = -1;  // late, link, network: the rank; inside: -1
  int peer = -1;  // link: the receiving end
  std::size_t source = 0;
  std::vector<std::pair<int, int>> connections;  // link, network: the slow ones (from, to), then those beside
  std::vector<double> connection_ratios;         // theirs, each against its usual
  double ratio = 0;  // link, network: network time per byte against the communicator's median (the worst)
  Evidence evidence = Evidence::kernels;  // what named it
  bool kernels_agree = false;             // network: the rank also arrived last (its late finding said here)
  bool sends_agree = false;               // late: the sends into it wait too (the link finding into it said here)
  std::string op;
  std::uint64_t bytes = 0;  // inside: the collective's size
  double late_fraction = 0, wait_median_s = 0, loss = 0;
  double own_s = 0, best_s = 0;  // inside: its median time now and the best median this job had
  std::size_t collectives = 0;

  // Its identity while it lasts (one naming): its kind, communicator, and what it names of them (the rank, the link
  // or the collective: op and size), the other fields left out.
  using Key = std::tuple<Kind, std::uint64_t, int, int, std::string, std::uint64_t>;
  Key key() const;
  // "late", "inside", "link", "network": the report's, the textfile's and --slow-exec's word for its kind.
  const char* kind_name() const;
};

// What each kind of finding names, and its word (in the order of Kind).
struct FindingKind {
  SlowFinding::Kind kind;
  const char* name;
  bool rank, peer, collective;  // it names a rank; the link from it to a peer; a collective by op and size
};
inline constexpr FindingKind kFindingKinds[] = {
    {SlowFinding::Kind::late, "late", true, false, false},
    {SlowFinding::Kind::inside, "inside", false, false, true},
    {SlowFinding::Kind::link, "link", true, true, false},
    {SlowFinding::Kind::network, "network", true, false, false},
};
static_assert(std::size(kFindingKinds) == 4 && kFindingKinds[0].kind == SlowFinding::Kind::late &&
                  kFindingKinds[1].kind == SlowFinding::Kind::inside &&
                  kFindingKinds[2].kind == SlowFinding::Kind::link &&
                  kFindingKinds[3].kind == SlowFinding::Kind::network,
              "kFindingKinds: one entry per SlowFinding::Kind, in its order");

inline SlowFinding::Key SlowFinding::key() const {
  const auto& k = kFindingKinds[static_cast<int>(kind)];
  return {
      kind, comm, k.rank ? rank : -1, k.peer ? peer : -1, k.collective ? op : std::string(), k.collective ? bytes : 0};
}
inline const char* SlowFinding::kind_name() const { return kFindingKinds[static_cast<int>(kind)].name; }

struct SlowWindow {
  std::int64_t start_ns = 0, end_ns = 0;
  std::size_t collectives = 0;
  std::vector<RankWindow> ranks;      // ranks that arrived last at least once, by loss, largest first
  std::vector<SlowFinding> findings;  // named now
  // Per communicator: its ranks that share their GPU with another of its ranks (not named by their kernels).
  std::map<std::uint64_t, std::vector<int>> shared_gpu;
};

// One rank's part of one collective (the report's per-rank, per-collective rows).
struct RankCollective {
  std::int64_t host_ns;
  std::uint64_t comm, seq, bytes;
  int rank;
  std::uint8_t op, algo, proto;
  double kernel_s, wait_s;  // its kernel time; how much longer it ran than the rank that ran shortest
  bool last;
};

class StragglerFinder {
 public:
  explicit StragglerFinder(StragglerSettings settings = {}) : s_(settings) {}
  // A record from file `source`. A collective is judged once every rank of its communicator reported it (when the
  // size is not known, interface v3: 2 s after its newest record). A proxy record is kept for the window.
  void add(std::size_t source, const slow::Record& r);
  // The window that ends at `now_ns` (CLOCK_REALTIME); collectives older than the window are forgotten.
  SlowWindow find(std::int64_t now_ns);
  const StragglerSettings& settings() const { return s_; }
  // The last rows per rank and collective (at most kKeptRows).
  const std::deque<RankCollective>& rows() const { return rows_; }
  static constexpr std::size_t kKeptRows = 200000;
  // Ranks from which some collectives of their communicator never came (a rank that exited, records lost): by
  // (comm, rank), how many.
  const std::map<std::pair<std::uint64_t, int>, std::size_t>& missing() const { return missing_; }
  std::size_t judged() const { return judged_; }
  // Collectives left out while their communicator or their kind settled (settle_s, settle_ops).
  std::size_t settling() const { return settling_; }
  // Every connection's totals (at most kKeptConnections; the rest counted in connections_dropped()).
  const std::map<ConnectionKey, ConnectionTotal>& connections() const { return connections_; }
  std::size_t connections_dropped() const { return connections_dropped_; }
  static constexpr std::size_t kKeptConnections = 100000;
  // The physical GPU a source's process runs on (SlowSource::physical_gpu; empty: unknown, never shared).
  void set_gpu(std::size_t source, std::string physical_gpu);
  // The source (file) of a rank's collectives, when known.
  std::optional<std::size_t> source_of(std::uint64_t comm, int rank) const;
  // Ranks whose last record is more than `after_s` older than their communicator's newest: they stopped (exited,
  // hang, or their records stopped coming) while the others went on. With the source their records came from.
  std::vector<std::pair<std::pair<std::uint64_t, int>, std::size_t>> quiet_ranks(double after_s) const;
  // The job ended: collectives some rank never reported count as missing for it (no 30 s wait).
  void close();

 private:
  struct Part {
    int rank;
    std::size_t source;
    std::uint64_t kernel_ns;
  };
  struct Pending {
    std::int64_t first_ns = 0, newest_ns = 0;
    std::uint64_t bytes = 0;
    std::uint8_t op = 0, algo = 0, proto = 0;
    int nranks = 0;
    std::vector<Part> parts;
  };
  struct Done {
    std::int64_t t_ns;
    std::uint64_t comm, bytes;
    std::uint8_t op;
    int last_rank;
    std::size_t last_source;
    double wait_s;  // the others' median wait for the last rank
    double own_s;   // the shortest kernel: the collective's own time
  };
  // NCCL numbers a communicator's collectives per function (its seqNumber counts AllReduce, AllGather, ...
  // each from 0): a collective is its communicator, its op and its number.
  struct Key {
    std::uint64_t comm, seq;
    std::uint8_t op;
    bool operator==(const Key& o) const { return comm == o.comm && seq == o.seq && op == o.op; }
  };
  struct KeyHash {
    std::size_t operator()(const Key& k) const {
      return k.comm * 0x9E3779B97F4A7C15ull ^ (k.seq * 0x100000001B3ull + k.op);
    }
  };
  void finish(const Key& key, Pending& p);
  void expire(std::int64_t now_ns, bool all = false);
  void add_proxy(const slow::ProxyRecord& p);
  // The slow connections of one communicator in the window: link or network findings.
  using LinkKey = std::tuple<std::uint64_t, int, int>;  // (comm, rank, peer); a rank's network: peer -1
  // Per slow connection (comm, from, to) placed on a rank's network: that rank and the evidence.
  using Placements = std::map<LinkKey, std::pair<int, Evidence>>;
  struct Sends {
    std::vector<const slow::ProxyRecord*> recent, whole;  // the last link_window_s, the whole window
  };
  // What a communicator's suspect connections implicate: the ranks, and the most any of them (or the time its
  // collectives lose inside) costs the job.
  struct Suspects {
    std::set<int> ranks;
    double cost = 0;
  };
  Suspects judge_links(std::uint64_t comm, const Sends& sends, double span_s, double inside_loss, std::int64_t now_ns,
                       std::vector<SlowFinding>& out, std::set<LinkKey>& named, Placements& placing);
  NetworkRuleSettings network_rule() const;
  // Each connection's readings (time, seconds per byte) by (comm, sender, receiver, size class).
  using ReadingKey = std::tuple<std::uint64_t, int, int, int>;
  std::map<ReadingKey, std::deque<std::pair<std::int64_t, double>>> readings_;
  OwnUsual own_usual(std::uint64_t comm, std::int64_t now_ns) const;
  void remember(std::uint64_t comm, const std::vector<RatedConnection>& rated, std::int64_t now_ns);
  // The window's link and network findings (from the proxy sends since `start`), in place of the "inside" ones of
  // their communicators.
  void place_inside(std::int64_t start, SlowWindow& w, const std::map<std::uint64_t, double>& inside);
  void confirm(SlowWindow& w);
  void read_together(SlowWindow& w, std::vector<SlowFinding>& placed,
                     const std::map<std::uint64_t, Suspects>& implicated);
  std::map<SlowFinding::Key, std::size_t> looks_;  // the last look's findings, and for how many looks in a row

  StragglerSettings s_;
  std::unordered_map<Key, Pending, KeyHash> pending_;
  std::deque<Done> done_;
  std::deque<RankCollective> rows_;
  std::map<std::uint64_t, std::map<int, std::size_t>> ranks_of_;  // per comm: rank -> source
  std::map<std::tuple<std::uint64_t, std::uint8_t, std::uint64_t>, double> best_own_;
  std::map<std::pair<std::uint64_t, int>, bool> named_;  // late findings in force
  std::set<LinkKey> links_named_;                        // link and network findings in force
  Placements placed_on_;                                 // the connections of the network findings in force
  std::deque<slow::ProxyRecord> proxies_;                // sends of the window
  std::map<ConnectionKey, ConnectionTotal> connections_;
  std::size_t connections_dropped_ = 0;
  std::map<std::pair<std::uint64_t, int>, std::size_t> missing_;
  std::map<std::pair<std::uint64_t, int>, std::int64_t> last_seen_;  // per (comm, rank): its newest record
  std::map<std::uint64_t, std::int64_t> comm_first_;                 // per comm: its first record (settle_s)
  std::map<std::tuple<std::uint64_t, std::uint8_t, std::uint8_t, std::uint8_t>, std::size_t> kinds_seen_;
  std::size_t settling_ = 0;
  bool still_settling(std::uint64_t comm, std::int64_t t_ns) const;  // within its communicator's settle_s
  std::vector<std::string> gpu_of_;                                  // by source
  std::vector<int> sharing_gpu(std::uint64_t comm) const;            // its ranks on a GPU with another of them
  std::int64_t newest_ns_ = 0;
  std::size_t judged_ = 0;
};

}  // namespace fabricbench::job
