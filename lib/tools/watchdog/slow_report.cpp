#include "fabricbench/tools/watchdog/slow_report.hpp"

#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <ctime>
#include <map>
#include <memory>

#include "fabricbench/error.hpp"
#include "fabricbench/results/hdf5_sink.hpp"
#include "fabricbench/results/printable.hpp"
#include "fabricbench/results/result_set.hpp"
#include "fabricbench/results/terminal_table.hpp"

namespace fabricbench::tools::watchdog {
namespace {

namespace slow = job::slow;
using results::Better;
using results::Unit;
using Kind = job::SlowFinding::Kind;

std::string size_text(std::uint64_t bytes) {
  if (bytes >= (1u << 20) && bytes % (1u << 20) == 0) return fmt::format("{} MiB", bytes >> 20);
  if (bytes >= 1024 && bytes % 1024 == 0) return fmt::format("{} KiB", bytes >> 10);
  return fmt::format("{} B", bytes);
}

std::string connections_text(const std::vector<std::pair<int, int>>& c) {
  std::string out;
  for (const auto& [from, to] : c) out += fmt::format("{}{}->{}", out.empty() ? "" : ", ", from, to);
  return out;
}

}  // namespace

std::string comm_text(std::uint64_t comm) { return fmt::format("0x{:x}", comm); }

std::string utc_text(std::int64_t ns) {
  const std::time_t s = ns / 1000000000;
  std::tm tm{};
  ::gmtime_r(&s, &tm);
  char text[32];
  std::strftime(text, sizeof text, "%Y-%m-%dT%H:%M:%SZ", &tm);
  return text;
}

const job::SlowSource& SlowWords::source(std::size_t i) const {
  static const job::SlowSource none;
  return i < sources_.size() ? sources_[i] : none;
}

std::string SlowWords::rank(std::uint64_t, int rank, std::size_t source_index) const {
  const auto& s = source(source_index);
  return fmt::format("rank {} (pid {}, {} on host {})", rank, s.pid, results::printable(s.gpu()),
                     results::printable(s.host));
}

std::string SlowWords::who(const job::SlowFinding& f) const {
  switch (f.kind) {
    case Kind::inside:
      return fmt::format("{} of {} on communicator {}", f.op, size_text(f.bytes), comm_text(f.comm));
    case Kind::link:
      return fmt::format("the link from {} to rank {} of communicator {}", rank(f.comm, f.rank, f.source), f.peer,
                         comm_text(f.comm));
    case Kind::network:
      return fmt::format("the network of {} in communicator {}", rank(f.comm, f.rank, f.source), comm_text(f.comm));
    case Kind::late:
      break;
  }
  return fmt::format("{} of communicator {}", rank(f.comm, f.rank, f.source), comm_text(f.comm));
}

namespace {

// "1->2 4.6x, 2->3 1.9x": the connections that named it, each against its usual.
std::string rated_text(const job::SlowFinding& f) {
  std::string out;
  for (std::size_t i = 0; i < f.connections.size(); ++i)
    out += fmt::format("{}{}->{} {:.1f}x", out.empty() ? "" : ", ", f.connections[i].first, f.connections[i].second,
                       i < f.connection_ratios.size() ? f.connection_ratios[i] : f.ratio);
  return out;
}

}  // namespace

std::string SlowWords::describe(const job::SlowFinding& f) const {
  const std::string kernels = f.kernels_agree ? "; its kernels agree: it arrives last" : "";
  switch (f.kind) {
    case Kind::inside:
      return fmt::format(
          "slow collective: {}: {:.2f} ms on median on every rank alike, {:.1f}x the {:.3f} ms this job took for "
          "it before: the job loses {:.0f}% of its time inside it (slow inside the collective: a link or NIC, not a "
          "rank; named by the collective's own time)",
          who(f), f.own_s * 1e3, f.own_s / f.best_s, f.best_s * 1e3, 100 * f.loss);
    case Kind::link:
      return fmt::format(
          "slow link: {}: its sends take {:.1f}x the usual network time per byte of their size: the job loses "
          "{:.0f}% of its time there (slow inside the collective: this link, or a NIC or port at either end; named "
          "by its sends, the connections beside it as usual)",
          who(f), f.ratio, 100 * f.loss);
    case Kind::network:
      break;
    case Kind::late:
      return fmt::format(
          "slow rank: {} arrives last at {:.0f}% of its {} calls of the last {:g} s; the others wait {:.2f} ms for "
          "it on median: the job loses {:.0f}% of its time to it (slow before the collective: its compute, input, "
          "host or GPU; named by its kernels: it runs shortest{})",
          who(f), 100 * f.late_fraction, f.op, window_s_, f.wait_median_s * 1e3, 100 * f.loss,
          f.sends_agree ? "; the sends into it wait too" : "");
  }
  switch (f.evidence) {
    case job::Evidence::sends_into:
      return fmt::format(
          "slow network: {}: the sends into it wait, and its own sends beside them ({} the usual network time per "
          "byte): it does not take what it is sent: the job loses {:.0f}% of its time there (its host stopped or "
          "starved of CPU, or its NIC's receive side; named by the sends into it and its own{})",
          who(f), rated_text(f), 100 * f.loss, kernels);
    case job::Evidence::sends_from:
      return fmt::format(
          "slow network: {}: its sends wait, and the sends into it beside them ({} the usual network time per "
          "byte): the job loses {:.0f}% of its time there (its NIC's send side or cable, or its host starved of CPU; "
          "named by its sends and the sends into it{})",
          who(f), rated_text(f), 100 * f.loss, kernels);
    default:
      return fmt::format(
          "slow network: {}: its connections {} take up to {:.1f}x the usual network time per byte: the job loses "
          "{:.0f}% of its time there (slow inside the collective: this rank's NIC, cable or switch port, or its "
          "host; named by every slow connection touching it{})",
          who(f), connections_text(f.connections), f.ratio, 100 * f.loss, kernels);
  }
}

namespace {

class ReportWriter {
 public:
  ReportWriter(const SlowReportData& d, results::ResultSet& out)
      : d_(d), out_(out), words_(d.folder.sources(), d.window_s) {}

