// fabric-doctor --nccl-log's reader: NCCL's line prefixes behind launchers' tags, COLL lines of several NCCL versions
// (shapes from src/collectives/*.cu of 2.3 and enqueue.cc of 2.4-2.30), per-process state of interleaved logs, the
// iterations between marker lines, the transport rules on a log alone, and the input it refuses.
#include "fabricbench/job/nccl_job_log.hpp"

#include <fmt/format.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <sstream>

#include "../fixtures.hpp"
#include "fabricbench/cli/line_reader.hpp"
#include "fabricbench/error.hpp"
#include "fabricbench/job/nccl_call.hpp"
#include "fabricbench/job/nccl_line.hpp"
#include "fabricbench/results/json_sink.hpp"
#include "fabricbench/tools/doctor/nccl_log_report.hpp"

namespace fs = std::filesystem;
using namespace fabricbench;
using namespace fabricbench::job;
using namespace fabricbench::doctor;
using namespace fabricbench::tools::doctor;

namespace {

// A file in a temporary folder, removed with the object.
class TempFile {
 public:
  explicit TempFile(const std::string& text, const std::string& name = "log") {
    path_ = fs::temp_directory_path() /
            ("fb-nccl-" + std::to_string(::getpid()) + "-" + std::to_string(counter_++) + "-" + name);
    std::ofstream(path_, std::ios::binary) << text;
  }
  ~TempFile() { fs::remove(path_); }
  std::string path() const { return path_.string(); }

 private:
  static inline int counter_ = 0;
  fs::path path_;
};

NcclJobLog read_lines(const std::string& text, const std::string& marker = "") {
  NcclJobLog job(marker);
  job.begin_file("test.log");
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) job.line(line);
  return job;
}

const KindCalls* kind(const NcclProcess& p, const std::string& name) {
  for (const auto& k : p.kinds)
    if (k.kind == name) return &k;
  return nullptr;
}

const Finding* find(const std::vector<Finding>& found, const std::string& subject) {
  for (const auto& f : found)
    if (f.subject == subject) return &f;
  return nullptr;
}

std::string usage_error(const std::function<void()>& step) {
  try {
    step();
  } catch (const Error& e) {
    EXPECT_EQ(e.status(), ExitStatus::usage);
    return e.what();
  }
  return "(no error)";
}

// One COLL line as NCCL 2.4-2.30 prints it (2.3 printed the same fields from each collective's own file).
std::string coll(const std::string& prefix, const std::string& kind, int op_count, unsigned long count, int datatype,
                 const std::string& comm, int nranks) {
  return prefix + " NCCL INFO " + kind + ": opCount " + std::to_string(op_count) +
         " sendbuff 0x7f1c2a000000 recvbuff " + "0x7f1c2a000000 count " + std::to_string(count) + " datatype " +
         std::to_string(datatype) + " op 0 root 0 comm " + comm + " [nranks=" + std::to_string(nranks) +
         "] stream 0x5603e8b1c0a0\n";
}

}  // namespace

TEST(NcclLine, NcclPrefixBehindEachLaunchersTag) {
  auto l = split_nccl_line("node7:3719:3790 [3] NCCL INFO Using network IB");
  EXPECT_EQ(l.level, NcclLine::Level::info);
  EXPECT_EQ(l.host, "node7");
  EXPECT_EQ(l.pid, 3719);
  EXPECT_EQ(l.device, 3);
  EXPECT_EQ(l.tag_rank, -1);
  EXPECT_EQ(l.message, "Using network IB");

  l = split_nccl_line("[1,12]<stdout>:node7:3719:3790 [4] NCCL INFO Using network IB");  // Open MPI 4 --tag-output
  EXPECT_EQ(l.tag_rank, 12);
  EXPECT_EQ(l.host, "node7");
  l = split_nccl_line("[1,5]<stderr>: node7:3719:3790 [5] NCCL INFO x");  // Open MPI 5
  EXPECT_EQ(l.tag_rank, 5);
  EXPECT_EQ(l.host, "node7");
  l = split_nccl_line("[default3]:node7:3719:3790 [3] NCCL INFO x");  // torchrun: a local rank, not a global one
  EXPECT_EQ(l.tag_rank, -1);
  EXPECT_EQ(l.host, "node7");
  EXPECT_EQ(l.device, 3);
  EXPECT_EQ(split_nccl_line("[rank9]:node7:1:1 [1] NCCL INFO x").tag_rank, 9);
  l = split_nccl_line(" 9: node7:3719:3790 [1] NCCL INFO x");  // srun --label
  EXPECT_EQ(l.tag_rank, 9);
  EXPECT_EQ(l.pid, 3719);
  l = split_nccl_line("[2026-11-24 03:00:01] node7:3719:3790 [0] NCCL INFO x");  // NCCL_DEBUG_TIMESTAMP_LEVELS
  EXPECT_EQ(l.host, "node7");
  EXPECT_EQ(l.message, "x");
  l = split_nccl_line("node7:3719:3790 [2] transport/net_ib.cc:1234 NCCL WARN NET/IB : Got async event : port error");
  EXPECT_EQ(l.level, NcclLine::Level::warn);
  EXPECT_EQ(l.device, 2);
  EXPECT_EQ(l.pid, 3719);
  EXPECT_EQ(l.message, "NET/IB : Got async event : port error");
  l = split_nccl_line("x NCCL INFO Using network AWS Libfabric");  // no prefix at all: still NCCL's message
  EXPECT_EQ(l.level, NcclLine::Level::info);
  EXPECT_EQ(l.pid, -1);
  EXPECT_EQ(split_nccl_line(" iteration 10/ 100 | loss 2.3").level, NcclLine::Level::none);
  // Numbers too long to be a pid, a device or a rank are not read as one.
  l = split_nccl_line("9999999999999999999: h:99999999999999999999:1 [99999999999999] NCCL INFO x");
  EXPECT_EQ(l.tag_rank, -1);
  EXPECT_EQ(l.device, -1);
  EXPECT_EQ(l.pid, -1);
  EXPECT_EQ(l.message, "x");
}

