// The NCCL logs of a real job read as a stream (one file per rank from NCCL_DEBUG_FILE, or the job's output with
// every rank's lines interleaved): per process (host, pid) what NCCL_DEBUG=INFO said about its transports (NcclLog)
// and, with NCCL_DEBUG_SUBSYS=COLL, the collectives it called: per kind the calls, the bytes and their power-of-two
// size bins, in total and per stretch between two lines that match an iteration marker (the pieces `csplit` cuts).
#pragma once
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include "fabricbench/cli/line_pattern.hpp"
#include "fabricbench/job/nccl_log.hpp"

namespace fabricbench::job {

struct CallTally {
  std::uint64_t calls = 0, bytes = 0;
  void add(std::uint64_t b) { ++calls, bytes += b; }
  bool operator==(const CallTally& o) const { return calls == o.calls && bytes == o.bytes; }
};

// One process's calls of one kind ("AllReduce").
struct KindCalls {
  std::string kind;
  CallTally total;
  std::map<int, CallTally> bins;   // size_bin(bytes) -> calls of that size
  std::uint64_t unknown_type = 0;  // calls of a datatype number this reader does not know (no bytes counted)
  // pieces[s]: the calls in iteration piece s (s = 0: before the first marker); 16 bytes per iteration and kind are
  // all that grows with the log's length. Cut as the process's NcclProcess::cut says.
  std::vector<CallTally> pieces;
  std::vector<CallTally> placed;  // the same by position in the communicator (NcclProcess::Cut::position), until finish
  CallTally piece(std::uint64_t s) const { return s < pieces.size() ? pieces[s] : CallTally{}; }
};

struct NcclProcess {
  std::string host;  // "" when the lines carry no host:pid:tid
  long pid = -1;
  int device = -1;       // NCCL's [N] of its first line
  int tag_rank = -1;     // from a launcher's tag
  std::size_t file = 0;  // index of the first file it appeared in
  NcclLog log;
  std::map<std::string, std::pair<int, int>> comms;  // communicator -> (rank, nranks), from Init START/COMPLETE
  std::vector<KindCalls> kinds;                      // in order of first call
  std::uint64_t lines = 0, warnings = 0;
  std::string first_warning;

  // How its calls are cut into iterations. file: by every marker line of its file, as csplit (markers without a
  // launcher's tag); position: a marker cuts only the process whose tag it carries, and every process's n-th call on
  // a communicator goes into the piece of that communicator's marking process's n-th call (every rank calls a
  // communicator's collectives in the same order; NCCL 2.28 logs opCount 0, so the position is counted here);
  // impossible: tagged markers, but some call of this process has no communicator with a marking process.
  enum class Cut { file, position, impossible };
  Cut cut = Cut::file;
  std::uint64_t markers = 0;                    // with position: the marker lines of its communicators' marking process
  std::string tag;                              // its lines' launcher tag ("default0", "1,0")
  std::map<std::string, std::string> comm_ids;  // communicator pointer -> commId (Init lines)
  std::map<std::string, std::uint64_t> calls_on;            // commId -> calls on it so far
  std::map<std::string, std::vector<std::uint64_t>> marks;  // commId -> calls_on at each of its own markers
  std::uint64_t own_markers = 0, unplaced = 0;

  // Its rank in its largest communicator (the first of those on ties), else the launcher's tag, else -1.
  int rank() const;
  int nranks() const;  // the largest communicator's size, 0 when no init line was seen
};

struct NcclFileStats {
  std::string path;
  std::uint64_t bytes = 0, lines = 0, nccl_lines = 0, coll_lines = 0, markers = 0, cut_lines = 0;
};

class NcclJobLog {
 public:
  // `marker`: an extended regular expression (cli::LinePattern: grep -E's flavour, looked for in the first 4 KiB of
  // each line that is not NCCL's); "" for none. `option` names the logs in errors.
  // Throws Error::usage "--iteration-marker '...': ..." for a marker that is not a regular expression.
  explicit NcclJobLog(const std::string& marker = "", std::string option = "--nccl-log");

  // Streams one file ("-": standard input) to its end. Throws Error::usage "OPTION PATH: ..." when it is missing,
  // empty, binary (a NUL byte or bytes that are not UTF-8 in its first 64 KiB) or holds no NCCL line.
  void read_file(const std::string& path);
  // The same for lines handed in one by one (what read_file does per line): begin_file, then line().
  void begin_file(const std::string& name);
  void line(std::string_view text);

  // Ordered by rank (unknown last), host, pid.
  std::vector<const NcclProcess*> processes() const;
  const std::vector<NcclFileStats>& files() const { return files_; }
  std::size_t host_count() const;
  // Marker lines that cut `p`'s calls: its pieces 1 .. markers-1 are whole iterations (0 where none can be placed).
  std::uint64_t markers_of(const NcclProcess& p) const {
    return p.cut == NcclProcess::Cut::file ? files_.at(p.file).markers : p.markers;
  }
  // After the last file: places the calls that waited for their communicator's marking process and chooses each
  // process's cut.
  void finish();

 private:
  struct Waiting {
    NcclProcess* process;
    std::size_t kind;
    std::uint64_t bytes;
  };
  NcclProcess& process(std::string_view host, long pid, int device, std::string_view tag);
  void take_call(NcclProcess& p, std::string_view message);
  void marker(std::string_view tag);
  void touch(NcclProcess& p, const std::string& comm_id);
  void place(NcclProcess& p, const std::string& comm_id, std::uint64_t n, std::size_t kind, std::uint64_t bytes);
  void drain(const std::string& comm_id);

  std::map<std::string, NcclProcess*> reference_;  // commId -> its first process that printed a tagged marker
  std::map<std::string, std::multimap<std::uint64_t, Waiting>> waiting_;  // commId -> calls by position, unplaced
  std::size_t waiting_count_ = 0;
  bool gave_up_ = false;  // more than kMaxWaiting calls waited: position attribution abandoned
  std::map<std::pair<std::size_t, std::string>, std::uint64_t> tag_markers_;  // (file, tag) -> marker lines
  // (file, tag) -> the processes of that file whose lines carry that tag, in order of appearance: a marker line
  // visits those, not every process (a job of 100,000 ranks with a marker per step).
  std::map<std::pair<std::size_t, std::string>, std::vector<NcclProcess*>> tagged_;

  std::string option_;
  cli::LinePattern marker_;
  std::vector<NcclFileStats> files_;
  std::vector<std::unique_ptr<NcclProcess>> processes_;
  // pid (or device, for lines without host:pid:tid) as 8 bytes, then host -> its process: one hash look-up a line, also
  // when every host's processes have the same pids (containers, each with its own pid namespace).
  std::unordered_map<std::string, NcclProcess*> by_key_;
  std::string key_;  // the look-up's key, reused from line to line
};

// One kind's calls over the whole iterations of a process (the stretches between two marker lines). The median is
// the lower median (a count some iteration had): of 4, 4, 6, 6 it is 4.
struct KindIterations {
  std::string kind;
  std::uint64_t median_calls = 0, median_bytes = 0, min_calls = 0, max_calls = 0;
  std::vector<std::uint64_t> differing;  // iterations whose calls of this kind differ from its median
};
struct IterationSummary {
  std::uint64_t whole = 0;  // whole iterations: marker lines - 1
  std::vector<KindIterations> kinds;
  std::vector<std::uint64_t> differing;  // iterations whose calls of some kind differ from that kind's median
};
IterationSummary summarize_iterations(const NcclProcess& process, std::uint64_t markers);

}  // namespace fabricbench::job
