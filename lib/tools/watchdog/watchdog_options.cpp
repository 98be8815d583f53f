#include "fabricbench/tools/watchdog/watchdog_options.hpp"

#include <fcntl.h>
#include <fmt/format.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <boost/program_options.hpp>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <sstream>

#include "fabricbench/app/slow_recording.hpp"
#include "fabricbench/cli/command_line.hpp"
#include "fabricbench/error.hpp"
#include "fabricbench/job/slow_folder.hpp"
#include "fabricbench/results/prometheus.hpp"
#include "fabricbench/results/result_set.hpp"

namespace fabricbench::tools::watchdog {
namespace {

namespace po = boost::program_options;

// An action's program: a regular file this user may run (a folder passes access(X_OK), and fails at every run).
bool runnable(const std::string& path) {
  struct stat st {};
  return ::stat(path.c_str(), &st) == 0 && S_ISREG(st.st_mode) && ::access(path.c_str(), X_OK) == 0;
}

// What writing the report at the hang needs, tried at the start (a report that cannot be written then leaves nothing
// of the hang): a file can be created in its folder (access(2) says yes to root in /proc, where none can), and a file
// that --force overwrites is a regular one.
void check_report(const std::string& path, const std::string& option = "--report") {
  const auto slash = path.rfind('/');
  const std::string folder = slash == std::string::npos ? "." : slash == 0 ? "/" : path.substr(0, slash);
  struct stat st {};
  if (::stat(path.c_str(), &st) == 0 && !S_ISREG(st.st_mode))
    throw Error::usage(fmt::format("{} {}: not a regular file; give a path for the report's HDF5 file", option, path));
  const auto probe = fmt::format("{}/.fabric-watchdog-probe-{}", folder, ::getpid());
  const int fd = ::open(probe.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
  if (fd < 0)
    throw Error::usage(
        fmt::format("{} {}: its folder {} is not writable ({})", option, path, folder, std::strerror(errno)));
  ::close(fd);
  ::unlink(probe.c_str());
}

// Which modes take the options some mode refuses (the others every mode takes): a bit each. kSlow is a run with
// --slow DIR, whose judge takes what JudgeMode takes.
enum Takes : unsigned { kRun = 1, kMonitor = 2, kJudge = 4, kSlow = 8 };
struct OptionUse {
  const char* name;
  unsigned modes;
};
// In the order a refusal looks: the first given is the one named.
constexpr OptionUse kUses[] = {
    {"timeout", kRun | kSlow},
    {"actions", kRun | kSlow},
    {"action-timeout", kRun | kSlow | kJudge},
    {"report", kRun | kSlow},
    {"force", kRun | kSlow | kJudge},
    {"watch", kRun | kSlow | kMonitor},
    {"prometheus", kRun | kSlow | kMonitor},
    {"ras", kRun | kSlow | kMonitor},
    {"no-ras", kRun | kSlow},
    {"ras-timeout", kRun | kSlow | kMonitor},
    {"python-unbuffered", kRun | kSlow},
    {"no-python-hook", kRun | kSlow},
    {"slow-window", kSlow | kJudge},
    {"slow-settle", kSlow | kJudge},
    {"slow-loss", kSlow | kJudge},
    {"slow-report", kSlow | kJudge},
    {"slow-prometheus", kSlow | kJudge},
    {"slow-exec", kSlow | kJudge},
    {"replay", kJudge},
};

// The first option the user gave (not defaulted) that none of `modes` takes, or "".
std::string refused(const po::variables_map& v, unsigned modes) {
  for (const auto& u : kUses)
    if (!(u.modes & modes) && v.count(u.name) && !v[u.name].defaulted()) return u.name;
  return "";
}

// Whether the user gave `name` (not defaulted).
bool given(const po::variables_map& v, const char* name) { return v.count(name) && !v[name].defaulted(); }

// The actions --actions names, each a switch of Options; exec:PATH, the one with a value, is apart.
struct ActionWord {
  std::string_view word;
  bool RunMode::*on;
};
constexpr ActionWord kActions[] = {
    {"stacks", &RunMode::stacks}, {"kill", &RunMode::kill}, {"scancel", &RunMode::scancel}};
constexpr std::string_view kExec = "exec:";

// --actions' comma list into `o`: each action at most once, exec:PATH with its path.
void parse_actions(RunMode& o, const std::string& action_text) {
  std::istringstream actions(action_text);
  std::vector<std::string> seen;
  for (std::string a; std::getline(actions, a, ',');) {
    const std::string kind = a.rfind(kExec, 0) == 0 ? std::string(kExec) : a;
    if (std::find(seen.begin(), seen.end(), kind) != seen.end())
      throw Error::usage(fmt::format("--actions '{}': {} given twice; each action at most once", action_text, kind));
    seen.push_back(kind);
    const auto* action = std::find_if(std::begin(kActions), std::end(kActions), [&](auto& w) { return w.word == a; });
    if (action != std::end(kActions)) {
      o.*(action->on) = true;
    } else if (kind == kExec && a.size() > kExec.size()) {
      o.exec = a.substr(kExec.size());
    } else {
      std::string allowed;
      for (const auto& w : kActions) allowed += fmt::format("{}, ", w.word);
      throw Error::usage(
          fmt::format("--actions '{}': allowed values are {}{}PATH (comma-separated)", action_text, allowed, kExec));
    }
  }
}

std::string absolute(const std::string& path) {
  if (!path.empty() && path[0] == '/') return path;
  char cwd[4096] = {};
  return std::string(::getcwd(cwd, sizeof cwd - 1) ? cwd : ".") + "/" + path;
}

}  // namespace

bool first_task() {
  for (const char* name : {"SLURM_PROCID", "OMPI_COMM_WORLD_RANK", "PMI_RANK", "PMIX_RANK"})
    if (const char* v = std::getenv(name)) return std::string(v) == "0";
  return true;
}

namespace {

// The judge's settings: --judge DIR's, or --slow DIR's judge (`slow`).
JudgeMode parse_judge(const po::variables_map& v, bool slow) {
  JudgeMode s;
  const bool judge = !slow;
  s.folder = absolute(v[slow ? "slow" : "judge"].as<std::string>());
  const std::string option = slow ? "--slow" : "--judge";
  if (slow)
    job::SlowFolder::prepare(s.folder, option);
  else
    job::SlowFolder(s.folder, option);
  s.window_s = cli::parse_duration(v["slow-window"].as<std::string>(), "--slow-window");
  if (s.window_s < 1 || s.window_s > 3600)
    throw Error::usage(fmt::format("--slow-window {}: allowed 1s to 1h", v["slow-window"].as<std::string>()));
  s.settle_s = cli::parse_duration(v["slow-settle"].as<std::string>(), "--slow-settle", true);
  if (s.settle_s < 0 || s.settle_s > 600)
    throw Error::usage(fmt::format("--slow-settle {}: allowed 0s to 10min", v["slow-settle"].as<std::string>()));
  s.loss_pct = v["slow-loss"].as<double>();
  if (!(s.loss_pct > 0 && s.loss_pct < 100))
    throw Error::usage(fmt::format("--slow-loss {}: allowed above 0 and below 100 (percent)", s.loss_pct));
  s.report = v.count("slow-report") ? v["slow-report"].as<std::string>() : s.folder + "/slow-report.h5";
  s.force = v.count("force") > 0;
  // Only the task that judges writes it (a task started late would otherwise find the first 30 s report).
  if (!s.force && (judge || first_task()) && ::access(s.report.c_str(), F_OK) == 0)
    throw Error::usage(fmt::format("--slow-report {}: file exists; choose another path or add --force", s.report));
  check_report(s.report, "--slow-report");
  if (v.count("slow-prometheus")) {
    s.prometheus = v["slow-prometheus"].as<std::string>();
    results::Exposition::check_writable(s.prometheus);
  }
  if (v.count("slow-exec")) {
    s.exec = v["slow-exec"].as<std::string>();
    if (!runnable(s.exec)) throw Error::usage(fmt::format("--slow-exec {}: not an executable file", s.exec));
  }
  s.action_timeout_s = cli::parse_duration(v["action-timeout"].as<std::string>(), "--action-timeout");
  if (v.count("replay") && !judge) throw Error::usage("--replay judges a folder after the fact: give --judge DIR");
  s.replay = v.count("replay") > 0;
  return s;
}

// --watch and --prometheus, as the run and the monitor take them.
RasSettings parse_watch(const po::variables_map& v) {
  RasSettings r;
  if (v.count("watch")) r.watch_s = cli::parse_duration(v["watch"].as<std::string>(), "--watch");
  if (v.count("prometheus")) {
    if (!v.count("watch")) throw Error::usage("--prometheus is written by --watch's looks: give --watch D too");
    r.prometheus = v["prometheus"].as<std::string>();
    results::Exposition::check_writable(r.prometheus);
  } else if (v.count("watch")) {
    throw Error::usage("--watch: give --prometheus FILE, the textfile its looks keep");
  }
  if (v.count("watch") && v.count("no-ras")) throw Error::usage("--watch asks NCCL's RAS: drop --no-ras");
  return r;
}

// The rest of the run's options: the hang, its actions and its report.
void parse_run(RunMode& o, const po::variables_map& v) {
  if (given(v, "ras") || given(v, "ras-timeout"))
    if (v.count("no-ras"))
      throw Error::usage(fmt::format("--{} with --no-ras: RAS is not asked; drop one of them",
                                     given(v, "ras") ? "ras" : "ras-timeout"));
  o.timeout_s = cli::parse_duration(v["timeout"].as<std::string>(), "--timeout");
  o.ras.timeout_s = cli::parse_duration(v["ras-timeout"].as<std::string>(), "--ras-timeout");
  o.action_timeout_s = cli::parse_duration(v["action-timeout"].as<std::string>(), "--action-timeout");
  if (!v.count("no-ras")) o.ras.address = job::RasAddress::parse(v["ras"].as<std::string>(), "--ras");
  parse_actions(o, v["actions"].as<std::string>());
  if (!o.exec.empty() && !runnable(o.exec))
    throw Error::usage(fmt::format("--actions exec:{}: not an executable file", o.exec));
  if (v.count("no-python-hook") && !o.stacks)
    throw Error::usage("--no-python-hook: the hook serves the stacks action, which --actions leaves out; drop it");
  if (v.count("force") && !v.count("report") && !v.count("slow-report"))
    throw Error::usage("--force overwrites the --report (or --slow-report) file: give it, or drop --force");
  if (given(v, "action-timeout") && o.exec.empty() && !o.scancel && !(o.slow && !o.slow->exec.empty()))
    throw Error::usage(
        "--action-timeout bounds the exec: and scancel actions and --slow-exec, none of which is given; drop it");
  const char* job = std::getenv("SLURM_JOB_ID");
  if (v.count("report")) {
    o.report = v["report"].as<std::string>();
  } else {
    o.report = fmt::format("fabric-watchdog-{}-{}.h5", job ? job : std::to_string(::getpid()),
                           results::utc_timestamp().substr(0, 19));
    for (auto& c : o.report)
      if (c == ':') c = '-';  // the time's colons: a name every file system and scp take
  }
  o.force = v.count("force") > 0;
  o.unbuffered = v.count("python-unbuffered") > 0;
  o.python_hook = !v.count("no-python-hook");
  if (!o.force && ::access(o.report.c_str(), F_OK) == 0)
    throw Error::usage(fmt::format("--report {}: file exists; choose another path or add --force", o.report));
  check_report(o.report);
}

}  // namespace

namespace {

// Every option, its default and its help (the --help text).
po::options_description described() {
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
  add("action-timeout", po::value<std::string>()->default_value("60s"),
      "bound of the exec: and scancel actions: SIGTERM to the action's process group then, SIGKILL 5 s later");
  add("report", po::value<std::string>(), "the report's HDF5 file (default fabric-watchdog-<job>-<time>.h5 here)");
  add("force", "overwrite an existing --report file");
  add("watch", po::value<std::string>(),
      "ask NCCL's RAS this often (30s, 1m) and keep --prometheus up to date; without a command after --, only that "
      "(a monitor for node_exporter, as a separate step of the allocation), until SIGTERM");
  add("prometheus", po::value<std::string>(),
      "with --watch: node_exporter's textfile, rewritten whole after each look: RAS up, communicators, dead "
      "processes, laggard ranks (unchanged since the last look), missing ranks, op spread per communicator");
  add("slow", po::value<std::string>(),
      "name the slow rank (or link) of a running job: fabricbench's NCCL profiler plugin in the command's environment "
      "(NCCL_PROFILER_PLUGIN), each process's records in DIR (made 0700; shared across nodes for a whole-job view), "
      "judged every second by the watchdog of the launcher's first task; a line when a rank makes the others wait, "
      "or a link slows them, and when it stops; the report in --slow-report every 30 s and at the end");
  add("judge", po::value<std::string>(),
      "only the judge of --slow's folder DIR (on any node that sees it), until SIGTERM or SIGINT");
  add("replay",
      "with --judge: judge what the folder holds after the fact, second by second in the records' own "
      "time (the lines the live judge would have printed, each with its time), then write the report");
  add("slow-window", po::value<std::string>()->default_value("10s"), "the window a rank is judged over");
  add("slow-settle", po::value<std::string>()->default_value("5s"),
      "a communicator's first seconds (and the first 3 collectives of each kind) are not judged: NCCL connects its "
      "ranks there");
  add("slow-loss", po::value<double>()->default_value(10),
      "percent of the window the others must spend waiting for a rank before it is named");
  add("slow-report", po::value<std::string>(),
      "the judge's HDF5 report, every 30 s and at the end (default DIR/slow-report.h5)");
  add("slow-prometheus", po::value<std::string>(),
      "node_exporter's textfile the judge rewrites every second: per rank the wait, the late share, the time lost; "
      "per slow link its ratio and loss");
  add("slow-exec", po::value<std::string>(),
      "run PATH when a rank, link or collective is named, with FABRIC_WATCHDOG_SLOW (the line), _KIND, _RANK, "
      "_PEER, _HOST, _PID, _COMM set; bounded by --action-timeout");
  add("python-unbuffered",
      "set PYTHONUNBUFFERED=1 for the command: a Python job whose output goes to a pipe flushes it every ~8 KiB, "
      "so one that prints rarely can look silent; then every print is a write into the watchdog's pipe (a job "
      "printing 200,000 lines at full speed took 2.5x as long)");
  add("no-python-hook",
      "do not arm Python's faulthandler in the command's Python processes (a sitecustomize.py first on "
      "PYTHONPATH; on a hang each writes its threads' tracebacks on SIGRTMIN+7): their Python stacks then need "
      "py-spy");
  return d;
}

}  // namespace

Options Options::parse(int argc, char** argv) {
  Options o;
  int split = argc;
  for (int i = 1; i < argc; ++i)
    if (std::string(argv[i]) == "--") {
      split = i;
      break;
    }
  for (int i = 0; i < argc; ++i) o.command_line += (i ? " " : "") + std::string(argv[i]);
  const auto d = described();
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
  const bool slow = v.count("slow"), judge = v.count("judge");
  if (const auto n = refused(v, kRun | kMonitor); !slow && !judge && !n.empty())
    throw Error::usage(fmt::format("--{} belongs to --slow DIR (or --judge DIR): give one, or drop --{}", n, n));
  if (slow && judge) throw Error::usage("--slow and --judge: --slow starts its own judge; give one of them");
  std::vector<std::string> command;
  for (int i = split + 1; i < argc; ++i) command.emplace_back(argv[i]);
  if (judge) {
    auto j = parse_judge(v, false);
    if (!command.empty())
      throw Error::usage("--judge judges a folder alone: drop the command after --, or use --slow DIR -- COMMAND");
    if (const auto n = refused(v, kJudge); !n.empty())
      throw Error::usage(fmt::format("--{}: --judge only judges the folder; drop --{}", n, n));
    o.mode = std::move(j);
    return o;
  }
  RunMode run;
  if (slow) {
    run.slow = parse_judge(v, true);
    if (command.empty()) throw Error::usage("--slow DIR: give the command to watch after --");
    run.environment = app::SlowRecording::check("--slow", "; unset it or drop --slow").environment(run.slow->folder);
  }
  run.ras = parse_watch(v);
  if (command.empty() && !v.count("watch"))
    throw Error::usage("give the command to watch after --: fabric-watchdog [OPTIONS] -- COMMAND (or --watch D)");
  if (command.empty()) {
    if (const auto n = refused(v, kMonitor); !n.empty())
      throw Error::usage(
          fmt::format("--{}: there is no command to watch (--watch alone keeps --prometheus up to date); "
                      "drop --{} or give the command after --",
                      n, n));
    MonitorMode m{run.ras};
    m.ras.timeout_s = cli::parse_duration(v["ras-timeout"].as<std::string>(), "--ras-timeout");
    m.ras.address = job::RasAddress::parse(v["ras"].as<std::string>(), "--ras");
    o.mode = std::move(m);
    return o;
  }
  run.command = std::move(command);
  parse_run(run, v);
  o.mode = std::move(run);
  return o;
}

std::vector<std::string> JudgeMode::argv(const std::string& program) const {
  std::vector<std::string> a{program,
                             "--judge",
                             folder,
                             "--slow-window",
                             fmt::format("{}s", window_s),
                             "--slow-settle",
                             fmt::format("{}s", settle_s),
                             "--slow-loss",
                             fmt::format("{}", loss_pct),
                             "--slow-report",
                             report,
                             "--action-timeout",
                             fmt::format("{}s", action_timeout_s)};
  if (force) a.push_back("--force");
  if (!prometheus.empty()) a.insert(a.end(), {"--slow-prometheus", prometheus});
  if (!exec.empty()) a.insert(a.end(), {"--slow-exec", exec});
  return a;
}

}  // namespace fabricbench::tools::watchdog