TEST(NcclCall, CollLinesOfEveryVersion) {
  // 2.3 (all_reduce.cu) and 2.4-2.30 (enqueue.cc) print the same fields; opCount in hex; 2.21+ print %zu counts.
  const auto c = parse_nccl_call(
      "AllReduce: opCount 1b sendbuff 0x7f00 recvbuff 0x7f00 count 262144 datatype 7 op 0 root 0 comm 0x55d1 "
      "[nranks=16] "
      "stream 0x1");
  ASSERT_TRUE(c);
  EXPECT_EQ(c->kind, "AllReduce");
  EXPECT_EQ(c->count, 262144u);
  EXPECT_EQ(c->datatype, 7);
  EXPECT_EQ(c->comm, "0x55d1");
  EXPECT_EQ(c->nranks, 16);
  // Send/Recv (2.7+) with a NULL buffer, as glibc prints it.
  const auto r = parse_nccl_call(
      "Recv: opCount 3 sendbuff (nil) recvbuff 0x7f00 count 4096 datatype 0 op 0 root 1 comm 0x9 [nranks=2] stream "
      "0x1");
  ASSERT_TRUE(r);
  EXPECT_EQ(r->kind, "Recv");
  EXPECT_EQ(r->root, 1);
  EXPECT_FALSE(parse_nccl_call("SymCheck: coll AllReduce size 1024 rank 0 bigOffset 0 userOffset 0"));
  EXPECT_FALSE(parse_nccl_call("Channel 00/0 : 0[0] -> 1[1] via P2P/IPC"));
  EXPECT_FALSE(parse_nccl_call("AllReduce: opCount 1 sendbuff 0x1 recvbuff 0x1 count x datatype 7"));
}

TEST(NcclCall, TypeSizesAndBins) {
  EXPECT_EQ(datatype_size(0), 1);   // int8
  EXPECT_EQ(datatype_size(2), 4);   // int32
  EXPECT_EQ(datatype_size(5), 8);   // uint64
  EXPECT_EQ(datatype_size(6), 2);   // float16
  EXPECT_EQ(datatype_size(7), 4);   // float32
  EXPECT_EQ(datatype_size(8), 8);   // float64
  EXPECT_EQ(datatype_size(9), 2);   // bfloat16
  EXPECT_EQ(datatype_size(10), 1);  // float8e4m3
  EXPECT_EQ(datatype_size(11), 1);  // float8e5m2
  EXPECT_EQ(datatype_size(12), 0);
  EXPECT_EQ(datatype_name(9), "bfloat16");
  EXPECT_EQ(datatype_name(14), "type 14");
  EXPECT_EQ(size_bin(0), -1);
  EXPECT_EQ(size_bin(1), 0);
  EXPECT_EQ(size_bin(1023), 9);
  EXPECT_EQ(size_bin(1024), 10);
  EXPECT_EQ(size_bin(1u << 20), 20);
  EXPECT_EQ(size_bin((1u << 20) - 1), 19);
  EXPECT_EQ(size_bin_label(-1), "0");
  EXPECT_EQ(size_bin_label(0), "1-2");
  EXPECT_EQ(size_bin_label(9), "512-1K");
  EXPECT_EQ(size_bin_label(16), "64K-128K");
  EXPECT_EQ(size_bin_label(30), "1G-2G");
}

