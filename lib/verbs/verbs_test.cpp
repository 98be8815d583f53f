#include "fabricbench/verbs/verbs_test.hpp"

namespace fabricbench::verbs {

const std::vector<VerbsTest>& verbs_tests() {
  // perftest's defaults: 5000 iterations for ib_write_bw, 1000 for every other test; no warm-up.
  constexpr auto write_bw = ops::IterationDefaults::fixed(5000, 0);
  constexpr auto others = ops::IterationDefaults::fixed(1000, 0);
  static const std::vector<VerbsTest> tests{
      {"write_bw", "ib_write_bw", "RDMA write bandwidth", Verb::write, Pattern::bandwidth, 1, 65536, write_bw},
      {"read_bw", "ib_read_bw", "RDMA read bandwidth", Verb::read, Pattern::bandwidth, 1, 65536, others},
      {"send_bw", "ib_send_bw", "send/receive bandwidth", Verb::send, Pattern::bandwidth, 1, 65536, others},
      {"atomic_bw", "ib_atomic_bw", "atomic (8 B) operation rate", Verb::atomic, Pattern::bandwidth, 1, 8, others},
      {"write_lat", "ib_write_lat", "RDMA write ping-pong latency (half the round trip)", Verb::write, Pattern::latency,
       2, 2, others},
      {"read_lat", "ib_read_lat", "RDMA read latency (the whole round trip)", Verb::read, Pattern::latency, 1, 2,
       others},
      {"send_lat", "ib_send_lat", "send/receive ping-pong latency (half the round trip)", Verb::send, Pattern::latency,
       2, 2, others},
      {"atomic_lat", "ib_atomic_lat", "atomic (8 B) latency (the whole round trip)", Verb::atomic, Pattern::latency, 1,
       8, others},
  };
  return tests;
}

const VerbsTest* find_verbs_test(std::string_view name) {
  for (const auto& t : verbs_tests())
    if (t.name == name) return &t;
  return nullptr;
}

}  // namespace fabricbench::verbs
