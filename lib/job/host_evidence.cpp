#include "fabricbench/job/host_evidence.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cstring>

namespace fabricbench::job {
namespace {

// What one stretch of samples says: shares of its span, rates per second, the most unsent.
struct Stretch {
  std::size_t n = 0, looks = 0, stopped = 0;
  double span_s = 0, cpu_wait_s = 0, throttled_s = 0, faults = 0, unsent_max = 0;
};

// Samples in [from, to): counters from the first to the last (their growth), per-sample values over all.
Stretch stretch_of(const std::deque<slow::HostSample>& d, std::int64_t from, std::int64_t to) {
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

void HostEvidence::add(const std::string& host, const slow::NicSample& n) {
  const std::string name(n.device, strnlen(n.device, sizeof n.device));
  nics_[{host, fmt::format("{} port {}", name, n.port)}].push_back(n);
}

// Each of the host's ports over [from, to] against the minute before: errors or a link down where there were none,
// a port not active, a rate below the best port's of every host, transmit waits (congestion) 5x as often.
bool HostEvidence::nic_causes(const std::string& host, std::int64_t from_ns, std::int64_t to_ns,
                              std::int64_t before_end, std::vector<HostCause>& out) const {
  bool sampled = false;
  double best_mbps = 0;
  for (const auto& [key, d] : nics_)
    if (!d.empty() && d.back().active) best_mbps = std::max(best_mbps, static_cast<double>(d.back().rate_mbps));
  const auto before_ns = before_end - static_cast<std::int64_t>(kBeforeS * 1e9);
  for (auto it = nics_.lower_bound({host, ""}); it != nics_.end() && it->first.first == host; ++it) {
    const auto& name = it->first.second;
    const slow::NicSample *first = nullptr, *last = nullptr, *b_first = nullptr, *b_last = nullptr;
    bool inactive = false;
    for (const auto& n : it->second) {
      if (n.host_ns >= before_ns && n.host_ns < before_end) {
        if (!b_first) b_first = &n;
        b_last = &n;
      }
      if (n.host_ns < from_ns || n.host_ns > to_ns) continue;
      if (!first) first = &n;
      last = &n;
      inactive |= !n.active;
    }
    if (!first) continue;
    sampled = true;
    const auto grew = [](const slow::NicSample* a, const slow::NicSample* b, auto field) {
      return a && b && b->*field >= a->*field ? static_cast<double>(b->*field - a->*field) : 0.0;
    };
    const double errors = grew(first, last, &slow::NicSample::errors);
    const double errors_b = grew(b_first, b_last, &slow::NicSample::errors);
    const double downed = grew(first, last, &slow::NicSample::link_downed);
    if (inactive) out.push_back({"nic", 1, 0, 5, fmt::format("its host's {} is not active", name)});
    if (downed > 0)
      out.push_back({"nic", downed, 0, 5, fmt::format("its host's {} went down {:.0f} time(s)", name, downed)});
    if (errors > 0 && errors > 4 * errors_b)
      out.push_back(
          {"nic", errors, errors_b, 3,
           fmt::format("its host's {}: {:.0f} port errors ({:.0f} the minute before)", name, errors, errors_b)});
    if (!inactive && best_mbps > 0 && last->rate_mbps < 0.75 * best_mbps)
      out.push_back({"nic", last->rate_mbps / 1e3, best_mbps / 1e3, best_mbps / std::max(1.0, 1.0 * last->rate_mbps),
                     fmt::format("its host's {} runs at {:.0f} of {:.0f} Gb/s (the best port's)", name,
                                 last->rate_mbps / 1e3, best_mbps / 1e3)});
    const double span = static_cast<double>(last->host_ns - first->host_ns) * 1e-9;
    const double span_b = b_first && b_last ? static_cast<double>(b_last->host_ns - b_first->host_ns) * 1e-9 : 0;
    const double wait = span > 0 ? grew(first, last, &slow::NicSample::xmit_wait) / span : 0;
    const double wait_b = span_b > 0 ? grew(b_first, b_last, &slow::NicSample::xmit_wait) / span_b : 0;
    if (wait_b > 0 && wait >= 5 * wait_b)
      out.push_back({"nic", wait, wait_b, wait / wait_b / 5,
                     fmt::format("its host's {} waited to send {:.0f}x as often as the minute before (xmit_wait)", name,
                                 wait / wait_b)});
  }
  return sampled;
}

void HostEvidence::forget_before(std::int64_t t_ns) {
  const auto forget = [t_ns](auto& by_key) {
    for (auto it = by_key.begin(); it != by_key.end();) {
      while (!it->second.empty() && it->second.front().host_ns < t_ns) it->second.pop_front();
      it = it->second.empty() ? by_key.erase(it) : std::next(it);
    }
  };
  forget(samples_);
  forget(nics_);
}

std::vector<HostCause> HostEvidence::causes(const std::string& host, int pid, std::int64_t from_ns, std::int64_t to_ns,
                                            bool& sampled, std::int64_t before_ns) const {
  if (before_ns == 0) before_ns = from_ns;
  sampled = false;
  std::vector<HostCause> out;
  const bool ports = nic_causes(host, from_ns, to_ns, before_ns, out);
  const auto by_strength = [&] {
    std::sort(out.begin(), out.end(), [](const HostCause& a, const HostCause& b) { return a.strength > b.strength; });
    return out;
  };
  const auto it = samples_.find({host, pid});
  if (it == samples_.end()) {
    sampled = ports;  // (its host's ports were sampled)
    return by_strength();
  }
  const auto now = stretch_of(it->second, from_ns, to_ns + 1);
  const auto before = stretch_of(it->second, before_ns - static_cast<std::int64_t>(kBeforeS * 1e9), before_ns);
  sampled = ports || now.n > 0;
  if (now.n < 2 || now.span_s <= 0) return by_strength();
  const auto share = [](double part, double of) { return of > 0 ? std::min(1.0, part / of) : 0.0; };
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
  return by_strength();
}

std::string HostEvidence::because(const std::string& host, int pid, std::int64_t from_ns, std::int64_t to_ns,
                                  std::int64_t before_ns) const {
  bool sampled = false;
  const auto c = causes(host, pid, from_ns, to_ns, sampled, before_ns);
  if (!sampled) return "";
  if (c.empty()) return "no evidence on its host";
  return "because: " + c[0].words + (c.size() > 1 ? "; " + c[1].words : "");
}

}  // namespace fabricbench::job