TEST(NcclJobLog, FixtureOfTwoRanksInOneLog) {
  NcclJobLog job;
  job.read_file((fixtures_folder() / "gpu-h200x2" / "nccl-info-p2p.log").string());
  const auto ps = job.processes();
  ASSERT_EQ(ps.size(), 2u);
  EXPECT_EQ(ps[0]->rank(), 0);
  EXPECT_EQ(ps[1]->rank(), 1);
  EXPECT_EQ(ps[0]->nranks(), 2);
  EXPECT_EQ(ps[0]->host, "vm");
  EXPECT_EQ(ps[0]->pid, 3719);
  EXPECT_EQ(ps[1]->pid, 3720);
  EXPECT_EQ(ps[0]->log.version, "2.28.3+cuda13.0");
  EXPECT_EQ(ps[0]->log.network, "Socket");
  EXPECT_TRUE(ps[0]->log.ib_none);
  EXPECT_TRUE(ps[0]->log.init_complete);
  EXPECT_EQ(ps[0]->log.channels.begin()->first, "P2P/CUMEM");
  EXPECT_TRUE(ps[0]->kinds.empty());  // INIT,NET only: no COLL lines
  // One host: sockets chosen, but every channel over P2P: nothing to warn about.
  const auto found = transport_findings(job, ps);
  ASSERT_EQ(found.size(), 2u);
  for (const auto& f : found[0]) EXPECT_EQ(f.status, Status::ok) << f.subject << ": " << f.hint;
  // The merged view of the probe (parse_nccl_log) and the per-process view agree.
  std::ifstream in(fixtures_folder() / "gpu-h200x2" / "nccl-info-p2p.log");
  const auto merged = parse_nccl_log(std::string(std::istreambuf_iterator<char>(in), {}));
  EXPECT_EQ(merged.channel_summary(), [&] {
    int n = 0;
    for (const auto& [t, c] : ps[0]->log.channels) n += c;
    for (const auto& [t, c] : ps[1]->log.channels) n += c;
    return "P2P/CUMEM x" + std::to_string(n);
  }());
}

TEST(NcclJobLog, FixturesWithSocketsOverLoopbackAndP2PDisabled) {
  NcclJobLog job;
  job.read_file((fixtures_folder() / "gpu-h200x2" / "nccl-info-socket.log").string());
  job.read_file((fixtures_folder() / "gpu-h200x2" / "nccl-info-socket-lo.log").string());
  EXPECT_EQ(job.files().size(), 2u);
  const auto ps = job.processes();
  ASSERT_EQ(ps.size(), 4u);  // two runs of two ranks: four pids on one host
  const auto found = transport_findings(job, ps);
  int lo = 0, disabled = 0;
  for (const auto& per : found)
    for (const auto& f : per) {
      if (f.subject == "NET/Socket lo") {
        ++lo;
        EXPECT_EQ(f.status, Status::warn);  // one host: a warning, not a failure
      }
      if (f.subject == "channels" && f.hint.find("NCCL_P2P_DISABLE") != std::string::npos) ++disabled;
    }
  EXPECT_EQ(lo, 2);
  EXPECT_EQ(disabled, 4);  // both runs set NCCL_P2P_DISABLE
}

TEST(NcclJobLog, InterleavedRanksOfTwoHostsCountedPerProcess) {
  // Two hosts with the same pids and devices: processes are told apart by host:pid, ranks come from the init lines.
  std::string log =
      "a:100:100 [0] NCCL INFO NCCL version 2.18.6+cuda12.2\n"
      "b:100:100 [0] NCCL INFO NCCL version 2.18.6+cuda12.2\n"
      "a:100:100 [0] NCCL INFO comm 0xa1 rank 0 nranks 2 cudaDev 0 nvmlDev 0 busId 1000 commId 0x5 - Init COMPLETE\n"
      "b:100:100 [0] NCCL INFO comm 0xb1 rank 1 nranks 2 cudaDev 0 nvmlDev 0 busId 1000 commId 0x5 - Init COMPLETE\n";
  log += coll("a:100:101 [0]", "AllReduce", 0, 262144, 7, "0xa1", 2);  // 1 MiB
  log += coll("b:100:101 [0]", "AllReduce", 0, 262144, 7, "0xb1", 2);
  log += coll("a:100:101 [0]", "AllGather", 1, 1000, 9, "0xa1", 2);    // 2000 B of bfloat16
  log += coll("a:100:101 [0]", "ReduceScatter", 2, 3, 10, "0xa1", 2);  // 3 B of fp8
  log += coll("b:100:101 [0]", "AllGather", 1, 1000, 9, "0xb1", 2);
  log += coll("a:100:101 [0]", "AllReduce", 3, 1, 8, "0xa1", 2);   // 8 B
  log += coll("a:100:101 [0]", "Broadcast", 4, 5, 13, "0xa1", 2);  // an unknown type: a call, no bytes
  const auto job = read_lines(log);
  const auto ps = job.processes();
  ASSERT_EQ(ps.size(), 2u);
  EXPECT_EQ(job.host_count(), 2u);
  EXPECT_EQ(ps[0]->host, "a");
  EXPECT_EQ(ps[1]->host, "b");
  EXPECT_EQ(ps[1]->rank(), 1);
  const auto* ar = kind(*ps[0], "AllReduce");
  ASSERT_TRUE(ar);
  EXPECT_EQ(ar->total.calls, 2u);
  EXPECT_EQ(ar->total.bytes, 1048576u + 8u);
  EXPECT_EQ(ar->bins.at(20).calls, 1u);
  EXPECT_EQ(ar->bins.at(3).bytes, 8u);
  EXPECT_EQ(kind(*ps[0], "AllGather")->total.bytes, 2000u);
  EXPECT_EQ(kind(*ps[0], "ReduceScatter")->total.bytes, 3u);
  EXPECT_EQ(kind(*ps[0], "Broadcast")->unknown_type, 1u);
  EXPECT_EQ(kind(*ps[0], "Broadcast")->total.bytes, 0u);
  EXPECT_EQ(kind(*ps[1], "AllReduce")->total.calls, 1u);
  EXPECT_EQ(kind(*ps[1], "ReduceScatter"), nullptr);
  EXPECT_EQ(job.files()[0].coll_lines, 7u);
}

