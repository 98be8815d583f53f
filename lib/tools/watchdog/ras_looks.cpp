#include "fabricbench/tools/watchdog/ras_looks.hpp"

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <stdexcept>
#include <thread>

#include "fabricbench/error.hpp"
#include "fabricbench/results/printable.hpp"
#include "fabricbench/results/prometheus.hpp"

namespace fabricbench::tools::watchdog {
namespace {

std::uint64_t total_ops(const job::RasStatus& s) {
  std::uint64_t n = 0;
  for (const auto& c : s.communicators)
    for (const auto& r : c.ranks)
      for (const auto& [kind, count] : r.ops) n += count;
  return n;
}

}  // namespace

bool Looks::progressing() const { return before && now && total_ops(*now) > total_ops(*before); }

Looks look(const RasSettings& o) {
  Looks l;
  if (!o.address) return l.why = "--no-ras", l;
  try {
    const auto first = job::query_ras(*o.address, o.timeout_s, "--ras");
    const auto start = std::chrono::steady_clock::now();
    std::this_thread::sleep_for(std::chrono::seconds(2));
    l.last = job::query_ras(*o.address, o.timeout_s, "--ras");
    l.between_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    if (first.json && l.last.json) l.before = job::parse_ras_json(first.text), l.now = job::parse_ras_json(l.last.text);
  } catch (const std::exception& e) {
    l.why = e.what();
  }
  return l;
}

std::vector<pid_t> named_first(std::vector<pid_t> pids, const Looks& looks) {
  if (!looks.now) return pids;
  std::vector<pid_t> out;
  for (const auto& p : job::judge_ras(*looks.now, looks.before ? &*looks.before : nullptr)) {
    const auto at = std::find(pids.begin(), pids.end(), static_cast<pid_t>(p.pid));
    if (p.pid > 0 && at != pids.end()) out.push_back(*at), pids.erase(at);
  }
  out.insert(out.end(), pids.begin(), pids.end());
  return out;
}

void write_metrics(const RasSettings& o, const std::optional<job::RasStatus>& now, const job::RasStatus* before,
                   const std::string& why) {
  results::Exposition e(kProgram);
  e.add("nccl_ras_up", "1 when the node's NCCL RAS service answered the last look in JSON", {}, now ? 1 : 0);
  e.add("nccl_ras_look_timestamp_seconds", "when the last look was taken (Unix time)", {},
        std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count());
  if (now) {
    std::size_t dead = 0, laggards = 0, missing = 0;
    for (const auto& p : job::judge_ras(*now, before)) {
      using Kind = job::RasProblem::Kind;
      dead += p.kind == Kind::dead;
      laggards += before && p.kind == Kind::laggard;  // confirmed by two looks only
      missing += p.kind == Kind::missing;
    }
    e.add("nccl_ras_communicators", "communicators the job's processes reported", {},
          static_cast<double>(now->communicators.size()));
    e.add("nccl_ras_dead_processes", "processes NCCL's RAS considers dead", {}, static_cast<double>(dead));
    e.add("nccl_ras_laggard_ranks",
          "ranks behind their communicator's most advanced rank, unchanged since the previous look (0 at the first)",
          {}, static_cast<double>(laggards));
    e.add("nccl_ras_missing_ranks", "ranks RAS got no data from (not dead)", {}, static_cast<double>(missing));
    for (const auto& c : now->communicators) {
      std::uint64_t lo = UINT64_MAX, hi = 0;
      for (const auto& r : c.ranks) {
        if (r.missing) continue;
        std::uint64_t n = 0;
        for (const auto& [kind, count] : r.ops) n += count;
        lo = std::min(lo, n), hi = std::max(hi, n);
      }
      e.add("nccl_ras_op_spread", "most minus fewest operations launched by a rank of the communicator",
            {{"communicator", c.hash}}, lo == UINT64_MAX ? 0.0 : static_cast<double>(hi - lo));
    }
  }
  try {
    e.write(o.prometheus);
  } catch (const Error& err) {
    std::fprintf(stderr, "%s: %s\n", kProgram, results::printable(err.what()).c_str());
  }
  if (!now && !why.empty()) std::fprintf(stderr, "%s: NCCL RAS: %s\n", kProgram, results::printable(why).c_str());
}

std::optional<job::RasStatus> watch_look(const RasSettings& o, std::string& why) {
  try {
    const auto reply = job::query_ras(*o.address, o.timeout_s, "--ras");
    if (reply.json) return job::parse_ras_json(reply.text);
    why = "this NCCL answers in text only (JSON from 2.28.7)";
  } catch (const std::exception& e) {
    why = e.what();
  }
  return std::nullopt;
}

}  // namespace fabricbench::tools::watchdog
