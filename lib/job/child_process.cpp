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

#include "fabricbench/error.hpp"

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

std::vector<pid_t> process_tree(pid_t root) {
  std::map<pid_t, std::vector<pid_t>> children;
  if (DIR* d = ::opendir("/proc")) {
    while (const dirent* e = ::readdir(d)) {
      char* end = nullptr;
      const long pid = std::strtol(e->d_name, &end, 10);
      if (*end == '\0' && pid > 0) children[parent_of(static_cast<pid_t>(pid))].push_back(static_cast<pid_t>(pid));
    }
    ::closedir(d);
  }
  std::vector<pid_t> out{root};
  for (std::size_t i = 0; i < out.size(); ++i)
    for (pid_t c : children[out[i]]) out.push_back(c);
  return out;
}

namespace {

// Whether process group `group` still has a member (a zombie not yet reaped counts).
bool group_alive(pid_t group) { return ::kill(-group, 0) == 0 || errno == EPERM; }

// Waits up to `seconds` for `group` to empty.
void wait_for_group(pid_t group, double seconds) {
  const auto until = std::chrono::steady_clock::now() + std::chrono::duration<double>(seconds);
  while (group_alive(group) && std::chrono::steady_clock::now() < until) ::poll(nullptr, 0, 20);
}

// The guard of `group` (see child_process.hpp): a process of its own group, holding nothing of ours but the read end
// of a pipe. A byte on it: the watchdog ended the job itself, the guard exits. End of file without one: the
// watchdog died where nothing of it could run, and the guard ends the group as stop() would have (TERM, 2 s, KILL),
// then removes `leftover` (when not null) by exec'ing rm: after fork, only async-signal-safe calls.
pid_t start_guard(pid_t group, int& write_end, const char* leftover) {
  int life[2];
  if (::pipe2(life, O_CLOEXEC)) return -1;
  const pid_t guard = ::fork();
  if (guard < 0) {
    ::close(life[0]), ::close(life[1]);
    return -1;
  }
  if (guard == 0) {
    ::setpgid(0, 0);  // the terminal's Ctrl-C goes to the watchdog's group, which passes it on; not to the guard
    const int null = ::open("/dev/null", O_RDWR);
    for (int fd = 0; fd < 3; ++fd) ::dup2(null, fd);
    const int keep = life[0];
    if (::close_range(3, static_cast<unsigned>(keep) - 1, 0) != 0 || ::close_range(keep + 1, ~0U, 0) != 0)
      for (int fd = 3; fd < 4096; ++fd)
        if (fd != keep) ::close(fd);
    char byte = 0;
    ssize_t r;
    do r = ::read(keep, &byte, 1);
    while (r < 0 && errno == EINTR);
    if (r == 1) ::_exit(0);
    ::kill(-group, SIGCONT);
    ::kill(-group, SIGTERM);
    for (int i = 0; i < 100 && group_alive(group); ++i) ::usleep(20000);
    ::kill(-group, SIGKILL);
    if (leftover) ::execl("/bin/rm", "rm", "-rf", "--", leftover, static_cast<char*>(nullptr));
    ::_exit(0);
  }
  ::close(life[0]);
  write_end = life[1];
  return guard;
}

}  // namespace

ChildProcess::ChildProcess(const std::vector<std::string>& argv, const std::vector<std::string>& extra_env,
                           const std::string& guard_removes) {
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
  // No guard (fork failed): the job still runs, guarded by our handlers only.
  guard_ = start_guard(pid_, guard_fd_, guard_removes.empty() ? nullptr : guard_removes.c_str());
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
  if (pid_ > 0) {
    if (!exited_)
      stop(2);
    else
      end_group(2);  // what the job left running in its group
  }
  if (out_ >= 0) ::close(out_);
  if (err_ >= 0) ::close(err_);
  if (guard_ > 0) {
    (void)!::write(guard_fd_, "x", 1);
    ::close(guard_fd_);
    ::waitpid(guard_, nullptr, 0);
  }
}

bool ChildProcess::pump(double wait_s) {
  const auto until = Clock::now() + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(wait_s));
  if (out_ < 0 && err_ < 0) {
    // Both pipes closed, the child perhaps still running: its exit is looked for every 20 ms until `wait_s`.
    for (reap(false); !exited_ && Clock::now() < until; reap(false))
      if (::poll(nullptr, 0, 20) < 0 && errno == EINTR) break;
    return !exited_;
  }
  pollfd fds[2] = {{out_, POLLIN, 0}, {err_, POLLIN, 0}};  // a closed one is -1, which poll passes over
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
  reap(false);
  // Drained and exited: done. An exited child whose descendants still hold its pipes: they are the job's too, and
  // it goes on.
  return !(exited_ && out_ < 0 && err_ < 0);
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
  if (exited_) return {};
  return process_tree(pid_);
}

void ChildProcess::signal(int signal) const {
  // Descendants that made groups of their own (a shell's job control, a launcher) are found while the child lives.
  std::vector<pid_t> others;
  if (!exited_)
    for (pid_t p : process_tree(pid_))
      if (::getpgid(p) != pid_) others.push_back(p);
  if (signal != SIGKILL) ::kill(-pid_, SIGCONT);
  ::kill(-pid_, signal);
  for (pid_t p : others) {
    if (signal != SIGKILL) ::kill(p, SIGCONT);
    ::kill(p, signal);
  }
}

void ChildProcess::stop(double grace_s) {
  if (exited_) return end_group(grace_s);
  signal(SIGTERM);
  const auto until = Clock::now() + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(grace_s));
  for (reap(false); !exited_ && Clock::now() < until; reap(false)) ::poll(nullptr, 0, 20);
  if (!exited_) signal(SIGKILL);
  reap(true);
  end_group(exited_ ? std::max(0.0, std::chrono::duration<double>(until - Clock::now()).count()) : 0);
}

void ChildProcess::end_group(double grace_s) {
  if (!group_alive(pid_)) return;
  ::kill(-pid_, SIGCONT);
  ::kill(-pid_, SIGTERM);
  wait_for_group(pid_, grace_s);
  ::kill(-pid_, SIGKILL);
}

}  // namespace fabricbench::job
