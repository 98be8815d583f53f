#include "fabricbench/facts/link_counters.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <set>
#include <string_view>

#include "fabricbench/runtime/mpi.hpp"

namespace fabricbench::facts {
namespace {

double add(double a, double b) {
  if (std::isnan(a)) return b;
  if (std::isnan(b)) return a;
  return a + b;
}

}  // namespace

CounterReading& CounterReading::operator+=(const CounterReading& o) {
  port_errors = add(port_errors, o.port_errors);
  xmit_wait = add(xmit_wait, o.xmit_wait);
  nvlink_errors = add(nvlink_errors, o.nvlink_errors);
  return *this;
}

LinkCounters::LinkCounters(const std::string& host, bool nvlink, std::vector<std::string> ports)
    : files_(HostFiles::for_host(host)) {
  for (const auto& p : read_rdma_ports(files_)) {
    const bool wanted = ports.empty() ? p.active() : std::find(ports.begin(), ports.end(), p.name()) != ports.end();
    if (wanted) port_dirs_.push_back(fmt::format("/sys/class/infiniband/{}/ports/{}/counters/", p.device, p.port));
  }
  if (nvlink && !pci_devices(files_, "0x10de", {"0302", "0300"}).empty()) {
    std::string why;
    gpus_ = load_nvml(&why);
  }
}

LinkCounters::~LinkCounters() = default;
LinkCounters::LinkCounters(LinkCounters&&) noexcept = default;
LinkCounters& LinkCounters::operator=(LinkCounters&&) noexcept = default;

CounterReading LinkCounters::read() const {
  CounterReading r;
  for (const auto& dir : port_dirs_) {
    for (const auto& c : port_error_counters())
      if (const auto v = files_.number(dir + c.file)) r.port_errors = add(r.port_errors, static_cast<double>(*v));
    if (const auto v = files_.number(dir + xmit_wait_counter)) r.xmit_wait = add(r.xmit_wait, static_cast<double>(*v));
  }
  if (gpus_)
    for (int g = 0; g < gpus_->count(); ++g)
      if (const auto total = gpus_->nvlink_errors_total(g))
        r.nvlink_errors = add(r.nvlink_errors, static_cast<double>(*total));
  return r;
}

std::vector<results::Column> counter_columns() {
  using namespace results;
  return {measured("port_errors", Unit::none, Better::lower, "port_err", 0),
          measured("xmit_wait", Unit::none, Better::lower, "xmit_wait", 0),
          measured("nvlink_errors", Unit::none, Better::lower, "nvl_err", 0)};
}

void set_counters(results::Row& row, const CounterReading& d) {
  row.set("port_errors", d.port_errors).set("xmit_wait", d.xmit_wait).set("nvlink_errors", d.nvlink_errors);
}

std::vector<bool> first_of_each(const std::vector<std::string>& keys) {
  std::vector<bool> first;
  std::set<std::string_view> seen;
  for (const auto& key : keys) first.push_back(seen.insert(key).second);
  return first;
}

LinkWatch::LinkWatch(const runtime::Communicator& comm, const std::string& host, bool nvlink,
                     std::vector<std::string> ports) {
  std::string key = host;
  for (const auto& p : ports) key += " " + p;
  reads_ = first_of_each(comm.all_gather(key))[static_cast<std::size_t>(comm.rank())];
  if (reads_) counters_ = LinkCounters(host, nvlink, std::move(ports));
}

CounterReading LinkWatch::sum(const runtime::Communicator& comm, const CounterReading& mine, int root) {
  CounterReading total;
  for (const auto& r : comm.gather_values(mine, root)) total += r;
  return total;
}

}  // namespace fabricbench::facts
