// The folder of profiler records read as the plugin writes it: whole and partial records across polls, a rotation,
// and what is refused (a foreign file, a link, a folder others can write).
#include "fabricbench/job/slow_folder.hpp"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdio>
#include <cstring>
#include <filesystem>
#include <string>

#include "fabricbench/error.hpp"

namespace {

namespace fs = std::filesystem;
namespace slow = fabricbench::job::slow;
using fabricbench::job::SlowFolder;

struct TempFolder {
  fs::path path;
  TempFolder() {
    char name[] = "/tmp/fbslow-folder-XXXXXX";
    path = ::mkdtemp(name);
  }
  ~TempFolder() { fs::remove_all(path); }
};

slow::FileHeader header(const char* host, int pid, int device) {
  slow::FileHeader h{};
  std::memcpy(h.magic, slow::kMagic, 8);
  h.version = 1, h.record_size = sizeof(slow::Record), h.pid = pid, h.cuda_device = device, h.profiler_api = 5;
  std::snprintf(h.host, sizeof h.host, "%s", host);
  std::snprintf(h.gpu_bus_id, sizeof h.gpu_bus_id, "0000:1b:00.0");
  return h;
}

void append(const fs::path& p, const void* data, std::size_t size) {
  const int fd = ::open(p.c_str(), O_WRONLY | O_CREAT | O_APPEND, 0600);
  ASSERT_GE(fd, 0);
  ASSERT_EQ(::write(fd, data, size), static_cast<ssize_t>(size));
  ::close(fd);
}

slow::Record rec(std::uint64_t seq) {
  slow::Record r{};
  r.comm = 5, r.seq = seq, r.nranks = 2;
  return r;
}

using Batch = std::vector<std::pair<std::size_t, slow::Record>>;

TEST(SlowFolder, ReadsRecordsAsTheyGrowAcrossARotation) {
  TempFolder t;
  const auto file = t.path / "gpu-017.8812.fbslow";
  const auto h = header("gpu-017", 8812, 5);
  append(file, &h, sizeof h);
  SlowFolder folder(t.path, "--slow");
  Batch out;
  std::vector<std::string> problems;
  const auto r0 = rec(0), r1 = rec(1);
  append(file, &r0, sizeof r0);
  append(file, &r1, 20);  // half a record
  folder.poll(out, problems);
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(out[0].second.seq, 0u);
  append(file, reinterpret_cast<const char*>(&r1) + 20, sizeof r1 - 20);
  // Rotated as the plugin does: renamed, a new file with its header.
  const auto r2 = rec(2), r3 = rec(3);
  append(file, &r2, sizeof r2);
  fs::rename(file, t.path / "gpu-017.8812.fbslow.old");
  append(file, &h, sizeof h);
  append(file, &r3, sizeof r3);
  out.clear();
  folder.poll(out, problems);
  ASSERT_EQ(out.size(), 3u);
  EXPECT_EQ(out[0].second.seq, 1u);
  EXPECT_EQ(out[1].second.seq, 2u);
  EXPECT_EQ(out[2].second.seq, 3u);
  EXPECT_TRUE(problems.empty());
  ASSERT_EQ(folder.sources().size(), 1u);  // one process, one source, before and after the rotation
  const auto& s = folder.sources()[0];
  EXPECT_EQ(s.host, "gpu-017");
  EXPECT_EQ(s.pid, 8812);
  EXPECT_EQ(s.gpu(), "GPU 5 (0000:1b:00.0)");
  EXPECT_EQ(out[2].first, 0u);
}

TEST(SlowFolder, ReadsMoreFilesThanItMayHoldOpen) {
  TempFolder t;
  for (int pid = 1; pid <= 300; ++pid) {
    const auto h = header("node", pid, 0);
    const auto file = t.path / ("node." + std::to_string(pid) + ".fbslow");
    append(file, &h, sizeof h);
    const auto r = rec(static_cast<std::uint64_t>(pid));
    append(file, &r, sizeof r);
  }
  rlimit was{};
  ::getrlimit(RLIMIT_NOFILE, &was);
  const rlimit few{64, was.rlim_max};
  ::setrlimit(RLIMIT_NOFILE, &few);  // a job of 300 processes, 64 descriptors
  SlowFolder folder(t.path, "--slow");
  Batch out;
  std::vector<std::string> problems;
  folder.poll(out, problems);
  folder.poll(out, problems);  // nothing new, nothing twice
  ::setrlimit(RLIMIT_NOFILE, &was);
  EXPECT_EQ(out.size(), 300u);
  EXPECT_EQ(folder.sources().size(), 300u);
  EXPECT_TRUE(problems.empty());
}

TEST(SlowFolder, RefusesWhatIsNotThePluginsAndFoldersOthersCanWrite) {
  TempFolder t;
  const std::string short_one(80, 'x');  // not yet a whole header (256 bytes): waited for, not refused
  append(t.path / "x.1.fbslow", short_one.data(), short_one.size());
  std::string big(300, 'x');
  append(t.path / "y.2.fbslow", big.data(), big.size());
  ::symlink("/etc/passwd", (t.path / "z.3.fbslow").c_str());
  SlowFolder folder(t.path, "--slow");
  Batch out;
  std::vector<std::string> problems;
  folder.poll(out, problems);
  folder.poll(out, problems);  // each said once
  EXPECT_TRUE(out.empty());
  ASSERT_EQ(problems.size(), 2u);  // y (bad magic) and z (a link); x is not yet a whole header
  ::chmod(t.path.c_str(), 0777);
  try {
    SlowFolder open(t.path, "--slow");
    FAIL() << "a folder others can write was read";
  } catch (const fabricbench::Error& e) {
    EXPECT_NE(std::string(e.what()).find("--slow " + t.path.string() + ": the folder must be this user's"),
              std::string::npos)
        << e.what();
    EXPECT_EQ(e.status(), fabricbench::ExitStatus::usage);
  }
  EXPECT_THROW(SlowFolder::prepare((t.path / "file-not-folder").string() + "/sub", "--slow"), fabricbench::Error);
  const auto made = t.path / "made";
  ::chmod(t.path.c_str(), 0700);
  SlowFolder::prepare(made.string(), "--slow");
  EXPECT_EQ(fs::status(made).permissions() & fs::perms::all, fs::perms::owner_all);
}

}  // namespace
