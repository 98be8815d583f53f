#include "fabricbench/doctor/nccl_job_log.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <charconv>
#include <set>

#include "fabricbench/cli/ini_file.hpp"
#include "fabricbench/cli/line_reader.hpp"
#include "fabricbench/doctor/nccl_call.hpp"
#include "fabricbench/doctor/nccl_line.hpp"
#include "fabricbench/error.hpp"

namespace fabricbench::doctor {
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

NcclProcess& NcclJobLog::process(std::string_view host, long pid, int device) {
  const long key = pid >= 0 ? pid : -2 - device;  // lines without host:pid:tid: one process per device
  auto& candidates = by_pid_[key];
  for (auto* p : candidates)
    if (p->host == host) return *p;
  auto p = std::make_unique<NcclProcess>();
  p->host = std::string(host);
  p->pid = pid;
  p->device = device;
  p->file = files_.size() - 1;
  candidates.push_back(p.get());
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
}

void NcclJobLog::line(std::string_view text) {
  if (files_.empty()) begin_file("-");
  auto& stats = files_.back();
  ++stats.lines;
  const NcclLine l = split_nccl_line(text);
  if (l.level == NcclLine::Level::none) {
    if (marker_.found_in(text)) ++stats.markers;
    return;
  }
  ++stats.nccl_lines;
  auto& p = process(l.host, l.pid, l.device);
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
    if (m.find("Init COMPLETE") != std::string_view::npos) p.log.init_complete = true;
    return;
  }
  p.log.read(m);
}

std::vector<const NcclProcess*> NcclJobLog::processes() const {
  std::vector<const NcclProcess*> out;
  for (const auto& p : processes_) out.push_back(p.get());
  std::stable_sort(out.begin(), out.end(), [](const NcclProcess* a, const NcclProcess* b) {
    const auto key = [](const NcclProcess* p) {
      const int r = p->rank();
      return std::make_tuple(r < 0, r, p->host, p->pid, p->device);
    };
    return key(a) < key(b);
  });
  return out;
}

std::size_t NcclJobLog::host_count() const {
  std::set<std::string> hosts;
  for (const auto& p : processes_) hosts.insert(p->host);
  return hosts.size();
}

}  // namespace fabricbench::doctor
