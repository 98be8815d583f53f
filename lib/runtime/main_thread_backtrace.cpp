#include "fabricbench/runtime/main_thread_backtrace.hpp"

#include <cxxabi.h>
#include <execinfo.h>
#include <pthread.h>

#include <atomic>
#include <csignal>
#include <cstdlib>
#include <memory>
#include <thread>

namespace fabricbench::runtime {
namespace {

// The main thread's frames, written by the SIGUSR2 handler (backtrace() only: no allocation after the warm-up).
constexpr int max_frames = 64;
void* g_frames[max_frames];
std::atomic<int> g_frame_count{0};
std::atomic<bool> g_frames_ready{false};
pthread_t g_main_thread;
std::atomic<bool> g_installed{false};

extern "C" void take_backtrace(int) {
  g_frame_count.store(backtrace(g_frames, max_frames));
  g_frames_ready.store(true);
}

// "module(mangled+0x1f) [0x...]" -> "module(demangled+0x1f)".
std::string readable(const char* frame) {
  std::string text(frame);
  const auto open = text.find('('), plus = text.find('+', open == std::string::npos ? 0 : open);
  if (open == std::string::npos || plus == std::string::npos || plus <= open + 1) return text;
  const std::string mangled = text.substr(open + 1, plus - open - 1);
  int status = 0;
  std::unique_ptr<char, void (*)(void*)> name(abi::__cxa_demangle(mangled.c_str(), nullptr, nullptr, &status),
                                              std::free);
  if (status != 0 || !name) return text;
  std::string shortened = name.get();
  if (const auto paren = shortened.find('('); paren != std::string::npos) shortened = shortened.substr(0, paren);
  return text.substr(0, open + 1) + shortened + text.substr(plus, text.find(')', plus) - plus + 1);
}

}  // namespace

void MainThreadBacktrace::install() {
  g_main_thread = pthread_self();
  void* warm[2];
  backtrace(warm, 2);  // loads the unwinder now, so the handler does not allocate later
  struct sigaction sa {};
  sa.sa_handler = take_backtrace;
  sa.sa_flags = SA_RESTART;
  sigemptyset(&sa.sa_mask);
  sigaction(SIGUSR2, &sa, nullptr);
  g_installed.store(true);
}

std::vector<std::string> MainThreadBacktrace::capture(std::chrono::milliseconds wait) {
  if (!g_installed.load() || pthread_equal(pthread_self(), g_main_thread)) return {};
  g_frames_ready.store(false);
  if (pthread_kill(g_main_thread, SIGUSR2) != 0) return {};
  const auto deadline = std::chrono::steady_clock::now() + wait;
  while (!g_frames_ready.load() && std::chrono::steady_clock::now() < deadline)
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  if (!g_frames_ready.load()) return {};
  const int n = g_frame_count.load();
  std::vector<std::string> frames;
  char** symbols = backtrace_symbols(g_frames, n);
  // Frames 0 and 1 are the handler and the signal trampoline.
  for (int i = 2; symbols && i < n; ++i) frames.push_back(readable(symbols[i]));
  std::free(symbols);
  return frames;
}

}  // namespace fabricbench::runtime
