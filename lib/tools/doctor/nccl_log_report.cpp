#include "fabricbench/tools/doctor/nccl_log_report.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <functional>
#include <map>

#include "fabricbench/doctor/nccl_transport.hpp"
#include "fabricbench/job/nccl_call.hpp"

namespace fabricbench::tools::doctor {
using namespace fabricbench::doctor;  // lib/doctor: what this tool runs
namespace {

using results::Row;
using Group = std::vector<const job::NcclProcess*>;

// Processes in groups of equal signature, in the order of each group's first process.
std::vector<Group> group_by(const Group& processes,
                            const std::function<std::string(const job::NcclProcess&)>& signature) {
  std::vector<Group> groups;
  std::map<std::string, std::size_t> index;
  for (const auto* p : processes) {
    const auto [it, fresh] = index.emplace(signature(*p), groups.size());
    if (fresh) groups.emplace_back();
    groups[it->second].push_back(p);
  }
  return groups;
}

// Every process's rows of one table: the first of each group shown, the others kept for the file only. The shown
// rows carry their group's whole `alike` label (the terminal prints it); the others what the file's column holds of
// it (its width, 256 bytes: HDF5 cuts there), so that a group of 100,000 ranks whose label is long (ranks
// 0-6,8-14,...: 150 KB) does not copy it into each of its rows (13 GB).
ReportRows rows_by_group(
    const Group& processes, const std::function<std::string(const job::NcclProcess&)>& signature,
    const std::function<std::vector<Row>(const job::NcclProcess&, const std::string& alike)>& rows) {
  ReportRows out;
  for (const auto& group : group_by(processes, signature)) {
    std::string alike = rank_label(group);
    auto shown = rows(*group.front(), alike);
    if (!shown.empty()) alike.resize(std::min(alike.size(), shown.front().spec().column("alike").width));
    for (auto& row : shown) out.shown.push_back(std::move(row));
    for (std::size_t i = 1; i < group.size(); ++i)
      for (auto& row : rows(*group[i], alike)) out.hidden.push_back(std::move(row));
  }
  return out;
}

std::string transport_signature(const job::NcclProcess& p) {
  const auto& l = p.log;
  std::string vars;
  for (const auto& [k, v] : l.variables) vars += k + "=" + v + ";";
  return fmt::format("{}|{}|{}|{}|{}|{}|{}|{}|{}|{}", l.version, l.network, join(l.ib_devices), join(l.socket_ifaces),
                     l.ib_none, l.channel_summary(), vars, p.nranks(), p.warnings > 0, p.first_warning);
}

std::string calls_signature(const job::NcclProcess& p) {
  std::string s;
  for (const auto& k : p.kinds) s += fmt::format("{}:{}:{};", k.kind, k.total.calls, k.total.bytes);
  return s;
}

std::string sizes_signature(const job::NcclProcess& p) {
  std::string s;
  for (const auto& k : p.kinds) {
    s += k.kind + ":";
    for (const auto& [bin, t] : k.bins) s += fmt::format("{}={}/{},", bin, t.calls, t.bytes);
    s += ";";
  }
  return s;
}

std::int64_t i64(std::uint64_t v) { return static_cast<std::int64_t>(v); }

Row process_row(const results::TableSpec& table, const NcclLogTables::Who& c, const job::NcclProcess& p) {
  Row row(table);
  row.set(c.host, p.host).set(c.rank, p.rank()).set(c.pid, p.pid);
  return row;
}

}  // namespace

NcclLogTables::NcclLogTables() {
  using namespace results;
  const auto who = [] { return std::vector<Column>{key_text("host", 64), key_int("rank"), key_int("pid")}; };
  const auto with = [](std::vector<Column> a, std::vector<Column> b) {
    a.insert(a.end(), b.begin(), b.end());
    return a;
  };
  const Column alike = setting_text("alike", 256, "ranks");
  ranks = {
      "doctor", "nccl_ranks",
      with(who(),
           {setting_int("device"), setting_int("nranks"), setting_int("communicators"), setting_text("version", 32),
            setting_text("network", 32), setting_text("ib_devices", 256), setting_text("socket_interfaces", 256),
            setting_text("channels", 256), measured_int("lines", Unit::none, Better::none),
            measured_int("calls", Unit::none, Better::none), measured_int("warnings", Unit::none, Better::lower),
            setting_text("first_warning", 256), setting_text("file", 256), alike})};
  calls = {"doctor", "nccl_calls",
           with(who(), {key_text("kind", 32), key_int("iteration"), measured_int("calls", Unit::none, Better::none),
                        measured_int("bytes", Unit::bytes, Better::none), alike})};
  calls.bulk = true;
  sizes = {"doctor", "nccl_sizes",
           with(who(), {key_text("kind", 32), key_int("bin"), setting_text("range", 16),
                        measured_int("calls", Unit::none, Better::none),
                        measured_int("bytes", Unit::bytes, Better::none), alike})};
  iterations = {
      "doctor", "nccl_iterations",
      with(who(),
           {key_text("kind", 32), setting_int("iterations"), measured_int("median_calls", Unit::none, Better::none),
            measured_int("min_calls", Unit::none, Better::none), measured_int("max_calls", Unit::none, Better::none),
            measured_int("median_bytes", Unit::bytes, Better::none),
            measured_int("differing", Unit::none, Better::lower), setting_text("differing_iterations", 256), alike})};

  const auto text = [](const TableSpec& t, const char* name) { return t.handle<std::string>(name); };
  const auto integer = [](const TableSpec& t, const char* name) { return t.handle<std::int64_t>(name); };
  const auto who_columns = [&](const TableSpec& t, Who& c) {
    c.host = text(t, "host"), c.alike = text(t, "alike"), c.rank = integer(t, "rank"), c.pid = integer(t, "pid");
  };
  auto& r = ranks_col;
  who_columns(ranks, r);
  r.device = integer(ranks, "device"), r.nranks = integer(ranks, "nranks");
  r.communicators = integer(ranks, "communicators"), r.lines = integer(ranks, "lines");
  r.calls = integer(ranks, "calls"), r.warnings = integer(ranks, "warnings");
  r.version = text(ranks, "version"), r.network = text(ranks, "network"), r.ib_devices = text(ranks, "ib_devices");
  r.socket_interfaces = text(ranks, "socket_interfaces"), r.channels = text(ranks, "channels");
  r.first_warning = text(ranks, "first_warning"), r.file = text(ranks, "file");
  auto& c = calls_col;
  who_columns(calls, c);
  c.kind = text(calls, "kind"), c.iteration = integer(calls, "iteration");
  c.calls = integer(calls, "calls"), c.bytes = integer(calls, "bytes");
  auto& z = sizes_col;
  who_columns(sizes, z);
  z.kind = text(sizes, "kind"), z.range = text(sizes, "range"), z.bin = integer(sizes, "bin");
  z.calls = integer(sizes, "calls"), z.bytes = integer(sizes, "bytes");
  auto& i = iterations_col;
  who_columns(iterations, i);
  i.kind = text(iterations, "kind"), i.differing_iterations = text(iterations, "differing_iterations");
  i.iterations = integer(iterations, "iterations"), i.median_calls = integer(iterations, "median_calls");
  i.min_calls = integer(iterations, "min_calls"), i.max_calls = integer(iterations, "max_calls");
  i.median_bytes = integer(iterations, "median_bytes"), i.differing = integer(iterations, "differing");
}

std::vector<std::vector<Finding>> transport_findings(const job::NcclJobLog& job,
                                                     const std::vector<const job::NcclProcess*>& processes) {
  NcclContext context;
  context.host_facts = false;
  context.hosts = static_cast<int>(job.host_count());
  std::vector<std::vector<Finding>> out;
  for (const auto* p : processes) {
    Findings found;
    found.begin_check(p->host, p->rank(), "nccl.transport");
    check_nccl_transport(p->log, context, found);
    if (p->warnings > 0)
      found.add("NCCL WARN", Status::warn, fmt::format("{} warning line(s)", p->warnings), "none",
                "first: " + p->first_warning);
    out.push_back(found.all());
  }
  return out;
}

std::string process_name(const job::NcclProcess& p) {
  return p.rank() >= 0 ? std::to_string(p.rank()) : fmt::format("{}:{}", p.host.empty() ? "?" : p.host, p.pid);
}

std::string rank_label(const std::vector<const job::NcclProcess*>& processes) {
  std::vector<int> ranks;
  std::vector<std::string> names;
  for (const auto* p : processes)
    if (p->rank() >= 0)
      ranks.push_back(p->rank());
    else
      names.push_back(process_name(*p));
  std::sort(ranks.begin(), ranks.end());
  ranks.erase(std::unique(ranks.begin(), ranks.end()), ranks.end());
  std::vector<std::string> parts;
  for (std::size_t i = 0; i < ranks.size();) {
    std::size_t j = i;
    while (j + 1 < ranks.size() && ranks[j + 1] == ranks[j] + 1) ++j;
    parts.push_back(j == i ? std::to_string(ranks[i]) : fmt::format("{}-{}", ranks[i], ranks[j]));
    i = j + 1;
  }
  parts.insert(parts.end(), names.begin(), names.end());
  return join(parts, ",");
}

void piece_rows(const NcclLogTables& t, const job::NcclJobLog& job,
                const std::vector<const job::NcclProcess*>& processes,
                const std::function<void(const std::vector<results::Row>&)>& write, std::size_t batch) {
  std::vector<Row> rows;
  for (const auto* p : processes) {
    const auto markers = job.markers_of(*p);
    for (std::uint64_t s = 0; markers > 0 && s <= markers; ++s)
      for (const auto& k : p->kinds) {
        const job::CallTally c = k.piece(s);
        const auto& col = t.calls_col;
        rows.push_back(process_row(t.calls, col, *p)
                           .set(col.kind, k.kind)
                           .set(col.iteration, i64(s))
                           .set(col.calls, i64(c.calls))
                           .set(col.bytes, i64(c.bytes)));
        if (rows.size() == batch) {
          write(rows);
          rows.clear();
        }
      }
  }
  if (!rows.empty()) write(rows);
}

NcclLogReport report_rows(const NcclLogTables& t, const job::NcclJobLog& job,
                          const std::vector<const job::NcclProcess*>& processes) {
  NcclLogReport out;
  out.transport_groups = group_by(processes, transport_signature);
  out.ranks = rows_by_group(processes, transport_signature, [&](const job::NcclProcess& p, const std::string& alike) {
    std::uint64_t calls = 0;
    for (const auto& k : p.kinds) calls += k.total.calls;
    const auto& c = t.ranks_col;
    Row row = process_row(t.ranks, c, p);
    row.set(c.device, p.device)
        .set(c.nranks, p.nranks())
        .set(c.communicators, i64(p.comms.size()))
        .set(c.version, p.log.version)
        .set(c.network, p.log.network)
        .set(c.ib_devices, join(p.log.ib_devices))
        .set(c.socket_interfaces, join(p.log.socket_ifaces))
        .set(c.channels, p.log.channel_summary())
        .set(c.lines, i64(p.lines))
        .set(c.calls, i64(calls))
        .set(c.warnings, i64(p.warnings))
        .set(c.first_warning, p.first_warning)
        .set(c.file, job.files().at(p.file).path)
        .set(c.alike, alike);
    return std::vector<Row>{row};
  });
  out.calls = rows_by_group(processes, calls_signature, [&](const job::NcclProcess& p, const std::string& alike) {
    std::vector<Row> rows;
    for (const auto& k : p.kinds)
      rows.push_back(process_row(t.calls, t.calls_col, p)
                         .set(t.calls_col.kind, k.kind)
                         .set(t.calls_col.iteration, -1)
                         .set(t.calls_col.calls, i64(k.total.calls))
                         .set(t.calls_col.bytes, i64(k.total.bytes))
                         .set(t.calls_col.alike, alike));
    return rows;
  });
  out.sizes = rows_by_group(processes, sizes_signature, [&](const job::NcclProcess& p, const std::string& alike) {
    std::vector<Row> rows;
    for (const auto& k : p.kinds)
      for (const auto& [bin, c] : k.bins)
        rows.push_back(process_row(t.sizes, t.sizes_col, p)
                           .set(t.sizes_col.kind, k.kind)
                           .set(t.sizes_col.bin, bin)
                           .set(t.sizes_col.range, bin == -2 ? std::string("unknown type") : job::size_bin_label(bin))
                           .set(t.sizes_col.calls, i64(c.calls))
                           .set(t.sizes_col.bytes, i64(c.bytes))
                           .set(t.sizes_col.alike, alike));
    return rows;
  });
  const auto iteration_text = [&](const job::NcclProcess& p) {
    const auto s = job::summarize_iterations(p, job.markers_of(p));
    std::string text = fmt::format("{}|", s.whole);
    for (const auto& k : s.kinds)
      text += fmt::format("{}:{}:{}:{}:{};", k.kind, k.median_calls, k.median_bytes, k.min_calls, k.max_calls);
    for (auto d : s.differing) text += fmt::format("{},", d);
    return text;
  };
  out.iterations = rows_by_group(processes, iteration_text, [&](const job::NcclProcess& p, const std::string& alike) {
    const auto s = job::summarize_iterations(p, job.markers_of(p));
    std::vector<Row> rows;
    for (const auto& k : s.kinds) {
      // A kind's own differing iterations: one whose min and max are equal lists none.
      std::vector<std::string> listed;
      for (std::size_t i = 0; i < k.differing.size() && i < 12; ++i) listed.push_back(std::to_string(k.differing[i]));
      if (k.differing.size() > listed.size())
        listed.push_back(fmt::format("(+{} more)", k.differing.size() - listed.size()));
      const auto& c = t.iterations_col;
      rows.push_back(process_row(t.iterations, c, p)
                         .set(c.kind, k.kind)
                         .set(c.iterations, i64(s.whole))
                         .set(c.median_calls, i64(k.median_calls))
                         .set(c.min_calls, i64(k.min_calls))
                         .set(c.max_calls, i64(k.max_calls))
                         .set(c.median_bytes, i64(k.median_bytes))
                         .set(c.differing, i64(k.differing.size()))
                         .set(c.differing_iterations, join(listed))
                         .set(c.alike, alike));
    }
    return rows;
  });
  return out;
}

}  // namespace fabricbench::tools::doctor
