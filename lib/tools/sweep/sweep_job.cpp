#include "fabricbench/tools/sweep/sweep_job.hpp"

namespace fabricbench::tools::sweep {
using namespace fabricbench::sweep;  // lib/sweep: what this tool runs

std::string_view reason_name(UntestedReason why) {
  switch (why) {
    case UntestedReason::budget:
      return "budget";
    case UntestedReason::excluded:
      return "excluded";
    case UntestedReason::hung:
      return "hung";
  }
  return "";
}

std::string ExcludedHost::why_text() const {
  return why == UntestedReason::excluded ? "--exclude" : "hung in the earlier part";
}

std::string SweepJob::excluded_text() const {
  std::string out;
  for (const auto& e : excluded) out += (out.empty() ? "" : ", ") + e.host + " (" + e.why_text() + ")";
  return out;
}

Fabric SweepJob::fabric(const SweepOptions& opt) const {
  Fabric f;
  f.hosts = hosts, f.rails = opt.rails, f.topology = opt.topology ? &*opt.topology : nullptr;
  return f;
}

const std::vector<std::string>& SweepJob::nics_of(const SweepOptions& opt, const SweepMetric& m) const {
  return nics.of(m, opt.on_gpus(m) && opt.backend == ops::BackendKind::nccl);
}

std::string SweepJob::nic_of(const SweepOptions& opt, const SweepMetric& m, int host, int rail) const {
  const auto& all = nics_of(opt, m);
  const auto i = static_cast<std::size_t>(host * opt.rails + rail);
  return i < all.size() ? all[i] : std::string();
}

std::vector<JudgedMetric> SweepJob::judged_metrics(const SweepOptions& opt) const {
  std::vector<JudgedMetric> out;
  for (const auto* m : opt.metrics)
    out.push_back({std::string(m->name), m->value_unit, m->better, m->both_directions, nics_of(opt, *m)});
  return out;
}

}  // namespace fabricbench::tools::sweep
