// The adaptive plan: the next round of a sweep from the records so far, instead of a schedule fixed in advance. A few
// rounds of random disjoint pairs (crossing leaves) screen every host; then a host-rail whose pairs were slow is
// re-paired with hosts already judged clean, a slow pair is tested again before it stands as a link, a leaf where
// several hosts are slow on one rail gets pairs inside it (an uplink shows as crossing pairs slow, inside pairs fine),
// and a pair that hung is split by testing one of its hosts with another. It stops when every host-rail is judged.
// Pure (no MPI): rank 0 asks it for each round and broadcasts the answer; the verdicts still come from `judge`.
#pragma once
#include <cstdint>
#include <optional>
#include <random>
#include <set>
#include <string>
#include <tuple>
#include <unordered_set>
#include <vector>

#include "fabricbench/sweep/judge.hpp"
#include "fabricbench/sweep/pair_record.hpp"
#include "fabricbench/sweep/pair_schedule.hpp"
#include "fabricbench/sweep/topology.hpp"

namespace fabricbench::sweep {

struct AdaptiveOptions {
  int screening_rounds = 2;  // rounds of random pairs for every host before anyone is judged
  int clean_tests = 2;       // tests on a rail, none slow, that clear a host-rail
  int suspect_tests = 3;     // tests with clean partners that decide a host-rail that had a slow pair
  int confirm_tests = 2;     // tests of a slow pair before it stands as a link (a re-test takes the best)
  int inside_tests = 2;      // pairs inside a leaf where several of its hosts are slow on one rail
  // A host with a slow test that a re-test did not confirm may be slow some of the time: it gets fresh clean peers
  // until the judge's intermittent rule can decide (intermittent_peers of its peers slow) or it has this many peers.
  int watch_tests = 30;
  int max_rounds = 0;  // 0: hosts - 1 (what all-pairs would take); with cover_pairs 2 x hosts + 16
  // Once every host-rail is judged, go on with pairs never tested (a link only shows on its own pair; a node slow some
  // of the time shows in enough of them) until they are all tested; the caller's --budget ends it first (fabric-sweep
  // sets this with --budget). A pair slow in its first test is tested once more (the best of the two stands).
  bool cover_pairs = false;
  // Covering in duplex rounds (Round::duplex): step d of the shift pattern, host i with i + d, so that every host
  // sends to one peer while it receives from another and a round covers N pairs instead of N / 2 (N / 2 steps for
  // every pair, against the circle method's N - 1). Re-tests and hung splits keep both ends of their pair to
  // themselves.
  bool duplex_cover = false;
};

// What the plan made of the records it last saw (for progress lines and the simulator).
struct AdaptiveState {
  int hosts_judged = 0, hosts_hung = 0;  // hung: in a pair that hung, not cleared by a later test
  int host_rails_suspect = 0;            // host-rails with a slow pair that no wider cause explains, not yet decided
  int pairs_to_confirm = 0;              // slow pairs tested fewer than confirm_tests times
  int hosts_watched = 0;                 // hosts with an unconfirmed slow test, still gathering peers
  bool covering = false;                 // judging done; rounds now only add untested pairs
};

class AdaptivePlan {
 public:
  // `topology` may be null (then no leaf is known: pairs cross nothing and no uplink is looked for) and must outlive
  // the plan; `metrics` and `rules` as the judge takes them (the plan reads every metric's suspects).
  AdaptivePlan(int hosts, int rails, const Topology* topology, std::vector<JudgedMetric> metrics, Rules rules,
               std::uint64_t seed, AdaptiveOptions options = {});
  // The next round, given every record gathered so far (all rounds, as rank 0 holds them; the caller numbers the
  // rounds, the records carry their round). Hosts are disjoint; each pair is tested on every rail at once. nullopt:
  // every host is judged (or, with cover_pairs, every pair tested), or max_rounds were planned. `records` only grows
  // from one call to the next (each record is read once for the pairs tested and the hangs).
  std::optional<Round> next(const std::vector<PairRecord>& records);
  int rounds_planned() const { return planned_; }
  // Unordered pairs tested (or hung) in the records read so far.
  long long pairs_tested() const { return static_cast<long long>(tested_.size()); }
  const AdaptiveState& state() const { return state_; }

 private:
  // A host of a pair that hung: none; unresolved (its pair hung, nothing says which end); released (it finished a
  // test since, or its partner is the hung one); hung (it hung with two partners, or its partner was cleared).
  enum class Hung { none, unresolved, released, hung };
  struct Evidence;     // this call's view of every pair on every rail, over every metric (adaptive_plan.cpp)
  struct HostView;     // what each host and host-rail still needs
  class RoundBuilder;  // a round being filled, hosts disjoint

  // The phases of next(), in order; each reads what the one before made.
  void read(const std::vector<PairRecord>& records);  // new records: pairs tested, hangs, slow first tests (covering)
  std::vector<Hung> hung_states() const;
  Evidence gather(const std::vector<PairRecord>& records);  // the judge's assessment of each metric, pair by pair
  HostView tally(const Evidence& evidence) const;
  std::vector<char> watch_candidates(const Evidence& evidence) const;
  HostView decide(const Evidence& evidence, const std::vector<Hung>& hung);  // fills state_
  std::optional<Round> compose(const HostView& view, const std::vector<Hung>& hung, int cap_rounds);
  std::optional<Round> cover_round(const std::vector<Hung>& hung, int cap_rounds);
  // compose()'s steps, most urgent first.
  void split_hung(RoundBuilder& round, const HostView& view, const std::vector<Hung>& hung) const;
  void screen(RoundBuilder& round) const;
  void inside_leaves(RoundBuilder& round, const HostView& view);
  void pair_suspects(RoundBuilder& round, const HostView& view) const;
  bool usable(const std::vector<Hung>& hung, int h) const { return hung[h] == Hung::none || hung[h] == Hung::released; }
  int leaf(int h, int rail) const { return topology_ ? topology_->leaf_of(h, rail) : -1; }
  std::size_t hr(int h, int rail) const { return static_cast<std::size_t>(h) * rails_ + rail; }

  int hosts_, rails_;
  const Topology* topology_;
  std::vector<JudgedMetric> metrics_;
  Rules rules_;
  AdaptiveOptions options_;
  std::mt19937_64 rng_;
  std::vector<std::string> names_;  // placeholders for the assessment's reasons (the plan needs indices only)
  std::vector<int> relabel_;        // the screening rounds' random order of the hosts
  int planned_ = 0;
  int cover_step_ = 0;       // with cover_pairs: the next round of the circle method (or shift step) to cover
  bool covering_ = false;    // judging done: the records are no longer assessed
  int judged_at_cover_ = 0;  // hosts judged when covering began (what state() says from then on)
  // Read once per record (the records so far only grow; fewer than last time starts over).
  std::size_t seen_ = 0;
  std::unordered_set<std::uint64_t> tested_;                    // unordered pairs tested (or hung)
  std::vector<int> hangs_, last_hang_, last_done_, hung_with_;  // per host
  std::set<std::tuple<int, int, int>> hung_seen_;               // (round, a, b) of hung pairs
  // Covering: the line per metric from the last assessment, slow pairs waiting for their second test, pairs given it.
  std::vector<std::pair<MetricRule, double>> lines_;
  std::vector<std::uint64_t> to_confirm_, deferred_;  // deferred: untested pairs a confirmation pushed out of a round
  std::unordered_set<std::uint64_t> confirmed_;
  std::vector<int> slow_peers_;  // per host, covering: peers with a slow first test
  AdaptiveState state_;
};

}  // namespace fabricbench::sweep
