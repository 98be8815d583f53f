// A running NCCL job seen from outside through NCCL's RAS service (NCCL 2.24 and later; on by default in every
// process, listening on 127.0.0.1:28028, NCCL_RAS_ADDR): the client's protocol (NCCL's src/ras/client.cc), the reply
// read into communicators and ranks, and the problems it shows: dead processes, ranks behind their communicator's
// operation count (a laggard that never entered a collective), missing ranks, asynchronous errors and aborts.
#pragma once
#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace fabricbench::job {

struct RasAddress {
  std::string host = "127.0.0.1";
  std::string port = "28028";
  // "HOST", "HOST:PORT", ":PORT", "[V6ADDR]:PORT"; Error::usage naming `option` otherwise.
  static RasAddress parse(const std::string& text, const std::string& option);
  std::string name() const;  // "host:port"
};

struct RasReply {
  std::string server;  // the server's protocol line, "SERVER PROTOCOL 2"
  bool json = false;   // the server took SET FORMAT json (NCCL 2.28.7 and later)
  std::string text;    // the reply as NCCL wrote it
};

// Connects, speaks the protocol (CLIENT PROTOCOL 2, TIMEOUT, SET FORMAT json, VERBOSE STATUS) and reads the reply
// until NCCL closes the connection, the whole bounded by `timeout_s` (NCCL's own collection from the job's other
// processes is given the part left for it). A server that refuses JSON is asked again for text. Anything else is
// Error::usage, one line naming `option` and the address: nothing listening, not a RAS service, no reply in time.
RasReply query_ras(const RasAddress& address, double timeout_s, const std::string& option);

struct RasRank {
  int rank = -1;
  std::string host;
  long pid = -1;
  int cuda_dev = -1, nvml_dev = -1;
  int init_state = 0, async_error = 0;
  bool finalize = false, destroy = false, abort = false;
  bool missing = false;                      // no data from it: in the reply's missing_ranks
  bool unresponsive = false;                 // missing, and RAS could not reach it
  bool dead = false;                         // missing, and RAS considers its process dead
  std::map<std::string, std::uint64_t> ops;  // collective kind -> operations launched ("AllReduce" -> 79)
};

struct RasCommunicator {
  std::string hash;  // "0xc04513ef3a63ea2e"
  int size = 0;
  std::vector<RasRank> ranks;  // the ranks that reported, then the missing ones
};

struct RasStatus {
  std::string nccl_version;
  std::vector<RasCommunicator> communicators;
  std::size_t missing_commas = 0;  // NCCL 2.28.9 writes a missing rank without a comma before "status"
};

// NCCL's JSON reply; std::runtime_error naming what is wrong where it is not one.
RasStatus parse_ras_json(const std::string& text);

struct RasProblem {
  enum class Severity { ok, warn, fail };
  // What was seen; its name (kind_name) is the doctor's check "nccl.ras.<name>".
  enum class Kind { dead, laggard, missing, async_error, aborted, init, healthy };
  static const char* kind_name(Kind k);
  Severity severity = Severity::ok;
  Kind kind = Kind::healthy;
  std::string host;  // of the process it is about ("" for the job)
  long pid = -1;
  int rank = -1;  // in `communicator` (-1: the process or the job)
  int gpu = -1;   // the process's CUDA device (-1: unknown, or the job)
  std::string communicator;
  std::string what;  // one sentence: who, what was seen
  std::string hint;  // what to do
};

// The problems `now` shows. With `before` (an earlier reply of the same job), a rank behind its peers is a laggard
// only where its count did not move between the two: a healthy job sampled between two ranks' launches is not one.
// No problem: one "healthy" item saying what was seen.
std::vector<RasProblem> judge_ras(const RasStatus& now, const RasStatus* before = nullptr);

// The text reply's Errors and Warnings sections, line by line (a version without JSON; NCCL files a MISMATCH under
// Warnings, DEAD and INCOMPLETE under Errors): empty when both are.
std::vector<std::string> ras_text_problems(const std::string& text);

}  // namespace fabricbench::job
