#include "fabricbench/job/host_evidence.hpp"

#include <fmt/format.h>

#include <algorithm>

namespace fabricbench::job {
namespace {

// What one stretch of samples says: shares of its span, rates per second, the most unsent.
struct Stretch {
  std::size_t n = 0, looks = 0, stopped = 0;
  double span_s = 0, cpu_wait_s = 0, throttled_s = 0, faults = 0, unsent_max = 0;
};

// Samples in [from, to): counters from the first to the last (their growth), per-sample values over all.
Stretch read(const std::deque<slow::HostSample>& d, std::int64_t from, std::int64_t to) {
  Stretch s;
  const slow::HostSample* first = nullptr;
  const slow::HostSample* last = nullptr;
  for (const auto& x : d) {
    if (x.host_ns < from || x.host_ns >= to) continue;
    ++s.n;
    // Its state's looks within the second (the sampler's ten), else the sample's own.
    s.looks += x.polls ? x.polls : 1;
    s.stopped += x.polls ? x.stopped_polls : (x.state == 'T' || x.state == 't');
    s.unsent_max = std::max(s.unsent_max, static_cast<double>(x.tcp_unsent));
    if (first) s.cpu_wait_s += static_cast<double>(x.busiest_wait_ns) * 1e-9;  // (the first's is the time before)
    if (!first) first = &x;
    last = &x;
  }
  if (!first || first == last) return s;
  s.span_s = static_cast<double>(last->host_ns - first->host_ns) * 1e-9;
  if (last->throttled_us >= first->throttled_us)
    s.throttled_s = static_cast<double>(last->throttled_us - first->throttled_us) * 1e-6;
  if (last->majflt >= first->majflt) s.faults = last->majflt - first->majflt;
  return s;
}

std::string percent(double share) { return fmt::format("{:.0f}%", 100 * share); }
std::string megabytes(double bytes) { return fmt::format("{:.1f} MB", bytes / 1e6); }

}  // namespace

void HostEvidence::add(const std::string& host, const slow::HostSample& s) { samples_[{host, s.pid}].push_back(s); }

void HostEvidence::forget_before(std::int64_t t_ns) {
  for (auto it = samples_.begin(); it != samples_.end();) {
    while (!it->second.empty() && it->second.front().host_ns < t_ns) it->second.pop_front();
    it = it->second.empty() ? samples_.erase(it) : std::next(it);
  }
}

std::vector<HostCause> HostEvidence::causes(const std::string& host, int pid, std::int64_t from_ns, std::int64_t to_ns,
                                            bool& sampled) const {
  sampled = false;
  const auto it = samples_.find({host, pid});
  if (it == samples_.end()) return {};
  const auto now = read(it->second, from_ns, to_ns + 1);
  const auto before = read(it->second, from_ns - static_cast<std::int64_t>(kBeforeS * 1e9), from_ns);
  sampled = now.n > 0;
  if (now.n < 2 || now.span_s <= 0) return {};
  const auto share = [](double part, double of) { return of > 0 ? std::min(1.0, part / of) : 0.0; };
  std::vector<HostCause> out;
  // A cause passes its floor and stands at least `factor` times above before (a host that always waits is said
  // too when it had no before: the naming may be at the job's start).
  const auto add = [&](const char* kind, double n, double b, double floor, double factor, std::string words) {
    if (n >= floor && (before.n < 2 || n >= factor * b)) out.push_back({kind, n, b, n / floor, std::move(words)});
  };
  const double stopped = share(static_cast<double>(now.stopped), static_cast<double>(now.looks));
  const double stopped_b = share(static_cast<double>(before.stopped), static_cast<double>(before.looks));
  add("stopped", stopped, stopped_b, 0.1, 2,
      fmt::format("its process was found stopped at {} of the looks ({} before)", percent(stopped),
                  percent(stopped_b)));
  const double wait = share(now.cpu_wait_s, now.span_s), wait_b = share(before.cpu_wait_s, before.span_s);
  add("cpu_wait", wait, wait_b, 0.1, 3,
      fmt::format("its busiest thread waited for a CPU {} of the time ({} before)", percent(wait), percent(wait_b)));
  const double thr = share(now.throttled_s, now.span_s), thr_b = share(before.throttled_s, before.span_s);
  add("throttled", thr, thr_b, 0.05, 3,
      fmt::format("its cgroup's CPU quota throttled it {} of the time ({} before)", percent(thr), percent(thr_b)));
  const double faults = now.faults / now.span_s, faults_b = before.span_s > 0 ? before.faults / before.span_s : 0;
  add("faults", faults, faults_b, 10, 5,
      fmt::format("{:.0f} major page faults a second ({:.0f} before): it pages", faults, faults_b));
  add("unsent", now.unsent_max, before.unsent_max, 1e6, 4,
      fmt::format("its sockets held up to {} unsent ({} before)", megabytes(now.unsent_max),
                  megabytes(before.unsent_max)));
  std::sort(out.begin(), out.end(), [](const HostCause& a, const HostCause& b) { return a.strength > b.strength; });
  return out;
}

std::string HostEvidence::because(const std::string& host, int pid, std::int64_t from_ns, std::int64_t to_ns) const {
  bool sampled = false;
  const auto c = causes(host, pid, from_ns, to_ns, sampled);
  if (!sampled) return "";
  if (c.empty()) return "no evidence on its host";
  return "because: " + c[0].words + (c.size() > 1 ? "; " + c[1].words : "");
}

}  // namespace fabricbench::job
