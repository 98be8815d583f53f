// NCCL's RAS service read from outside: the JSON reader, replies recorded from a real NCCL 2.28.9 job on 2 x H200
// (tests/fixtures/ras: healthy, rank 1 stopped calling collectives, rank 1 frozen with SIGSTOP), the judge, the
// address and the client's refusals (nothing listening, a server that never answers).
#include "fabricbench/job/ras.hpp"

#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <fstream>
#include <sstream>

#include "../fixtures.hpp"
#include "fabricbench/error.hpp"
#include "fabricbench/job/json.hpp"

using namespace fabricbench;
using namespace fabricbench::job;

namespace {

std::string recorded(const std::string& name) {
  std::ifstream in(fixtures_folder() / "ras" / "nccl-2.28.9-h200x2" / name);
  std::stringstream s;
  s << in.rdbuf();
  EXPECT_FALSE(s.str().empty()) << name;
  return s.str();
}

std::vector<RasProblem> of_kind(const std::vector<RasProblem>& all, const std::string& kind) {
  std::vector<RasProblem> out;
  for (const auto& p : all)
    if (RasProblem::kind_name(p.kind) == kind) out.push_back(p);
  return out;
}

// A TCP socket listening on 127.0.0.1 that never accepts: the kernel completes the connection, nobody answers.
struct MuteServer {
  int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  int port = 0;
  MuteServer() {
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    ::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a);
    ::listen(fd, 4);
    socklen_t n = sizeof a;
    ::getsockname(fd, reinterpret_cast<sockaddr*>(&a), &n);
    port = ntohs(a.sin_port);
  }
  ~MuteServer() { ::close(fd); }
};

std::string refusal(const std::function<void()>& f) {
  try {
    f();
  } catch (const Error& e) {
    EXPECT_EQ(e.status(), ExitStatus::usage);
    return e.what();
  }
  return "";
}

}  // namespace

TEST(Json, ReadsValuesAndCountsTheCommasNcclLeftOut) {
  std::size_t missing = 0;
  const auto j = Json::parse(R"({"a": [1, -2.5e1, true, false, null], "b": {"c": "x\"y" "d": 3}})", &missing);
  EXPECT_EQ(missing, 1u);
  EXPECT_EQ(j["a"].elements().size(), 5u);
  EXPECT_DOUBLE_EQ(j["a"].elements()[1].number(), -25);
  EXPECT_TRUE(j["a"].elements()[2].boolean());
  EXPECT_FALSE(j["a"].elements()[3].boolean());
  EXPECT_TRUE(j["a"].elements()[4].is(Json::Type::null));
  EXPECT_EQ(j["b"]["c"].text(), "x\"y");
  EXPECT_DOUBLE_EQ(j["b"]["d"].number(), 3);
  EXPECT_TRUE(j["nothing"].is(Json::Type::null));
  for (const char* bad : {"", "{", "[1,", "{\"a\" 1}", "{\"a\": tru}", "\"open", "{} x", "[1.2.3]"})
    EXPECT_THROW(Json::parse(bad), std::runtime_error) << bad;
  EXPECT_THROW(Json::parse(std::string(100, '[') + std::string(100, ']')), std::runtime_error) << "depth bound";
}

TEST(Ras, AHealthyJobIsOneOkFinding) {
  const auto s = parse_ras_json(recorded("healthy.json"));
  EXPECT_EQ(s.nccl_version, "2.28.9");
  ASSERT_EQ(s.communicators.size(), 1u);
  EXPECT_EQ(s.communicators[0].ranks.size(), 2u);
  const auto found = judge_ras(s);
  ASSERT_EQ(found.size(), 1u);
  EXPECT_EQ(found[0].kind, RasProblem::Kind::healthy);
  EXPECT_EQ(found[0].severity, RasProblem::Severity::ok);
  EXPECT_TRUE(ras_text_problems(recorded("healthy.txt")).empty());
}

TEST(Ras, ARankThatStoppedCallingCollectivesIsTheLaggardByRankPidGpuAndHost) {
  const auto s = parse_ras_json(recorded("mismatch.json"));
  const auto found = judge_ras(s);
  ASSERT_EQ(found.size(), 1u) << found[0].what;
  const auto& p = found[0];
  EXPECT_EQ(p.kind, RasProblem::Kind::laggard);
  EXPECT_EQ(p.severity, RasProblem::Severity::fail);
  EXPECT_EQ(p.rank, 1);
  EXPECT_EQ(p.pid, 724);
  EXPECT_EQ(p.host, "192.0.2.2");
  EXPECT_NE(p.what.find("rank 1 (pid 724, GPU 1 on host 192.0.2.2) launched AllReduce up to op 78 while 1 peer "
                        "reached op 79"),
            std::string::npos)
      << p.what;
  EXPECT_NE(p.hint.find("py-spy dump --pid 724"), std::string::npos) << p.hint;
  // The same counts a second time: still the laggard; counts that moved: progressing, no laggard.
  EXPECT_EQ(of_kind(judge_ras(s, &s), "laggard").size(), 1u);
  auto earlier = s;
  earlier.communicators[0].ranks[1].ops["AllReduce"] = 77;
  EXPECT_TRUE(of_kind(judge_ras(s, &earlier), "laggard").empty());
  const auto text = ras_text_problems(recorded("mismatch.txt"));
  ASSERT_FALSE(text.empty());
  EXPECT_NE(text.back().find("Rank 1 has launched up to operation 78"), std::string::npos) << text.back();
}