  void findings() {
    const results::TableSpec t{
        "slow",
        "findings",
        {results::key_text("kind", 8), results::key_text("comm", 20), results::key_int("rank"),
         results::key_int("peer"), results::setting_text("host", 64), results::setting_int("pid"),
         results::setting_text("gpu", 40), results::setting_text("op", 16), results::setting_int("bytes"),
         results::measured("late_fraction", Unit::none, Better::lower, "late", 2),
         results::measured("wait_median_ms", Unit::none, Better::lower, "wait ms", 2),
         results::measured("ratio", Unit::none, Better::lower, "x usual", 1),
         results::measured("loss_pct", Unit::percent, Better::lower, "lost %", 0),
         results::setting_text("first_seen", 24), results::setting_text("last_seen", 24),
         results::setting_text("text", 512), results::setting_text("evidence", 256)}};
    out_.declare(t);
    out_.section(t, "slow ranks, links and collectives named while the job ran",
                 {{"kind"},
                  {"rank"},
                  {"peer"},
                  {"host"},
                  {"pid"},
                  {"op"},
                  {"late_fraction"},
                  {"wait_median_ms"},
                  {"ratio"},
                  {"loss_pct"},
                  {"first_seen"},
                  {"last_seen"}});
    std::vector<results::Row> rows;
    for (const auto& e : d_.episodes) {
      const auto& f = e.worst;
      const auto& s = words_.source(f.source);
      const bool ranked = f.kind != Kind::inside;
      const bool late = f.kind == Kind::late;
      const double ratio = late ? 0 : f.kind == Kind::inside ? f.own_s / f.best_s : f.ratio;
      rows.push_back(results::Row(t)
                         .set("kind", std::string(f.kind_name()))
                         .set("comm", comm_text(f.comm))
                         .set("rank", std::int64_t{f.rank})
                         .set("peer", std::int64_t{f.peer})
                         .set("host", ranked ? s.host : std::string())
                         .set("pid", std::int64_t{ranked ? s.pid : -1})
                         .set("gpu", ranked ? s.gpu() : std::string())
                         .set("op", f.op)
                         .set("bytes", static_cast<std::int64_t>(f.bytes))
                         .set("late_fraction", f.late_fraction)
                         .set("wait_median_ms", late ? f.wait_median_s * 1e3 : f.own_s * 1e3)
                         .set("ratio", ratio)
                         .set("loss_pct", 100 * f.loss)
                         .set("first_seen", utc_text(e.from_ns))
                         .set("last_seen", utc_text(e.to_ns))
                         .set("text", words_.describe(f).substr(0, 512))
                         .set("evidence", e.because.substr(0, 256)));
    }
    if (rows.empty()) out_.note("no slow rank, link or collective was named");
    out_.rows(rows);
  }

