// The verbs tests of fabric-verbs as data, named and defined as perftest's ib_*_bw / ib_*_lat: which operation,
// streamed (bandwidth) or one at a time (latency), what a latency sample is, perftest's default counts and sizes.
// Adding a test is one table entry.
#pragma once
#include <cstdint>
#include <string_view>
#include <vector>

#include "fabricbench/cli/choice.hpp"
#include "fabricbench/ops/iteration_defaults.hpp"

namespace fabricbench::verbs {

enum class Verb { write, read, send, atomic };
enum class Pattern {
  bandwidth,  // the leader keeps up to --tx-depth operations posted (both sides with --bidirectional)
  latency     // one operation at a time; a sample is one iteration's time divided by latency_divisor
};
enum class AtomicOp { fetch_add, compare_swap };
// fabric-verbs --atomic-type: perftest's words.
inline constexpr cli::Choice<AtomicOp> kAtomicOps[] = {{"fetch_add", AtomicOp::fetch_add},
                                                       {"cmp_swap", AtomicOp::compare_swap}};

struct VerbsTest {
  std::string_view name;  // "write_bw"
  std::string_view peer;  // "ib_write_bw"
  std::string_view description;
  Verb verb;
  Pattern pattern;
  // Latency: a ping-pong (write, send) counts half its round trip, a read or atomic the whole of it (perftest).
  int latency_divisor;
  std::uint64_t default_bytes;  // perftest's default -s
  ops::IterationDefaults defaults;
  bool fixed_size() const { return verb == Verb::atomic; }  // atomics move 8 bytes
};

// What perftest's loops keep as their per-message or per-iteration stamps, turned into results (perftest_formulas):
// bandwidth: MB/s = bytes x iterations x QPs / seconds / 2^20 (perftest's MB is 2^20 bytes), Gb/s = bits / 1e9.
const std::vector<VerbsTest>& verbs_tests();
const VerbsTest* find_verbs_test(std::string_view name);

}  // namespace fabricbench::verbs
