#include "fabricbench/tools/watchdog/slow_judge.hpp"

#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <ctime>
#include <map>
#include <thread>

#include "fabricbench/error.hpp"
#include "fabricbench/job/slow_folder.hpp"
#include "fabricbench/job/straggler.hpp"
#include "fabricbench/results/hdf5_sink.hpp"
#include "fabricbench/results/printable.hpp"
#include "fabricbench/results/prometheus.hpp"
#include "fabricbench/results/result_set.hpp"
#include "fabricbench/results/terminal_table.hpp"
#include "fabricbench/tools/watchdog/watchdog_action.hpp"

namespace fabricbench::watchdog {
namespace {

namespace slow = job::slow;
using results::Better;
using results::Unit;
constexpr std::size_t kWindowRanks = 8;  // ranks kept per look in /slow/windows (and 64 in the textfile)

std::int64_t realtime_ns() {
  timespec t{};
  ::clock_gettime(CLOCK_REALTIME, &t);
  return static_cast<std::int64_t>(t.tv_sec) * 1000000000 + t.tv_nsec;
}

std::string utc(std::int64_t ns) {
  const std::time_t s = ns / 1000000000;
  std::tm tm{};
  ::gmtime_r(&s, &tm);
  char text[32];
  std::strftime(text, sizeof text, "%Y-%m-%dT%H:%M:%SZ", &tm);
  return text;
}

std::string comm_text(std::uint64_t comm) { return fmt::format("0x{:x}", comm); }

std::string size_text(std::uint64_t bytes) {
  if (bytes >= (1u << 20) && bytes % (1u << 20) == 0) return fmt::format("{} MiB", bytes >> 20);
  if (bytes >= 1024 && bytes % 1024 == 0) return fmt::format("{} KiB", bytes >> 10);
  return fmt::format("{} B", bytes);
}

// A finding's identity across looks: the same rank (or collective) named again is the same episode.
std::string key_of(const job::SlowFinding& f) {
  return f.kind == job::SlowFinding::Kind::late ? fmt::format("late {} {}", f.comm, f.rank)
                                                : fmt::format("inside {} {} {}", f.comm, f.op, f.bytes);
}

struct Episode {
  job::SlowFinding first, worst;
  std::int64_t from_ns = 0, to_ns = 0;
};

job::StragglerSettings rules(const SlowOptions& o) {
  job::StragglerSettings r;
  r.window_s = o.window_s, r.loss = o.loss, r.loss_gone = o.loss / 2;
  return r;
}

class Judge {
 public:
  Judge(const SlowOptions& o)
      : o_(o), folder_(o.folder, "--judge"), judge_(rules(o)) {}

  // Live: what the folder holds now, judged at the present.
  void look(bool last, const volatile std::sig_atomic_t& stop) {
    std::vector<std::pair<std::size_t, slow::Record>> records;
    poll(records);
    for (const auto& [source, r] : records) judge_.add(source, r);
    judge_at(realtime_ns(), last, stop);
  }

  // --replay: everything the folder holds, judged second by second in the records' own time, as the live judge
  // would have; each line says when.
  void replay(const volatile std::sig_atomic_t& stop) {
    std::vector<std::pair<std::size_t, slow::Record>> all, more;
    do {
      more.clear();
      poll(more);
      all.insert(all.end(), more.begin(), more.end());
    } while (!more.empty());
    std::stable_sort(all.begin(), all.end(),
                     [](const auto& a, const auto& b) { return a.second.host_ns < b.second.host_ns; });
    if (all.empty()) return;
    const std::int64_t first = all.front().second.host_ns, last = all.back().second.host_ns;
    std::size_t next = 0;
    for (std::int64_t t = first + 1000000000; !stop; t += 1000000000) {
      for (; next < all.size() && all[next].second.host_ns <= t; ++next) judge_.add(all[next].first, all[next].second);
      at_ = fmt::format("at +{:.0f} s: ", static_cast<double>(t - first) * 1e-9);
      const bool done = t > last;
      judge_at(t, done, stop);
      if (done) break;
    }
  }

