#include "fabricbench/tools/sweep/nic_book.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cstdlib>
#include <variant>

#include "fabricbench/results/row_gather.hpp"

namespace fabricbench::tools::sweep {
using namespace fabricbench::sweep;  // lib/sweep: what this tool runs

NicBook::Mine NicBook::of_this_rank(const facts::RailMap* rail_map, int rail, const std::string& rdma_opened) {
  const auto given = facts::GivenNics::from(
      [](const char* name) {
        const char* v = std::getenv(name);
        return std::string(v ? v : "");
      },
      facts::interface_in_subnet);
  Mine mine{given.mpi, given.nccl, rdma_opened, {}};
  if (rail_map) {
    const auto& r = rail_map->rail(rail);
    const auto net = facts::interface_in_subnet(r.net);
    mine.counter = !r.rdma.empty() ? r.name() : net.empty() ? r.net : fmt::format("{} ({})", net, r.net);
  } else {
    mine.counter = !rdma_opened.empty() ? rdma_opened : given.mpi;
  }
  return mine;
}

NicBook::Columns::Columns(const results::TableSpec& t)
    : host(t.handle<std::string>("host")),
      mpi_nic(t.handle<std::string>("mpi_nic")),
      nccl_nic(t.handle<std::string>("nccl_nic")),
      rdma_nic(t.handle<std::string>("rdma_nic")),
      counter_nic(t.handle<std::string>("counter_nic")),
      rail(t.handle<std::int64_t>("rail")),
      rank(t.handle<std::int64_t>("rank")) {}

NicBook NicBook::gather(const app::RunContext& context, const results::TableSpec& table, const Mine& mine, int rail,
                        const std::vector<int>& host_of_rank, std::size_t hosts, int rails) {
  const Columns c(table);
  results::Row row(table);
  row.set(c.host, context.placement.me().host)
      .set(c.rail, rail)
      .set(c.rank, context.world.rank())
      .set(c.mpi_nic, mine.mpi)
      .set(c.nccl_nic, mine.nccl)
      .set(c.rdma_nic, mine.rdma)
      .set(c.counter_nic, mine.counter);
  const auto rows = results::gather_rows(context.world, table, {row}, 0);
  NicBook book;
  if (!context.is_root()) return book;
  const auto slots = hosts * static_cast<std::size_t>(rails);
  for (auto* v : {&book.mpi_, &book.nccl_, &book.rdma_, &book.counter_}) v->assign(slots, std::string());
  for (std::size_t rank = 0; rank < rows.size(); ++rank) {
    const int local = context.placement.ranks()[rank].local_rank;
    if (local >= rails) continue;  // without --rails: the host's first rank speaks for it
    const auto i = static_cast<std::size_t>(host_of_rank[rank] * rails + local);
    book.mpi_[i] = rows[rank].get(c.mpi_nic);
    book.nccl_[i] = rows[rank].get(c.nccl_nic);
    book.rdma_[i] = rows[rank].get(c.rdma_nic);
    book.counter_[i] = rows[rank].get(c.counter_nic);
  }
  context.out->declare(table);
  context.out->rows(rows);
  return book;
}

const std::vector<std::string>& NicBook::of(const SweepMetric& m, bool nccl_traffic) const {
  if (m.family == MetricFamily::rdma) return rdma_;
  const bool nccl_named = std::any_of(nccl_.begin(), nccl_.end(), [](const auto& s) { return !s.empty(); });
  return nccl_traffic && nccl_named ? nccl_ : mpi_;
}

}  // namespace fabricbench::tools::sweep
