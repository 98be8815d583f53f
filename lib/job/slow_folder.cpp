#include "fabricbench/job/slow_folder.hpp"

#include <dirent.h>
#include <fcntl.h>
#include <fmt/format.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "fabricbench/error.hpp"

namespace fabricbench::job {
namespace {

constexpr std::size_t kReadLimit = 4u << 20;

bool ends_with(const std::string& s, const char* suffix) {
  const auto n = std::strlen(suffix);
  return s.size() >= n && s.compare(s.size() - n, n, suffix) == 0;
}

std::string field(const char* text, std::size_t size) { return std::string(text, strnlen(text, size)); }

void check_folder(const std::string& folder, const std::string& option) {
  struct stat st {};
  if (::stat(folder.c_str(), &st) != 0)
    throw Error::usage(fmt::format("{} {}: {}", option, folder, std::strerror(errno)));
  if (!S_ISDIR(st.st_mode)) throw Error::usage(fmt::format("{} {}: not a folder", option, folder));
  if (st.st_uid != ::geteuid() || (st.st_mode & 022))
    throw Error::usage(
        fmt::format("{} {}: the folder must be this user's and writable by it alone (chmod go-w): "
                    "otherwise others could feed the judge",
                    option, folder));
}

}  // namespace

std::string SlowSource::gpu() const {
  if (cuda_device < 0) return "GPU ?";
  return gpu_bus_id.empty() ? fmt::format("GPU {}", cuda_device) : fmt::format("GPU {} ({})", cuda_device, gpu_bus_id);
}

void SlowFolder::prepare(const std::string& folder, const std::string& option) {
  if (::mkdir(folder.c_str(), 0700) != 0 && errno != EEXIST)
    throw Error::usage(fmt::format("{} {}: cannot make the folder: {}", option, folder, std::strerror(errno)));
  check_folder(folder, option);
  if (::access(folder.c_str(), W_OK | X_OK) != 0)
    throw Error::usage(fmt::format("{} {}: not writable: {}", option, folder, std::strerror(errno)));
}

SlowFolder::SlowFolder(std::string folder, const std::string& option) : folder_(std::move(folder)) {
  check_folder(folder_, option);
}

namespace {

// A file opened for one read: closed by its owner.
struct Fd {
  int fd;
  explicit Fd(int f) : fd(f) {}
  ~Fd() {
    if (fd >= 0) ::close(fd);
  }
  Fd(const Fd&) = delete;
  Fd& operator=(const Fd&) = delete;
};

}  // namespace

SlowFolder::Header SlowFolder::read_header(int fd, const std::string& path, File& f,
                                           std::vector<std::string>& problems) {
  slow::FileHeader h{};
  const auto n = ::pread(fd, &h, sizeof h, 0);
  if (n < static_cast<ssize_t>(sizeof h)) return Header::not_yet;  // not yet written whole: the next poll
  if (std::memcmp(h.magic, slow::kMagic, sizeof h.magic) != 0 ||
      (h.version != 1 && h.version != slow::kVersion && h.version != slow::kSamplerVersion) ||
      h.record_size != sizeof(slow::Record)) {
    problems.push_back(
        fmt::format("{}: not a record file of this fabricbench's NCCL profiler plugin; left alone", path));
    return Header::refused;
  }
  SlowSource s;
  s.file = path, s.host = field(h.host, sizeof h.host), s.pid = h.pid, s.cuda_device = h.cuda_device;
  s.gpu_bus_id = field(h.gpu_bus_id, sizeof h.gpu_bus_id);
  s.visible_devices = field(h.visible_devices, sizeof h.visible_devices);
  s.launcher_rank = field(h.launcher_rank, sizeof h.launcher_rank);
  s.boot_id = field(h.boot_id, sizeof h.boot_id);
  s.sampler = h.writer == slow::kWriterSampler;
  s.version = h.version;
  s.profiler_api = h.profiler_api;
  const auto key = std::make_pair(s.host, s.pid);
  auto at = source_of_.find(key);
  if (at == source_of_.end()) {
    at = source_of_.emplace(key, sources_.size()).first;
    sources_.push_back(std::move(s));
  }
  f.source = at->second;
  f.offset = sizeof h;
  f.header_read = true;
  return Header::read;
}

// Whole records from the file's offset on, at most kReadLimit bytes; a record not yet whole waits for the next poll.
void SlowFolder::drain(int fd, File& f, std::vector<std::pair<std::size_t, slow::Record>>& out) {
  static thread_local std::vector<char> buf(1 << 16);
  for (std::size_t total = 0; total < kReadLimit;) {
    const auto n = ::pread(fd, buf.data(), buf.size(), static_cast<off_t>(f.offset));
    if (n < 0 && errno == EINTR) continue;
    if (n < static_cast<ssize_t>(sizeof(slow::Record))) break;
    const auto whole = static_cast<std::size_t>(n) / sizeof(slow::Record) * sizeof(slow::Record);
    for (std::size_t at = 0; at < whole; at += sizeof(slow::Record)) {
      slow::Record r;
      std::memcpy(&r, buf.data() + at, sizeof r);
      out.emplace_back(f.source, r);
    }
    f.offset += whole, total += whole;
  }
}

// No file is held open between polls (a job of thousands of ranks would pass the descriptor limit): each is opened,
// checked to be the file last seen (its inode), read from where the last poll stopped, and closed.
void SlowFolder::poll(std::vector<std::pair<std::size_t, slow::Record>>& out, std::vector<std::string>& problems) {
  DIR* dir = ::opendir(folder_.c_str());
  if (!dir) return;
  std::vector<std::string> names;
  while (const dirent* e = ::readdir(dir)) {
    const std::string name = e->d_name;
    if (ends_with(name, slow::kFileSuffix)) names.push_back(name);
  }
  ::closedir(dir);
  for (const auto& name : names) {
    if (refused_.count(name)) continue;
    const std::string path = folder_ + "/" + name;
    struct stat st {};
    if (::lstat(path.c_str(), &st) != 0) continue;
    if (!S_ISREG(st.st_mode) || st.st_uid != ::geteuid()) {
      problems.push_back(fmt::format("{}: not a regular file of this user; left alone", path));
      refused_[name] = true;
      continue;
    }
    auto it = files_.find(name);
    if (it != files_.end() && it->second.inode != st.st_ino) {
      // Rotated: the rest of the old segment (now <name>.old, the same inode), then the new file from its start.
      const std::string old = path.substr(0, path.size() - std::strlen(slow::kFileSuffix)) + slow::kOldSuffix;
      Fd fd(::open(old.c_str(), O_RDONLY | O_NOFOLLOW | O_CLOEXEC));
      struct stat ost {};
      if (fd.fd >= 0 && ::fstat(fd.fd, &ost) == 0 && ost.st_ino == it->second.inode && it->second.header_read)
        drain(fd.fd, it->second, out);
      it->second = File{};
    }
    if (it == files_.end()) it = files_.emplace(name, File{}).first;
    File& f = it->second;
    Fd fd(::open(path.c_str(), O_RDONLY | O_NOFOLLOW | O_CLOEXEC));
    struct stat fst {};
    if (fd.fd < 0 || ::fstat(fd.fd, &fst) != 0 || fst.st_ino != st.st_ino) continue;  // replaced meanwhile: next poll
    f.inode = st.st_ino;
    if (!f.header_read) {
      const auto header = read_header(fd.fd, path, f, problems);
      if (header == Header::refused) {
        files_.erase(it);
        refused_[name] = true;
      }
      if (header != Header::read) continue;
    }
    drain(fd.fd, f, out);
  }
}

}  // namespace fabricbench::job
