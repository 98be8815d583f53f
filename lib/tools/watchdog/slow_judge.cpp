#include "fabricbench/tools/watchdog/slow_judge.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <ctime>
#include <iterator>
#include <limits>
#include <map>
#include <set>
#include <thread>

#include "fabricbench/error.hpp"
#include "fabricbench/job/host_evidence.hpp"
#include "fabricbench/job/slow_folder.hpp"
#include "fabricbench/job/straggler.hpp"
#include "fabricbench/results/printable.hpp"
#include "fabricbench/results/prometheus.hpp"
#include "fabricbench/tools/watchdog/slow_report.hpp"
#include "fabricbench/tools/watchdog/watchdog_action.hpp"

namespace fabricbench::tools::watchdog {
namespace {

namespace slow = job::slow;
using Kind = job::SlowFinding::Kind;
constexpr std::size_t kWindowRanks = 8;           // ranks kept per look in /slow/windows (and 64 in the textfile)
constexpr std::chrono::seconds kReportEvery{30};  // the report rewritten while the job runs
constexpr std::size_t kSettleCollectives = 3;     // nor the first collectives of each kind (op, algorithm, protocol)
constexpr std::size_t kConfirmLooks = 2;          // a finding is named at its second look in a row

std::int64_t realtime_ns() {
  timespec t{};
  ::clock_gettime(CLOCK_REALTIME, &t);
  return static_cast<std::int64_t>(t.tv_sec) * 1000000000 + t.tv_nsec;
}

job::StragglerSettings rules(const JudgeMode& o) {
  job::StragglerSettings r;
  r.window_s = o.window_s, r.loss = o.loss(), r.loss_gone = o.loss() / 2;
  // A running job's start and every communicator it makes later: NCCL connects its ranks at the first collectives
  // of each kind (docs/slow-ranks.md, "What it leaves out").
  r.settle_s = o.settle_s, r.settle_ops = kSettleCollectives, r.confirm_looks = kConfirmLooks;
  return r;
}

class SlowJudge {
 public:
  SlowJudge(const JudgeMode& o, std::string command_line)
      : o_(o),
        command_line_(std::move(command_line)),
        folder_(o.folder, "--judge"),
        finder_(rules(o)),
        words_(folder_.sources(), o.window_s) {}
  // Live: what the folder holds now, judged at the present.
  void look(bool last, const volatile std::sig_atomic_t& stop) {
    std::vector<std::pair<std::size_t, slow::Record>> records;
    poll(records);
    for (const auto& [source, r] : records) take(source, r);
    judge_at(realtime_ns(), last, stop);
  }

  // --replay: everything the folder holds, judged second by second in the records' own time, as the live judge
  // would have; each line says when.
  void replay(const volatile std::sig_atomic_t& stop) {
    // A record without a time (a hole a crash left in a file: all zeros, a sparse file's gigabytes of them) has no
    // place in the run: left out as it is read, so that a hole takes no memory.
    std::vector<std::pair<std::size_t, slow::Record>> all, more;
    do {
      more.clear();
      poll(more);
      std::copy_if(more.begin(), more.end(), std::back_inserter(all),
                   [](const auto& r) { return r.second.host_ns > 0; });
    } while (!more.empty());
    std::stable_sort(all.begin(), all.end(),
                     [](const auto& a, const auto& b) { return a.second.host_ns < b.second.host_ns; });
    if (all.empty()) return;
    constexpr std::int64_t kSecond = 1000000000;
    const std::int64_t first = all.front().second.host_ns;
    const auto window = static_cast<std::int64_t>(o_.window_s * 1e9);
    std::size_t next = 0;
    constexpr auto kEnd = std::numeric_limits<std::int64_t>::max();  // a record at the end of time is reached too
    for (std::int64_t t = first + kSecond; !stop; t = t > kEnd - kSecond ? kEnd : t + kSecond) {
      for (; next < all.size() && all[next].second.host_ns <= t; ++next) take(all[next].first, all[next].second);
      at_ = fmt::format("at +{:.0f} s: ", static_cast<double>(t - first) * 1e-9);
      const bool done = next >= all.size();  // (not t > last: a record at the end of time is never passed)
      judge_at(t, done, stop);
      if (done) break;
      // A stretch without records (a pause of the job, or a record whose clock is years off) is crossed at once:
      // once the window has emptied, the next look is the second before the next record.
      if (next < all.size() && all[next].second.host_ns - t > window + 2 * kSecond) {
        const std::int64_t emptied = t + window + kSecond;
        at_ = fmt::format("at +{:.0f} s: ", static_cast<double>(emptied - first) * 1e-9);
        judge_at(emptied, false, stop);
        t += (all[next].second.host_ns - t) / kSecond * kSecond - kSecond;
      }
    }
  }

