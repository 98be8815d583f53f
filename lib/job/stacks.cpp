#include "fabricbench/job/stacks.hpp"

#include <dirent.h>
#include <fmt/format.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <thread>

#include "fabricbench/error.hpp"

namespace fabricbench::job {
namespace {

// Run by every Python process that has the hook's folder first on its PYTHONPATH.
constexpr const char* kSiteCustomize = R"(
# fabric-watchdog's stack hook: on signal SIGRTMIN+7 this process writes its threads' tracebacks to
# FOLDER/PID.py-stack; that file exists only once the handler is in place.
import faulthandler, os, signal, sys

_folder = os.path.dirname(os.path.abspath(__file__))
_file = None


def _arm():
    global _file
    arming = os.path.join(_folder, "%d.arming" % os.getpid())
    try:
        _file = open(arming, "w")
        faulthandler.register(signal.SIGRTMIN + 7, file=_file, all_threads=True)
        os.rename(arming, os.path.join(_folder, "%d.py-stack" % os.getpid()))
    except (OSError, RuntimeError, ValueError, AttributeError):
        try:
            os.unlink(arming)
        except OSError:
            pass


_arm()
os.register_at_fork(after_in_child=_arm)
# A sitecustomize further on the path (the user's, the distribution's) still runs.
_ours = sys.modules.pop("sitecustomize", None)
sys.path[:] = [p for p in sys.path if os.path.abspath(p or ".") != _folder]
try:
    import sitecustomize  # noqa: F401
except ImportError:
    sys.modules["sitecustomize"] = _ours
)";

std::string read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string((std::istreambuf_iterator<char>(in)), {});
}

std::string command_of(pid_t pid) {
  std::string text = read_file(fmt::format("/proc/{}/cmdline", pid));
  while (!text.empty() && text.back() == '\0') text.pop_back();
  for (auto& c : text)
    if (c == '\0') c = ' ';
  return text.substr(0, 512);
}

bool on_path(const std::string& tool) {
  const char* path = std::getenv("PATH");
  std::istringstream dirs(path ? path : "");
  for (std::string dir; std::getline(dirs, dir, ':');)
    if (!dir.empty() && ::access((dir + "/" + tool).c_str(), X_OK) == 0) return true;
  return false;
}

// What `command` prints (stdout and stderr), bounded by `timeout_s` through coreutils' timeout.
std::string output_of(const std::string& command, double timeout_s) {
  const std::string line = fmt::format("timeout -k 2 {:.0f} {} 2>&1", std::max(1.0, timeout_s), command);
  std::FILE* p = ::popen(line.c_str(), "r");
  if (!p) return fmt::format("could not run: {}", std::strerror(errno));
  std::string out;
  char chunk[4096];
  for (std::size_t n; (n = std::fread(chunk, 1, sizeof chunk, p)) > 0 && out.size() < (1u << 20);) out.append(chunk, n);
  const int rc = ::pclose(p);
  if (WIFEXITED(rc) && WEXITSTATUS(rc) == 124) out += fmt::format("\n(stopped after {:.0f} s)", timeout_s);
  return out;
}

// Every thread of `pid` as /proc shows it: "thread 615 (pt_main_thread) S in futex_wait_queue", then its kernel stack
// where it can be read (root).
std::string proc_threads(pid_t pid) {
  std::string out;
  const std::string task = fmt::format("/proc/{}/task", pid);
  std::error_code ec;
  for (const auto& entry : std::filesystem::directory_iterator(task, ec)) {
    const std::string dir = entry.path().string(), tid = entry.path().filename().string();
    const std::string stat = read_file(dir + "/stat");
    const auto open = stat.find('('), close = stat.rfind(')');
    if (open == std::string::npos || close == std::string::npos) continue;
    const std::string state = close + 2 < stat.size() ? stat.substr(close + 2, 1) : "?";
    std::string wchan = read_file(dir + "/wchan");
    out += fmt::format("thread {} ({}) {} in {}\n", tid, stat.substr(open + 1, close - open - 1), state,
                       wchan.empty() || wchan == "0" ? "-" : wchan);
    std::istringstream kernel(read_file(dir + "/stack"));
    for (std::string line; std::getline(kernel, line);) out += "    kernel " + line + "\n";
  }
  return out;
}

// The signal the hook's faulthandler waits for (Python's signal.SIGRTMIN + 7: no runtime or framework takes it).
int kStackSignal() { return SIGRTMIN + 7; }

}  // namespace