TEST(NcclJobLog, RanksFromLaunchersTagsWithoutInitLines) {
  std::string log;
  log += coll("[1,1]<stdout>:n:7:7 [1]", "AllReduce", 0, 16, 2, "0x1", 4);
  log += coll("[1,0]<stdout>:n:6:6 [0]", "AllReduce", 0, 16, 2, "0x2", 4);
  log += coll("[1,0]<stdout>:n:6:6 [0]", "AllReduce", 1, 16, 2, "0x2", 4);
  const auto job = read_lines(log);
  const auto ps = job.processes();
  ASSERT_EQ(ps.size(), 2u);
  EXPECT_EQ(ps[0]->rank(), 0);
  EXPECT_EQ(kind(*ps[0], "AllReduce")->total.calls, 2u);
  EXPECT_EQ(kind(*ps[1], "AllReduce")->total.bytes, 64u);
}

TEST(NcclJobLog, IterationsBetweenMarkerLines) {
  // Marker lines cut the log as csplit would: piece 0 before the first, pieces 1..3 whole, piece 4 after the last.
  const std::string p = "h:1:1 [0]";
  std::string log = coll(p, "AllReduce", 0, 4, 7, "0x1", 2);  // warm-up, before the first marker
  log += "iteration 1 | loss 3.0\n";
  log += coll(p, "AllReduce", 1, 1024, 7, "0x1", 2) + coll(p, "AllReduce", 2, 1024, 7, "0x1", 2);
  log += "iteration 2 | loss 2.9\n";
  log += coll(p, "AllReduce", 3, 1024, 7, "0x1", 2) + coll(p, "AllReduce", 4, 1024, 7, "0x1", 2) +
         coll(p, "Broadcast", 5, 8, 0, "0x1", 2);
  log += "iteration 3 | loss 2.8\n";
  log += coll(p, "AllReduce", 6, 1024, 7, "0x1", 2) + coll(p, "AllReduce", 7, 1024, 7, "0x1", 2);
  log += "iteration 4 | loss 2.7\n";
  log += coll(p, "AllReduce", 8, 1024, 7, "0x1", 2);
  const auto job = read_lines(log, "iteration [0-9]+");
  ASSERT_EQ(job.files()[0].markers, 4u);
  const auto& proc = *job.processes()[0];
  ASSERT_EQ(proc.kinds[0].pieces.size(), 5u);
  EXPECT_EQ(proc.kinds[0].piece(0).calls, 1u);
  EXPECT_EQ(proc.kinds[0].piece(4).bytes, 4096u);
  EXPECT_EQ(proc.kinds[1].piece(2).calls, 1u);
  EXPECT_EQ(proc.kinds[1].piece(3).calls, 0u);
  const auto s = summarize_iterations(proc, job.markers_of(proc));
  EXPECT_EQ(s.whole, 3u);
  ASSERT_EQ(s.kinds.size(), 2u);
  EXPECT_EQ(s.kinds[0].kind, "AllReduce");
  EXPECT_EQ(s.kinds[0].median_calls, 2u);
  EXPECT_EQ(s.kinds[0].median_bytes, 8192u);  // 2 x 1024 float32
  EXPECT_EQ(s.kinds[1].median_calls, 0u);     // Broadcast: 0, 1, 0
  EXPECT_EQ(s.kinds[1].max_calls, 1u);
  EXPECT_EQ(s.differing, std::vector<std::uint64_t>{2});
  EXPECT_TRUE(s.kinds[0].differing.empty()) << "AllReduce's min and max are equal: none of its iterations differs";
  EXPECT_EQ(s.kinds[1].differing, std::vector<std::uint64_t>{2});
  // Lower median of an even count: 4 whole iterations of 1, 1, 3, 3 calls -> 1.
  std::string even = "it\n";
  for (int calls : {1, 3, 1, 3}) {
    for (int i = 0; i < calls; ++i) even += coll(p, "AllGather", i, 1, 0, "0x1", 2);
    even += "it\n";
  }
  const auto job2 = read_lines(even, "^it$");
  const auto s2 = summarize_iterations(*job2.processes()[0], 5);
  EXPECT_EQ(s2.kinds[0].median_calls, 1u);
  EXPECT_EQ(s2.differing, (std::vector<std::uint64_t>{2, 4}));
}

