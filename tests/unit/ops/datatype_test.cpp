#include "fabricbench/ops/datatype.hpp"

#include <gtest/gtest.h>

#include "fabricbench/ops/coll_backend.hpp"

using namespace fabricbench::ops;

TEST(TypeNames, MatchNcclTests) {
  EXPECT_EQ(to_string(DataType::float16), "half");
  EXPECT_EQ(to_string(DataType::bfloat16), "bfloat16");
  EXPECT_EQ(type_size(DataType::bfloat16), 2);
  EXPECT_EQ(type_size(DataType::uint64), 8);
  EXPECT_EQ(to_string(RedOp::avg), "avg");
  EXPECT_EQ(all_data_types().size(), 10u);
}

TEST(TypeNames, MpiHasNeitherHalfTypesNorAverage) {
  for (const auto t : all_data_types())
    EXPECT_EQ(mpi_has(t), t != DataType::float16 && t != DataType::bfloat16) << to_string(t);
  for (const auto o : all_red_ops()) EXPECT_EQ(mpi_has(o), o != RedOp::avg) << to_string(o);
}
