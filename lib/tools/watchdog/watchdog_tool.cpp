#include "fabricbench/tools/watchdog/watchdog_tool.hpp"

#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
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
#include "fabricbench/doctor/ras_report.hpp"
#include "fabricbench/error.hpp"
#include "fabricbench/job/child_process.hpp"
#include "fabricbench/job/host_sampler.hpp"
#include "fabricbench/job/ras.hpp"
#include "fabricbench/job/stacks.hpp"
#include "fabricbench/results/hdf5_sink.hpp"
#include "fabricbench/results/printable.hpp"
#include "fabricbench/results/prometheus.hpp"
#include "fabricbench/results/result_set.hpp"
#include "fabricbench/results/terminal_table.hpp"
#include "fabricbench/tools/watchdog/gpu_samples.hpp"
#include "fabricbench/tools/watchdog/nic_samples.hpp"
#include "fabricbench/tools/watchdog/ras_looks.hpp"
#include "fabricbench/tools/watchdog/slow_judge.hpp"
#include "fabricbench/tools/watchdog/watchdog_action.hpp"
#include "fabricbench/tools/watchdog/watchdog_options.hpp"

namespace fabricbench::tools::watchdog {
namespace {

using Clock = std::chrono::steady_clock;

double seconds_of(Clock::duration d) { return std::chrono::duration<double>(d).count(); }
Clock::duration span(double s) { return std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(s)); }

std::string hostname() {
  char name[256] = {};
  ::gethostname(name, sizeof name - 1);
  return name;
}

// The report: the hang, RAS's findings and tables (as fabric-doctor --nccl-ras), the stacks.
void write_hang_report(const RunMode& o, const std::string& command_line, const job::ChildProcess& child,
                       const Looks& looks, double quiet_s, const std::vector<job::Stack>& stacks,
                       const std::vector<std::string>& done) {
  results::ResultSet out;
  out.add(std::make_unique<results::TerminalTable>(stderr));
  out.add(std::make_unique<results::Hdf5Sink>(o.report, o.force));
  out.begin({kProgram, FABRICBENCH_VERSION, command_line, results::utc_timestamp(), 1, {hostname()}});
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
  if (o.ras.address && !looks.why.empty() && looks.why != "--no-ras") out.note(fmt::format("NCCL RAS: {}", looks.why));
  if (o.ras.address && looks.why.empty())
    doctor::NcclRasMode(*o.ras.address, looks.last, looks.now, looks.before, looks.between_s)
        .write(out, findings_table, false, false);
  job::write_stacks(out, "watchdog", "stacks", stacks);
  out.finish("complete");
}

// The last of SIGTERM, SIGINT or SIGHUP that asked us to end, and how many did (0: none).
volatile std::sig_atomic_t g_stop = 0, g_stops = 0;

// Handlers without SA_RESTART: a signal cuts a wait (poll) short, so the loops see it at once.
void catch_stop_signals() {
  struct sigaction sa {};
  sa.sa_handler = [](int s) { g_stop = s, g_stops = g_stops + 1; };
  sigemptyset(&sa.sa_mask);
  for (int s : {SIGTERM, SIGINT, SIGHUP}) ::sigaction(s, &sa, nullptr);
}

// --watch without a command: looks until SIGTERM, SIGINT or SIGHUP.
int monitor(const MonitorMode& o) {
  std::optional<job::RasStatus> before;
  while (!g_stop) {
    std::string why;
    auto now = watch_look(o.ras, why);
    write_metrics(o.ras, now, before ? &*before : nullptr, why);
    before = std::move(now);
    for (auto until = Clock::now() + span(o.ras.watch_s); !g_stop && Clock::now() < until;)
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  return 0;
}

// The watchdog asked to end (SIGTERM from kill, systemd or a container stop; SIGINT from Ctrl-C, which reaches only
// our process group; SIGHUP): the signal passed to the job's processes, their output passed on while they end, then
// SIGKILL after 10 s or at a second signal. The job's exit status, or 128 + the signal where it had to be killed.
int end_on_signal(job::ChildProcess& child) {
  const int sig = g_stop, stops = g_stops;
  std::fprintf(stderr, "%s: %s: passed to the job (pid %d and its process group); SIGKILL in 10 s if it goes on\n",
               kProgram, strsignal(sig), static_cast<int>(child.pid()));
  child.signal(sig);
  const auto kill_at = Clock::now() + std::chrono::seconds(10);
  bool killed = false;
  for (auto give_up = Clock::time_point::max(); child.pump(0.2) && Clock::now() < give_up;) {
    if (killed || (Clock::now() < kill_at && g_stops == stops)) continue;
    child.signal(SIGKILL);
    killed = true;
    give_up = Clock::now() + std::chrono::seconds(2);  // what a killed job's strays still hold is not waited for
  }
  return child.exited() && !killed ? child.status() : 128 + sig;
}

// --slow's judge: this program again with --judge, its own process (a judge that dies takes nothing of the job).
class SlowJudgeProcess {
 public:
  explicit SlowJudgeProcess(const JudgeMode& o) {
    char exe[4096] = {};
    const auto n = ::readlink("/proc/self/exe", exe, sizeof exe - 1);
    const auto argv = o.argv(n > 0 ? std::string(exe, static_cast<std::size_t>(n)) : kProgram);
    process_.emplace(argv, std::vector<std::string>{});
  }
  // Passes its output on; says once when it ended before being asked to.
  void pump() {
    if (!process_ || said_ || process_->pump(0)) return;
    said_ = true;
    std::fprintf(stderr, "%s: --slow: the judge (pid %d) ended with status %d; the job goes on, unjudged\n", kProgram,
                 static_cast<int>(process_->pid()), process_->status());
  }
  // The job ended (SIGTERM), or the watchdog was stopped while it ran (`interrupted`: SIGINT, and the report says
  // so): the judge reads what its ranks wrote last, writes its report and ends (bounded: 60 s).
  void finish(bool interrupted) {
    if (!process_ || said_) return;
    process_->signal(interrupted ? SIGINT : SIGTERM);
    const auto until = Clock::now() + std::chrono::seconds(60);
    while (process_->pump(0.2))
      if (Clock::now() > until) {
        process_->stop(5);
        break;
      }
  }

 private:
  std::optional<job::ChildProcess> process_;
  bool said_ = false;
};

int watch(const RunMode& o, const std::string& command_line, job::ChildProcess& child,
          std::optional<job::PythonStackHook>& hook, std::optional<SlowJudgeProcess>& judge);

int run(const RunMode& o, const std::string& command_line) {
  std::optional<job::PythonStackHook> hook;
  std::vector<std::string> env;
  if (o.unbuffered) env.push_back("PYTHONUNBUFFERED=1");
  if (o.stacks && o.python_hook) env.push_back(hook.emplace().env());
  std::optional<SlowJudgeProcess> judge;
  if (o.slow) {
    env.insert(env.end(), o.environment.begin(), o.environment.end());
    if (first_task()) judge.emplace(*o.slow);
  }
  job::ChildProcess child(o.command, env, hook ? hook->folder() : "");
  // --slow: this host's samples of the job's processes beside the ranks' records (host_sampler.hpp), to the job's
  // end; what they cost said then.
  std::optional<GpuSamples> gpus;  // (outlives the sampler that calls it)
  std::optional<job::HostSampler> sampler;
  if (o.slow) {
    char host[256] = {};
    ::gethostname(host, sizeof host - 1);
    const auto files = facts::HostFiles::for_host(host);
    job::HostSampler::Devices devices;
    devices.nics = [files] { return nic_samples(files); };
    std::string why;
    auto nvml = facts::load_nvml(&why);
    if (gpus.emplace(std::move(nvml), why, files).available())
      devices.gpus = [&gpus](const std::vector<std::string>& ids, const std::set<int>& own, std::int64_t now) {
        return gpus->sample(ids, own, now);
      };
    sampler.emplace(o.slow->folder, child.pid(), std::move(devices));
  }
  const int status = watch(o, command_line, child, hook, judge);
  if (sampler) {
    std::fprintf(stderr,
                 "%s: --slow: this host's sampler: %zu sample(s), %.3f s of CPU over %.0f s (%.3f%% of one CPU); "
                 "GPUs: %s; XIDs: %s\n",
                 kProgram, sampler->samples(), sampler->cpu_s(), sampler->wall_s(),
                 100 * sampler->cpu_s() / std::max(1.0, sampler->wall_s()),
                 gpus->available() ? "NVML" : gpus->why().c_str(), gpus->xid_source().c_str());
    sampler.reset();
  }
  if (judge) judge->finish(g_stop != 0);
  return status;
}

int watch(const RunMode& o, const std::string& command_line, job::ChildProcess& child,
          std::optional<job::PythonStackHook>& hook, std::optional<SlowJudgeProcess>& judge) {
  auto quiet_since = child.last_output();
  auto next_look = Clock::now();
  std::optional<job::RasStatus> watched;
  while (child.pump(std::min(1.0, o.timeout_s / 4))) {
    if (judge) judge->pump();
    if (g_stop) return end_on_signal(child);
    quiet_since = std::max(quiet_since, child.last_output());
    if (o.ras.watch_s > 0 && Clock::now() >= next_look) {
      std::string why;
      auto now = watch_look(o.ras, why);
      write_metrics(o.ras, now, watched ? &*watched : nullptr, why);
      watched = std::move(now);
      next_look = Clock::now() + span(o.ras.watch_s);
    }
    const double quiet_s = seconds_of(Clock::now() - quiet_since);
    if (quiet_s < o.timeout_s) continue;
    const auto looks = look(o.ras);
    if (g_stop) return end_on_signal(child);
    if (looks.progressing()) {
      std::fprintf(stderr, "%s: no output for %.0f s, but the job's collectives advance (NCCL RAS): not hung\n",
                   kProgram, quiet_s);
      quiet_since = Clock::now();
      continue;
    }
    std::fprintf(stderr, "%s: no output for %.0f s%s: the job looks hung; taking its report to %s\n", kProgram, quiet_s,
                 looks.now ? " and no collective launched" : "", results::printable(o.report).c_str());
    std::vector<std::string> done;
    std::vector<job::Stack> stacks;
    if (o.stacks) {
      stacks = job::take_stacks(named_first(child.tree(), looks), 20, hook ? &*hook : nullptr);
      done.push_back(fmt::format("stacks of {} process(es)", stacks.size()));
    }
    if (o.kill) done.push_back("kill");
    if (o.scancel) done.push_back(std::getenv("SLURM_JOB_ID") ? "scancel" : "scancel skipped (no SLURM_JOB_ID)");
    if (!o.exec.empty()) done.push_back("exec:" + o.exec);
    write_hang_report(o, command_line, child, looks, quiet_s, stacks, done);
    if (!o.exec.empty() && !g_stop)
      run_action({o.exec}, {"FABRIC_WATCHDOG_REPORT=" + o.report, fmt::format("FABRIC_WATCHDOG_PID={}", child.pid())},
                 o.action_timeout_s, g_stop);
    if (o.scancel && !g_stop)
      if (const char* id = std::getenv("SLURM_JOB_ID")) run_action({"scancel", id}, {}, o.action_timeout_s, g_stop);
    if (g_stop) return end_on_signal(child);
    if (o.kill) {
      child.stop(10);
      return static_cast<int>(ExitStatus::runtime);
    }
    // Reported without stopping the job: watch on, passing its output through; one report per run.
    std::fprintf(stderr, "%s: reported once (%s); watching on without reporting again\n", kProgram,
                 results::printable(o.report).c_str());
    while (child.pump(1.0)) {
      if (judge) judge->pump();
      if (g_stop) return end_on_signal(child);
    }
    break;
  }
  return child.status();
}

}  // namespace

int main(int argc, char** argv) {
  return main_of(kProgram, [&] {
    const auto o = Options::parse(argc, argv);
    catch_stop_signals();
    if (const auto* judge = std::get_if<JudgeMode>(&o.mode)) return run_judge(*judge, o.command_line, g_stop);
    if (const auto* watch = std::get_if<MonitorMode>(&o.mode)) return monitor(*watch);
    return run(std::get<RunMode>(o.mode), o.command_line);
  });
}

}  // namespace fabricbench::tools::watchdog
