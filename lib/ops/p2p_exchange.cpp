#include "fabricbench/ops/p2p_exchange.hpp"

#include <algorithm>
#include <chrono>
#include <thread>
#include <vector>

namespace fabricbench::ops {
namespace {

constexpr int data_tag = 1;
constexpr int ack_tag = 2;
constexpr int plan_tag = 3;
constexpr int step_times_tag = 4;

using runtime::check_mpi;
inline void check(int rc, const char* what) { check_mpi(rc, what); }

// Seconds from `t0` until this rank's sends of one step (req[window, 2 window)) and its receives (req[0, window))
// had all completed. Both sets are waited for together, so each end is read when it happens: a rank that waited for
// its sends first would read its receives no earlier than its own sends, and tie the pair it receives from to the
// link it sends on. `done`: room for 2 x window indices (allocated outside the timed step).
struct StepEnds {
  double sent_s = 0, received_s = 0;
};
StepEnds wait_step_ends(MPI_Request* req, int window, int* done, std::chrono::steady_clock::time_point t0) {
  StepEnds ends;
  int receives_left = window, sends_left = window;
  while (receives_left + sends_left > 0) {
    int n = 0;
    check(MPI_Waitsome(2 * window, req, &n, done, MPI_STATUSES_IGNORE), "MPI_Waitsome");
    const double now_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    for (int k = 0; k < n; ++k) {
      const bool receive = done[k] < window;
      if (--(receive ? receives_left : sends_left) == 0) (receive ? ends.received_s : ends.sent_s) = now_s;
    }
  }
  return ends;
}

// The bidirectional window's posts: `window` receives from `from` into req[0, window) and `window` sends to `peer`
// into req[window, 2 window).
struct WindowPosts {
  void* sbuf;
  void* rbuf;
  int count;
  MPI_Datatype type;
  int peer, from;
  MPI_Comm comm;
  MPI_Request* req;
  int window;
  void receives() const {
    for (int w = 0; w < window; ++w) check(MPI_Irecv(rbuf, count, type, from, data_tag, comm, &req[w]), "MPI_Irecv");
  }
  void sends() const {
    for (int w = 0; w < window; ++w)
      check(MPI_Isend(sbuf, count, type, peer, data_tag, comm, &req[window + w]), "MPI_Isend");
  }
  void both() const {
    receives();
    sends();
  }
};

// mpiGraph's steps (the shift pattern): `iterations` steps, each after two barriers, its receives and sends posted at
// once; each step's time goes to m.laps_us and their sum to `blocks`. `late_receives_s` > 0 (a test hook): the
// receives are posted that long after the sends, as by a receiver that falls behind the bytes sent to it.
void mpigraph_steps(const WindowPosts& posts, double late_receives_s, int warmup, int iterations, PairMeasurement& m,
                    timing::TimedBlocks& blocks) {
  const auto comm = posts.comm;
  const int window = posts.window;
  check(MPI_Barrier(comm), "MPI_Barrier");
  for (int i = 0; i < warmup; ++i) {
    posts.both();
    check(MPI_Waitall(2 * window, posts.req, MPI_STATUSES_IGNORE), "MPI_Waitall");
  }
  std::vector<double> sent_s(static_cast<std::size_t>(iterations)), received_s(sent_s.size());
  std::vector<int> done(static_cast<std::size_t>(2 * window));
  for (std::size_t i = 0; i < sent_s.size(); ++i) {
    check(MPI_Barrier(comm), "MPI_Barrier");
    check(MPI_Barrier(comm), "MPI_Barrier");
    const auto t0 = std::chrono::steady_clock::now();
    if (late_receives_s > 0) {
      posts.sends();
      std::this_thread::sleep_for(std::chrono::duration<double>(late_receives_s));
      posts.receives();
    } else {
      posts.both();
    }
    const auto ends = wait_step_ends(posts.req, window, done.data(), t0);
    sent_s[i] = ends.sent_s, received_s[i] = ends.received_s;
  }
  // A send completes once the kernel holds its bytes: a window that fits the socket buffers would be timed at memory
  // speed whatever the link does. The bytes to `peer` arrived when its receives of them completed, so every rank hands
  // its receive times to the rank it received from, and a step to `peer` lasts the later of the two ends (each end's
  // clock starts at its own first post, after the same barriers).
  std::vector<double> peer_received_s(sent_s.size());
  check(MPI_Sendrecv(received_s.data(), iterations, MPI_DOUBLE, posts.from, step_times_tag, peer_received_s.data(),
                     iterations, MPI_DOUBLE, posts.peer, step_times_tag, comm, MPI_STATUS_IGNORE),
        "MPI_Sendrecv");
  double steps_s = 0;
  for (std::size_t i = 0; i < sent_s.size(); ++i) {
    const double step_s = std::max(sent_s[i], peer_received_s[i]);
    steps_s += step_s;
    m.laps_us.push_back(step_s * 1e6);
  }
  blocks.add(steps_s);
}

}  // namespace

memory::FillPattern exchange_pattern(int sender, std::uint64_t bytes) {
  return {static_cast<std::uint32_t>(bytes * 2654435761u) ^ static_cast<std::uint32_t>(sender * 40503u + 1)};
}

std::uint64_t check_received(const Exchanger& x, int sender) {
  if (!x.check) return 0;
  if (x.flip_byte && x.bytes > 0) {
    std::uint8_t b = 0;
    x.recv.copy_to_host(&b, 1);
    b ^= 0xff;
    x.recv.copy_from_host(&b, 1);
  }
  return exchange_pattern(sender, x.bytes).count_wrong(x.recv, x.bytes);
}

PairTimer::PairTimer(MPI_Comm comm, bool leader, int iterations, int warmup, double min_time_s)
    : comm_(comm),
      leader_(leader),
      iterations_(iterations),
      warmup_(warmup),
      timer_(static_cast<std::size_t>(iterations)),
      blocks_(min_time_s) {}

void PairTimer::barrier() const { check(MPI_Barrier(comm_), "MPI_Barrier"); }

void PairTimer::end_block() {
  blocks_.add(timer_.elapsed_s());
  if (leader_) {
    const auto laps = timer_.laps_us();
    laps_us_.insert(laps_us_.end(), laps.begin(), laps.end());
  }
  if (blocks_.deciding()) {
    double first = timer_.elapsed_s();
    check(MPI_Bcast(&first, 1, MPI_DOUBLE, 0, comm_), "MPI_Bcast");
    blocks_.decide(first);
  }
}

void PairTimer::finish(PairMeasurement& m) const {
  m.blocks = blocks_.blocks();
  if (!leader_) return;
  m.laps_us.insert(m.laps_us.end(), laps_us_.begin(), laps_us_.end());
  m.elapsed_s = blocks_.median();
  m.spread = blocks_.spread();
}

ExchangePlan ExchangePlan::fit(double message_s, int iterations, int warmup, int window, double budget_s) {
  const double iteration_s = message_s * window;
  if (budget_s <= 0 || iteration_s * (iterations + warmup) <= budget_s) return {iterations, warmup, window, false};
  const auto whole = [&](double n) { return n >= 1e9 ? 1000000000 : static_cast<int>(n); };
  if (iteration_s > budget_s)  // not even one window: one iteration of the messages that fit
    return {1, 0, std::max(1, std::min(window, whole(budget_s / message_s))), true};
  const int fitting = whole(budget_s / iteration_s);      // >= 1 whole iterations fit, warm-ups included
  const int kept_warmup = std::min(warmup, fitting / 5);  // warm-ups take at most a fifth of the budget
  return {std::max(1, std::min(iterations, fitting - kept_warmup)), kept_warmup, window, true};
}

double probe_message_s(const P2PTest& test, const Exchanger& x) {
  const runtime::ByteMessage message(x.bytes);
  const int peer = x.peer, count = message.count();
  const MPI_Datatype type = message.type();
  void* const sbuf = x.send.data();
  void* const rbuf = x.recv.data();
  char byte = 0, ack = 0;
  // One byte each way first: connection setup (Open MPI's TCP connects lazily) is not the link's speed.
  check(MPI_Sendrecv(&byte, 1, MPI_BYTE, peer, plan_tag, &ack, 1, MPI_BYTE, peer, plan_tag, x.comm, MPI_STATUS_IGNORE),
        "MPI_Sendrecv");
  double seconds = 0;
  if (test.exchange == Exchange::ping_pong) {
    for (int probe = 0; probe < 2; ++probe) {
      const auto t0 = std::chrono::steady_clock::now();
      if (x.leader) {
        check(MPI_Send(sbuf, count, type, peer, data_tag, x.comm), "MPI_Send");
        check(MPI_Recv(rbuf, count, type, peer, data_tag, x.comm, MPI_STATUS_IGNORE), "MPI_Recv");
      } else {
        check(MPI_Recv(rbuf, count, type, peer, data_tag, x.comm, MPI_STATUS_IGNORE), "MPI_Recv");
        check(MPI_Send(sbuf, count, type, peer, data_tag, x.comm), "MPI_Send");
      }
      const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
      seconds = probe == 0 ? s : std::min(seconds, s);
    }
  } else {
    // A few messages in flight, as the window keeps them: one message alone would miss the pipelining and make a
    // fast link look slow.
    const int k = std::min(x.window, 4);
    std::vector<MPI_Request> req(static_cast<std::size_t>(2 * k));
    const auto t0 = std::chrono::steady_clock::now();
    if (test.exchange == Exchange::bidirectional_window) {
      for (int i = 0; i < k; ++i) check(MPI_Irecv(rbuf, count, type, peer, data_tag, x.comm, &req[i]), "MPI_Irecv");
      for (int i = 0; i < k; ++i) check(MPI_Isend(sbuf, count, type, peer, data_tag, x.comm, &req[k + i]), "MPI_Isend");
      check(MPI_Waitall(2 * k, req.data(), MPI_STATUSES_IGNORE), "MPI_Waitall");
    } else if (x.leader) {
      for (int i = 0; i < k; ++i) check(MPI_Isend(sbuf, count, type, peer, data_tag, x.comm, &req[i]), "MPI_Isend");
      check(MPI_Waitall(k, req.data(), MPI_STATUSES_IGNORE), "MPI_Waitall");
      check(MPI_Recv(&ack, 1, MPI_BYTE, peer, ack_tag, x.comm, MPI_STATUS_IGNORE), "MPI_Recv");
    } else {
      for (int i = 0; i < k; ++i) check(MPI_Irecv(rbuf, count, type, peer, data_tag, x.comm, &req[i]), "MPI_Irecv");
      check(MPI_Waitall(k, req.data(), MPI_STATUSES_IGNORE), "MPI_Waitall");
      check(MPI_Send(&ack, 1, MPI_BYTE, peer, ack_tag, x.comm), "MPI_Send");
    }
    seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count() / k;
  }
  // Both ends plan with the leader's figure.
  double theirs = seconds;
  check(MPI_Sendrecv(&seconds, 1, MPI_DOUBLE, peer, plan_tag, &theirs, 1, MPI_DOUBLE, peer, plan_tag, x.comm,
                     MPI_STATUS_IGNORE),
        "MPI_Sendrecv");
  return x.leader ? seconds : theirs;
}

PairMeasurement run_exchange(const P2PTest& test, const Exchanger& x) {
  // mpiGraph's steps take `from` as given: MPI_PROC_NULL (there, as `peer` too) is a rank that receives (sends)
  // nothing.
  const int me = x.me, peer = x.peer, from = x.mpigraph_steps || x.from >= 0 ? x.from : x.peer;
  const bool leader = x.leader;
  const MPI_Comm comm = x.comm;
  const std::uint64_t bytes = x.bytes;
  // Messages of 2 GiB and more go whole, as one derived datatype (runtime::ByteMessage), not cut to an int.
  const runtime::ByteMessage message(bytes);
  const int count = message.count();
  const MPI_Datatype type = message.type();
  void* const sbuf = x.send.data();
  void* const rbuf = x.recv.data();
  const bool windowed = test.exchange != Exchange::ping_pong;
  exchange_pattern(me, bytes).fill(x.send, bytes);
  const auto plan = x.budget_s > 0 && x.from < 0
                        ? ExchangePlan::fit(x.probe_s > 0 ? x.probe_s : probe_message_s(test, x), x.iterations,
                                            x.warmup, windowed ? x.window : 1, x.budget_s)
                        : ExchangePlan{x.iterations, x.warmup, windowed ? x.window : 1, false};
  const int iterations = plan.iterations, warmup = plan.warmup;
  PairMeasurement m;
  m.iterations = iterations;
  m.warmup = warmup;
  m.window = plan.window;
  m.cut = plan.cut;
  // The data a rank receives: both directions for ping-pong and bibw, leader -> follower for window.
  const bool receives = test.exchange != Exchange::window || !leader;
  if (receives) memory::clear(x.recv, bytes);

  PairTimer pair_timer(comm, leader, iterations, warmup, x.budget_s > 0 ? 0.0 : x.min_time_s);
  timing::TimedBlocks& blocks = pair_timer.blocks();
  // The exchange is chosen once, outside the timed loop: each case hands its own step to the same loop.
  const auto timed = [&](auto&& step) { pair_timer.run(step); };
  std::vector<MPI_Request> requests(static_cast<std::size_t>(2 * plan.window));
  MPI_Request* const req = requests.data();
  const int window = plan.window;
  char ack = 0;
  switch (test.exchange) {
    case Exchange::ping_pong:
      if (leader)
        timed([&] {
          check(MPI_Send(sbuf, count, type, peer, data_tag, comm), "MPI_Send");
          check(MPI_Recv(rbuf, count, type, peer, data_tag, comm, MPI_STATUS_IGNORE), "MPI_Recv");
        });
      else
        timed([&] {
          check(MPI_Recv(rbuf, count, type, peer, data_tag, comm, MPI_STATUS_IGNORE), "MPI_Recv");
          check(MPI_Send(sbuf, count, type, peer, data_tag, comm), "MPI_Send");
        });
      break;
    case Exchange::window:
      if (leader)
        timed([&] {
          for (int w = 0; w < window; ++w)
            check(MPI_Isend(sbuf, count, type, peer, data_tag, comm, &req[w]), "MPI_Isend");
          check(MPI_Waitall(window, req, MPI_STATUSES_IGNORE), "MPI_Waitall");
          check(MPI_Recv(&ack, 1, MPI_BYTE, peer, ack_tag, comm, MPI_STATUS_IGNORE), "MPI_Recv");
        });
      else
        timed([&] {
          for (int w = 0; w < window; ++w)
            check(MPI_Irecv(rbuf, count, type, peer, data_tag, comm, &req[w]), "MPI_Irecv");
          check(MPI_Waitall(window, req, MPI_STATUSES_IGNORE), "MPI_Waitall");
          check(MPI_Send(&ack, 1, MPI_BYTE, peer, ack_tag, comm), "MPI_Send");
        });
      break;
    case Exchange::bidirectional_window: {
      const WindowPosts posts{sbuf, rbuf, count, type, peer, from, comm, req, window};
      if (x.mpigraph_steps) {
        mpigraph_steps(posts, x.late_receives_s, warmup, iterations, m, blocks);
      } else {
        timed([&] {
          posts.both();
          check(MPI_Waitall(2 * window, req, MPI_STATUSES_IGNORE), "MPI_Waitall");
        });
      }
      break;
    }
  }
  pair_timer.finish(m);
  if (receives && from != MPI_PROC_NULL) m.wrong = check_received(x, from);
  return m;
}

}  // namespace fabricbench::ops
