#include "fabricbench/ops/collective.hpp"

#include <gtest/gtest.h>

#include <map>
#include <string_view>
#include <utility>

#include "fabricbench/tools/coll/coll_benchmark.hpp"

using namespace fabricbench::ops;

TEST(CollectiveTable, BusBandwidthFactorsAreNcclTests) {
  EXPECT_DOUBLE_EQ(find_collective("all_reduce")->busbw_factor(4), 1.5);  // 2(n-1)/n
  EXPECT_DOUBLE_EQ(find_collective("all_reduce")->busbw_factor(8), 1.75);
  EXPECT_DOUBLE_EQ(find_collective("all_gather")->busbw_factor(4), 0.75);  // (n-1)/n
  EXPECT_DOUBLE_EQ(find_collective("reduce_scatter")->busbw_factor(2), 0.5);
  EXPECT_DOUBLE_EQ(find_collective("alltoall")->busbw_factor(8), 0.875);
  for (const char* one : {"broadcast", "reduce", "sendrecv"})
    EXPECT_DOUBLE_EQ(find_collective(one)->busbw_factor(4), 1.0);
  EXPECT_EQ(find_collective("allreduce"), nullptr);
}

TEST(CollectiveTable, EveryRowHasItsFactorFromNcclTestsAndItsNcclName) {
  // Written from nccl-tests' src/*.cu, independently of the table: a new collective must be added here too.
  const std::map<std::string_view, std::pair<double, std::string_view>> known{
      {"all_reduce", {2.0 * 7 / 8, "AllReduce"}},
      {"all_gather", {7.0 / 8, "AllGather"}},
      {"reduce_scatter", {7.0 / 8, "ReduceScatter"}},
      {"broadcast", {1.0, "Broadcast"}},
      {"reduce", {1.0, "Reduce"}},
      {"alltoall", {7.0 / 8, ""}},
      {"sendrecv", {1.0, ""}}};
  for (const auto& c : collectives()) {
    const auto it = known.find(c.name);
    ASSERT_NE(it, known.end()) << c.name << ": no independent factor in this test";
    EXPECT_DOUBLE_EQ(c.busbw_factor(8), it->second.first) << c.name;
    EXPECT_EQ(c.nccl_name, it->second.second) << c.name;
    EXPECT_NE(c.mpi, nullptr) << c.name;
    EXPECT_FALSE(c.factor_text.empty()) << c.name;
  }
  EXPECT_EQ(collectives().size(), known.size());
}

TEST(CollectiveTable, IsIndexedByKindAndEveryKindMapsToItsNameAndBack) {
  ASSERT_EQ(collectives().size(), static_cast<std::size_t>(kCollKindCount));
  for (int k = 0; k < kCollKindCount; ++k) {
    const auto kind = static_cast<CollKind>(k);
    const auto& op = collective(kind);
    EXPECT_EQ(op.kind, kind) << op.name;
    EXPECT_EQ(&collectives()[static_cast<std::size_t>(k)], &op) << op.name;
    ASSERT_NE(find_collective(op.name), nullptr) << op.name;
    EXPECT_EQ(find_collective(op.name)->kind, kind) << op.name;
  }
  EXPECT_EQ(collective(CollKind::all_reduce).name, "all_reduce");
  EXPECT_EQ(collective(CollKind::sendrecv).name, "sendrecv");
}

TEST(CollectiveTable, NamesTheOperationsOfAProperty) {
  EXPECT_EQ(collectives_that([](const CollectiveOp& c) { return c.rooted; }), "broadcast and reduce");
  EXPECT_EQ(collectives_that([](const CollectiveOp& c) { return c.reduces; }), "all_reduce, reduce_scatter and reduce");
  EXPECT_EQ(collectives_that([](const CollectiveOp& c) { return c.busbw_factor(1) == 0; }),
            "all_reduce, all_gather, reduce_scatter and alltoall");
  EXPECT_EQ(collectives_that([](const CollectiveOp& c) { return c.name == "reduce"; }), "reduce");
  EXPECT_EQ(collectives_that([](const CollectiveOp&) { return false; }), "");
}

