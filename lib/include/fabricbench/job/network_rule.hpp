// The network rule of the slow-rank judge (straggler.hpp): one communicator's proxy sends over a window, and where
// inside the collective its time goes. Pure: records in, a verdict out.
//
// Like with like: per size class (powers of 4 of an operation's bytes) each connection's network time per byte
// against the class's usual: the lower median over the connections that have it, and the connection's own usual
// before (what the judge kept of it, where it has): whichever is the faster. A connection's ratio weighs its classes by
// their bytes. Operations below `small_op_bytes` are left out (their time is latency). (Healthy connections of one
// communicator differ: on the GPU machine's rig a ring's connections ran 700 to 1700 us per MiB side by side, steady
// each; a stalled host's connections read 2.1x the others' median there, and 4.4-7.7x their own usual.)
//
// A send waits in the network for three reasons: the wire (the sender's NIC, the cable, the receiver's NIC), a
// receiver that does not take the data (its host stopped or starved: its proxy does not read), or a sender whose own
// proxy notices completions late (starved). The slow connections alone cannot tell these apart; the connections
// beside them can:
//   - several slow connections that all touch one rank: that rank's network (its NIC, cable or port, or its host);
//   - one slow connection P -> X whose receiver's own sends (X -> Y) are slowed too, more than the sends into P:
//     X does not take what it is sent (its host stalled or starved, or its NIC's receive side): X's network;
//   - whose sender's incoming sends (W -> P) are slowed too, more than X's own: P's network (its NIC's send side
//     holds the acknowledgements of what it receives, or its host is starved);
//   - neither: the link from P to X (a NIC or port at either end).
#pragma once
#include <cstddef>
#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <utility>
#include <vector>

#include "fabricbench/job/slow_record.hpp"

namespace fabricbench::job {

struct NetworkRuleSettings {
  double link_ratio = 2.5;  // a slow connection: this many times its classes' usual time per byte
  double loss = 0.10, loss_gone = 0.05;
  std::size_t min_ops = 10;
  double beside_ratio = 1.25;  // a connection beside a slow one counts as slowed from this ratio
  double lean = 1.2;           // and decides between the two ends when it is this much above the other end's
  // A connection this slow, whatever it costs, is the network's doing of the window: a rank arriving last elsewhere
  // is not named for it (the kernels wait inside the collective, and which ran shortest is then chance).
  double suspect_ratio = 1.6;
};

// Why a rank or link was named (the line says it).
enum class Evidence {
  kernels,      // its kernels ran shortest: the others waited for it before the collective
  link,         // one connection's sends; the connections beside it are as usual
  connections,  // several slow connections, all touching the rank
  sends_into,   // the sends into it, and its own sends slowed beside them: it does not take what it is sent
  sends_from,   // its sends, and the sends into it slowed beside them: its NIC's send side or its host
};

struct RatedConnection {
  std::pair<int, int> who;         // (sender, receiver)
  double ratio = 0;                // network time against the usual for its bytes
  double loss = 0;                 // its excess network time spread over its channels, as a share of the window
  std::map<int, double> per_byte;  // by size class (min_ops operations or more): its network seconds per byte now
};

// A size class of operations' bytes: powers of 4 (64-255 KiB, 256 KiB-1 MiB, ...). A 256 KiB operation takes longer
// per byte than a 16 MiB one on the same healthy link.
inline int size_class(std::uint64_t bytes) { return (63 - __builtin_clzll(bytes | 1)) / 2; }

// Each connection's own usual seconds per byte, by ((sender, receiver), size class): what it took before now.
using OwnUsual = std::map<std::pair<std::pair<int, int>, int>, double>;

struct NetworkVerdict {
  enum class Kind { link, network };
  Kind kind = Kind::link;
  int rank = -1, peer = -1;  // link: from rank to peer; network: the rank, peer -1
  Evidence evidence = Evidence::link;
  std::vector<RatedConnection> connections;  // the slow ones, then the ones beside that decided
  double ratio = 0, loss = 0;                // the worst slow connection's
};

// The rated connections of one communicator (those with min_ops operations in classes that others share, or that
// they had before: `own`).
std::vector<RatedConnection> rate_connections(const std::vector<const slow::ProxyRecord*>& sends, double span_s,
                                              const NetworkRuleSettings& s, const OwnUsual& own = {});

// What the slow connections say. `slow` are those named (ratio and loss); `all` every rated connection (the
// ones beside). Empty when none is slow.
std::vector<NetworkVerdict> place_slow_connections(const std::vector<RatedConnection>& slow,
                                                   const std::vector<RatedConnection>& all,
                                                   const NetworkRuleSettings& s);

}  // namespace fabricbench::job
