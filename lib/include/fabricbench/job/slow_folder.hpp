// The run's folder of profiler records (fabric-watchdog --slow): one file per process of the job, read as it
// grows. Only a folder of this user that nobody else can write is read, and only regular files of this user in it
// (no link followed): nothing outside the job can feed the judge. A file that is not the plugin's is named once
// and left alone. Each poll reads at most 4 MiB of a file, so memory stays bounded whatever the job writes, and no
// file stays open between polls (thousands of ranks' files, not thousands of descriptors).
#pragma once
#include <sys/types.h>

#include <cstddef>
#include <cstdint>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "fabricbench/job/slow_record.hpp"

namespace fabricbench::job {

// The process a file came from (its header).
struct SlowSource {
  std::string file, host, gpu_bus_id, visible_devices, launcher_rank, boot_id;
  int pid = 0, cuda_device = -1, profiler_api = 0;
  std::uint32_t version = 0;  // the file's (a sampler's samples are read from kSamplerVersion on)
  bool sampler = false;       // a watchdog's host samples (writer kWriterSampler), not a rank's records
  std::string gpu() const;    // "GPU 1 (0000:1b:00.0)", "GPU ?" when unknown
  // The physical GPU: its machine's boot id and its bus id; empty when either is unknown.
  std::string physical_gpu() const { return boot_id.empty() || gpu_bus_id.empty() ? "" : boot_id + "/" + gpu_bus_id; }
};

class SlowFolder {
 public:
  // Throws Error::usage "OPTION DIR: ..." when `folder` is not a folder of this user that only it can write.
  SlowFolder(std::string folder, const std::string& option);
  // New records since the last poll, each with its source's index; `problems` gets one line per file refused.
  void poll(std::vector<std::pair<std::size_t, slow::Record>>& out, std::vector<std::string>& problems);
  const std::vector<SlowSource>& sources() const { return sources_; }
  const std::string& folder() const { return folder_; }
  // Checks `folder` as the constructor does, making it (0700) when it does not exist.
  static void prepare(const std::string& folder, const std::string& option);

 private:
  struct File {
    ino_t inode = 0;
    std::uint64_t offset = 0;  // the next record's
    std::size_t source = 0;
    bool header_read = false;
  };
  enum class Header { read, not_yet, refused };
  Header read_header(int fd, const std::string& path, File& f, std::vector<std::string>& problems);
  void drain(int fd, File& f, std::vector<std::pair<std::size_t, slow::Record>>& out);

  std::string folder_;
  std::map<std::string, File> files_;  // by file name
  std::map<std::string, bool> refused_;
  std::vector<SlowSource> sources_;
  std::map<std::pair<std::string, int>, std::size_t> source_of_;  // (host, pid) -> index
};

}  // namespace fabricbench::job
