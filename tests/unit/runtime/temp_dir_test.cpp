// runtime::TempDir: its folder goes with its owner, and with a process that the run's watchdog ends (_exit, where no
// destructor runs).
#include "fabricbench/runtime/temp_dir.hpp"

#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <thread>

#include "fabricbench/runtime/watchdog.hpp"

namespace fabricbench::runtime {
namespace {

namespace fs = std::filesystem;

TEST(TempDir, GoesWithItsOwnerWithItsFiles) {
  std::string path;
  {
    TempDir dir("fb-tempdir-test");
    path = dir.path();
    ASSERT_TRUE(fs::is_directory(path));
    EXPECT_EQ(fs::status(path).permissions() & fs::perms::all, fs::perms::owner_all) << "private: mkdtemp's 0700";
    fs::create_directory(path + "/sub");
    std::ofstream(path + "/sub/log") << "NCCL INFO\n";
  }
  EXPECT_FALSE(fs::exists(path));
}

// A forked process makes a folder and arms a watchdog that expires; the folder must be gone once it has exited 3.
TEST(TempDir, RemovedWhenTheWatchdogEndsTheProcess) {
  int pipe_fds[2];
  ASSERT_EQ(::pipe(pipe_fds), 0);
  const pid_t child = ::fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    ::close(pipe_fds[0]);
    TempDir dir("fb-tempdir-test");
    std::ofstream(dir.path() + "/log") << "written before the hang\n";
    const std::string path = dir.path() + "\n";
    if (::write(pipe_fds[1], path.data(), path.size()) != static_cast<ssize_t>(path.size())) ::_exit(10);
    ::close(pipe_fds[1]);
    Watchdog watchdog([](const std::string&) {});
    watchdog.arm(0.05, "a hung step");
    std::this_thread::sleep_for(std::chrono::seconds(20));
    ::_exit(11);  // the watchdog did not end the process
  }
  ::close(pipe_fds[1]);
  std::string path;
  char c;
  while (::read(pipe_fds[0], &c, 1) == 1 && c != '\n') path += c;
  ::close(pipe_fds[0]);
  int status = 0;
  ASSERT_EQ(::waitpid(child, &status, 0), child);
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 3);
  ASSERT_FALSE(path.empty());
  EXPECT_FALSE(fs::exists(path)) << path;
}

TEST(TempDir, RemoveAllAliveEmptiesTheLiveOnesAndTheirOwnersStillEnd) {
  TempDir a("fb-tempdir-test"), b("fb-tempdir-test");
  std::ofstream(a.path() + "/log") << "x";
  TempDir::remove_all_alive();
  EXPECT_FALSE(fs::exists(a.path()));
  EXPECT_FALSE(fs::exists(b.path()));
}

}  // namespace
}  // namespace fabricbench::runtime
