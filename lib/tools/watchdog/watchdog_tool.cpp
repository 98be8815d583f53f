#include "fabricbench/tools/watchdog/watchdog_tool.hpp"

#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
#include <boost/program_options.hpp>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <optional>
#include <sstream>
#include <stdexcept>
#include <thread>

#include "fabricbench/cli/command_line.hpp"
#include "fabricbench/doctor/findings.hpp"
#include "fabricbench/error.hpp"
#include "fabricbench/job/child_process.hpp"
#include "fabricbench/job/ras.hpp"
#include "fabricbench/job/stacks.hpp"
#include "fabricbench/results/hdf5_sink.hpp"
#include "fabricbench/results/prometheus.hpp"
#include "fabricbench/results/result_set.hpp"
#include "fabricbench/results/terminal_table.hpp"
#include "fabricbench/tools/doctor/nccl_ras_mode.hpp"

namespace fabricbench::watchdog {
namespace {

namespace po = boost::program_options;
using Clock = std::chrono::steady_clock;
const char* const kProgram = "fabric-watchdog";

struct Options {
  double timeout_s = 20 * 60, ras_timeout_s = 30;
  std::optional<job::RasAddress> ras;  // none: --no-ras
  bool stacks = false, kill = false, scancel = false;
  std::string exec, report;
  bool force = false, unbuffered = false, python_hook = true;
  double watch_s = 0;      // --watch: a RAS look this often (0: only after --timeout of silence)
  std::string prometheus;  // --prometheus: the textfile each look rewrites
  std::vector<std::string> command;
  std::string command_line;
};

double seconds(Clock::duration d) { return std::chrono::duration<double>(d).count(); }

Options parse(int argc, char** argv) {
  Options o;
  int split = argc;
  for (int i = 1; i < argc; ++i)
    if (std::string(argv[i]) == "--") {
      split = i;
      break;
    }
  for (int i = 0; i < argc; ++i) o.command_line += (i ? " " : "") + std::string(argv[i]);
  for (int i = split + 1; i < argc; ++i) o.command.emplace_back(argv[i]);
  po::options_description d("fabric-watchdog [OPTIONS] -- COMMAND [ARGS...]");
  auto add = d.add_options();
  add("help,h", "this help");
  add("timeout", po::value<std::string>()->default_value("20m"),
      "no output from the command for this long (60s, 20m, 1h): ask NCCL's RAS whether collectives still advance");
  add("actions", po::value<std::string>()->default_value("stacks,kill"),
      "on a hang, in order: stacks (of the command's processes here), kill (its process group), scancel "
      "($SLURM_JOB_ID), exec:PATH (run PATH with FABRIC_WATCHDOG_REPORT set); comma-separated");
  add("ras", po::value<std::string>()->default_value("127.0.0.1:28028"),
      "HOST[:PORT] of the node's NCCL RAS service (NCCL_RAS_ADDR)");
  add("no-ras", "judge by the output alone (a job without NCCL, or NCCL before 2.24)");
  add("ras-timeout", po::value<std::string>()->default_value("30s"), "bound of each RAS look");
  add("report", po::value<std::string>(), "the report's HDF5 file (default fabric-watchdog-<job>-<time>.h5 here)");
  add("force", "overwrite an existing --report file");
  add("watch", po::value<std::string>(),
      "ask NCCL's RAS this often (30s, 1m) and keep --prometheus up to date; without a command after --, only that "
      "(a monitor for node_exporter, as a separate step of the allocation), until SIGTERM");
  add("prometheus", po::value<std::string>(),
      "with --watch: node_exporter's textfile, rewritten whole after each look: RAS up, communicators, dead "
      "processes, laggard ranks (unchanged since the last look), missing ranks, op spread per communicator");
  add("python-unbuffered",
      "set PYTHONUNBUFFERED=1 for the command: a Python job whose output goes to a pipe flushes it every ~8 KiB, "
      "so one that prints rarely can look silent; then every print is a write into the watchdog's pipe (a job "
      "printing 200,000 lines at full speed took 2.5x as long)");
  add("no-python-hook",
      "do not arm Python's faulthandler in the command's Python processes (a sitecustomize.py first on "
      "PYTHONPATH; on a hang each writes its threads' tracebacks on SIGRTMIN+7): their Python stacks then need "
      "py-spy");
  po::variables_map v;
  try {
    po::store(po::command_line_parser(split, argv).options(d).run(), v);
    po::notify(v);
  } catch (const po::error& e) {
    throw Error::usage(fmt::format("{} (see fabric-watchdog --help)", e.what()));
  }
  if (v.count("help")) {
    std::ostringstream text;
    text << d;
    std::fputs(text.str().c_str(), stdout);
    std::exit(0);
  }
  if (v.count("watch")) o.watch_s = cli::parse_duration(v["watch"].as<std::string>(), "--watch");
  if (v.count("prometheus")) {
    if (!v.count("watch")) throw Error::usage("--prometheus is written by --watch's looks: give --watch D too");
    o.prometheus = v["prometheus"].as<std::string>();
    results::Exposition::check_writable(o.prometheus);
  } else if (v.count("watch")) {
    throw Error::usage("--watch: give --prometheus FILE, the textfile its looks keep");
  }
  if (v.count("watch") && v.count("no-ras")) throw Error::usage("--watch asks NCCL's RAS: drop --no-ras");
  if (o.command.empty() && !v.count("watch"))
    throw Error::usage("give the command to watch after --: fabric-watchdog [OPTIONS] -- COMMAND (or --watch D)");
  o.timeout_s = cli::parse_duration(v["timeout"].as<std::string>(), "--timeout");
  o.ras_timeout_s = cli::parse_duration(v["ras-timeout"].as<std::string>(), "--ras-timeout");
  if (!v.count("no-ras")) o.ras = job::RasAddress::parse(v["ras"].as<std::string>(), "--ras");
  std::istringstream actions(v["actions"].as<std::string>());
  for (std::string a; std::getline(actions, a, ',');) {
    if (a == "stacks")
      o.stacks = true;
    else if (a == "kill")
      o.kill = true;
    else if (a == "scancel")
      o.scancel = true;
    else if (a.rfind("exec:", 0) == 0 && a.size() > 5)
      o.exec = a.substr(5);
    else
      throw Error::usage(
          fmt::format("--actions '{}': allowed values are stacks, kill, scancel, exec:PATH "
                      "(comma-separated)",
                      v["actions"].as<std::string>()));
  }
  if (!o.exec.empty() && ::access(o.exec.c_str(), X_OK) != 0)
    throw Error::usage(fmt::format("--actions exec:{}: not an executable file", o.exec));
  const char* job = std::getenv("SLURM_JOB_ID");
  o.report = v.count("report") ? v["report"].as<std::string>()
                               : fmt::format("fabric-watchdog-{}-{}.h5", job ? job : std::to_string(::getpid()),
                                             results::utc_timestamp().substr(0, 19));
  for (auto& c : o.report)
    if (c == ':') c = '-';
  o.force = v.count("force") > 0;
  o.unbuffered = v.count("python-unbuffered") > 0;
  o.python_hook = !v.count("no-python-hook");
  if (!o.force && ::access(o.report.c_str(), F_OK) == 0)
    throw Error::usage(fmt::format("--report {}: file exists; choose another path or add --force", o.report));
  // Its folder now, not at hang time (when a report that cannot be written would leave nothing of the hang).
  const auto slash = o.report.rfind('/');
  const std::string folder = slash == std::string::npos ? "." : slash == 0 ? "/" : o.report.substr(0, slash);
  if (!o.command.empty() && ::access(folder.c_str(), W_OK | X_OK) != 0)
    throw Error::usage(
        fmt::format("--report {}: its folder {} is not writable ({})", o.report, folder, std::strerror(errno)));
  return o;
}

std::uint64_t total_ops(const job::RasStatus& s) {
  std::uint64_t n = 0;
  for (const auto& c : s.communicators)
    for (const auto& r : c.ranks)
      for (const auto& [kind, count] : r.ops) n += count;
  return n;
}

// Two RAS looks 2 s apart; nothing when RAS cannot be asked (`why` says why).
struct Looks {
  job::RasReply last;
  std::optional<job::RasStatus> before, now;
  double between_s = 0;
  std::string why;
  bool progressing() const { return before && now && total_ops(*now) > total_ops(*before); }
};

Looks look(const Options& o) {
  Looks l;
  if (!o.ras) return l.why = "--no-ras", l;
  try {
    const auto first = job::query_ras(*o.ras, o.ras_timeout_s, "--ras");
    const auto start = Clock::now();
    std::this_thread::sleep_for(std::chrono::seconds(2));
    l.last = job::query_ras(*o.ras, o.ras_timeout_s, "--ras");
    l.between_s = seconds(Clock::now() - start);
    if (first.json && l.last.json) l.before = job::parse_ras_json(first.text), l.now = job::parse_ras_json(l.last.text);
  } catch (const std::exception& e) {
    l.why = e.what();
  }
  return l;
}

// `pids` with the processes RAS names (laggards, dead, missing) first, in the order named, then the others.
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

std::string hostname() {
  char name[256] = {};
  ::gethostname(name, sizeof name - 1);
  return name;
}

// The report: the hang, RAS's findings and tables (as fabric-doctor --nccl-ras), the stacks.
void report(const Options& o, const job::ChildProcess& child, const Looks& looks, double quiet_s,
            const std::vector<job::Stack>& stacks, const std::vector<std::string>& done) {
  results::ResultSet out;
  out.add(std::make_unique<results::TerminalTable>(stderr));
  out.add(std::make_unique<results::Hdf5Sink>(o.report, o.force));
  out.begin({kProgram, FABRICBENCH_VERSION, o.command_line, results::utc_timestamp(), 1, {hostname()}});
  const auto findings_table = doctor::findings_table("doctor", "findings");
  out.declare(findings_table);
  out.note(fmt::format("hang: no output from pid {} for {:.0f} s (--timeout {:.0f} s){}", child.pid(), quiet_s,
                       o.timeout_s,
                       looks.now ? fmt::format(" and no collective launched in {:.1f} s (NCCL RAS)", looks.between_s)
                                 : fmt::format("; NCCL RAS not asked: {}", looks.why)));
  std::vector<doctor::Finding> found{{hostname(), -1, "watchdog.no_progress", fmt::format("pid {}", child.pid()),
                                      doctor::Status::fail,
                                      fmt::format("no output for {:.0f} s{}", quiet_s,
                                                  looks.now ? ", no collective launched on any communicator" : ""),
                                      "output or collectives within --timeout",
                                      fmt::format(
                                          "done: {}", done.empty() ? "nothing" : [&] {
                                            std::string s;
                                            for (const auto& d : done) s += (s.empty() ? "" : ", ") + d;
                                            return s;
                                          }())}};
  doctor::write_findings(out, findings_table, found, true);
  if (o.ras && !looks.why.empty() && looks.why != "--no-ras") out.note(fmt::format("NCCL RAS: {}", looks.why));
  if (o.ras && looks.why.empty())
    doctor::NcclRasMode(*o.ras, looks.last, looks.now, looks.before, looks.between_s)
        .write(out, findings_table, false, false);
  job::write_stacks(out, "watchdog", "stacks", stacks);
  out.finish("complete");
}

// The textfile of one look: what node_exporter shows between two looks. `before`: the previous look's status.
void write_metrics(const Options& o, const std::optional<job::RasStatus>& now, const job::RasStatus* before,
                   const std::string& why) {
  results::Exposition e(kProgram);
  e.add("nccl_ras_up", "1 when the node's NCCL RAS service answered the last look in JSON", {}, now ? 1 : 0);
  e.add("nccl_ras_look_timestamp_seconds", "when the last look was taken (Unix time)", {},
        std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count());
  if (now) {
    std::size_t dead = 0, laggards = 0, missing = 0;
    for (const auto& p : job::judge_ras(*now, before)) {
      dead += p.kind == "dead";
      laggards += before && p.kind == "laggard";  // confirmed by two looks only
      missing += p.kind == "missing";
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
    std::fprintf(stderr, "%s: %s\n", kProgram, err.what());
  }
  if (!now && !why.empty()) std::fprintf(stderr, "%s: NCCL RAS: %s\n", kProgram, why.c_str());
}

// One look of --watch: the status, or nothing (`why` says why).
std::optional<job::RasStatus> watch_look(const Options& o, std::string& why) {
  try {
    const auto reply = job::query_ras(*o.ras, o.ras_timeout_s, "--ras");
    if (reply.json) return job::parse_ras_json(reply.text);
    why = "this NCCL answers in text only (JSON from 2.28.7)";
  } catch (const std::exception& e) {
    why = e.what();
  }
  return std::nullopt;
}

volatile std::sig_atomic_t g_stop = 0;

// --watch without a command: looks until SIGTERM or SIGINT.
int monitor(const Options& o) {
  std::signal(SIGTERM, [](int) { g_stop = 1; });
  std::signal(SIGINT, [](int) { g_stop = 1; });
  std::optional<job::RasStatus> before;
  while (!g_stop) {
    std::string why;
    auto now = watch_look(o, why);
    write_metrics(o, now, before ? &*before : nullptr, why);
    before = std::move(now);
    for (auto until =
             Clock::now() + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(o.watch_s));
         !g_stop && Clock::now() < until;)
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  return 0;
}

int run(const Options& o) {
  if (o.command.empty()) return monitor(o);
  std::optional<job::PythonStackHook> hook;
  std::vector<std::string> env;
  if (o.unbuffered) env.push_back("PYTHONUNBUFFERED=1");
  if (o.stacks && o.python_hook) env.push_back(hook.emplace().env());
  job::ChildProcess child(o.command, env);
  auto quiet_since = child.last_output();
  auto next_look = Clock::now();
  std::optional<job::RasStatus> watched;
  while (child.pump(std::min(1.0, o.timeout_s / 4))) {
    quiet_since = std::max(quiet_since, child.last_output());
    if (o.watch_s > 0 && Clock::now() >= next_look) {
      std::string why;
      auto now = watch_look(o, why);
      write_metrics(o, now, watched ? &*watched : nullptr, why);
      watched = std::move(now);
      next_look = Clock::now() + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(o.watch_s));
    }
    const double quiet_s = seconds(Clock::now() - quiet_since);
    if (quiet_s < o.timeout_s) continue;
    const auto looks = look(o);
    if (looks.progressing()) {
      std::fprintf(stderr, "%s: no output for %.0f s, but the job's collectives advance (NCCL RAS): not hung\n",
                   kProgram, quiet_s);
      quiet_since = Clock::now();
      continue;
    }
    std::fprintf(stderr, "%s: no output for %.0f s%s: the job looks hung; taking its report to %s\n", kProgram, quiet_s,
                 looks.now ? " and no collective launched" : "", o.report.c_str());
    std::vector<std::string> done;
    std::vector<job::Stack> stacks;
    if (o.stacks) {
      stacks = job::take_stacks(named_first(child.tree(), looks), 20, hook ? &*hook : nullptr);
      done.push_back(fmt::format("stacks of {} process(es)", stacks.size()));
    }
    if (o.kill) done.push_back("kill");
    if (o.scancel) done.push_back(std::getenv("SLURM_JOB_ID") ? "scancel" : "scancel skipped (no SLURM_JOB_ID)");
    if (!o.exec.empty()) done.push_back("exec:" + o.exec);
    report(o, child, looks, quiet_s, stacks, done);
    if (!o.exec.empty())
      std::system(fmt::format("FABRIC_WATCHDOG_REPORT='{}' FABRIC_WATCHDOG_PID={} timeout 60 '{}'", o.report,
                              child.pid(), o.exec)
                      .c_str());
    if (o.scancel)
      if (const char* id = std::getenv("SLURM_JOB_ID")) std::system(fmt::format("scancel {}", id).c_str());
    if (o.kill) {
      child.stop(10);
      return static_cast<int>(ExitStatus::runtime);
    }
    // Reported without stopping the job: watch on, passing its output through; one report per run.
    std::fprintf(stderr, "%s: reported once (%s); watching on without reporting again\n", kProgram, o.report.c_str());
    while (child.pump(1.0)) {
    }
    break;
  }
  return child.status();
}

}  // namespace

int main(int argc, char** argv) {
  return main_of(kProgram, [&] { return run(parse(argc, argv)); });
}

}  // namespace fabricbench::watchdog