  void windows() {
    results::TableSpec t{"slow",
                         "windows",
                         {results::key_text("time", 24), results::key_int("t_ns"), results::key_text("comm", 20),
                          results::key_int("rank"), results::setting_text("host", 64), results::setting_int("pid"),
                          results::setting_int("collectives"), results::setting_int("late"),
                          results::measured("wait_median_ms", Unit::none, Better::lower),
                          results::measured("loss_pct", Unit::percent, Better::lower),
                          results::measured("kernel_median_ms", Unit::none, Better::none)}};
    t.bulk = true;
    out_.declare(t);
    out_.section(t, "", {});
    std::vector<results::Row> rows;
    for (const auto& [at, r] : d_.windows) {
      const auto& s = words_.source(r.source);
      rows.push_back(results::Row(t)
                         .set("time", utc_text(at))
                         .set("t_ns", at)
                         .set("comm", comm_text(r.comm))
                         .set("rank", std::int64_t{r.rank})
                         .set("host", s.host)
                         .set("pid", std::int64_t{s.pid})
                         .set("collectives", static_cast<std::int64_t>(r.collectives))
                         .set("late", static_cast<std::int64_t>(r.late))
                         .set("wait_median_ms", r.wait_median_s * 1e3)
                         .set("loss_pct", 100 * r.loss)
                         .set("kernel_median_ms", r.kernel_median_s * 1e3));
    }
    out_.rows(rows);
  }

  void collectives() {
    results::TableSpec t{
        "slow",
        "collectives",
        {results::key_int("t_ns"), results::key_text("comm", 20), results::key_int("seq"), results::key_int("rank"),
         results::setting_text("op", 16), results::setting_int("bytes"), results::setting_text("algo", 16),
         results::setting_text("proto", 8), results::measured("kernel_ms", Unit::none, Better::none),
         results::measured("wait_ms", Unit::none, Better::none), results::setting_int("last")}};
    t.bulk = true;
    out_.declare(t);
    out_.section(t, "", {});
    std::vector<results::Row> rows;
    rows.reserve(d_.finder.rows().size());
    for (const auto& c : d_.finder.rows())
      rows.push_back(results::Row(t)
                         .set("t_ns", c.host_ns)
                         .set("comm", comm_text(c.comm))
                         .set("seq", static_cast<std::int64_t>(c.seq))
                         .set("rank", std::int64_t{c.rank})
                         .set("op", std::string(slow::name_of(slow::kOps, c.op)))
                         .set("bytes", static_cast<std::int64_t>(c.bytes))
                         .set("algo", std::string(slow::name_of(slow::kAlgos, c.algo)))
                         .set("proto", std::string(slow::name_of(slow::kProtos, c.proto)))
                         .set("kernel_ms", c.kernel_s * 1e3)
                         .set("wait_ms", c.wait_s * 1e3)
                         .set("last", std::int64_t{c.last}));
    out_.rows(rows);
  }

  // Per connection over the run: network time per MiB, and its ratio to the (lower) median of its communicator's
  // connections of the same direction that moved data at least 10 times (a connection used once, for a few bytes,
  // measures latency, not time per byte).
  void connections() {
    const results::TableSpec t{
        "slow",
        "connections",
        {results::key_text("comm", 20), results::key_int("rank"), results::key_int("peer"),
         results::key_text("direction", 8), results::setting_text("host", 64), results::setting_text("peer_host", 64),
         results::setting_int("channels"), results::measured_int("ops", Unit::none, Better::none),
         results::measured_int("bytes", Unit::none, Better::none),
         results::measured("net_ms", Unit::none, Better::lower),
         results::measured("net_us_per_mib", Unit::none, Better::lower),
         results::measured("ratio", Unit::none, Better::lower)}};
    out_.declare(t);
    out_.section(t, "", {});
    std::map<std::pair<std::uint64_t, bool>, std::vector<double>> per_mib;
    const auto rate = [](const job::ConnectionTotal& c) {
      return c.bytes ? c.net_s * 1e6 / (static_cast<double>(c.bytes) / (1 << 20)) : 0.0;
    };
    for (const auto& [k, c] : d_.finder.connections())
      if (c.bytes && c.ops >= d_.finder.settings().min_link_ops) per_mib[{k.comm, k.is_send}].push_back(rate(c));
    std::map<std::pair<std::uint64_t, bool>, double> median;
    for (auto& [k, v] : per_mib) {
      std::sort(v.begin(), v.end());
      median[k] = v[(v.size() - 1) / 2];
    }
    std::vector<results::Row> rows;
    for (const auto& connection : d_.finder.connections()) {
      const auto& k = connection.first;  // not a structured binding: host_of captures it (C++17)
      const auto& c = connection.second;
      const auto host_of = [&](int rank) {
        const auto src = d_.finder.source_of(k.comm, rank);
        return src ? words_.source(*src).host : std::string();
      };
      const double m = median[{k.comm, k.is_send}];
      rows.push_back(results::Row(t)
                         .set("comm", comm_text(k.comm))
                         .set("rank", std::int64_t{k.rank})
                         .set("peer", std::int64_t{k.peer})
                         .set("direction", std::string(k.is_send ? "send" : "recv"))
                         .set("host", host_of(k.rank))
                         .set("peer_host", host_of(k.peer))
                         .set("channels", static_cast<std::int64_t>(c.channel_count()))
                         .set("ops", static_cast<std::int64_t>(c.ops))
                         .set("bytes", static_cast<std::int64_t>(c.bytes))
                         .set("net_ms", c.net_s * 1e3)
                         .set("net_us_per_mib", rate(c))
                         .set("ratio", m > 0 ? rate(c) / m : 0.0));
    }
    if (d_.finder.connections_dropped())
      out_.note(fmt::format("{} proxy record(s) of connections past the first {} kept: not in /slow/connections",
                            d_.finder.connections_dropped(), job::StragglerFinder::kKeptConnections));
    out_.rows(rows);
  }

