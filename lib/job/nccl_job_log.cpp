#include "fabricbench/job/nccl_job_log.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <charconv>
#include <set>
#include <tuple>

#include "fabricbench/cli/ini_file.hpp"
#include "fabricbench/cli/line_reader.hpp"
#include "fabricbench/error.hpp"
#include "fabricbench/job/nccl_call.hpp"
#include "fabricbench/job/nccl_line.hpp"

namespace fabricbench::job {
namespace {

// What makes the head of a file not text: "" when it is text. A sequence cut by the block's end is not counted.
std::string binary_reason(std::string_view head) {
  for (std::size_t i = 0; i < head.size();) {
    if (head[i] == '\0') return "a NUL byte";
    const auto n = cli::utf8_length(head, i);
    if (n == 0) {
      if (head.size() == (64u << 10) && head.size() - i < 4 && static_cast<unsigned char>(head[i]) >= 0xc0) break;
      return "bytes that are not UTF-8 text";
    }
    i += n;
  }
  return {};
}

// The commId of an Init message ("... commId 0x858d63bf52fc5bbc - Init START"), else "".
std::string_view comm_id_of(std::string_view m) {
  const auto at = m.find(" commId ");
  if (at == std::string_view::npos) return {};
  const auto rest = m.substr(at + 8);
  return rest.substr(0, rest.find(' '));
}

// At most this many calls wait for their communicator's marking process (16 bytes and a map node each); past it the
// position attribution is given up (a log whose markers come long after the calls).
constexpr std::size_t kMaxWaiting = 1u << 20;

// "comm 0x55.. rank 3 nranks 16 ..." in an Init START/COMPLETE message -> (comm, rank, nranks).
bool init_line(std::string_view m, std::string_view& comm, int& rank, int& nranks) {
  if (m.find("Init START") == std::string_view::npos && m.find("Init COMPLETE") == std::string_view::npos) return false;
  const auto at = m.find("comm ");
  if (at == std::string_view::npos) return false;
  std::string_view rest = m.substr(at + 5);
  comm = rest.substr(0, rest.find(' '));
  const auto r = rest.find(" rank "), n = rest.find(" nranks ");
  if (r == std::string_view::npos || n == std::string_view::npos) return false;
  const auto parse = [&](std::size_t from, int& v) {
    const char* b = rest.data() + from;
    return std::from_chars(b, rest.data() + rest.size(), v).ec == std::errc();
  };
  return parse(r + 6, rank) && parse(n + 8, nranks);
}

}  // namespace

int NcclProcess::rank() const {
  const std::pair<int, int>* best = nullptr;
  for (const auto& [comm, rn] : comms)
    if (!best || rn.second > best->second) best = &rn;
  return best ? best->first : tag_rank;
}

int NcclProcess::nranks() const {
  int n = 0;
  for (const auto& [comm, rn] : comms) n = std::max(n, rn.second);
  return n;
}

NcclJobLog::NcclJobLog(const std::string& marker, std::string option)
    : option_(std::move(option)), marker_(marker, "--iteration-marker") {}

void NcclJobLog::begin_file(const std::string& name) { files_.push_back({name}); }

void NcclJobLog::read_file(const std::string& path) {
  cli::LineReader reader(path, option_);
  const std::string_view head = reader.head();
  if (head.empty())
    throw Error::usage(
        fmt::format("{} {}: empty; expected an NCCL log (a job's output with NCCL_DEBUG=INFO)", option_, path));
  if (const auto why = binary_reason(head); !why.empty())
    throw Error::usage(
        fmt::format("{} {}: not text ({} in the first 64 KiB); expected an NCCL log as written by "
                    "NCCL_DEBUG=INFO (decompress a .gz first)",
                    option_, path, why));
  begin_file(path);
  for (std::string_view text; reader.next(text);) line(text);
  auto& stats = files_.back();
  stats.bytes = reader.bytes();
  stats.cut_lines = reader.cut_lines();
  if (stats.nccl_lines == 0)
    throw Error::usage(
        fmt::format("{} {}: no NCCL line in {} line(s) (none with 'NCCL INFO' or 'NCCL WARN'); expected "
                    "the output of a job run with NCCL_DEBUG=INFO",
                    option_, path, stats.lines));
}

NcclProcess& NcclJobLog::process(std::string_view host, long pid, int device, std::string_view tag) {
  // The key: pid (lines without host:pid:tid: one process per device) as 8 bytes, then the host.
  const long key = pid >= 0 ? pid : -2 - device;
  key_.assign(reinterpret_cast<const char*>(&key), sizeof key);
  key_.append(host);
  auto [slot, fresh] = by_key_.try_emplace(key_, nullptr);
  if (!fresh) return *slot->second;
  auto p = std::make_unique<NcclProcess>();
  p->host = std::string(host);
  p->pid = pid;
  p->device = device;
  p->file = files_.size() - 1;
  p->tag = std::string(tag);
  if (!tag.empty())  // the markers its tag printed before its first NCCL line
    if (const auto it = tag_markers_.find({p->file, p->tag}); it != tag_markers_.end()) p->own_markers = it->second;
  slot->second = p.get();
  if (!tag.empty()) tagged_[{p->file, p->tag}].push_back(p.get());
  processes_.push_back(std::move(p));
  return *processes_.back();
}

void NcclJobLog::take_call(NcclProcess& p, std::string_view message) {
  const auto call = parse_nccl_call(message);
  if (!call) return;
  ++files_.back().coll_lines;
  std::size_t k = 0;
  while (k < p.kinds.size() && p.kinds[k].kind != call->kind) ++k;
  if (k == p.kinds.size()) {
    p.kinds.emplace_back();
    p.kinds.back().kind = std::string(call->kind);
  }
  auto& kind = p.kinds[k];
  const int size = datatype_size(call->datatype);
  const std::uint64_t bytes = call->count * static_cast<std::uint64_t>(size);
  if (size == 0) ++kind.unknown_type;
  kind.total.add(bytes);
  kind.bins[size == 0 ? -2 : size_bin(bytes)].add(bytes);
  const auto piece = static_cast<std::size_t>(files_.back().markers);
  if (kind.pieces.size() <= piece) kind.pieces.resize(piece + 1);
  kind.pieces[piece].add(bytes);
  const auto id = p.comm_ids.find(std::string(call->comm));
  if (id == p.comm_ids.end()) {
    ++p.unplaced;  // a communicator whose Init line the log lacks
    return;
  }
  touch(p, id->second);
  place(p, id->second, p.calls_on[id->second]++, k, bytes);
  if (reference_[id->second] == &p) drain(id->second);
}

void NcclJobLog::touch(NcclProcess& p, const std::string& comm_id) {
  if (p.calls_on.emplace(comm_id, 0).second) p.marks[comm_id].assign(p.own_markers, 0);
  if (p.own_markers > 0 && !reference_[comm_id]) {
    reference_[comm_id] = &p;
    drain(comm_id);
  }
}

void NcclJobLog::place(NcclProcess& p, const std::string& comm_id, std::uint64_t n, std::size_t kind,
                       std::uint64_t bytes) {
  const NcclProcess* ref = reference_[comm_id];
  if (ref && ref->calls_on.at(comm_id) > n) {
    const auto& marks = ref->marks.at(comm_id);
    const auto piece = static_cast<std::size_t>(std::upper_bound(marks.begin(), marks.end(), n) - marks.begin());
    auto& placed = p.kinds[kind].placed;
    if (placed.size() <= piece) placed.resize(piece + 1);
    placed[piece].add(bytes);
    return;
  }
  if (gave_up_) return void(++p.unplaced);
  waiting_[comm_id].emplace(n, Waiting{&p, kind, bytes});
  if (++waiting_count_ <= kMaxWaiting) return;
  gave_up_ = true;
  for (auto& [id, calls] : waiting_)
    for (auto& [position, w] : calls) ++w.process->unplaced;
  waiting_.clear();
  waiting_count_ = 0;
}

// The calls on `comm_id` its marking process has now reached.
void NcclJobLog::drain(const std::string& comm_id) {
  const NcclProcess* ref = reference_[comm_id];
  auto it = waiting_.find(comm_id);
  if (!ref || it == waiting_.end()) return;
  auto& calls = it->second;
  while (!calls.empty() && calls.begin()->first < ref->calls_on.at(comm_id)) {
    const auto [n, w] = *calls.begin();
    calls.erase(calls.begin());
    --waiting_count_;
    place(*w.process, comm_id, n, w.kind, w.bytes);
  }
}

// A marker line carrying `tag`: it cuts the calls of the process of this file with that tag.
void NcclJobLog::marker(std::string_view tag) {
  const std::size_t file = files_.size() - 1;
  std::pair<std::size_t, std::string> key{file, std::string(tag)};
  ++tag_markers_[key];
  const auto carriers = tagged_.find(key);
  if (carriers == tagged_.end()) return;
  for (auto* p : carriers->second) {
    ++p->own_markers;
    for (auto& [id, n] : p->calls_on) p->marks[id].push_back(n);
    for (const auto& [pointer, id] : p->comm_ids) touch(*p, id);
  }
}

void NcclJobLog::finish() {
  for (auto& [id, calls] : waiting_)
    for (auto& [n, w] : calls) {
      if (!reference_[id]) {
        ++w.process->unplaced;
        continue;
      }
      const auto& marks = reference_[id]->marks.at(id);
      const auto piece = static_cast<std::size_t>(std::upper_bound(marks.begin(), marks.end(), n) - marks.begin());
      auto& placed = w.process->kinds[w.kind].placed;
      if (placed.size() <= piece) placed.resize(piece + 1);
      placed[piece].add(w.bytes);
    }
  waiting_.clear();
  waiting_count_ = 0;
  std::set<std::size_t> tagged_files;
  for (const auto& [key, n] : tag_markers_) tagged_files.insert(key.first);
  // A tag two processes of one file carry (torchrun's [default0] on every node of a merged output) names no single
  // process: that file is cut as csplit would.
  std::map<std::pair<std::size_t, std::string>, int> carriers;
  for (const auto& p : processes_)
    if (!p->tag.empty() && ++carriers[{p->file, p->tag}] > 1) tagged_files.erase(p->file);
  for (auto& p : processes_) {
    if (!tagged_files.count(p->file)) continue;  // markers without tags (or none): cut as csplit would
    p->markers = 0;
    for (const auto& [id, n] : p->calls_on)
      if (const auto* ref = reference_[id]) p->markers = std::max(p->markers, ref->own_markers);
    if (p->unplaced > 0 || (p->markers == 0 && !p->calls_on.empty())) {
      p->cut = NcclProcess::Cut::impossible;
      p->markers = 0;
      continue;
    }
    p->cut = NcclProcess::Cut::position;
    for (auto& k : p->kinds) k.pieces = std::move(k.placed);
  }
}

void NcclJobLog::line(std::string_view text) {
  if (files_.empty()) begin_file("-");
  auto& stats = files_.back();
  ++stats.lines;
  const NcclLine l = split_nccl_line(text);
  if (l.level == NcclLine::Level::none) {
    if (!marker_.found_in(text)) return;
    ++stats.markers;
    if (const auto tag = launcher_tag(text); !tag.empty()) marker(tag);
    return;
  }
  ++stats.nccl_lines;
  auto& p = process(l.host, l.pid, l.device, l.tag);
  ++p.lines;
  if (l.tag_rank >= 0) p.tag_rank = l.tag_rank;
  if (l.level == NcclLine::Level::warn) {
    if (p.warnings++ == 0) p.first_warning = std::string(l.message.substr(0, 200));
    return;
  }
  const auto m = l.message;
  if (m.find(": opCount ") != std::string_view::npos) return take_call(p, m);
  std::string_view comm;
  int rank = -1, nranks = 0;
  if (init_line(m, comm, rank, nranks)) {
    p.comms.emplace(std::string(comm), std::make_pair(rank, nranks));
    if (const auto id = comm_id_of(m); !id.empty()) {
      p.comm_ids[std::string(comm)] = std::string(id);
      touch(p, std::string(id));
    }
    if (m.find("Init COMPLETE") != std::string_view::npos) p.log.init_complete = true;
    return;
  }
  p.log.read(m);
}

std::vector<const NcclProcess*> NcclJobLog::processes() const {
  // Each process's rank once (not per comparison), the host compared in place (not copied per comparison).
  std::vector<std::pair<int, const NcclProcess*>> ranked;
  ranked.reserve(processes_.size());
  for (const auto& p : processes_) ranked.emplace_back(p->rank(), p.get());
  std::stable_sort(ranked.begin(), ranked.end(), [](const auto& a, const auto& b) {
    const auto key = [](const std::pair<int, const NcclProcess*>& x) {
      return std::tuple<bool, int, const std::string&, long, int>(x.first < 0, x.first, x.second->host, x.second->pid,
                                                                  x.second->device);
    };
    return key(a) < key(b);
  });
  std::vector<const NcclProcess*> out;
  out.reserve(ranked.size());
  for (const auto& [rank, p] : ranked) out.push_back(p);
  return out;
}

std::size_t NcclJobLog::host_count() const {
  std::set<std::string> hosts;
  for (const auto& p : processes_) hosts.insert(p->host);
  return hosts.size();
}

IterationSummary summarize_iterations(const NcclProcess& p, std::uint64_t markers) {
  IterationSummary out;
  if (markers < 2) return out;
  out.whole = markers - 1;
  const auto tally = [&](std::uint64_t s, std::size_t k) { return p.kinds[k].piece(s); };
  for (std::size_t k = 0; k < p.kinds.size(); ++k) {
    std::vector<std::uint64_t> calls, bytes;
    for (std::uint64_t s = 1; s < markers; ++s) calls.push_back(tally(s, k).calls), bytes.push_back(tally(s, k).bytes);
    const auto lower_median = [](std::vector<std::uint64_t> v) {
      const auto mid = v.begin() + static_cast<std::ptrdiff_t>((v.size() - 1) / 2);
      std::nth_element(v.begin(), mid, v.end());
      return *mid;
    };
    const auto [lo, hi] = std::minmax_element(calls.begin(), calls.end());
    out.kinds.push_back({p.kinds[k].kind, lower_median(calls), lower_median(bytes), *lo, *hi, {}});
  }
  for (std::uint64_t s = 1; s < markers; ++s) {
    bool any = false;
    for (std::size_t k = 0; k < p.kinds.size(); ++k)
      if (tally(s, k).calls != out.kinds[k].median_calls) out.kinds[k].differing.push_back(s), any = true;
    if (any) out.differing.push_back(s);
  }
  return out;
}

}  // namespace fabricbench::job