TEST(NcclJobLog, TransportRulesOnALogAlone) {
  // IB with a bond, across two hosts.
  auto job = read_lines(
      "a:1:1 [0] NCCL INFO NET/IB : Using [0]mlx5_0:1/IB [1]mlx5_bond_0:1/RoCE [RO]; OOB ib0:10.0.0.1<0>\n"
      "a:1:1 [0] NCCL INFO Using network IB\n"
      "b:1:1 [0] NCCL INFO NET/IB : Using [0]mlx5_0:1/IB [RO]; OOB ib0:10.0.0.2<0>\n"
      "b:1:1 [0] NCCL INFO Using network IB\n");
  auto found = transport_findings(job, job.processes());
  EXPECT_EQ(find(found[0], "NET/IB mlx5_bond_0:1/RoCE")->status, Status::warn);
  EXPECT_EQ(find(found[0], "network")->status, Status::ok);
  EXPECT_EQ(find(found[1], "NET/IB mlx5_bond_0:1/RoCE"), nullptr);
  // Socket fallback across hosts: a warning that says what the log cannot know.
  job = read_lines(
      "a:1:1 [0] NCCL INFO NET/IB : No device found.\n"
      "a:1:1 [0] NCCL INFO NET/Socket : Using [0]eth0:10.0.0.1<0> [1]docker0:172.17.0.1<0>\n"
      "a:1:1 [0] NCCL INFO Using network Socket\n"
      "b:1:1 [0] NCCL INFO Using network Socket\n");
  found = transport_findings(job, job.processes());
  const auto* network = find(found[0], "network");
  EXPECT_EQ(network->status, Status::warn);
  EXPECT_NE(network->hint.find("not in the log"), std::string::npos);
  EXPECT_NE(network->hint.find("No device found"), std::string::npos);
  EXPECT_EQ(find(found[0], "NET/Socket docker0")->status, Status::fail);  // between hosts
  EXPECT_EQ(find(found[0], "NET/Socket eth0")->status, Status::ok);
  // A net plugin is named as the log names it; a process with only COLL lines is a skip, not a warning.
  job = read_lines("a:1:1 [0] NCCL INFO Using network AWS Libfabric\n" +
                   coll("a:2:2 [1]", "AllReduce", 0, 1, 7, "0x1", 2) +
                   "a:1:1 [0] transport.cc:10 NCCL WARN Call to ibv_reg_mr failed\n");
  found = transport_findings(job, job.processes());
  EXPECT_EQ(find(found[0], "network")->value, "AWS Libfabric");
  EXPECT_EQ(find(found[0], "NCCL WARN")->status, Status::warn);
  EXPECT_NE(find(found[0], "NCCL WARN")->hint.find("ibv_reg_mr"), std::string::npos);
  EXPECT_EQ(find(found[1], "log")->status, Status::skip);
}

TEST(NcclJobLog, RefusesWhatIsNotAnNcclLog) {
  TempFile empty("");
  EXPECT_EQ(usage_error([&] { NcclJobLog().read_file(empty.path()); }),
            "--nccl-log " + empty.path() + ": empty; expected an NCCL log (a job's output with NCCL_DEBUG=INFO)");
  TempFile binary(std::string("\x7f"
                              "ELF\0\0\0",
                              7) +
                  "NCCL INFO x\n");
  EXPECT_EQ(usage_error([&] { NcclJobLog().read_file(binary.path()); }),
            "--nccl-log " + binary.path() +
                ": not text (a NUL byte in the first 64 KiB); expected an NCCL log as "
                "written by NCCL_DEBUG=INFO (decompress a .gz first)");
  TempFile latin1("caf\xe9 NCCL INFO x\n");
  EXPECT_NE(usage_error([&] { NcclJobLog().read_file(latin1.path()); }).find("bytes that are not UTF-8 text"),
            std::string::npos);
  TempFile prose("epoch 1 loss 2.3\nepoch 2 loss 2.1\n");
  EXPECT_EQ(usage_error([&] { NcclJobLog().read_file(prose.path()); }),
            "--nccl-log " + prose.path() +
                ": no NCCL line in 2 line(s) (none with 'NCCL INFO' or 'NCCL WARN'); expected "
                "the output of a job run with NCCL_DEBUG=INFO");
  EXPECT_EQ(usage_error([] { NcclJobLog().read_file("/nonexistent/nccl.log"); }),
            "--nccl-log /nonexistent/nccl.log: cannot read the file (No such file or directory)");
  EXPECT_EQ(usage_error([] { NcclJobLog("iteration ("); }).substr(0, 50),
            "--iteration-marker 'iteration (': not a regular ex");
}

TEST(LineReader, LinesAcrossBlocksCutAndWithoutANewline) {
  std::string text;
  for (int i = 0; i < 150000; ++i) text += "line " + std::to_string(i) + "\r\n";  // ~1.6 MB: lines span blocks
  text += std::string(100000, 'x') + "\n";                                        // longer than the 64 KiB limit
  text += "last";
  TempFile file(text);
  cli::LineReader reader(file.path(), "--nccl-log");
  EXPECT_EQ(reader.head().substr(0, 8), "line 0\r\n");
  std::string_view line;
  for (int i = 0; i < 150000; ++i) {
    ASSERT_TRUE(reader.next(line));
    ASSERT_EQ(line, "line " + std::to_string(i));
  }
  ASSERT_TRUE(reader.next(line));
  EXPECT_EQ(line.size(), 64u << 10);
  ASSERT_TRUE(reader.next(line));
  EXPECT_EQ(line, "last");
  EXPECT_FALSE(reader.next(line));
  EXPECT_EQ(reader.lines(), 150002u);
  EXPECT_EQ(reader.cut_lines(), 1u);
  EXPECT_EQ(reader.bytes(), text.size());
}

