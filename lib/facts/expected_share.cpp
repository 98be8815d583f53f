#include "fabricbench/facts/expected_share.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <filesystem>
#include <set>

#include "fabricbench/cli/byte_size.hpp"
#include "fabricbench/cli/ini_file.hpp"
#include "fabricbench/error.hpp"

namespace fabricbench::facts {

Reference Reference::scaled(double factor, const std::string& why) const {
  if (!known()) return *this;
  return {gbps * factor, fmt::format("{} {}", why, basis)};
}

ExpectedRule ExpectedRule::load(const std::string& path, bool must_exist) {
  ExpectedRule rule;
  if (!must_exist && !std::filesystem::exists(path)) return rule;
  for (const auto& [section, keys] : cli::read_ini(path, "--expected-rule")) {
    if (section != "expected")
      throw Error::usage(fmt::format("{}: [{}]: unknown section; allowed: [expected]", path, section));
    for (const auto& [key, value] : keys) {
      const auto text = value.get_value<std::string>();
      if (key == "warn_below_percent") {
        const auto v = cli::parse_number(text);
        if (!v || !(*v >= 0 && *v <= 100))
          throw Error::usage(fmt::format("{}: [expected] warn_below_percent = '{}': allowed values are 0 to 100", path, text));
        rule.warn_below_percent = *v;
      } else if (key == "min_bytes") {
        rule.min_bytes = cli::parse_byte_size(text, fmt::format("{}: [expected] min_bytes", path));
      } else {
        throw Error::usage(fmt::format("{}: [expected] {}: unknown key; allowed: warn_below_percent, min_bytes", path, key));
      }
    }
  }
  return rule;
}

ExpectedShare::ExpectedShare(std::vector<Expected> found, ExpectedRule rule, std::uint64_t largest_bytes)
    : found_(std::move(found)), rule_(rule), largest_(largest_bytes) {}

Reference ExpectedShare::over_hosts(const std::vector<std::string>& hosts, const std::string& kind, bool largest) const {
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
      out = {pick->gbps, fmt::format("{} {} on {}: {}", kind, pick->subject, host, pick->basis)};
  }
  return out;
}

Reference ExpectedShare::gpu_link(const std::vector<std::string>& hosts) const {
  // NVLink where the hosts have it (even of unknown speed: PCIe is not what GPU peers use then), else PCIe.
  const bool nvlink = std::any_of(found_.begin(), found_.end(), [&](const Expected& e) {
    return e.kind == "nvlink" && std::find(hosts.begin(), hosts.end(), e.host) != hosts.end();
  });
  return over_hosts(hosts, nvlink ? "nvlink" : "pcie", false);
}

Reference ExpectedShare::stream(const std::string& a, const std::string& b, bool gpu_memory) const {
  if (a != b) return over_hosts({a, b}, "rdma_port", true);
  return gpu_memory ? gpu_link({a}) : Reference{};
}

Reference ExpectedShare::per_rank(const std::vector<std::string>& hosts, int ranks_per_host, bool gpu_memory) const {
  const std::set<std::string> distinct(hosts.begin(), hosts.end());
  const Reference gpu = gpu_memory ? gpu_link(hosts) : Reference{};
  if (distinct.size() < 2) return gpu;
  Reference node = over_hosts(hosts, "rdma_node", true);
  if (node.known() && ranks_per_host > 1) node = node.scaled(1.0 / ranks_per_host, fmt::format("1/{} of", ranks_per_host));
  if (gpu.known() && (!node.known() || gpu.gbps < node.gbps)) return gpu;
  return node;
}

Reference ExpectedShare::port(const std::string& host, const std::string& port) const {
  for (const auto& e : found_)
    if (e.host == host && e.kind == "rdma_port" && e.subject == port)
      return {e.gbps, fmt::format("rdma_port {} on {}: {}", port, host, e.basis)};
  return {};
}

double ExpectedShare::gbps(double value, results::Unit unit) {
  switch (unit) {
    case results::Unit::mbps: return value / 1e3;
    case results::Unit::mibps: return value * 1048576.0 / 1e9;
    case results::Unit::gbitps: return value / 8;
    case results::Unit::gbps: return value;
    default: return NAN;
  }
}

std::vector<results::Column> ExpectedShare::columns() {
  using namespace results;
  return {reference("expected_gbps", Unit::gbps, "expect_GB/s"),
          measured("pct_expected", Unit::percent, Better::higher, "%expect", 1)};
}

bool ExpectedShare::below(double percent, std::uint64_t bytes) const {
  const bool judged = bytes >= rule_.min_bytes && (largest_ == 0 || bytes == largest_);
  return judged && std::isfinite(percent) && percent < rule_.warn_below_percent;
}

std::string ExpectedShare::stamp(results::Row& row, double measured_gbps, const Reference& ref, std::uint64_t bytes,
                                 const std::string& what) const {
  if (!ref.known() || !std::isfinite(measured_gbps)) return {};
  const double percent = 100.0 * measured_gbps / ref.gbps;
  row.set("expected_gbps", ref.gbps).set("pct_expected", percent);
  if (!below(percent, bytes)) return {};
  return fmt::format("warning: {}: {:.2f} GB/s is {:.0f}% of the {:.2f} GB/s expected from {} (rule: below {:g}% "
                     "from {} up, configs/expected.ini)",
                     what, measured_gbps, percent, ref.gbps, ref.basis, rule_.warn_below_percent,
                     cli::format_byte_size(rule_.min_bytes));
}

}  // namespace fabricbench::facts