  void processes() {
    const results::TableSpec t{
        "slow",
        "processes",
        {results::key_text("host", 64), results::key_int("pid"), results::setting_int("cuda_device"),
         results::setting_text("gpu_bus_id", 32), results::setting_text("visible_devices", 64),
         results::setting_text("launcher_rank", 16), results::setting_text("boot_id", 36),
         results::setting_int("profiler_api"), results::setting_text("file", 256)}};
    out_.declare(t);
    out_.section(t, "", {});
    std::vector<results::Row> rows;
    for (const auto& s : d_.folder.sources())
      if (!s.sampler)  // (a watchdog's host samples: not a process of the job)
        rows.push_back(results::Row(t)
                           .set("host", s.host)
                           .set("pid", std::int64_t{s.pid})
                           .set("cuda_device", std::int64_t{s.cuda_device})
                           .set("gpu_bus_id", s.gpu_bus_id)
                           .set("visible_devices", s.visible_devices)
                           .set("launcher_rank", s.launcher_rank)
                           .set("boot_id", s.boot_id)
                           .set("profiler_api", std::int64_t{s.profiler_api})
                           .set("file", s.file.substr(0, 256)));
    out_.rows(rows);
  }

  void missing() {
    const results::TableSpec m{"slow",
                               "missing",
                               {results::key_text("comm", 20), results::key_int("rank"),
                                results::measured_int("collectives", Unit::none, Better::lower)}};
    out_.declare(m);
    out_.section(m, "", {});
    std::vector<results::Row> rows;
    for (const auto& [where, n] : d_.finder.missing()) {
      out_.note(
          fmt::format("rank {} of communicator {}: {} collective(s) never reported by it (it exited, or its "
                      "records did not reach the folder)",
                      where.second, comm_text(where.first), n));
      rows.push_back(results::Row(m)
                         .set("comm", comm_text(where.first))
                         .set("rank", std::int64_t{where.second})
                         .set("collectives", static_cast<std::int64_t>(n)));
    }
    out_.rows(rows);
  }

 private:
  const SlowReportData& d_;
  results::ResultSet& out_;
  SlowWords words_;
};

}  // namespace

void write_slow_report(const std::string& path, const std::string& command_line, const SlowReportData& d,
                       const std::string& status, bool terminal) {
  const std::string partial = path + ".partial";
  {
    results::ResultSet out;
    if (terminal) out.add(std::make_unique<results::TerminalTable>(stderr));
    out.add(std::make_unique<results::Hdf5Sink>(partial, results::Hdf5Sink::Mode::overwrite));
    char host[256] = {};
    ::gethostname(host, sizeof host - 1);
    out.begin({"fabric-watchdog", FABRICBENCH_VERSION, command_line, results::utc_timestamp(), 1, {host}});
    out.note(fmt::format(
        "slow ranks: {} record(s) from {} process(es) in {}; {} collective(s) judged over {:g} s windows; {} "
        "finding(s)",
        d.records,
        std::count_if(d.folder.sources().begin(), d.folder.sources().end(), [](const auto& s) { return !s.sampler; }),
        d.folder.folder(), d.finder.judged(), d.window_s, d.episodes.size()));
    ReportWriter w(d, out);
    w.findings();
    w.windows();
    w.collectives();
    w.connections();
    w.processes();
    w.missing();
    out.finish(status);
  }
  if (::rename(partial.c_str(), path.c_str()) != 0)
    throw Error::runtime(fmt::format("--slow-report {}: cannot replace it: {}", path, std::strerror(errno)));
}

}  // namespace fabricbench::tools::watchdog
