#include "fabricbench/doctor/ras_report.hpp"

#include <arpa/inet.h>
#include <fmt/format.h>
#include <ifaddrs.h>
#include <netdb.h>
#include <netinet/in.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <set>
#include <sstream>
#include <stdexcept>
#include <thread>

#include "fabricbench/doctor/findings.hpp"
#include "fabricbench/facts/rail_nic.hpp"
#include "fabricbench/ops/collective.hpp"
#include "fabricbench/sweep/topology.hpp"

namespace fabricbench::doctor {
namespace {

const char* const kOption = "--nccl-ras";
constexpr std::int64_t kReplyLines = 20000;  // of the reply kept verbatim in /doctor/ras_reply
constexpr std::size_t kNamedHosts = 256;     // hosts of the findings whose address is looked up
// The operations NCCL's RAS counts per rank: the collectives NCCL names (alltoall and sendrecv are its sends and
// receives, which it does not count), each a column of /doctor/ras_ranks under the table's name.
std::vector<const ops::CollectiveOp*> counted_ops() {
  std::vector<const ops::CollectiveOp*> out;
  for (const auto& c : ops::collectives())
    if (!c.nccl_name.empty()) out.push_back(&c);
  return out;
}

struct RasTables {
  results::TableSpec communicators, ranks, reply;
  RasTables() {
    using namespace results;
    communicators = {
        "doctor",
        "ras_communicators",
        {key_text("communicator", 64), setting_int("size"), measured_int("ranks_reporting", Unit::none, Better::none),
         measured_int("ranks_missing", Unit::none, Better::lower), measured_int("op_spread", Unit::none, Better::lower),
         setting_text("state", 32)}};
    std::vector<Column> rank_columns{key_text("communicator", 64), key_int("rank"),         setting_text("host", 64),
                                     setting_int("pid"),           setting_int("cuda_dev"), setting_int("nvml_dev"),
                                     setting_int("missing"),       setting_int("dead"),     setting_int("async_error"),
                                     setting_int("aborted")};
    for (const auto* op : counted_ops())
      rank_columns.push_back(measured_int(std::string(op->name), Unit::none, Better::none));
    ranks = {"doctor", "ras_ranks", rank_columns};
    reply = {"doctor", "ras_reply", {key_int("line"), setting_text("text", 256)}};
    const auto text = [](const TableSpec& t, const char* name) { return t.handle<std::string>(name); };
    const auto integer = [](const TableSpec& t, const char* name) { return t.handle<std::int64_t>(name); };
    auto& c = communicator_col;
    c.communicator = text(communicators, "communicator"), c.state = text(communicators, "state");
    c.size = integer(communicators, "size"), c.ranks_reporting = integer(communicators, "ranks_reporting");
    c.ranks_missing = integer(communicators, "ranks_missing"), c.op_spread = integer(communicators, "op_spread");
    auto& r = rank_col;
    r.communicator = text(ranks, "communicator"), r.host = text(ranks, "host"), r.rank = integer(ranks, "rank");
    r.pid = integer(ranks, "pid"), r.cuda_dev = integer(ranks, "cuda_dev"), r.nvml_dev = integer(ranks, "nvml_dev");
    r.missing = integer(ranks, "missing"), r.dead = integer(ranks, "dead");
    r.async_error = integer(ranks, "async_error"), r.aborted = integer(ranks, "aborted");
    for (const auto* op : counted_ops()) r.ops.push_back(integer(ranks, std::string(op->name).c_str()));
    reply_col = {integer(reply, "line"), text(reply, "text")};
  }
  // The columns as handles, made with the tables; rank_col.ops in counted_ops()' order.
  using Text = results::ColumnHandle<std::string>;
  using Int = results::ColumnHandle<std::int64_t>;
  struct {
    Text communicator, state;
    Int size, ranks_reporting, ranks_missing, op_spread;
  } communicator_col;
  struct {
    Text communicator, host;
    Int rank, pid, cuda_dev, nvml_dev, missing, dead, async_error, aborted;
    std::vector<Int> ops;
  } rank_col;
  struct {
    Int line;
    Text text;
  } reply_col;
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
    if (p.kind == job::RasProblem::Kind::laggard) return true;
  return false;
}

// The name a host's address resolves to (short: up to the first dot), else the address itself.
std::string host_name(const std::string& address) {
  addrinfo hints{};
  hints.ai_flags = AI_NUMERICHOST;
  addrinfo* found = nullptr;
  if (getaddrinfo(address.c_str(), nullptr, &hints, &found) != 0) return address;  // a name already
  char name[NI_MAXHOST] = {};
  const int rc = getnameinfo(found->ai_addr, found->ai_addrlen, name, sizeof name, nullptr, 0, NI_NAMEREQD);
  freeaddrinfo(found);
  if (rc != 0) return address;
  std::string text(name);
  return text.substr(0, text.find('.'));
}

// This host's addresses and names, as RAS may name it.
std::set<std::string> local_addresses() {
  std::set<std::string> out{"localhost"};
  char name[256] = {};
  if (::gethostname(name, sizeof name - 1) == 0)
    out.insert(name), out.insert(std::string(name).substr(0, std::string(name).find('.')));
  ifaddrs* list = nullptr;
  if (::getifaddrs(&list) != 0) return out;
  for (ifaddrs* i = list; i; i = i->ifa_next) {
    if (!i->ifa_addr || (i->ifa_addr->sa_family != AF_INET && i->ifa_addr->sa_family != AF_INET6)) continue;
    char text[INET6_ADDRSTRLEN] = {};
    const void* where = i->ifa_addr->sa_family == AF_INET
                            ? static_cast<const void*>(&reinterpret_cast<sockaddr_in*>(i->ifa_addr)->sin_addr)
                            : static_cast<const void*>(&reinterpret_cast<sockaddr_in6*>(i->ifa_addr)->sin6_addr);
    if (::inet_ntop(i->ifa_addr->sa_family, where, text, sizeof text)) out.insert(text);
  }
  ::freeifaddrs(list);
  return out;
}

Status status_of(job::RasProblem::Severity s) {
  return s == job::RasProblem::Severity::fail   ? Status::fail
         : s == job::RasProblem::Severity::warn ? Status::warn
                                                : Status::ok;
}

}  // namespace

NcclRasMode::NcclRasMode(const job::RasAddress& address, double timeout_s, double second_look_s,
                         const RasExtras& extras)
    : address_(address) {
  // The files first: a bad --topology or --rail-map is one line before the job is asked.
  if (!extras.topology.empty()) (void)sweep::Topology::read(extras.topology, {}, 0);
  if (!extras.rail_map.empty()) {
    const auto map = facts::RailMap::read(extras.rail_map);
    for (int r = 0; r < map.rails(); ++r) nics_.push_back(map.rail(r).name());
  }
  reply_ = job::query_ras(address, timeout_s, kOption);
  if (reply_.json) {
    status_ = parse(address, reply_.text);
    if (second_look_s > 0 && has_laggard(job::judge_ras(*status_))) {
      const auto start = std::chrono::steady_clock::now();
      std::this_thread::sleep_for(std::chrono::duration<double>(second_look_s));
      before_ = std::move(status_);
      reply_ = job::query_ras(address, timeout_s, kOption);
      seconds_between_ = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
      if (reply_.json) status_ = parse(address, reply_.text);
    }
  }
  take_extras(extras);
}

void NcclRasMode::take_extras(const RasExtras& extras) {
  if (!status_) return;
  const auto problems = job::judge_ras(*status_, before_ ? &*before_ : nullptr);
  // Each named host's address turned into its name: a reverse lookup each, which a slow DNS makes seconds long, so
  // the first kNamedHosts only (a job where every rank lags names thousands of hosts; the addresses stay as RAS gave).
  std::vector<std::string> names;
  for (const auto& p : problems)
    if (!p.host.empty() && !places_.count(p.host) && places_.size() < kNamedHosts)
      places_[p.host] = host_name(p.host), names.push_back(places_[p.host]);
  if (!extras.topology.empty()) {
    const auto topology = sweep::Topology::read(extras.topology, names, 0);
    for (auto& [address, place] : places_) {
      const auto it = std::find(names.begin(), names.end(), place);
      const int leaf = it == names.end() ? -1 : topology.leaf_of(static_cast<int>(it - names.begin()), 0);
      if (leaf < 0) {
        place += ": under no leaf of --topology";
        continue;
      }
      const auto parent = topology.parent_name(leaf);
      place += fmt::format(": leaf {}{}", topology.switches()[static_cast<std::size_t>(leaf)].name,
                           parent.empty() ? "" : " under " + parent);
    }
  }
  if (!extras.stacks) return;
  const auto here = local_addresses();
  std::set<std::pair<std::string, long>> seen;  // a pid is a process only with its host
  std::size_t away = 0;
  for (const auto& p : problems) {
    if (p.pid < 0 || p.kind == job::RasProblem::Kind::healthy || !seen.insert({p.host, p.pid}).second) continue;
    if (here.count(p.host)) {
      const auto taken = job::take_stacks({static_cast<pid_t>(p.pid)}, 20);
      stacks_.insert(stacks_.end(), taken.begin(), taken.end());
    } else if (++away <= kNamedHosts) {
      elsewhere_.push_back(fmt::format("pid {} runs on host {}, not here: there, {}", p.pid, p.host, p.hint));
    }
  }
  if (away > kNamedHosts)
    elsewhere_.push_back(
        fmt::format("and {} more named processes on other hosts (the findings name each)", away - kNamedHosts));
}

NcclRasMode::NcclRasMode(const job::RasAddress& address, job::RasReply last, std::optional<job::RasStatus> status,
                         std::optional<job::RasStatus> before, double seconds_between)
    : address_(address),
      reply_(std::move(last)),
      status_(std::move(status)),
      before_(std::move(before)),
      seconds_between_(seconds_between) {}

std::vector<Finding> NcclRasMode::findings() const {
  std::vector<Finding> findings;
  if (status_) {
    for (const auto& p : job::judge_ras(*status_, before_ ? &*before_ : nullptr)) {
      std::string where;
      if (const auto it = places_.find(p.host); it != places_.end() && it->second != p.host) where = it->second;
      if (!nics_.empty() && p.gpu >= 0) {
        const auto rail = static_cast<std::size_t>(p.gpu) % nics_.size();
        where += fmt::format("{}GPU {} on rail {}: NIC {}", where.empty() ? "" : "; ", p.gpu, rail, nics_[rail]);
      }
      findings.push_back({p.host, p.rank, std::string("nccl.ras.") + job::RasProblem::kind_name(p.kind),
                          p.communicator.empty() ? (p.pid >= 0 ? fmt::format("pid {}", p.pid) : "job") : p.communicator,
                          status_of(p.severity), where.empty() ? p.what : fmt::format("{} (host {})", p.what, where),
                          p.kind == job::RasProblem::Kind::healthy ? "" : "every rank alive and in step", p.hint});
    }
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
      const auto& cc = tables.communicator_col;
      results::Row row(tables.communicators);
      row.set(cc.communicator, c.hash).set(cc.size, c.size).set(cc.ranks_reporting, reporting);
      row.set(cc.ranks_missing, missing).set(cc.op_spread, spread);
      row.set(cc.state, std::string(missing ? "incomplete" : spread ? "mismatch" : "ok"));
      comm_rows.push_back(row);
      const auto& rc = tables.rank_col;
      for (const auto& r : c.ranks) {
        results::Row rr(tables.ranks);
        rr.set(rc.communicator, c.hash).set(rc.rank, r.rank).set(rc.host, r.host);
        rr.set(rc.pid, r.pid).set(rc.cuda_dev, r.cuda_dev).set(rc.nvml_dev, r.nvml_dev);
        rr.set(rc.missing, r.missing).set(rc.dead, r.dead).set(rc.async_error, r.async_error);
        rr.set(rc.aborted, r.abort);
        const auto counted = counted_ops();
        for (std::size_t k = 0; k < counted.size(); ++k) {
          const auto it = r.ops.find(std::string(counted[k]->nccl_name));
          rr.set(rc.ops[k], it == r.ops.end() || r.missing ? std::int64_t(-1) : static_cast<std::int64_t>(it->second));
        }
        rank_rows.push_back(rr);
      }
    }
    out.section(tables.communicators, "communicators (op_spread: most minus fewest operations a rank launched)",
                {{"communicator"}, {"size"}, {"ranks_reporting"}, {"ranks_missing"}, {"op_spread"}, {"state"}});
    out.rows(comm_rows);
    std::vector<results::TerminalColumn> shown{{"communicator"}, {"rank"}, {"host"}, {"pid"}, {"cuda_dev"}, {"dead"}};
    for (const auto* op : counted_ops()) shown.emplace_back(std::string(op->name));
    out.section(tables.ranks, "ranks (-1: no count; a missing rank reported none)", shown);
    out.rows(rank_rows);
  }
  // The reply verbatim, line by line, up to kReplyLines: a text reply (before NCCL 2.28.7) is only there, and is short;
  // a JSON reply of a large job (24 lines a rank: 2.4 million at 100,000 ranks) is whole in the tables above.
  std::vector<results::Row> lines;
  std::istringstream in(reply_.text);
  std::int64_t n = 0, read = 0;
  for (std::string line; std::getline(in, line); ++read)
    if (n < kReplyLines)
      lines.push_back(
          results::Row(tables.reply).set(tables.reply_col.line, n++).set(tables.reply_col.text, line.substr(0, 256)));
  out.section(tables.reply, "", {});  // the file's, not the terminal's
  out.rows(lines);
  if (read > n)
    out.note(
        fmt::format("/doctor/ras_reply keeps the reply's first {} of {} lines; its communicators and ranks are "
                    "whole in /doctor/ras_communicators and /doctor/ras_ranks",
                    n, read));
  job::write_stacks(out, "doctor", "ras_stacks", stacks_);
  for (const auto& line : elsewhere_) out.note(line);

  std::vector<const Finding*> all;
  for (const auto& f : findings) all.push_back(&f);
  out.note(status_counts(all));
  Findings verdict;
  verdict.append(findings);
  const Status worst = verdict.worst();
  return worst == Status::fail || (strict && worst == Status::warn) ? ExitStatus::measurement_failed : ExitStatus::ok;
}

}  // namespace fabricbench::doctor