TEST(CollectiveTable, HandComputedBandwidthsPerOperation) {
  // 1 GiB all_reduce on 4 ranks in 5 ms: algbw 214.748 GB/s, busbw x1.5 = 322.123 GB/s.
  const auto* ar = find_collective("all_reduce");
  const auto c = ar->counts((1ull << 30) / 4, 4);
  const double alg = algbw_gbps(c.bytes(4), 5e-3);
  EXPECT_NEAR(alg, 214.748364, 1e-6);
  EXPECT_NEAR(alg * ar->busbw_factor(4), 322.122547, 1e-6);
  // all_gather 4 GiB (total output) over 4 ranks in 16 ms: algbw 268.435 GB/s, busbw 201.327 GB/s.
  const auto* ag = find_collective("all_gather");
  const auto g = ag->counts((4ull << 30) / 4, 4);
  EXPECT_EQ(g.param, (1ull << 30) / 4) << "per-rank count is a quarter";
  EXPECT_EQ(g.bytes(4), 4ull << 30);
  EXPECT_NEAR(algbw_gbps(g.bytes(4), 16e-3) * ag->busbw_factor(4), 201.326592, 1e-6);
  // sendrecv 1 MiB in 10 us: 104.8576 GB/s, factor 1.
  EXPECT_NEAR(algbw_gbps(find_collective("sendrecv")->counts(1 << 18, 2).bytes(4), 10e-6), 104.8576, 1e-9);
}

TEST(CollectiveTable, HandComputedBandwidthsForTheOtherOperations) {
  // reduce_scatter 256 MiB (input per rank) over 8 ranks in 1 ms: algbw 268.435456, busbw x7/8 = 234.881024.
  const auto* rs = find_collective("reduce_scatter");
  const auto r = rs->counts((256ull << 20) / 4, 8);
  EXPECT_EQ(r.param, (32ull << 20) / 4);
  EXPECT_NEAR(algbw_gbps(r.bytes(4), 1e-3) * rs->busbw_factor(8), 234.881024, 1e-6);
  // alltoall 64 MiB per rank over 4 ranks in 0.5 ms: algbw 134.217728, busbw x3/4 = 100.663296.
  const auto* a2a = find_collective("alltoall");
  EXPECT_NEAR(algbw_gbps(a2a->counts((64ull << 20) / 4, 4).bytes(4), 0.5e-3) * a2a->busbw_factor(4), 100.663296, 1e-6);
  // broadcast and reduce of 1 GiB of doubles in 4 ms: algbw = busbw = 268.435456.
  for (const char* name : {"broadcast", "reduce"}) {
    const auto* op = find_collective(name);
    const auto c = op->counts((1ull << 30) / 8, 4);
    EXPECT_EQ(c.param, (1ull << 30) / 8);
    EXPECT_NEAR(algbw_gbps(c.bytes(8), 4e-3) * op->busbw_factor(4), 268.435456, 1e-6) << name;
  }
}

TEST(CollectiveTable, CountsRoundToWhatSplitsEvenly) {
  const auto rs = find_collective("reduce_scatter")->counts(10, 4);  // 10 elements over 4 ranks
  EXPECT_EQ(rs.send, 8u);
  EXPECT_EQ(rs.recv, 2u);
  EXPECT_EQ(rs.param, 2u);
  EXPECT_EQ(rs.recv_inplace_offset, 2u);
  const auto ag = find_collective("all_gather")->counts(10, 4);
  EXPECT_EQ(ag.send, 2u);
  EXPECT_EQ(ag.recv, 8u);
  EXPECT_EQ(ag.send_inplace_offset, 2u);
  const auto a2a = find_collective("alltoall")->counts(10, 4);
  EXPECT_EQ(a2a.send, 8u);
  EXPECT_EQ(a2a.param, 2u);
  const auto ar = find_collective("all_reduce")->counts(10, 4);
  EXPECT_EQ(ar.param, 10u);
  EXPECT_EQ(ar.bytes(2), 20u);
}

TEST(CombineRankTimes, AsNcclTestsDashA) {
  const std::vector<double> t{4, 1, 7};
  EXPECT_DOUBLE_EQ(combine_rank_times(t, RankCombine::rank0), 4);
  EXPECT_DOUBLE_EQ(combine_rank_times(t, RankCombine::average), 4);
  EXPECT_DOUBLE_EQ(combine_rank_times(t, RankCombine::min), 1);
  EXPECT_DOUBLE_EQ(combine_rank_times(t, RankCombine::max), 7);
}
