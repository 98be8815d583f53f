// Which node pairs are tested together, round by round. all-pairs: the circle method, every unordered pair exactly
// once, no node twice in a round (N-1 rounds of N/2 pairs for even N; N rounds with one node resting for odd N).
// quick: one round, node i with node i+N/2 (odd N: a second round pairs the last node with node 0). shift: mpiGraph's
// pattern, in step d node i sends to i+d while receiving from i-d. A pairs file gives the rounds explicitly ("round
// hostA hostB" per line).
#pragma once
#include <istream>
#include <string>
#include <string_view>
#include <vector>

namespace fabricbench::sweep {

class Topology;

struct HostPair {
  int a;  // host index; a leads (and, for shift, sends to b)
  int b;
  bool operator==(const HostPair& o) const { return a == o.a && b == o.b; }
  HostPair unordered() const { return a < b ? *this : HostPair{b, a}; }  // the smaller host first
};

// Why a round runs: the plan's own rounds, or the re-tests of the suspects (the `kind` column of the pair, round,
// schedule and untested rows).
enum class RoundKind { sweep, retest };
std::string_view kind_name(RoundKind kind);

struct Round {
  std::vector<HostPair> pairs;
  std::vector<int> resting;  // hosts in no pair this round
  // Duplex (the adaptive plan's covering, AdaptiveOptions::duplex_cover): a host may be in two pairs, at most once as
  // a and once as b. Its two directions run as two phases, every a sending to its b, then every b to its a, so that
  // in each phase a host sends one flow and receives another (a NIC's two directions at once).
  bool duplex = false;
  // A ring round's (shift or duplex) lanes, one per pair: which of the round's GPU communicators carries it, so that
  // no host sends and receives on the same one (NCCL ends one communicator's operations on a rank together:
  // lib/ops/nccl_p2p.cpp). 0 and 1 alternate along each chain and cycle of sends (a to b, b to its b, ...), an odd
  // cycle's last pair 2; the same in the reverse phase. Every rank computes the same from the same pairs.
  std::vector<int> lanes() const;
  // A round of `pairs` among `hosts` hosts; every host in none of them rests.
  static Round of(int hosts, std::vector<HostPair> pairs);
  // Every pair of `rounds` in a round of its own, in their order (--sequential: the plan's rounds and the re-tests').
  static std::vector<Round> one_by_one(int hosts, const std::vector<Round>& rounds);
};

// Which plan made the rounds: --plan's values (to_string gives each one's name), or a --pairs-file.
enum class Plan { all_pairs, quick, shift, adaptive, pairs_file };
std::string_view to_string(Plan plan);
// The plans --plan takes, in the order its help lists them (every Plan but pairs_file).
const std::vector<Plan>& chosen_plans();

class PairSchedule {
 public:
  // The most pair tests a plan is built with (8 bytes each, 512 MiB, held by every rank): all-pairs reaches it at
  // about 11,600 hosts and shift at 8,200. Beyond, all_pairs and shift throw Error::usage with the plan's memory
  // (PlanSize::bytes) in GiB; a --dry-run counts them instead (`counted`).
  static constexpr long long max_pairs = 1LL << 26;

  static PairSchedule all_pairs(int hosts);
  static PairSchedule quick(int hosts);
  static PairSchedule shift(int hosts);
  // No rounds: the adaptive plan (AdaptivePlan) picks each round from the records so far.
  static PairSchedule adaptive(int hosts) { return PairSchedule(Plan::adaptive, hosts); }
  // The plan of `plan` (all-pairs, quick, shift or adaptive) built.
  static PairSchedule of(Plan plan, int hosts);
  // all-pairs, quick or shift named but not built: a --dry-run counts it (PlanSize) in microseconds and little memory,
  // at any size --hosts accepts, where building all-pairs of 100,000 hosts would take 37 GiB. Not refused by size.
  static PairSchedule counted(Plan plan, int hosts);
  bool built() const { return built_; }
  // Lines "round hostA hostB" ('#' starts a comment). Throws Error::usage naming `source`, the line number and what
  // is wrong: a bad line, an unknown host, a host twice in one round, a pair of a host with itself.
  static PairSchedule from_pairs_file(std::istream& in, const std::vector<std::string>& hosts, std::string_view source);

  // With a topology: rounds appended so that every pair of leaves is crossed on every rail below `rails` and every
  // leaf of two or more hosts has a pair inside it (what the switch and uplink verdicts need). Returns the pairs added.
  std::size_t cover(const Topology& topology, int rails);

  const std::vector<Round>& rounds() const { return rounds_; }
  Plan plan() const { return plan_; }
  std::string_view pattern() const { return to_string(plan_); }
  int hosts() const { return hosts_; }
  // A host may appear in two pairs of one round (shift: once sending, once receiving).
  bool directed() const { return plan_ == Plan::shift; }

 private:
  PairSchedule(Plan plan, int hosts) : plan_(plan), hosts_(hosts) {}
  void add_round(std::vector<HostPair> pairs);
  static void check_size(Plan plan, int hosts);
  Plan plan_;
  int hosts_;
  bool built_ = true;
  std::vector<Round> rounds_;
};

}  // namespace fabricbench::sweep
