#include "fabricbench/facts/expected_share.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <set>

#include "fabricbench/cli/byte_size.hpp"
#include "fabricbench/cli/ini_file.hpp"
#include "fabricbench/error.hpp"

namespace fabricbench::facts {
namespace {

// The NCCL settings of this process that take traffic off its best path (the usual suspects when a GPU row falls
// below its healthy curve), as " (NCCL settings here: NAME=value ...)", or "".
std::string nccl_settings() {
  std::string out;
  for (const char* name : {"NCCL_P2P_DISABLE", "NCCL_SHM_DISABLE", "NCCL_P2P_LEVEL", "NCCL_MAX_NCHANNELS",
                           "NCCL_MAX_CTAS", "NCCL_PROTO", "NCCL_ALGO", "NCCL_NET", "NCCL_IB_DISABLE"})
    if (const char* value = std::getenv(name)) out += fmt::format("{}{}={}", out.empty() ? "" : " ", name, value);
  return out.empty() ? out : " (NCCL settings here: " + out + ")";
}

}  // namespace

Reference Reference::scaled(double factor, const std::string& why) const {
  if (!known()) return *this;
  return {gbps * factor, fmt::format("{} {}", why, basis), path, kind};
}

const char* Reference::name(Kind kind) {
  switch (kind) {
    case Kind::calibrated:
      return "calibrated";
    case Kind::uncalibrated:
      return "uncalibrated";
    case Kind::rated:
      return "rated";
    case Kind::network:
      return "network";
    case Kind::not_network:
      return "not_network";
  }
  return "rated";
}

NetworkBook NetworkBook::load(const std::string& path) {
  NetworkBook book;
  const std::string header = "nic_gbitps,busbw_gbps_per_nic,source";
  for_each_reference_row(path, "--expected-rule network", header, 3, [&](const auto& f, const std::string& where) {
    const auto rate = cli::parse_number(f[0]), busbw = cli::parse_number(f[1]);
    if (!rate || !busbw || !(*rate > 0) || !(*busbw > 0) || *busbw > *rate / 8)
      throw Error::usage(fmt::format(
          "{}: nic_gbitps and busbw_gbps_per_nic are numbers above 0, the busbw at most the line rate / 8", where));
    book.entries_.push_back({*rate, *busbw, f[2]});
  });
  return book;
}

const NetworkBook::Entry* NetworkBook::find(double nic_gbitps) const {
  for (const auto& e : entries_)
    if (std::abs(e.nic_gbitps - nic_gbitps) <= 0.01 * e.nic_gbitps) return &e;
  return nullptr;
}

ExpectedRule ExpectedRule::load(const std::string& path, bool must_exist) {
  ExpectedRule rule;
  if (!must_exist && !std::filesystem::exists(path)) return rule;
  for (const auto& [section, keys] : cli::read_ini(path, "--expected-rule")) {
    if (section != "expected")
      throw Error::usage(fmt::format("{}: [{}]: unknown section; allowed: [expected]", path, section));
    for (const auto& [key, value] : keys) {
      const auto text = value.get_value<std::string>();
      if (key == "warn_below_percent" || key == "calibrated_warn_below_percent") {
        const auto v = cli::parse_number(text);
        if (!v || !(*v >= 0 && *v <= 100))
          throw Error::usage(fmt::format("{}: [expected] {} = '{}': allowed values are 0 to 100", path, key, text));
        (key == "warn_below_percent" ? rule.warn_below_percent : rule.calibrated_warn_below_percent) = *v;
      } else if (key == "min_bytes") {
        rule.min_bytes = cli::parse_byte_size(text, fmt::format("{}: [expected] min_bytes", path));
      } else if (key == "network") {
        const auto file = std::filesystem::path(path).parent_path() / text;
        if (!std::filesystem::exists(file))
          throw Error::usage(fmt::format("{}: [expected] network = '{}': no file {}", path, text, file.string()));
        rule.network = NetworkBook::load(file.string());
      } else if (key == "curves") {
        const auto file = std::filesystem::path(path).parent_path() / text;
        if (!std::filesystem::exists(file))
          throw Error::usage(fmt::format("{}: [expected] curves = '{}': no file {}", path, text, file.string()));
        rule.curves = CurveBook::load(file.string());
      } else {
        throw Error::usage(
            fmt::format("{}: [expected] {}: unknown key; allowed: warn_below_percent, "
                        "calibrated_warn_below_percent, min_bytes, curves, network",
                        path, key));
      }
    }
  }
  return rule;
}

ExpectedShare::ExpectedShare(std::vector<Expected> found, ExpectedRule rule, std::uint64_t largest_bytes)
    : found_(std::move(found)), rule_(rule), largest_(largest_bytes) {}

Reference ExpectedShare::over_hosts(const std::vector<std::string>& hosts, HardwarePath kind, bool largest) const {
  Reference out;
  for (const auto& host : std::set<std::string>(hosts.begin(), hosts.end())) {
    const Expected* pick = nullptr;
    bool unknown = false;
    for (const auto& e : found_) {
      if (e.host != host || e.kind != kind) continue;
      if (!(e.gbps > 0)) {  // present but of unknown speed
        unknown = true;
        continue;
      }
      if (!pick || (largest ? e.gbps > pick->gbps : e.gbps < pick->gbps)) pick = &e;
    }
    // A host without it, or (for the slowest) one of unknown speed: nothing to hold the measurement against.
    if (!pick || (unknown && !largest)) return {};
    if (!out.known() || pick->gbps < out.gbps)
      out = {pick->gbps, fmt::format("{} {} on {}: {}", to_string(kind), pick->subject, host, pick->basis), kind};
  }
  return out;
}

Reference ExpectedShare::gpu_link(const std::vector<std::string>& hosts) const {
  // NVLink where the hosts have it (even of unknown speed: PCIe is not what GPU peers use then), else PCIe.
  const bool nvlink = std::any_of(found_.begin(), found_.end(), [&](const Expected& e) {
    return e.kind == HardwarePath::nvlink && std::find(hosts.begin(), hosts.end(), e.host) != hosts.end();
  });
  return over_hosts(hosts, nvlink ? HardwarePath::nvlink : HardwarePath::pcie, false);
}

Reference ExpectedShare::stream(const std::string& a, const std::string& b, bool gpu_memory) const {
  if (a != b) return over_hosts({a, b}, HardwarePath::rdma_port, true);
  return gpu_memory ? gpu_link({a}) : Reference{};
}

Reference ExpectedShare::per_rank(const std::vector<std::string>& hosts, int ranks_per_host, bool gpu_memory) const {
  const std::set<std::string> distinct(hosts.begin(), hosts.end());
  const Reference gpu = gpu_memory ? gpu_link(hosts) : Reference{};
  if (distinct.size() < 2) return gpu;
  Reference node = over_hosts(hosts, HardwarePath::rdma_node, true);
  if (node.known() && ranks_per_host > 1)
    node = node.scaled(1.0 / ranks_per_host, fmt::format("1/{} of", ranks_per_host));
  if (gpu.known() && (!node.known() || gpu.gbps < node.gbps)) return gpu;
  return node;
}

Reference ExpectedShare::across_nodes(const std::vector<std::string>& hosts) const {
  const std::set<std::string> distinct(hosts.begin(), hosts.end());
  if (distinct.size() < 2) return {};
  std::size_t nics = SIZE_MAX;
  double rate_gbps = 0;  // the slowest port's line rate, GB/s
  std::string where;
  for (const auto& host : distinct) {
    std::size_t here = 0;
    for (const auto& e : found_) {
      if (e.host != host || e.kind != HardwarePath::rdma_port || !(e.gbps > 0)) continue;
      ++here;
      if (rate_gbps == 0 || e.gbps < rate_gbps) rate_gbps = e.gbps, where = fmt::format("{} on {}", e.basis, host);
    }
    nics = std::min(nics, here);
  }
  if (nics == 0 || nics == SIZE_MAX) return {};
  const double line = double(nics) * rate_gbps;
  const auto* entry = rule_.network.find(rate_gbps * 8);
  Reference out;
  out.path = HardwarePath::rdma_node;
  out.line_gbps = line;
  if (!entry) {
    out.gbps = line;
    out.kind = Reference::Kind::uncalibrated;
    out.basis = fmt::format(
        "uncalibrated: no healthy busbw per NIC for {:g} Gb/s (configs/expected-network.csv); "
        "{} NICs x {:g} Gb/s ({})",
        rate_gbps * 8, nics, rate_gbps * 8, where);
    return out;
  }
  out.gbps = double(nics) * entry->busbw_gbps_per_nic;
  out.kind = Reference::Kind::network;
  out.basis = fmt::format("{} NICs x {:g} GB/s busbw per {:g} Gb/s NIC across nodes ({}; {})", nics,
                          entry->busbw_gbps_per_nic, entry->nic_gbitps, entry->source, where);
  return out;
}

Reference ExpectedShare::pairs_sum(const Reference& slowest_pair, int pairs,
                                   const std::vector<std::string>& hosts) const {
  if (!slowest_pair.known() || pairs < 2) return slowest_pair;
  const auto sum = slowest_pair.scaled(pairs, fmt::format("{} pairs x", pairs));
  if (std::set<std::string>(hosts.begin(), hosts.end()).size() < 2) return sum;
  const auto node = per_rank(hosts, 1, false);
  return node.known() && node.gbps < sum.gbps ? node : sum;
}

Reference ExpectedShare::port(const std::string& host, const std::string& port) const {
  for (const auto& e : found_)
    if (e.host == host && e.kind == HardwarePath::rdma_port && e.subject == port)
      return {e.gbps, fmt::format("rdma_port {} on {}: {}", port, host, e.basis), HardwarePath::rdma_port};
  return {};
}

Reference ExpectedShare::at_size(const Reference& hardware, std::string_view op, int ranks, std::uint64_t bytes) const {
  if (!hardware.known() || !is_gpu_link(hardware.path)) return hardware;
  const auto path = to_string(hardware.path);
  if (const auto* curve = rule_.curves.find(path, hardware.gbps, ranks, op)) {
    const double gbps = curve->at(bytes);
    if (std::isfinite(gbps))
      return {gbps,
              fmt::format("a healthy {} of {} GPUs over {} {:.4g} GB/s at this size ({})", op, ranks, path,
                          curve->link_gbps, curve->source),
              hardware.path, Reference::Kind::calibrated};
  }
  return {hardware.gbps,
          fmt::format("uncalibrated: no healthy curve of {} for {} GPUs over {}; {}", op, ranks, path, hardware.basis),
          hardware.path, Reference::Kind::uncalibrated};
}

double ExpectedShare::gbps(double value, results::Unit unit) {
  switch (unit) {
    case results::Unit::mbps:
      return value / 1e3;
    case results::Unit::mibps:
      return value * 1048576.0 / 1e9;
    case results::Unit::gbitps:
      return value / 8;
    case results::Unit::gbps:
      return value;
    default:
      return NAN;
  }
}

std::vector<results::Column> ExpectedShare::columns() {
  using namespace results;
  return {reference("expected_gbps", Unit::gbps, "expect_GB/s"),
          measured("pct_expected", Unit::percent, Better::higher, "%expect", 1),
          setting_text("expected_from", 12, "expect_from")};
}

double ExpectedShare::threshold(Reference::Kind kind) const {
  switch (kind) {
    case Reference::Kind::rated:
      return rule_.warn_below_percent;
    case Reference::Kind::calibrated:
      return rule_.calibrated_warn_below_percent;
    case Reference::Kind::network:
      return rule_.warn_below_percent;
    case Reference::Kind::uncalibrated:
    case Reference::Kind::not_network:
      return NAN;
  }
  return NAN;
}

bool ExpectedShare::below(double percent, std::uint64_t bytes, Reference::Kind kind) const {
  // A line rate is reached by large messages only: the run's largest size. A healthy curve holds at every size.
  // Across nodes a healthy ring reaches its per-NIC figure only with large messages: from 1 GiB, at the largest size.
  const std::uint64_t least =
      kind == Reference::Kind::network ? std::max<std::uint64_t>(rule_.min_bytes, 1ull << 30) : rule_.min_bytes;
  const bool size_judged =
      bytes >= least && (kind == Reference::Kind::calibrated || largest_ == 0 || bytes == largest_);
  return size_judged && std::isfinite(percent) && percent < threshold(kind);
}

std::string ExpectedShare::stamp(results::Row& row, double measured_gbps, const Reference& ref, std::uint64_t bytes,
                                 const std::string& what) const {
  if (!ref.known() || !std::isfinite(measured_gbps)) return {};
  if (ref.kind == Reference::Kind::network && measured_gbps > ref.line_gbps) {
    // More than the NICs can carry: NCCL reduced inside the nodes first (NVLS, Tree, CollNet). Named, never judged.
    row.set("expected_gbps", ref.line_gbps)
        .set("pct_expected", 100.0 * measured_gbps / ref.line_gbps)
        .set("expected_from", std::string(Reference::name(Reference::Kind::not_network)));
    return fmt::format(
        "note: {}: {:.2f} GB/s is above the {:.2f} GB/s the nodes' NICs carry: not a network measurement (NCCL used "
        "NVLS or Tree, which reduce inside each node first; run with NCCL_ALGO=RING to test the network)",
        what, measured_gbps, ref.line_gbps);
  }
  const double percent = 100.0 * measured_gbps / ref.gbps;
  row.set("expected_gbps", ref.gbps)
      .set("pct_expected", percent)
      .set("expected_from", std::string(Reference::name(ref.kind)));
  if (!below(percent, bytes, ref.kind)) return {};
  return fmt::format(
      "warning: {}: {:.2f} GB/s is {:.0f}% of the {:.2f} GB/s expected from {} (rule: below {:g}% "
      "from {} up, configs/expected.ini){}",
      what, measured_gbps, percent, ref.gbps, ref.basis, threshold(ref.kind), cli::format_byte_size(rule_.min_bytes),
      ref.kind == Reference::Kind::calibrated ? nccl_settings() : std::string());
}

}  // namespace fabricbench::facts
