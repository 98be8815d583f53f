#include "recorder.hpp"

#include <dlfcn.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "clocks.hpp"

namespace fabricbench::profiler {
namespace slow = job::slow;
namespace {

void copy(char* to, std::size_t size, const char* from) {
  if (from) std::snprintf(to, size, "%s", from);
}

// The CUDA device and its PCI bus id, from the driver the job has already loaded (never loaded by us): the calling
// thread is NCCL's, making a communicator on its device.
void cuda_device(slow::FileHeader& h) {
  h.cuda_device = -1;
  void* cuda = ::dlopen("libcuda.so.1", RTLD_LAZY | RTLD_NOLOAD);
  if (!cuda) return;
  using GetDevice = int (*)(int*);
  using GetBusId = int (*)(char*, int, int);
  auto get_device = reinterpret_cast<GetDevice>(::dlsym(cuda, "cuCtxGetDevice"));
  auto get_bus = reinterpret_cast<GetBusId>(::dlsym(cuda, "cuDeviceGetPCIBusId"));
  int dev = -1;
  if (get_device && get_device(&dev) == 0) {
    h.cuda_device = dev;
    if (get_bus) get_bus(h.gpu_bus_id, sizeof h.gpu_bus_id - 1, dev);
  }
  ::dlclose(cuda);
}

void boot_id(slow::FileHeader& h) {
  const int fd = ::open("/proc/sys/kernel/random/boot_id", O_RDONLY | O_CLOEXEC);
  if (fd < 0) return;
  char id[sizeof h.boot_id] = {};
  if (::read(fd, id, sizeof id) == static_cast<ssize_t>(sizeof id)) std::memcpy(h.boot_id, id, sizeof id);
  ::close(fd);
}

slow::FileHeader header(int api) {
  slow::FileHeader h{};
  std::memcpy(h.magic, slow::kMagic, sizeof h.magic);
  h.version = slow::kVersion;
  h.record_size = sizeof(slow::Record);
  h.pid = static_cast<std::int32_t>(::getpid());
  h.start_ns = realtime_ns();
  h.profiler_api = api;
  ::gethostname(h.host, sizeof h.host - 1);
  cuda_device(h);
  boot_id(h);
  copy(h.visible_devices, sizeof h.visible_devices, std::getenv("CUDA_VISIBLE_DEVICES"));
  for (const char* name : {"SLURM_PROCID", "OMPI_COMM_WORLD_RANK", "PMI_RANK", "RANK"})
    if (const char* v = std::getenv(name)) {
      copy(h.launcher_rank, sizeof h.launcher_rank, v);
      break;
    }
  return h;
}

bool write_all(int fd, const void* data, std::size_t size) {
  const char* p = static_cast<const char*>(data);
  while (size > 0) {
    const auto n = ::write(fd, p, size);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    p += n, size -= static_cast<std::size_t>(n);
  }
  return true;
}

// The process's record file, a regular file or nothing: never a link (O_NOFOLLOW), and never waiting (O_NONBLOCK: a
// FIFO put there would hold NCCL's init until someone read it; a FIFO nobody reads fails at once, ENXIO; one that is
// read, or a device, is refused after the open).
int open_file(const std::string& path) {
  const int fd =
      ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_APPEND | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK, 0600);
  if (fd < 0) return -1;
  struct stat st {};
  if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    ::close(fd);
    errno = EINVAL;  // "Invalid argument": not a regular file
    return -1;
  }
  return fd;
}

Recorder* g_recorder = nullptr;
slow::FileHeader g_header{};

}  // namespace

Recorder* Recorder::get(int api) {
  static std::once_flag once;
  std::call_once(once, [api] {
    const char* folder = std::getenv(slow::kFolderVariable);
    if (!folder || !*folder) {
      std::fprintf(stderr,
                   "fabricbench NCCL profiler: %s is not set (fabric-watchdog --slow sets it): not recording; NCCL "
                   "goes on without the plugin\n",
                   slow::kFolderVariable);
      return;
    }
    struct stat st {};
    if (::stat(folder, &st) != 0 || !S_ISDIR(st.st_mode) || st.st_uid != ::geteuid() || (st.st_mode & 022)) {
      std::fprintf(stderr,
                   "fabricbench NCCL profiler: %s=%s is not a folder of this user that only it can write: not "
                   "recording; NCCL goes on without the plugin\n",
                   slow::kFolderVariable, folder);
      return;
    }
    g_header = header(api);
    const std::string path =
        std::string(folder) + "/" + g_header.host + "." + std::to_string(g_header.pid) + slow::kFileSuffix;
    const int fd = open_file(path);
    if (fd < 0 || !write_all(fd, &g_header, sizeof g_header)) {
      std::fprintf(stderr,
                   "fabricbench NCCL profiler: cannot write %s: %s: not recording; NCCL goes on without the "
                   "plugin\n",
                   path.c_str(), errno == EINVAL || errno == ENXIO ? "not a regular file" : std::strerror(errno));
      if (fd >= 0) ::close(fd);
      return;
    }
    g_recorder = new Recorder(fd, path, folder, api);  // kept to the process's end (flush_at_exit)
  });
  return g_recorder && g_recorder->on() ? g_recorder : nullptr;
}