 private:
  void poll(std::vector<std::pair<std::size_t, slow::Record>>& records) {
    std::vector<std::string> problems;
    folder_.poll(records, problems);
    for (const auto& sources = folder_.sources(); gpus_told_ < sources.size(); ++gpus_told_) {
      const auto& s = sources[gpus_told_];
      finder_.set_gpu(gpus_told_, s.physical_gpu());
      if (!s.sampler) evidence_.job_process(s.boot_id, s.pid);  // on a GPU, no neighbour of the job
    }
    for (const auto& p : problems) std::fprintf(stderr, "fabric-watchdog: --slow: %s\n", results::printable(p).c_str());
    for (const auto& [source, r] : records) records_ += !folder_.sources()[source].sampler;
  }

  // A rank's record to the judge; a host's sample (its watchdog's sampler file) to the evidence.
  void take(std::size_t source, const slow::Record& r) {
    const auto& s = folder_.sources()[source];
    if (s.sampler || slow::is_sample(r)) {
      if (s.sampler) evidence_.add(s, r);
      return;
    }
    finder_.add(source, r);
  }

  // The last episode of a finding, open or gone; null when it was never named.
  const SlowEpisode* last_episode(const job::SlowFinding::Key& key) const {
    for (auto e = episodes_.rbegin(); e != episodes_.rend(); ++e)
      if (e->first.key() == key) return &*e;
    return nullptr;
  }

  // What the named rank's host saw from `from` to `now` (a link: its sender's host, else its receiver's); ""
  // unsampled. At a naming, the last kEvidenceS: the rank has turned slow within the window, often seconds ago.
  static constexpr double kEvidenceS = 5;
  std::string because(const job::SlowFinding& f, std::int64_t now, std::string* cause = nullptr, std::int64_t from = 0,
                      std::int64_t named = 0) const {
    if (f.kind == Kind::inside) return "";
    if (from == 0) from = now - static_cast<std::int64_t>(std::min(o_.window_s, kEvidenceS) * 1e9);
    if (named == 0) named = now;
    // "Before" ends where the rank may have turned slow: before the window it was first named over, and its looks.
    const auto before = std::min(from, named - static_cast<std::int64_t>((o_.window_s + kConfirmLooks) * 1e9));
    const auto at = [&](std::size_t i, std::string& kind) {
      const auto& s = source(i);
      bool sampled = false;
      const auto c = evidence_.causes(s, from, now, sampled, before);
      kind = !sampled ? "unsampled" : c.empty() ? "none" : c.front().kind;
      return evidence_.because(s, from, now, before);
    };
    std::string kind, peer_kind;
    auto own = at(f.source, kind);
    if (f.kind == Kind::link) {
      const auto peer = finder_.source_of(f.comm, f.peer);
      const auto theirs = peer ? at(*peer, peer_kind) : std::string();
      if (own.rfind("because", 0) != 0 && theirs.rfind("because", 0) == 0) {
        own = "its receiver's host, " + theirs;
        kind = peer_kind;
      } else if (own.rfind("because", 0) == 0) {
        own = "its sender's host, " + own;
      }
    }
    if (cause) *cause = kind;
    return own;
  }

