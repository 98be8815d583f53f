#include "fabricbench/runtime/watchdog.hpp"

#include <fmt/format.h>
#include <unistd.h>

#include <atomic>
#include <csignal>
#include <cstring>

#include "fabricbench/runtime/temp_dir.hpp"

namespace fabricbench::runtime {
namespace {

// A signal handler can only publish to lock-free state; the watchdog thread polls it.
std::atomic<int> g_signal{0};
extern "C" void record_signal(int sig) { g_signal.store(sig); }

constexpr auto poll_interval = std::chrono::milliseconds(50);

}  // namespace

Watchdog::Watchdog(std::function<void(const std::string&)> on_failure, std::function<void()> on_tick)
    : on_failure_(std::move(on_failure)), on_tick_(std::move(on_tick)) {
  struct sigaction sa {};
  sa.sa_handler = record_signal;
  sigemptyset(&sa.sa_mask);
  for (int sig : {SIGTERM, SIGINT, SIGHUP, SIGUSR1}) sigaction(sig, &sa, nullptr);
  thread_ = std::thread([this] { watch(); });
}

Watchdog::~Watchdog() {
  {
    std::lock_guard lock(mutex_);
    stop_ = true;
  }
  wake_.notify_all();
  thread_.join();
}

void Watchdog::arm(double seconds, std::string what) {
  std::lock_guard lock(mutex_);
  armed_ = true;
  seconds_ = seconds;
  what_ = std::move(what);
  deadline_ = std::chrono::steady_clock::now() +
              std::chrono::duration_cast<std::chrono::steady_clock::duration>(std::chrono::duration<double>(seconds));
}

void Watchdog::disarm() {
  std::lock_guard lock(mutex_);
  armed_ = false;
}

void Watchdog::stop_after_signal() {
  std::lock_guard lock(mutex_);
  stop_after_signal_ = true;
}

void Watchdog::watch() {
  std::unique_lock lock(mutex_);
  while (!stop_) {
    wake_.wait_for(lock, poll_interval);
    std::string reason;
    if (int sig = g_signal.load(); sig && stop_after_signal_ && !stop_requested_.load()) {
      g_signal.compare_exchange_strong(sig, 0);  // the first one: a request, seen at the tool's next clean point
      stop_requested_.store(true);
      continue;
    } else if (sig) {
      reason = fmt::format("terminated by signal {} ({})", sig, strsignal(sig));
      if (armed_) reason += " during " + what_;
    } else if (armed_ && seconds_ > 0 && std::chrono::steady_clock::now() > deadline_) {
      reason = fmt::format("timeout: {} did not finish within {} s", what_, seconds_);
    } else {
      if (on_tick_) {
        lock.unlock();
        on_tick_();
        lock.lock();
      }
      continue;
    }
    lock.unlock();
    // First: no destructor runs after _exit, and a rank still in on_failure (answering rank 0's request for its
    // record) is killed by mpirun once another rank exited. Nothing of the failure's record is in these folders.
    TempDir::remove_all_alive();
    on_failure_(reason);
    _exit(3);
  }
}

}  // namespace fabricbench::runtime