Recorder::Recorder(int fd, std::string path, std::string folder, int api)
    : fd_(fd),
      path_(std::move(path)),
      folder_(std::move(folder)),
      api_(api),
      written_(sizeof(slow::FileHeader)),
      owner_(::getpid()) {
  thread_ = std::thread([this] { loop(); });
  std::atexit(flush_at_exit);
}

Ring* Recorder::add(std::uint64_t comm, int nranks, int api) {
  std::lock_guard<std::mutex> lock(mutex_);
  const auto now = monotonic_ns();
  for (auto it = closed_.begin(); it != closed_.end(); ++it)
    if (now - it->first >= kReuseAfterNs) {
      it->second->reopen(comm, nranks);
      rings_.push_back(std::move(it->second));
      closed_.erase(it);
      return rings_.back().get();
    }
  rings_.push_back(std::make_unique<Ring>(comm, nranks, api));
  return rings_.back().get();
}

void Recorder::remove(Ring* ring) {
  std::lock_guard<std::mutex> lock(mutex_);
  for (auto it = rings_.begin(); it != rings_.end(); ++it)
    if (it->get() == ring) {
      ring->close();
      ending_.push_back(std::move(*it));
      rings_.erase(it);
      break;
    }
}

// The lock is held while slots are taken out, never while writing: a slow or hung file system delays records, not
// NCCL's init or finalize.
void Recorder::loop() {
  std::vector<slow::Record> out;
  for (bool last = false; !last;) {
    last = stop_.load();
    if (!last) std::this_thread::sleep_for(std::chrono::milliseconds(100));
    {
      std::lock_guard<std::mutex> lock(mutex_);
      out.clear();
      const auto now = realtime_ns();
      for (auto& ring : rings_) ring->harvest(out, now, last);
      for (auto& ring : ending_) {
        ring->harvest(out, now, true);
        closed_.emplace_back(monotonic_ns(), std::move(ring));
      }
      ending_.clear();
    }
    write_out(out);
  }
  finished_.store(true);
}

// The writer thread's alone (fd_, written_).
void Recorder::write_out(std::vector<slow::Record>& records) {
  if (records.empty() || !on()) return;
  if (written_ >= slow::kRotateBytes) {
    const std::string old = path_.substr(0, path_.size() - std::strlen(slow::kFileSuffix)) + slow::kOldSuffix;
    ::close(fd_);
    fd_ = -1;
    if (::rename(path_.c_str(), old.c_str()) != 0) return fail("cannot rotate", errno);
    fd_ = open_file(path_);
    if (fd_ < 0 || !write_all(fd_, &g_header, sizeof g_header)) return fail("cannot write", errno);
    written_ = sizeof g_header;
  }
  const auto bytes = records.size() * sizeof(slow::Record);
  if (!write_all(fd_, records.data(), bytes)) return fail("cannot write", errno ? errno : ENOSPC);
  written_ += bytes;
}

void Recorder::fail(const char* what, int err) {
  on_.store(false, std::memory_order_relaxed);
  std::fprintf(stderr,
               "fabricbench NCCL profiler (pid %d): %s %s: %s; slow-rank records stop for this process, the "
               "job goes on\n",
               static_cast<int>(::getpid()), what, path_.c_str(), std::strerror(err));
}

// At the process's end (PyTorch seldom destroys its communicators): the writer takes out and writes what the rings
// hold, given 2 s (a hung file system does not hold the exit). Not in a forked child (a data loader worker), which
// has no writer thread and no business with the parent's file.
void Recorder::flush_at_exit() {
  Recorder* r = g_recorder;
  if (!r || ::getpid() != r->owner_) return;
  r->stop_.store(true);
  for (int i = 0; i < 200 && !r->finished_.load(); ++i) std::this_thread::sleep_for(std::chrono::milliseconds(10));
}

}  // namespace fabricbench::profiler