  void judge_at(std::int64_t now, bool last, const volatile std::sig_atomic_t& stop) {
    if (records_ == 0 && !said_silent_ &&
        std::chrono::steady_clock::now() - started_ >= std::chrono::duration<double>(o_.silent_s())) {
      said_silent_ = true;
      std::fprintf(stderr,
                   "fabric-watchdog: --slow: no rank has written to %s in %.0f s: the job's NCCL did not load the "
                   "profiler plugin (NCCL before 2.26 has no interface it knows; NCCL_DEBUG=INFO shows "
                   "'PROFILER/Plugin'), or the job does not use NCCL; it runs as before, unjudged\n",
                   results::printable(o_.folder).c_str(), o_.silent_s());
    }
    auto w = finder_.find(now);
    evidence_.forget_before(now - static_cast<std::int64_t>((o_.window_s + job::HostEvidence::kBeforeS + 10) * 1e9));
    for (const auto& [comm, ranks] : w.shared_gpu) {
      auto& said = shared_said_[comm];
      if (ranks.size() <= said) continue;
      said = ranks.size();
      std::string list;
      for (std::size_t i = 0; i < ranks.size() && i < 16; ++i) list += (i ? ", " : "") + std::to_string(ranks[i]);
      if (ranks.size() > 16) list += fmt::format(" and {} more", ranks.size() - 16);
      std::fprintf(stderr,
                   "fabric-watchdog: %s--slow: ranks %s of communicator %s share a GPU with another of its ranks "
                   "(the same bus id on one machine): their kernels take turns on it, so which runs shortest says "
                   "nothing and the kernels' rule names none of them (their network is judged as before)\n",
                   at_.c_str(), list.c_str(), comm_text(comm).c_str());
    }
    std::set<job::SlowFinding::Key> seen;
    for (const auto& f : w.findings) {
      const auto key = f.key();
      seen.insert(key);
      const auto it = open_.find(key);
      if (it == open_.end()) {
        SlowEpisode e;
        e.first = e.worst = f, e.from_ns = e.to_ns = e.trouble_ns = now;
        if (const auto* earlier = last_episode(key);
            earlier && now - earlier->to_ns <= static_cast<std::int64_t>(job::HostEvidence::kBeforeS * 1e9))
          e.trouble_ns = earlier->trouble_ns;
        open_[key] = episodes_.size();
        episodes_.push_back(e);
        auto line = words_.describe(f);
        e.because = because(f, now, nullptr, 0, e.trouble_ns);
        e.told_why = e.because.find("because: ") != std::string::npos;
        episodes_.back().because = e.because;
        episodes_.back().told_why = e.told_why;
        if (!e.because.empty()) line += "; " + e.because;
        std::fprintf(stderr, "fabric-watchdog: %s%s\n", at_.c_str(), results::printable(line).c_str());
        if (!o_.exec.empty() && !stop) act(f, line, e.because, stop);
      } else {
        auto& e = episodes_[it->second];
        e.to_ns = now, e.missed_ns = 0;
        if (f.loss > e.worst.loss) e.worst = f;
        // Evidence that came after the naming (a slowed link's queues fill over seconds): said once, when it comes.
        if (!e.told_why) {
          const auto why = because(f, now, nullptr, 0, e.trouble_ns);
          if (why.find("because: ") != std::string::npos) {
            e.told_why = true;
            std::fprintf(stderr, "fabric-watchdog: %sstill named: %s; %s\n", at_.c_str(),
                         results::printable(words_.who(f)).c_str(), results::printable(why).c_str());
          }
        }
        // The report's: what the host saw over the whole naming (and the seconds before it was named).
        e.because = because(f, now, nullptr, e.from_ns - static_cast<std::int64_t>(kEvidenceS * 1e9), e.trouble_ns);
      }
    }
    // Gone once missed for 2 s of looks (or missed at the last): a loaded host may keep a rank's records back for a
    // look or two, and a naming that went and came back within them is one naming (one line, one --slow-exec).
    constexpr std::int64_t kGrace = 2000000000;
    for (auto it = open_.begin(); it != open_.end();) {
      auto& e = episodes_[it->second];
      const bool missed = !seen.count(it->first);
      if (missed && e.missed_ns == 0) e.missed_ns = now;
      if (!missed || (last ? e.missed_ns == now : now - e.missed_ns < kGrace)) {
        ++it;
        continue;
      }
      std::fprintf(stderr, "fabric-watchdog: %sgone: %s, named for %.0f s (the job lost up to %.0f%% to it)\n",
                   at_.c_str(), words_.who(e.first).c_str(), static_cast<double>(e.to_ns - e.from_ns) * 1e-9,
                   100 * e.worst.loss);
      it = open_.erase(it);
    }
    for (const auto& [where, source_index] : finder_.quiet_ranks(o_.window_s))
      if (quiet_said_.emplace(where, true).second) {
        const auto& s = source(source_index);
        std::fprintf(stderr,
                     "fabric-watchdog: --slow: rank %d (pid %d on host %s) of communicator %s reported nothing for "
                     "%.0f s while the others went on: it exited or hangs (--timeout and NCCL's RAS judge a hang)\n",
                     where.second, s.pid, results::printable(s.host).c_str(), comm_text(where.first).c_str(),
                     o_.window_s);
      }
    for (std::size_t i = 0; i < w.ranks.size() && i < kWindowRanks; ++i) windows_.push_back({now, w.ranks[i]});
    if (!o_.prometheus.empty()) metrics(w, now);
  }

