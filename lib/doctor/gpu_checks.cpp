// The gpu group, through NVML (a GpuInfo): peer-to-peer status, NVLink links, speed and error counters, remapped rows,
// ECC, the PCIe link, driver and VBIOS versions, clocks-event reasons.
#include <fmt/format.h>

#include <set>
#include <string>
#include <utility>
#include <vector>

#include "check_functions.hpp"

namespace fabricbench::doctor::checks {
using namespace facts;  // the host facts the checks read

void gpu_p2p(const Context& c, Findings& out) {
  const auto& g = *c.gpus;
  for (int a = 0; a < g.count(); ++a)
    for (int b = a + 1; b < g.count(); ++b) {
      std::vector<std::string> parts;
      bool ok = true;
      for (auto [kind, label] : {std::pair{P2PKind::read, "read"}, std::pair{P2PKind::write, "write"},
                                 std::pair{P2PKind::nvlink, "nvlink"}}) {
        const auto s = g.p2p_status(a, b, kind);
        parts.push_back(fmt::format("{} {}", label, s.value_or("?")));
        if (kind != P2PKind::nvlink && s.value_or("") != "OK") ok = false;
      }
      const std::string subject = gpu_name(a) + "-" + gpu_name(b);
      if (ok)
        out.ok(subject, join(parts), "read OK, write OK");
      else
        out.add(
            subject, Status::warn, join(parts), "read OK, write OK",
            "no peer-to-peer: NCCL copies through host memory (check PCIe ACS, the IOMMU and nvidia-smi topo -p2p r)");
    }
}

void gpu_nvlink(const Context& c, Findings& out) {
  const auto& g = *c.gpus;
  for (int i = 0; i < g.count(); ++i) {
    const int links = g.nvlink_count(i);
    if (links == 0) {
      out.skip(gpu_name(i), "no NVLink on this GPU");
      continue;
    }
    std::vector<std::string> down;
    int active = 0;
    for (int l = 0; l < links; ++l) {
      if (g.nvlink_active(i, l).value_or(false))
        ++active;
      else
        down.push_back(std::to_string(l));
    }
    const auto speed = g.nvlink_speed_gbps(i);
    const std::string value = fmt::format("{}/{} links active{}", active, links,
                                          speed ? fmt::format(", {:.2f} GB/s each", *speed) : std::string());
    if (down.empty())
      out.ok(gpu_name(i), value, fmt::format("{} links active", links));
    else
      out.add(gpu_name(i), Status::warn, value, fmt::format("{} links active", links),
              "inactive links " + join(down, ",") +
                  ": NVLink bandwidth is cut; check the GPU/NVSwitch (nvidia-smi nvlink -s)");
  }
}

void gpu_nvlink_errors(const Context& c, Findings& out) {
  const auto& g = *c.gpus;
  for (int i = 0; i < g.count(); ++i) {
    const int links = g.nvlink_count(i);
    if (links == 0) {
      out.skip(gpu_name(i), "no NVLink on this GPU");
      continue;
    }
    NvLinkErrors sum;
    std::vector<std::string> bad;
    bool any = false;
    for (int l = 0; l < links; ++l) {
      const auto e = g.nvlink_errors(i, l);
      if (!e) continue;
      any = true;
      sum.replay += e->replay;
      sum.recovery += e->recovery;
      sum.crc_flit += e->crc_flit;
      sum.crc_data += e->crc_data;
      if (e->total() > 0) bad.push_back(std::to_string(l));
    }
    if (!any) {
      out.skip(gpu_name(i), "NVML reports no NVLink error counters");
      continue;
    }
    std::string value = fmt::format("replay {}, recovery {}, CRC {}", sum.replay, sum.recovery, sum.crc_flit);
    if (sum.crc_data > 0) value += fmt::format(" (data CRC {}, corrected: not counted)", sum.crc_data);
    if (bad.empty())
      out.ok(gpu_name(i), value, "0");
    else
      out.add(gpu_name(i), Status::warn, value + " on links " + join(bad, ","), "0",
              "a link with growing errors is failing: see nvidia-smi nvlink -e");
  }
}

void gpu_remapped_rows(const Context& c, Findings& out) {
  const auto& g = *c.gpus;
  for (int i = 0; i < g.count(); ++i) {
    const auto r = g.remapped_rows(i);
    if (!r) {
      out.skip(gpu_name(i), "NVML does not report remapped rows on this GPU");
      continue;
    }
    const std::string value =
        fmt::format("pending {}, failure {}, correctable {}, uncorrectable {}", r->pending ? "yes" : "no",
                    r->failure ? "yes" : "no", r->correctable, r->uncorrectable);
    if (r->failure)
      out.add(gpu_name(i), Status::fail, value, "no failure", "row remapping failed: the GPU needs replacing (RMA)");
    else if (r->pending)
      out.add(gpu_name(i), Status::warn, value, "none pending",
              "a remapping is pending: reset the GPU (or reboot) to apply it");
    else if (r->uncorrectable > 0)
      out.add(gpu_name(i), Status::warn, value, "0 uncorrectable",
              "rows remapped after uncorrectable errors: watch this GPU");
    else
      out.ok(gpu_name(i), value, "none pending, no failure");
  }
}

void gpu_ecc(const Context& c, Findings& out) {
  const auto& g = *c.gpus;
  for (int i = 0; i < g.count(); ++i) {
    const auto n = g.ecc_uncorrected(i);
    if (!n)
      out.skip(gpu_name(i), "ECC is off or not reported");
    else if (*n > 0)
      out.add(gpu_name(i), Status::fail, fmt::format("{} uncorrectable (volatile)", *n), "0",
              "reset the GPU; replace it if they return");
    else
      out.ok(gpu_name(i), "0 uncorrectable (volatile)", "0");
  }
}

void gpu_pcie(const Context& c, Findings& out) {
  const auto& g = *c.gpus;
  for (int i = 0; i < g.count(); ++i) {
    const auto p = g.pcie(i);
    if (!p) {
      out.skip(gpu_name(i), "NVML does not report the PCIe link");
      continue;
    }
    const std::string value = fmt::format("gen {} x{}", p->gen, p->width);
    const std::string expected = fmt::format("gen {} x{}", p->max_gen, p->max_width);
    if (p->width < p->max_width)
      out.add(gpu_name(i), Status::warn, value, expected,
              "the link trained narrower than it can: reseat the GPU or check the riser");
    else if (p->gen < p->max_gen)
      out.add(gpu_name(i), Status::warn, value, expected,
              "below the maximum generation (an idle GPU may train down; check again under load)");
    else
      out.ok(gpu_name(i), value, expected);
  }
}

void gpu_versions(const Context& c, Findings& out) {
  const auto& g = *c.gpus;
  std::set<std::string> vbios;
  for (int i = 0; i < g.count(); ++i) vbios.insert(g.vbios(i));
  out.ok("driver", g.driver_version());
  const std::vector<std::string> list(vbios.begin(), vbios.end());
  if (vbios.size() > 1)
    out.add("vbios", Status::warn, join(list), "one VBIOS on every GPU", "flash the GPUs to one VBIOS version");
  else
    out.ok("vbios", join(list));
}

void gpu_clocks(const Context& c, Findings& out) {
  const auto& g = *c.gpus;
  for (int i = 0; i < g.count(); ++i) {
    const auto mask = g.clock_event_reasons(i);
    if (!mask) {
      out.skip(gpu_name(i), "NVML does not report clocks-event reasons");
      continue;
    }
    std::vector<std::string> names, slowing;
    for (const auto& r : clock_reasons())
      if (*mask & r.bit) (r.slows ? slowing : names).push_back(r.name);
    if (!slowing.empty())
      out.add(gpu_name(i), Status::warn, join(slowing), "no slowdown",
              "the GPU is throttled (power or thermal): check cooling and power limits");
    else
      out.ok(gpu_name(i), names.empty() ? "none" : join(names), "no slowdown");
  }
}

}  // namespace fabricbench::doctor::checks