TEST(NcclLogReport, RowsGroupRanksThatAgree) {
  std::string log;
  for (int r = 0; r < 4; ++r) {
    const std::string p = "h:" + std::to_string(10 + r) + ":1 [" + std::to_string(r) + "]";
    log += p + " NCCL INFO comm 0x" + std::to_string(r) + " rank " + std::to_string(r) +
           " nranks 4 cudaDev 0 - Init COMPLETE\n";
    log += coll(p, "AllReduce", 0, 256, 7, "0x1", 4);
    if (r == 2) log += coll(p, "AllReduce", 1, 256, 7, "0x1", 4);
  }
  const auto job = read_lines(log);
  const NcclLogTables tables;
  const auto report = report_rows(tables, job, job.processes());
  ASSERT_EQ(report.calls.shown.size(), 2u);  // ranks 0,1,3 agree; rank 2 made one more call
  EXPECT_EQ(std::get<std::string>(report.calls.shown[0].get("alike")), "0-1,3");
  EXPECT_EQ(std::get<std::string>(report.calls.shown[1].get("alike")), "2");
  EXPECT_EQ(std::get<std::int64_t>(report.calls.shown[1].get("bytes")), 2048);
  EXPECT_EQ(report.calls.hidden.size(), 2u);
  EXPECT_EQ(report.ranks.shown.size(), 1u);
  EXPECT_EQ(std::get<std::string>(report.ranks.shown[0].get("alike")), "0-3");
  EXPECT_EQ(report.transport_groups.size(), 1u);
}

TEST(JsonSink, QuotesWhatJsonCannotHoldRaw) {
  EXPECT_EQ(results::JsonSink::quoted("a\"b\\c\nd\x01"), "\"a\\\"b\\\\c\\nd\\u0001\"");
  EXPECT_EQ(results::JsonSink::quoted("caf\xc3\xa9 \xe9"), "\"caf\xc3\xa9 ?\"");
}

// The crash: one ordinary 40 KB line (a config dump, a progress bar) under a marker that std::regex matched
// by recursion ended in a segmentation fault; now it is one marker, and the NCCL lines around it are read.
TEST(NcclJobLog, AFortyKilobyteLineUnderAGreedyMarkerIsOneMarker) {
  for (const char* marker : {".*iteration.*", "iteration.*", "(a|b)*iteration"}) {
    NcclJobLog log(marker);
    log.begin_file("job.log");
    log.line("host1:100:100 [0] NCCL INFO comm 0x1 rank 0 nranks 2 cudaDev 0 busId 1000 - Init COMPLETE");
    log.line(std::string(30000, 'a') + " iteration 1 " + std::string(10000, 'b'));
    log.line(std::string(20, 'a') + " iteration 2 " + std::string(40000, 'b'));
    EXPECT_EQ(log.files().back().markers, 1u) << marker;  // the first line's word lies past the 4 KiB window
  }
}

// Real torchrun jobs on 2 x H200 (NCCL 2.28.9, `torchrun --tee 3`, NCCL_DEBUG_SUBSYS=INIT,NET,COLL, scripts beside the
// logs): "step N" printed by rank 0 only, rank 1's COLL lines reaching the file in other chunks than rank 0's marker,
// opCount 0 on every line. Cut as csplit, rank 1's iterations read wrong; placed by position on the communicator (the
// commId of the Init lines), both ranks read the same counts in every iteration.
struct TorchrunLog {
  const char* file;
  std::map<std::string, std::array<std::uint64_t, 3>> per_iteration;  // kind -> median, min, max calls
};

void expect_position_cut(const TorchrunLog& log) {
  NcclJobLog job("step [0-9]+");
  job.read_file((fixtures_folder() / "nccl-logs" / log.file).string());
  const auto& one = *job.processes()[1];
  ASSERT_EQ(one.rank(), 1);
  const auto csplit = summarize_iterations(one, job.markers_of(one));
  const bool wrong = std::any_of(csplit.kinds.begin(), csplit.kinds.end(), [&](const KindIterations& k) {
    return k.median_calls != log.per_iteration.at(k.kind)[0] || k.max_calls != log.per_iteration.at(k.kind)[2];
  });
  EXPECT_TRUE(wrong) << log.file << ": csplit's cut reads rank 1 wrong (the log's shape)";
  job.finish();
  ASSERT_EQ(job.processes().size(), 2u);
  for (const auto* p : job.processes()) {
    EXPECT_EQ(p->cut, NcclProcess::Cut::position) << p->rank();
    EXPECT_EQ(job.markers_of(*p), 8u);
    const auto s = summarize_iterations(*p, job.markers_of(*p));
    EXPECT_EQ(s.whole, 7u);
    ASSERT_EQ(s.kinds.size(), log.per_iteration.size()) << log.file;
    for (const auto& k : s.kinds) {
      const auto [median, min, max] = log.per_iteration.at(k.kind);
      EXPECT_EQ(k.median_calls, median) << log.file << " rank " << p->rank() << " " << k.kind;
      EXPECT_EQ(k.min_calls, min) << log.file << " rank " << p->rank() << " " << k.kind;
      EXPECT_EQ(k.max_calls, max) << log.file << " rank " << p->rank() << " " << k.kind;
      EXPECT_EQ(k.differing.empty(), min == max) << log.file << " rank " << p->rank() << " " << k.kind;
    }
  }
  const auto zero = summarize_iterations(*job.processes()[0], 8), one_after = summarize_iterations(one, 8);
  for (std::size_t k = 0; k < zero.kinds.size(); ++k)
    EXPECT_EQ(zero.kinds[k].differing, one_after.kinds[k].differing) << log.file << " " << zero.kinds[k].kind;
}