 public:
  // The report as it stands: "running" while the job runs (every 30 s), then the last with its final status.
  void report(const std::string& status, bool last) {
    if (last) finder_.close();
    write_slow_report(o_.report, command_line_, {folder_, finder_, episodes_, windows_, records_, o_.window_s}, status,
                      last);
  }
  void report_now_and_then() {
    if (std::chrono::steady_clock::now() < next_report_) return;
    next_report_ = std::chrono::steady_clock::now() + kReportEvery;
    try {
      report("running", false);
    } catch (const Error& e) {
      std::fprintf(stderr, "fabric-watchdog: --slow: %s\n", results::printable(e.what()).c_str());
    }
  }

 private:
  const job::SlowSource& source(std::size_t i) const { return words_.source(i); }

  void act(const job::SlowFinding& f, const std::string& line, const std::string& evidence,
           const volatile std::sig_atomic_t& stop) {
    const auto& s = source(f.source);
    run_action(
        {o_.exec},
        {"FABRIC_WATCHDOG_SLOW=" + line, "FABRIC_WATCHDOG_SLOW_EVIDENCE=" + evidence,
         std::string("FABRIC_WATCHDOG_SLOW_KIND=") + f.kind_name(), fmt::format("FABRIC_WATCHDOG_SLOW_RANK={}", f.rank),
         fmt::format("FABRIC_WATCHDOG_SLOW_PEER={}", f.peer), "FABRIC_WATCHDOG_SLOW_HOST=" + s.host,
         fmt::format("FABRIC_WATCHDOG_SLOW_PID={}", s.pid), "FABRIC_WATCHDOG_SLOW_COMM=" + comm_text(f.comm)},
        o_.action_timeout_s, stop);
  }

