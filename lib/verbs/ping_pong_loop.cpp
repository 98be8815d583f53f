// perftest's latency loops (run_iter_lat_write, run_iter_lat_send, run_iter_lat): RDMA write spinning on the last
// byte of the target buffer, send answered on the receive completion, read and atomic waiting on their own
// completion while the peer's CPU takes no part.
#include <atomic>

#include "fabricbench/runtime/mpi.hpp"
#include "fabricbench/timing/iteration_timer.hpp"
#include "verbs_link_impl.hpp"

namespace fabricbench::verbs {

std::vector<std::uint64_t> VerbsLink::Impl::ping_pong(Verb verb, std::uint64_t bytes, int iterations,
                                                      int inline_bytes) {
  std::vector<std::uint64_t> stamps;
  if (leader) stamps.reserve(static_cast<std::size_t>(iterations));
  ibv_wc wc[poll_batch];
  const auto wait_send = [&] {
    while (poll(send_cq, wc) == 0) {
    }
  };
  if (verb == Verb::read || verb == Verb::atomic) {  // one-sided: the peer's CPU takes no part
    if (leader)
      for (int i = 0; i < iterations; ++i) {
        stamps.push_back(timing::IterationTimer::ticks());
        post_one(0, verb, bytes, true, 0);
        wait_send();
      }
    runtime::idle_barrier(comm);
    return stamps;
  }
  if (verb == Verb::send) {
    int posted = 0;
    for (; posted < std::min(settings.rx_depth, iterations); ++posted) post_receive(0, bytes);
    runtime::idle_barrier(comm);
    const auto receive = [&] {
      while (poll(receive_cq, wc) == 0) {
      }
      if (posted < iterations) {
        post_receive(0, bytes);
        ++posted;
      }
    };
    for (int i = 0; i < iterations; ++i) {
      if (!leader) receive();
      if (leader) stamps.push_back(timing::IterationTimer::ticks());
      post_one(0, verb, bytes, true, inline_bytes);
      wait_send();
      if (leader) receive();
    }
    return stamps;
  }
  // RDMA write ping-pong: the last byte of a message carries the iteration's mark; each side spins on the last
  // byte of its target buffer for the peer's write, then writes back.
  auto* flag = static_cast<volatile std::uint8_t*>(target.data()) + (bytes - 1);
  auto* mark = static_cast<std::uint8_t*>(local.data()) + (bytes - 1);
  *flag = 0;
  runtime::idle_barrier(comm);
  for (int i = 0; i < iterations; ++i) {
    const auto m = static_cast<std::uint8_t>(i % 255 + 1);
    if (!leader)
      while (*flag != m) {
      }
    if (leader) stamps.push_back(timing::IterationTimer::ticks());
    *mark = m;
    std::atomic_thread_fence(std::memory_order_release);
    post_one(0, verb, bytes, true, inline_bytes);
    wait_send();
    if (leader)
      while (*flag != m) {
      }
  }
  return stamps;
}

}  // namespace fabricbench::verbs