// DDP: rank 1's 14 AllReduce calls reach the file after step 6 (csplit gave it a median of 0 per iteration). Both
// ranks broadcast twice in the first iteration only (lines 351-352 for rank 0, 371-373 for rank 1).
TEST(NcclJobLog, ADdpTorchrunLogIsCutByWhoPrintedTheMarkerAndTheOthersByPosition) {
  expect_position_cut(
      {"ddp-torchrun-2.28.9.log", {{"AllGather", {0, 0, 0}}, {"AllReduce", {2, 2, 2}}, {"Broadcast", {0, 0, 2}}}});
}

// FSDP2 (fully_shard on 6 layers and the root): 12 AllGather and 6 ReduceScatter per iteration on both ranks.
TEST(NcclJobLog, AnFsdpTorchrunLogIsCutByWhoPrintedTheMarkerAndTheOthersByPosition) {
  expect_position_cut({"fsdp-torchrun-2.28.9.log", {{"AllGather", {12, 12, 12}}, {"ReduceScatter", {6, 6, 6}}}});
}

// Rank 1 ahead of rank 0's marker lines (its calls wait until rank 0 reaches them), and a rank on a communicator
// without a marking process: not counted per iteration rather than counted wrong.
TEST(NcclJobLog, ARankAheadWaitsForItsCommunicatorAndAnUnplaceableRankIsSaidSo) {
  const auto init = [](const std::string& who, const std::string& tag, const char* comm, int rank, const char* id) {
    return fmt::format("[{}]:{} NCCL INFO comm {} rank {} nranks 2 cudaDev {} busId 0 commId {} - Init COMPLETE\n", tag,
                       who, comm, rank, rank, id);
  };
  const auto call = [](const std::string& who, const std::string& tag, const char* comm) {
    return fmt::format(
        "[{}]:{} NCCL INFO AllReduce: opCount 0 sendbuff 0x1 recvbuff 0x1 count 256 datatype 7 op 0 "
        "root 0 comm {} [nranks=2] stream 0x1\n",
        tag, who, comm);
  };
  const std::string r0 = "h:10:10 [0]", r1 = "h:11:11 [1]", r2 = "h:12:12 [0]";
  std::string log = init(r0, "default0", "0xa", 0, "0x77") + init(r1, "default1", "0xb", 1, "0x77") +
                    init(r2, "default2", "0xc", 0, "0x99");
  for (int i = 0; i < 3; ++i) log += call(r1, "default1", "0xb") + call(r1, "default1", "0xb");  // rank 1 first
  for (int i = 0; i < 3; ++i) log += call(r2, "default2", "0xc");  // another job's communicator: no marker
  log += "[default0]:step 0\n";
  for (int i = 0; i < 3; ++i)
    log += call(r0, "default0", "0xa") + call(r0, "default0", "0xa") + fmt::format("[default0]:step {}\n", i + 1);
  NcclJobLog job("step [0-9]+");
  job.begin_file("mixed");
  std::istringstream in(log);
  for (std::string line; std::getline(in, line);) job.line(line);
  job.finish();
  const auto processes = job.processes();
  ASSERT_EQ(processes.size(), 3u);
  for (const auto* p : processes) {
    if (p->pid == 12) {
      EXPECT_EQ(p->cut, NcclProcess::Cut::impossible);
      EXPECT_EQ(job.markers_of(*p), 0u) << "no counts per iteration";
      continue;
    }
    EXPECT_EQ(p->cut, NcclProcess::Cut::position) << p->pid;
    const auto s = summarize_iterations(*p, job.markers_of(*p));
    EXPECT_EQ(s.whole, 3u) << p->pid;
    EXPECT_EQ(s.kinds[0].median_calls, 2u) << p->pid;
    EXPECT_EQ(s.kinds[0].min_calls, 2u) << p->pid;
  }
}

// torchrun's [default0] on two nodes of one merged output: the tag names no single process, so the file is cut as
// csplit would (as before), not by position.
TEST(NcclJobLog, ATagTwoProcessesCarryCutsTheFileAsCsplit) {
  const std::string a = "[default0]:na:10:10 [0] NCCL INFO ", b = "[default0]:nb:20:20 [0] NCCL INFO ";
  std::string log = a + "comm 0xa rank 0 nranks 2 cudaDev 0 busId 0 commId 0x7 - Init COMPLETE\n" + b +
                    "comm 0xb rank 1 nranks 2 cudaDev 0 busId 0 commId 0x7 - Init COMPLETE\n";
  for (int i = 0; i < 3; ++i)
    log += "[default0]:step\n" + a +
           "AllReduce: opCount 0 sendbuff 0x1 recvbuff 0x1 count 4 datatype 7 op 0 root 0 comm " +
           "0xa [nranks=2] stream 0x1\n";
  NcclJobLog job("step");
  job.begin_file("merged");
  std::istringstream in(log);
  for (std::string line; std::getline(in, line);) job.line(line);
  job.finish();
  for (const auto* p : job.processes()) EXPECT_EQ(p->cut, NcclProcess::Cut::file) << p->host;
}

