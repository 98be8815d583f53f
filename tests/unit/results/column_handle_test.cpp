#include <gtest/gtest.h>

#include <stdexcept>

#include "fabricbench/results/table.hpp"
#include "fabricbench/tools/coll/coll_benchmark.hpp"
#include "fabricbench/tools/p2p/p2p_benchmark.hpp"

using namespace fabricbench::results;

TEST(ColumnHandle, NameAndTypeAreCheckedOnceAndTheValueLandsInItsColumn) {
  const TableSpec t{
      "results", "x", {key_text("op", 8), key_int("bytes", Unit::bytes), measured("bw", Unit::gbps, Better::higher)}};
  const auto bytes = t.handle<std::int64_t>("bytes");
  const auto bw = t.handle<double>("bw");
  Row row(t);
  row.set(bytes, std::uint64_t{1} << 33).set(bw, 2.5);  // an unsigned size converts to the column's type
  EXPECT_EQ(std::get<std::int64_t>(row.get("bytes")), std::int64_t{1} << 33);
  EXPECT_EQ(row.number("bw"), 2.5);
  EXPECT_THROW(t.handle<double>("bytes"), std::logic_error);      // another type
  EXPECT_THROW(t.handle<std::string>("byte"), std::logic_error);  // a typo
}

TEST(ColumnHandle, EveryToolMakesItsHandlesWhenItIsBuilt) {
  // A wrong name or type in a tool's handles throws here, before any run.
  EXPECT_NO_THROW(fabricbench::tools::p2p::P2PBenchmark());
  EXPECT_NO_THROW(fabricbench::tools::coll::CollBenchmark());
}
