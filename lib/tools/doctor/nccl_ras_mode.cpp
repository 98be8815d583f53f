#include "fabricbench/tools/doctor/nccl_ras_mode.hpp"

#include <fmt/format.h>

#include <chrono>
#include <sstream>
#include <stdexcept>
#include <thread>

#include "fabricbench/doctor/findings.hpp"

namespace fabricbench::doctor {
namespace {

const char* const kOption = "--nccl-ras";
// The collective kinds NCCL's RAS counts, and their columns.
const std::pair<const char*, const char*> kKinds[] = {{"AllReduce", "all_reduce"},
                                                      {"AllGather", "all_gather"},
                                                      {"ReduceScatter", "reduce_scatter"},
                                                      {"Broadcast", "broadcast"},
                                                      {"Reduce", "reduce"}};

struct RasTables {
  results::TableSpec communicators, ranks, reply;
  RasTables() {
    using namespace results;
    communicators = {"doctor", "ras_communicators",
                     {key_text("communicator", 64), setting_int("size"),
                      measured_int("ranks_reporting", Unit::none, Better::none),
                      measured_int("ranks_missing", Unit::none, Better::lower),
                      measured_int("op_spread", Unit::none, Better::lower), setting_text("state", 32)}};
    std::vector<Column> rank_columns{key_text("communicator", 64), key_int("rank"), setting_text("host", 64),
                                     setting_int("pid"),           setting_int("cuda_dev"), setting_int("nvml_dev"),
                                     setting_int("missing"),       setting_int("dead"),     setting_int("async_error"),
                                     setting_int("aborted")};
    for (const auto& [kind, column] : kKinds) rank_columns.push_back(measured_int(column, Unit::none, Better::none));
    ranks = {"doctor", "ras_ranks", rank_columns};
    reply = {"doctor", "ras_reply", {key_int("line"), setting_text("text", 256)}};
  }
};

job::RasStatus parse(const job::RasAddress& address, const std::string& text) {
  try {
    return job::parse_ras_json(text);
  } catch (const std::runtime_error& e) {
    throw Error::usage(fmt::format("{} {}: the reply is not NCCL's RAS JSON ({})", kOption, address.name(), e.what()));
  }
}

bool has_laggard(const std::vector<job::RasProblem>& problems) {
  for (const auto& p : problems)
    if (p.kind == "laggard") return true;
  return false;
}

Status status_of(job::RasProblem::Severity s) {
  return s == job::RasProblem::Severity::fail ? Status::fail : s == job::RasProblem::Severity::warn ? Status::warn
                                                                                                   : Status::ok;
}

}  // namespace

NcclRasMode::NcclRasMode(const job::RasAddress& address, double timeout_s, double second_look_s)
    : address_(address) {
  reply_ = job::query_ras(address, timeout_s, kOption);
  if (!reply_.json) return;
  status_ = parse(address, reply_.text);
  if (second_look_s <= 0 || !has_laggard(job::judge_ras(*status_))) return;
  const auto start = std::chrono::steady_clock::now();
  std::this_thread::sleep_for(std::chrono::duration<double>(second_look_s));
  before_ = std::move(status_);
  reply_ = job::query_ras(address, timeout_s, kOption);
  seconds_between_ = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  if (reply_.json) status_ = parse(address, reply_.text);
}

NcclRasMode::NcclRasMode(const job::RasAddress& address, job::RasReply last, std::optional<job::RasStatus> status,
                         std::optional<job::RasStatus> before, double seconds_between)
    : address_(address), reply_(std::move(last)), status_(std::move(status)), before_(std::move(before)),
      seconds_between_(seconds_between) {}

std::vector<Finding> NcclRasMode::findings() const {
  std::vector<Finding> findings;
  if (status_) {
    for (const auto& p : job::judge_ras(*status_, before_ ? &*before_ : nullptr))
      findings.push_back({p.host, p.rank, "nccl.ras." + p.kind,
                          p.communicator.empty() ? (p.pid >= 0 ? fmt::format("pid {}", p.pid) : "job") : p.communicator,
                          status_of(p.severity), p.what, p.kind == "healthy" ? "" : "every rank alive and in step",
                          p.hint});
  } else {
    // Before NCCL 2.28.7 there is no JSON: the text's Errors and Warnings, and the whole reply in /doctor/ras_reply.
    const auto errors = job::ras_text_problems(reply_.text);
    std::string what;
    for (const auto& e : errors) what += (what.empty() ? "" : " | ") + e.substr(e.find_first_not_of(' '));
    findings.push_back({"", -1, "nccl.ras.text", "job", errors.empty() ? Status::ok : Status::fail,
                        errors.empty() ? "nothing under the reply's Errors and Warnings" : what.substr(0, 1000),
                        "empty Errors and Warnings",
                        "this NCCL gives RAS replies in text only (JSON from 2.28.7): the reply is kept verbatim in "
                        "/doctor/ras_reply"});
  }
  return findings;
}

std::string NcclRasMode::answer() const {
  const auto found = findings();
  for (const auto& f : found)
    if (f.status == Status::fail) return f.value;
  return found.front().value;
}

ExitStatus NcclRasMode::write(results::ResultSet& out, const results::TableSpec& findings_table, bool show_ok,
                              bool strict) const {
  const RasTables tables;
  for (const auto* t : {&tables.communicators, &tables.ranks, &tables.reply}) out.declare(*t);
  const std::vector<Finding> findings = this->findings();
  out.note(fmt::format("answer: {}", answer()));
  out.note(fmt::format("{} {} ({}; NCCL {}{})", kOption, address_.name(), reply_.server,
                       status_ ? status_->nccl_version : std::string("?"),
                       before_ ? fmt::format("; looked twice, {:.1f} s apart", seconds_between_) : ""));
  if (status_ && status_->missing_commas)
    out.note(fmt::format("the reply's JSON lacked {} comma(s) between members (read anyway; seen in NCCL 2.28.9)",
                         status_->missing_commas));
  write_findings(out, findings_table, findings, show_ok);

  if (status_) {
    std::vector<results::Row> comm_rows, rank_rows;
    for (const auto& c : status_->communicators) {
      std::int64_t reporting = 0, missing = 0, lowest = -1, highest = 0;
      for (const auto& r : c.ranks) {
        (r.missing ? missing : reporting)++;
        if (r.missing) continue;
        std::int64_t total = 0;
        for (const auto& [kind, n] : r.ops) total += static_cast<std::int64_t>(n);
        highest = std::max(highest, total), lowest = lowest < 0 ? total : std::min(lowest, total);
      }
      const std::int64_t spread = lowest < 0 ? 0 : highest - lowest;
      results::Row row(tables.communicators);
      row.set("communicator", c.hash).set("size", std::int64_t(c.size)).set("ranks_reporting", reporting);
      row.set("ranks_missing", missing).set("op_spread", spread);
      row.set("state", std::string(missing ? "incomplete" : spread ? "mismatch" : "ok"));
      comm_rows.push_back(row);
      for (const auto& r : c.ranks) {
        results::Row rr(tables.ranks);
        rr.set("communicator", c.hash).set("rank", std::int64_t(r.rank)).set("host", r.host);
        rr.set("pid", std::int64_t(r.pid)).set("cuda_dev", std::int64_t(r.cuda_dev));
        rr.set("nvml_dev", std::int64_t(r.nvml_dev)).set("missing", std::int64_t(r.missing));
        rr.set("dead", std::int64_t(r.dead)).set("async_error", std::int64_t(r.async_error));
        rr.set("aborted", std::int64_t(r.abort));
        for (const auto& [kind, column] : kKinds) {
          const auto it = r.ops.find(kind);
          rr.set(column, it == r.ops.end() || r.missing ? std::int64_t(-1) : static_cast<std::int64_t>(it->second));
        }
        rank_rows.push_back(rr);
      }
    }
    out.section(tables.communicators, "communicators (op_spread: most minus fewest operations a rank launched)",
                {{"communicator"}, {"size"}, {"ranks_reporting"}, {"ranks_missing"}, {"op_spread"}, {"state"}});
    out.rows(comm_rows);
    out.section(tables.ranks, "ranks (-1: no count; a missing rank reported none)",
                {{"communicator"}, {"rank"}, {"host"}, {"pid"}, {"cuda_dev"}, {"dead"}, {"all_reduce"},
                 {"all_gather"}, {"reduce_scatter"}, {"broadcast"}, {"reduce"}});
    out.rows(rank_rows);
  }
  std::vector<results::Row> lines;
  std::istringstream in(reply_.text);
  std::int64_t n = 0;
  for (std::string line; std::getline(in, line);)
    lines.push_back(results::Row(tables.reply).set("line", n++).set("text", line.substr(0, 256)));
  out.section(tables.reply, "", {});  // the file's, not the terminal's
  out.rows(lines);

  std::vector<const Finding*> all;
  for (const auto& f : findings) all.push_back(&f);
  out.note(status_counts(all));
  Findings verdict;
  verdict.append(findings);
  const Status worst = verdict.worst();
  return worst == Status::fail || (strict && worst == Status::warn) ? ExitStatus::measurement_failed : ExitStatus::ok;
}

}  // namespace fabricbench::doctor
