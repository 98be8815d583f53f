#include "fabricbench/job/host_evidence.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cstring>

namespace fabricbench::job {
namespace {

// What one stretch of samples says: shares of its span, rates per second, how often and how much it held unsent.
struct Stretch {
  std::size_t n = 0, looks = 0, stopped = 0;
  double span_s = 0, cpu_wait_s = 0, throttled_s = 0, faults = 0, cpu_pressure_s = 0, mem_pressure_s = 0,
         retransmits = 0;      // the samples' shares retransmitted, summed (per 100,000)
  std::vector<double> unsent;  // bytes, at each sample
  std::uint32_t uverbs = 0;    // the RDMA devices it held open at the last sample
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
    s.unsent.push_back(static_cast<double>(x.tcp_unsent));
    if (first) {  // (the first's counts are of the time before it)
      s.cpu_wait_s += static_cast<double>(x.busiest_wait_ns) * 1e-9;
      s.retransmits += x.retransmits;
    }
    if (!first) first = &x;
    last = &x;
  }
  if (last) s.uverbs = last->uverbs;
  if (!first || first == last) return s;
  s.span_s = static_cast<double>(last->host_ns - first->host_ns) * 1e-9;
  // PSI totals in ms on 32 bits: their difference is right across one wrap (49 days).
  s.cpu_pressure_s = static_cast<std::uint32_t>(last->cpu_pressure_ms - first->cpu_pressure_ms) * 1e-3;
  s.mem_pressure_s = static_cast<std::uint32_t>(last->mem_pressure_ms - first->mem_pressure_ms) * 1e-3;
  if (last->throttled_us >= first->throttled_us)
    s.throttled_s = static_cast<double>(last->throttled_us - first->throttled_us) * 1e-6;
  if (last->majflt >= first->majflt) s.faults = last->majflt - first->majflt;
  return s;
}


// `part` of `of`, at most all of it.
double part(double part, double of) { return of > 0 ? std::min(1.0, part / of) : 0.0; }
std::string percent(double share) { return fmt::format("{:.0f}%", 100 * share); }
std::string megabytes(double bytes) { return fmt::format("{:.1f} MB", bytes / 1e6); }

// What holds a GPU's clock down, in the words nvidia-smi -q uses.
std::string held_by(std::uint64_t reasons) {
  static constexpr std::pair<std::uint64_t, const char*> kWords[] = {
      {slow::kReasonPowerCap, "the power cap"},        {slow::kReasonHwSlowdown, "HW slowdown"},
      {slow::kReasonHwThermal, "HW thermal slowdown"}, {slow::kReasonSwThermal, "SW thermal slowdown"},
      {slow::kReasonPowerBrake, "the power brake"},    {slow::kReasonSyncBoost, "sync boost"}};
  std::string out;
  for (const auto& [bit, words] : kWords)
    if (reasons & bit) out += (out.empty() ? "" : ", ") + std::string(words);
  return out;
}
constexpr std::uint64_t kHolding = slow::kReasonPowerCap | slow::kReasonHwSlowdown | slow::kReasonHwThermal |
                                   slow::kReasonSwThermal | slow::kReasonPowerBrake | slow::kReasonSyncBoost;
bool held(const slow::GpuSample& g) {
  return (g.reasons & kHolding) && g.sm_max_mhz > 0 && g.sm_mhz < 0.85 * g.sm_max_mhz;
}

}  // namespace

void HostEvidence::add(const SlowSource& sampler, const slow::Record& r) {
  if (sampler.version < slow::kSamplerVersion) return;  // an older layout of the samples
  if (slow::is_host_sample(r)) add(sampler.host, slow::record_as<slow::HostSample>(r));
  if (slow::is_nic_sample(r)) add(sampler.host, slow::record_as<slow::NicSample>(r));
  if (slow::is_gpu_sample(r)) add(sampler.host, slow::record_as<slow::GpuSample>(r));
  if (slow::is_gpu_process(r)) add(sampler.host, slow::record_as<slow::GpuProcess>(r), sampler.boot_id);
}

void HostEvidence::add(const std::string& host, const slow::HostSample& s) { samples_[{host, s.pid}].push_back(s); }

void HostEvidence::add(const std::string& host, const slow::GpuSample& g) { gpus_[{host, g.pci}].push_back(g); }

void HostEvidence::add(const std::string& host, const slow::GpuProcess& p, const std::string& boot_id) {
  if (p.own) return;  // one of its host's ranks
  if (!boot_id.empty()) boot_of_[host] = boot_id;
  gpu_processes_[{host, p.pci}].push_back(p);
}

void HostEvidence::add(const std::string& host, const slow::NicSample& n) {
  const std::string name(n.device, strnlen(n.device, sizeof n.device));
  nics_[{host, fmt::format("{} port {}", name, n.port)}].push_back(n);
}