// Containers: every host's processes have the same pids (each its own pid namespace), the lines of 50 hosts
// interleaved. Each host:pid is its own process (looked up by both, not by the pid and then the hosts that have it),
// and rank 0's tagged marker lines cut its calls, the others' placed by position.
TEST(NcclJobLog, TheSamePidsOnEveryHostAreTheirOwnProcesses) {
  constexpr int hosts = 50, per_host = 4, ranks = hosts * per_host, steps = 3;
  const auto who = [](int r) {
    return fmt::format("[1,{}]<stdout>:node{}:{}:{} [{}] NCCL INFO ", r, r / per_host, 100 + r % per_host,
                       100 + r % per_host, r % per_host);
  };
  std::string log;
  for (int r = ranks - 1; r >= 0; --r)  // init lines in reverse: processes() orders by rank
    log += who(r) + fmt::format("comm 0x{:x} rank {} nranks {} cudaDev 0 busId 0 commId 0x7 - Init COMPLETE\n",
                                0x1000 + r, r, ranks);
  for (int s = 0; s <= steps; ++s) {
    log += fmt::format("[1,0]<stdout>: iteration {}\n", s + 1);
    if (s == steps) break;
    for (int r = 0; r < ranks; ++r)
      for (int c = 0; c < 2; ++c)
        log += who(r) + fmt::format(
                            "AllReduce: opCount 0 sendbuff 0x1 recvbuff 0x1 count 4 datatype 7 op 0 root 0 "
                            "comm 0x{:x} [nranks={}] stream 0x1\n",
                            0x1000 + r, ranks);
  }
  NcclJobLog job("iteration [0-9]+");
  job.begin_file("containers");
  std::istringstream in(log);
  for (std::string line; std::getline(in, line);) job.line(line);
  job.finish();
  const auto ps = job.processes();
  ASSERT_EQ(ps.size(), static_cast<std::size_t>(ranks));
  EXPECT_EQ(job.host_count(), static_cast<std::size_t>(hosts));
  for (int r = 0; r < ranks; ++r) {
    const auto& p = *ps[static_cast<std::size_t>(r)];
    EXPECT_EQ(p.rank(), r);
    EXPECT_EQ(p.host, fmt::format("node{}", r / per_host));
    EXPECT_EQ(p.pid, 100 + r % per_host);
    EXPECT_EQ(p.lines, 1u + steps * 2) << r;
    EXPECT_EQ(p.cut, NcclProcess::Cut::position) << r;
    const auto s = summarize_iterations(p, job.markers_of(p));
    ASSERT_EQ(s.whole, static_cast<std::uint64_t>(steps)) << r;
    EXPECT_EQ(s.kinds.at(0).median_calls, 2u) << r;
    EXPECT_EQ(s.kinds.at(0).min_calls, s.kinds.at(0).max_calls) << r;
  }
}

// A group whose `alike` label is long (every eighth rank differs: 0-6,8-14,...): the terminal's row carries it whole,
// every other row what the file's column holds of it (its width, 256 bytes; HDF5 cut there before too), not a copy of
// the whole label each (at 100,000 ranks 150 KB x 87,500 rows).
TEST(NcclLogReport, TheHiddenRowsCarryTheAlikeLabelCutAtTheColumnsWidth) {
  constexpr int ranks = 400;
  std::string log;
  for (int r = 0; r < ranks; ++r) {
    const std::string p = fmt::format("h{}:{}:1 [{}]", r / 8, 10 + r % 8, r % 8);
    log += p + fmt::format(" NCCL INFO comm 0x{:x} rank {} nranks {} cudaDev 0 - Init COMPLETE\n", r + 1, r, ranks);
    log += p + fmt::format(" NCCL INFO Channel 00/0 : {}[0] -> {}[0] via {}\n", r, (r + 1) % ranks,
                           r % 8 == 7 ? "NET/IB/0" : "P2P/IPC");
  }
  const auto job = read_lines(log);
  const NcclLogTables tables;
  const auto report = report_rows(tables, job, job.processes());
  ASSERT_EQ(report.ranks.shown.size(), 2u);
  const auto alike = [](const results::Row& row) { return std::get<std::string>(row.get("alike")); };
  const std::string whole = alike(report.ranks.shown[0]);
  EXPECT_EQ(whole.substr(0, 15), "0-6,8-14,16-22,");
  EXPECT_GT(whole.size(), 256u);
  EXPECT_EQ(whole.substr(whole.size() - 8), ",392-398");
  const std::size_t width = tables.ranks.column("alike").width;
  ASSERT_EQ(width, 256u);
  ASSERT_EQ(report.ranks.hidden.size(), static_cast<std::size_t>(ranks - 2));
  for (const auto& row : report.ranks.hidden) {
    const int rank = static_cast<int>(std::get<std::int64_t>(row.get("rank")));
    EXPECT_EQ(alike(row), rank % 8 == 7 ? alike(report.ranks.shown[1]).substr(0, width) : whole.substr(0, width))
        << rank;
  }
}
