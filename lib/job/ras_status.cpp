// NCCL's RAS reply read into communicators and ranks, and judged: what a person looking at a stuck job asks first.
#include <fmt/format.h>

#include <algorithm>
#include <set>
#include <sstream>
#include <stdexcept>

#include "fabricbench/job/json.hpp"
#include "fabricbench/job/ras.hpp"

namespace fabricbench::job {
namespace {

RasRank read_rank(const Json& j, bool missing) {
  RasRank r;
  r.rank = static_cast<int>(j["rank"].number(-1));
  r.host = j["host"].text();
  r.pid = static_cast<long>(j["pid"].number(-1));
  r.cuda_dev = static_cast<int>(j["cuda_dev"].number(-1));
  r.nvml_dev = static_cast<int>(j["nvml_dev"].number(-1));
  const Json& s = j["status"];
  r.init_state = static_cast<int>(s["init_state"].number());
  r.async_error = static_cast<int>(s["async_error"].number());
  r.finalize = s["finalize_called"].boolean();
  r.destroy = s["destroy_flag"].boolean();
  r.abort = s["abort_flag"].boolean();
  r.missing = missing;
  r.unresponsive = s["unresponsive"].boolean();
  r.dead = s["considered_dead"].boolean();
  for (const auto& [kind, count] : j["collective_counts"].members())
    r.ops[kind] = static_cast<std::uint64_t>(std::max(0.0, count.number()));
  return r;
}

std::string gpu_of(const RasRank& r) {
  return r.cuda_dev >= 0 ? fmt::format("GPU {}", r.cuda_dev) : std::string("a GPU");
}
std::string who(const RasRank& r) {
  return fmt::format("rank {} (pid {}, {} on host {})", r.rank, r.pid, gpu_of(r), r.host);
}

// The most operations of each collective kind any reporting rank of a communicator launched, and how many ranks
// launched that many: computed once per communicator, so that judging a job is linear in its ranks (a rank against
// every peer was quadratic: 16,384 ranks took two minutes).
struct Most {
  std::uint64_t ops = 0;
  int ranks = 0;
};
std::map<std::string, Most> most_of(const RasCommunicator& c) {
  std::map<std::string, Most> most;
  for (const auto& peer : c.ranks) {
    if (peer.missing) continue;
    for (const auto& [kind, n] : peer.ops) {
      auto& m = most[kind];
      if (n > m.ops) m = {n, 0};
      if (n == m.ops) ++m.ranks;
    }
  }
  return most;  // a kind a peer never launched is 0 for it: below any rank that did
}

// Where `r` is behind the most advanced rank of its communicator: one sentence per collective kind.
std::vector<std::string> behind(const std::map<std::string, Most>& most, const RasRank& r) {
  std::vector<std::string> out;
  for (const auto& [kind, mine] : r.ops) {
    const auto it = most.find(kind);
    if (it == most.end() || mine >= it->second.ops) continue;
    const int at_most = it->second.ranks;
    out.push_back(fmt::format("launched {} up to op {} while {} peer{} reached op {}", kind, mine, at_most,
                              at_most == 1 ? "" : "s", it->second.ops));
  }
  return out;
}

// The reporting ranks of an earlier look by communicator and rank, for the second look's question "did it move?".
using RankIndex = std::map<std::pair<std::string, int>, const RasRank*>;
RankIndex index_of(const RasStatus* s) {
  RankIndex out;
  if (!s) return out;
  for (const auto& c : s->communicators)
    for (const auto& r : c.ranks)
      if (!r.missing) out.emplace(std::make_pair(c.hash, r.rank), &r);
  return out;
}

}  // namespace

const char* RasProblem::kind_name(Kind k) {
  switch (k) {
    case Kind::dead:
      return "dead";
    case Kind::laggard:
      return "laggard";
    case Kind::missing:
      return "missing";
    case Kind::async_error:
      return "async_error";
    case Kind::aborted:
      return "aborted";
    case Kind::init:
      return "init";
    case Kind::healthy:
      return "healthy";
  }
  return "?";
}

RasStatus parse_ras_json(const std::string& text) {
  RasStatus s;
  // Each rank object becomes a RasRank as soon as it is read, and each communicator takes the ranks read inside it:
  // the reply is never held as a document (at 100,000 ranks that was 6 times its 54 MB).
  std::vector<RasRank> ranks;
  const std::vector<std::string> in_communicators{"communicators"}, reporting{"communicators", "ranks"},
      missing{"communicators", "missing_ranks"};
  const auto take = [&](const std::vector<std::string>& path, Json& e) {
    if (path == reporting || path == missing) {
      ranks.push_back(read_rank(e, path == missing));
      return true;
    }
    if (path != in_communicators) return false;
    RasCommunicator comm;
    comm.hash = e["hash"].text();
    comm.size = static_cast<int>(e["size"].number());
    // The reporting ranks first, then the missing ones, whichever order the members came in.
    std::stable_partition(ranks.begin(), ranks.end(), [](const RasRank& r) { return !r.missing; });
    comm.ranks = std::move(ranks);
    ranks.clear();
    s.communicators.push_back(std::move(comm));
    return true;
  };
  const Json j = Json::parse(text, &s.missing_commas, take);
  if (!j.is(Json::Type::object) || !j["communicators"].is(Json::Type::array))
    throw std::runtime_error("no 'communicators' list: not NCCL's RAS reply in JSON");
  s.nccl_version = j["nccl_version"].text();
  return s;
}

std::vector<RasProblem> judge_ras(const RasStatus& now, const RasStatus* before) {
  using Severity = RasProblem::Severity;
  std::vector<RasProblem> out;
  // Dead processes first, one finding per process with every communicator rank it held.
  std::map<std::pair<std::string, long>, std::vector<std::pair<const RasCommunicator*, const RasRank*>>> dead;
  for (const auto& c : now.communicators)
    for (const auto& r : c.ranks)
      if (r.missing && r.dead) dead[{r.host, r.pid}].push_back({&c, &r});
  for (const auto& [process, held] : dead) {
    std::string ranks;
    for (const auto& [c, r] : held)
      ranks +=
          fmt::format("{}rank {} of communicator {} ({} ranks)", ranks.empty() ? "" : ", ", r->rank, c->hash, c->size);
    out.push_back({Severity::fail, RasProblem::Kind::dead, process.first, process.second, held.front().second->rank,
                   held.front().second->cuda_dev, "",
                   fmt::format("process {} on host {} ({}) is considered dead: NCCL's RAS network cannot reach it; "
                               "it held {}",
                               process.second, process.first, gpu_of(*held.front().second), ranks),
                   fmt::format("its peers wait for it: on host {0}, 'ps -o stat,etime,cmd -p {1}' (T: stopped; "
                               "gone: killed), then 'py-spy dump --pid {1}' or 'gdb -p {1} -batch -ex \"thread "
                               "apply all bt\"'",
                               process.first, process.second)});
  }
  const RankIndex earlier_ranks = index_of(before);
  for (const auto& c : now.communicators) {
    const auto most = most_of(c);
    for (const auto& r : c.ranks) {
      if (r.missing) {
        if (!r.dead)
          out.push_back({Severity::fail, RasProblem::Kind::missing, r.host, r.pid, r.rank, r.cuda_dev, c.hash,
                         fmt::format("communicator {}: no data from {}{}", c.hash, who(r),
                                     r.unresponsive ? ": unresponsive" : ""),
                         "RAS could not collect from it in time; ask again with a longer --timeout, then look at it"});
        continue;
      }
      if (r.async_error != 0)
        out.push_back({Severity::fail, RasProblem::Kind::async_error, r.host, r.pid, r.rank, r.cuda_dev, c.hash,
                       fmt::format("communicator {}: {} has asynchronous NCCL error {}", c.hash, who(r), r.async_error),
                       "NCCL_DEBUG=WARN shows its text in the job's log"});
      if (r.abort)
        out.push_back({Severity::fail, RasProblem::Kind::aborted, r.host, r.pid, r.rank, r.cuda_dev, c.hash,
                       fmt::format("communicator {}: {} has aborted it", c.hash, who(r)),
                       "a watchdog or an error aborted it; the job's log says which"});
      if (r.init_state != 0)
        out.push_back({Severity::fail, RasProblem::Kind::init, r.host, r.pid, r.rank, r.cuda_dev, c.hash,
                       fmt::format("communicator {}: {} reports init state {}", c.hash, who(r), r.init_state),
                       "its initialization failed or did not finish; the job's log says why"});
      const auto lags = behind(most, r);
      if (lags.empty()) continue;
      // A second look: a rank whose counts moved since is progressing, not stuck.
      const auto at = earlier_ranks.find({c.hash, r.rank});
      const RasRank* earlier = at == earlier_ranks.end() ? nullptr : at->second;
      if (before && (!earlier || earlier->ops != r.ops)) continue;
      std::string what = fmt::format("communicator {}: {} ", c.hash, who(r));
      for (std::size_t i = 0; i < lags.size(); ++i) what += (i ? "; " : "") + lags[i];
      out.push_back({Severity::fail, RasProblem::Kind::laggard, r.host, r.pid, r.rank, r.cuda_dev, c.hash,
                     what + (before ? " (unchanged between two looks)" : "") + ": it never entered the collective",
                     fmt::format("look at where that process stands: on host {0}, 'py-spy dump --pid {1}' (Python) "
                                 "or 'gdb -p {1} -batch -ex \"thread apply all bt\"' (native)",
                                 r.host, r.pid)});
    }
  }
  if (out.empty()) {
    std::set<std::pair<std::string, long>> processes;
    std::set<std::string> hosts;
    std::size_t ranks = 0;
    for (const auto& c : now.communicators)
      for (const auto& r : c.ranks) processes.insert({r.host, r.pid}), hosts.insert(r.host), ++ranks;
    out.push_back({Severity::ok, RasProblem::Kind::healthy, "", -1, -1, -1, "",
                   fmt::format("{} communicator(s), {} rank(s) in {} process(es) on {} host(s): every rank at its "
                               "communicator's operation count, none dead, missing, in error or aborted",
                               now.communicators.size(), ranks, processes.size(), hosts.size()),
                   ""});
  }
  return out;
}

std::vector<std::string> ras_text_problems(const std::string& text) {
  std::vector<std::string> out;
  std::istringstream in(text);
  bool inside = false;
  for (std::string line; std::getline(in, line);) {
    if (line == "Errors")
      inside = true;
    else if (inside && !line.empty() && line != "Warnings" && line.find_first_not_of('=') != std::string::npos)
      out.push_back(line);
  }
  return out;
}

}  // namespace fabricbench::job