  void metrics(const job::SlowWindow& w, std::int64_t now) {
    results::Exposition e("fabric-watchdog");
    e.add("slow_look_timestamp_seconds", "when the slow-rank judge last looked (Unix time)", {},
          static_cast<double>(now) * 1e-9);
    e.add("slow_records", "profiler records read from the job's ranks", {}, static_cast<double>(records_));
    e.add("slow_findings", "slow ranks, links and collectives named now", {}, static_cast<double>(w.findings.size()));
    for (std::size_t i = 0; i < w.ranks.size() && i < 64; ++i) {
      const auto& r = w.ranks[i];
      const auto& s = source(r.source);
      const results::Exposition::Labels l{{"communicator", comm_text(r.comm)},
                                          {"rank", std::to_string(r.rank)},
                                          {"host", s.host},
                                          {"pid", std::to_string(s.pid)}};
      e.add("slow_rank_wait_seconds", "the others' median wait at the collectives this rank arrived last at (window)",
            l, r.wait_median_s);
      e.add("slow_rank_late_ratio", "share of its communicator's collectives this rank arrived last at (window)", l,
            static_cast<double>(r.late) / static_cast<double>(std::max<std::size_t>(1, r.collectives)));
      e.add("slow_rank_loss_ratio", "share of the window the others spent waiting for this rank", l, r.loss);
    }
    for (const auto& f : w.findings) {
      if (f.kind == Kind::inside) continue;
      std::string cause;
      because(f, now, &cause);
      e.add("slow_finding_cause",
            "a slow rank, link or rank's network named now, with what its host saw (cause: "
            "stopped, cpu_wait, throttled, faults, unsent; none; unsampled)",
            {{"communicator", comm_text(f.comm)},
             {"kind", f.kind_name()},
             {"rank", std::to_string(f.rank)},
             {"host", source(f.source).host},
             {"cause", cause}},
            1);
    }
    for (const auto& f : w.findings) {
      if (f.kind != Kind::link && f.kind != Kind::network) continue;
      const auto& s = source(f.source);
      const results::Exposition::Labels l{{"communicator", comm_text(f.comm)},
                                          {"kind", f.kind_name()},
                                          {"rank", std::to_string(f.rank)},
                                          {"peer", std::to_string(f.peer)},
                                          {"host", s.host}};
      e.add("slow_link_ratio", "a slow connection's network time per byte against its communicator's median", l,
            f.ratio);
      e.add("slow_link_loss_ratio", "share of the window the job lost to a slow link or rank's network", l, f.loss);
    }
    try {
      e.write(o_.prometheus);
    } catch (const Error& err) {
      std::fprintf(stderr, "fabric-watchdog: %s\n", results::printable(err.what()).c_str());
    }
  }

  const JudgeMode& o_;
  std::string command_line_;
  job::SlowFolder folder_;
  job::StragglerFinder finder_;
  SlowWords words_;
  std::chrono::steady_clock::time_point next_report_ = std::chrono::steady_clock::now() + kReportEvery;
  std::size_t records_ = 0;
  bool said_silent_ = false;
  std::chrono::steady_clock::time_point started_ = std::chrono::steady_clock::now();
  std::vector<SlowEpisode> episodes_;                  // every naming, in order
  std::map<job::SlowFinding::Key, std::size_t> open_;  // the ones named now, by their key: index in episodes_
  std::vector<std::pair<std::int64_t, job::RankWindow>> windows_;
  std::string at_;  // --replay: "at +12 s: " before each line
  std::map<std::pair<std::uint64_t, int>, bool> quiet_said_;
  job::HostEvidence evidence_;                        // the hosts' samples of the job's processes
  std::size_t gpus_told_ = 0;                         // sources whose GPU the judge knows
  std::map<std::uint64_t, std::size_t> shared_said_;  // per communicator: how many ranks sharing a GPU were said
};

// The report's last status: SIGTERM is how fabric-watchdog says the job ended (and how a judge run alone is
// ended); SIGINT or SIGHUP means the watchdog (or the judge) was stopped while the job ran.
std::string final_status(int sig, bool replay) {
  if (replay) return sig ? fmt::format("failed: {} before the replay's end", strsignal(sig)) : "complete";
  if (sig == SIGINT || sig == SIGHUP)
    return fmt::format("failed: {}: stopped while the job still ran; what was judged until then", strsignal(sig));
  return "complete";
}

}  // namespace

int run_judge(const JudgeMode& o, const std::string& command_line, const volatile std::sig_atomic_t& stop) {
  SlowJudge judge(o, command_line);
  if (o.replay) {
    judge.replay(stop);
    judge.report(final_status(stop, true), true);
    return 0;
  }
  for (;;) {
    const bool last = stop;
    judge.look(last, stop);
    if (last) break;
    judge.report_now_and_then();
    const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(1);
    while (!stop && std::chrono::steady_clock::now() < until)
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  judge.report(final_status(stop, false), true);
  return 0;
}

}  // namespace fabricbench::tools::watchdog
