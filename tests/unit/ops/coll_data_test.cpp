#include "fabricbench/ops/coll_data.hpp"

#include <gtest/gtest.h>

#include "fabricbench/ops/coll_backend.hpp"

using namespace fabricbench::ops;

namespace {
ElementRule rule(CollKind kind, RedOp op, int n, int rank, bool reduces, std::uint64_t count = 16, int root = 0) {
  return {kind, op, n, rank, root, count, reduces};
}
}  // namespace

TEST(ElementRule, AllReduceIsTheReductionOfEveryRanksInput) {
  for (auto op : {RedOp::sum, RedOp::prod, RedOp::min, RedOp::max}) {
    const auto r = rule(CollKind::all_reduce, op, 3, 1, true);
    for (std::uint64_t j = 0; j < 16; ++j) {
      const auto a = r.input(0, j), b = r.input(1, j), c = r.input(2, j);
      std::uint64_t want = op == RedOp::sum    ? a + b + c
                           : op == RedOp::prod ? a * b * c
                           : op == RedOp::min  ? std::min({a, b, c})
                                               : std::max({a, b, c});
      fabricbench::ops::Expected e{};
      ASSERT_TRUE(r.expected(j, &e));
      EXPECT_EQ(e.bits, want);
      EXPECT_DOUBLE_EQ(e.real, static_cast<double>(want));
    }
  }
}

TEST(ElementRule, InputsStayInTheExactRangeOfSmallTypes) {
  for (int r = 0; r < 8; ++r)
    for (std::uint64_t i = 0; i < 1000; ++i) {
      EXPECT_LE(rule(CollKind::all_reduce, RedOp::sum, 8, 0, true).input(r, i), 2u);
      const auto p = rule(CollKind::all_reduce, RedOp::prod, 8, 0, true).input(r, i);
      EXPECT_TRUE(p == 1 || p == 2);
      EXPECT_LE(rule(CollKind::all_gather, RedOp::sum, 8, 0, false).input(r, i), 113u);
      EXPECT_GE(rule(CollKind::all_gather, RedOp::sum, 8, 0, false).input(r, i), 1u);
    }
}

TEST(ElementRule, InputsDifferBetweenRanksAndPositions) {
  const auto r = rule(CollKind::all_gather, RedOp::sum, 4, 0, false);
  int same_rank = 0, same_pos = 0;
  for (std::uint64_t i = 0; i < 1000; ++i) {
    same_rank += r.input(0, i) == r.input(1, i);
    same_pos += r.input(0, i) == r.input(0, i + 1);
  }
  EXPECT_LT(same_rank, 30) << "a message from the wrong rank is caught";
  EXPECT_LT(same_pos, 30) << "a shifted message is caught";
}

TEST(ElementRule, DataMovementOperations) {
  const int n = 4, me = 2;
  const std::uint64_t per = 5;
  fabricbench::ops::Expected e{};
  const auto ag = rule(CollKind::all_gather, RedOp::sum, n, me, false, per);
  ASSERT_TRUE(ag.expected(3 * per + 1, &e));
  EXPECT_EQ(e.bits, ag.input(3, 1)) << "block 3 of all_gather is rank 3's input";
  const auto a2a = rule(CollKind::alltoall, RedOp::sum, n, me, false, per);
  ASSERT_TRUE(a2a.expected(1 * per + 4, &e));
  EXPECT_EQ(e.bits, a2a.input(1, me * per + 4)) << "block 1 is what rank 1 sent to rank 2";
  const auto rs = rule(CollKind::reduce_scatter, RedOp::sum, n, me, true, per);
  ASSERT_TRUE(rs.expected(0, &e));
  std::uint64_t sum = 0;
  for (int r = 0; r < n; ++r) sum += rs.input(r, me * per);
  EXPECT_EQ(e.bits, sum) << "rank 2 gets the reduction of block 2";
  const auto bc = rule(CollKind::broadcast, RedOp::sum, n, me, false, per, 3);
  ASSERT_TRUE(bc.expected(2, &e));
  EXPECT_EQ(e.bits, bc.input(3, 2));
  const auto sr = rule(CollKind::sendrecv, RedOp::sum, n, 0, false, per);
  ASSERT_TRUE(sr.expected(4, &e));
  EXPECT_EQ(e.bits, sr.input(3, 4)) << "rank 0 receives from rank n-1";
  EXPECT_FALSE(rule(CollKind::reduce, RedOp::sum, n, me, true, per, 1).expected(0, &e)) << "only the root is checked";
}

TEST(ElementMatches, IntegersWrapAndFloatsAreExactExceptAvg) {
  EXPECT_TRUE(element_matches<std::int8_t>(static_cast<std::int8_t>(0), {256, 256.0}, RedOp::prod, 8));
  EXPECT_FALSE(element_matches<std::int32_t>(-1, {3, 3.0}, RedOp::sum, 2));
  EXPECT_TRUE(element_matches<float>(3.0f, {3, 3.0}, RedOp::sum, 2));
  EXPECT_FALSE(element_matches<float>(3.0001f, {3, 3.0}, RedOp::sum, 2));
  EXPECT_TRUE(element_matches<float>(1.0f / 3.0f, {1, 1.0 / 3.0}, RedOp::avg, 3));
  EXPECT_FALSE(element_matches<double>(std::nan(""), {1, 1.0}, RedOp::sum, 2)) << "poisoned output fails";
}
