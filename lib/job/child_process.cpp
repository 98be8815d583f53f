#include "fabricbench/job/child_process.hpp"

#include <dirent.h>
#include <fcntl.h>
#include <fmt/format.h>
#include <poll.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <map>
#include <sstream>
#include <thread>

#include "fabricbench/error.hpp"

extern char** environ;

namespace fabricbench::job {
namespace {

// Writes all of `data` to `fd` (our stdout or stderr); a closed reader is not the child's problem.
void write_all(int fd, const char* data, std::size_t n) {
  while (n > 0) {
    const ssize_t w = ::write(fd, data, n);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) return;
    data += w, n -= static_cast<std::size_t>(w);
  }
}

// The parent pid of `pid` from /proc/PID/stat (after the command's closing parenthesis), or -1.
pid_t parent_of(pid_t pid) {
  std::ifstream in(fmt::format("/proc/{}/stat", pid));
  std::string stat((std::istreambuf_iterator<char>(in)), {});
  const auto close = stat.rfind(')');
  if (close == std::string::npos) return -1;
  std::istringstream rest(stat.substr(close + 1));
  std::string state;
  long ppid = -1;
  rest >> state >> ppid;
  return static_cast<pid_t>(ppid);
}

}  // namespace

ChildProcess::ChildProcess(const std::vector<std::string>& argv, const std::vector<std::string>& extra_env) {
  if (argv.empty()) throw Error::usage("give the command to watch after --");
  int out[2], err[2], exec_failed[2];
  if (::pipe2(out, O_CLOEXEC) || ::pipe2(err, O_CLOEXEC) || ::pipe2(exec_failed, O_CLOEXEC))
    throw Error::runtime(fmt::format("pipe: {}", std::strerror(errno)));
  std::vector<std::string> env_text;  // ours, less the names `extra_env` sets (a program reads the first of a name)
  const auto named_in_extra = [&](const std::string& e) {
    const std::string name = e.substr(0, e.find('=') + 1);
    for (const auto& x : extra_env)
      if (x.compare(0, name.size(), name) == 0) return true;
    return false;
  };
  for (char** e = environ; *e; ++e)
    if (!named_in_extra(*e)) env_text.emplace_back(*e);
  env_text.insert(env_text.end(), extra_env.begin(), extra_env.end());
  std::vector<char*> args, env;
  for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  for (const auto& e : env_text) env.push_back(const_cast<char*>(e.c_str()));
  env.push_back(nullptr);
  const pid_t watchdog = ::getpid();
  pid_ = ::fork();
  if (pid_ < 0) throw Error::runtime(fmt::format("fork: {}", std::strerror(errno)));
  if (pid_ == 0) {
    ::setpgid(0, 0);
    ::prctl(PR_SET_PDEATHSIG, SIGTERM);  // the watchdog gone (killed): so is the job it watched
    if (::getppid() != watchdog) ::_exit(127);
    ::dup2(out[1], STDOUT_FILENO);
    ::dup2(err[1], STDERR_FILENO);
    ::execvpe(args[0], args.data(), env.data());
    const int e = errno;
    (void)!::write(exec_failed[1], &e, sizeof e);
    ::_exit(127);
  }
  ::setpgid(pid_, pid_);
  ::close(out[1]), ::close(err[1]), ::close(exec_failed[1]);
  out_ = out[0], err_ = err[0];
  int e = 0;
  const bool failed = ::read(exec_failed[0], &e, sizeof e) == static_cast<ssize_t>(sizeof e);
  ::close(exec_failed[0]);
  if (failed) {
    reap(true);
    ::close(out_), ::close(err_);
    out_ = err_ = -1;
    throw Error::usage(fmt::format("cannot run '{}': {}", argv[0], std::strerror(e)));
  }
}

ChildProcess::~ChildProcess() {
  if (!exited_ && pid_ > 0) stop(2);
  if (out_ >= 0) ::close(out_);
  if (err_ >= 0) ::close(err_);
}

bool ChildProcess::pump(double wait_s) {
  pollfd fds[2] = {{out_, POLLIN, 0}, {err_, POLLIN, 0}};
  const int n = ::poll(fds, 2, static_cast<int>(wait_s * 1000));
  if (n > 0) {
    char chunk[65536];
    for (int i = 0; i < 2; ++i) {
      if (fds[i].fd < 0 || !(fds[i].revents & (POLLIN | POLLHUP | POLLERR))) continue;
      const ssize_t r = ::read(fds[i].fd, chunk, sizeof chunk);
      if (r > 0) {
        write_all(i == 0 ? STDOUT_FILENO : STDERR_FILENO, chunk, static_cast<std::size_t>(r));
        last_output_ = Clock::now();
      } else if (r == 0) {
        ::close(fds[i].fd);
        (i == 0 ? out_ : err_) = -1;
      }
    }
  }
  if (out_ < 0 && err_ < 0) {
    reap(true);
    return false;
  }
  reap(false);
  // An exited child whose descendants still hold its pipes: they are the job's too, and it goes on.
  return true;
}

void ChildProcess::reap(bool block) {
  if (exited_) return;
  int st = 0;
  const pid_t r = ::waitpid(pid_, &st, block ? 0 : WNOHANG);
  if (r != pid_) return;
  exited_ = true;
  status_ = WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

std::vector<pid_t> ChildProcess::tree() const {
  std::map<pid_t, std::vector<pid_t>> children;
  if (DIR* d = ::opendir("/proc")) {
    while (const dirent* e = ::readdir(d)) {
      char* end = nullptr;
      const long pid = std::strtol(e->d_name, &end, 10);
      if (*end == '\0' && pid > 0) children[parent_of(static_cast<pid_t>(pid))].push_back(static_cast<pid_t>(pid));
    }
    ::closedir(d);
  }
  std::vector<pid_t> out;
  if (exited_) return out;
  out.push_back(pid_);
  for (std::size_t i = 0; i < out.size(); ++i)
    for (pid_t c : children[out[i]]) out.push_back(c);
  return out;
}

void ChildProcess::stop(double grace_s) {
  if (exited_) return;
  ::kill(-pid_, SIGCONT);  // a stopped process takes no SIGTERM until it runs
  ::kill(-pid_, SIGTERM);
  const auto until = Clock::now() + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(grace_s));
  while (Clock::now() < until) {
    reap(false);
    if (exited_) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  if (!exited_) ::kill(-pid_, SIGKILL);
  reap(true);
  ::kill(-pid_, SIGKILL);  // what is left of its group
}

}  // namespace fabricbench::job
