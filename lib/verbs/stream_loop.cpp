// perftest's bandwidth loop (run_iter_bw, and run_iter_bw_server for the receiving side of the send test): up to
// --tx-depth posts in flight per queue pair, one signaled completion every --cq-mod, each post and completion stamped
// with the TSC for perftest's formulas.
#include "fabricbench/runtime/mpi.hpp"
#include "fabricbench/timing/iteration_timer.hpp"
#include "verbs_link_impl.hpp"

namespace fabricbench::verbs {

void VerbsLink::Impl::stream(Verb verb, std::uint64_t bytes, int iterations, int tx_depth, int cq_mod, int inline_bytes,
                             bool sending, bool receiving, std::vector<double>* posted, std::vector<double>* completed,
                             double* seconds_per_tick) {
  const int n_qps = static_cast<int>(qps.size());
  const std::size_t total = static_cast<std::size_t>(iterations) * n_qps;
  std::vector<int> sent(n_qps, 0), done(n_qps, 0), received(n_qps, 0), receives_posted(n_qps, 0);
  std::vector<std::uint64_t> t_post, t_done;
  if (posted) {
    t_post.assign(total, 0);
    t_done.assign(total, 0);
  }
  if (receiving)
    for (int q = 0; q < n_qps; ++q)
      for (; receives_posted[q] < std::min(settings.rx_depth, iterations); ++receives_posted[q]) post_receive(q, bytes);
  // The sender must not send before the receiver has posted: a barrier (the RNR retries would work, slowly).
  if (verb == Verb::send) runtime::idle_barrier(comm);
  timing::IterationTimer timer(0);
  timer.start();
  std::size_t total_sent = 0, total_done = 0, total_received = 0;
  ibv_wc wc[poll_batch];
  while ((sending && total_done < total) || (receiving && total_received < total)) {
    if (sending)
      for (int q = 0; q < n_qps; ++q)
        while (sent[q] < iterations && sent[q] - done[q] < tx_depth) {
          const bool signaled = (sent[q] + 1) % cq_mod == 0 || sent[q] == iterations - 1;
          if (posted) t_post[total_sent] = timing::IterationTimer::ticks();
          post_one(q, verb, bytes, signaled, inline_bytes);
          ++sent[q];
          ++total_sent;
        }
    if (sending && total_done < total) {
      const int n = poll(send_cq, wc);
      for (int i = 0; i < n; ++i) {
        const int q = static_cast<int>(wc[i].wr_id);
        const int now_done = std::min(done[q] + cq_mod, iterations);
        total_done += static_cast<std::size_t>(now_done - done[q]);
        done[q] = now_done;
        if (posted) t_done[total_done - 1] = timing::IterationTimer::ticks();
      }
    }
    if (receiving && total_received < total) {
      const int n = poll(receive_cq, wc);
      for (int i = 0; i < n; ++i) {
        const int q = static_cast<int>(wc[i].wr_id);
        ++received[q];
        ++total_received;
        if (receives_posted[q] < iterations) {
          post_receive(q, bytes);
          ++receives_posted[q];
        }
      }
    }
  }
  timer.stop();
  if (posted) {
    const double scale = timer.seconds_per_tick();
    *seconds_per_tick = scale;
    posted->resize(total);
    completed->resize(total);
    for (std::size_t k = 0; k < total; ++k) {
      (*posted)[k] = static_cast<double>(t_post[k] - t_post[0]) * scale;
      (*completed)[k] = t_done[k] ? static_cast<double>(t_done[k] - t_post[0]) * scale : 0.0;
    }
  }
}

}  // namespace fabricbench::verbs