PythonStackHook::PythonStackHook() : folder_("fabric-watchdog") {
  std::ofstream(folder_.path() + "/sitecustomize.py") << kSiteCustomize;
}

std::string PythonStackHook::env() const {
  const char* path = std::getenv("PYTHONPATH");
  return "PYTHONPATH=" + folder_.path() + (path && *path ? std::string(":") + path : "");
}

std::optional<std::string> PythonStackHook::take(pid_t pid, double timeout_s) const {
  const std::string file = fmt::format("{}/{}.py-stack", folder_.path(), pid);
  if (::access(file.c_str(), F_OK) != 0 || ::kill(pid, kStackSignal()) != 0) return std::nullopt;
  // faulthandler writes from its signal handler at once; a size unchanged for 200 ms is the whole of it.
  const auto until = std::chrono::steady_clock::now() + std::chrono::duration<double>(timeout_s);
  std::uintmax_t last = 0;
  for (int still = 0; std::chrono::steady_clock::now() < until;
       std::this_thread::sleep_for(std::chrono::milliseconds(50))) {
    std::error_code ec;
    const auto size = std::filesystem::file_size(file, ec);
    if (ec) return std::nullopt;
    still = size > 0 && size == last ? still + 1 : 0;
    last = size;
    if (still >= 4) return read_file(file);
  }
  return std::nullopt;
}

std::vector<Stack> take_stacks(const std::vector<pid_t>& pids, double timeout_s, const PythonStackHook* hook) {
  const bool py_spy = on_path("py-spy"), gdb = on_path("gdb"), eu_stack = on_path("eu-stack");
  std::vector<Stack> out;
  for (pid_t pid : pids) {
    Stack s;
    s.pid = pid;
    s.command = command_of(pid);
    const bool python = s.command.find("python") != std::string::npos;
    if (python && py_spy) {
      s.tool = "py-spy";
      s.text = output_of(fmt::format("py-spy dump --native --pid {}", pid), timeout_s);
      out.push_back(std::move(s));
      continue;
    }
    // Python frames from the hook, then the native ones from whichever tool there is.
    const auto traceback = python && hook ? hook->take(pid, std::min(timeout_s, 3.0)) : std::nullopt;
    std::string native;
    if (gdb) {
      s.tool = "gdb";
      native = output_of(fmt::format("gdb -p {} -batch -nx -ex 'thread apply all bt'", pid), timeout_s);
    } else if (eu_stack) {
      s.tool = "eu-stack";
      native = output_of(fmt::format("eu-stack -p {}", pid), timeout_s);
    } else {
      s.tool = "proc";
      native = proc_threads(pid);
    }
    if (traceback) s.tool = "faulthandler+" + s.tool;
    s.text = traceback.value_or("") + native;
    if (s.tool.find("proc") != std::string::npos || (python && !traceback))
      s.text += fmt::format("for {} frames run '{}' on this host\n", python ? "Python and native" : "native",
                            python ? fmt::format("py-spy dump --native --pid {}", pid)
                                   : fmt::format("gdb -p {} -batch -ex \"thread apply all bt\"", pid));
    out.push_back(std::move(s));
  }
  return out;
}

void write_stacks(results::ResultSet& out, const std::string& group, const std::string& name,
                  const std::vector<Stack>& stacks) {
  const results::TableSpec table{group,
                                 name,
                                 {results::key_int("pid"), results::key_int("line"), results::setting_text("tool", 24),
                                  results::setting_text("command", 256), results::setting_text("text", 256)}};
  const auto pid = table.handle<std::int64_t>("pid"), number = table.handle<std::int64_t>("line");
  const auto tool = table.handle<std::string>("tool"), command = table.handle<std::string>("command"),
             line_text = table.handle<std::string>("text");
  out.declare(table);
  std::vector<results::Row> rows;
  for (const auto& s : stacks) {
    std::istringstream text(s.text);
    std::int64_t n = 0;
    for (std::string line; std::getline(text, line);)
      rows.push_back(results::Row(table)
                         .set(pid, s.pid)
                         .set(number, n++)
                         .set(tool, s.tool)
                         .set(command, s.command.substr(0, 256))
                         .set(line_text, line.substr(0, 256)));
    out.note(fmt::format("stack of pid {} ({}): {} line(s) in /{}/{}", s.pid, s.tool, n, group, name));
  }
  out.section(table, "", {});  // the file's, not the terminal's
  out.rows(rows);
}

}  // namespace fabricbench::job