 private:
  void poll(std::vector<std::pair<std::size_t, slow::Record>>& records) {
    std::vector<std::string> problems;
    folder_.poll(records, problems);
    for (const auto& p : problems) std::fprintf(stderr, "fabric-watchdog: --slow: %s\n", results::printable(p).c_str());
    records_ += records.size();
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
    auto w = judge_.judge(now);
    std::map<std::string, bool> seen;
    for (const auto& f : w.findings) {
      const auto key = key_of(f);
      seen[key] = true;
      const auto it = open_.find(key);
      if (it == open_.end()) {
        Episode e;
        e.first = e.worst = f, e.from_ns = e.to_ns = now;
        open_[key] = episodes_.size();
        episodes_.push_back(e);
        const auto line = describe(f);
        std::fprintf(stderr, "fabric-watchdog: %s%s\n", at_.c_str(), line.c_str());
        if (!o_.exec.empty() && !stop) act(f, line, stop);
      } else {
        auto& e = episodes_[it->second];
        e.to_ns = now;
        if (f.loss > e.worst.loss) e.worst = f;
      }
    }
    for (auto it = open_.begin(); it != open_.end();) {
      if (seen.count(it->first) || last) {
        ++it;
        continue;
      }
      const auto& e = episodes_[it->second];
      std::fprintf(stderr, "fabric-watchdog: %sgone: %s, named for %.0f s (the job lost up to %.0f%% to it)\n",
                   at_.c_str(), who(e.first).c_str(), static_cast<double>(e.to_ns - e.from_ns) * 1e-9,
                   100 * e.worst.loss);
      it = open_.erase(it);
    }
    for (const auto& [where, source_index] : judge_.quiet_ranks(o_.window_s))
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
  void report(const std::string& command_line, bool interrupted) {
    judge_.close();
    results::ResultSet out;
    out.add(std::make_unique<results::TerminalTable>(stderr));
    out.add(std::make_unique<results::Hdf5Sink>(o_.report, o_.force));
    char host[256] = {};
    ::gethostname(host, sizeof host - 1);
    out.begin({"fabric-watchdog", FABRICBENCH_VERSION, command_line, results::utc_timestamp(), 1, {host}});
    out.note(
        fmt::format("slow ranks: {} record(s) from {} process(es) in {}; {} collective(s) judged over {:g} s "
                    "windows; {} finding(s)",
                    records_, folder_.sources().size(), o_.folder, judge_.judged(), o_.window_s, episodes_.size()));
    write_findings(out);
    write_windows(out);
    write_collectives(out);
    write_processes(out);
    out.finish(interrupted ? "interrupted" : "complete");
  }

 private:
  std::string who(const job::SlowFinding& f) const {
    if (f.kind == job::SlowFinding::Kind::inside)
      return fmt::format("{} of {} on communicator {}", f.op, size_text(f.bytes), comm_text(f.comm));
    const auto& s = source(f.source);
    return fmt::format("rank {} (pid {}, {} on host {}) of communicator {}", f.rank, s.pid, s.gpu(),
                       results::printable(s.host), comm_text(f.comm));
  }

  std::string describe(const job::SlowFinding& f) const {
    if (f.kind == job::SlowFinding::Kind::inside)
      return fmt::format(
          "slow collective: {}: {:.2f} ms on median on every rank alike, {:.1f}x the {:.3f} ms this "
          "job took for it before: the job loses {:.0f}% of its time inside it (slow inside the "
          "collective: a link or NIC, not a rank)",
          who(f), f.own_s * 1e3, f.own_s / f.best_s, f.best_s * 1e3, 100 * f.loss);
    return fmt::format(
        "slow rank: {} arrives last at {:.0f}% of its {} calls of the last {:g} s; the others wait "
        "{:.2f} ms for it on median: the job loses {:.0f}% of its time to it (slow before the "
        "collective: its compute, input, host or GPU)",
        who(f), 100 * f.late_fraction, f.op, o_.window_s, f.wait_median_s * 1e3, 100 * f.loss);
  }

  const job::SlowSource& source(std::size_t i) const {
    static const job::SlowSource none;
    return i < folder_.sources().size() ? folder_.sources()[i] : none;
  }

  void act(const job::SlowFinding& f, const std::string& line, const volatile std::sig_atomic_t& stop) {
    const auto& s = source(f.source);
    run_action({o_.exec},
               {"FABRIC_WATCHDOG_SLOW=" + line, fmt::format("FABRIC_WATCHDOG_SLOW_RANK={}", f.rank),
                "FABRIC_WATCHDOG_SLOW_HOST=" + s.host, fmt::format("FABRIC_WATCHDOG_SLOW_PID={}", s.pid),
                "FABRIC_WATCHDOG_SLOW_COMM=" + comm_text(f.comm)},
               o_.action_timeout_s, stop);
  }

  void metrics(const job::SlowWindow& w, std::int64_t now) {
    results::Exposition e("fabric-watchdog");
    e.add("slow_look_timestamp_seconds", "when the slow-rank judge last looked (Unix time)", {},
          static_cast<double>(now) * 1e-9);
    e.add("slow_records", "profiler records read from the job's ranks", {}, static_cast<double>(records_));
    e.add("slow_findings", "slow ranks and slow collectives named now", {}, static_cast<double>(w.findings.size()));
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
    try {
      e.write(o_.prometheus);
    } catch (const Error& err) {
      std::fprintf(stderr, "fabric-watchdog: %s\n", results::printable(err.what()).c_str());
    }
  }

  void write_findings(results::ResultSet& out) {
    const results::TableSpec t{
        "slow",
        "findings",
        {results::key_text("kind", 8), results::key_text("comm", 20), results::key_int("rank"),
         results::setting_text("host", 64), results::setting_int("pid"), results::setting_text("gpu", 40),
         results::setting_text("op", 16), results::setting_int("bytes"),
         results::measured("late_fraction", Unit::none, Better::lower, "late", 2),
         results::measured("wait_median_ms", Unit::none, Better::lower, "wait ms", 2),
         results::measured("loss_pct", Unit::percent, Better::lower, "lost %", 0),
         results::setting_text("first_seen", 24), results::setting_text("last_seen", 24),
         results::setting_text("text", 512)}};
    out.declare(t);
    out.section(t, "slow ranks and collectives named while the job ran",
                {{"kind"},
                 {"rank"},
                 {"host"},
                 {"pid"},
                 {"op"},
                 {"late_fraction"},
                 {"wait_median_ms"},
                 {"loss_pct"},
                 {"first_seen"},
                 {"last_seen"}});
    std::vector<results::Row> rows;
    for (const auto& e : episodes_) {
      const auto& f = e.worst;
      const auto& s = source(f.source);
      const bool late = f.kind == job::SlowFinding::Kind::late;
      rows.push_back(results::Row(t)
                         .set("kind", std::string(late ? "late" : "inside"))
                         .set("comm", comm_text(f.comm))
                         .set("rank", std::int64_t{f.rank})
                         .set("host", late ? s.host : std::string())
                         .set("pid", std::int64_t{late ? s.pid : -1})
                         .set("gpu", late ? s.gpu() : std::string())
                         .set("op", f.op)
                         .set("bytes", static_cast<std::int64_t>(f.bytes))
                         .set("late_fraction", f.late_fraction)
                         .set("wait_median_ms", late ? f.wait_median_s * 1e3 : f.own_s * 1e3)
                         .set("loss_pct", 100 * f.loss)
                         .set("first_seen", utc(e.from_ns))
                         .set("last_seen", utc(e.to_ns))
                         .set("text", describe(f).substr(0, 512)));
    }
    if (rows.empty()) out.note("no slow rank or slow collective was named");
    out.rows(rows);
  }

  void write_windows(results::ResultSet& out) {
    results::TableSpec t{"slow",
                         "windows",
                         {results::key_text("time", 24), results::key_int("t_ns"), results::key_text("comm", 20),
                          results::key_int("rank"), results::setting_text("host", 64), results::setting_int("pid"),
                          results::setting_int("collectives"), results::setting_int("late"),
                          results::measured("wait_median_ms", Unit::none, Better::lower),
                          results::measured("loss_pct", Unit::percent, Better::lower),
                          results::measured("kernel_median_ms", Unit::none, Better::none)}};
    t.bulk = true;
    out.declare(t);
    out.section(t, "", {});
    std::vector<results::Row> rows;
    for (const auto& [at, r] : windows_) {
      const auto& s = source(r.source);
      rows.push_back(results::Row(t)
                         .set("time", utc(at))
                         .set("t_ns", at)
                         .set("comm", comm_text(r.comm))
                         .set("rank", std::int64_t{r.rank})
                         .set("host", s.host)
                         .set("pid", std::int64_t{s.pid})
                         .set("collectives", static_cast<std::int64_t>(r.collectives))
                         .set("late", static_cast<std::int64_t>(r.late))
                         .set("wait_median_ms", r.wait_median_s * 1e3)
                         .set("loss_pct", 100 * r.loss)
                         .set("kernel_median_ms", r.kernel_median_s * 1e3));
    }
    out.rows(rows);
  }

  void write_collectives(results::ResultSet& out) {
    results::TableSpec t{
        "slow",
        "collectives",
        {results::key_int("t_ns"), results::key_text("comm", 20), results::key_int("seq"), results::key_int("rank"),
         results::setting_text("op", 16), results::setting_int("bytes"), results::setting_text("algo", 16),
         results::setting_text("proto", 8), results::measured("kernel_ms", Unit::none, Better::none),
         results::measured("wait_ms", Unit::none, Better::none), results::setting_int("last")}};
    t.bulk = true;
    out.declare(t);
    out.section(t, "", {});
    std::vector<results::Row> rows;
    rows.reserve(judge_.rows().size());
    for (const auto& c : judge_.rows())
      rows.push_back(results::Row(t)
                         .set("t_ns", c.host_ns)
                         .set("comm", comm_text(c.comm))
                         .set("seq", static_cast<std::int64_t>(c.seq))
                         .set("rank", std::int64_t{c.rank})
                         .set("op", std::string(slow::name_of(slow::kOps, c.op)))
                         .set("bytes", static_cast<std::int64_t>(c.bytes))
                         .set("algo", std::string(slow::name_of(slow::kAlgos, c.algo)))
                         .set("proto", std::string(slow::name_of(slow::kProtos, c.proto)))
                         .set("kernel_ms", c.kernel_s * 1e3)
                         .set("wait_ms", c.wait_s * 1e3)
                         .set("last", std::int64_t{c.last}));
    out.rows(rows);
  }

  void write_processes(results::ResultSet& out) {
    const results::TableSpec t{
        "slow",
        "processes",
        {results::key_text("host", 64), results::key_int("pid"), results::setting_int("cuda_device"),
         results::setting_text("gpu_bus_id", 32), results::setting_text("visible_devices", 64),
         results::setting_text("launcher_rank", 16), results::setting_int("profiler_api"),
         results::setting_text("file", 256)}};
    out.declare(t);
    out.section(t, "", {});
    std::vector<results::Row> rows;
    for (const auto& s : folder_.sources())
      rows.push_back(results::Row(t)
                         .set("host", s.host)
                         .set("pid", std::int64_t{s.pid})
                         .set("cuda_device", std::int64_t{s.cuda_device})
                         .set("gpu_bus_id", s.gpu_bus_id)
                         .set("visible_devices", s.visible_devices)
                         .set("launcher_rank", s.launcher_rank)
                         .set("profiler_api", std::int64_t{s.profiler_api})
                         .set("file", s.file.substr(0, 256)));
    out.rows(rows);
    const results::TableSpec m{"slow",
                               "missing",
                               {results::key_text("comm", 20), results::key_int("rank"),
                                results::measured_int("collectives", Unit::none, Better::lower)}};
    out.declare(m);
    out.section(m, "", {});
    std::vector<results::Row> missing;
    for (const auto& [where, n] : judge_.missing()) {
      out.note(
          fmt::format("rank {} of communicator {}: {} collective(s) never reported by it (it exited, or its "
                      "records did not reach the folder)",
                      where.second, comm_text(where.first), n));
      missing.push_back(results::Row(m)
                            .set("comm", comm_text(where.first))
                            .set("rank", std::int64_t{where.second})
                            .set("collectives", static_cast<std::int64_t>(n)));
    }
    out.rows(missing);
  }

  const SlowOptions& o_;
  job::SlowFolder folder_;
  job::StragglerJudge judge_;
  std::size_t records_ = 0;
  bool said_silent_ = false;
  std::chrono::steady_clock::time_point started_ = std::chrono::steady_clock::now();
  std::vector<Episode> episodes_;            // every naming, in order
  std::map<std::string, std::size_t> open_;  // the ones named now, by key_of: index in episodes_
  std::vector<std::pair<std::int64_t, job::RankWindow>> windows_;
  std::string at_;  // --replay: "at +12 s: " before each line
  std::map<std::pair<std::uint64_t, int>, bool> quiet_said_;
};

}  // namespace

int judge_slow(const SlowOptions& o, const std::string& command_line, const volatile std::sig_atomic_t& stop) {
  Judge judge(o);
  if (o.replay) {
    judge.replay(stop);
    judge.report(command_line, stop != 0);
    return 0;
  }
  for (;;) {
    const bool last = stop;
    judge.look(last, stop);
    if (last) break;
    const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(1);
    while (!stop && std::chrono::steady_clock::now() < until)
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  judge.report(command_line, false);
  return 0;
}

}  // namespace fabricbench::watchdog
