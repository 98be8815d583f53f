#include "fabricbench/ops/datatype.hpp"

#include <gtest/gtest.h>

using namespace fabricbench::ops;

TEST(TypeNames, MatchNcclTests) {
  EXPECT_EQ(to_string(DataType::float16), "half");
  EXPECT_EQ(to_string(DataType::bfloat16), "bfloat16");
  EXPECT_EQ(type_size(DataType::bfloat16), 2);
  EXPECT_EQ(type_size(DataType::uint64), 8);
  EXPECT_EQ(to_string(RedOp::avg), "avg");
  EXPECT_EQ(all_data_types().size(), 10u);
}