// Each of the host's ports over [from, to] against the minute before: errors or a link down where there were none,
// a port not active, a rate below the best port's of every host, transmit waits (congestion) 5x as often.
bool HostEvidence::nic_causes(const std::string& host, std::uint32_t uverbs, std::int64_t from_ns, std::int64_t to_ns,
                              std::int64_t before_end, std::vector<HostCause>& out) const {
  bool sampled = false;
  double best_mbps = 0;
  for (const auto& [key, d] : nics_)
    if (!d.empty() && d.back().active) best_mbps = std::max(best_mbps, static_cast<double>(d.back().rate_mbps));
  const auto before_ns = before_end - static_cast<std::int64_t>(kBeforeS * 1e9);
  for (auto it = nics_.lower_bound({host, ""}); it != nics_.end() && it->first.first == host; ++it) {
    // A rank that holds RDMA devices open uses those ports alone; one that holds none (sockets), any of its host's.
    const int index = it->second.empty() ? -1 : it->second.back().uverbs;
    const bool its_own = uverbs != 0 && index >= 0 && index < 32;
    if (its_own && !(uverbs & (1u << index))) continue;
    const auto name = (its_own ? "" : "host's ") + it->first.second;
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
    if (inactive) out.push_back({"nic", 1, 0, 5, fmt::format("its {} is not active", name)});
    if (downed > 0) out.push_back({"nic", downed, 0, 5, fmt::format("its {} went down {:.0f} time(s)", name, downed)});
    if (errors > 0 && errors > 4 * errors_b)
      out.push_back({"nic", errors, errors_b, 3,
                     fmt::format("its {}: {:.0f} port errors ({:.0f} the minute before)", name, errors, errors_b)});
    if (!inactive && best_mbps > 0 && last->rate_mbps < 0.75 * best_mbps)
      out.push_back({"nic", last->rate_mbps / 1e3, best_mbps / 1e3, best_mbps / std::max(1.0, 1.0 * last->rate_mbps),
                     fmt::format("its {} runs at {:.0f} of {:.0f} Gb/s (the best port's)", name, last->rate_mbps / 1e3,
                                 best_mbps / 1e3)});
    const double span = static_cast<double>(last->host_ns - first->host_ns) * 1e-9;
    const double span_b = b_first && b_last ? static_cast<double>(b_last->host_ns - b_first->host_ns) * 1e-9 : 0;
    const double wait = span > 0 ? grew(first, last, &slow::NicSample::xmit_wait) / span : 0;
    const double wait_b = span_b > 0 ? grew(b_first, b_last, &slow::NicSample::xmit_wait) / span_b : 0;
    if (wait_b > 0 && wait >= 5 * wait_b)
      out.push_back({"nic", wait, wait_b, wait / wait_b / 5,
                     fmt::format("its {} waited to send {:.0f}x as often as the minute before (xmit_wait)", name,
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
  forget(gpus_);
  forget(gpu_processes_);
}

// Its GPU over [from, to] against the minute before: another process on it (not the job's), its clock held down,
// XIDs, ECC errors, remapped rows and NVLink errors that rose.
bool HostEvidence::gpu_causes(const std::string& host, std::uint32_t pci, std::int64_t from_ns, std::int64_t to_ns,
                              std::int64_t before_end, std::vector<HostCause>& out) const {
  const auto it = gpus_.find({host, pci});
  if (pci == 0 || it == gpus_.end()) return false;
  const auto before_ns = before_end - static_cast<std::int64_t>(kBeforeS * 1e9);
  std::size_t n = 0, n_held = 0, b = 0, b_held = 0;
  std::uint64_t reasons = 0;
  unsigned lowest = 0, max_mhz = 0;
  const slow::GpuSample *first = nullptr, *last = nullptr;  // from the minute before on: counters that rose
  for (const auto& g : it->second) {
    if (g.host_ns < before_ns || g.host_ns > to_ns) continue;
    if (!first) first = &g;
    last = &g;
    if (g.host_ns < before_end) {
      ++b, b_held += held(g);
    } else if (g.host_ns >= from_ns) {
      ++n;
      if (!held(g)) continue;
      ++n_held, reasons |= g.reasons, max_mhz = g.sm_max_mhz;
      lowest = lowest ? std::min<unsigned>(lowest, g.sm_mhz) : g.sm_mhz;
    }
  }
  if (n == 0) return false;
  const double share = static_cast<double>(n_held) / static_cast<double>(n);
  const double share_b = b ? static_cast<double>(b_held) / static_cast<double>(b) : 0;
  if (share >= 0.5 && (b < 2 || share >= 2 * share_b))
    out.push_back({"clocks", share, share_b, share / 0.25,
                   fmt::format("its GPU's SM clock was held down to {} of {} MHz by {} in {} of the samples ({} "
                               "before)",
                               lowest, max_mhz, held_by(reasons), percent(share), percent(share_b))});
  const auto rose = [&](auto field) {
    return first && last && last->*field > first->*field ? static_cast<double>(last->*field - first->*field) : 0.0;
  };
  if (const double x = rose(&slow::GpuSample::xids); x > 0)
    out.push_back({"xid", x, 0, 10,
                   fmt::format("its GPU reported XID {} ({:.0f} XID event(s) since the minute "
                               "before)",
                               last->last_xid, x)});
  if (const double e = rose(&slow::GpuSample::ecc); e > 0)
    out.push_back({"ecc", e, 0, 3, fmt::format("its GPU's ECC error count rose by {:.0f}", e)});
  if (const double r = rose(&slow::GpuSample::remapped_rows); r > 0)
    out.push_back({"ecc", r, 0, 3, fmt::format("its GPU remapped {:.0f} memory row(s)", r)});
  if (const double l = rose(&slow::GpuSample::nvlink_errors); l > 0)
    out.push_back({"nvlink", l, 0, 2, fmt::format("its GPU's NVLink error counters rose by {:.0f}", l)});
  // Another process on it (not the job's), seen in at least a third of the window's samples: the one there longest.
  const auto procs = gpu_processes_.find({host, pci});
  if (procs == gpu_processes_.end()) return true;
  struct Seen {
    std::size_t now = 0, before = 0;
    std::int64_t since = 0;
    std::uint64_t bytes = 0;
    std::string name;
  };
  std::map<int, Seen> seen;
  const auto boot = boot_of_.find(host);
  for (const auto& p : procs->second) {
    // A process of the job (another host's rank on a GPU they share, its file read since) is no neighbour.
    if (p.host_ns > to_ns || job_.count({boot == boot_of_.end() ? "" : boot->second, p.pid})) continue;
    auto& x = seen[p.pid];
    if (!x.since) x.since = p.host_ns, x.name.assign(p.name, strnlen(p.name, sizeof p.name));
    if (p.host_ns >= from_ns) ++x.now, x.bytes = std::max(x.bytes, p.used_bytes);
    if (p.host_ns >= before_ns && p.host_ns < before_end) ++x.before;
  }
  const Seen* best = nullptr;
  int best_pid = 0;
  for (const auto& [pid, x] : seen)
    if (3 * x.now >= n && (!best || x.since < best->since)) best = &x, best_pid = pid;
  if (!best) return true;
  const bool new_one = b < 2 || 3 * best->before < b;
  out.push_back({"neighbour", 1, new_one ? 0.0 : 1.0, new_one ? 4.0 : 1.5,
                 fmt::format("its GPU runs another process: pid {} {} ({:.1f} GiB), seen for {:.0f} s{}", best_pid,
                             best->name, static_cast<double>(best->bytes) / (1u << 30),
                             static_cast<double>(to_ns - best->since) * 1e-9, new_one ? "" : " (there before too)")});
  return true;
}

std::vector<HostCause> HostEvidence::causes(const SlowSource& rank, std::int64_t from_ns, std::int64_t to_ns,
                                            bool& sampled, std::int64_t before_ns) const {
  if (before_ns == 0) before_ns = from_ns;
  sampled = false;
  std::vector<HostCause> out;
  const auto it = samples_.find({rank.host, rank.pid});
  const auto now = it == samples_.end() ? Stretch{} : stretch_of(it->second, from_ns, to_ns + 1);
  const bool ports = nic_causes(rank.host, now.uverbs, from_ns, to_ns, before_ns, out);
  const bool gpu = gpu_causes(rank.host, slow::pci_key(rank.gpu_bus_id.c_str()), from_ns, to_ns, before_ns, out);
  const auto by_strength = [&] {
    std::stable_sort(out.begin(), out.end(),
                     [](const HostCause& a, const HostCause& b) { return a.strength > b.strength; });
    return out;
  };
  sampled = ports || gpu || now.n > 0;
  if (it == samples_.end() || now.n < 2 || now.span_s <= 0) return by_strength();
  const auto minute = before_ns - static_cast<std::int64_t>(kBeforeS * 1e9);
  const auto before = stretch_of(it->second, minute, before_ns);
  // "Before" is its usual at its quietest: the least over the minute and each 5 s of it. A rank named late (its
  // trouble begun seconds before the window it was first named over: a loaded machine's judge named a stop 10 s in)
  // still stands against what it was before the trouble.
  std::vector<Stretch> chunks{before};
  constexpr std::int64_t kChunk = 5'000'000'000;
  for (auto t = minute; t < before_ns; t += kChunk)
    if (auto c = stretch_of(it->second, t, std::min(t + kChunk + 1, before_ns)); c.n >= 2 && c.span_s > 0)
      chunks.push_back(std::move(c));
  const auto usual = [&](auto measure) {
    double b = measure(before);
    for (const auto& c : chunks) b = std::min(b, measure(c));
    return b;
  };
  // A cause passes its floor and stands at least `factor` times above before (a host that always waits is said
  // too when it had no before: the naming may be at the job's start).
  const auto add = [&](const char* kind, double n, double b, double floor, double factor, std::string words) {
    if (n >= floor && (before.n < 2 || n >= factor * b)) out.push_back({kind, n, b, n / floor, std::move(words)});
  };
  // The shares of its window (stopped looks, waiting, throttled, pressure): floor, factor over its usual, words.
  struct ShareCause {
    const char* kind;
    double (*of)(const Stretch&);
    double floor, factor;
    const char* words;  // "{}" now, "{}" before
  };
  static constexpr ShareCause kShares[] = {
      {"stopped", [](const Stretch& x) { return part(static_cast<double>(x.stopped), static_cast<double>(x.looks)); },
       0.1, 2, "its process was found stopped at {} of the looks ({} before)"},
      {"cpu_wait", [](const Stretch& x) { return part(x.cpu_wait_s, x.span_s); }, 0.1, 3,
       "its busiest thread waited for a CPU {} of the time ({} before)"},
      {"throttled", [](const Stretch& x) { return part(x.throttled_s, x.span_s); }, 0.05, 3,
       "its cgroup's CPU quota throttled it {} of the time ({} before)"},
      {"cpu_pressure", [](const Stretch& x) { return part(x.cpu_pressure_s, x.span_s); }, 0.2, 3,
       "its cgroup's tasks waited for a CPU {} of the time (PSI; {} before)"},
      {"memory_pressure", [](const Stretch& x) { return part(x.mem_pressure_s, x.span_s); }, 0.05, 3,
       "its cgroup's tasks stalled on memory {} of the time (PSI; {} before)"},
  };
  for (const auto& c : kShares) {
    const double n = c.of(now), b = usual(c.of);
    add(c.kind, n, b, c.floor, c.factor, fmt::format(fmt::runtime(c.words), percent(n), percent(b)));
  }
  const auto faults_of = [](const Stretch& x) { return x.span_s > 0 ? x.faults / x.span_s : 0; };
  const double faults = faults_of(now), faults_b = usual(faults_of);
  // Retransmitted segments as a share of those sent: a spurious retransmission now and then (tail loss probes: 20-60
  // a second, 0.1% or less, on the GPU machine's healthy rig) is not a lossy link (1% and more).
  const auto mean = [](const Stretch& x) { return x.n > 1 ? x.retransmits / 1e5 / static_cast<double>(x.n - 1) : 0; };
  const double re = mean(now), re_b = usual(mean);
  add("retransmits", re, re_b, 0.01, 5,
      fmt::format("its TCP connections retransmitted {:.1f}% of their segments ({:.1f}% before)", 100 * re,
                  100 * re_b));
  add("faults", faults, faults_b, 10, 5,
      fmt::format("{:.0f} major page faults a second ({:.0f} before): it pages", faults, faults_b));
  // Unsent bytes, the window's median against the minute's mean: a healthy job's sockets hold bursts (a gradient
  // bucket: up to 4 MB at one sample in twelve, 5-s means up to 1.8 MB on the GPU machine's DDP job), a slowed
  // link's hold them at every look. Not at a job's start: its first seconds of traffic have no usual to stand against.
  auto sorted = now.unsent;
  std::sort(sorted.begin(), sorted.end());
  const double unsent = sorted[sorted.size() / 2];
  double unsent_b = 0;
  for (double u : before.unsent) unsent_b += u / static_cast<double>(before.unsent.size());
  if (before.n >= 10 && unsent >= 1e6 && unsent >= 4 * std::max(unsent_b, 0.25e6))
    out.push_back({"unsent", unsent, unsent_b, unsent / 1e6,
                   fmt::format("its sockets held {} unsent (the median of its looks; up to {}, {} on average "
                               "before)",
                               megabytes(unsent), megabytes(sorted.back()), megabytes(unsent_b))});
  return by_strength();
}

std::string HostEvidence::because(const SlowSource& rank, std::int64_t from_ns, std::int64_t to_ns,
                                  std::int64_t before_ns) const {
  bool sampled = false;
  const auto c = causes(rank, from_ns, to_ns, sampled, before_ns);
  if (!sampled) return "";
  if (c.empty()) return "no evidence on its host";
  return "because: " + c[0].words + (c.size() > 1 ? "; " + c[1].words : "");
}

}  // namespace fabricbench::job