TEST(Ras, AFrozenProcessIsDeadAndNothingElseIsBlamed) {
  const auto s = parse_ras_json(recorded("dead.json"));
  EXPECT_EQ(s.missing_commas, 1u) << "NCCL 2.28.9 writes a missing rank without the comma before \"status\"";
  const auto found = judge_ras(s);
  ASSERT_EQ(found.size(), 1u) << found.back().what;
  EXPECT_EQ(found[0].kind, RasProblem::Kind::dead);
  EXPECT_EQ(found[0].pid, 724);
  EXPECT_EQ(found[0].rank, 1);
  EXPECT_NE(found[0].what.find("process 724 on host 192.0.2.2 (GPU 1) is considered dead"), std::string::npos)
      << found[0].what;
  EXPECT_NE(found[0].what.find("rank 1 of communicator 0xc04513ef3a63ea2e (2 ranks)"), std::string::npos);
  EXPECT_FALSE(ras_text_problems(recorded("dead.txt")).empty());
}

TEST(Ras, ErrorsAbortsAndMissingRanksAreEachNamed) {
  auto s = parse_ras_json(recorded("healthy.json"));
  s.communicators[0].ranks[0].async_error = 3;
  s.communicators[0].ranks[1].abort = true;
  auto missing = s.communicators[0].ranks[1];
  missing.rank = 2, missing.missing = true, missing.unresponsive = true, missing.abort = false;
  s.communicators[0].ranks.push_back(missing);
  const auto found = judge_ras(s);
  EXPECT_EQ(of_kind(found, "async_error").size(), 1u);
  EXPECT_EQ(of_kind(found, "aborted").size(), 1u);
  ASSERT_EQ(of_kind(found, "missing").size(), 1u);
  EXPECT_NE(of_kind(found, "missing")[0].what.find("rank 2"), std::string::npos);
  EXPECT_TRUE(of_kind(found, "healthy").empty());
  EXPECT_THROW(parse_ras_json("{\"nccl_version\": \"2.28.9\"}"), std::runtime_error);
}

TEST(RasAddress, HostPortAndRefusals) {
  EXPECT_EQ(RasAddress::parse("", "--nccl-ras").name(), "127.0.0.1:28028");
  EXPECT_EQ(RasAddress::parse("node7", "--nccl-ras").name(), "node7:28028");
  EXPECT_EQ(RasAddress::parse("node7:1234", "--nccl-ras").name(), "node7:1234");
  EXPECT_EQ(RasAddress::parse(":1234", "--nccl-ras").name(), "127.0.0.1:1234");
  EXPECT_EQ(RasAddress::parse("[::1]:99", "--nccl-ras").name(), "[::1]:99");
  EXPECT_EQ(refusal([] { RasAddress::parse("node7:http", "--nccl-ras"); }),
            "--nccl-ras 'node7:http': the port must be a number from 1 to 65535");
  EXPECT_NE(refusal([] { RasAddress::parse("node7:70000", "--nccl-ras"); }), "");
  EXPECT_NE(refusal([] { RasAddress::parse("[::1", "--nccl-ras"); }), "");
}

TEST(RasClient, NothingListeningAndASilentServerAreOneLineEachWithinTheTimeout) {
  int port = 0;
  {
    MuteServer closed;  // a port that was free a moment ago
    port = closed.port;
  }
  const auto none = refusal([&] { query_ras(RasAddress::parse(":" + std::to_string(port), "x"), 2, "--nccl-ras"); });
  EXPECT_EQ(none.rfind("--nccl-ras 127.0.0.1:" + std::to_string(port) + ": Connection refused: no NCCL RAS", 0), 0u)
      << none;
  EXPECT_EQ(none.find('\n'), std::string::npos);
  MuteServer mute;
  const auto start = std::chrono::steady_clock::now();
  const auto silent =
      refusal([&] { query_ras(RasAddress::parse(":" + std::to_string(mute.port), "x"), 0.5, "--nccl-ras"); });
  const double took = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  EXPECT_NE(silent.find("no answer within 0.5 s (--timeout)"), std::string::npos) << silent;
  EXPECT_LT(took, 5.0) << "bounded by the timeout";
}
