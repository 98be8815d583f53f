#include "fabricbench/doctor/findings.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <map>
#include <stdexcept>

namespace fabricbench::doctor {
namespace {

constexpr std::array<std::string_view, 4> status_names{"ok", "skip", "warn", "fail"};

}  // namespace

std::string_view to_string(Status status) { return status_names[static_cast<std::size_t>(status)]; }

Status status_from_string(std::string_view text) {
  for (std::size_t i = 0; i < status_names.size(); ++i)
    if (status_names[i] == text) return static_cast<Status>(i);
  throw std::invalid_argument(fmt::format("unknown check status '{}'", text));
}

void Findings::begin_check(std::string host, int rank, std::string check) {
  host_ = std::move(host);
  rank_ = rank;
  check_ = std::move(check);
}

Finding& Findings::add(std::string subject, Status status, std::string value, std::string expected, std::string hint) {
  all_.push_back(
      {host_, rank_, check_, std::move(subject), status, std::move(value), std::move(expected), std::move(hint)});
  return all_.back();
}

Status Findings::worst() const {
  Status worst = Status::ok;
  for (const auto& f : all_) worst = std::max(worst, f.status);
  return worst;
}

std::size_t Findings::count(Status status) const {
  return static_cast<std::size_t>(
      std::count_if(all_.begin(), all_.end(), [&](const Finding& f) { return f.status == status; }));
}

results::TableSpec findings_table(std::string group, std::string name) {
  using namespace results;
  return {
      std::move(group),
      std::move(name),
      {key_text("host", 64), key_int("rank"), key_text("check", 32), key_text("subject", 64), setting_text("status", 8),
       setting_text("value", 512), setting_text("expected", 128), setting_text("hint", 256)}};
}

namespace {

// The findings table's columns by type, made once from its declaration (every findings_table has the same columns).
struct FindingColumns {
  explicit FindingColumns(const results::TableSpec& t)
      : host(t.handle<std::string>("host")),
        check(t.handle<std::string>("check")),
        subject(t.handle<std::string>("subject")),
        status(t.handle<std::string>("status")),
        value(t.handle<std::string>("value")),
        expected(t.handle<std::string>("expected")),
        hint(t.handle<std::string>("hint")),
        rank(t.handle<std::int64_t>("rank")) {}
  results::ColumnHandle<std::string> host, check, subject, status, value, expected, hint;
  results::ColumnHandle<std::int64_t> rank;
};

}  // namespace

results::Row to_row(const results::TableSpec& table, const Finding& f) {
  static const FindingColumns col(findings_table("doctor", "findings"));
  results::Row row(table);
  row.set(col.host, f.host).set(col.rank, f.rank).set(col.check, f.check).set(col.subject, f.subject);
  row.set(col.status, std::string(to_string(f.status)))
      .set(col.value, f.value)
      .set(col.expected, f.expected)
      .set(col.hint, f.hint);
  return row;
}

Finding from_row(const results::Row& row) {
  const auto text = [&](const char* column) { return std::get<std::string>(row.get(column)); };
  return {text("host"),
          static_cast<int>(std::get<std::int64_t>(row.get("rank"))),
          text("check"),
          text("subject"),
          status_from_string(text("status")),
          text("value"),
          text("expected"),
          text("hint")};
}

void write_findings(results::ResultSet& out, const results::TableSpec& table, std::vector<Finding> findings,
                    bool show_ok) {
  std::stable_sort(findings.begin(), findings.end(), [](const Finding& a, const Finding& b) {
    if (a.host != b.host) return a.host < b.host;
    return a.status > b.status;
  });
  std::map<std::string, std::vector<const Finding*>> by_host;
  for (const auto& f : findings) by_host[f.host].push_back(&f);
  std::vector<results::Row> hidden;
  for (const auto& [host, all] : by_host)
    for (const auto* f : all)
      if (!show_ok && f->status == Status::ok) hidden.push_back(to_row(table, *f));
  out.section(table, "", {});  // the ok rows the terminal leaves out
  out.rows(hidden);
  for (const auto& [host, all] : by_host) {
    std::vector<const Finding*> shown;
    for (const auto* f : all)
      if (show_ok || f->status != Status::ok) shown.push_back(f);
    out.section(table, fmt::format("host {}: {}", host.empty() ? "(job)" : host, status_counts(all)),
                findings_view(shown));
    std::vector<results::Row> rows;
    for (const auto* f : shown) rows.push_back(to_row(table, *f));
    out.rows(rows);
  }
}

std::vector<results::TerminalColumn> findings_view(const std::vector<const Finding*>& shown) {
  std::size_t wc = 5, ws = 7, wv = 5, we = 8;
  for (const auto* f : shown) {
    wc = std::max(wc, f->check.size());
    ws = std::max(ws, f->subject.size());
    wv = std::min<std::size_t>(48, std::max(wv, f->value.size()));
    we = std::min<std::size_t>(32, std::max(we, f->expected.size()));
  }
  std::vector<results::TerminalColumn> view{{"status"}, {"check"},    {"rank"}, {"subject"},
                                            {"value"},  {"expected"}, {"hint"}};
  for (auto& c : view) c.left = c.column != "rank";
  view[0].width = 6, view[1].width = wc, view[2].width = 4, view[3].width = ws, view[4].width = wv, view[5].width = we;
  view[6].width = 1;
  view[2].blank_negative = true;
  return view;
}

std::string status_counts(const std::vector<const Finding*>& findings) {
  std::array<int, 4> n{};
  for (const auto* f : findings) ++n[static_cast<std::size_t>(f->status)];
  return fmt::format("{} fail, {} warn, {} skip, {} ok", n[3], n[2], n[1], n[0]);
}

std::vector<std::string> warning_lines(const std::vector<Finding>& findings) {
  std::vector<std::string> lines;
  for (const auto& f : findings) {
    if (f.status != Status::warn && f.status != Status::fail) continue;
    std::string line = fmt::format("{}: {}{} {} {}: {}", f.status == Status::fail ? "check failed" : "warning",
                                   f.host.empty() ? "" : "host " + f.host + ": ",
                                   f.rank >= 0 ? fmt::format("rank {}:", f.rank) : "", f.check, f.subject, f.value);
    if (!f.expected.empty()) line += " (expected " + f.expected + ")";
    if (!f.hint.empty()) line += "; " + f.hint;
    lines.push_back(line);
  }
  return lines;
}

std::string join(const std::vector<std::string>& items, std::string_view sep) {
  std::string out;
  for (const auto& i : items) out += (out.empty() ? "" : std::string(sep)) + i;
  return out;
}

std::string gpu_name(int index) { return fmt::format("GPU{}", index); }

}  // namespace fabricbench::doctor
